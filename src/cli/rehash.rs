//! `reel rehash`: arguments and the thin glue to [`crate::rehash`].

use std::io::Write;
use std::path::PathBuf;

use crate::cli::OutputFormat;
use crate::cli::flags::{OutputFormatArg, SessionArg};
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::rehash::{RehashOptions, collect_files, rehash_files};
use crate::report::rehash as report;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (rows on stderr) or `json` (envelope on stdout)")),
    mut_arg("session", |a| a.help("Resolve the skill sources of ONE moved cassette from this \
        session file")),
    after_help = "Migrates v10/v11 (legacy-hash) cassettes to v12 after proving the skill tree is \
        unchanged \
                  (legacy skillHash recomputed and equal, same file-set mode and agent scope, \
                      fileSigs aligned). \
                  v12 cassettes are skipped. Text mode prints a status line per cassette (PASS \
                      migrated, SKIP \
                  nothing to do, FAIL refused) and `N passed, N failed`; --verbose prints the \
                      original's rows.\n\n\
                  Exit codes: 0 nothing was refused; 1 a cassette could not be migrated \
                      (re-record it); 2 usage."
)]
pub struct RehashArgs {
    /// Directories (their `*.cassette.json`, non-recursive) or cassette files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Report what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    /// Text mode: the original's rows (cowork-harness format) instead of a status line per cassette.
    #[arg(long)]
    pub verbose: bool,
}

const USAGE_HINT: &str = "usage: reel rehash <dir/>... [--dry-run] [--output-format \
    text|json]  |  reel rehash <file.cassette.json> --session <session.yaml> [--dry-run]";

/// A rehash the flags allow: the cassettes (directories expanded) and the
/// options. Every cross-flag check is in [`RehashPlan::from_args`].
pub struct RehashPlan {
    pub files: Vec<PathBuf>,
    pub opts: RehashOptions,
}

impl RehashPlan {
    pub fn from_args(args: &RehashArgs) -> Result<RehashPlan> {
        let session = session(args)?;
        let mut files = vec![];
        for p in &args.paths {
            if !p.exists() {
                return Err(Error::usage(format!(
                    "rehash: no such file or directory: {}",
                    p.display()
                ))
                .with_hint(USAGE_HINT));
            }
            files.extend(
                collect_files(p).map_err(|e| {
                    Error::usage(format!("rehash: cannot list {}: {e}", p.display()))
                })?,
            );
        }
        Ok(RehashPlan {
            files,
            opts: RehashOptions {
                dry_run: args.dry_run,
                session,
            },
        })
    }
}

/// `--session FILE`: one cassette file only, an existing session file.
fn session(args: &RehashArgs) -> Result<Option<PathBuf>> {
    Ok(match &args.session.file {
        Some(s) => {
            if args.paths.len() != 1 || !args.paths[0].is_file() {
                return Err(Error::usage(format!(
                    "rehash --session takes a single cassette FILE, not a directory: {}",
                    args.paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .with_hint(USAGE_HINT));
            }
            if !s.is_file() {
                return Err(Error::usage(format!(
                    "rehash --session: not a session file: {}",
                    s.display()
                )));
            }
            Some(
                std::path::absolute(s)
                    .map_err(|e| Error::usage(format!("rehash --session: {}: {e}", s.display())))?,
            )
        }
        None => None,
    })
}

pub fn run(args: RehashArgs) -> Result<ExitStatus> {
    let RehashPlan { files, opts } = RehashPlan::from_args(&args)?;
    let summary = rehash_files(&files, &opts);
    if args.output_format == OutputFormat::Json {
        let _ = writeln!(std::io::stdout().lock(), "{}", report::json(&summary));
    } else {
        let text = if args.verbose {
            report::text(&summary)
        } else {
            report::status_text(&summary)
        };
        let _ = anstream::stderr().lock().write_all(text.as_bytes());
    }
    Ok(summary.status())
}
