//! `rerun`: re-execute a recording with the real agent against the model
//! replies the cassette already holds, token-free.
//!
//! A replay executes nothing, so a broken skill script stays green. A rerun
//! freezes only the model — the expensive, non-deterministic dependency —
//! and runs everything the skill author owns for real: the recorded replies
//! ([`replies`]) are served from the loopback scripted model, the current
//! skill files are staged exactly as `record` stages them (the one live run,
//! [`crate::run`]), the agent's prompts are answered from the frozen
//! `answers:`, and the frozen `assert:` block is judged on the fresh run as
//! a live verdict. Then the fresh run is compared with the recording turn by
//! turn ([`divergence`]): a divergence means the recorded replies may no
//! longer be what the model would say, and is reported, not failed (unless
//! `--strict`).
//!
//! Not here: printing and exit codes (`cli::rerun`), the verdict rule
//! (`replay`), the wire (`protocol`).
//!
//! Files: `mod` (tier refusal, frozen scenario and session, the run,
//! comparison, verdict), `notes` (the notices beside the verdict), `write`
//! (`--write`), `replies` (replies from events; also `reel model extract`),
//! `paths` (a recorded tool input that leaves the fresh run; the run roots
//! themselves are [`crate::mask`]'s), `divergence` (divergences and the
//! masks, built-in plus `reel.toml`) and `outputs` (output files compared by
//! what they are: masked text, zip entries, PDF text).

pub mod bodies;
pub mod divergence;
pub mod from_turn;
mod hook;
pub mod live_model;
mod notes;
pub mod outputs;
pub mod paths;
pub mod replies;
mod turns;
mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::cassette::Cassette;
use crate::mask::Roots;
use crate::model::ProblemKind;
use crate::protocol::{self, Line};
use crate::replay::ReplayResult;
use crate::run::{self as live, RecordError};
use crate::scenario::{Refusal, Scenario, ScenarioError, session_keys};
use divergence::{Divergence, Kind};

/// What `reel rerun` was asked to do (one cassette).
#[derive(Debug, Clone, Default)]
pub struct RerunOptions {
    /// `--session FILE` for a moved cassette.
    pub session: Option<PathBuf>,
    /// `--agent-cmd`.
    pub agent_cmd: Option<String>,
    /// The `claude` program to run (a release from the agent cache; default:
    /// `REEL_CLAUDE_BIN`, else `claude` on PATH).
    pub claude_program: Option<PathBuf>,
    /// `--strict`: a divergence fails the rerun.
    pub strict: bool,
    /// `--write`: replace the cassette when the verdict passes and nothing diverged.
    pub write: bool,
    /// `--accept-divergence`: with `--write`, also write a diverged run (marked).
    pub accept_divergence: bool,
    /// How `--write` replaces the cassette: a semantically different fresh
    /// recording is staged as `NAME.cassette.json.new` for review unless
    /// `--accept`; under CI it is refused with the diff.
    pub stage: crate::review::StageOptions,
    /// `--timeout-ms`.
    pub timeout: Option<Duration>,
    /// Keep the fresh run's directory.
    pub keep_run_dir: bool,
    /// Confined (default) or `--no-sandbox`.
    pub sandbox: crate::sandbox::Mode,
    /// `--mcp-live NAME[=URL]`: MCP servers run for real (every other is
    /// frozen); an HTTP server's URL comes only from here.
    pub mcp_live: Vec<String>,
    /// The project configuration (`reel.toml`): masks and volatile files.
    pub project: crate::project::ProjectConfig,
    /// `--explain`: note each tool result that is equal only after masking,
    /// with the masks that made it so.
    pub explain: bool,
    /// `--from-turn N`: rerun from user turn N, the workspace restored from
    /// the checkpoint after turn N−1 ([`from_turn`]).
    pub from_turn: Option<usize>,
    /// `--live-model`: from turn `from_turn` (default 1) on, the real API
    /// answers ([`live_model`]); the result is staged as a `.new`.
    pub live_model: bool,
}

/// Why a cassette could not be rerun.
#[derive(Debug, thiserror::Error)]
pub enum RerunError {
    /// The cassette or its scenario is invalid input (exit 2).
    #[error("{message}")]
    Invalid {
        message: String,
        hint: Option<String>,
    },
    /// The rerun cannot run here (exit 3): a tier reel does not execute, no
    /// agent binary, a scenario reel cannot record.
    #[error("{message}")]
    CannotRun {
        message: String,
        hint: Option<String>,
    },
}

impl RerunError {
    fn invalid(message: impl Into<String>, hint: impl Into<Option<String>>) -> RerunError {
        RerunError::Invalid {
            message: message.into(),
            hint: hint.into(),
        }
    }

    fn cannot(message: impl Into<String>, hint: impl Into<Option<String>>) -> RerunError {
        RerunError::CannotRun {
            message: message.into(),
            hint: hint.into(),
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            RerunError::Invalid { hint, .. } | RerunError::CannotRun { hint, .. } => {
                hint.as_deref()
            }
        }
    }
}

/// The verdict of one rerun, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The verdict passes and nothing diverged.
    Pass,
    /// The verdict passes; the fresh run diverged from the recording.
    PassDiverged,
    /// The verdict fails (or, under `--strict`, the run diverged).
    Fail,
}

/// One finished rerun.
#[derive(Debug)]
pub struct Rerun {
    pub file: PathBuf,
    /// The fresh run judged as replay reports a run (assertions, verdict, …).
    pub result: ReplayResult,
    /// Failure messages of the live verdict (empty = pass).
    pub failures: Vec<String>,
    pub divergences: Vec<Divergence>,
    /// The user turn (1-based) of a multi-turn recording where the fresh run
    /// first diverged; `None` for a one-prompt recording or no divergence.
    pub divergence_turn: Option<usize>,
    /// Recorded turns over all conversations, and how many were served.
    pub replies_recorded: usize,
    pub replies_served: usize,
    pub agent_version_recorded: Option<String>,
    pub agent_version_now: Option<String>,
    /// Notices (unmapped paths, an agent version change, a written file).
    pub notes: Vec<String>,
    pub outcome: Outcome,
    /// The cassette written by `--write`, if any.
    pub written: Option<PathBuf>,
    /// The fresh run's directory, when kept.
    pub run_dir: Option<PathBuf>,
    /// Wall time of the whole rerun.
    pub elapsed: Duration,
    /// The sandbox layers the fresh run ran under.
    pub sandbox: crate::sandbox::Layers,
}

/// Tool inputs that name a file the tool writes.
const WRITE_TOOLS: [(&str, &str); 4] = [
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// Reruns the cassette at `path`.
pub fn rerun(path: &Path, opts: &RerunOptions) -> Result<Rerun, RerunError> {
    let started = std::time::Instant::now();
    let (cassette, replies) = load_rerunnable(path)?;
    let prepared = Prepared::of(&cassette, &replies, path, opts)?;
    let mut run = prepared.run(&cassette, &replies, opts)?;
    let Prepared {
        timeout,
        recorded_events,
        freeze,
        hook,
        upstream,
        ..
    } = prepared;
    let judged_notes = crate::judge::freeze::carried_notes(&run.cassette);

    let fresh_events = parse_lines(run.log.events.iter().map(String::as_str));
    let sides = Sides {
        recorded: &recorded_events,
        recorded_roots: &replies.roots,
        fresh: &fresh_events,
        fresh_roots: &fresh_roots(&run),
        masks: &divergence::Masks::with_user(opts.project.masks.clone()),
    };
    let mut divergences = compare(&sides, &cassette, &run, opts);
    let divergence_turn = turns::label_user_turns(&cassette, &mut divergences);
    let mut failures = failures_of(&run, &fresh_events, timeout);
    let mut result = judged_result(&mut run, path)?;
    let agent_version_recorded = agent_version(&recorded_events);
    let agent_version_now = agent_version(&fresh_events);
    let mut notes = replies.notes.clone();
    if let Some(hook) = hook {
        let judged = (&mut failures, &mut result);
        let cassettes = (&cassette, &mut run.cassette);
        hook.finish(cassettes, &mut divergences, judged, &mut notes);
    }
    notes.extend(notes::after_run(&notes::AfterRun {
        run: &run,
        freeze: &freeze,
        upstream: upstream.as_ref(),
        cassette: &cassette,
        opts,
        sides: &sides,
        divergences: &divergences,
        failures: &failures,
        versions: (&agent_version_recorded, &agent_version_now),
    }));
    notes.extend(judged_notes);
    notes.extend(turns::first_divergence_note(&divergences));
    let written = (opts.write || opts.live_model)
        .then(|| {
            let fresh = write::at_least_version(&run.cassette, cassette.version);
            write::write_back(path, &fresh, &divergences, &mut failures, &mut notes, opts)
        })
        .transpose()?
        .flatten();
    let outcome = outcome_of(&failures, &divergences, opts.strict);
    let keep = opts.keep_run_dir || outcome == Outcome::Fail;
    let run_dir = run.run_dir.finish(keep);
    Ok(Rerun {
        file: path.to_path_buf(),
        result,
        failures,
        divergences,
        divergence_turn,
        replies_recorded: replies.turn_count(),
        replies_served: run.served.len(),
        agent_version_recorded,
        agent_version_now,
        notes,
        outcome,
        written,
        run_dir,
        elapsed: started.elapsed(),
        sandbox: run.sandbox,
    })
}

/// What a rerun prepares before its agent starts: the frozen scenario and
/// session, the recorded events and MCP traffic, `--from-turn`'s restore
/// hook and `--live-model`'s real API.
struct Prepared {
    scenario: Scenario,
    session: session_keys::SessionKeys,
    timeout: Duration,
    recorded_events: Vec<Value>,
    freeze: crate::mcp::Freeze,
    hook: Option<hook::Hook>,
    upstream: Option<crate::model::Upstream>,
}

impl Prepared {
    fn of(
        cassette: &Cassette,
        replies: &replies::Replies,
        path: &Path,
        opts: &RerunOptions,
    ) -> Result<Prepared, RerunError> {
        let (scenario, session) = frozen_scenario(cassette, opts)?;
        let timeout = crate::record::run_budget(opts.timeout, scenario.timeout_ms);
        let recorded_events = parse_lines(cassette.events());
        let freeze = crate::mcp::Freeze::new(
            crate::mcp::Tape::of_recording(&cassette.doc, &recorded_events),
            &opts.mcp_live,
        );
        let hook = hook::of(cassette, path, opts)?;
        let from = opts.from_turn.unwrap_or(1);
        let upstream = (opts.live_model)
            .then(|| live_model::upstream(cassette, &replies.script, from))
            .transpose()?;
        Ok(Prepared {
            scenario,
            session,
            timeout,
            recorded_events,
            freeze,
            hook,
            upstream,
        })
    }

    /// Runs the agent once against `recorded`'s replies.
    fn run(
        &self,
        recorded: &Cassette,
        replies: &replies::Replies,
        opts: &RerunOptions,
    ) -> Result<live::LiveRun, RerunError> {
        Fresh {
            path: &recorded.path,
            recorded,
            scenario: &self.scenario,
            session: &self.session,
            script: &replies.script,
            freeze: &self.freeze,
            timeout: self.timeout,
            hook: self.hook.as_ref().map(hook::Hook::as_run_hook),
            upstream: self.upstream.as_ref(),
        }
        .run(opts)
    }
}

/// The fresh run judged as replay reports a run; a run that could not be
/// judged is invalid input naming why.
fn judged_result(run: &mut live::LiveRun, path: &Path) -> Result<ReplayResult, RerunError> {
    run.judged.take().ok_or_else(|| {
        RerunError::invalid(
            format!(
                "{}: the fresh run cannot be judged: {}",
                path.display(),
                run.failures.join("; ")
            ),
            None,
        )
    })
}

/// The cassette and its recorded replies, refused when a rerun cannot
/// serve them: another tier, no readable replies, a write outside the run.
fn load_rerunnable(path: &Path) -> Result<(Cassette, replies::Replies), RerunError> {
    let cassette = Cassette::load(path).map_err(|e| {
        RerunError::invalid(
            e.to_string(),
            "a rerun needs a loadable v12 cassette".to_owned(),
        )
    })?;
    refuse_future_format(&cassette, path)?;
    refuse_other_tiers(&cassette)?;
    let replies = replies::from_cassette(&cassette).map_err(|e| {
        RerunError::invalid(
            format!("{}: {e}", path.display()),
            "re-record the scenario: `reel record SCENARIO.yaml`".to_owned(),
        )
    })?;
    refuse_writes_outside_the_run(&replies.script, path)?;
    Ok((cassette, replies))
}

/// A cassette stamped newer than this build reads is refused before any
/// agent starts, as replay and verify-cassettes refuse it (exit 3: reel
/// cannot vouch for a format it does not know, and a `--write` would stamp
/// it lower).
fn refuse_future_format(cassette: &Cassette, path: &Path) -> Result<(), RerunError> {
    if !cassette.is_future() {
        return Ok(());
    }
    Err(RerunError::cannot(
        format!(
            "{}: cassette format too new: cassette format v{} is newer than this reel \
                understands (v{}); nothing was run",
            path.display(),
            cassette.version,
            crate::cassette::CASSETTE_VERSION
        ),
        Some("upgrade reel".to_owned()),
    ))
}

/// Checks everything a rerun of `path` refuses before it starts an agent
/// (the cassette loads, its format and tier, its replies, its writes), so a
/// command that installs releases first (`bisect`, the matrix) refuses bad
/// input before any download.
pub fn check_rerunnable(path: &Path) -> Result<(), RerunError> {
    load_rerunnable(path).map(|_| ())
}

/// The fresh run a rerun makes: the frozen scenario and session, the
/// recorded replies and MCP traffic.
struct Fresh<'a> {
    path: &'a Path,
    /// The recording: its frozen judged verdicts are carried over.
    recorded: &'a Cassette,
    scenario: &'a Scenario,
    session: &'a session_keys::SessionKeys,
    script: &'a crate::model::Script,
    freeze: &'a crate::mcp::Freeze,
    timeout: Duration,
    /// `--from-turn`'s restore at its turn boundary.
    hook: Option<&'a dyn crate::record::checkpoints::RunHook>,
    /// `--live-model`'s real API.
    upstream: Option<&'a crate::model::Upstream>,
}

impl Fresh<'_> {
    /// Runs the agent once, as `record` does; a run that cannot start is
    /// an error naming the cassette.
    fn run(&self, opts: &RerunOptions) -> Result<live::LiveRun, RerunError> {
        let path = self.path;
        live::run(&live::LivePlan {
            mcp: Some(self.freeze),
            scenario: self.scenario,
            scenario_path: &self.scenario.path,
            session: self.session,
            cassette_path: path,
            script: Some(self.script.clone()),
            agent_cmd: opts.agent_cmd.as_deref(),
            claude_program: opts.claude_program.as_deref(),
            timeout: self.timeout,
            max_artifact_bytes: crate::run::collect::DEFAULT_BODY_CAP,
            sandbox: opts.sandbox,
            hook: self.hook,
            upstream: self.upstream.cloned(),
            carried_verdicts: Some(self.recorded),
        })
        .map_err(|e| match e {
            RecordError::AgentMissing { message, hint } => {
                RerunError::cannot(format!("{}: {message}", path.display()), Some(hint))
            }
            RecordError::Sandbox(refusal) => RerunError::cannot(
                format!("{}: {refusal}; nothing was run", path.display()),
                Some(refusal.hint()),
            ),
            other => {
                let err = crate::Error::from(other);
                RerunError::invalid(format!("{}: {}", path.display(), err.message), err.hint)
            }
        })
    }
}

/// Where the fresh run's paths live, to map them onto the recording's.
fn fresh_roots(run: &live::LiveRun) -> Roots {
    Roots::fresh(
        &run.staged.work_root.display().to_string(),
        &run.staged.config_dir.display().to_string(),
        &run.staged.home.display().to_string(),
        &run.run_dir.path().display().to_string(),
    )
}

/// The recording and the fresh run, side by side, with what to mask.
struct Sides<'a> {
    recorded: &'a [Value],
    recorded_roots: &'a Roots,
    fresh: &'a [Value],
    fresh_roots: &'a Roots,
    masks: &'a divergence::Masks,
}

/// Every divergence of the fresh run from the recording: turns, the
/// scripted model's problems, answers, MCP calls, output files.
fn compare(
    sides: &Sides<'_>,
    cassette: &Cassette,
    run: &live::LiveRun,
    opts: &RerunOptions,
) -> Vec<Divergence> {
    let mut divergences = divergence::compare_turns(
        sides.recorded,
        sides.recorded_roots,
        sides.fresh,
        sides.fresh_roots,
        sides.masks,
    );
    let model_divergences = model_problems(&run.model_problems);
    if !model_divergences.is_empty() {
        // The fresh run took another path: missing turns follow from it.
        divergences.retain(|d| d.kind != Kind::MissingTurn);
    }
    divergences.extend(model_divergences);
    let recorded_out: Vec<String> = cassette
        .control_out()
        .unwrap_or_default()
        .into_iter()
        .map(str::to_owned)
        .collect();
    divergences.extend(divergence::compare_answers(
        (sides.recorded, &recorded_out),
        sides.recorded_roots,
        (sides.fresh, &run.log.control_out),
        sides.fresh_roots,
        sides.masks,
    ));
    divergences.extend(mcp_misses(run.mcp.as_ref()));
    let (recorded, fresh) = (
        bodies::recorded(cassette),
        bodies::fresh(&run.staged.work_root),
    );
    divergences.extend(outputs::compare_files_with(
        cassette.doc.get("artifacts"),
        run.cassette.doc.get("artifacts"),
        &opts.project,
        sides.masks,
        &outputs::Bodies {
            recorded: &recorded,
            fresh: &fresh,
        },
    ));
    divergences
}

/// What failed the fresh run, its cause first: a stall at startup, the
/// run's own failures, the scripted model's problems (running out of turns
/// and unknown conversations are divergences and notes instead).
fn failures_of(run: &live::LiveRun, fresh_events: &[Value], timeout: Duration) -> Vec<String> {
    let mut failures = run.failures.clone();
    if let Some(stall) = startup_stall(&run.log, fresh_events, timeout) {
        failures.retain(|f| !f.starts_with("run error: "));
        failures.insert(0, stall);
    }
    failures.extend(
        run.model_problems
            .iter()
            .filter(|p| {
                !matches!(
                    p.kind,
                    ProblemKind::OutOfTurns | ProblemKind::UnknownConversation
                )
            })
            .map(|p| format!("scripted model: {p}")),
    );
    crate::record::cause_first(&mut failures);
    failures
}

/// `fail` on a failure (or any divergence under `--strict`), else `pass`,
/// `pass (diverged)` when the fresh run took another path.
fn outcome_of(failures: &[String], divergences: &[Divergence], strict: bool) -> Outcome {
    if !failures.is_empty() || (strict && !divergences.is_empty()) {
        Outcome::Fail
    } else if divergences.is_empty() {
        Outcome::Pass
    } else {
        Outcome::PassDiverged
    }
}

/// A run killed at its deadline before the agent said anything: some old
/// releases (reported for builds before about 2.1.145) wait at start-up on an
/// API host the offline run does not let them reach. Named as such, so a
/// matrix cell reads as a start-up stall rather than a slow skill.
fn startup_stall(log: &crate::agent::RunLog, fresh: &[Value], timeout: Duration) -> Option<String> {
    let timed_out = matches!(
        &log.end,
        crate::agent::RunEnd::Failed {
            source: crate::agent::ErrorSource::Timeout,
            ..
        }
    );
    let started = agent_version(fresh).is_some();
    (timed_out && !started).then(|| {
        format!(
            "start-up stall: the agent wrote no `system/init` line in {} ms and was stopped; \
             some old Claude Code releases (reported before about 2.1.145) wait at start-up on an \
             API host the offline run blocks — rerun under a newer release, or lower --timeout-ms \
             to find out sooner",
            timeout.as_millis()
        )
    })
}

fn parse_lines<S: AsRef<str>>(lines: impl Iterator<Item = S>) -> Vec<Value> {
    lines
        .filter_map(|l| serde_json::from_str::<Value>(l.as_ref()).ok())
        .collect()
}

fn agent_version(events: &[Value]) -> Option<String> {
    events.iter().find_map(|v| match Line::of(v) {
        Line::System { subtype, body } if subtype == protocol::subtype::INIT => body
            .get("claude_code_version")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    })
}

/// Only protocol-tier recordings run here: the container and hostloop tiers
/// ran the agent inside cowork-harness's sandbox with its own mounts, MCP
/// servers and egress proxy, which a local rerun cannot reproduce.
fn refuse_other_tiers(cassette: &Cassette) -> Result<(), RerunError> {
    let tier = cassette
        .doc
        .get("effectiveFidelity")
        .and_then(Value::as_str)
        .or_else(|| {
            cassette
                .doc
                .get("environment")
                .and_then(|e| e.get("tier"))
                .and_then(Value::as_str)
        })
        .or_else(|| cassette.scenario().get("fidelity").and_then(Value::as_str))
        .unwrap_or("container");
    if tier == "protocol" {
        return Ok(());
    }
    Err(RerunError::cannot(
        format!(
            "{}: recorded at the `{tier}` tier: the agent ran inside cowork-harness's {tier} \
                sandbox (its mounts, MCP servers and egress proxy), which reel cannot reproduce; \
                reel reruns protocol-tier recordings only",
            cassette.path.display()
        ),
        "replay it (`reel replay`), or record the scenario at `fidelity: protocol` to rerun it"
            .to_owned(),
    ))
}

/// A recorded write tool whose path, after mapping, lies outside the fresh
/// run is refused before anything runs: a cassette is untrusted input.
fn refuse_writes_outside_the_run(
    script: &crate::model::Script,
    path: &Path,
) -> Result<(), RerunError> {
    let all = script
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| ("main".to_owned(), i, t))
        .chain(script.subagents.iter().flat_map(|s| {
            s.turns
                .iter()
                .enumerate()
                .map(move |(i, t)| (format!("subagent:{}", s.parent_tool_use_id), i, t))
        }));
    for (conversation, turn_index, turn) in all {
        for block in &turn.blocks {
            let crate::model::Block::ToolUse { name, input, .. } = block else {
                continue;
            };
            if name == "Bash"
                && let Some(command) = input.get("command").and_then(Value::as_str)
            {
                let outside = paths::shell_writes_outside(command);
                if !outside.is_empty() {
                    return Err(RerunError::invalid(
                        format!(
                            "{}: {conversation} turn {}: the recorded Bash command \
                                writes {}, outside the run directory; a rerun never writes outside \
                                it",
                            path.display(),
                            turn_index + 1,
                            outside.join(", ")
                        ),
                        "re-record the scenario so the agent writes under its work root".to_owned(),
                    ));
                }
            }
            let Some((_, key)) = WRITE_TOOLS.iter().find(|(tool, _)| tool == name) else {
                continue;
            };
            if let Some(target) = input.get(*key).and_then(Value::as_str)
                && paths::escapes_run(target)
            {
                return Err(RerunError::invalid(
                    format!(
                        "{}: {conversation} turn {}: the recorded `{name}` writes \
                            `{target}`, outside the run directory; a rerun never writes outside it",
                        path.display(),
                        turn_index + 1
                    ),
                    "re-record the scenario so the agent writes under its work root".to_owned(),
                ));
            }
        }
    }
    Ok(())
}

/// The frozen scenario, loaded as `record` loads one, with its session.
fn frozen_scenario(
    cassette: &Cassette,
    opts: &RerunOptions,
) -> Result<(Scenario, session_keys::SessionKeys), RerunError> {
    let frozen = cassette.scenario();
    let name = frozen
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("rerun");
    let session = frozen
        .get("session")
        .and_then(Value::as_str)
        .unwrap_or(crate::scenario::INLINE_SESSION);
    // The frozen `session` is relative to the cassette; resolving the
    // scenario as if it lived beside the cassette keeps that true.
    let pseudo = cassette.dir().join(format!(
        "{}.frozen-scenario.yaml",
        crate::scenario::slug(name)
    ));
    let text = Value::Object(frozen.clone()).to_string();
    let mut scenario = Scenario::from_str(&pseudo, &text).map_err(|e| match &e {
        ScenarioError::Invalid {
            refusal: Refusal::Unrecordable,
            message,
            hint,
            ..
        } => RerunError::cannot(
            format!(
                "{}: the frozen scenario cannot run here: {message}",
                cassette.path.display()
            ),
            hint.clone(),
        ),
        _ => RerunError::invalid(
            format!(
                "{}: the frozen scenario does not load: {}",
                cassette.path.display(),
                e.detail()
            ),
            e.hint(),
        ),
    })?;
    scenario.model_script = None;
    scenario.session_path = crate::fingerprint::resolve_session_path(
        session,
        Some(cassette.dir()),
        opts.session.as_deref(),
    );
    if let Some(p) = &scenario.session_path
        && !p.is_file()
    {
        return Err(RerunError::invalid(
            format!(
                "{}: the recorded session `{session}` is not at {}",
                cassette.path.display(),
                p.display()
            ),
            "pass --session FILE for a moved cassette".to_owned(),
        ));
    }
    let keys = session_keys::load(scenario.session_path.as_deref()).map_err(|message| {
        RerunError::invalid(
            format!("{}: load the session: {message}", cassette.path.display()),
            "fix the session YAML, or pass --session FILE".to_owned(),
        )
    })?;
    Ok((scenario, keys))
}

/// Calls the frozen MCP servers could not answer from the recording.
fn mcp_misses(mcp: Option<&crate::mcp::Prepared>) -> Vec<Divergence> {
    let Some(mcp) = mcp else { return Vec::new() };
    crate::mcp::frozen::read_misses(&mcp.misses)
        .into_iter()
        .map(|m| Divergence {
            conversation: "-".into(),
            turn: None,
            tool: Some(format!("mcp__{}__{}", m.server, m.tool)),
            kind: Kind::McpCall,
            recorded: m
                .closest
                .clone()
                .unwrap_or_else(|| "(no recorded call)".into()),
            now: m.message(),
            diff: Vec::new(),
            user_turn: None,
        })
        .collect()
}

/// Which MCP servers ran frozen (and from what), which live.
fn mcp_note(mcp: Option<&crate::mcp::Prepared>, freeze: &crate::mcp::Freeze) -> Option<String> {
    let mcp = mcp?;
    let frozen: Vec<String> = mcp
        .frozen
        .iter()
        .map(|name| {
            let source = freeze
                .tape
                .servers
                .get(name)
                .map_or("nothing recorded: no tools", |s| s.source.as_str());
            format!("{name} (from {source})")
        })
        .collect();
    let mut note = format!(
        "::notice:: [rerun] MCP servers frozen: {}",
        if frozen.is_empty() {
            "none".into()
        } else {
            frozen.join(", ")
        }
    );
    if !freeze.live.is_empty() {
        note.push_str(&format!("; live (--mcp-live): {}", freeze.live.join(", ")));
    }
    Some(note)
}

/// Scripted-model problems that are divergences, not failures: the agent
/// asked for a turn the recording does not hold.
fn model_problems(problems: &[crate::model::Problem]) -> Vec<Divergence> {
    problems
        .iter()
        .filter(|p| p.kind == ProblemKind::OutOfTurns)
        .map(|p| Divergence {
            conversation: p.conversation.clone().unwrap_or_else(|| "main".into()),
            turn: p.turn,
            tool: None,
            kind: Kind::RepliesExhausted,
            recorded: format!(
                "replies exhausted at turn {}",
                p.turn.map_or("?".into(), |t| (t + 1).to_string())
            ),
            now: p.message.clone(),
            diff: Vec::new(),
            user_turn: None,
        })
        .collect()
}
