//! TEMPORARY SHIM — the cassette load pipeline of spec/replay.md §2.3 until the
//! foundation helper's `crate::cassette` loader lands on `main`. Replace the
//! body of [`load_cassette`] with a call to that loader (and delete the rest of
//! this file); every replay path loads through this one function.
//!
//! It implements only what replay's exit codes depend on: JSON parse, the
//! loose shape check, the version floor, the hash-format invariant and strict
//! assertion validation (through `crate::assert::catalog::validate`, tolerated
//! with a warning on a future cassette).

use std::path::Path;

use serde_json::{Map, Value};

use crate::assert::catalog;
use crate::cassette::{
    CASSETTE_VERSION, Cassette, HASH_FORMAT_EPOCH, HASH_FORMAT_JCS1, MIN_SUPPORTED_CASSETTE_VERSION,
};

/// Loads and validates one cassette. The error is the message printed after
/// `replay: <file>: ` (cowork-harness wording).
pub fn load_cassette(path: &Path) -> Result<Cassette, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("unreadable / invalid cassette JSON: {e}"))?;
    let doc: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("unreadable / invalid cassette JSON: {e}"))?;
    from_value(path, doc)
}

/// The same pipeline over an already-parsed document.
pub fn from_value(path: &Path, doc: Value) -> Result<Cassette, String> {
    let Value::Object(mut doc) = doc else {
        return Err("invalid cassette shape: (root): expected an object".into());
    };
    shape_check(&doc)?;
    // Normalise: a missing `scenario.assert` is `[]`.
    if let Some(Value::Object(s)) = doc.get_mut("scenario") {
        if !s.contains_key("assert") {
            s.insert("assert".into(), Value::Array(Vec::new()));
        }
    }
    let version = doc
        .get("cassetteVersion")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if version < MIN_SUPPORTED_CASSETTE_VERSION {
        return Err(format!(
            "recorded at v{version} is older than the minimum supported version \
             v{MIN_SUPPORTED_CASSETTE_VERSION} — re-record"
        ));
    }
    if let Some(fp) = doc.get("fingerprint").and_then(Value::as_object) {
        let hf = fp.get("hashFormat").and_then(Value::as_str);
        if version == HASH_FORMAT_EPOCH && hf != Some(HASH_FORMAT_JCS1) {
            return Err(format!(
                "stamped v{version} but its fingerprint carries hashFormat {} (expected \"{HASH_FORMAT_JCS1}\") — \
                 the cassette was hand-edited or written by a broken tool; re-record or run `reel rehash`",
                hf.map(|h| format!("\"{h}\""))
                    .unwrap_or_else(|| "(absent)".into())
            ));
        }
        if version < HASH_FORMAT_EPOCH && hf.is_some() {
            return Err(format!(
                "stamped v{version} but its fingerprint carries hashFormat \"{}\" (only v{HASH_FORMAT_EPOCH}+ may) — re-record",
                hf.unwrap_or_default()
            ));
        }
    }
    let mut load_warnings = Vec::new();
    let mut bad = Vec::new();
    if let Some(items) = doc
        .get("scenario")
        .and_then(|s| s.get("assert"))
        .and_then(Value::as_array)
    {
        for (i, item) in items.iter().enumerate() {
            if let Err(e) = catalog::validate(item) {
                bad.push(format!("scenario.assert[{i}]: {e}"));
            }
        }
    }
    if !bad.is_empty() {
        if version > CASSETTE_VERSION {
            for b in bad {
                load_warnings.push(format!(
                    "::warning:: [cassette] unrecognized assertion (tolerated on a v{version} cassette): {b}"
                ));
            }
        } else {
            return Err(format!(
                "contains unrecognized assertion(s) — they would silently drop from replay: {}",
                bad.join("; ")
            ));
        }
    }
    Ok(Cassette {
        path: path.to_path_buf(),
        doc,
        version,
        load_warnings,
    })
}

fn shape_check(doc: &Map<String, Value>) -> Result<(), String> {
    let mut problems = Vec::new();
    match doc.get("events") {
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
        _ => problems.push("events: expected an array of strings".to_string()),
    }
    match doc.get("scenario") {
        Some(Value::Object(s)) => {
            if !s.get("prompt").is_some_and(Value::is_string) {
                problems.push("scenario.prompt: expected a string".into());
            }
            if !s.get("session").is_some_and(Value::is_string) {
                problems.push("scenario.session: expected a string".into());
            }
            if s.get("assert").is_some_and(|a| !a.is_array()) {
                problems.push("scenario.assert: expected an array".into());
            }
        }
        _ => problems.push("scenario: expected an object".into()),
    }
    if let Some(fp) = doc.get("fingerprint") {
        match fp.as_object() {
            None => problems.push("fingerprint: expected an object".into()),
            Some(fp) => {
                for k in ["skillHash", "hashFormat"] {
                    if fp.get(k).is_some_and(|v| !v.is_string()) {
                        problems.push(format!("fingerprint.{k}: expected a string"));
                    }
                }
            }
        }
    }
    if doc
        .get("sessionFingerprint")
        .is_some_and(|v| !v.is_string())
    {
        problems.push("sessionFingerprint: expected a string".into());
    }
    if let Some(m) = doc.get("folderPrefixMap") {
        let ok = m.as_array().is_some_and(|a| {
            a.iter().all(|e| {
                e.get("from").is_some_and(Value::is_string)
                    && e.get("mount").is_some_and(Value::is_string)
            })
        });
        if !ok {
            problems
                .push("folderPrefixMap: expected an array of {from: string, mount: string}".into());
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("invalid cassette shape: {}", problems.join("; ")))
    }
}
