//! The few session keys `record` needs, read through one swappable function.
//!
//! The strict session loader is `session.rs` (the fingerprint module's); until
//! it is on main, [`load`] reads only these keys from the YAML (paths resolved
//! against the session file's directory, spec/record.md §2.2) and leaves
//! strictness to that loader. Swap the body of [`load`] for a call to it.

use std::path::{Path, PathBuf};

use serde_json::Value;

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
    pub mcp_config: Option<PathBuf>,
    /// `agent_env` mapped to env keys.
    pub agent_env: Vec<(String, String)>,
}

/// Loads the keys of the session at `path` (`None` = `(inline)`: defaults).
pub fn load(path: Option<&Path>) -> Result<SessionKeys, String> {
    let mut keys = SessionKeys {
        permission_mode: "default".into(),
        ..SessionKeys::default()
    };
    let Some(path) = path else { return Ok(keys) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("read session `{}`: {e}", path.display()))?;
    let doc: Value = serde_yaml::from_str(&text)
        .map_err(|e| format!("parse session `{}`: {e}", path.display()))?;
    let doc = match doc {
        Value::Null => Value::Object(Default::default()),
        d @ Value::Object(_) => d,
        _ => {
            return Err(format!(
                "session `{}`: the top level is not a mapping",
                path.display()
            ));
        }
    };
    let at = |k: &str| format!("session `{}`: `{k}`", path.display());
    let base = super::dir_of(path);
    let resolve =
        |p: &str, k: &str| super::resolve_path(p, base).map_err(|e| format!("{}: {e}", at(k)));
    let str_of = |v: Option<&Value>, k: &str| -> Result<Option<String>, String> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{} must be a string", at(k))),
        }
    };
    let list_of = |v: Option<&Value>, k: &str| -> Result<Vec<String>, String> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{} must be a list of strings", at(k)))
                })
                .collect(),
            Some(_) => Err(format!("{} must be a list of strings", at(k))),
        }
    };
    keys.file = Some(path.to_owned());
    keys.model = str_of(doc.get("model"), "model")?;
    keys.effort = str_of(doc.get("effort"), "effort")?
        .map(|e| if e == "extra" { "xhigh".to_owned() } else { e });
    if let Some(m) = str_of(doc.get("permission_mode"), "permission_mode")? {
        keys.permission_mode = m;
    }
    keys.permission_parity =
        match str_of(doc.get("permission_parity"), "permission_parity")?.as_deref() {
            None | Some("cowork") => PermissionParity::Cowork,
            Some("strict") => PermissionParity::Strict,
            Some(v) => {
                return Err(format!(
                    "{} `{v}` is not one of cowork, strict",
                    at("permission_parity")
                ));
            }
        };
    if let Some(v) = doc.get("folders").filter(|v| !v.is_null()) {
        let Some(items) = v.as_array() else {
            return Err(format!("{} must be a list", at("folders")));
        };
        for (i, f) in items.iter().enumerate() {
            let k = format!("folders[{i}]");
            let from = str_of(f.get("from"), &format!("{k}.from"))?
                .ok_or_else(|| format!("{} needs `from`", at(&k)))?;
            let mode = str_of(f.get("mode"), &format!("{k}.mode"))?.unwrap_or_else(|| "rw".into());
            if !["r", "rw", "rwd"].contains(&mode.as_str()) {
                return Err(format!("{}.mode `{mode}` is not one of r, rw, rwd", at(&k)));
            }
            keys.folders.push(Folder {
                from: resolve(&from, &k)?,
                mode,
            });
        }
    }
    if let Some(v) = doc.get("projects").filter(|v| !v.is_null()) {
        for (i, p) in v.as_array().into_iter().flatten().enumerate() {
            let k = format!("projects[{i}]");
            let uuid =
                str_of(p.get("uuid"), &k)?.ok_or_else(|| format!("{} needs `uuid`", at(&k)))?;
            let from =
                str_of(p.get("from"), &k)?.ok_or_else(|| format!("{} needs `from`", at(&k)))?;
            keys.projects.push((uuid, resolve(&from, &k)?));
        }
    }
    for u in list_of(doc.get("uploads"), "uploads")? {
        keys.uploads.push(resolve(&u, "uploads")?);
    }
    if let Some(skills) = doc.get("skills") {
        for s in list_of(skills.get("local"), "skills.local")? {
            keys.skills_local.push(resolve(&s, "skills.local")?);
        }
    }
    if let Some(plugins) = doc.get("plugins") {
        for s in list_of(plugins.get("local_plugins"), "plugins.local_plugins")? {
            keys.local_plugins
                .push(resolve(&s, "plugins.local_plugins")?);
        }
    }
    if let Some(mcp) = doc.get("mcp")
        && let Some(c) = str_of(mcp.get("config"), "mcp.config")?
    {
        keys.mcp_config = Some(resolve(&c, "mcp.config")?);
    }
    if let Some(env) = doc.get("agent_env").and_then(Value::as_object) {
        if let Some(m) = str_of(env.get("subagent_model"), "agent_env.subagent_model")? {
            keys.agent_env
                .push(("CLAUDE_CODE_SUBAGENT_MODEL".into(), m));
        }
        if let Some(t) = str_of(env.get("tool_search"), "agent_env.tool_search")? {
            let v = if t == "off" { "false" } else { "auto" };
            keys.agent_env.push(("ENABLE_TOOL_SEARCH".into(), v.into()));
        }
        if env
            .get("disable_experimental_betas")
            .and_then(Value::as_bool)
            == Some(true)
        {
            keys.agent_env
                .push(("CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS".into(), "1".into()));
        }
    }
    Ok(keys)
}

/// `permission_parity` of a session file; `None` when it cannot be read.
pub fn permission_parity(path: &Path) -> Option<PermissionParity> {
    load(Some(path)).ok().map(|k| k.permission_parity)
}
