//! `reel show CASSETTE`: arguments and the thin glue to [`crate::show`].

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::cassette::Cassette;
use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::show::{Show, ShowView};

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (the digest on stdout) or `json` (envelope on \
        stdout, schema/show.json)")),
    after_help = "A readable digest of one recording: tools (calls, inputs, results), questions \
                  (prompts and answers), files (the manifest, with a shallow preview of JSON \
                  artifacts), timeline (where the time went), usage (turns, tokens, cost).\n\
                  Exit codes: 0 shown · 2 usage or unreadable cassette."
)]
pub struct ShowArgs {
    /// The cassette to show.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,
    /// Which view to print.
    #[arg(long, value_enum, default_value = "all")]
    pub view: ShowView,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

pub fn run(args: ShowArgs) -> Result<ExitStatus> {
    let loaded = if args.cassette.is_dir() {
        Err(a_directory(&args.cassette))
    } else {
        Cassette::load(&args.cassette)
            .map_err(|e| Error::usage(format!("show: {e}")).with_hint(e.hint()))
    };
    let cassette = match loaded {
        Ok(c) => c,
        Err(err) => {
            if args.output_format == OutputFormat::Json {
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    super::diff::envelope("show", Value::Null, Some(&err))
                );
            }
            return Err(err);
        }
    };
    let show = Show::of(&cassette, args.view);
    match args.output_format.format {
        OutputFormat::Json => {
            let result = serde_json::to_value(&show).unwrap_or(Value::Null);
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                super::diff::envelope("show", result, None)
            );
        }
        OutputFormat::Text => {
            let _ = anstream::stdout()
                .lock()
                .write_all(show.text(true).as_bytes());
        }
    }
    Ok(ExitStatus::Success)
}

/// `show` digests one recording: a directory is refused once, naming what
/// it holds and the commands that do take a directory.
fn a_directory(dir: &Path) -> Error {
    let found = crate::discover::cassettes_in(dir).unwrap_or_default();
    let d = dir.display();
    let message = format!(
        "show: {d} is a directory; `reel show` digests one cassette ({} `*.cassette.json` in it)",
        found.len()
    );
    let hint = match found.first() {
        Some(first) => format!(
            "pass one of them, e.g. `reel show {}`; `reel replay {d}` and `reel verify-cassettes {d}` take \
             the whole directory",
            first.display()
        ),
        None => "pass a `*.cassette.json` file".to_owned(),
    };
    Error::usage(message).with_hint(hint)
}
