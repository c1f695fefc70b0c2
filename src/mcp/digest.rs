//! The MCP configuration's digest, for staleness: the servers a run gets
//! (the config narrowed to `mcp.enabled`) and the files they name. A
//! server's `command` or argument that names an existing file (relative to
//! the config's directory, as the agent resolves it) brings in that file and
//! every other file of its directory (its data, typically), not recursing.
//! Paths enter relative to the config's directory, so a checkout elsewhere
//! hashes the same. cowork-harness's `sessionFingerprint` hashes only the
//! config's path (and stays byte-exact); this digest is reel's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// At most this many files of one directory are hashed (a server beside a
/// large tree must not turn a staleness check into a walk of it).
const MAX_FILES_PER_DIR: usize = 256;

/// `sha256:<hex>` of the servers and their files.
pub fn config_digest(config: &Path, enabled: &[String]) -> Result<String, String> {
    let mut servers = super::read_servers(config)?;
    if !enabled.is_empty() {
        servers.retain(|name, _| enabled.contains(name));
    }
    let base = config.parent().unwrap_or(Path::new("."));
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
    let base = base.as_path();
    let mut files = BTreeMap::new();
    for entry in servers.values() {
        for dir in named_dirs(entry, base) {
            hash_dir(&dir, base, &mut files);
        }
    }
    let doc = json!({"servers": Value::Object(servers), "files": files});
    let text = crate::js::json::jcs1_serde(&doc).map_err(|e| e.to_string())?;
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(text))))
}

/// The directories of the files a server entry names.
fn named_dirs(entry: &Value, base: &Path) -> Vec<PathBuf> {
    let words = entry
        .get("command")
        .into_iter()
        .chain(
            entry
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .filter_map(Value::as_str)
        .filter(|s| s.contains('/'));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for word in words {
        let full = base.join(word);
        if let Some(dir) = full.is_file().then(|| full.parent()).flatten()
            && !dirs.iter().any(|d| d == dir)
        {
            dirs.push(dir.to_owned());
        }
    }
    dirs
}

/// Adds the regular files of `dir` (sorted, capped) as relative path →
/// content hash.
fn hash_dir(dir: &Path, base: &Path, files: &mut BTreeMap<String, String>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    for path in paths.into_iter().take(MAX_FILES_PER_DIR) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let rel = crate::paths::relative_lexical(base, &path);
        files.insert(
            crate::paths::forward_slashes(&rel.to_string_lossy()).into_owned(),
            hex::encode(Sha256::digest(&bytes)),
        );
    }
}

/// Why a recording's MCP configuration is stale against `config` (`None`:
/// unchanged).
pub fn drift(recorded: &str, config: Option<&Path>, enabled: &[String]) -> Option<String> {
    let current = match config {
        Some(c) => config_digest(c, enabled).unwrap_or_else(|e| format!("unreadable: {e}")),
        None => "no MCP config".into(),
    };
    (current != recorded).then(|| {
        format!(
            "MCP configuration differs from the recording (the session's MCP config{} or a \
             server's files changed since record) — re-record",
            config.map_or(String::new(), |c| format!(" `{}`", c.display()))
        )
    })
}

/// A cassette's recorded MCP configuration against the current session's
/// (`reelMcp.configDigest`): `None` when the recording holds no digest,
/// `Some(Err(why))` when the current session cannot be loaded,
/// `Some(Ok(drift))` otherwise. One check for `replay` (a warning) and
/// `verify-cassettes` (staleness).
pub fn cassette_drift(
    cassette: &crate::cassette::Cassette,
    session_override: Option<&Path>,
) -> Option<Result<Option<String>, String>> {
    let recorded = super::Traffic::from_doc(&cassette.doc).and_then(|t| t.config_digest)?;
    let keys = cassette
        .scenario()
        .get("session")
        .and_then(Value::as_str)
        .and_then(|s| {
            crate::fingerprint::resolve_session_path(s, Some(cassette.dir()), session_override)
        })
        .and_then(|p| crate::scenario::session_keys::load(Some(&p)).ok());
    Some(match keys {
        Some(keys) => Ok(drift(
            &recorded,
            keys.mcp_config.as_deref(),
            &keys.mcp_enabled,
        )),
        None => Err("could not load the current session file".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_the_servers_files_and_not_where_they_are() {
        let tmp = std::env::temp_dir().join(format!("reel-digest-{}", std::process::id()));
        let make = |root: &Path| {
            std::fs::create_dir_all(root.join("srv")).unwrap();
            std::fs::write(
                root.join("mcp.json"),
                r#"{"mcpServers":{"p":{"command":"python3","args":["./srv/s.py"]}}}"#,
            )
            .unwrap();
            std::fs::write(root.join("srv/s.py"), "print(1)").unwrap();
            std::fs::write(root.join("srv/data.json"), "{}").unwrap();
        };
        let (a, b) = (tmp.join("a"), tmp.join("b"));
        make(&a);
        make(&b);
        let digest = |root: &Path| config_digest(&root.join("mcp.json"), &[]).unwrap();
        assert_eq!(digest(&a), digest(&b), "relocatable");
        std::fs::write(b.join("srv/data.json"), "{\"x\":1}").unwrap();
        assert_ne!(
            digest(&a),
            digest(&b),
            "a data file beside the server counts"
        );
        assert!(drift(&digest(&a), Some(&b.join("mcp.json")), &[]).is_some());
        assert!(drift(&digest(&a), Some(&a.join("mcp.json")), &[]).is_none());
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
