//! The session keys that change what `record` stages or spawns, with their
//! host paths resolved against the session file's directory (docs/spec/record.md
//! §2.2). Loading and strictness are `session.rs`'s (the one session loader);
//! this is only the record-side view of it.

use std::path::{Path, PathBuf};

use super::answers::PermissionParity;

/// A connected folder: resolved source and mode (`r`, `rw`, `rwd`).
#[derive(Debug, Clone, PartialEq)]
pub struct Folder {
    pub from: PathBuf,
    pub mode: String,
}

/// The session keys that change what `record` stages or spawns.
#[derive(Debug, Clone, Default)]
pub struct SessionKeys {
    pub file: Option<PathBuf>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub permission_mode: String,
    pub permission_parity: PermissionParity,
    pub folders: Vec<Folder>,
    pub projects: Vec<(String, PathBuf)>,
    pub uploads: Vec<PathBuf>,
    pub skills_local: Vec<PathBuf>,
    pub local_plugins: Vec<PathBuf>,
    /// Absolute (the agent resolves it from its own work root).
    pub mcp_config: Option<PathBuf>,
    /// `mcp.enabled`: the servers of the config the agent gets (empty = all).
    pub mcp_enabled: Vec<String>,
    /// `agent_env` mapped to env keys.
    pub agent_env: Vec<(String, String)>,
}

/// Loads the session at `path` with the strict loader
/// ([`super::session::Session`]) and resolves its host paths against the
/// session file's directory (`None` = `(inline)`: defaults).
pub fn load(path: Option<&Path>) -> Result<SessionKeys, String> {
    use super::session::{PermissionMode, Session, ToolSearch};
    let mut keys = SessionKeys {
        permission_mode: "default".into(),
        ..SessionKeys::default()
    };
    let Some(path) = path else { return Ok(keys) };
    check_session_file(path)?;
    let s = Session::load(path).map_err(|e| e.to_string())?;
    let base = super::dir_of(path);
    let resolve = |p: &str, k: &str| {
        super::resolve_path(p, base)
            .map_err(|e| format!("session `{}`: `{k}`: {e}", path.display()))
    };
    keys.file = Some(path.to_owned());
    keys.model = s.model.clone();
    // The variants are the YAML spellings, lower-cased (`extra` is already
    // normalised to `xhigh` by the loader).
    keys.effort = s.effort.map(|e| format!("{e:?}").to_lowercase());
    keys.permission_mode = match s.permission_mode {
        PermissionMode::Default => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::BypassPermissions => "bypassPermissions",
    }
    .into();
    keys.permission_parity = match s.permission_parity {
        super::session::PermissionParity::Cowork => PermissionParity::Cowork,
        super::session::PermissionParity::Strict => PermissionParity::Strict,
    };
    for (i, f) in s.folders.iter().enumerate() {
        keys.folders.push(Folder {
            from: resolve(&f.from, &format!("folders[{i}].from"))?,
            mode: f.mode.as_str().into(),
        });
    }
    for (i, p) in s.projects.iter().enumerate() {
        keys.projects.push((
            p.uuid.clone(),
            resolve(&p.from, &format!("projects[{i}].from"))?,
        ));
    }
    for u in &s.uploads {
        keys.uploads.push(resolve(u, "uploads")?);
    }
    for d in &s.skills.local {
        keys.skills_local.push(resolve(d, "skills.local")?);
    }
    for d in &s.plugins.local_plugins {
        keys.local_plugins
            .push(resolve(d, "plugins.local_plugins")?);
    }
    if let Some(c) = &s.mcp.config {
        let p = resolve(c, "mcp.config")?;
        keys.mcp_config = Some(std::path::absolute(&p).unwrap_or(p));
    }
    keys.mcp_enabled = s.mcp.enabled.clone();
    crate::mcp::check_enabled(keys.mcp_config.as_deref(), &keys.mcp_enabled)
        .map_err(|e| format!("session `{}`: {e}", path.display()))?;
    if let Some(m) = &s.agent_env.subagent_model {
        keys.agent_env
            .push(("CLAUDE_CODE_SUBAGENT_MODEL".into(), m.clone()));
    }
    if let Some(t) = s.agent_env.tool_search {
        let v = if t == ToolSearch::Off {
            "false"
        } else {
            "auto"
        };
        keys.agent_env.push(("ENABLE_TOOL_SEARCH".into(), v.into()));
    }
    if s.agent_env.disable_experimental_betas == Some(true) {
        keys.agent_env
            .push(("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS".into(), "1".into()));
    }
    Ok(keys)
}

/// Largest session file read (a session is a few hundred bytes; this keeps
/// an untrusted cassette naming `/dev/zero` from hanging a replay).
const MAX_SESSION_BYTES: u64 = 1024 * 1024;

fn check_session_file(path: &Path) -> Result<(), String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("read session `{}`: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "session `{}` is not a regular file",
            path.display()
        ));
    }
    if meta.len() > MAX_SESSION_BYTES {
        return Err(format!(
            "session `{}` is larger than {MAX_SESSION_BYTES} bytes",
            path.display()
        ));
    }
    Ok(())
}

/// `permission_parity` of a session file; `None` when it cannot be read
/// (missing, not a regular file, oversized, invalid).
pub fn permission_parity(path: &Path) -> Option<PermissionParity> {
    load(Some(path)).ok().map(|k| k.permission_parity)
}
