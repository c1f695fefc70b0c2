//! `reel rerun`: arguments, target resolution and the batch loop around
//! `crate::rerun`; renderers are `crate::report::rerun`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use rayon::prelude::*;

use crate::cli::flags::{JunitArg, OutputFormatArg, SandboxArg, SessionArg, StrictArg, WriteArg};
use crate::cli::{OutputFormat, PlanError};
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::report;
use crate::report::rerun::Entry;
use crate::rerun::{Outcome, RerunError, RerunOptions};

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("Output format: text (report on stderr) or json (one \
        envelope on stdout, schema/rerun.json)")),
    mut_arg("session", |a| a.help("Resolve the recorded session from this file (one cassette only; \
        for a moved cassette)")),
    mut_arg("strict", |a| a.help("A divergence from the recording fails the rerun")),
    mut_arg("write", |a| a.help("Replace the cassette with the fresh recording when the verdict \
        passes and nothing diverged")),
    mut_arg("junit", |a| a.help("Also write a JUnit XML report (a suite per cassette; a case per \
        assertion and divergence)")),
    after_help = "Re-executes each recording: the real agent runs the current skill files, scripts \
        and hooks \
                  against the model replies the cassette holds (served from 127.0.0.1, \
                      token-free), answers come \
                  from the frozen `answers:`, and the frozen `assert:` block is judged on the \
                      fresh run. \
                  Divergences (a tool result, skill body, answer or file that differs from the \
                      recording) are \
                  reported; they fail the rerun only under --strict.\n\n\
                  Exit codes: 0 every verdict passes (divergence alone is no failure); 1 a verdict \
                      failed, or a \
                  divergence under --strict; 2 usage error or invalid input; 3 a cassette could \
                      not be rerun here \
                  (another tier, no agent binary, no kernel sandbox, no credential for \
                      --live-model). A directory reruns in parallel; the worst exit wins."
)]
pub struct RerunArgs {
    /// A cassette file, or a directory whose `*.cassette.json` files (non-recursive) are rerun.
    #[arg(value_name = "CASSETTE|DIR")]
    pub targets: Vec<PathBuf>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    #[command(flatten)]
    pub strict: StrictArg,
    #[command(flatten)]
    pub write: WriteArg,
    /// (with --write) also write a diverged run, marked in `environment.reelRerun`.
    #[arg(long, requires = "write")]
    pub accept_divergence: bool,
    /// (with --write) replace the cassette in place even when the fresh recording differs
    /// (default: a differing one goes to `NAME.cassette.json.new` for `reel review`; an
    /// identical one writes nothing; under CI=true a differing one fails with the diff).
    #[arg(long, requires = "write")]
    pub accept: bool,
    #[command(flatten)]
    pub session: SessionArg,
    /// Run this agent instead of `claude` (split into words as a shell would, quotes included;
    /// no shell runs it).
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Wall-clock budget per run in milliseconds [default: the scenario's timeout_ms, else 600000].
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// Reruns at once for a directory [default: the number of cores].
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Keep each fresh run's directory (always kept when a rerun fails).
    #[arg(long)]
    pub keep_run_dir: bool,
    /// Run this MCP server of the session for real, inside the sandbox (repeatable; every
    /// other server is frozen: served from the recording). An HTTP server needs its URL from
    /// you, `NAME=URL`: reel never connects to a URL taken from the session's files.
    #[arg(long, value_name = "NAME[=URL]")]
    pub mcp_live: Vec<String>,
    #[command(flatten)]
    pub sandbox: SandboxArg,
    /// Also note each tool result that differs from the recording but is equal after masking,
    /// naming the masks (built-in or reel.toml) that made it equal.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub junit: JunitArg,
    #[command(flatten)]
    pub shard: crate::cli::shard::ShardArgs,
    /// Rerun under these Claude Code releases (a matrix): comma-separated `X.Y.Z`, `latest`,
    /// `last:N`, `A..B` (inclusive); each is installed once into the agent cache (`reel agents`).
    /// With --shard, the cassette × release cells are split.
    #[arg(long, value_name = "SELECTORS", conflicts_with_all = ["agent_cmd", "write"])]
    pub agent_version: Option<String>,
    /// Rerun a multi-turn recording from user turn N: its workspace restored from the
    /// checkpoint after turn N-1 (docs/snapshots.md); earlier turns are replayed to rebuild
    /// the conversation, neither compared nor judged. One cassette.
    #[arg(long, value_name = "N", conflicts_with_all = ["write", "agent_version"])]
    pub from_turn: Option<usize>,
    /// From turn N (--from-turn, default 1) on, the real API answers (ANTHROPIC_API_KEY or
    /// ANTHROPIC_AUTH_TOKEN; ANTHROPIC_BASE_URL moves it); earlier turns get the recorded
    /// replies. The fresh recording is staged as NAME.cassette.json.new for `reel review`,
    /// never written over the cassette. One cassette.
    #[arg(long, conflicts_with_all = ["write", "agent_version", "agent_cmd"])]
    pub live_model: bool,
}

fn usage(args: &RerunArgs, message: String, hint: Option<&str>) -> Result<ExitStatus> {
    if args.output_format == OutputFormat::Json {
        let env = report::rerun::usage_error(&message, hint);
        let _ = writeln!(std::io::stdout().lock(), "{env}");
        return Ok(ExitStatus::Usage);
    }
    let err = crate::Error::usage(message);
    Err(match hint {
        Some(h) => err.with_hint(h),
        None => err,
    })
}

/// A rerun the flags allow: the targets resolved and sharded, the options
/// built. Every cross-flag check is in [`RerunPlan::from_args`].
pub struct RerunPlan {
    /// This shard's cassettes.
    pub files: Vec<PathBuf>,
    pub opts: RerunOptions,
    /// The empty-shard notice, printed before anything runs.
    pub notices: Vec<String>,
}

impl RerunPlan {
    pub fn from_args(args: &RerunArgs) -> std::result::Result<RerunPlan, PlanError> {
        if args.targets.is_empty() {
            return Err(PlanError::new(
                "rerun: no cassette given".into(),
                Some("reel rerun CASSETTE.json | DIR/"),
            ));
        }
        let mut files = Vec::new();
        for t in &args.targets {
            match crate::cli::replay::resolve_targets(t) {
                Ok(f) => files.extend(f),
                Err(e) => return Err(PlanError::new(format!("rerun: {e}"), None)),
            }
        }
        let discovered = files.len();
        // A matrix shards its cells, not its cassettes (`cli::matrix`).
        let files = if args.agent_version.is_some() {
            files
        } else {
            args.shard.select(files)
        };
        let mut notices = Vec::new();
        if files.is_empty()
            && let Some(notice) = args.shard.empty_notice("rerun", discovered)
        {
            notices.push(notice);
        }
        let refuse = |message: &str, hint: Option<&'static str>| PlanError {
            notices: notices.clone(),
            ..PlanError::new(message.into(), hint)
        };
        if let Some((message, hint)) = one_cassette_refusal(args, files.len()) {
            return Err(refuse(message, hint));
        }
        let project = crate::project::ProjectConfig::discover_cwd()
            .map_err(|e| refuse(&format!("rerun: {e}"), None))?;
        let opts = RerunOptions {
            session: args.session.file.clone(),
            agent_cmd: args.agent_cmd.clone(),
            claude_program: None,
            strict: args.strict.on,
            write: args.write.on,
            accept_divergence: args.accept_divergence,
            stage: crate::review::StageOptions {
                accept: args.accept,
                ci: crate::review::ci_from_env(),
            },
            timeout: args.timeout_ms.map(Duration::from_millis),
            keep_run_dir: args.keep_run_dir,
            sandbox: args.sandbox.mode(),
            mcp_live: args.mcp_live.clone(),
            project,
            explain: args.explain,
            from_turn: args.from_turn,
            live_model: args.live_model,
        };
        Ok(RerunPlan {
            files,
            opts,
            notices,
        })
    }
}

/// The options that apply to one cassette at a time, and `--jobs 0`:
/// refused before anything runs, with what to do instead.
fn one_cassette_refusal(
    args: &RerunArgs,
    files: usize,
) -> Option<(&'static str, Option<&'static str>)> {
    let single: [(bool, &'static str, &'static str); 3] = [
        (
            args.session.file.is_some(),
            "rerun: --session applies to one cassette at a time",
            "each cassette may have been recorded against a different session; rerun them one \
                by one",
        ),
        (
            args.from_turn.is_some(),
            "rerun: --from-turn applies to one cassette at a time",
            "name the one multi-turn cassette to rerun from turn N",
        ),
        (
            args.live_model,
            "rerun: --live-model applies to one cassette at a time",
            "name the one cassette to rerun against the live model",
        ),
    ];
    if files > 1
        && let Some((_, message, hint)) = single.into_iter().find(|(set, ..)| *set)
    {
        return Some((message, Some(hint)));
    }
    (args.jobs == Some(0)).then_some(("rerun: --jobs must be at least 1", None))
}

pub fn run(args: RerunArgs) -> Result<ExitStatus> {
    let plan = RerunPlan::from_args(&args);
    for notice in match &plan {
        Ok(plan) => &plan.notices,
        Err(e) => &e.notices,
    } {
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            crate::terminal_safe::command_line(notice)
        );
    }
    let RerunPlan { files, opts, .. } = match plan {
        Ok(plan) => plan,
        Err(e) => return usage(&args, e.message, e.hint),
    };
    if let Some(selectors) = &args.agent_version {
        return crate::cli::matrix::run(&args, selectors, files, opts);
    }
    let entries = rerun_all(&args, &files, &opts)?;
    let mut worst = report_to_stderr(&args, &entries);
    if let Some(path) = &args.junit.file {
        let written = report::rerun::junit(&entries, args.strict.on)
            .map_err(std::io::Error::other)
            .and_then(|xml| crate::atomic::write_atomic(path, xml.as_bytes()));
        if let Err(e) = written {
            let _ = writeln!(std::io::stderr(), "rerun: --junit {}: {e}", path.display());
            worst = worst.worst(ExitStatus::Usage);
        }
    }
    if args.output_format == OutputFormat::Json {
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            report::rerun::envelope(&entries)
        );
    }
    Ok(worst)
}

/// Reruns each cassette on a pool of `--jobs` workers (default: one per
/// core); a refused one is an entry with the exit status it earns.
fn rerun_all(args: &RerunArgs, files: &[PathBuf], opts: &RerunOptions) -> Result<Vec<Entry>> {
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.min(files.len()).max(1))
        .build()
        .map_err(|e| crate::Error::usage(format!("rerun: start {jobs} workers: {e}")))?;
    Ok(pool.install(|| {
        files
            .par_iter()
            .map(|f| match crate::rerun::rerun(f, opts) {
                Ok(r) => Entry::Done(Box::new(r)),
                Err(error) => {
                    let status = match error {
                        RerunError::Invalid { .. } => ExitStatus::Usage,
                        RerunError::CannotRun { .. } => ExitStatus::COULD_NOT_RUN,
                    };
                    Entry::Refused {
                        file: f.clone(),
                        error,
                        status,
                    }
                }
            })
            .collect()
    }))
}

/// The text report (or, in JSON mode, the refusals) and GitHub annotations
/// on stderr; returns the worst exit status of the entries.
fn report_to_stderr(args: &RerunArgs, entries: &[Entry]) -> ExitStatus {
    let mut worst = ExitStatus::Success;
    let gh = report::github::enabled();
    {
        // anstream drops the colour unless stderr is a terminal (and honours NO_COLOR).
        let mut err = anstream::stderr().lock();
        for e in entries {
            if args.output_format == OutputFormat::Text {
                let block = report::status::render_file(&report::rerun::outcome(e), true);
                let _ = err.write_all(block.as_bytes());
            } else if let Entry::Refused { file, error, .. } = e {
                let what = format!("{}: {error}", file.display());
                let _ = writeln!(err, "rerun: {}", crate::terminal_safe::block(&what));
            }
            if gh {
                for a in report::rerun::annotations(e) {
                    let _ = writeln!(err, "{a}");
                }
            }
            worst = worst.worst(entry_status(e));
        }
        if args.output_format == OutputFormat::Text {
            let _ = err.write_all(report::rerun::summary(entries, true).as_bytes());
        }
    }
    worst
}

fn entry_status(e: &Entry) -> ExitStatus {
    match e {
        Entry::Done(r) => match r.outcome {
            Outcome::Fail => ExitStatus::Failure,
            Outcome::Pass | Outcome::PassDiverged => ExitStatus::Success,
        },
        Entry::Refused { status, .. } => *status,
    }
}
