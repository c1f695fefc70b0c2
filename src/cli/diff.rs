//! `reel diff A B`: arguments and the thin glue to [`crate::diff`].

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::diff::{self, DiffOptions, View};
use crate::error::{Error, Result};
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (the diff on stdout) or `json` (envelope on \
        stdout, schema/diff.json)")),
    after_help = "Compares two recordings view by view: tools, answers, transcript (advisory: \
                  never makes them differ), files, assertions, meta. Run paths, tool-use ids, \
                  UUIDs, session ids, timestamps and durations are masked unless --no-normalize.\n\
                  Exit codes: 0 identical · 1 differing · 2 usage or unreadable cassette."
)]
pub struct DiffArgs {
    /// The old cassette.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The new cassette.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Compare only these views (repeat or comma-separate; default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub view: Vec<View>,
    /// Show raw run paths, ids, timestamps and durations.
    #[arg(long)]
    pub no_normalize: bool,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

pub fn run(args: DiffArgs) -> Result<ExitStatus> {
    let project = crate::project::ProjectConfig::discover_cwd()
        .map_err(|e| Error::usage(format!("diff: {e}")))?;
    let opts = DiffOptions {
        normalize: !args.no_normalize,
        views: args.view.clone(),
        masks: project.masks,
    };
    let d = match diff::diff_files(&args.a, &args.b, &opts) {
        Ok(d) => d,
        Err(e) => {
            let err = Error::usage(format!("diff: {e}")).with_hint(e.hint());
            if args.output_format == OutputFormat::Json {
                let _ = writeln!(
                    std::io::stdout().lock(),
                    "{}",
                    envelope("diff", Value::Null, Some(&err))
                );
            }
            return Err(err);
        }
    };
    let code = if d.identical {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };
    match args.output_format.format {
        OutputFormat::Json => {
            let result = serde_json::to_value(&d).unwrap_or(Value::Null);
            let _ = writeln!(
                std::io::stdout().lock(),
                "{}",
                envelope("diff", result, None)
            );
        }
        OutputFormat::Text => {
            let _ = anstream::stdout()
                .lock()
                .write_all(diff::render::diff_text(&d, true).as_bytes());
        }
    }
    Ok(code)
}

/// `{tool, version, command, ok, results, error}` with one result (or none).
pub fn envelope(command: &str, result: Value, err: Option<&Error>) -> Value {
    let ok = err.is_none()
        && result
            .get("identical")
            .and_then(Value::as_bool)
            .unwrap_or(true);
    let results = if result.is_null() {
        json!([])
    } else {
        json!([result])
    };
    let error = match err {
        None => Value::Null,
        Some(e) => {
            let mut o = json!({"category": "usage", "message": e.message});
            if let Some(h) = &e.hint {
                o["hint"] = json!(h);
            }
            o
        }
    };
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": command,
        "ok": ok,
        "results": results,
        "error": error,
    })
}
