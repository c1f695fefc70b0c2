//! `run`: the one live run of a scenario. Every command that starts an
//! agent for a verdict — `record`, `rerun`, an `eval` trial, a `matrix`
//! cell (a rerun on a release) — builds a [`LivePlan`] and calls [`run`];
//! the stages flow one way, each a file:
//!
//! 1. `stage` — the run directory, the session's mounts, skills and
//!    fixture staged into the work root; `collect::pre_run` the baseline;
//! 2. `serve` — the scripted model (if any) on loopback;
//! 3. `confine` — the MCP servers prepared, the agent's command confined by
//!    the kernel sandbox (needs the model's port);
//! 4. `drive` — the agent through its turn, or a multi-turn scenario's
//!    turns in one session; the raw logs;
//! 5. `collect` — the post-run manifest of what the run produced, bounded;
//! 6. `assemble` — the cassette (`hook_inventory`: v16 hook-failure
//!    blocks), scrubbed (`crate::verify::redact`), its `semantic_matches`
//!    judged and frozen (or a rerun's recorded verdicts carried in:
//!    [`LivePlan::carried_verdicts`]), judged by the replay rule in live
//!    mode ([`run`]'s verdict).
//!
//! `error` is why a run wrote nothing ([`RecordError`]). Writing is the
//! caller's: `record` freezes the result, `rerun` compares it with the
//! recording first. Nothing here imports `record`, `rerun`, `eval`,
//! `matrix` or `cli` (tests/it/layering.rs). `handshake` is stages 1–4
//! alone, for `doctor`: the same staging, serving and confinement as a run.

pub mod assemble;
pub mod collect;
mod confine;
mod drive;
mod error;
pub mod handshake;
pub mod hook;
pub mod hook_inventory;
mod serve;
pub mod stage;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::RecordError;

use crate::agent::{self, AgentCommand, ErrorSource, RunEnd};
use crate::scenario::{Scenario, session_keys};
use collect as manifest;
use confine::{confined_agent, denials_of, log_sandbox};
use drive::{drive_agent, write_logs};
use serve::{start_model, stop_model};

/// What to run.
pub struct LivePlan<'a> {
    pub scenario: &'a Scenario,
    /// Where the scenario came from (redaction-policy lookup, messages).
    pub scenario_path: &'a Path,
    pub session: &'a session_keys::SessionKeys,
    /// Where the cassette will be written (recorded relative paths start here).
    pub cassette_path: &'a Path,
    /// The scripted model to serve; `None` talks to the real API.
    pub script: Option<crate::model::Script>,
    /// `--agent-cmd` (default: the `claude` profile).
    pub agent_cmd: Option<&'a str>,
    /// The `claude` program of the `claude` profile (default:
    /// `agent::claude_program()`): a release from the agent cache.
    pub claude_program: Option<&'a Path>,
    pub timeout: Duration,
    pub max_artifact_bytes: u64,
    /// Confined (the default) or `--no-sandbox`.
    pub sandbox: crate::sandbox::Mode,
    /// A rerun's frozen MCP servers (`None`: every server runs for real).
    pub mcp: Option<&'a crate::mcp::Freeze>,
    /// Shown the staged work root and each turn boundary (record's
    /// snapshots, rerun's restore before turn N); `None`: nobody.
    pub hook: Option<&'a dyn hook::RunHook>,
    /// With `script`: the live model that answers from a turn on
    /// (`rerun --live-model`); `None`: the script answers every turn.
    pub upstream: Option<crate::model::Upstream>,
    /// A recording whose frozen judged verdicts are carried into the fresh
    /// cassette before its verdict (a rerun's), instead of judging it;
    /// `None`: judged at record time.
    pub carried_verdicts: Option<&'a crate::cassette::Cassette>,
}

/// A finished live run, not yet written anywhere.
pub struct LiveRun {
    pub run_dir: RunDir,
    pub staged: stage::Staged,
    pub log: agent::RunLog,
    /// The assembled, scrubbed and validated cassette.
    pub cassette: crate::cassette::Cassette,
    /// The live verdict's failure messages (empty = pass), the scripted
    /// model's problems aside: what they mean is the caller's call.
    pub failures: Vec<String>,
    pub warnings: Vec<String>,
    /// What the bounded post-run manifest left out (also in `warnings`).
    pub over_budget: Vec<String>,
    /// Problems the scripted model saw (not among `failures`).
    pub model_problems: Vec<crate::model::Problem>,
    /// (conversation, turn) pairs the scripted model answered.
    pub served: Vec<(crate::model::ConversationId, usize)>,
    /// Requests the live model answered (`LivePlan::upstream`).
    pub forwarded: usize,
    /// The cassette judged as a live run (`None` when it could not be).
    pub judged: Option<crate::replay::ReplayResult>,
    /// The sandbox layers the agent ran under.
    pub sandbox: crate::sandbox::Layers,
    /// Tool output lines that read like the sandbox refusing something.
    pub denials: Vec<String>,
    /// The MCP config the agent got (`None`: no MCP server).
    pub mcp: Option<crate::mcp::Prepared>,
}

/// Runs `plan` once. The run directory stays on disk until the caller
/// decides ([`RunDir::finish`]).
pub fn run(plan: &LivePlan<'_>) -> Result<LiveRun, RecordError> {
    let (scenario, cassette_path) = (plan.scenario, plan.cassette_path);
    let started = std::time::Instant::now();
    let mut warnings = Vec::new();
    let fixture = scan_fixture(scenario)?;
    let (run_dir, staged, pre) = stage_run(plan, fixture.as_ref(), &mut warnings)?;
    if let Some(hook) = plan.hook {
        hook.staged(&staged);
    }

    let server = start_model(plan, &staged, run_dir.path())?;
    let (mcp, cmd) = confined_agent(plan, &staged, run_dir.path(), server.as_ref())?;
    let log = drive_agent(plan, &cmd, mcp.as_ref())?;
    let (model_problems, served, forwarded) = stop_model(server);
    write_logs(run_dir.path(), &log);
    warnings.extend(log.decisions.warnings.iter().cloned());

    let run_dir = refuse_unrecordable(plan, &cmd, &log, run_dir)?;
    let hook_failure_blocks =
        hook_inventory::for_run(&log.events, &hook_inventory::Sources::of_command(&cmd));

    // Assemble, scrub, judge.
    let mut timing = Timing::start();
    let deadline = post_run_deadline(started, plan.timeout);
    let stages = (&staged, fixture.as_ref(), &pre);
    let (artifacts, over_budget) = artifacts_after(plan, stages, deadline, &mut warnings);
    warnings.extend(over_budget.iter().cloned());
    timing.mark("manifest");
    let sandbox = log_sandbox(&log, plan.sandbox);
    let mut doc = assemble::assemble(&assemble::Parts {
        scenario,
        cassette_path,
        log: &log,
        artifacts: &artifacts,
        pre_run: &pre,
        staged: &staged,
        folders: &plan.session.folders,
        sandbox: Some(&sandbox),
        fixture: fixture.as_ref(),
        hook_failure_blocks: Some(&hook_failure_blocks),
    })
    .doc;
    timing.mark("assemble");
    // What the MCP servers said, where cowork-harness ignores it; scrubbed
    // with the rest.
    if let Some(m) = &mcp {
        m.traffic().insert_into(&mut doc);
    }
    let kept = Some(run_dir.path().to_path_buf());
    let mut cassette = scrubbed_cassette(plan, doc, kept, &mut warnings, &mut timing)?;
    judge_or_carry(plan, &mut cassette, &mut warnings);
    let (mut failures, judged) = live_failures(&cassette, scenario, &log, &staged);
    if let RunEnd::Failed { message, .. } = &log.end {
        failures.insert(0, format!("run error: {message}"));
    }
    timing.mark("verdict");
    timing.report();
    let denials = denials_of(&sandbox, &log, &mut warnings);
    Ok(LiveRun {
        over_budget,
        run_dir,
        staged,
        log,
        cassette,
        failures,
        warnings,
        model_problems,
        served,
        forwarded,
        judged,
        sandbox,
        denials,
        mcp,
    })
}

/// Judged assertions: judged over the scrubbed cassette and frozen into it,
/// or a recording's verdicts carried over; either way before the verdict.
fn judge_or_carry(
    plan: &LivePlan<'_>,
    cassette: &mut crate::cassette::Cassette,
    warnings: &mut Vec<String>,
) {
    match plan.carried_verdicts {
        Some(recorded) => crate::judge::freeze::carry_over(recorded, cassette),
        None => warnings.extend(crate::judge::at_record::judge_recorded(
            cassette,
            plan.script.as_ref(),
        )),
    }
}

/// The run directory, the session staged into it (the fixture copied into
/// `outputs/` first, so each of its files is a pre-run path with its hash,
/// which `authored:` and the hash-only rule read) and the pre-run baseline.
fn stage_run(
    plan: &LivePlan<'_>,
    fixture: Option<&crate::fingerprint::fixture::ScannedFixture>,
    warnings: &mut Vec<String>,
) -> Result<(RunDir, stage::Staged, manifest::PreRun), RecordError> {
    let dir = crate::runs::create(&plan.scenario.name).map_err(|e| RecordError::Setup {
        message: format!("create the run directory: {e}"),
        hint: Some("set REEL_RUNS_DIR to a writable directory (a path under your home is recorded in every cassette)".into()),
    })?;
    let run_dir = RunDir { dir, keep: true };
    let staged = stage::stage(run_dir.path(), plan.session)?;
    warnings.extend(staged.notices.iter().cloned());
    if let Some(scan) = fixture {
        crate::fingerprint::fixture::stage(scan, &staged.work_root.join("outputs")).map_err(
            |e| RecordError::Setup {
                message: e.to_string(),
                hint: None,
            },
        )?;
    }
    let pre = manifest::pre_run(&staged.work_root, &staged.user_visible_roots);
    Ok((run_dir, staged, pre))
}

/// The least time the post-run manifest gets after the agent ended, even
/// when the run used its whole timeout.
const POST_RUN_GRACE: Duration = Duration::from_secs(10);

/// When the post-run work stops: the run's own deadline (start + timeout),
/// or [`POST_RUN_GRACE`] from now when that is later.
fn post_run_deadline(started: std::time::Instant, timeout: Duration) -> std::time::Instant {
    (started + timeout).max(std::time::Instant::now() + POST_RUN_GRACE)
}

/// The artifact manifest after the run, bounded ([`manifest::Budget`]: its
/// overruns returned as notices); a fixture file the run left as staged is kept
/// hash-only.
fn artifacts_after(
    plan: &LivePlan<'_>,
    (staged, fixture, pre): (
        &stage::Staged,
        Option<&crate::fingerprint::fixture::ScannedFixture>,
        &manifest::PreRun,
    ),
    deadline: std::time::Instant,
    warnings: &mut Vec<String>,
) -> (Vec<crate::cassette::ManifestEntry>, Vec<String>) {
    let budget = manifest::Budget {
        deadline: Some(deadline),
        ..manifest::Budget::default()
    };
    let (mut artifacts, overrun) = manifest::post_run_bounded(
        &staged.work_root,
        &staged.user_visible_roots,
        &staged.readonly_roots,
        plan.max_artifact_bytes,
        &budget,
    );
    if let Some(scan) = fixture {
        warnings.extend(manifest::fixture_hash_only(&mut artifacts, &scan.files, pre).notices());
    }
    (artifacts, overrun.notices(&budget))
}

/// The assembled document scrubbed under the redaction policy (checked not
/// to change the verdict) and validated as a cassette.
fn scrubbed_cassette(
    plan: &LivePlan<'_>,
    mut doc: serde_json::Map<String, serde_json::Value>,
    kept: Option<PathBuf>,
    warnings: &mut Vec<String>,
    timing: &mut Timing,
) -> Result<crate::cassette::Cassette, RecordError> {
    let cassette_path = plan.cassette_path;
    let policy_dirs = [
        Path::new("."),
        crate::scenario::dir_of(plan.scenario_path),
        crate::scenario::dir_of(cassette_path),
    ];
    let policy = crate::verify::redact::RedactionPolicy::load(&policy_dirs).map_err(|e| {
        RecordError::Setup {
            message: e.to_string(),
            hint: Some("fix or remove the .cowork-redact.json policy".into()),
        }
    })?;
    timing.mark("policy");
    let scrub = crate::verify::redact::scrub_cassette_checked(&mut doc, &policy, |d| {
        scrub_verdict(cassette_path, d)
    })
    .map_err(|e| RecordError::Run {
        message: e.to_string(),
        hint: None,
        run_dir: kept.clone(),
    })?;
    timing.mark("scrub");
    if !scrub.secrets.is_empty() {
        warnings.push(format!(
            "{} secret occurrence(s) scrubbed from the cassette",
            scrub.secrets.len()
        ));
    }
    let cassette =
        crate::cassette::Cassette::from_doc(cassette_path, doc).map_err(|e| RecordError::Run {
            message: format!("the assembled cassette does not validate (a reel bug): {e}"),
            hint: None,
            run_dir: kept,
        })?;
    timing.mark("validate");
    Ok(cassette)
}

/// `REEL_TIMING=1`: where the post-run time goes (a benchmark aid).
struct Timing {
    last: std::time::Instant,
    parts: Vec<(&'static str, Duration)>,
}

impl Timing {
    fn start() -> Self {
        Timing {
            last: std::time::Instant::now(),
            parts: Vec::new(),
        }
    }

    /// Ends the part named `name` now.
    fn mark(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.parts.push((name, now - self.last));
        self.last = now;
    }

    fn report(&self) {
        if std::env::var_os("REEL_TIMING").is_none() {
            return;
        }
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(name, d)| format!("{name} {d:?}"))
            .collect();
        crate::messages::timing(format!("timing: {}", parts.join(" ")));
    }
}

/// A run that cannot become a cassette: the agent never started (its run
/// directory is dropped), the sandbox failed, or a question went unanswered
/// or the model script ran out (the run directory is kept).
fn refuse_unrecordable(
    plan: &LivePlan<'_>,
    cmd: &AgentCommand,
    log: &agent::RunLog,
    run_dir: RunDir,
) -> Result<RunDir, RecordError> {
    if let RunEnd::Failed { source, message } = &log.end {
        match source {
            ErrorSource::Spawn => {
                // Nothing ran: the run directory holds nothing worth keeping.
                let _ = run_dir.finish(false);
                return Err(RecordError::AgentMissing {
                    message: message.clone(),
                    hint: if plan.agent_cmd.is_some() {
                        format!(
                            "check the --agent-cmd program `{}` (its path, and that it is \
                                executable)",
                            cmd.program.display()
                        )
                    } else {
                        format!(
                            "{}; the program was `{}`",
                            agent::INSTALL_HINT,
                            cmd.program.display()
                        )
                    },
                });
            }
            ErrorSource::Sandbox => {
                let _ = run_dir.finish(false);
                return Err(RecordError::Sandbox(crate::sandbox::Refusal::Failed(
                    message.clone(),
                )));
            }
            ErrorSource::Unanswered | ErrorSource::Script => {
                return Err(RecordError::Run {
                    message: format!("{message}\n    no cassette was written"),
                    hint: None,
                    run_dir: Some(run_dir.path().to_path_buf()),
                });
            }
            _ => {}
        }
    }
    Ok(run_dir)
}

/// The scenario's `workspace_fixture`, scanned (`None` when it declares
/// none): a refusal is invalid input, found before anything is spawned.
pub fn scan_fixture(
    scenario: &Scenario,
) -> Result<Option<crate::fingerprint::fixture::ScannedFixture>, RecordError> {
    let Some(dir) = scenario.workspace_fixture_dir() else {
        return Ok(None);
    };
    let label = scenario.workspace_fixture.as_deref().unwrap_or_default();
    let setup = |message: String| RecordError::Setup {
        message: format!("`{}`: {message}", scenario.path.display()),
        hint: Some(
            "point `workspace_fixture:` at a directory of regular files, relative to the \
             scenario file"
                .into(),
        ),
    };
    let dir = dir.map_err(|e| setup(format!("workspace_fixture {label}: {e}")))?;
    let scan = crate::fingerprint::fixture::scan(&dir, label).map_err(|e| setup(e.to_string()))?;
    if let Some(refusal) = crate::fingerprint::fixture::protocol_token_refusal(&scan, label) {
        return Err(RecordError::Setup {
            message: format!("`{}`: {refusal}", scenario.path.display()),
            hint: Some(
                "re-export the fixture without --session-paths (reel runs the agent at the \
                 protocol tier)"
                    .into(),
            ),
        });
    }
    if let Some(message) =
        crate::fingerprint::fixture::presence_refusal(&scenario.name, &scenario.assert, &scan.files)
    {
        return Err(RecordError::Setup {
            message: format!("`{}`: {message}", scenario.path.display()),
            hint: Some("add `authored:` to each assertion the message names".into()),
        });
    }
    Ok(Some(scan))
}

/// The live verdict's failure messages (empty = pass).
///
/// One verdict rule: the cassette is evaluated exactly as `reel replay` would
/// evaluate it; the recorder only adds what replay cannot see (permissive
/// auto-allows, plugin divergence).
fn live_failures(
    cassette: &crate::cassette::Cassette,
    scenario: &Scenario,
    log: &agent::RunLog,
    staged: &stage::Staged,
) -> (Vec<String>, Option<crate::replay::ReplayResult>) {
    let (mut failures, judged) = replay_failures(cassette, &staged.work_root);
    if !log.decisions.permissive_auto_allows.is_empty()
        && !scenario.asserts_flag(crate::assert::keys::name::ALLOW_PERMISSIVE_AUTO_ALLOW)
    {
        failures.push(format!(
            "permissive_auto_allow: unscripted tool(s) {} were auto-allowed by `permission_parity: \
                cowork`; \
             script them with `when_tool` rules or assert `allow_permissive_auto_allow: true`",
            log.decisions.permissive_auto_allows.join(", ")
        ));
    }
    if staged.plugin_divergence && !scenario.asserts_flag("allow_l0_plugin_divergence") {
        failures.push(
            "l0_plugin_divergence: plugins are not loaded at the protocol tier; assert \
             `allow_l0_plugin_divergence: true` to accept"
                .into(),
        );
    }
    (failures, judged)
}

/// The replay engine's live verdict on the in-memory cassette: failure
/// messages of the failing assertions and fail-severity signals, and the
/// judged run itself.
fn replay_failures(
    cassette: &crate::cassette::Cassette,
    work_root: &Path,
) -> (Vec<String>, Option<crate::replay::ReplayResult>) {
    let live = crate::replay::ReplayOptions {
        live: true,
        live_work_root: Some(work_root.to_path_buf()),
        ..crate::replay::ReplayOptions::default()
    };
    match crate::replay::replay_cassette(cassette, &live) {
        Ok(result) => {
            let mut failures = result.failure_lines();
            if !result.verdict.pass && failures.is_empty() {
                failures.push("the live verdict failed".into());
            }
            (failures, Some(result))
        }
        Err(e) => (vec![format!("the cassette cannot be replayed: {e}")], None),
    }
}

/// The verdict the redaction proof compares before/after scrubbing.
fn scrub_verdict(
    path: &Path,
    doc: &serde_json::Map<String, serde_json::Value>,
) -> crate::verify::redact::Verdict {
    let Ok(cassette) = crate::cassette::Cassette::from_doc(path, doc.clone()) else {
        return crate::verify::redact::Verdict::default();
    };
    match crate::replay::replay_cassette(&cassette, &crate::replay::ReplayOptions::default()) {
        Ok(r) => crate::verify::redact::Verdict {
            pass: r.verdict.pass,
            outcomes: r
                .assertions
                .iter()
                .map(|a| {
                    let key = a
                        .assertion
                        .as_object()
                        .and_then(|m| m.keys().next().cloned())
                        .unwrap_or_default();
                    format!("{key}:{}", a.pass)
                })
                .collect(),
            failing_messages: r
                .assertions
                .iter()
                .filter(|a| !a.pass)
                .map(|a| a.message.clone())
                .collect(),
        },
        Err(_) => crate::verify::redact::Verdict::default(),
    }
}

/// A run directory: kept (with its logs) unless [`RunDir::finish`] says
/// otherwise, so a run that fails anywhere leaves its evidence behind.
#[derive(Debug)]
pub struct RunDir {
    dir: PathBuf,
    keep: bool,
}

impl RunDir {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Keeps the directory (returning its path) or removes it.
    pub fn finish(mut self, keep: bool) -> Option<PathBuf> {
        self.keep = keep;
        keep.then(|| self.dir.clone())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
