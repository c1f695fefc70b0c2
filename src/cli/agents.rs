//! `reel agents list|install|prune` and `reel bisect`: Claude Code releases
//! in the agent cache (`crate::agents`), and the search for the release that
//! changed a cassette (`crate::matrix::bisect`).

use std::io::Write;
use std::path::PathBuf;

use crate::agents::{self, Cache, Selector};
use crate::cli::matrix::progress;
use crate::error::Result;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The cache is REEL_AGENTS_DIR, else $XDG_CACHE_HOME/reel/agents, else \
    ~/.cache/reel/agents; one npm install per release. The registry's release list is kept 10 \
    minutes; a release named by number that the kept list lacks, or --refresh, asks the registry \
    again; offline, the kept list is used with a warning giving its age.\n\n\
    Exit codes: 0 done; 2 bad input (a selector that does not parse or names no published \
    release); 3 the release cannot be installed here (offline, no npm, no node for a cli.js \
    release)."
)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum AgentsCommand {
    /// List installed releases (version, layout, disk use); --available: the registry's.
    List {
        /// List the registry's published releases instead (newest last).
        #[arg(long)]
        available: bool,
        /// With --available: ask the registry now, not the list cached for 10 minutes.
        #[arg(long, requires = "available")]
        refresh: bool,
    },
    /// Install releases: comma-separated `X.Y.Z`, `latest`, `last:N`, `A..B`.
    Install {
        #[arg(value_name = "SELECTORS")]
        selectors: String,
        /// Ask the registry for its release list now, not the list cached for 10 minutes.
        #[arg(long)]
        refresh: bool,
    },
    /// Remove installed releases: the named ones, or all but the newest --keep N.
    Prune {
        /// Releases to remove (comma-separated selectors); default: see --keep.
        #[arg(value_name = "SELECTORS")]
        selectors: Option<String>,
        /// Keep the newest N installed releases [default: 0 without SELECTORS].
        #[arg(long, value_name = "N", conflicts_with = "selectors")]
        keep: Option<usize>,
    },
}

pub fn run(args: AgentsArgs) -> Result<ExitStatus> {
    let cache = Cache::from_env();
    let mut out = std::io::stdout().lock();
    match args.command {
        AgentsCommand::List {
            available: true,
            refresh,
        } => {
            let policy = agents::registry::ListPolicy {
                refresh,
                must_hold: &[],
            };
            for v in agents::registry::versions_with(&cache, policy)?.as_slice() {
                let _ = writeln!(out, "{v}");
            }
        }
        AgentsCommand::List {
            available: false, ..
        } => {
            let _ = writeln!(std::io::stderr(), "cache: {}", cache.root().display());
            for i in cache.installed() {
                let _ = writeln!(
                    out,
                    "{}\t{}\t{:.0} MB\t{}",
                    i.version,
                    layout_name(i.layout),
                    i.disk_usage() as f64 / 1e6,
                    i.program.display()
                );
            }
        }
        AgentsCommand::Install { selectors, refresh } => {
            for i in crate::cli::matrix::releases(&cache, &selectors, "agents install", refresh)? {
                let _ = writeln!(out, "{}\t{}", i.version, i.program.display());
            }
        }
        AgentsCommand::Prune { selectors, keep } => prune(&cache, selectors, keep, &mut out)?,
    }
    Ok(ExitStatus::Success)
}

fn layout_name(l: agents::Layout) -> &'static str {
    match l {
        agents::Layout::NodeScript => "cli.js",
        agents::Layout::Native => "native",
    }
}

fn prune(
    cache: &Cache,
    selectors: Option<String>,
    keep: Option<usize>,
    out: &mut impl Write,
) -> Result<()> {
    let installed = cache.installed();
    let doomed: Vec<semver::Version> = match selectors {
        Some(s) => {
            let parsed = Selector::parse_list(&s)
                .map_err(|e| crate::Error::usage(format!("agents prune: {e}")))?;
            let list = agents::VersionList::new(installed.iter().map(|i| i.version.clone()));
            agents::version::resolve_all(&parsed, &list).map_err(|e| {
                crate::Error::usage(format!("agents prune: {e} among the installed releases"))
            })?
        }
        None => {
            let keep = keep.unwrap_or(0);
            let n = installed.len().saturating_sub(keep);
            installed[..n].iter().map(|i| i.version.clone()).collect()
        }
    };
    for dir in cache.leftovers() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    for v in doomed {
        let freed = cache
            .remove(&v)
            .map_err(|e| crate::Error::usage(format!("agents prune: remove {v}: {e}")))?;
        let _ = writeln!(out, "removed {v} ({:.0} MB)", freed as f64 / 1e6);
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Reruns the cassette under the good and the bad release, then halves the \
    registry's releases between them until one is left: the first release that behaves like the \
    newer of the two (the first bad one for a regression). Each step is printed on stderr; the \
    answer goes to stdout. Exit codes: 0 found; 2 an endpoint does not behave as stated, or bad \
    input; 3 a release cannot be installed or a rerun cannot run here."
)]
pub struct BisectArgs {
    /// The cassette to rerun.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,
    /// A release under which the rerun is good.
    #[arg(long, value_name = "VERSION")]
    pub good: String,
    /// A release under which the rerun is bad.
    #[arg(long, value_name = "VERSION")]
    pub bad: String,
    /// Bad means any divergence from the recording [default: a failing verdict].
    #[arg(long)]
    pub strict: bool,
    /// Wall-clock budget per rerun in milliseconds [default: the scenario's timeout_ms].
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    #[command(flatten)]
    pub output_format: crate::cli::flags::OutputFormatArg,
}

/// The endpoints and the release list of a bisect, every bad input refused
/// (exit 2) before any release is downloaded: numbers that parse and
/// differ, a cassette a rerun accepts, endpoints the registry published.
fn bisect_inputs(
    args: &BisectArgs,
    cache: &Cache,
) -> Result<(semver::Version, semver::Version, agents::VersionList)> {
    let version = |s: &str, flag: &str| {
        semver::Version::parse(s.trim()).map_err(|_| {
            crate::Error::usage(format!("bisect: --{flag} {s:?} is not a release number"))
                .with_hint(
                    "name a published release, e.g. 2.1.286 (`reel agents list --available`)",
                )
        })
    };
    let (good, bad) = (version(&args.good, "good")?, version(&args.bad, "bad")?);
    if good == bad {
        return Err(crate::Error::usage(
            "bisect: --good and --bad are the same release",
        ));
    }
    // Bad input is refused before any release is downloaded.
    if let Err(e) = crate::rerun::check_rerunnable(&args.cassette) {
        let mut err = crate::Error::usage(format!("bisect: {e}"));
        if let crate::rerun::RerunError::CannotRun { .. } = e {
            err.kind = crate::error::ErrorKind::Unverified;
        }
        return Err(match e.hint() {
            Some(h) => err.with_hint(h),
            None => err,
        });
    }
    let must_hold = [good.clone(), bad.clone()];
    let list = agents::registry::versions_with(
        cache,
        agents::registry::ListPolicy {
            refresh: false,
            must_hold: &must_hold,
        },
    )?;
    for (v, flag) in [(&good, "good"), (&bad, "bad")] {
        if !list.contains(v) {
            return Err(crate::Error::usage(format!(
                "bisect: --{flag} {v}: no published release matches `{v}`"
            ))
            .with_hint(format!(
                "name a published release (`reel agents list --available`; newest: {})",
                list.latest().map_or("?".into(), ToString::to_string)
            )));
        }
    }
    Ok((good, bad, list))
}

pub fn bisect(args: BisectArgs) -> Result<ExitStatus> {
    let cache = Cache::from_env();
    let (good, bad, list) = bisect_inputs(&args, &cache)?;
    let opts = crate::rerun::RerunOptions {
        timeout: args.timeout_ms.map(std::time::Duration::from_millis),
        ..Default::default()
    };
    let plan = crate::matrix::bisect::BisectPlan {
        cassette: &args.cassette,
        good,
        bad,
        strict: args.strict,
        opts: &opts,
    };
    use crate::matrix::bisect::BisectError;
    let found = match crate::matrix::bisect::bisect(&plan, &list, &cache, &progress) {
        Ok(f) => f,
        Err(BisectError::Agents(e)) => return Err(e.into()),
        Err(BisectError::Endpoint(m)) => {
            return Err(crate::Error::usage(format!("bisect: {m}")).with_hint(
                "check the endpoints (and --strict): the search needs one good and one bad release",
            ));
        }
        Err(BisectError::CannotRun(m)) => {
            let mut e = crate::Error::usage(format!("bisect: {m}"));
            e.kind = crate::error::ErrorKind::Unverified;
            return Err(e);
        }
    };
    let mut out = std::io::stdout().lock();
    if args.output_format.format == crate::cli::OutputFormat::Json {
        let env = serde_json::json!({
            "tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "bisect",
            "ok": true, "cassette": args.cassette.display().to_string(),
            "strict": args.strict, "result": found, "error": null,
        });
        let _ = writeln!(out, "{env}");
    } else {
        let _ = writeln!(
            out,
            "first {} release: {} (the release before it, {}, is {}; {} rerun(s))",
            if found.regression { "bad" } else { "good" },
            found.first_changed,
            found.last_before,
            if found.regression { "good" } else { "bad" },
            found.steps.len()
        );
    }
    Ok(ExitStatus::Success)
}
