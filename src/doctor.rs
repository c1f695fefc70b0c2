//! `reel doctor`: can recording work on this machine? Three checks, each
//! with what was found and, when it is missing, how to fix it:
//!
//! 1. the agent binary (`crate::agent::claude_program`'s lookup order:
//!    `REEL_CLAUDE_BIN`, `claude` on `PATH`, `.tools/claude/…/claude`) and its
//!    version (`--version`);
//! 2. a handshake: a run's stages up to the agent's end
//!    (`crate::run::handshake`: staged, the scripted model serving a
//!    one-turn script, the agent confined and driven as in a recording)
//!    with one prompt, answered by the scripted reply;
//! 3. the sandbox: the layers this kernel offers (Landlock ABI, user
//!    namespaces), and the layers the handshake really ran under — the
//!    version and handshake runs are confined like every agent run;
//! 4. `git` on `PATH` (advisory: recording reads repositories through
//!    libgit2, but cassettes are committed and reviewed with git).
//!
//! Nothing here prints or decides an exit code (that is `cli::doctor`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{AgentCommand, claude_program, run_to_end};
use crate::model::Script;
use crate::run::LivePlan;
use crate::sandbox::policy::RunInputs;
use crate::sandbox::{Mode, Network, Policy};
use crate::scenario::{Scenario, session_keys};

/// How long the agent may take to answer `--version` or the handshake.
pub const AGENT_TIMEOUT: Duration = Duration::from_secs(90);

/// The reply the handshake's one-turn script sends.
pub const HANDSHAKE_REPLY: &str = "reel doctor: the scripted model answered";

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// `agent`, `handshake`, `git`.
    pub name: &'static str,
    pub ok: bool,
    /// Whether recording needs it (a failing required check means recording
    /// cannot work).
    pub required: bool,
    /// What was found (or what went wrong).
    pub detail: String,
    /// How to fix it, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Where the agent binary was found, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFound {
    pub path: PathBuf,
    /// `REEL_CLAUDE_BIN`, `PATH` or `.tools/claude`.
    pub via: &'static str,
}

const INSTALL_FIX: &str = crate::agent::INSTALL_HINT;

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolves what recording would run (the lookup of `claude_program`) to a
/// file, or says why nothing is there.
pub fn find_agent() -> Result<AgentFound, String> {
    let program = claude_program();
    if let Some(bin) = std::env::var_os("REEL_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(bin);
        return if executable(&p) {
            Ok(AgentFound {
                path: p,
                via: "REEL_CLAUDE_BIN",
            })
        } else {
            Err(format!(
                "REEL_CLAUDE_BIN={} is not an executable file",
                p.display()
            ))
        };
    }
    if program.is_absolute() {
        return Ok(AgentFound {
            path: program,
            via: ".tools/claude",
        });
    }
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("claude"))
            .find(|c| executable(c))
    });
    match on_path {
        Some(path) => Ok(AgentFound { path, via: "PATH" }),
        None => Err(
            "no agent binary: REEL_CLAUDE_BIN is unset, `claude` is not on PATH and \
                .tools/claude/node_modules/.bin/claude does not exist"
                .into(),
        ),
    }
}

/// `program --version` with the operator's environment, confined like a
/// run where this machine can; returns its first line or why not.
fn run_version(program: &Path) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let mut cmd = AgentCommand {
        program: program.to_owned(),
        args: vec!["--version".into()],
        env: crate::agent::operator_env(std::env::vars(), &[]),
        cwd: dir.path().to_owned(),
        sandbox: None,
    };
    cmd.env.retain(|(k, _)| k != "HOME" && k != "TMPDIR");
    cmd.env
        .push(("HOME".into(), dir.path().display().to_string()));
    cmd.env
        .push(("TMPDIR".into(), dir.path().display().to_string()));
    cmd.sandbox = confine(&cmd, dir.path());
    let ran = run_to_end(&cmd, AGENT_TIMEOUT)?;
    let version = ran
        .stdout
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if !ran.success || version.is_empty() {
        return Err(format!(
            "`{} --version` failed{}",
            program.display(),
            tail(&ran.stderr)
        ));
    }
    Ok(version)
}

/// The last lines of an agent's stderr, for a message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.trim().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let from = lines.len().saturating_sub(3);
    format!(": {}", lines[from..].join(" / "))
}

/// The confined start of `--version` in `dir`, with no network (`None`
/// where this machine cannot confine: the `sandbox` check reports that).
fn confine(cmd: &AgentCommand, dir: &Path) -> Option<crate::sandbox::Launch> {
    let path_var = cmd
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let policy = Policy::for_run(&RunInputs {
        run_dir: dir,
        program: &cmd.program,
        args: &cmd.args,
        path_var,
        home: home.as_deref(),
        extra_read: &[],
        network: Network::Ports(Vec::new()),
    });
    crate::sandbox::Launch::new(policy, &crate::sandbox::probe()).ok()
}

/// The handshake: a run's stages up to the agent's end
/// ([`crate::run::handshake`]) — staged like a run, a one-turn scripted
/// model, the agent confined (unconfined only where this machine offers
/// no sandbox: the `sandbox` check fails then) — with one prompt.
pub fn handshake(agent: &Path) -> Result<String, String> {
    let script = Script::parse(
        &format!("turns:\n  - blocks:\n      - text: {HANDSHAKE_REPLY:?}\n"),
        "reel-doctor.model.yaml",
    )
    .map_err(|e| format!("the built-in script does not load: {e}"))?;
    let scenario_path = Path::new("reel-doctor.scenario.yaml");
    let scenario = Scenario::from_str(
        scenario_path,
        "name: reel-doctor\nfidelity: protocol\nprompt: reel doctor handshake\n",
    )
    .map_err(|e| format!("the built-in scenario does not load: {e}"))?;
    let session = session_keys::load(None)?;
    let sandbox = match crate::sandbox::probe().landlock_abi {
        Some(_) => Mode::Enforce,
        None => Mode::Off,
    };
    let plan = LivePlan {
        scenario: &scenario,
        scenario_path,
        session: &session,
        // Nothing is assembled: no cassette is written.
        cassette_path: Path::new("reel-doctor.cassette.json"),
        script: Some(script),
        agent_cmd: None,
        claude_program: Some(agent),
        timeout: AGENT_TIMEOUT,
        max_artifact_bytes: 0,
        sandbox,
        mcp: None,
        hook: None,
        upstream: None,
        carried_verdicts: None,
    };
    let done = crate::run::handshake::handshake(&plan).map_err(|e| e.to_string());
    // The run directory is gone; its scenario's directory is left empty
    // (a record's may hold other runs, so only doctor's own is tidied).
    let _ = std::fs::remove_dir(crate::runs::root().join(crate::scenario::slug("reel-doctor")));
    handshake_detail(&done?)
}

/// What the handshake showed, or what went wrong.
fn handshake_detail(done: &crate::run::handshake::Handshake) -> Result<String, String> {
    let stderr = String::from_utf8_lossy(&done.log.stderr);
    if let Some(p) = done.model_problems.first() {
        return Err(format!("the scripted model saw a problem: {p}"));
    }
    if done.served == 0 {
        return Err(format!(
            "the agent never called the scripted model at ANTHROPIC_BASE_URL{}",
            tail(&stderr)
        ));
    }
    let ok = done.log.exit_status.is_some_and(|s| s.success());
    let replied = done
        .log
        .result
        .as_ref()
        .and_then(|r| r["result"].as_str())
        .is_some_and(|t| t.contains(HANDSHAKE_REPLY));
    if !ok || !replied {
        return Err(format!(
            "the agent called the scripted model but did not print its reply (exit {}){}",
            if ok { "0" } else { "non-zero" },
            tail(&stderr)
        ));
    }
    let confined = match &done.log.sandbox {
        Some(l) => format!("confined: {}", l.summary()),
        None => "UNCONFINED: this machine offers no sandbox".into(),
    };
    Ok(format!(
        "{} scripted turn(s) served on 127.0.0.1, reply printed ({confined})",
        done.served
    ))
}

/// What this kernel offers (the probe), as a check: required, because
/// `rerun` and `record` refuse to run an agent unconfined.
pub fn sandbox_check() -> Check {
    let probe = crate::sandbox::probe();
    let userns = if probe.user_namespaces {
        "user, PID, mount and network namespaces allowed".to_owned()
    } else {
        format!(
            "no user namespaces ({}): processes reaped by a subreaper, /proc shared, UDP open",
            probe.user_namespaces_note.as_deref().unwrap_or("unknown")
        )
    };
    match probe.landlock_abi {
        Some(abi) => {
            let mut got = vec!["files"];
            if abi >= 4 {
                got.push("tcp");
            }
            if abi >= 6 {
                got.push("scopes");
            }
            Check {
                name: "sandbox",
                ok: true,
                required: true,
                detail: format!("landlock ABI {abi} ({}); {userns}", got.join(", ")),
                fix: None,
            }
        }
        None => {
            let refusal = crate::sandbox::Refusal::Unavailable(probe.missing());
            Check {
                name: "sandbox",
                ok: false,
                required: true,
                detail: refusal.to_string(),
                fix: Some(refusal.hint()),
            }
        }
    }
}

/// `git --version` on PATH.
pub fn git() -> Result<String, String> {
    let out = std::process::Command::new("git")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("`git` is not on PATH ({e})"))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || v.is_empty() {
        return Err("`git --version` failed".into());
    }
    Ok(v)
}

/// Every check, in order. The handshake runs only when an agent was found.
pub fn run_checks() -> Vec<Check> {
    let mut checks = Vec::new();
    let agent = find_agent().and_then(|found| {
        let version = run_version(&found.path)?;
        Ok((found, version))
    });
    match &agent {
        Ok((found, version)) => checks.push(Check {
            name: "agent",
            ok: true,
            required: true,
            detail: format!("{version} at {} (via {})", found.path.display(), found.via),
            fix: None,
        }),
        Err(e) => checks.push(Check {
            name: "agent",
            ok: false,
            required: true,
            detail: e.clone(),
            fix: Some(INSTALL_FIX.into()),
        }),
    }
    checks.push(match &agent {
        Ok((found, _)) => match handshake(&found.path) {
            Ok(detail) => Check {
                name: "handshake",
                ok: true,
                required: true,
                detail,
                fix: None,
            },
            Err(detail) => Check {
                name: "handshake",
                ok: false,
                required: true,
                detail,
                fix: Some(
                    "the agent must honour ANTHROPIC_BASE_URL and speak stream-json under `-p` (Claude Code \
                        does); \
                     reinstall it (`reel agents install latest`), or point REEL_CLAUDE_BIN at a \
                         working claude"
                        .into(),
                ),
            },
        },
        Err(_) => Check {
            name: "handshake",
            ok: false,
            required: true,
            detail: "not tried: no working agent binary".into(),
            fix: Some("fix the agent check first".into()),
        },
    });
    checks.push(sandbox_check());
    checks.push(match git() {
        Ok(v) => Check {
            name: "git",
            ok: true,
            required: false,
            detail: v,
            fix: None,
        },
        Err(e) => Check {
            name: "git",
            ok: false,
            required: false,
            detail: e,
            fix: Some(
                "install git (e.g. `apt-get install git`): cassettes are committed and reviewed \
                    with it"
                    .into(),
            ),
        },
    });
    checks
}

/// Recording can work: every required check passed.
pub fn can_record(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.ok || !c.required)
}
