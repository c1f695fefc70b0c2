//! MCP servers of a run: the session's MCP config read, narrowed to
//! `mcp.enabled`, and rewritten for the agent into the run directory. On a
//! rerun every server is frozen by default — its entry runs reel's own
//! [`frozen`] stdio server over a [`tape`] built from the recording — unless
//! it is named live (`--mcp-live`); a live server keeps its command, with
//! relative paths that name files beside the config made absolute (the agent
//! starts in the work root) and their directories readable in the sandbox.

pub mod frozen;
pub mod tape;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use tape::Tape;

/// How a rerun's MCP servers run (`None` in a [`prepare`] call: all live, as
/// when recording).
#[derive(Debug, Clone, Default)]
pub struct Freeze {
    pub tape: Tape,
    /// Servers run for real (`--mcp-live`).
    pub live: Vec<String>,
}

/// The MCP config a run's agent gets, and what the sandbox must allow.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// `<run>/mcp/config.json`.
    pub config: PathBuf,
    /// Read paths a live server needs (its files' directories) and reel's
    /// own binary for a frozen one.
    pub extra_read: Vec<PathBuf>,
    /// Frozen servers, sorted.
    pub frozen: Vec<String>,
    /// Where frozen servers append calls they could not answer.
    pub misses: PathBuf,
}

/// Reads an MCP config's `mcpServers` (a clear error naming the file).
pub fn read_servers(config: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(config)
        .map_err(|e| format!("MCP config `{}`: {e}", config.display()))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|e| format!("MCP config `{}` is not JSON: {e}", config.display()))?;
    match doc.get("mcpServers") {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => Err(format!(
            "MCP config `{}` has no `mcpServers` object; write {{\"mcpServers\": {{\"NAME\": \
             {{\"command\": …, \"args\": […]}}}}}}",
            config.display()
        )),
    }
}

/// Checks `mcp.enabled` against the config's servers (at session load).
pub fn check_enabled(config: Option<&Path>, enabled: &[String]) -> Result<(), String> {
    if enabled.is_empty() {
        return Ok(());
    }
    let Some(config) = config else {
        return Err(
            "`mcp.enabled` names servers but `mcp.config` is not set; set `mcp.config` \
                    to the MCP config file that defines them"
                .into(),
        );
    };
    let servers = read_servers(config)?;
    let unknown: Vec<&String> = enabled
        .iter()
        .filter(|n| !servers.contains_key(*n))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "`mcp.enabled` names {} not defined in `{}` (it defines: {}); fix the name or remove it",
        unknown
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", "),
        config.display(),
        servers.keys().cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// Writes the agent's MCP config (and the frozen servers' tape) into
/// `<run_dir>/mcp/`. `None` when the run has no MCP server at all.
pub fn prepare(
    config: Option<&Path>,
    enabled: &[String],
    freeze: Option<&Freeze>,
    run_dir: &Path,
) -> Result<Option<Prepared>, String> {
    let mut servers = match config {
        Some(c) => read_servers(c)?,
        None => Map::new(),
    };
    if !enabled.is_empty() {
        servers.retain(|name, _| enabled.contains(name));
    }
    if let Some(f) = freeze {
        for name in f.tape.servers.keys() {
            servers.entry(name.clone()).or_insert(json!({}));
        }
        if let Some(unknown) = f.live.iter().find(|n| !servers.contains_key(*n)) {
            return Err(format!(
                "--mcp-live `{unknown}`: the session has no MCP server of that name (it has: {})",
                servers.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    if servers.is_empty() {
        return Ok(None);
    }
    let dir = run_dir.join("mcp");
    std::fs::create_dir_all(&dir).map_err(|e| format!("create `{}`: {e}", dir.display()))?;
    let mut prepared = Prepared {
        config: dir.join("config.json"),
        misses: dir.join("misses.jsonl"),
        ..Prepared::default()
    };
    let base = config.and_then(Path::parent).unwrap_or(Path::new("."));
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
    let tape_path = dir.join("tape.json");
    for (name, entry) in servers.iter_mut() {
        match freeze {
            Some(f) if !f.live.contains(name) => {
                let exe = std::env::current_exe().map_err(|e| format!("locate reel: {e}"))?;
                *entry = json!({"type": "stdio", "command": exe, "args": [
                    frozen::FROZEN_ARG, tape_path, name, prepared.misses]});
                prepared.frozen.push(name.clone());
                if !prepared.extra_read.contains(&exe) {
                    prepared.extra_read.push(exe);
                }
            }
            _ => absolutise(entry, &base, &mut prepared.extra_read),
        }
    }
    if let Some(f) = freeze {
        let text = serde_json::to_string(&f.tape).map_err(|e| e.to_string())?;
        crate::atomic::write_atomic(&tape_path, text.as_bytes())
            .map_err(|e| format!("write `{}`: {e}", tape_path.display()))?;
    }
    let text =
        serde_json::to_string_pretty(&json!({"mcpServers": servers})).map_err(|e| e.to_string())?;
    crate::atomic::write_atomic(&prepared.config, text.as_bytes())
        .map_err(|e| format!("write `{}`: {e}", prepared.config.display()))?;
    Ok(Some(prepared))
}

/// A live server's `command` and `args` that name existing files relative to
/// the config's directory become absolute; their directories become readable.
fn absolutise(entry: &mut Value, base: &Path, reads: &mut Vec<PathBuf>) {
    let mut fix = |v: &mut Value| {
        let Some(s) = v.as_str() else { return };
        let p = Path::new(s);
        let full = if p.is_absolute() {
            p.to_owned()
        } else {
            base.join(p)
        };
        if !(s.contains('/') && full.is_file()) {
            return;
        }
        // The real path: the sandbox binds back only real paths under a
        // hidden `/tmp`, so a `sessions/../skills` detour would not resolve.
        let full = std::fs::canonicalize(&full).unwrap_or(full);
        if let Some(dir) = full.parent()
            && !reads.iter().any(|r| r == dir)
        {
            reads.push(dir.to_owned());
        }
        *v = Value::String(full.display().to_string());
    };
    if let Some(c) = entry.get_mut("command") {
        fix(c);
    }
    if let Some(Value::Array(args)) = entry.get_mut("args") {
        args.iter_mut().for_each(&mut fix);
    }
}
