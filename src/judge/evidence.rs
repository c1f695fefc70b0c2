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

use serde_json::Value;

use super::{Baseline, Spec};
use crate::assert::glob::GlobList;
use crate::cassette::{BodyEncoding, Cassette, ManifestEntry};
use crate::evidence::RunRecord;
use crate::mask::{Normalizer, Roots};
use crate::verify::detect::{DetectorSet, Surface};

/// Per-section and whole-document caps (characters), each cut marked so the
/// judge never reads a cut as absence.
const SECTION_CAP: usize = 128 * 1024;
const DOCUMENT_CAP: usize = 256 * 1024;

/// The judged document.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub document: String,
    /// `sha256:<hex>`: the frozen verdict's evidence key — of `document`, or
    /// for a baseline trajectory of the document over its masked trace.
    pub digest: String,
    /// A baseline's key as reel froze it before the trace was masked (over
    /// `document` as sent): a verdict frozen then over these very bytes
    /// still holds. `None` for every other judged document.
    pub unmasked_digest: Option<String>,
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
    Ok(Evidence {
        document,
        digest,
        unmasked_digest: None,
    })
}

/// The document of a `baseline_transcript` assertion: the first-party
/// baseline grader's whole prompt over the graded turn's trace, byte-exact
/// (what the first-party runner would send). Its digest is the same prompt
/// over the masked trace — a rerun's new session id, UUIDs, times, durations
/// and run directories are not a changed trajectory — and also covers every
/// byte of the baseline file (the prompt shows only 12 + 12 lines of a long
/// one), so an edited baseline needs regrade.
pub fn derive_baseline(
    criterion: &str,
    baseline: &Baseline,
    trace: &GradedTrace,
) -> Result<Evidence, Refusal> {
    refuse_secrets(
        "NEW trajectory",
        &super::baseline::render_trace(&trace.lines),
    )?;
    refuse_secrets(
        &format!("baseline `{}`", baseline.file),
        &super::baseline::render_trace(&baseline.lines),
    )?;
    let keyed = |prompt: &str| digest(&format!("{prompt}\n\0baseline {}", digest(&baseline.text)));
    let document = super::baseline::prompt(criterion, &baseline.lines, &trace.lines);
    let masked = super::baseline::prompt(criterion, &baseline.lines, &trace.masked);
    Ok(Evidence {
        digest: keyed(&masked),
        unmasked_digest: Some(keyed(&document)),
        document,
    })
}

/// The graded turn's trace: as recorded (what the judge is shown) and as the
/// one masker writes it (what its verdict is keyed by).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GradedTrace {
    pub lines: Vec<Value>,
    /// `lines` through [`crate::mask::Normalizer`]: the run roots the
    /// recording states as `{{cwd}}`, `{{config}}`, …; the session id; tool,
    /// message, request and agent ids and UUIDs numbered by first appearance;
    /// timestamps and the values of duration keys as constants. The built-in
    /// masks only: `reel.toml`'s would make a frozen key depend on where
    /// reel runs.
    pub masked: Vec<Value>,
}

impl GradedTrace {
    /// `lines` of a run whose directories `roots` states, masked.
    pub fn new(lines: Vec<Value>, roots: Roots) -> GradedTrace {
        let session = (lines.iter())
            .find_map(|l| l.get("session_id").and_then(Value::as_str))
            .map(str::to_owned);
        let mut norm = Normalizer::new(roots, session.as_deref());
        let masked = lines.iter().map(|l| norm.value(l)).collect();
        GradedTrace { lines, masked }
    }
}

/// The graded turn's trace of `cassette` ([`graded_turn_lines`]), masked
/// with the run roots its events state.
pub fn graded_turn_trace(cassette: &Cassette) -> GradedTrace {
    GradedTrace::new(
        graded_turn_lines(cassette),
        Roots::stated(cassette.events()),
    )
}

/// The stream-json lines of the graded turn in `cassette`, as `claude -p
/// --output-format stream-json --verbose` (the first-party runner's agent)
/// prints them: its `events` from the last turn's mark (`reelTurns`, a
/// multi-turn recording) or all of them, each parsed (a line that is not JSON
/// is left out, as the first-party trace holds parsed lines only), without
/// the lines only reel's way of running the agent adds (`print_mode_line`).
pub fn graded_turn_lines(cassette: &Cassette) -> Vec<Value> {
    // The last mark's start; `replay::turns` owns the marks but sits above
    // the judge, so the one field is read here.
    let start = (cassette.doc.get("reelTurns"))
        .and_then(|t| t.get("turns"))
        .and_then(Value::as_array)
        .and_then(|marks| marks.last())
        .and_then(|m| m.get("eventStart"))
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    (cassette.events().skip(start))
        .filter_map(|line| serde_json::from_str(&line).ok())
        .filter(print_mode_line)
        .collect()
}

/// False for a line the first-party runner's agent never prints: reel drives
/// Claude Code over the SDK control protocol (`--input-format stream-json`,
/// `--permission-prompt-tool stdio`) with `--include-partial-messages`, so
/// its output also holds `control_*` lines, `stream_event`s and the
/// `system`/`status` `requesting` lines Claude Code 2.1.332 emits only with
/// partial messages on. Everything else (`system` `init`, `assistant`,
/// `user`, `result`, other `system` lines) is printed in both modes.
fn print_mode_line(line: &Value) -> bool {
    let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
    let requesting = kind == "system"
        && line.get("subtype").and_then(Value::as_str) == Some("status")
        && line.get("status").and_then(Value::as_str) == Some("requesting");
    !(requesting || kind == "stream_event" || kind == "keep_alive" || kind.starts_with("control_"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(files: &[&str]) -> Spec {
        Spec {
            rubric: vec!["says Friday".into()],
            need: 1,
            judge_model: None,
            include_subagent_text: false,
            include_fork_results: false,
            evidence_files: files.iter().map(|f| f.to_string()).collect(),
            baseline: None,
        }
    }

    fn entry(path: &str, body: Option<&str>, encoding: Option<BodyEncoding>) -> ManifestEntry {
        serde_json::from_value(serde_json::json!({
            "path": path, "bytes": 10, "sha256": "ab",
            "body": body, "encoding": encoding,
        }))
        .unwrap()
    }

    fn run(answer: &str) -> RunRecord {
        RunRecord {
            result_text: Some(answer.into()),
            transcript: "Writing.".into(),
            ..RunRecord::default()
        }
    }

    #[test]
    fn the_trace_keeps_the_lines_print_mode_prints() {
        use serde_json::json;
        let lines = [
            json!({"type": "control_response", "response": {"subtype": "success"}}),
            json!({"type": "system", "subtype": "init"}),
            json!({"type": "system", "subtype": "status", "status": "requesting"}),
            json!({"type": "system", "subtype": "status", "status": "compacting"}),
            json!({"type": "stream_event", "event": {"type": "message_start"}}),
            json!({"type": "assistant", "message": {"content": []}}),
            json!({"type": "control_request", "request": {"subtype": "can_use_tool"}}),
            json!({"type": "user", "message": {"content": []}}),
            json!({"type": "keep_alive"}),
            json!({"type": "result", "subtype": "success"}),
        ];
        let kept: Vec<String> = (lines.iter())
            .filter(|l| print_mode_line(l))
            .map(|l| format!("{}/{}", l["type"], l["status"]))
            .collect();
        assert_eq!(
            kept,
            [
                "\"system\"/null",
                "\"system\"/\"compacting\"",
                "\"assistant\"/null",
                "\"user\"/null",
                "\"result\"/null"
            ]
        );
    }

    #[test]
    fn the_document_holds_the_answer_transcript_and_selected_files() {
        let files = [
            entry("outputs/a.md", Some("Friday"), None),
            entry("x.md", Some("no"), None),
        ];
        let ev = derive(&spec(&["outputs/*.md"]), &run("Done."), &files).unwrap();
        assert!(
            ev.document.contains("### Final answer\nDone."),
            "{}",
            ev.document
        );
        assert!(ev.document.contains("### File: outputs/a.md\nFriday"));
        assert!(!ev.document.contains("x.md"));
        assert_eq!(ev.digest, digest(&ev.document));
        let other = derive(&spec(&["outputs/*.md"]), &run("Done!"), &files).unwrap();
        assert_ne!(other.digest, ev.digest);
    }

    #[test]
    fn what_the_scrubber_cannot_vouch_for_is_refused() {
        let key = format!("AKIA{}", "Q7RZ4XKJ2M5N3P6L");
        let e = derive(&spec(&[]), &run(&format!("key {key}")), &[]).unwrap_err();
        assert!(matches!(e, Refusal::Secret { .. }), "{e}");
        let body_less = [entry("outputs/a.pdf", None, None)];
        let e = derive(&spec(&["outputs/*"]), &run("ok"), &body_less).unwrap_err();
        assert_eq!(
            e,
            Refusal::Unvouched {
                path: "outputs/a.pdf".into(),
                why: "body not inlined"
            }
        );
        let binary = [entry(
            "outputs/a.bin",
            Some("AAEC"),
            Some(BodyEncoding::Base64),
        )];
        let e = derive(&spec(&["outputs/*"]), &run("ok"), &binary).unwrap_err();
        assert!(e.to_string().contains("binary"), "{e}");
    }

    #[test]
    fn a_long_section_is_cut_with_a_marker() {
        let long = "x".repeat(SECTION_CAP + 10);
        let ev = derive(&spec(&[]), &run(&long), &[]).unwrap();
        assert!(ev.document.contains("10 characters cut"), "cut marker");
    }
}
