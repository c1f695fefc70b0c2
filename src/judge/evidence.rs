//! What a judge reads (the judged document) and its digest, re-derived the
//! same way at record time, on replay and in `reel regrade`: the final
//! answer, the top-level transcript, opted-in sub-agent and fork outputs, and
//! the text bodies of the recorded files `evidence_files` selects — all read
//! from the cassette, which the recorder has already scrubbed.
//!
//! Privacy: the document goes to an outside model only when the scrubber can
//! vouch for it. A secret the detector table still finds, a selected file
//! with no inlined body (over the size cap, unreadable) or a binary one is a
//! refusal naming what and why, never a partial document sent anyway.

use sha2::{Digest, Sha256};

use super::Spec;
use crate::assert::glob::GlobList;
use crate::cassette::{BodyEncoding, ManifestEntry};
use crate::evidence::RunRecord;
use crate::verify::detect::{DetectorSet, Surface};

/// Per-section and whole-document caps (characters), each cut marked so the
/// judge never reads a cut as absence.
const SECTION_CAP: usize = 128 * 1024;
const DOCUMENT_CAP: usize = 256 * 1024;

/// The judged document.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub document: String,
    /// `sha256:<hex>` of `document`: the frozen verdict's evidence key.
    pub digest: String,
}

/// Why evidence cannot be sent to a judge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "the judged document still holds a {kind} the scrubber did not remove ({section}); \
         reel sends a judge only what the scrubber vouches for — redact it \
         (`.cowork-redact.json`) and re-record"
    )]
    Secret { kind: &'static str, section: String },
    #[error(
        "evidence file `{path}` has no recorded text body ({why}); the scrubber cannot vouch \
         for it — narrow `evidence_files` or raise the capture cap"
    )]
    Unvouched { path: String, why: &'static str },
}

/// The document `spec` judges in `run` with the recorded `artifacts`.
pub fn derive(
    spec: &Spec,
    run: &RunRecord,
    artifacts: &[ManifestEntry],
) -> Result<Evidence, Refusal> {
    let mut sections: Vec<(String, String)> = Vec::new();
    if let Some(text) = run.result_text.as_deref().filter(|t| !t.is_empty()) {
        sections.push(("Final answer".into(), text.to_owned()));
    }
    sections.push(("Transcript".into(), run.transcript.clone()));
    for (i, sub) in run.subagents.iter().enumerate() {
        let fork = sub.dispatch_agent_type == "fork";
        let wanted = if fork {
            spec.include_fork_results
        } else {
            spec.include_subagent_text
        };
        if let (true, Some(out)) = (wanted, sub.output.as_deref()) {
            let label = sub
                .description
                .clone()
                .unwrap_or_else(|| format!("#{}", i + 1));
            let kind = if fork {
                "Fork result"
            } else {
                "Sub-agent output"
            };
            sections.push((format!("{kind}: {label}"), out.to_owned()));
        }
    }
    if !spec.evidence_files.is_empty() {
        let globs = GlobList::new(&spec.evidence_files);
        for entry in artifacts.iter().filter(|e| globs.is_match(&e.path)) {
            sections.push((format!("File: {}", entry.path), file_text(entry)?));
        }
    }
    let mut document = String::new();
    for (title, text) in &sections {
        refuse_secrets(title, text)?;
        document.push_str(&format!("### {title}\n{}\n\n", cap(text, SECTION_CAP)));
    }
    let document = cap(document.trim_end(), DOCUMENT_CAP);
    let digest = digest(&document);
    Ok(Evidence { document, digest })
}

/// `sha256:<hex>` of `text`.
pub fn digest(text: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

fn file_text(entry: &ManifestEntry) -> Result<String, Refusal> {
    let refuse = |why| Refusal::Unvouched {
        path: entry.path.clone(),
        why,
    };
    match (&entry.body, entry.encoding) {
        (None, _) if entry.bytes == 0 && !entry.sha256.is_empty() => Ok(String::new()),
        (None, _) => Err(refuse("body not inlined")),
        (Some(_), Some(BodyEncoding::Base64)) => Err(refuse("binary")),
        (Some(body), _) => Ok(body.clone()),
    }
}

fn refuse_secrets(section: &str, text: &str) -> Result<(), Refusal> {
    let mut found = None;
    DetectorSet::global().find(text, Surface::SecretsOnly, |hit| {
        found.get_or_insert(hit.detector().kind);
    });
    match found {
        Some(kind) => Err(Refusal::Secret {
            kind,
            section: section.to_owned(),
        }),
        None => Ok(()),
    }
}

/// `text` cut to `max` characters with a marker saying how much was cut.
fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!(
            "{}\n…[{} characters cut for the judge's input budget; do not infer absence from this cut]",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}
