//! The session YAML (`sessions/*.yaml`, docs/spec/record.md §2.2): a strict
//! loader where every key is optional and an unknown key is an error naming
//! the key, its path and the nearest valid key.
//!
//! [`Session`] holds the AUTHORED values (paths as written, defaults applied
//! where the spec defines them); resolving paths against the session file's
//! directory is left to the consumer (`fingerprint` resolves skill sources
//! lexically; `record` stages mounts). This module does not launch anything.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_yaml_ng::Value;

/// Why a session file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("read session `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parse session `{path}`: {msg}")]
    Parse { path: PathBuf, msg: String },
    #[error("session `{path}`: unknown key `{key}`{hint}")]
    UnknownKey {
        path: PathBuf,
        key: String,
        hint: String,
    },
    #[error("session `{path}`: `{key}`: {msg}")]
    Invalid {
        path: PathBuf,
        key: String,
        msg: String,
    },
}

impl From<SessionError> for crate::Error {
    fn from(e: SessionError) -> Self {
        let hint = match &e {
            SessionError::UnknownKey { .. } => {
                "fix the key name; see the session keys in README/spec (record.md §2.2)"
            }
            SessionError::Read { .. } => {
                "check the `session:` path of the scenario (relative to the scenario file)"
            }
            _ => "fix the session YAML",
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Folder {
    pub from: String,
    #[serde(default = "default_mode")]
    pub mode: FolderMode,
}

fn default_mode() -> FolderMode {
    FolderMode::Rw
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FolderMode {
    R,
    #[default]
    Rw,
    Rwd,
}

impl FolderMode {
    pub fn as_str(self) -> &'static str {
        match self {
            FolderMode::R => "r",
            FolderMode::Rw => "rw",
            FolderMode::Rwd => "rwd",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    pub uuid: String,
    pub from: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Plugins {
    pub config_dir: Option<String>,
    pub marketplaces: Vec<String>,
    pub local_marketplaces: Vec<String>,
    pub enabled: Vec<String>,
    pub local_plugins: Vec<String>,
    pub remote_plugins: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Skills {
    pub local: Vec<String>,
    pub suggest_enabled: Option<bool>,
    pub proactive_suggest_enabled: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mcp {
    pub config: Option<String>,
    pub enabled: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Egress {
    pub extra_allow: Vec<String>,
    pub unrestricted: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebFetch {
    pub approved_domains: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Staleness {
    pub hash_ignore: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Debug {
    pub max_thinking_tokens: Option<u64>,
    pub thinking_display: Option<ThinkingDisplay>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingDisplay {
    Summarized,
    Omitted,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentEnv {
    pub subagent_model: Option<String>,
    pub tool_search: Option<ToolSearch>,
    pub disable_experimental_betas: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearch {
    Auto,
    Off,
}

impl ToolSearch {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolSearch::Auto => "auto",
            ToolSearch::Off => "off",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
    Max,
    /// Normalised to `Xhigh` by [`Session::parse`].
    Extra,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum PermissionMode {
    #[default]
    #[serde(rename = "default")]
    Default,
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    #[serde(rename = "plan")]
    Plan,
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionParity {
    #[default]
    Cowork,
    Strict,
}

/// A parsed session (authored values, defaults applied).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Session {
    pub model: Option<String>,
    pub effort: Option<Effort>,
    pub account_name: String,
    pub extended_thinking: bool,
    pub agent_max_turns: Option<u64>,
    pub permission_mode: PermissionMode,
    pub permission_parity: PermissionParity,
    pub folders: Vec<Folder>,
    pub projects: Vec<Project>,
    pub trusted_folders: Vec<String>,
    pub auto_mount_folders: bool,
    pub uploads: Vec<String>,
    pub plugins: Plugins,
    pub skills: Skills,
    pub mcp: Mcp,
    pub egress: Egress,
    pub web_fetch: WebFetch,
    pub staleness: Staleness,
    pub debug: Debug,
    pub agent_env: AgentEnv,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            model: None,
            effort: None,
            account_name: "User".into(),
            extended_thinking: true,
            agent_max_turns: None,
            permission_mode: PermissionMode::Default,
            permission_parity: PermissionParity::Cowork,
            folders: Vec::new(),
            projects: Vec::new(),
            trusted_folders: Vec::new(),
            auto_mount_folders: false,
            uploads: Vec::new(),
            plugins: Plugins::default(),
            skills: Skills::default(),
            mcp: Mcp::default(),
            egress: Egress::default(),
            web_fetch: WebFetch::default(),
            staleness: Staleness::default(),
            debug: Debug::default(),
            agent_env: AgentEnv::default(),
        }
    }
}

/// Valid keys per map, for the unknown-key check (`[]` path = top level).
const TOP_KEYS: &[&str] = &[
    "model",
    "effort",
    "account_name",
    "extended_thinking",
    "agent_max_turns",
    "permission_mode",
    "permission_parity",
    "folders",
    "projects",
    "trusted_folders",
    "auto_mount_folders",
    "uploads",
    "plugins",
    "skills",
    "mcp",
    "egress",
    "web_fetch",
    "staleness",
    "debug",
    "agent_env",
];

fn nested_keys(section: &str) -> Option<&'static [&'static str]> {
    Some(match section {
        "plugins" => &[
            "config_dir",
            "marketplaces",
            "local_marketplaces",
            "enabled",
            "local_plugins",
            "remote_plugins",
        ],
        "skills" => &["local", "suggest_enabled", "proactive_suggest_enabled"],
        "mcp" => &["config", "enabled"],
        "egress" => &["extra_allow", "unrestricted"],
        "web_fetch" => &["approved_domains"],
        "staleness" => &["hash_ignore"],
        "debug" => &["max_thinking_tokens", "thinking_display"],
        "agent_env" => &[
            "subagent_model",
            "tool_search",
            "disable_experimental_betas",
        ],
        "folders" => &["from", "mode"],
        "projects" => &["uuid", "from"],
        _ => return None,
    })
}

fn nearest(key: &str, valid: &[&str]) -> String {
    let best = valid
        .iter()
        .map(|v| (strsim::levenshtein(key, v), *v))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((d, v)) if d <= key.len().max(3) / 2 + 1 => format!(" (did you mean `{v}`?)"),
        _ => format!(" (valid keys: {})", valid.join(", ")),
    }
}

fn check_keys(
    path: &Path,
    map: &serde_yaml_ng::Mapping,
    prefix: &str,
    valid: &[&str],
) -> Result<(), SessionError> {
    for (k, v) in map {
        let Some(k) = k.as_str() else {
            return Err(SessionError::Invalid {
                path: path.to_owned(),
                key: prefix.trim_end_matches('.').to_owned(),
                msg: "keys must be strings".into(),
            });
        };
        let full = format!("{prefix}{k}");
        if prefix.is_empty() && k == "max_thinking_tokens" {
            return Err(SessionError::UnknownKey {
                path: path.to_owned(),
                key: full,
                hint: " (legacy key: it moved to `debug.max_thinking_tokens`)".into(),
            });
        }
        if !valid.contains(&k) {
            return Err(SessionError::UnknownKey {
                path: path.to_owned(),
                key: full,
                hint: nearest(k, valid),
            });
        }
        if let Some(inner) = nested_keys(k).filter(|_| prefix.is_empty()) {
            match v {
                Value::Mapping(m) => check_keys(path, m, &format!("{k}."), inner)?,
                Value::Sequence(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Value::Mapping(m) = item {
                            check_keys(path, m, &format!("{k}[{i}]."), inner)?;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl Session {
    /// Loads and validates the session file at `path`.
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        // A path from an untrusted cassette may name a device (`/dev/zero`):
        // reading it would never end. Only regular files are sessions.
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(SessionError::Read {
                path: path.to_owned(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
            path: path.to_owned(),
            source,
        })?;
        Session::parse(&text, path)
    }

    /// Parses session YAML `text` (`path` only names the file in errors).
    pub fn parse(text: &str, path: &Path) -> Result<Session, SessionError> {
        let value: Value = serde_yaml_ng::from_str(text).map_err(|e| SessionError::Parse {
            path: path.to_owned(),
            msg: e.to_string(),
        })?;
        let value = match value {
            // An empty file is an empty session.
            Value::Null => return Ok(Session::default()),
            Value::Mapping(m) => {
                check_keys(path, &m, "", TOP_KEYS)?;
                Value::Mapping(m)
            }
            _ => {
                return Err(SessionError::Parse {
                    path: path.to_owned(),
                    msg: "a session must be a YAML mapping".into(),
                });
            }
        };
        let mut session: Session =
            serde_yaml_ng::from_value(value).map_err(|e| SessionError::Parse {
                path: path.to_owned(),
                msg: e.to_string(),
            })?;
        if session.effort == Some(Effort::Extra) {
            session.effort = Some(Effort::Xhigh);
        }
        if session.agent_max_turns == Some(0) {
            return Err(SessionError::Invalid {
                path: path.to_owned(),
                key: "agent_max_turns".into(),
                msg: "must be a positive integer".into(),
            });
        }
        Ok(session)
    }

    /// Declared skill-source directories, as authored, in upstream's
    /// concatenation order: `skills.local`, `plugins.local_plugins`,
    /// `plugins.remote_plugins`, `plugins.local_marketplaces` (git-URL
    /// marketplaces are never hashed).
    pub fn skill_sources(&self) -> Vec<&str> {
        self.skills
            .local
            .iter()
            .chain(&self.plugins.local_plugins)
            .chain(&self.plugins.remote_plugins)
            .chain(&self.plugins.local_marketplaces)
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    /// docs/session-format.md documents every key the loader accepts: a
    /// new key without its documentation fails here.
    #[test]
    fn every_key_is_documented() {
        let doc = include_str!("../../docs/session-format.md");
        let mut missing = Vec::new();
        for top in TOP_KEYS {
            if !doc.contains(&format!("`{top}`")) {
                missing.push((*top).to_owned());
            }
            for nested in nested_keys(top).unwrap_or_default() {
                if !doc.contains(&format!("`{nested}")) {
                    missing.push(format!("{top}.{nested}"));
                }
            }
        }
        assert!(missing.is_empty(), "undocumented session keys: {missing:?}");
    }

    use super::*;

    #[test]
    fn unknown_key_names_the_nearest_valid_key() {
        let e = Session::parse("plugins:\n  local_plugin: [a]\n", Path::new("s.yaml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "session `s.yaml`: unknown key `plugins.local_plugin` (did you mean `local_plugins`?)"
        );
        let e = Session::parse("modle: x\n", Path::new("s.yaml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "session `s.yaml`: unknown key `modle` (did you mean `model`?)"
        );
        let e =
            Session::parse("folders:\n  - {from: a, mdoe: r}\n", Path::new("s.yaml")).unwrap_err();
        assert!(
            e.to_string()
                .contains("`folders[0].mdoe` (did you mean `mode`?)"),
            "{e}"
        );
        let e = Session::parse("max_thinking_tokens: 5\n", Path::new("s.yaml")).unwrap_err();
        assert!(e.to_string().contains("debug.max_thinking_tokens"), "{e}");
    }

    #[test]
    fn every_key_optional_and_defaults() {
        let s = Session::parse("", Path::new("s.yaml")).unwrap();
        assert_eq!(s, Session::default());
        let s = Session::parse(
            "effort: extra\nfolders:\n  - from: ../x\n",
            Path::new("s.yaml"),
        )
        .unwrap();
        assert_eq!(s.effort, Some(Effort::Xhigh));
        assert_eq!(s.folders[0].mode, FolderMode::Rw);
        assert!(Session::parse("effort: huge\n", Path::new("s.yaml")).is_err());
    }

    #[test]
    fn loads_the_upstream_example_sessions() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/examples/sessions");
        for f in std::fs::read_dir(dir).unwrap() {
            let p = f.unwrap().path();
            Session::load(&p).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
