//! `reel doctor`: can recording work on this machine? Three checks, each
//! with what was found and, when it is missing, how to fix it:
//!
//! 1. the agent binary (`crate::agent::claude_program`'s lookup order:
//!    `REEL_CLAUDE_BIN`, `claude` on `PATH`, `.tools/claude/…/claude`) and its
//!    version (`--version`);
//! 2. a handshake: the scripted model (`crate::model::Server`) serves a
//!    one-turn script and the agent, in the offline environment
//!    (`crate::agent::offline_env`), runs one prompt against it and prints the
//!    scripted reply;
//! 3. the sandbox: the layers this kernel offers (Landlock ABI, user
//!    namespaces), and the layers the handshake really ran under — the
//!    version and handshake runs are confined like every agent run;
//! 4. `git` on `PATH` (advisory: recording reads repositories through
//!    libgit2, but cassettes are committed and reviewed with git).
//!
//! Nothing here prints or decides an exit code (that is `cli::doctor`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{AgentCommand, ProcessGroup, claude_program, offline_env};
use crate::model::{Script, ServeOptions, Server};
use crate::sandbox::policy::RunInputs;
use crate::sandbox::{Network, Policy};

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

/// Runs `program args` with the operator's environment; returns stdout or why not.
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
    cmd.sandbox = confine(&cmd, dir.path(), Network::Ports(Vec::new()));
    let (status, stdout, stderr, _) = run(&cmd)?;
    let version = stdout.lines().next().unwrap_or_default().trim().to_string();
    if !status || version.is_empty() {
        return Err(format!(
            "`{} --version` failed{}",
            program.display(),
            tail(&stderr)
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

/// The confined start of a doctor run in `dir` (`None` where this machine
/// cannot confine: the `sandbox` check reports that).
fn confine(cmd: &AgentCommand, dir: &Path, network: Network) -> Option<crate::sandbox::Launch> {
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
        network,
    });
    crate::sandbox::Launch::new(policy, &crate::sandbox::probe()).ok()
}

/// Spawns `cmd` in its own process group with stdin closed; waits up to
/// [`AGENT_TIMEOUT`] (then kills the group). Returns (success, stdout,
/// stderr, the sandbox layers it ran under).
type Ran = (bool, String, String, Option<crate::sandbox::Layers>);

fn run(cmd: &AgentCommand) -> Result<Ran, String> {
    let mut pg = ProcessGroup::spawn(cmd)
        .map_err(|e| format!("cannot start `{}`: {e}", cmd.program.display()))?;
    drop(pg.child.stdin.take());
    let mut out = pg.child.stdout.take();
    let mut err = pg.child.stderr.take();
    // Read on threads so a chatty agent cannot fill a pipe and stall.
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out_t = reader(out.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err_t = reader(err.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let status = pg.wait_for(AGENT_TIMEOUT);
    if status.is_none() {
        pg.terminate(Duration::from_secs(2));
    }
    pg.signal(libc::SIGKILL);
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    match status {
        None => Err(format!(
            "`{}` did not finish within {} s",
            cmd.program.display(),
            AGENT_TIMEOUT.as_secs()
        )),
        Some(s) => Ok((s.success(), stdout, stderr, pg.sandbox.clone())),
    }
}

/// The handshake: a one-turn scripted model and one `-p` prompt.
pub fn handshake(agent: &Path) -> Result<String, String> {
    let script = Script::parse(
        &format!("turns:\n  - blocks:\n      - text: {HANDSHAKE_REPLY:?}\n"),
        "reel-doctor.model.yaml",
    )
    .map_err(|e| format!("the built-in script does not load: {e}"))?;
    let server = Server::start(script, ServeOptions::default())
        .map_err(|e| format!("the scripted model cannot listen on 127.0.0.1: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
    let (home, config) = (dir.path().join("home"), dir.path().join("config"));
    for d in [&home, &config] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot make {}: {e}", d.display()))?;
    }
    crate::agent::seed_agent_config(&config)
        .map_err(|e| format!("cannot seed {}: {e}", config.display()))?;
    let mut cmd = AgentCommand {
        program: agent.to_owned(),
        args: vec!["-p".into(), "reel doctor handshake".into()],
        env: offline_env(&server.url(), &home, &config, &[]),
        cwd: dir.path().to_owned(),
        sandbox: None,
    };
    cmd.env
        .push(("TMPDIR".into(), dir.path().display().to_string()));
    let port = server.addr().port();
    cmd.sandbox = confine(&cmd, dir.path(), Network::Loopback { ports: vec![port] });
    let result = run(&cmd);
    let answered = server.turns_answered();
    let problems = server.shutdown();
    let (ok, stdout, stderr, layers) = result?;
    if let Some(p) = problems.first() {
        return Err(format!("the scripted model saw a problem: {p}"));
    }
    if answered == 0 {
        return Err(format!(
            "the agent never called the scripted model at ANTHROPIC_BASE_URL{}",
            tail(&stderr)
        ));
    }
    if !ok || !stdout.contains(HANDSHAKE_REPLY) {
        return Err(format!(
            "the agent called the scripted model but did not print its reply (exit {}){}",
            if ok { "0" } else { "non-zero" },
            tail(&stderr)
        ));
    }
    let confined = match layers {
        Some(l) => format!("confined: {}", l.summary()),
        None => "UNCONFINED: this machine offers no sandbox".into(),
    };
    Ok(format!(
        "{answered} scripted turn(s) served on 127.0.0.1, reply printed ({confined})"
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
                    "the agent must honour ANTHROPIC_BASE_URL and answer `-p PROMPT` (Claude Code \
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
