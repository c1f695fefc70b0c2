//! `reel rerun --agent-version …`: the release matrix around
//! `crate::matrix` (selectors resolved and installed first; renderers are
//! `crate::report::matrix`).

use std::io::Write;
use std::path::PathBuf;

use crate::agents::{self, Cache, Selector};
use crate::cli::OutputFormat;
use crate::cli::rerun::RerunArgs;
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::report;
use crate::rerun::RerunOptions;

/// Prints an install's progress on stderr.
pub fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The releases `selectors` names, installed; `arg` names where the
/// selectors came from in messages (`--agent-version`, `agents install`).
pub fn releases(
    cache: &Cache,
    selectors: &str,
    arg: &str,
    refresh: bool,
) -> Result<Vec<agents::Installed>> {
    let versions = resolve_selectors(cache, selectors, arg, refresh)?;
    let mut out = Vec::new();
    for v in &versions {
        out.push(agents::ensure(cache, v, &progress)?);
    }
    Ok(out)
}

/// The releases `selectors` names (parsed, then resolved against the
/// release list), nothing installed: every bad-input refusal (exit 2) comes
/// before any download.
pub fn resolve_selectors(
    cache: &Cache,
    selectors: &str,
    arg: &str,
    refresh: bool,
) -> Result<Vec<semver::Version>> {
    let parsed = Selector::parse_list(selectors).map_err(|e| {
        crate::Error::usage(format!("{arg}: {e}")).with_hint(
            "comma-separated releases: `2.1.250`, `latest`, `last:3`, `2.1.250..2.1.260`",
        )
    })?;
    if parsed.is_empty() {
        return Err(crate::Error::usage(format!("{arg} names no release")));
    }
    agents::resolve(cache, &parsed, refresh).map_err(|e| {
        let mut e = crate::Error::from(e);
        e.message = format!("{arg}: {}", e.message);
        e
    })
}

pub fn run(
    args: &RerunArgs,
    selectors: &str,
    files: Vec<PathBuf>,
    opts: RerunOptions,
) -> Result<ExitStatus> {
    let cache = Cache::from_env();
    let installed = releases(&cache, selectors, "--agent-version", false)?;
    let shard = args.shard.shard;
    let planned = crate::matrix::plan(&files, &installed, shard);
    if planned.is_empty()
        && let Some(s) = shard
    {
        progress(&format!(
            "rerun: shard {s} holds none of the {} cell(s) — nothing to do",
            files.len() * installed.len()
        ));
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let cells = crate::matrix::run(&planned, &opts, jobs);
    let mut worst = cells
        .iter()
        .fold(ExitStatus::Success, |w, c| w.worst(c.status()));
    if args.output_format == OutputFormat::Text {
        let _ = std::io::stdout()
            .lock()
            .write_all(report::matrix::table(&cells).as_bytes());
    } else {
        let versions: Vec<_> = installed.iter().map(|i| i.version.clone()).collect();
        let env = report::matrix::envelope(&cells, &versions);
        let _ = writeln!(std::io::stdout().lock(), "{env}");
    }
    if let Some(path) = &args.junit.file {
        let written = report::matrix::junit(&cells)
            .map_err(std::io::Error::other)
            .and_then(|xml| crate::atomic::write_atomic(path, xml.as_bytes()));
        if let Err(e) = written {
            progress(&format!("rerun: --junit {}: {e}", path.display()));
            worst = worst.worst(ExitStatus::Usage);
        }
    }
    if let Some(w) =
        report::github::write_summary_if_enabled(|| report::matrix::github_summary(&cells))
    {
        progress(&w);
    }
    Ok(worst)
}
