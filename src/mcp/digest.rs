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
    let (servers, files) = servers_and_files(config, enabled)?;
    let doc = json!({"servers": Value::Object(servers), "files": files});
    let text = crate::js::json::jcs1_serde(&doc).map_err(|e| e.to_string())?;
    Ok(format!("sha256:{}", hex::encode(Sha256::digest(text))))
}

/// A server file's path relative to the config's directory → its content hash.
type FileSigs = BTreeMap<String, String>;

/// The servers a run gets and their files.
fn servers_and_files(
    config: &Path,
    enabled: &[String],
) -> Result<(serde_json::Map<String, Value>, FileSigs), String> {
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
    Ok((servers, files))
}

/// What `reelMcp.configFiles` records: each server file's content hash,
/// keyed by a hash of its path (a server may name a file anywhere, a home
/// directory included, and a cassette must not spell that path). A drift
/// names a changed file from the current side, where the path is known.
pub fn config_files(config: &Path, enabled: &[String]) -> Result<BTreeMap<String, String>, String> {
    let (_, files) = servers_and_files(config, enabled)?;
    Ok(files
        .into_iter()
        .map(|(path, sig)| (path_key(&path), sig))
        .collect())
}

/// The recorded key of a server file's relative path.
fn path_key(path: &str) -> String {
    hex::encode(&Sha256::digest(path.as_bytes())[..8])
}

/// The files of `current` (relative path → hash) that differ from the
/// recorded (path key → hash): changed or new, by name; and how many
/// recorded ones are gone.
fn changed_files(
    recorded: &BTreeMap<String, String>,
    current: &BTreeMap<String, String>,
) -> (Vec<String>, usize) {
    let mut changed = Vec::new();
    let mut seen = 0;
    for (path, sig) in current {
        match recorded.get(&path_key(path)) {
            Some(r) if r == sig => seen += 1,
            Some(_) => {
                seen += 1;
                changed.push(format!("{path} changed"));
            }
            None => changed.push(format!("{path} added")),
        }
    }
    (changed, recorded.len().saturating_sub(seen))
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
/// unchanged). With the recorded per-file hashes (`files`, reel ≥ the
/// recording of `configFiles`) it names the server files that changed,
/// appeared or went; else it says the config or a server's files changed.
pub fn drift(
    recorded: &str,
    files: Option<&BTreeMap<String, String>>,
    config: Option<&Path>,
    enabled: &[String],
) -> Option<String> {
    let current = match config {
        Some(c) => config_digest(c, enabled).unwrap_or_else(|e| format!("unreadable: {e}")),
        None => "no MCP config".into(),
    };
    if current == recorded {
        return None;
    }
    let config_name = config.map_or(String::new(), |c| format!(" `{}`", c.display()));
    let named = match (files, config) {
        (Some(files), Some(c)) => servers_and_files(c, enabled)
            .ok()
            .map(|(_, now)| changed_files(files, &now)),
        _ => None,
    };
    Some(match named {
        Some((changed, gone)) if !changed.is_empty() || gone > 0 => {
            let mut what = changed;
            if gone > 0 {
                what.push(format!("{gone} recorded file(s) gone"));
            }
            format!(
                "MCP configuration differs from the recording: a server's files changed since \
                 record ({}, beside the session's MCP config{config_name}) — re-record",
                what.join(", ")
            )
        }
        Some(_) => format!(
            "MCP configuration differs from the recording: the session's MCP config{config_name} \
             changed its servers since record — re-record"
        ),
        None => format!(
            "MCP configuration differs from the recording (the session's MCP config{config_name} \
             or a server's files changed since record) — re-record"
        ),
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
    let traffic = super::Traffic::from_doc(&cassette.doc)?;
    let recorded = traffic.config_digest?;
    let files = (!traffic.config_files.is_empty()).then_some(&traffic.config_files);
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
            files,
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
        assert!(drift(&digest(&a), None, Some(&b.join("mcp.json")), &[]).is_some());
        assert!(drift(&digest(&a), None, Some(&a.join("mcp.json")), &[]).is_none());
        // With the recorded per-file hashes the drift names the file (and
        // the record spells no path).
        let files = config_files(&a.join("mcp.json"), &[]).unwrap();
        assert!(files.keys().all(|k| k.len() == 16 && !k.contains('/')));
        let d = drift(&digest(&a), Some(&files), Some(&b.join("mcp.json")), &[]).unwrap();
        assert!(d.contains("(srv/data.json changed, beside"), "{d}");
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
