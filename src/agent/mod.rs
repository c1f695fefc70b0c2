//! The agent process and the stream-json control protocol (docs/spec/record.md
//! §1.5–§1.9).
//!
//! [`AgentCommand`] is what to spawn (the `claude` argv/env builders are pure
//! functions here, unit-tested); [`drive`] runs one turn: it spawns the agent in
//! its own process group, writes `initialize` then the user turn, answers every
//! `control_request` (permissions and questions through the scenario's
//! `Decider`, hooks, MCP, and an error envelope for anything else), mirrors
//! exactly the frames the OS accepted into `controlOut`, keeps the raw stdout
//! lines as `events`, builds the timeline, closes stdin after `result`, and
//! always leaves no process of the group behind (SIGTERM, SIGKILL after 2 s).
//!
//! Not here: staging the work root, manifests, the cassette (`crate::record`),
//! deciding answers (`crate::scenario::answers`).
//!
//! Files: `process` (the process group and kill ladder; a confined start goes
//! through `sandbox::Launch`) and `session` (the stream-json control loop,
//! reading the wire through `protocol`; stdin stays open while a background
//! sub-agent runs). The agent gets its own session and process group with no
//! controlling terminal, and its stdio is unix socket pairs, which
//! `/proc/<pid>/fd` cannot reopen. `SdkMcp` is the trait through which the
//! host's in-process MCP servers answer `mcp_message` (implemented by
//! `mcp::sdk`).

mod process;
mod session;

pub use process::{Finished, ProcessGroup, SpawnError, run_to_end};
pub use session::{
    DecisionLog, DriveOptions, ErrorSource, RunEnd, RunLog, SdkMcp, SessionOptions, TurnEnded,
    TurnError, TurnInput, TurnMark, drive, drive_session,
};

use std::path::{Path, PathBuf};

/// The request id of the initialize control_request (cowork-harness's).
pub const INIT_REQUEST_ID: &str = "init-1";
/// The one hook reel installs: block background `Task` agents.
pub const TASK_HOOK_ID: &str = "cowork-task-bg-block";
/// Largest frame that can be written to the agent and mirrored.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;
/// SIGTERM → SIGKILL escalation.
pub const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What to spawn.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The complete environment (the child starts from an empty one).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Started confined (`None`: `--no-sandbox`).
    pub sandbox: Option<crate::sandbox::Launch>,
}

/// Session-derived knobs of the `claude` argv.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaudeKnobs {
    pub model: Option<String>,
    pub permission_mode: String,
    pub effort: Option<String>,
    pub mcp_config: Option<PathBuf>,
    /// `Some(config_dir)` on the non-hermetic branch (`--settings`).
    pub settings_file: Option<PathBuf>,
}

/// The protocol-tier `claude` argv after the program name (§1.5), in order.
pub fn claude_argv(k: &ClaudeKnobs) -> Vec<String> {
    let mut argv: Vec<String> = [
        "-p",
        "--verbose",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--permission-prompt-tool",
        "stdio",
        "--include-partial-messages",
    ]
    .map(String::from)
    .to_vec();
    if let Some(s) = &k.settings_file {
        argv.push("--settings".into());
        argv.push(s.display().to_string());
    }
    if let Some(m) = &k.model {
        argv.push("--model".into());
        argv.push(m.clone());
    }
    argv.push("--permission-mode".into());
    argv.push(if k.permission_mode.is_empty() {
        "default".into()
    } else {
        k.permission_mode.clone()
    });
    argv.push("--effort".into());
    argv.push(k.effort.clone().unwrap_or_else(|| "medium".into()));
    if let Some(c) = &k.mcp_config {
        argv.push("--mcp-config".into());
        argv.push(c.display().to_string());
    }
    argv
}

/// Environment variables never passed through from the operator (the
/// baseline's background-session strip list plus the `agent_env` knobs, which
/// only the session may set).
pub const STRIPPED_ENV: &[&str] = &[
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_SESSION_KIND",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_SESSION_NAME",
    "CLAUDE_CODE_SESSION_LOG",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "ENABLE_TOOL_SEARCH",
    "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS",
];

/// The operator environment minus [`STRIPPED_ENV`] and [`ci_secret`]s,
/// overlaid with `agent_env` (a live run's: it needs the API credentials).
pub fn operator_env(
    operator: impl IntoIterator<Item = (String, String)>,
    agent_env: &[(String, String)],
) -> Vec<(String, String)> {
    let operator: Vec<(String, String)> = operator.into_iter().collect();
    let set = |k: &str| {
        operator
            .iter()
            .any(|(n, v)| n == k && !v.is_empty() && v != "0")
    };
    let (bedrock, vertex) = (
        set("CLAUDE_CODE_USE_BEDROCK"),
        set("CLAUDE_CODE_USE_VERTEX"),
    );
    let mut env: Vec<(String, String)> = operator
        .iter()
        .filter(|(k, _)| !STRIPPED_ENV.contains(&k.as_str()))
        .filter(|(k, _)| {
            !ci_secret(k)
                || (bedrock && k.starts_with("AWS_"))
                || (vertex && (k.starts_with("GOOGLE_") || k.starts_with("CLOUDSDK_")))
        })
        .cloned()
        .collect();
    overlay(&mut env, agent_env);
    env
}

/// The offline environment of docs/spec/real-client.md §1 for a scripted model at
/// `base_url`: starts empty, fresh HOME and config dir, dummy key, all
/// non-essential traffic off, and a proxy tripwire pointing at the endpoint.
pub fn offline_env(
    base_url: &str,
    home: &Path,
    config_dir: &Path,
    agent_env: &[(String, String)],
) -> Vec<(String, String)> {
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), home.display().to_string()),
        ("CLAUDE_CONFIG_DIR".into(), config_dir.display().to_string()),
        ("ANTHROPIC_BASE_URL".into(), base_url.into()),
        ("ANTHROPIC_API_KEY".into(), "reel-scripted-model".into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        ("DISABLE_ERROR_REPORTING".into(), "1".into()),
        ("HTTPS_PROXY".into(), base_url.into()),
        ("HTTP_PROXY".into(), base_url.into()),
        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
    ];
    overlay(&mut env, agent_env);
    env
}

/// The agent's global config file inside `CLAUDE_CONFIG_DIR`.
pub const AGENT_CONFIG_FILE: &str = ".claude.json";

/// Seeds a fresh `CLAUDE_CONFIG_DIR` with the answers an agent would
/// otherwise fetch from api.anthropic.com whatever the environment says.
/// Releases up to 2.1.119 check the organisation's metrics opt-out
/// (`/api/claude_code/organizations/metrics_enabled`) when an API-key run
/// exits, even with every `DISABLE_*` variable set; a cached answer younger
/// than a day (`metricsStatusCache`) is used instead of the request, so the
/// run stays on the machine (the check is the agent's own: "disabled by
/// organization setting" is a state it handles). Later releases ignore the
/// key. Nothing is written when the file exists.
pub fn seed_agent_config(config_dir: &Path) -> std::io::Result<()> {
    let file = config_dir.join(AGENT_CONFIG_FILE);
    if file.exists() {
        return Ok(());
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let config = serde_json::json!({
        "metricsStatusCache": {"enabled": false, "timestamp": now_ms},
    });
    std::fs::write(
        file,
        serde_json::to_string_pretty(&config).unwrap_or_default(),
    )
}

/// Variables that never reach an agent, even live: a CI job's control files
/// and tokens (a line appended to `$GITHUB_ENV` runs the job's next step with
/// it) and any other service's credentials. The API's own (`ANTHROPIC_*`,
/// `CLAUDE_*`) pass.
pub fn ci_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("ANTHROPIC_") || upper.starts_with("CLAUDE_") {
        return false;
    }
    const CI: &[&str] = &[
        "GITHUB_",
        "ACTIONS_",
        "RUNNER_",
        "CI_JOB_",
        "GITLAB_",
        "BUILDKITE_",
        "CIRCLE_",
    ];
    const SECRET_WORDS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE_KEY",
        "API_KEY",
        "ACCESS_KEY",
        "AUTH",
    ];
    CI.iter().any(|p| upper.starts_with(p)) || SECRET_WORDS.iter().any(|w| upper.contains(w))
}

fn overlay(env: &mut Vec<(String, String)>, extra: &[(String, String)]) {
    for (k, v) in extra {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), v.clone()));
    }
}

/// True when `env` takes the hermetic branch (`CLAUDE_CONFIG_DIR`) rather than
/// `--settings` (§1.5 auth/config strategy).
pub fn hermetic(env: &[(String, String)]) -> bool {
    env.iter().any(|(k, v)| {
        (k == "ANTHROPIC_API_KEY" && !v.is_empty()) || (k == "COWORK_MANAGED_CONFIG" && v == "1")
    })
}

/// Why an `--agent-cmd` string names no command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentCmdError {
    #[error("`--agent-cmd` is empty")]
    Empty,
    #[error("`--agent-cmd` has an unbalanced quote or a trailing backslash: {0}")]
    Unbalanced(String),
}

/// Splits an `--agent-cmd` string into program and arguments with POSIX
/// shell word rules (quotes and backslashes, as `sh` would split it, via the
/// `shlex` crate) — but runs no shell: no expansion, no pipes.
pub fn split_agent_cmd(cmd: &str) -> Result<(PathBuf, Vec<String>), AgentCmdError> {
    let words = shlex::split(cmd).ok_or_else(|| AgentCmdError::Unbalanced(cmd.to_owned()))?;
    let mut parts = words.into_iter();
    let program = parts.next().ok_or(AgentCmdError::Empty)?;
    Ok((PathBuf::from(program), parts.collect()))
}

/// How to get an agent when none is found: only what works from an
/// installed reel (no script of reel's source checkout).
pub const INSTALL_HINT: &str = "install Claude Code with `npm install -g \
    @anthropic-ai/claude-code` (puts `claude` on PATH), or run `reel agents install latest` and \
    set REEL_CLAUDE_BIN to the program it prints";

/// The `claude` binary: `REEL_CLAUDE_BIN`, else `claude` on PATH, else the
/// project-local pinned install `.tools/claude/node_modules/.bin/claude`
/// (what `scripts/install-claude.sh` creates) under the current directory.
pub fn claude_program() -> PathBuf {
    if let Some(bin) = std::env::var_os("REEL_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        return PathBuf::from(bin);
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("claude").is_file()))
        .unwrap_or(false);
    let local = Path::new(".tools/claude/node_modules/.bin/claude");
    if !on_path && local.is_file() {
        return std::path::absolute(local).unwrap_or_else(|_| local.to_owned());
    }
    PathBuf::from("claude")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_cmd_splits_like_a_shell_without_running_one() {
        let (program, args) =
            split_agent_cmd(r#"node "my agent.js" --name 'a b' plain\ space $HOME"#).unwrap();
        assert_eq!(program, PathBuf::from("node"));
        assert_eq!(
            args,
            ["my agent.js", "--name", "a b", "plain space", "$HOME"]
        );
        assert_eq!(split_agent_cmd("   "), Err(AgentCmdError::Empty));
        assert!(matches!(
            split_agent_cmd("node 'unterminated"),
            Err(AgentCmdError::Unbalanced(_))
        ));
    }

    #[test]
    fn claude_argv_is_the_protocol_tier_argv() {
        let argv = claude_argv(&ClaudeKnobs {
            model: Some("claude-opus-4-8".into()),
            permission_mode: "default".into(),
            effort: None,
            mcp_config: None,
            settings_file: Some("/c/settings.json".into()),
        });
        assert_eq!(
            argv.join(" "),
            "-p --verbose --input-format stream-json --output-format stream-json \
             --permission-prompt-tool stdio --include-partial-messages --settings /c/settings.json \
             --model claude-opus-4-8 --permission-mode default --effort medium"
        );
    }

    #[test]
    fn operator_env_strips_tokens_and_knobs_and_overlays_agent_env() {
        let env = operator_env(
            [
                ("CLAUDE_CODE_OAUTH_TOKEN".into(), "t".into()),
                ("ENABLE_TOOL_SEARCH".into(), "auto".into()),
                ("PATH".into(), "/bin".into()),
            ],
            &[("ENABLE_TOOL_SEARCH".into(), "false".into())],
        );
        assert_eq!(
            env,
            vec![
                ("PATH".to_string(), "/bin".to_string()),
                ("ENABLE_TOOL_SEARCH".to_string(), "false".to_string())
            ]
        );
        assert!(!hermetic(&env));
        assert!(hermetic(&[("ANTHROPIC_API_KEY".into(), "k".into())]));
    }

    #[test]
    fn ci_control_files_and_other_tokens_never_reach_a_live_agent() {
        let env = operator_env(
            [
                ("GITHUB_ENV".into(), "/runner/env".into()),
                ("GITHUB_TOKEN".into(), "ghs".into()),
                ("NPM_TOKEN".into(), "n".into()),
                ("AWS_SECRET_ACCESS_KEY".into(), "a".into()),
                ("ANTHROPIC_API_KEY".into(), "k".into()),
                ("PATH".into(), "/bin".into()),
            ],
            &[],
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["ANTHROPIC_API_KEY", "PATH"]);
        let bedrock = operator_env(
            [
                ("CLAUDE_CODE_USE_BEDROCK".into(), "1".into()),
                ("AWS_SECRET_ACCESS_KEY".into(), "a".into()),
            ],
            &[],
        );
        assert_eq!(bedrock.len(), 2);
    }
}
