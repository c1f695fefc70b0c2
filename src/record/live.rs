//! One live run of a scenario, shared by `record` and `rerun`: stage the work
//! root, take the pre-run baseline, serve the model script (if any), drive the
//! agent, take the post-run manifest, assemble and scrub the cassette, and
//! compute the live verdict. Writing is the caller's: `record` freezes the
//! result, `rerun` compares it with the recording first.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{RecordError, assemble, hook_inventory, manifest, stage};
use crate::agent::{self, AgentCommand, ClaudeKnobs, DriveOptions, ErrorSource, RunEnd};
use crate::scenario::answers::Decider;
use crate::scenario::{Scenario, session_keys};

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
    pub hook: Option<&'a dyn super::checkpoints::RunHook>,
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
    let scenario = plan.scenario;
    let session = plan.session;
    let cassette_path = plan.cassette_path;
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
    let (model_problems, served) = stop_model(server);
    write_logs(run_dir.path(), &log);
    warnings.extend(log.decisions.warnings.iter().cloned());

    let run_dir = refuse_unrecordable(plan, &cmd, &log, run_dir)?;
    let hook_failure_blocks =
        hook_inventory::for_run(&log.events, &hook_inventory::Sources::of_command(&cmd));

    // Assemble, scrub, judge.
    let mut timing = Timing::start();
    let deadline = post_run_deadline(started, plan.timeout);
    let (artifacts, over_budget) = artifacts_after(
        plan,
        (&staged, fixture.as_ref(), &pre),
        deadline,
        &mut warnings,
    );
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
        folders: &session.folders,
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
    // Judged assertions: judged over the scrubbed cassette and frozen into it.
    warnings.extend(crate::judge::at_record::judge_recorded(
        &mut cassette,
        plan.script.as_ref(),
    ));
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
        judged,
        sandbox,
        denials,
        mcp,
    })
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

/// The scripted model of `plan` (if any), serving on a free loopback port
/// with the run's placeholders filled.
/// Drives the agent through its turn, with the scenario's answers and the
/// SDK MCP servers reel hosts (a live one ends with the turn).
fn drive_agent(
    plan: &LivePlan<'_>,
    cmd: &AgentCommand,
    mcp: Option<&crate::mcp::Prepared>,
) -> Result<agent::RunLog, RecordError> {
    let decider = Decider {
        rules: plan.scenario.answers.clone(),
        parity: plan.session.permission_parity,
        unanswered: plan.scenario.on_unanswered,
    };
    let sdk_host = match mcp {
        Some(m) => crate::mcp::sdk::SdkHost::start(m, plan.mcp.map(|f| &f.tape), cmd).map_err(
            |message| RecordError::Setup {
                message,
                hint: None,
            },
        )?,
        None => None,
    }
    .map(std::cell::RefCell::new);
    let relay = plan.hook.map(Relay);
    let on_turn_end = relay.as_ref().map(|r| r as &dyn agent::TurnEnded);
    if plan.scenario.is_multi_turn() {
        return Ok(drive_turns(
            plan,
            cmd,
            &decider,
            sdk_host.as_ref(),
            on_turn_end,
        ));
    }
    Ok(agent::drive(
        cmd,
        &DriveOptions {
            prompt: &plan.scenario.prompt,
            decider: &decider,
            timeout: plan.timeout,
            sdk_mcp: sdk_host
                .as_ref()
                .map(|h| h as &std::cell::RefCell<dyn agent::SdkMcp>),
            on_turn_end,
        },
    ))
}

/// A run hook seen as the session's turn-end listener.
struct Relay<'h>(&'h dyn super::checkpoints::RunHook);

impl agent::TurnEnded for Relay<'_> {
    fn turn_ended(&self, index: usize) {
        self.0.turn_ended(index);
    }
}

/// A multi-turn scenario's session (docs/multi-turn.md): one agent process,
/// each turn's rules before the scenario's, each turn's budget its own
/// `timeout_ms` else the scenario's; the session's budget is their sum.
fn drive_turns(
    plan: &LivePlan<'_>,
    cmd: &AgentCommand,
    scenario_rules: &Decider,
    sdk_host: Option<&std::cell::RefCell<crate::mcp::sdk::SdkHost>>,
    on_turn_end: Option<&dyn agent::TurnEnded>,
) -> agent::RunLog {
    let turns = plan.scenario.session_turns();
    let deciders: Vec<Decider> = turns
        .iter()
        .map(|t| Decider {
            rules: t
                .answers
                .iter()
                .chain(&scenario_rules.rules)
                .cloned()
                .collect(),
            parity: scenario_rules.parity,
            unanswered: scenario_rules.unanswered,
        })
        .collect();
    let inputs: Vec<agent::TurnInput<'_>> = turns
        .iter()
        .zip(&deciders)
        .map(|(t, decider)| agent::TurnInput {
            prompt: &t.prompt,
            decider,
            timeout: t.timeout_ms.map_or(plan.timeout, Duration::from_millis),
        })
        .collect();
    let timeout = inputs.iter().map(|t| t.timeout).sum();
    agent::drive_session(
        cmd,
        &agent::SessionOptions {
            turns: inputs,
            timeout,
            sdk_mcp: sdk_host.map(|h| h as &std::cell::RefCell<dyn agent::SdkMcp>),
            on_turn_end,
        },
    )
}

fn start_model(
    plan: &LivePlan<'_>,
    staged: &stage::Staged,
    run_dir: &Path,
) -> Result<Option<crate::model::Server>, RecordError> {
    let Some(script) = &plan.script else {
        return Ok(None);
    };
    let vars = vec![
        ("config".into(), staged.config_dir.display().to_string()),
        ("home".into(), staged.home.display().to_string()),
        ("run".into(), run_dir.display().to_string()),
        (
            "cwd-slug".into(),
            crate::rerun::paths::slug(&staged.work_root.display().to_string()),
        ),
    ];
    let options = crate::model::ServeOptions {
        port: 0,
        log: Some(run_dir.join("model-requests.jsonl")),
        vars,
    };
    crate::model::Server::start(script.clone(), options)
        .map(Some)
        .map_err(|e| RecordError::Setup {
            message: format!("start the scripted model: {e}"),
            hint: None,
        })
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

/// Lines of the run's tool results that read like a refusal of the kernel
/// sandbox (`Permission denied`, `Operation not permitted`, `Read-only file
/// system`), each once, with the tool that met it; at most ten. The kernel
/// does not say which rule refused: these name the path or port the tool
/// The run's MCP servers prepared and the agent's command, confined.
fn confined_agent(
    plan: &LivePlan<'_>,
    staged: &stage::Staged,
    run_dir: &Path,
    server: Option<&crate::model::Server>,
) -> Result<(Option<crate::mcp::Prepared>, AgentCommand), RecordError> {
    let session = plan.session;
    let mcp = crate::mcp::prepare(
        session.mcp_config.as_deref(),
        &session.mcp_enabled,
        plan.mcp,
        run_dir,
    )
    .map_err(|message| RecordError::Setup {
        message,
        hint: None,
    })?;
    let mut cmd = agent_command(
        plan.agent_cmd,
        plan.claude_program,
        session,
        staged,
        server.map(|s| s.url()),
        mcp.as_ref(),
    )?;
    cmd.sandbox = confine(plan.sandbox, &cmd, staged, mcp.as_ref(), server)?;
    Ok((mcp, cmd))
}

/// The scripted model stopped: what went wrong in it, and the replies it
/// served (nothing without a scripted model).
fn stop_model(
    server: Option<crate::model::Server>,
) -> (
    Vec<crate::model::Problem>,
    Vec<(crate::model::ConversationId, usize)>,
) {
    match server {
        Some(s) => {
            let served = s.served();
            (s.shutdown(), served)
        }
        None => (Vec::new(), Vec::new()),
    }
}

/// What the kernel refused during a confined run, also given as warnings.
fn denials_of(
    sandbox: &crate::sandbox::Layers,
    log: &agent::RunLog,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let denials = if sandbox.enabled {
        sandbox_denials(&log.events)
    } else {
        Vec::new()
    };
    warnings.extend(denials.iter().map(|d| format!("sandbox: {d}")));
    denials
}

/// printed.
fn sandbox_denials(events: &[String]) -> Vec<String> {
    use crate::protocol::{Block, tool_result_text};
    const MARKS: [&str; 3] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    let mut tools = std::collections::HashMap::new();
    let mut out: Vec<String> = Vec::new();
    for line in events {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(blocks) = v["message"]["content"].as_array() else {
            continue;
        };
        for block in blocks {
            match Block::of(block) {
                Block::ToolUse {
                    id: Some(id), name, ..
                } => {
                    tools.insert(id.to_owned(), name.to_owned());
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    let tool = tool_use_id.and_then(|id| tools.get(id)).cloned();
                    let text = tool_result_text(content);
                    for l in text.lines().filter(|l| MARKS.iter().any(|m| l.contains(m))) {
                        let l: String = l.trim().chars().take(200).collect();
                        let entry = format!("{}: {l}", tool.as_deref().unwrap_or("a tool"));
                        if !out.contains(&entry) && out.len() < 10 {
                            out.push(entry);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// What a finished run reports of its sandbox.
fn log_sandbox(log: &agent::RunLog, mode: crate::sandbox::Mode) -> crate::sandbox::Layers {
    match (mode, &log.sandbox) {
        (crate::sandbox::Mode::Enforce, Some(layers)) => layers.clone(),
        _ => crate::sandbox::Layers::off(),
    }
}

/// The confined start of `cmd` (`None` under `--no-sandbox`): writes beneath
/// the run directory only, reads of the system, the agent's installation and
/// toolchains, the staged run and what its MCP servers need; TCP to the
/// scripted model and reel's HTTP MCP fronts only (or, live, to the API's
/// ports and the fronts); `TMPDIR` inside the
/// run. Refused before anything runs where nothing can confine files.
fn confine(
    mode: crate::sandbox::Mode,
    cmd: &AgentCommand,
    staged: &stage::Staged,
    mcp: Option<&crate::mcp::Prepared>,
    server: Option<&crate::model::Server>,
) -> Result<Option<crate::sandbox::Launch>, RecordError> {
    use crate::sandbox::{Launch, Mode, Network, Policy, policy::RunInputs};
    if mode == Mode::Off {
        return Ok(None);
    }
    let env_of = |k: &str| {
        cmd.env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    // reel's HTTP MCP fronts listen on loopback beside the model.
    let fronts = mcp.map(|m| m.loopback_ports()).unwrap_or_default();
    let network = match server {
        Some(s) => Network::Loopback {
            ports: [vec![s.addr().port()], fronts].concat(),
        },
        None => Network::Ports([live_ports(env_of("ANTHROPIC_BASE_URL")), fronts].concat()),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // The agent's MCP config is inside the run; a live server's files and
    // reel's own binary (the frozen servers) are not.
    let mut extra_read: Vec<PathBuf> = mcp.map(|m| m.extra_read.clone()).unwrap_or_default();
    extra_read.extend(crate::sandbox::policy::extra_read_from_env());
    // The project's `[sandbox] read` (reel.toml): toolchains reel cannot
    // infer from the agent's PATH.
    let project =
        crate::project::ProjectConfig::discover_cwd().map_err(|e| RecordError::Setup {
            message: e.to_string(),
            hint: Some("fix reel.toml (docs/project-config.md)".into()),
        })?;
    extra_read.extend(project.sandbox_read_paths());
    let policy = Policy::for_run(&RunInputs {
        run_dir: &staged.run_dir,
        program: &cmd.program,
        args: &cmd.args,
        path_var: env_of("PATH"),
        home: home.as_deref(),
        extra_read: &extra_read,
        network,
    });
    Launch::new(policy, &crate::sandbox::probe())
        .map(Some)
        .map_err(RecordError::Sandbox)
}

/// A live run's TCP ports: HTTPS, and the port of a custom API base URL.
fn live_ports(base_url: Option<&str>) -> Vec<u16> {
    let mut ports = vec![443];
    if let Some(port) = base_url
        .and_then(|u| u.split("://").nth(1))
        .and_then(|rest| rest.split('/').next())
        .and_then(|host| host.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok())
    {
        ports.push(port);
    }
    ports
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

fn agent_command(
    agent_cmd: Option<&str>,
    claude_program: Option<&Path>,
    session: &session_keys::SessionKeys,
    staged: &stage::Staged,
    model_url: Option<String>,
    mcp: Option<&crate::mcp::Prepared>,
) -> Result<AgentCommand, RecordError> {
    let cwd = staged.work_root.clone();
    if let Some(custom) = agent_cmd.map(str::to_owned).or_else(|| {
        std::env::var("REEL_AGENT_CMD")
            .ok()
            .filter(|s| !s.is_empty())
    }) {
        let (program, args) = agent::split_agent_cmd(&custom).map_err(|e| RecordError::Setup {
            message: e.to_string(),
            hint: Some(
                "quote words with spaces as a shell would (`node \"my agent.js\"`); for pipes \
                        or variables, wrap the command in a script"
                    .into(),
            ),
        })?;
        // Against a scripted model the environment starts empty, as for
        // `claude`; live, it is the operator's without CI secrets.
        let mut env = match &model_url {
            Some(url) => {
                agent::offline_env(url, &staged.home, &staged.config_dir, &session.agent_env)
            }
            None => agent::operator_env(std::env::vars(), &session.agent_env),
        };
        env.push(("WORK_ROOT".into(), cwd.display().to_string()));
        env.push((
            "OUTPUTS_DIR".into(),
            cwd.join("outputs").display().to_string(),
        ));
        env.push(("TMPDIR".into(), run_tmp(staged)?));
        return Ok(AgentCommand {
            program,
            args,
            env,
            cwd,
            sandbox: None,
        });
    }
    let env = match &model_url {
        Some(url) => agent::offline_env(url, &staged.home, &staged.config_dir, &session.agent_env),
        None => {
            let mut env = agent::operator_env(std::env::vars(), &session.agent_env);
            if agent::hermetic(&env) {
                env.push((
                    "CLAUDE_CONFIG_DIR".into(),
                    staged.config_dir.display().to_string(),
                ));
            }
            env
        }
    };
    let knobs = ClaudeKnobs {
        model: session.model.clone(),
        permission_mode: session.permission_mode.clone(),
        effort: session.effort.clone(),
        mcp_config: mcp.map(|m| m.config.clone()),
        settings_file: (!agent::hermetic(&env)).then(|| staged.config_dir.join("settings.json")),
    };
    let mut env = env;
    env.retain(|(k, _)| k != "TMPDIR");
    env.push(("TMPDIR".into(), run_tmp(staged)?));
    Ok(AgentCommand {
        program: claude_program.map_or_else(agent::claude_program, Path::to_path_buf),
        args: agent::claude_argv(&knobs),
        env,
        cwd,
        sandbox: None,
    })
}

/// `<run>/tmp`, the agent's `TMPDIR` (so nothing it writes lands in the
/// shared `/tmp`, where the sandbox would refuse it anyway).
fn run_tmp(staged: &stage::Staged) -> Result<String, RecordError> {
    let tmp = staged.run_dir.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| RecordError::Setup {
        message: format!("create `{}`: {e}", tmp.display()),
        hint: None,
    })?;
    Ok(tmp.display().to_string())
}

/// The run's raw logs, secret-scrubbed like the cassette (a kept run
/// directory must not hold what the cassette may not).
fn write_logs(run_dir: &Path, log: &agent::RunLog) {
    use serde_json::Value;
    let lines = |l: &[String]| Value::Array(l.iter().cloned().map(Value::String).collect());
    let stderr = String::from_utf8_lossy(&log.stderr).into_owned();
    // stderr rides as one extra (non-JSON, text-scrubbed) events line.
    let mut events = log.events.clone();
    events.push(stderr);
    let mut doc = serde_json::Map::new();
    doc.insert("events".into(), lines(&events));
    doc.insert("controlOut".into(), lines(&log.control_out));
    let mut policy = crate::verify::redact::RedactionPolicy::default();
    policy.add_env_secrets();
    // A scrub error only means a policy problem; the secret layer still ran.
    let _ = crate::verify::redact::scrub_cassette(&mut doc, &policy);
    let text = |key: &str, sep: &str| {
        let mut s = doc
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(sep)
            })
            .unwrap_or_default();
        s.push('\n');
        s
    };
    let mut events: Vec<String> = doc
        .get("events")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let stderr = events.pop().unwrap_or_default();
    let mut ev = events.join("\n");
    ev.push('\n');
    let _ = std::fs::write(run_dir.join("events.jsonl"), ev);
    let _ = std::fs::write(run_dir.join("control-out.jsonl"), text("controlOut", "\n"));
    let _ = std::fs::write(run_dir.join("agent.stderr.log"), stderr);
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
