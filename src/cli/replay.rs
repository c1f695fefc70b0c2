//! `reel replay`: arguments, target resolution and the batch loop — the thin
//! glue between the command line and `crate::replay` / `crate::report`.
//!
//! A directory is replayed in parallel (rayon) and reported in sorted order;
//! one broken cassette never stops the batch, it only raises the exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::cli::flags::{JunitArg, OutputFormatArg, SessionArg, StrictArg, WriteArg};
use crate::cli::shard::ShardArgs;
use crate::cli::{OutputFormat, PlanError};
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::replay::mutate::{Caps, MutateOptions};
use crate::replay::{AssertSource, ReplayOptions, ReplayResult, replay_file};
use crate::report;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("Output format: text (stderr footer) or json (one envelope \
        line on stdout)")),
    mut_arg("session", |a| a.help("Resolve skill sources from this session file (one cassette \
        only; for a moved cassette)")),
    mut_arg("strict", |a| a.help("Every staleness finding fails the replay")),
    mut_arg("write", |a| a.help("(with --assert-from/--reassert) persist the re-validated assert: \
        block into the cassette")),
    mut_arg("junit", |a| a.help("Also write a JUnit XML report (a suite per cassette, a case per \
        assertion)")),
    after_help = "Text mode writes the report to STDERR and nothing to stdout (a passing replay is \
        0 bytes): \
                  a status line per cassette (PASS/FAIL/STALE/ERROR, its file, assertions passed, \
                      time) with its \
                  failures and warnings under it, then `N passed, N failed`; --verbose prints the \
                      original's \
                  per-cassette footer instead. Machine output needs --output-format json. To tell \
                      your failing assertions from injected \
                  drift/corruption findings, read verdict.failures[].kind (`assertion` vs \
                  `staleness`/`cassette-format`), not the exit code.\n\n\
                  Exit codes: 0 all green; 1 a verdict failed; 2 usage error or a cassette that \
                      could not be replayed."
)]
pub struct ReplayArgs {
    /// A cassette file, or a directory whose `*.cassette.json` files (non-recursive) are replayed.
    #[arg(value_name = "CASSETTE|DIR")]
    pub targets: Vec<PathBuf>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
    #[command(flatten)]
    pub strict: StrictArg,
    /// Skill-source drift (skill, shared-root, unverifiable-skill) fails the replay.
    #[arg(long)]
    pub fail_on_skill_drift: bool,
    /// Evaluate this scenario's on-disk assert:/expect_denied: instead of the frozen ones
    /// (recording-shaping drift hard-fails; implies --fail-on-skill-drift).
    #[arg(long, value_name = "SCENARIO.yaml")]
    pub assert_from: Option<PathBuf>,
    /// Like --assert-from, with the cassette's own sibling scenario YAML.
    #[arg(long)]
    pub reassert: bool,
    #[command(flatten)]
    pub write: WriteArg,
    /// Let --write persist a block whose verdict fails.
    #[arg(long)]
    pub allow_failing: bool,
    #[command(flatten)]
    pub session: SessionArg,
    /// Text mode: list the evidence of each passing assertion under its cassette.
    #[arg(long)]
    pub explain: bool,
    /// Mutation coverage: perturb recorded JSON artifact values, re-run the assertions and report
    /// the perturbations nothing caught (a sample; reporting only, never changes the verdict).
    #[arg(long)]
    pub mutate: bool,
    /// (with --mutate) only perturb artifacts whose path matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub mutate_include: Vec<String>,
    /// (with --mutate) never perturb artifacts whose path matches this glob (repeatable; wins over include).
    #[arg(long, value_name = "GLOB")]
    pub mutate_exclude: Vec<String>,
    /// (with --mutate) at most N perturbations per file, applied first [default: 10].
    #[arg(long, value_name = "N")]
    pub mutate_max_per_file: Option<String>,
    /// (with --mutate) at most N perturbations in all [default: 50].
    #[arg(long, value_name = "N")]
    pub mutate_max_total: Option<String>,
    /// Replay a cassette of a newer format with a warning instead of a failing assertion.
    #[arg(long)]
    pub best_effort_future_cassette: bool,
    #[command(flatten)]
    pub junit: JunitArg,
    /// Accepted for compatibility; no effect.
    #[arg(short, long)]
    pub quiet: bool,
    /// Text mode: print the original's footer per cassette (cowork-harness format: result,
    /// provenance, guards and the whole failing transcript) instead of a status line per cassette.
    #[arg(long)]
    pub verbose: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
}

const USAGE_LINE: &str = "usage: reel replay <file.cassette.json | dir/> [--strict] \
    [--fail-on-skill-drift] \
[--mutate [--mutate-include/-exclude <glob>]... [--mutate-max-per-file/-total <n>]] [--assert-from \
    <scenario.yaml> | --reassert] [--session <file>] [--write [--allow-failing]] [--explain] \
[--best-effort-future-cassette] [--junit <file>] [--shard I/N] [--output-format text|json]";

/// A usage error: text mode returns it (printed by `cli::main`), json mode
/// prints the error envelope and exits 2.
fn usage(args: &ReplayArgs, message: String, hint: Option<&str>) -> Result<ExitStatus> {
    if args.output_format == OutputFormat::Json {
        let env = report::json::usage_error(&message, hint);
        let _ = writeln!(std::io::stdout().lock(), "{env}");
        return Ok(ExitStatus::Usage);
    }
    let err = crate::Error::usage(message);
    Err(match hint {
        Some(h) => err.with_hint(h),
        None => err,
    })
}

/// A `--mutate-max-*` value: a positive integer (a value past `usize` is
/// clamped, it only means "no cap").
fn mutate_cap(flag: &str, raw: &str) -> std::result::Result<usize, String> {
    let digits = raw.trim();
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || digits.bytes().all(|b| b == b'0')
    {
        return Err(format!(
            "replay: {flag} must be a positive integer (got \"{raw}\")"
        ));
    }
    Ok(digits.parse::<usize>().unwrap_or(usize::MAX))
}

/// The `--mutate` options, or the usage error of its flags.
fn mutate_options(args: &ReplayArgs) -> std::result::Result<Option<MutateOptions>, String> {
    let mut caps = Caps::default();
    if let Some(raw) = &args.mutate_max_per_file {
        caps.per_file = mutate_cap("--mutate-max-per-file", raw)?;
    }
    if let Some(raw) = &args.mutate_max_total {
        caps.total = mutate_cap("--mutate-max-total", raw)?;
    }
    if !args.mutate {
        let orphans: Vec<&str> = [
            (!args.mutate_include.is_empty(), "--mutate-include"),
            (!args.mutate_exclude.is_empty(), "--mutate-exclude"),
            (args.mutate_max_per_file.is_some(), "--mutate-max-per-file"),
            (args.mutate_max_total.is_some(), "--mutate-max-total"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !orphans.is_empty() {
            return Err(format!(
                "replay: {} require(s) --mutate (they only shape a mutation pass).",
                orphans.join(", ")
            ));
        }
        return Ok(None);
    }
    Ok(Some(MutateOptions {
        include: args.mutate_include.clone(),
        exclude: args.mutate_exclude.clone(),
        caps,
    }))
}

/// Resolves the target: a file as-is; a directory's `*.cassette.json`, sorted
/// ([`crate::discover::cassettes_in`]).
pub fn resolve_targets(target: &Path) -> std::result::Result<Vec<PathBuf>, String> {
    let meta =
        std::fs::metadata(target).map_err(|_| format!("path not found: {}", target.display()))?;
    if !meta.is_dir() {
        return Ok(vec![target.to_path_buf()]);
    }
    let files = crate::discover::cassettes_in(target)
        .map_err(|e| format!("cannot list {}: {e}", target.display()))?;
    if files.is_empty() {
        return Err(format!("no *.cassette.json files in {}", target.display()));
    }
    Ok(files)
}

/// A replay the flags allow: the targets resolved and sharded, the options
/// built, the notices the flag combination earns. Every cross-flag check is
/// in [`ReplayPlan::from_args`], so [`run`] works on a checked plan.
pub struct ReplayPlan {
    /// This shard's cassettes, sorted.
    pub files: Vec<PathBuf>,
    /// How many cassettes the target held before sharding.
    pub discovered: usize,
    pub opts: ReplayOptions,
    /// `::notice::` / `::warning::` lines about the flags, printed first.
    pub notices: Vec<String>,
}

impl ReplayPlan {
    pub fn from_args(args: &ReplayArgs) -> std::result::Result<ReplayPlan, PlanError> {
        let target = one_target(args)?;
        check_flag_pairs(args)?;
        let mutate = mutate_options(args).map_err(|e| PlanError::new(e, None))?;
        let files =
            resolve_targets(&target).map_err(|e| PlanError::new(format!("replay: {e}"), None))?;
        let is_dir = target.is_dir();
        let discovered = files.len();
        let files = args.shard.select(files);
        check_target_flags(args, is_dir, files.len())?;
        let opts = ReplayOptions {
            strict: args.strict.on,
            fail_on_skill_drift: args.fail_on_skill_drift,
            session: args.session.file.clone(),
            best_effort_future: args.best_effort_future_cassette,
            assert_source: match (&args.assert_from, args.reassert) {
                (Some(p), _) => AssertSource::From(p.clone()),
                (None, true) => AssertSource::Reassert,
                _ => AssertSource::Frozen,
            },
            write: args.write.on,
            allow_failing: args.allow_failing,
            // The text report and JUnit never show the evidence fields.
            lean: args.output_format == OutputFormat::Text,
            mutate,
            live: false,
            live_work_root: None,
        };
        Ok(ReplayPlan {
            notices: notices(args, files.len()),
            files,
            discovered,
            opts,
        })
    }
}

/// The one target (a cassette or a directory) replay accepts.
fn one_target(args: &ReplayArgs) -> std::result::Result<PathBuf, PlanError> {
    match args.targets.as_slice() {
        [] => Err(PlanError::new(
            format!("replay: no cassette given\n{USAGE_LINE}"),
            None,
        )),
        [one] => Ok(one.clone()),
        _ => Err(PlanError::new(
            "replay: exactly one target (a cassette file or a directory) is accepted".into(),
            Some("pass a directory to replay several cassettes"),
        )),
    }
}

/// Flags that exclude or need each other, whatever the target.
fn check_flag_pairs(args: &ReplayArgs) -> std::result::Result<(), PlanError> {
    if args.assert_from.is_some() && args.reassert {
        return Err(PlanError::new(
            "replay: --assert-from and --reassert are mutually exclusive".into(),
            None,
        ));
    }
    let reassert = args.assert_from.is_some() || args.reassert;
    if args.write.on && !reassert {
        return Err(PlanError::new(
            "replay: --write requires --assert-from <scenario.yaml> or --reassert".into(),
            Some(
                "--write persists a re-validated on-disk assert: block; the frozen one is \
                    already in the cassette",
            ),
        ));
    }
    Ok(())
}

/// Flags that apply to one cassette only.
fn check_target_flags(
    args: &ReplayArgs,
    is_dir: bool,
    files: usize,
) -> std::result::Result<(), PlanError> {
    if let Some(session) = &args.session.file {
        if is_dir || files > 1 {
            return Err(PlanError::new(
                "replay: --session applies to one cassette at a time, not a directory".into(),
                Some(
                    "each cassette may have been recorded against a different source; replay \
                        them one by one",
                ),
            ));
        }
        if !session.is_file() {
            return Err(PlanError::new(
                format!("replay: --session {}: not a file", session.display()),
                None,
            ));
        }
    }
    if is_dir && args.write.on && args.assert_from.is_some() {
        return Err(PlanError::new(
            "replay: --assert-from <one file> --write over a directory would stamp one block \
                into every cassette"
                .into(),
            Some(
                "use --reassert (each cassette's own sibling scenario) or replay one \
                cassette",
            ),
        ));
    }
    Ok(())
}

/// Notices about flags that do nothing or apply more widely than they may seem to.
fn notices(args: &ReplayArgs, files: usize) -> Vec<String> {
    let mut notices = Vec::new();
    if args.strict.on && args.fail_on_skill_drift {
        notices.push(
            "::notice:: [replay] --strict already fails on every staleness finding; \
            --fail-on-skill-drift is redundant"
                .to_string(),
        );
    }
    if !args.write.on && args.allow_failing {
        notices
            .push("::notice:: [replay] --allow-failing has no effect without --write".to_string());
    }
    if args.assert_from.is_some() && files > 1 {
        notices.push(format!(
            "::warning:: [replay] --assert-from applies one scenario to {files} cassettes — each \
                must share its recording-shaping fields"
        ));
    }
    notices
}

pub fn run(args: ReplayArgs) -> Result<ExitStatus> {
    let ReplayPlan {
        files,
        discovered,
        opts,
        notices: stderr_pre,
    } = match ReplayPlan::from_args(&args) {
        Ok(plan) => plan,
        Err(e) => return usage(&args, e.message, e.hint),
    };
    if files.is_empty()
        && let Some(notice) = args.shard.empty_notice("replay", discovered)
    {
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            crate::terminal_safe::command_line(&notice)
        );
    }

    pool_for(&files);
    if files.len() > 1 {
        crate::replay::assert_source::share_sibling_scenarios();
    }
    // Replay in parallel; `collect` keeps the (sorted) input order.
    let timed: Vec<(ReplayResult, Duration)> = files
        .par_iter()
        .map(|f| {
            let start = Instant::now();
            let r = replay_file(f, &opts);
            (r, start.elapsed())
        })
        .collect();
    let (results, elapsed): (Vec<ReplayResult>, Vec<Duration>) = timed.into_iter().unzip();

    let text = args.output_format == OutputFormat::Text;
    let mut worst = results
        .iter()
        .fold(ExitStatus::Success, |w, r| w.worst(r.exit_code));
    if text && !args.verbose {
        status_lines(&args, &stderr_pre, &results, &elapsed);
    } else {
        footers(&args, &stderr_pre, &results);
    }
    if let Some(w) = report::github::write_summary_if_enabled(|| {
        report::github::replay_summary(&results, args.shard.shard)
    }) {
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            crate::terminal_safe::command_line(&w)
        );
    }
    if let Some(path) = &args.junit.file
        && let Err(e) = report::junit::write(path, &results)
    {
        let _ = writeln!(std::io::stderr(), "replay: --junit {}: {e}", path.display());
        worst = worst.worst(ExitStatus::Usage);
    }
    if !text {
        // A closed stdout (e.g. `| head`) is not an error.
        let _ = report::json::write_envelope(&results, std::io::stdout().lock());
    }
    // The process ends next: freeing a large run's records one allocation
    // at a time would only delay the exit that frees them all at once.
    std::mem::forget(results);
    Ok(worst)
}

/// A file at most this large is replayed on the main thread alone: its
/// replay takes about a millisecond, less than starting the pool's threads
/// and handing work between them cost on a loaded 2-core machine.
const SMALL_FILE_BYTES: u64 = 1 << 20;

/// Sets up rayon's global pool for this replay. One small cassette gets a
/// pool of one thread that is the calling thread
/// (`use_current_thread`): no thread is started, and every `join`, `scope`
/// and parallel iterator of the replay runs inline (but a large skill
/// tree's hashing, which starts its own pool: `fingerprint::snapshot`).
/// Anything else keeps rayon's default pool (a thread per core), started on
/// first use.
fn pool_for(files: &[PathBuf]) {
    let small = match files {
        [one] => std::fs::metadata(one).is_ok_and(|m| m.len() <= SMALL_FILE_BYTES),
        _ => false,
    };
    if small {
        // Fails only when the pool already exists (then it is used as is).
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .build_global();
    }
}

/// The status reporter on stderr: a line per cassette (with `--explain`'s
/// lines and GitHub annotations), batch notes, a closing tally.
fn status_lines(
    args: &ReplayArgs,
    stderr_pre: &[String],
    results: &[ReplayResult],
    elapsed: &[Duration],
) {
    let gh = report::github::enabled();
    let mut err = anstream::stderr().lock();
    for l in stderr_pre {
        let item = report::outcome::annotation_item(l);
        let text = crate::terminal_safe::block(&item.text);
        let _ = writeln!(err, "{}: {text}", item.level.label());
    }
    let mut outcomes = Vec::with_capacity(results.len());
    for (r, t) in results.iter().zip(elapsed) {
        let outcome = report::outcome::from_replay(r, Some(*t));
        let mut block = report::status::render_file(&outcome, true);
        if args.explain && r.error.is_none() {
            for l in report::text::explain_lines(r) {
                block.push_str(&format!("    {}\n", crate::terminal_safe::block(&l)));
            }
        }
        let _ = err.write_all(block.as_bytes());
        if gh {
            for a in report::github::annotations(r) {
                let _ = writeln!(err, "{a}");
            }
        }
        outcomes.push(outcome);
    }
    for n in report::text::batch_notes(results) {
        let item = report::outcome::annotation_item(&n);
        let text = crate::terminal_safe::block(&item.text);
        let _ = writeln!(err, "{}: {text}", item.level.label());
    }
    let tally = report::status::Tally::of(&outcomes);
    let _ = err.write_all(report::status::render_tally(&tally, true).as_bytes());
}

/// `--verbose`: the original's footer per cassette, byte for byte; JSON
/// mode: notices and per-file errors only (the data is on stdout).
fn footers(args: &ReplayArgs, stderr_pre: &[String], results: &[ReplayResult]) {
    let text = args.output_format == OutputFormat::Text;
    let gh = report::github::enabled();
    let style = report::text::TextStyle::for_stderr(true);
    let mut err = anstream::stderr().lock();
    for l in stderr_pre {
        let _ = writeln!(err, "{l}");
    }
    for r in results {
        let block = if text {
            report::text::render(r, style, args.explain)
        } else {
            let mut s: String = r.notices.iter().map(|n| format!("{n}\n")).collect();
            if let Some(e) = &r.error {
                s.push_str(&format!("replay: {}: {e}\n", r.file.display()));
            }
            for a in &r.after {
                s.push_str(&format!("{a}\n"));
            }
            s
        };
        // The original's footer, byte for byte, except that controls are
        // shown (its lines break where a message does).
        let block = crate::terminal_safe::for_terminal_keeping_commands(&block, style.color);
        let _ = err.write_all(block.as_bytes());
        if gh {
            for a in report::github::annotations(r) {
                let _ = writeln!(err, "{a}");
            }
        }
    }
    for n in report::text::batch_notes(results) {
        let _ = writeln!(err, "{n}");
    }
}
