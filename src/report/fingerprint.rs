//! Rendering of `reel fingerprint`: the text report and the JSON document
//! (both stdout, schema `schema/fingerprint-output.json`). The digests come
//! from [`crate::fingerprint`]; nothing is computed here.

use serde::Serialize;

use crate::cassette::FingerprintRecord;
use crate::fingerprint::{self, EntryKind, HashFormat, Snapshot};

/// One hashed entry of `--files`.
#[derive(Debug, Serialize)]
struct FileRow {
    path: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    root: String,
}

/// The JSON document (schema: `schema/fingerprint-output.json`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    tool: &'static str,
    command: &'static str,
    fingerprint: &'a FingerprintRecord,
    read_errors: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    files: Option<Vec<FileRow>>,
}

fn file_rows(snap: &Snapshot, format: HashFormat, sources: &[String]) -> Vec<FileRow> {
    snap.main()
        .map(|e| {
            let root = sources.get(e.root).cloned().unwrap_or_default();
            match &e.kind {
                EntryKind::Dir => FileRow {
                    path: e.path.clone(),
                    kind: "dir",
                    sha256: None,
                    target: None,
                    root,
                },
                EntryKind::Link { target } => FileRow {
                    path: e.path.clone(),
                    kind: "link",
                    sha256: None,
                    target: Some(target.clone()),
                    root,
                },
                EntryKind::File { digests, .. } => FileRow {
                    path: e.path.clone(),
                    kind: "file",
                    sha256: Some(match format {
                        HashFormat::Legacy => digests.legacy.clone(),
                        HashFormat::Jcs1 => digests.jcs1.clone(),
                    }),
                    target: None,
                    root,
                },
            }
        })
        .collect()
}

/// The JSON document, one line (no newline).
pub fn json(
    fp: &FingerprintRecord,
    snap: &Snapshot,
    format: HashFormat,
    files: bool,
    sources: &[String],
) -> serde_json::Result<String> {
    serde_json::to_string(&Output {
        tool: "reel",
        command: "fingerprint",
        fingerprint: fp,
        read_errors: &snap.read_errors,
        files: files.then(|| file_rows(snap, format, sources)),
    })
}

/// The text report (stdout): one `key value` line per digest, then the
/// entries with `--files`.
pub fn text(
    fp: &FingerprintRecord,
    snap: &Snapshot,
    format: HashFormat,
    files: bool,
    sources: &[String],
) -> String {
    let mut s = String::new();
    let format_name = if format == HashFormat::Jcs1 {
        "jcs1"
    } else {
        "legacy (pre-v12)"
    };
    line(&mut s, "format", format_name);
    line(&mut s, "mode", fp.mode.as_deref().unwrap_or("raw"));
    let skill_hash = fp.skill_hash.as_deref();
    line(
        &mut s,
        "skillHash",
        skill_hash.unwrap_or("(none: unreadable files)"),
    );
    if let Some(c) = &fp.content_sig {
        line(&mut s, "contentSig", c);
    }
    for (i, src) in sources.iter().enumerate() {
        line(
            &mut s,
            if i == 0 { "sources" } else { "" },
            if src.is_empty() { "." } else { src },
        );
    }
    scope_lines(&mut s, fp, snap);
    for e in &snap.read_errors {
        line(&mut s, "readError", e);
    }
    if files {
        s.push('\n');
        file_lines(&mut s, snap, format, sources);
    }
    s
}

/// One `key value` line, the key in a column of 12.
fn line(s: &mut String, k: &str, v: &str) {
    s.push_str(&format!("{k:<12}{v}\n"));
}

/// The optional parts of the digest: skill and agent scope, the shared
/// hash, the per-file manifest.
fn scope_lines(s: &mut String, fp: &FingerprintRecord, snap: &Snapshot) {
    if let Some(scope) = &fp.skill_scope {
        line(s, "skillScope", &scope.join(", "));
        if !snap.scoped {
            let missed = snap.missed_skills.join(", ");
            line(
                s,
                "",
                &format!("(not applied: {missed} not found — whole tree hashed)"),
            );
        }
    }
    if let Some(a) = &fp.agent_scope {
        line(s, "agentScope", a);
    }
    if let Some(h) = &fp.shared_hash {
        line(s, "sharedHash", h);
    }
    match (&fp.file_sigs, fp.file_sigs_omitted) {
        (Some(sigs), _) => line(s, "fileSigs", &format!("{} entries", sigs.len())),
        (None, Some(true)) => line(
            s,
            "fileSigs",
            &format!(
                "omitted (more than {} entries)",
                fingerprint::MANIFEST_MAX_FILES
            ),
        ),
        _ => {}
    }
}

/// `--files`: one line per entry, its digest's head (or link target).
fn file_lines(s: &mut String, snap: &Snapshot, format: HashFormat, sources: &[String]) {
    for row in file_rows(snap, format, sources) {
        let digest = match (&row.sha256, &row.target) {
            (Some(h), _) => h[..12.min(h.len())].to_owned(),
            (None, Some(t)) => format!("-> {t:?}"),
            _ => "dir".to_owned(),
        };
        let root = if sources.len() > 1 {
            format!("[{}] ", row.root)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "  {:<5} {digest:<14} {root}{:?}\n",
            row.kind, row.path
        ));
    }
}
