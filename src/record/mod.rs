//! `record`: run a scenario against a real agent and write a v12 cassette
//! (spec/record.md §1, §3, §5).
//!
//! Pipeline: load the scenario and its session → stage the work root
//! ([`stage`]) → pre-run baseline ([`manifest::pre_run`]) → start the scripted
//! model if the scenario has one (`<name>.model.yaml`, or `--model-script`) →
//! drive the agent ([`crate::agent::drive`]) → post-run manifest → scrub
//! secrets ([`secrets`]) → assemble the cassette in memory ([`assemble`]) →
//! compute the live verdict with the replay engine's rule → write atomically,
//! or refuse a failing run unless `--allow-failing`.
//!
//! An unscripted question never produces a cassette. The run directory (a
//! temp dir unless `REEL_RUNS_DIR` is set) is removed after a successful
//! recording and kept, with its logs, when something went wrong.
//!
//! Not here: the protocol loop (`crate::agent`), the decider
//! (`crate::scenario::answers`), the verdict rule (`crate::replay`).

pub mod assemble;
pub mod manifest;
pub mod stage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{self, AgentCommand, ClaudeKnobs, DriveOptions, ErrorSource, RunEnd};
use crate::scenario::answers::Decider;
use crate::scenario::{Scenario, session_keys};

/// Wall-clock budget when the scenario sets no `timeout_ms` (reel never
/// waits forever on an agent).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

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
}

/// Why nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Scenario(#[from] crate::scenario::ScenarioError),
    #[error("load session of `{scenario}`: {message}")]
    Session { scenario: PathBuf, message: String },
    #[error("stage the work root: {0}")]
    Stage(#[from] stage::StageError),
    #[error("{message}")]
    Setup {
        message: String,
        hint: Option<String>,
    },
    /// The agent run itself failed in a way that cannot be frozen.
    #[error("{message}")]
    Run {
        message: String,
        hint: Option<String>,
        run_dir: Option<PathBuf>,
    },
    /// The live verdict failed and `--allow-failing` was not given.
    #[error("refusing to freeze a failing run: the live verdict FAILED — {}", failures.join("; "))]
    FailingVerdict {
        failures: Vec<String>,
        run_dir: Option<PathBuf>,
    },
    #[error("write cassette `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A re-recording could not be staged (CI refusing a differing one, or
    /// the write failing).
    #[error(transparent)]
    Rerecording(#[from] crate::review::StageError),
}

impl From<RecordError> for crate::Error {
    fn from(e: RecordError) -> Self {
        let (kind_usage, hint) = match &e {
            RecordError::Scenario(s) => return crate::Error::from(ScenarioPassthrough(s)),
            RecordError::Session { .. } => (
                true,
                Some("fix the session YAML the scenario names".to_owned()),
            ),
            RecordError::Stage(_) => (true, None),
            RecordError::Setup { hint, .. } => (true, hint.clone()),
            RecordError::Run { hint, run_dir, .. } => (
                false,
                hint.clone().or_else(|| {
                    run_dir
                        .as_ref()
                        .map(|d| format!("the run's logs are kept in {}", d.display()))
                }),
            ),
            RecordError::FailingVerdict { run_dir, .. } => (
                false,
                Some(format!(
                    "fix the scenario or the skill, or pass --allow-failing to freeze it anyway{}",
                    run_dir
                        .as_ref()
                        .map(|d| format!(" (logs in {})", d.display()))
                        .unwrap_or_default()
                )),
            ),
            RecordError::Write { .. } => (true, None),
            RecordError::Rerecording(_) => {
                let RecordError::Rerecording(inner) = e else {
                    unreachable!()
                };
                let mut err = crate::Error::from(inner);
                err.message = format!("record: {}", err.message);
                return err;
            }
        };
        let msg = format!("record: {e}");
        let err = if kind_usage {
            crate::Error::usage(msg)
        } else {
            crate::Error::failure(msg)
        };
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    }
}

struct ScenarioPassthrough<'a>(&'a crate::scenario::ScenarioError);

impl From<ScenarioPassthrough<'_>> for crate::Error {
    fn from(s: ScenarioPassthrough<'_>) -> Self {
        let hint = match s.0 {
            crate::scenario::ScenarioError::Invalid { hint, .. } => hint.clone(),
            _ => None,
        };
        let err = crate::Error::usage(format!("record: {}", s.0));
        match hint {
            Some(h) => err.with_hint(h),
            None => err,
        }
    }
}

/// Records one scenario.
pub fn record(opts: &RecordOptions) -> Result<Recorded, RecordError> {
    let scenario = Scenario::load(&opts.scenario)?;
    let session = session_keys::load(scenario.session_path.as_deref()).map_err(|message| {
        RecordError::Session {
            scenario: opts.scenario.clone(),
            message,
        }
    })?;
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
    let mut warnings = Vec::new();
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

    let run_dir = new_run_dir(&scenario.name).map_err(|e| RecordError::Setup {
        message: format!("create the run directory: {e}"),
        hint: Some("set REEL_RUNS_DIR to a writable directory".into()),
    })?;
    let guard = RunDirGuard {
        dir: run_dir.clone(),
        keep: true,
    };
    let staged = stage::stage(&run_dir, &session)?;
    warnings.extend(staged.notices.iter().cloned());
    let pre = manifest::pre_run(&staged.work_root, &staged.user_visible_roots);

    let server = match &model_script {
        Some(path) => {
            let script = crate::model::Script::load(path).map_err(|e| RecordError::Setup {
                message: e.to_string(),
                hint: Some("see schema/model-script.json".into()),
            })?;
            let server = crate::model::Server::start(
                script,
                crate::model::ServeOptions {
                    port: 0,
                    log: Some(run_dir.join("model-requests.jsonl")),
                },
            )
            .map_err(|e| RecordError::Setup {
                message: format!("start the scripted model: {e}"),
                hint: None,
            })?;
            Some(server)
        }
        None => None,
    };
    let cmd = agent_command(opts, &session, &staged, server.as_ref().map(|s| s.url()))?;
    let decider = Decider {
        rules: scenario.answers.clone(),
        parity: session.permission_parity,
        unanswered: scenario.on_unanswered,
    };
    let timeout = opts
        .timeout
        .or(scenario.timeout_ms.map(Duration::from_millis))
        .unwrap_or(DEFAULT_TIMEOUT);
    let log = agent::drive(
        &cmd,
        &DriveOptions {
            prompt: &scenario.prompt,
            decider: &decider,
            timeout,
        },
    );
    let model_problems: Vec<String> = server
        .map(|s| s.shutdown().iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    let finished_at = log.finished_at;
    write_logs(&run_dir, &log);
    warnings.extend(log.decisions.warnings.iter().cloned());

    let kept = Some(run_dir.clone());
    if let RunEnd::Failed { source, message } = &log.end {
        match source {
            ErrorSource::Unanswered | ErrorSource::Script | ErrorSource::Spawn => {
                return Err(RecordError::Run {
                    message: format!("{message}\n    no cassette was written"),
                    hint: match source {
                        ErrorSource::Spawn => Some(format!(
                            "install Claude Code (scripts/install-claude.sh) or set REEL_CLAUDE_BIN; the program was `{}`",
                            cmd.program.display()
                        )),
                        _ => None,
                    },
                    run_dir: kept,
                });
            }
            _ => {}
        }
    }

    // Assemble, scrub, judge, write.
    let t0 = std::time::Instant::now();
    let artifacts = manifest::post_run(
        &staged.work_root,
        &staged.user_visible_roots,
        &staged.readonly_roots,
        opts.max_artifact_bytes,
    );
    let t1 = std::time::Instant::now();
    let assembled = assemble::assemble(&assemble::Parts {
        scenario: &scenario,
        cassette_path: &cassette_path,
        log: &log,
        artifacts: &artifacts,
        pre_run: &pre,
        staged: &staged,
        folders: &session.folders,
    });
    let t2 = std::time::Instant::now();
    let policy_dirs = [
        Path::new("."),
        crate::scenario::dir_of(&opts.scenario),
        crate::scenario::dir_of(&cassette_path),
    ];
    let policy = crate::verify::redact::RedactionPolicy::load(&policy_dirs).map_err(|e| {
        RecordError::Setup {
            message: e.to_string(),
            hint: Some("fix or remove the .cowork-redact.json policy".into()),
        }
    })?;
    let t3 = std::time::Instant::now();
    let mut doc = assembled.doc;
    let scrub = crate::verify::redact::scrub_cassette_checked(&mut doc, &policy, |d| {
        scrub_verdict(&cassette_path, d)
    })
    .map_err(|e| RecordError::Run {
        message: e.to_string(),
        hint: None,
        run_dir: kept.clone(),
    })?;
    let t4 = std::time::Instant::now();
    if !scrub.secrets.is_empty() {
        warnings.push(format!(
            "{} secret occurrence(s) scrubbed from the cassette",
            scrub.secrets.len()
        ));
    }
    let cassette =
        crate::cassette::Cassette::from_doc(&cassette_path, doc).map_err(|e| RecordError::Run {
            message: format!("the assembled cassette does not validate (a reel bug): {e}"),
            hint: None,
            run_dir: kept.clone(),
        })?;
    let t5 = std::time::Instant::now();
    let mut failures = live_failures(&cassette, &scenario, &log, &staged);
    failures.extend(
        model_problems
            .iter()
            .map(|p| format!("scripted model: {p}")),
    );
    if let RunEnd::Failed { message, .. } = &log.end {
        failures.insert(0, format!("run error: {message}"));
    }
    let t6 = std::time::Instant::now();
    let live_pass = failures.is_empty();
    if !live_pass && !opts.allow_failing {
        return Err(RecordError::FailingVerdict {
            failures,
            run_dir: kept,
        });
    }
    // Over an existing cassette: identical → untouched, differing → a
    // pending `.new` to review (or, under CI, an error); see crate::review.
    let staged = crate::review::stage_rerecording(&cassette_path, &cassette, opts.stage)?;
    let overhead = finished_at.elapsed();
    if std::env::var_os("REEL_TIMING").is_some() {
        // `REEL_TIMING=1`: where the post-run time goes (benchmark aid).
        eprintln!(
            "timing: manifest {:?} assemble {:?} policy {:?} scrub {:?} validate {:?} verdict {:?} write {:?}",
            t1 - t0,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            t5 - t4,
            t6 - t5,
            t6.elapsed()
        );
    }
    let mut guard = guard;
    guard.keep = opts.keep_run_dir || !live_pass;
    let run_dir = guard.keep.then(|| run_dir.clone());
    drop(guard);
    Ok(Recorded {
        cassette_path,
        live_pass,
        failures,
        warnings,
        overhead,
        run_dir,
        staged,
    })
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
) -> Vec<String> {
    let mut failures = replay_failures(cassette);
    if !log.decisions.permissive_auto_allows.is_empty()
        && !scenario.asserts_flag("allow_permissive_auto_allow")
    {
        failures.push(format!(
            "permissive_auto_allow: unscripted tool(s) {} were auto-allowed by `permission_parity: cowork`; \
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
    failures
}

/// The replay engine's verdict on the in-memory cassette: failure messages
/// of the failing assertions and fail-severity signals.
fn replay_failures(cassette: &crate::cassette::Cassette) -> Vec<String> {
    match crate::replay::replay_cassette(cassette, &crate::replay::ReplayOptions::default()) {
        Ok(result) => {
            let mut failures: Vec<String> = result
                .verdict
                .failures
                .iter()
                .map(|f| match &f.assertion {
                    Some(key) => format!("{key}: {}", f.message),
                    None => f.message.clone(),
                })
                .collect();
            if !result.verdict.pass && failures.is_empty() {
                failures.push("the live verdict failed".into());
            }
            failures
        }
        Err(e) => vec![format!("the cassette cannot be replayed: {e}")],
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
    opts: &RecordOptions,
    session: &session_keys::SessionKeys,
    staged: &stage::Staged,
    model_url: Option<String>,
) -> Result<AgentCommand, RecordError> {
    let cwd = staged.work_root.clone();
    if let Some(custom) = opts.agent_cmd.clone().or_else(|| {
        std::env::var("REEL_AGENT_CMD")
            .ok()
            .filter(|s| !s.is_empty())
    }) {
        let (program, args) =
            agent::split_agent_cmd(&custom).map_err(|e| RecordError::Setup {
                message: e.to_string(),
                hint: Some(
                    "quote words with spaces as a shell would (`node \"my agent.js\"`); for pipes or variables, wrap the command in a script".into(),
                ),
            })?;
        let mut env = agent::operator_env(std::env::vars(), &session.agent_env);
        env.push(("WORK_ROOT".into(), cwd.display().to_string()));
        env.push((
            "OUTPUTS_DIR".into(),
            cwd.join("outputs").display().to_string(),
        ));
        if let Some(url) = &model_url {
            env.retain(|(k, _)| k != "ANTHROPIC_BASE_URL");
            env.push(("ANTHROPIC_BASE_URL".into(), url.clone()));
        }
        return Ok(AgentCommand {
            program,
            args,
            env,
            cwd,
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
        mcp_config: session.mcp_config.clone(),
        settings_file: (!agent::hermetic(&env)).then(|| staged.config_dir.join("settings.json")),
    };
    Ok(AgentCommand {
        program: agent::claude_program(),
        args: agent::claude_argv(&knobs),
        env,
        cwd,
    })
}

/// Refuses to overwrite a default-path cassette recorded from a scenario
/// with another name (two names with one slug).
fn slug_collision_guard(path: &Path, name: &str) -> Result<(), RecordError> {
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
                "`{}` holds the recording of scenario `{other}`, not `{name}` (both names have the same slug)",
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

/// `<runs root>/<slug>/local_<base36 ns>`.
fn new_run_dir(name: &str) -> std::io::Result<PathBuf> {
    let root = std::env::var_os("REEL_RUNS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("reel-runs"));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mut id = String::new();
    let mut n = nanos;
    while n > 0 {
        let d = (n % 36) as u32;
        id.insert(0, std::char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
    }
    let dir = root
        .join(crate::scenario::slug(name))
        .join(format!("local_{id}{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
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

/// Removes the run directory on drop unless it must be kept.
struct RunDirGuard {
    dir: PathBuf,
    keep: bool,
}

impl Drop for RunDirGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
