//! `reel gc`: removes kept run directories (`crate::runs`).

use std::io::Write;

use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::runs::{self, Select};
use crate::verify::lifecycle::MaxAge;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (a line per run on stderr) or `json` (an \
        envelope on stdout, schema/gc.json)")),
    group(clap::ArgGroup::new("which").required(true).args(["older_than", "all"])),
    after_help = "Kept runs live under REEL_RUNS_DIR, else $XDG_CACHE_HOME/reel/runs, else \
                  ~/.cache/reel/runs. Only directories holding reel's .reel-run marker are \
                  removed; anything else there, and any symlink, is left alone and listed.\n\n\
                  Exit codes: 0 done (or nothing to do); 1 a run could not be removed; 2 usage."
)]
pub struct GcArgs {
    /// Remove kept runs created at least this long ago (`7d`, `36h`, `2w`; units s, m, h, d, w).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<MaxAge>,
    /// Remove every kept run.
    #[arg(long)]
    pub all: bool,
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

pub fn run(args: GcArgs) -> Result<ExitStatus> {
    let select = match args.older_than {
        Some(age) => Select::OlderThan(age.limit),
        None => Select::All,
    };
    let report = runs::gc(
        &runs::root(),
        select,
        args.dry_run,
        std::time::SystemTime::now(),
    );
    if args.output_format == OutputFormat::Json {
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            crate::report::gc::json(&report)
        );
    } else {
        let _ = anstream::stderr()
            .lock()
            .write_all(crate::report::gc::text(&report).as_bytes());
    }
    Ok(if report.errors.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
