//! Confine: the run's MCP servers prepared, the agent's command built and
//! wrapped in the kernel sandbox (`crate::sandbox`: the files it may read
//! and write, the ports it may reach, `TMPDIR` inside the run); after the
//! run, the layers it ran under and what the kernel refused.

use std::path::{Path, PathBuf};

use super::{LivePlan, RecordError, stage};
use crate::agent::{self, AgentCommand, ClaudeKnobs};
use crate::scenario::session_keys;

/// The run's MCP servers prepared and the agent's command, confined.
pub(super) fn confined_agent(
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

/// The agent's command for this run: `--agent-cmd`, else the `claude`
/// profile, with the run's environment and working directory (confined by
/// the caller).
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

/// What a finished run reports of its sandbox.
pub(super) fn log_sandbox(
    log: &agent::RunLog,
    mode: crate::sandbox::Mode,
) -> crate::sandbox::Layers {
    match (mode, &log.sandbox) {
        (crate::sandbox::Mode::Enforce, Some(layers)) => layers.clone(),
        _ => crate::sandbox::Layers::off(),
    }
}

/// What the kernel refused during a confined run, also given as warnings.
pub(super) fn denials_of(
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

/// Lines of the run's tool results that read like a refusal of the kernel
/// sandbox (`Permission denied`, `Operation not permitted`, `Read-only file
/// system`), each once, with the tool that met it; at most ten. The kernel
/// does not say which rule refused: these name the path or port the tool
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
