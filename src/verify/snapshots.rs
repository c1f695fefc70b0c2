//! `verify-cassettes` over a cassette's snapshots (docs/snapshots.md):
//! every checkpoint's ref must name a blob in the store that holds exactly
//! what the ref says, and the files inside are privacy-scanned as inline
//! artifact bodies are (text, zip entries, PDF parts; a binary is a
//! `binary` finding unless `--allow`ed).
//!
//! A missing or changed blob, or a malformed `reelCheckpoints`, is a
//! snapshot problem (exit 1, like a finding). Each distinct ref is checked
//! and scanned once.

use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::scan::{AllowList, Finding, scan_document};
use crate::snapshot::{Checkpoints, Ref, Store, restore};

/// A file larger than this is not read for the scan (it is named instead).
const SCAN_CAP: u64 = 64 << 20;

/// What the snapshots of one cassette gave.
#[derive(Debug, Default)]
pub struct Checked {
    /// Missing or changed blobs, a malformed key: each a failing problem.
    pub problems: Vec<String>,
    pub findings: Vec<Finding>,
    /// Files too large to scan.
    pub notes: Vec<String>,
}

/// Checks (and, with `privacy`, scans) the snapshots `doc` names; the store
/// is the one of the cassette at `path`.
pub fn check(path: &Path, doc: &Map<String, Value>, privacy: Option<&AllowList>) -> Checked {
    let mut out = Checked::default();
    let checkpoints = match Checkpoints::of(doc) {
        Ok(Some(c)) => c,
        Ok(None) => return out,
        Err(e) => {
            out.problems.push(e);
            return out;
        }
    };
    let store = match crate::project::ProjectConfig::discover_cwd() {
        Ok(config) => Store::for_cassette(path, &config),
        Err(e) => {
            out.problems
                .push(format!("cannot locate the snapshot store: {e}"));
            return out;
        }
    };
    let refs: BTreeSet<Ref> = checkpoints
        .checkpoints
        .iter()
        .filter_map(|c| c.parsed().ok())
        .collect();
    for reference in refs {
        if let Err(e) = store.check(&reference) {
            out.problems.push(format!(
                "{e} — restore the store (git lfs pull?) or re-record the cassette"
            ));
            continue;
        }
        if let Some(allow) = privacy {
            scan(&store, &reference, (allow, &inputs(doc)), &mut out);
        }
    }
    out
}

/// The run's inputs as staged, `(path, sha256)`: the pre-run baseline and
/// the manifest's input, read-only and fixture entries. The cassette keeps
/// their bodies out by design (they are the project's own files); a
/// snapshot file still holding exactly one of them is not scanned either.
fn inputs(doc: &Map<String, Value>) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    if let Some(Value::Object(hashes)) = doc.get("preRunHashes") {
        for (path, sha) in hashes {
            if let Some(sha) = sha.as_str() {
                out.insert((path.clone(), sha.to_owned()));
            }
        }
    }
    for a in doc
        .get("artifacts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let reason = a.get("truncationReason").and_then(Value::as_str);
        if matches!(reason, Some("input" | "readonly" | "fixture"))
            && let (Some(path), Some(sha)) = (
                a.get("path").and_then(Value::as_str),
                a.get("sha256").and_then(Value::as_str),
            )
        {
            out.insert((path.to_owned(), sha.to_owned()));
        }
    }
    out
}

/// The privacy scan of one snapshot's files, each as an artifact body
/// (a run input, unchanged, aside).
fn scan(
    store: &Store,
    reference: &Ref,
    (allow, inputs): (&AllowList, &BTreeSet<(String, String)>),
    out: &mut Checked,
) {
    use sha2::{Digest, Sha256};
    let prefix = format!("snapshot {reference} ");
    let mut findings = Vec::new();
    let over = restore::each_file(store, reference, SCAN_CAP, |f| {
        let sha = hex::encode(Sha256::digest(&f.bytes));
        if inputs.contains(&(f.path.clone(), sha)) {
            return;
        }
        let artifact = json!({
            "path": f.path,
            "bytes": f.bytes.len(),
            "body": base64::engine::general_purpose::STANDARD.encode(&f.bytes),
            "encoding": "base64",
        });
        let mut doc = Map::new();
        doc.insert("events".into(), json!([]));
        doc.insert("artifacts".into(), json!([artifact]));
        if let Ok(found) = scan_document(&doc, allow) {
            findings.extend(found.into_iter().map(|mut f| {
                f.location = format!("{prefix}{}", f.location);
                f
            }));
        }
    });
    match over {
        Ok(over) => out.notes.extend(over.into_iter().map(|p| {
            format!(
                "snapshot {reference}: `{p}` is over {SCAN_CAP} bytes and was not privacy-scanned"
            )
        })),
        Err(e) => out.problems.push(e.to_string()),
    }
    out.findings.extend(findings);
}
/// What `record` says of the snapshots it just named in `doc`: each secret
/// found in a snapshot file (the cassette's inline bodies are scrubbed, a
/// snapshot keeps the files as the run left them), so it is fixed before
/// `verify-cassettes` fails on it.
pub fn secret_warnings(path: &Path, doc: &Map<String, Value>) -> Vec<String> {
    let checked = check(path, doc, Some(&AllowList::default()));
    checked
        .findings
        .iter()
        .filter(|f| f.cls == super::detect::Class::Secret)
        .map(|f| {
            format!(
                "a snapshot holds a secret ({} at {}): the cassette's copy is scrubbed, the \
                 snapshot keeps the file as written; `verify-cassettes` fails on it — keep \
                 secrets out of the outputs, or set `[snapshots] record = false`",
                f.kind, f.location
            )
        })
        .collect()
}
