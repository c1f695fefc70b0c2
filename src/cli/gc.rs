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
    group(clap::ArgGroup::new("which").args(["older_than", "all", "snapshots"])),
    after_help = "Kept runs live under REEL_RUNS_DIR, else <tmp>/reel-<uid>/runs (<tmp>: \
                  TMPDIR unless it is under your home, else /tmp). Without --older-than or \
                  --all, gc removes runs older than 7d. Only directories holding reel's \
                  .reel-run marker are removed; anything else there, and any symlink, is left \
                  alone and listed.\n\n\
                  --snapshots ROOT... removes instead the snapshot blobs (docs/snapshots.md) \
                  that no cassette under the ROOTs names: run it with --dry-run first, and give \
                  every directory whose cassettes use the store. Only files named like a blob \
                  are ever removed.\n\n\
                  Exit codes: 0 done (or nothing to do); 1 a run or blob could not be removed; \
                  2 usage (a ROOT with no cassette, an unreadable cassette)."
)]
pub struct GcArgs {
    /// Remove kept runs created at least this long ago (`7d`, `36h`, `2w`; units s, m, h, d, w;
    /// default 7d).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<MaxAge>,
    /// Remove every kept run.
    #[arg(long)]
    pub all: bool,
    /// Remove the snapshot blobs no cassette under these directories (or cassette files)
    /// names, from their stores (JSON: schema/gc-snapshots.json).
    #[arg(long, value_name = "ROOT", num_args = 1..)]
    pub snapshots: Option<Vec<std::path::PathBuf>>,
    /// List what would be removed; remove nothing (alone: what `reel gc` would remove).
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

/// What a bare `reel gc` removes: runs kept a week or more.
const DEFAULT_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

pub fn run(args: GcArgs) -> Result<ExitStatus> {
    if let Some(roots) = &args.snapshots {
        return snapshots(roots, args.dry_run, args.output_format);
    }
    let select = match (args.older_than, args.all) {
        (Some(age), _) => Select::OlderThan(age.limit),
        (None, true) => Select::All,
        (None, false) => Select::OlderThan(DEFAULT_AGE),
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

/// `reel gc --snapshots ROOT...`.
fn snapshots(
    roots: &[std::path::PathBuf],
    dry_run: bool,
    format: OutputFormatArg,
) -> Result<ExitStatus> {
    let config = crate::project::ProjectConfig::discover_cwd()
        .map_err(|e| crate::Error::usage(format!("gc: {e}")))?;
    let report = crate::snapshot::gc::collect(roots, &config, dry_run).map_err(|e| {
        crate::Error::usage(format!("gc --snapshots: {e}"))
            .with_hint("name the directories holding your cassettes (e.g. `cassettes/`)")
    })?;
    if format == OutputFormat::Json {
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            crate::report::gc::snapshots_json(&report)
        );
    } else {
        let _ = anstream::stderr()
            .lock()
            .write_all(crate::report::gc::snapshots_text(&report).as_bytes());
    }
    Ok(if report.errors.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
