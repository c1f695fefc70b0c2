//! `reel record`: arguments and the thin glue to [`crate::record`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::shard::ShardArgs;
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::record::RecordOptions;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 written (with --dry-run: every scenario would record); 1 a \
        recording's verdict failed (nothing written unless --allow-failing); 2 usage or invalid \
        input (a scenario that does not load, a cassette given as a scenario); 3 nothing could run \
        here (no agent binary, no kernel sandbox)."
)]
pub struct RecordArgs {
    /// Scenario YAML files, or directories of them (non-recursive; files with a
    /// top-level `prompt:`). With --rerecord-stale: cassettes, or directories of them.
    #[arg(required = true, value_name = "SCENARIO|CASSETTE")]
    pub scenarios: Vec<PathBuf>,
    /// Write the cassette here instead of `cassettes/<slug>.cassette.json`
    /// (one scenario only).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Run this command instead of `claude`: split into words by POSIX shell
    /// rules (quotes and backslashes group a word) but run without a shell (no
    /// `$VAR` expansion, globs, pipes or redirects); it must speak the
    /// stream-json control protocol. Env: REEL_AGENT_CMD. Without either:
    /// REEL_CLAUDE_BIN, else `claude` on PATH, else `.tools/claude`.
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Scripted model to serve to the agent (default: `<scenario>.model.yaml`
    /// beside the scenario, when it exists).
    #[arg(long, value_name = "FILE", conflicts_with = "no_model_script")]
    pub model_script: Option<PathBuf>,
    /// Ignore a `<scenario>.model.yaml` and use the real model API (needs a
    /// credential).
    #[arg(long)]
    pub no_model_script: bool,
    /// Write the cassette even when the live verdict fails.
    #[arg(long)]
    pub allow_failing: bool,
    /// Largest artifact body inlined in the cassette, in bytes.
    #[arg(long, value_name = "N", default_value_t = crate::record::manifest::DEFAULT_BODY_CAP,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_artifact_bytes: u64,
    /// Override the scenario's `timeout_ms` (default budget: 600000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: Option<u64>,
    /// Keep the run directory (work root, logs) after a successful recording.
    #[arg(long)]
    pub keep_run_dir: bool,
    #[command(flatten)]
    pub sandbox: crate::cli::flags::SandboxArg,
    /// Overwrite a default-path cassette recorded from a differently named
    /// scenario with the same slug.
    #[arg(long)]
    pub force: bool,
    /// Over an existing cassette, write in place even when the re-recording
    /// differs (default: a differing one goes to `NAME.cassette.json.new` for
    /// `reel review`; an identical one writes nothing; under CI=true a
    /// differing one fails).
    #[arg(long)]
    pub accept: bool,
    /// Re-record only the cassettes (the paths given: cassette files or directories)
    /// whose staleness fingerprint drifted, each from its recorded `scenarioSource`
    /// into the same file.
    #[arg(long)]
    pub rerecord_stale: bool,
    /// Load, lint and apply every refusal, then list the cassettes that would be
    /// written (stdout); run nothing, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Record up to N scenarios at once (each in its own run directory, with its own
    /// scripted-model port and config dir).
    #[arg(long, short = 'j', value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: u64,
    #[command(flatten)]
    pub shard: ShardArgs,
}

pub fn run(args: RecordArgs) -> Result<ExitStatus> {
    // `--rerecord-stale` takes cassettes (or their directories) by design.
    let cassette = (!args.rerecord_stale)
        .then(|| {
            args.scenarios
                .iter()
                .find(|t| crate::discover::is_cassette(t))
        })
        .flatten();
    if let Some(c) = cassette {
        return Err(crate::Error::usage(
            crate::discover::cassette_given_for_scenario("record", c),
        ));
    }
    if args.rerecord_stale && args.out.is_some() {
        return Err(crate::Error::usage(
            "record: --rerecord-stale re-records each cassette into its own file; drop --out",
        ));
    }
    let (jobs, mut code) = if args.rerecord_stale {
        match stale_jobs(&args)? {
            Some(found) => found,
            None => return Ok(ExitStatus::Success),
        }
    } else {
        match scenario_jobs(&args)? {
            Some(jobs) => (jobs, ExitStatus::Success),
            None => return Ok(ExitStatus::Success),
        }
    };
    // Lint first: its findings are printed, never fatal (`reel lint` gates).
    for job in &jobs {
        for finding in crate::cli::lint::findings_for_record(&job.scenario) {
            eprint!("{}", crate::terminal_safe::block(&finding.to_string()));
        }
    }
    if args.dry_run {
        return Ok(code.worst(dry_run(&jobs)));
    }
    // One scenario named directly fails as itself (its error is the
    // command's); in a batch each failure is printed and the worst code wins.
    let single = jobs.len() == 1 && !args.rerecord_stale;
    let parallel = args.jobs as usize;
    let results = crate::record::batch::run_jobs(&jobs, parallel, |i| {
        if parallel > 1 {
            eprintln!("recording {} …", jobs[i].scenario.display());
        }
    });
    for outcome in results {
        match outcome {
            Ok(rec) => report_recorded(&rec),
            Err(e) => {
                if let crate::record::RecordError::Rerecording(s) = &e
                    && let Some(d) = s.diff()
                {
                    let _ = anstream::stderr()
                        .lock()
                        .write_all(crate::diff::render::diff_text(d, true).as_bytes());
                }
                let e = crate::Error::from(e);
                if single {
                    return Err(e);
                }
                crate::cli::print_error(&e);
                code = code.worst(e.status());
            }
        }
    }
    Ok(code)
}

/// The recordings of the named scenarios (directories expanded, this shard);
/// `None` when this shard holds none.
fn scenario_jobs(args: &RecordArgs) -> Result<Option<Vec<RecordOptions>>> {
    let mut files = Vec::new();
    for p in &args.scenarios {
        if p.is_dir() {
            files.extend(discover(p)?);
        } else {
            files.push(p.clone());
        }
    }
    if files.is_empty() {
        return Err(crate::Error::usage("record: no scenario found")
            .with_hint("pass a scenario YAML with a top-level `prompt:`"));
    }
    let discovered = files.len();
    let files = args.shard.select(files);
    if files.is_empty()
        && let Some(notice) = args.shard.empty_notice("record", discovered)
    {
        eprintln!("{}", crate::terminal_safe::command_line(&notice));
        return Ok(None);
    }
    if args.out.is_some() && files.len() > 1 {
        return Err(crate::Error::usage(
            "record: `--out` needs exactly one scenario",
        ));
    }
    if files.len() > 1 && args.out.is_none() {
        refuse_slug_collisions(&files)?;
    }
    Ok(Some(files.iter().map(|f| options(args, f)).collect()))
}

/// `--rerecord-stale`: the drifted cassettes of the named cassette files or
/// directories (this shard), each re-recorded from its recorded
/// `scenarioSource`; `None` when nothing is to be done. The code is 2 when a
/// drifted cassette cannot be re-recorded.
fn stale_jobs(args: &RecordArgs) -> Result<Option<(Vec<RecordOptions>, ExitStatus)>> {
    let cassettes = cassettes_named(&args.scenarios)?;
    let discovered = cassettes.len();
    let cassettes = args.shard.select(cassettes);
    if cassettes.is_empty()
        && let Some(notice) = args
            .shard
            .empty_notice("record --rerecord-stale", discovered)
    {
        eprintln!("{}", crate::terminal_safe::command_line(&notice));
        return Ok(None);
    }
    let base = options(args, Path::new(""));
    let plan = crate::record::batch::plan_stale(&cassettes, &base);
    let code = if plan.refused.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Usage
    };
    report_stale_plan(&plan, cassettes.len());
    if plan.rerecord.is_empty() {
        return if code == ExitStatus::Success {
            Ok(None)
        } else {
            Ok(Some((Vec::new(), code)))
        };
    }
    Ok(Some((
        plan.rerecord.into_iter().map(|r| r.opts).collect(),
        code,
    )))
}

/// The cassette files named, directories expanded to their cassettes.
fn cassettes_named(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut cassettes = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found = crate::discover::cassettes_in(p)
                .map_err(|e| crate::Error::usage(format!("record: read `{}`: {e}", p.display())))?;
            if found.is_empty() {
                return Err(crate::Error::usage(format!(
                    "record --rerecord-stale: no *.cassette.json in `{}`",
                    p.display()
                ))
                .with_hint(
                    "--rerecord-stale takes the cassettes to check (each names its \
                    scenario), e.g. `reel record cassettes/ --rerecord-stale`",
                ));
            }
            cassettes.extend(found);
        } else if p.is_file() {
            cassettes.push(p.clone());
        } else {
            return Err(crate::Error::usage(format!(
                "record: no such file or directory: {}",
                p.display()
            )));
        }
    }
    Ok(cassettes)
}

/// The plan on stderr: refusals, unverifiable drift, each drifted cassette
/// with its drift, and the count.
fn report_stale_plan(plan: &crate::record::batch::StalePlan, checked: usize) {
    let mut err = std::io::stderr().lock();
    for (path, why) in &plan.refused {
        let _ = writeln!(
            err,
            "error: record --rerecord-stale: {}: {why}",
            path.display()
        );
    }
    for (path, findings) in &plan.unverifiable {
        for f in findings {
            let _ = writeln!(
                err,
                "warning: {}: cannot tell whether it drifted, not re-recorded: {f}",
                path.display()
            );
        }
    }
    for r in &plan.rerecord {
        let _ = writeln!(
            err,
            "stale: {} (from {}): {}",
            r.cassette.display(),
            r.opts.scenario.display(),
            r.drift.join("; ")
        );
    }
    let nothing = if plan.rerecord.is_empty() {
        " — nothing to re-record"
    } else {
        ""
    };
    let _ = writeln!(
        err,
        "record --rerecord-stale: {} of {checked} cassette(s) drifted{nothing}",
        plan.rerecord.len(),
    );
}

/// The recording options of `scenario` under these flags.
fn options(args: &RecordArgs, scenario: &Path) -> RecordOptions {
    let mut opts = RecordOptions::new(scenario);
    opts.out = args.out.clone();
    opts.agent_cmd = args.agent_cmd.clone();
    opts.model_script = args.model_script.clone();
    opts.no_model_script = args.no_model_script;
    opts.allow_failing = args.allow_failing;
    opts.max_artifact_bytes = args.max_artifact_bytes;
    opts.timeout = args.timeout_ms.map(Duration::from_millis);
    opts.keep_run_dir = args.keep_run_dir;
    opts.sandbox = args.sandbox.mode();
    opts.force = args.force;
    opts.stage = crate::review::StageOptions {
        accept: args.accept,
        ci: crate::review::ci_from_env(),
    };
    opts
}

/// `--dry-run`: every check, nothing run or written. stdout lists the
/// cassette each recording would write (what a real run prints).
fn dry_run(jobs: &[RecordOptions]) -> ExitStatus {
    let mut code = ExitStatus::Success;
    for job in jobs {
        match crate::record::batch::preflight(job) {
            Ok(cassette) => {
                eprintln!(
                    "would record {} -> {}",
                    job.scenario.display(),
                    cassette.display()
                );
                let _ = writeln!(std::io::stdout().lock(), "{}", cassette.display());
            }
            Err(e) => {
                let e = crate::Error::from(e);
                crate::cli::print_error(&e);
                code = code.worst(e.status());
            }
        }
    }
    eprintln!(
        "record --dry-run: {} recording(s) checked; nothing was run or written",
        jobs.len()
    );
    code
}

fn report_recorded(rec: &crate::record::Recorded) {
    let mut err = std::io::stderr().lock();
    for w in &rec.warnings {
        let _ = writeln!(err, "warning: {}", crate::terminal_safe::block(w));
    }
    let written = report_staged(&mut err, &rec.staged);
    let _ = writeln!(err, "{}", recorded_line(&rec.staged, rec.live_pass));
    if !rec.live_pass {
        for f in &rec.failures {
            let _ = writeln!(err, "  - {f}");
        }
    }
    if let Some(d) = &rec.run_dir {
        let _ = writeln!(err, "run directory kept: {}", d.display());
    }
    let _ = writeln!(err, "sandbox: {}", rec.sandbox.summary());
    let _ = writeln!(std::io::stdout().lock(), "{}", written.display());
}

/// The one line that says what a recording did: written (or staged for
/// review), or identical to the committed cassette and so not written —
/// never both — with its live verdict.
fn recorded_line(staged: &crate::review::Outcome, live_pass: bool) -> String {
    use crate::review::Outcome;
    let verdict = if live_pass {
        " (live verdict PASS)"
    } else {
        " with a FAILING live verdict (--allow-failing):"
    };
    match staged {
        Outcome::Written { path, .. } => format!("recorded {}{verdict}", path.display()),
        Outcome::Pending { new, .. } => format!("recorded {}{verdict}", new.display()),
        Outcome::Unchanged { path, .. } => format!(
            "re-recorded {}: identical to the committed cassette, nothing written{}",
            path.display(),
            if live_pass {
                verdict
            } else {
                "; a FAILING live verdict (--allow-failing):"
            }
        ),
    }
}

/// Says what staging a re-recording did; returns the file now holding it
/// (the cassette, or its pending `.new`).
fn report_staged<'a>(err: &mut impl Write, staged: &'a crate::review::Outcome) -> &'a Path {
    use crate::review::Outcome;
    match staged {
        Outcome::Written {
            path,
            removed_pending,
        } => {
            if *removed_pending {
                let _ = writeln!(
                    err,
                    "removed the pending {} (--accept wrote in place)",
                    crate::review::pending_path(path).display()
                );
            }
            path
        }
        Outcome::Unchanged {
            path,
            removed_pending,
        } => {
            if *removed_pending {
                let _ = writeln!(
                    err,
                    "removed the stale {}",
                    crate::review::pending_path(path).display()
                );
            }
            path
        }
        Outcome::Pending {
            path,
            new,
            summary,
            review_command,
            ..
        } => {
            let _ = writeln!(
                err,
                "{}: re-recording {summary}; written to {} for review",
                path.display(),
                new.display()
            );
            let _ = writeln!(
                err,
                "review it: {review_command}   (or `reel diff {} {}`, `reel accept`, `reel \
                    reject`; --accept overwrites in place)",
                path.display(),
                new.display()
            );
            new
        }
    }
}

/// Two scenarios of one batch whose names slugify to the same default
/// cassette path would overwrite each other: refuse before recording any.
fn refuse_slug_collisions(files: &[PathBuf]) -> Result<()> {
    let mut seen: std::collections::HashMap<PathBuf, &Path> = Default::default();
    for f in files {
        let Ok(s) = crate::scenario::Scenario::load(f) else {
            continue;
        };
        if let Some(first) = seen.insert(s.default_cassette_path(), f) {
            return Err(crate::Error::usage(format!(
                "record: `{}` and `{}` would both write `{}`",
                first.display(),
                f.display(),
                s.default_cassette_path().display()
            ))
            .with_hint("give one of them a different `name:`"));
        }
    }
    Ok(())
}

/// The scenarios of `dir` ([`crate::discover::scenarios_in`]).
fn discover(dir: &Path) -> Result<Vec<PathBuf>> {
    crate::discover::scenarios_in(dir)
        .map_err(|e| crate::Error::usage(format!("record: read `{}`: {e}", dir.display())))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::review::Outcome;

    use super::recorded_line;

    #[test]
    fn an_identical_re_recording_is_one_line_that_says_nothing_was_written() {
        let path = PathBuf::from("cassettes/a.cassette.json");
        let lines = [
            Outcome::Written {
                path: path.clone(),
                removed_pending: false,
            },
            Outcome::Unchanged {
                path: path.clone(),
                removed_pending: false,
            },
            Outcome::Pending {
                path: path.clone(),
                new: PathBuf::from("cassettes/a.cassette.json.new"),
                diff: None,
                summary: "differs".into(),
                review_command: "reel review".into(),
            },
        ]
        .iter()
        .flat_map(|o| [recorded_line(o, true), recorded_line(o, false)])
        .collect::<Vec<_>>()
        .join("\n");
        insta::assert_snapshot!(lines, @r"
        recorded cassettes/a.cassette.json (live verdict PASS)
        recorded cassettes/a.cassette.json with a FAILING live verdict (--allow-failing):
        re-recorded cassettes/a.cassette.json: identical to the committed cassette, nothing written (live verdict PASS)
        re-recorded cassettes/a.cassette.json: identical to the committed cassette, nothing written; a FAILING live verdict (--allow-failing):
        recorded cassettes/a.cassette.json.new (live verdict PASS)
        recorded cassettes/a.cassette.json.new with a FAILING live verdict (--allow-failing):
        ");
    }
}
