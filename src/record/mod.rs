//! `record`: run a scenario against a real agent and write a v12 cassette
//! (docs/spec/record.md §1, §3, §5).
//!
//! Pipeline: load the scenario and its session → stage the work root
//! ([`stage`]) → pre-run baseline ([`manifest::pre_run`]) → start the scripted
//! model if the scenario has one (`<name>.model.yaml`, or `--model-script`) →
//! drive the agent ([`crate::agent::drive`]) → post-run manifest → scrub
//! secrets (`verify::redact`) → assemble the cassette in memory ([`assemble`]) →
//! compute the live verdict with the replay engine's rule → write atomically,
//! or refuse a failing run unless `--allow-failing`.
//!
//! An unscripted question never produces a cassette. The run directory
//! (`crate::runs`: under the temp dir unless `REEL_RUNS_DIR` is set) is removed after a successful
//! recording and kept, with its logs, when something went wrong.
//!
//! Not here: the protocol loop (`crate::agent`), the decider
//! (`crate::scenario::answers`), the verdict rule (`crate::replay`).
//!
//! The live run itself (staging, model, confinement, driving, manifests,
//! assembly, scrubbing, the live verdict) is [`crate::run`]; its old paths
//! (`record::live`, `stage`, `manifest`, `assemble`, `hook_inventory`,
//! `RecordError`) are re-exported here. Files: `mod` (prepare, record,
//! write or stage the re-recording)
//! and `batch` (`plan_stale`: drifted cassettes to their recorded
//! `scenarioSource` for `--rerecord-stale`; `preflight`: every refusal, nothing
//! run, for `--dry-run`, over `record::prepare`; `run_jobs`: the `--jobs N`
//! pool, N isolated recordings at once, each with its own run dir, HOME, config
//! dir and model port). `record::scenario_refusal` is record's own pre-run
//! refusals (lint's L013).

pub mod batch;

// The run pipeline moved to `crate::run`; these paths stay for its callers.
pub use crate::run as live;
pub use crate::run::RecordError;
pub use crate::run::collect as manifest;
pub use crate::run::{assemble, hook_inventory, stage};
pub mod checkpoints;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::scenario::{Scenario, session_keys};

/// Wall-clock budget when the scenario sets no `timeout_ms` (reel never
/// waits forever on an agent).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The operator's ceiling (milliseconds) on the `timeout_ms` a scenario or
/// cassette asks for, so a pull request cannot keep a runner busy for days.
/// An environment variable, not a `reel.toml` key: `reel.toml` comes with
/// the pull request. `--timeout-ms` is the operator's own and is not capped.
pub const MAX_TIMEOUT_ENV: &str = "REEL_MAX_TIMEOUT_MS";

/// [`MAX_TIMEOUT_ENV`] when unset (or not a positive integer): 30 minutes.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The wall-clock budget of one run: the operator's `--timeout-ms`, else the
/// scenario's `timeout_ms` capped by [`MAX_TIMEOUT_ENV`], else
/// [`DEFAULT_TIMEOUT`]. Record, rerun, eval and matrix all decide it here.
pub fn run_budget(flag: Option<Duration>, scenario_ms: Option<u64>) -> Duration {
    let ceiling = std::env::var(MAX_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map_or(DEFAULT_MAX_TIMEOUT, Duration::from_millis);
    budget(flag, scenario_ms, ceiling)
}

fn budget(flag: Option<Duration>, scenario_ms: Option<u64>, ceiling: Duration) -> Duration {
    flag.unwrap_or_else(|| {
        scenario_ms
            .map(|ms| Duration::from_millis(ms).min(ceiling))
            .unwrap_or(DEFAULT_TIMEOUT.min(ceiling))
    })
}

/// What `reel record` was asked to do.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    pub scenario: PathBuf,
    /// `--out FILE` (default `cassettes/<slug>.cassette.json`).
    pub out: Option<PathBuf>,
    /// `--agent-cmd` (default: the `claude` profile).
    pub agent_cmd: Option<String>,
    /// `--model-script` (default: the scenario's `<name>.model.yaml`).
    pub model_script: Option<PathBuf>,
    /// `--no-model-script`: ignore a convention script (talk to the real API).
    pub no_model_script: bool,
    pub allow_failing: bool,
    /// `--max-artifact-bytes`.
    pub max_artifact_bytes: u64,
    /// `--timeout-ms` override of the scenario's `timeout_ms`.
    pub timeout: Option<Duration>,
    /// Keep the run directory even on success.
    pub keep_run_dir: bool,
    /// `--force`: overwrite a default-path cassette of another scenario.
    pub force: bool,
    /// `--accept` and CI: how a re-recording over an existing cassette is
    /// written ([`crate::review::stage_rerecording`]).
    pub stage: crate::review::StageOptions,
    /// Confined (default) or `--no-sandbox`.
    pub sandbox: crate::sandbox::Mode,
}

impl RecordOptions {
    pub fn new(scenario: impl Into<PathBuf>) -> RecordOptions {
        RecordOptions {
            scenario: scenario.into(),
            out: None,
            agent_cmd: None,
            model_script: None,
            no_model_script: false,
            allow_failing: false,
            max_artifact_bytes: manifest::DEFAULT_BODY_CAP,
            timeout: None,
            keep_run_dir: false,
            force: false,
            stage: crate::review::StageOptions::default(),
            sandbox: crate::sandbox::Mode::Enforce,
        }
    }
}

/// A written cassette.
#[derive(Debug)]
pub struct Recorded {
    pub cassette_path: PathBuf,
    pub live_pass: bool,
    /// Failing assertion / signal messages of the live verdict.
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
    /// Agent gone → cassette on disk (the recorder's own overhead).
    pub overhead: Duration,
    /// Kept run directory, if any.
    pub run_dir: Option<PathBuf>,
    /// Written in place, unchanged, or pending review beside the old one.
    pub staged: crate::review::Outcome,
    /// The sandbox layers the run ran under.
    pub sandbox: crate::sandbox::Layers,
}

/// What a recording has checked and loaded before it runs anything.
pub struct Prepared {
    pub scenario: Scenario,
    pub session: session_keys::SessionKeys,
    pub cassette_path: PathBuf,
    pub script: Option<crate::model::Script>,
}

/// The scenario and its session loaded, with every refusal a recording
/// makes from them alone: the session loads, the fixture scan, what staging
/// would refuse (`stage::check`). Nothing here depends on the machine's
/// credentials or agent, so `reel lint` runs it too ([`scenario_refusal`]).
fn load_checked(path: &Path) -> Result<(Scenario, session_keys::SessionKeys), RecordError> {
    let scenario = Scenario::load(path)?;
    let session = session_keys::load(scenario.session_path.as_deref()).map_err(|message| {
        RecordError::Session {
            scenario: path.to_owned(),
            message,
        }
    })?;
    live::scan_fixture(&scenario)?;
    stage::check(&session)?;
    Ok((scenario, session))
}

/// Why `reel record SCENARIO` would refuse before running anything, once
/// the scenario itself loads (`None`: it would start, or the scenario loader
/// refuses it, which lint reports on its own as L000 and deliberately not
/// for the original's other tiers); the message and its hint.
pub fn scenario_refusal(path: &Path) -> Option<(String, String)> {
    let e = match load_checked(path) {
        Ok(_) | Err(RecordError::Scenario(_)) => return None,
        Err(e) => crate::Error::from(e),
    };
    let hint = e.hint.unwrap_or_else(|| {
        format!(
            "fix what it names; `reel record --dry-run {}` checks again without running",
            path.display()
        )
    });
    Some((e.message, hint))
}

/// Every check and refusal of a recording that needs no agent run: the
/// scenario and session load, the default-path slug guard, a credential
/// when there is no scripted model, the script parses. `record` starts
/// with it and `record --dry-run` ([`batch::preflight`]) stops after it.
pub fn prepare(opts: &RecordOptions) -> Result<Prepared, RecordError> {
    let (scenario, session) = load_checked(&opts.scenario)?;
    let cassette_path = opts
        .out
        .clone()
        .unwrap_or_else(|| scenario.default_cassette_path());
    if opts.out.is_none() && !opts.force {
        slug_collision_guard(&cassette_path, &scenario.name)?;
    }
    let model_script = if opts.no_model_script {
        None
    } else {
        opts.model_script
            .clone()
            .or_else(|| scenario.model_script.clone())
    };
    if model_script.is_none() && opts.agent_cmd.is_none() {
        let has_auth = [
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
        ]
        .iter()
        .any(|k| std::env::var(k).is_ok_and(|v| !v.is_empty()));
        if !has_auth {
            return Err(RecordError::Setup {
                message: format!(
                    "`{}` has no scripted model and no credential is set",
                    opts.scenario.display()
                ),
                hint: Some(format!(
                    "add `{}` (token-free), or set ANTHROPIC_API_KEY / CLAUDE_CODE_OAUTH_TOKEN",
                    crate::scenario::dir_of(&opts.scenario)
                        .join(format!("{}.model.yaml", file_stem(&opts.scenario)))
                        .display()
                )),
            });
        }
    }
    let script = match &model_script {
        Some(path) => Some(
            crate::model::Script::load(path).map_err(|e| RecordError::Setup {
                message: e.to_string(),
                hint: Some("see schema/model-script.json".into()),
            })?,
        ),
        None => None,
    };
    Ok(Prepared {
        scenario,
        session,
        cassette_path,
        script,
    })
}

/// Records one scenario.
pub fn record(opts: &RecordOptions) -> Result<Recorded, RecordError> {
    let Prepared {
        scenario,
        session,
        cassette_path,
        script,
    } = prepare(opts)?;
    let timeout = run_budget(opts.timeout, scenario.timeout_ms);
    let snapshotter = checkpoints::for_recording(&cassette_path)?.map(std::cell::RefCell::new);
    let run = live::run(&live::LivePlan {
        hook: snapshotter.as_ref().map(|s| s as &dyn checkpoints::RunHook),
        mcp: None,
        scenario: &scenario,
        scenario_path: &opts.scenario,
        session: &session,
        cassette_path: &cassette_path,
        script,
        agent_cmd: opts.agent_cmd.as_deref(),
        claude_program: None,
        timeout,
        max_artifact_bytes: opts.max_artifact_bytes,
        sandbox: opts.sandbox,
        upstream: None,
        carried_verdicts: None,
    })?;
    let mut run = run;
    // A scripted model that saw a problem (an unmet `expect`, a turn past the
    // script's end, an escape) means the recording is not what the script
    // says: that fails the live verdict.
    run.failures.extend(
        run.model_problems
            .iter()
            .map(|p| format!("scripted model: {p}")),
    );
    let denies = run.log.decisions.strict_denies.clone();
    if run.failures.is_empty() {
        run.warnings.extend(denies);
    } else {
        // A denied prompt is the likely cause of what failed after it.
        run.failures.extend(denies);
    }
    cause_first(&mut run.failures);
    let live_pass = run.failures.is_empty();
    if !live_pass && !opts.allow_failing {
        return Err(RecordError::FailingVerdict {
            failures: run.failures,
            run_dir: Some(run.run_dir.path().to_path_buf()),
        });
    }
    // The blobs are durable before the cassette that names them is written.
    if let Some(s) = snapshotter {
        run.warnings
            .extend(checkpoints::insert_into(s.into_inner(), &mut run.cassette));
        checkpoints::test_crash_point();
    }
    // Over an existing cassette: identical → untouched, differing → a
    // pending `.new` to review (or, under CI, an error); see crate::review.
    let staged = crate::review::stage_rerecording(&cassette_path, &run.cassette, opts.stage)?;
    let overhead = run.log.finished_at.elapsed();
    let run_dir = run.run_dir.finish(opts.keep_run_dir || !live_pass);
    Ok(Recorded {
        cassette_path,
        live_pass,
        failures: run.failures,
        warnings: run.warnings,
        overhead,
        run_dir,
        staged,
        sandbox: run.sandbox,
    })
}

/// Orders a live verdict's failures cause first: the run's own error, then
/// what the scripted model saw (a turn past the script, an unmet `expect`),
/// then the assertions that failed because of them. Stable within each.
pub fn cause_first(failures: &mut [String]) {
    failures.sort_by_key(|f| {
        if f.starts_with("run error") {
            0
        } else if f.starts_with("scripted model") {
            1
        } else if f.starts_with("unscripted permission prompt") {
            2
        } else {
            3
        }
    });
}

/// Refuses to overwrite a default-path cassette recorded from a scenario
/// with another name (two names with one slug).
pub(crate) fn slug_collision_guard(path: &Path, name: &str) -> Result<(), RecordError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    let existing = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.pointer("/scenario/name")
                .and_then(|n| n.as_str().map(str::to_owned))
        });
    match existing {
        Some(other) if other != name => Err(RecordError::Setup {
            message: format!(
                "`{}` holds the recording of scenario `{other}`, not `{name}` (both names have the \
                    same slug)",
                path.display()
            ),
            hint: Some("rename one scenario, pass --out FILE, or --force to overwrite".into()),
        }),
        _ => Ok(()),
    }
}

fn file_stem(p: &Path) -> String {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    n.strip_suffix(".yaml")
        .or_else(|| n.strip_suffix(".yml"))
        .unwrap_or(&n)
        .to_owned()
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn a_scenarios_timeout_is_capped_by_the_operator_and_the_flag_is_not() {
        let cap = Duration::from_secs(1800);
        let days = Some(3 * 24 * 3600 * 1000);
        assert_eq!(budget(None, days, cap), cap);
        assert_eq!(budget(None, Some(5000), cap), Duration::from_millis(5000));
        assert_eq!(budget(None, None, cap), DEFAULT_TIMEOUT);
        assert_eq!(
            budget(None, None, Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        let flag = Some(Duration::from_secs(7200));
        assert_eq!(budget(flag, days, cap), Duration::from_secs(7200));
    }
}
