//! Flags several commands share, each defined once (name, value, default)
//! and flattened into every command that takes it, as
//! [`super::shard::ShardArgs`] is. A command whose help says something of its
//! own about a shared flag (where its output goes, what it resolves) words it
//! with `#[command(mut_arg("<id>", |a| a.help("...")))]`; the definition stays
//! here.

use std::path::PathBuf;

use super::OutputFormat;

/// `--output-format text|json`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct OutputFormatArg {
    /// Output format.
    #[arg(
        long = "output-format",
        id = "output_format",
        value_name = "OUTPUT_FORMAT",
        value_enum,
        default_value_t
    )]
    pub format: OutputFormat,
}

impl PartialEq<OutputFormat> for OutputFormatArg {
    fn eq(&self, other: &OutputFormat) -> bool {
        self.format == *other
    }
}

/// `--session FILE`: the session a moved cassette (or a fingerprint) resolves
/// its skill sources from.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArg {
    /// Resolve skill sources from this session file.
    #[arg(long = "session", id = "session", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// `--no-sandbox`: run the agent unconfined, on purpose.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct SandboxArg {
    /// Run the agent and everything it starts without the kernel sandbox
    /// (Landlock, namespaces). Every result then says the run was unconfined.
    /// Never on a cassette you did not write: a rerun executes the tool calls
    /// it holds.
    #[arg(long = "no-sandbox", id = "no_sandbox")]
    pub off: bool,
}

impl SandboxArg {
    pub fn mode(self) -> crate::sandbox::Mode {
        if self.off {
            crate::sandbox::Mode::Off
        } else {
            crate::sandbox::Mode::Enforce
        }
    }
}

/// `--strict`: what a command otherwise tolerates fails it.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct StrictArg {
    /// Fail on what is otherwise only reported.
    #[arg(long = "strict", id = "strict")]
    pub on: bool,
}

/// `--write`: persist the result into the cassette.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct WriteArg {
    /// Persist the result into the cassette.
    #[arg(long = "write", id = "write")]
    pub on: bool,
}

/// `--junit FILE`: also write a JUnit XML report.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JunitArg {
    /// Also write a JUnit XML report.
    #[arg(long = "junit", id = "junit", value_name = "FILE")]
    pub file: Option<PathBuf>,
}
