//! The recording view: verdict and run facts, the conversation turn by
//! turn, the files produced with previews, the assertions with their
//! evidence and verdict (replay's, through `diff::Outcome`), and the
//! timeline of tool durations.

use askama::Template;
use base64::Engine;
use serde_json::Value;

use super::conversation::{Conversation, Turn};
use super::conversation::{Node, Row};
use super::text::{bytes, thousands};
use super::timeline::{self, Chart};
use super::{Chrome, Clip, Options, RenderError};
use crate::cassette::LoadError;
use crate::cassette::{BodyEncoding, Cassette};
use crate::diff::Outcome;
use crate::replay::{self, ReplayOptions};
use std::path::Path;

/// Largest image inlined as a data URI.
const MAX_IMAGE: usize = 512 * 1024;

/// Everything the recording view shows (also the body of the rerun view).
pub struct RecordingView {
    pub file: String,
    pub scenario: String,
    pub verdict_pass: bool,
    pub facts: Vec<(String, String)>,
    pub conversation: Conversation,
    pub pages: Vec<TurnPage>,
    /// Turns left out of this report, with how to see them.
    pub omitted: Option<String>,
    pub files: Vec<FileView>,
    pub assertions: Vec<AssertionView>,
    pub spans: Option<Chart>,
    pub totals: Option<Chart>,
    /// The anchor id prefix of this view's sections (one page may hold several).
    pub anchor: String,
    /// The recording's checkpoints (docs/snapshots.md): `turn N at`, then
    /// the ref, sizes and whether the blob is stored.
    pub snapshots: Vec<(String, String)>,
}

/// A group of turns shown as one collapsible page.
pub struct TurnPage {
    pub label: String,
    pub open: bool,
    pub first: usize,
    pub end: usize,
}

/// One produced file.
pub struct FileView {
    pub path: String,
    pub size: String,
    pub sha256: String,
    pub preview: Preview,
    /// `pre-run input`, `truncated: size`, `symlink`, …
    pub notes: Vec<String>,
}

pub enum Preview {
    Text(Clip),
    Json(Clip),
    /// A `data:` URI (base64 of an image the cassette inlined).
    Image(String),
    /// Not inlined in the cassette, or not previewable: size and hash only.
    None(String),
}

/// One assertion and its verdict.
pub struct AssertionView {
    pub key: String,
    pub params: String,
    pub pass: bool,
    pub evidence: String,
    pub source: String,
}

#[derive(Template)]
#[template(path = "recording.html")]
struct Page<'a> {
    chrome: Chrome,
    rec: &'a RecordingView,
}

/// Each checkpoint of `cassette` as a label and its detail.
fn snapshots(cassette: &Cassette) -> Vec<(String, String)> {
    let Ok(Some(checkpoints)) = crate::snapshot::Checkpoints::of(&cassette.doc) else {
        return Vec::new();
    };
    let store = crate::snapshot::Store::of_cassette(&cassette.path);
    let at = |a: crate::snapshot::At| match a {
        crate::snapshot::At::TurnEnd => "turn end",
        crate::snapshot::At::RunEnd => "run end",
    };
    checkpoints
        .checkpoints
        .iter()
        .map(|c| {
            let stored = c.parsed().is_ok_and(|r| store.blob_path(&r).is_file());
            let label = format!("turn {} · {}", c.turn, at(c.at));
            let detail = format!(
                "{} · {} file(s), {} B ({} B stored){}",
                c.reference,
                c.files,
                c.content_bytes,
                c.blob_bytes,
                if stored {
                    ""
                } else {
                    " · missing from the store"
                }
            );
            (label, detail)
        })
        .collect()
}

/// What the view reads of the cassette itself, beside the replay.
struct Parts {
    conversation: Conversation,
    spans: Option<Chart>,
    totals: Option<Chart>,
    files: Vec<FileView>,
}

impl Parts {
    fn read(cassette: &Cassette, opts: &Options) -> Parts {
        let (conversation, (spans, totals, files)) = rayon::join(
            || Conversation::read(cassette, opts),
            || {
                let entries = cassette.timeline_entries();
                let entries = entries.as_deref().unwrap_or(&[]);
                let files = files(cassette, opts.body_cap);
                (timeline::spans(entries), timeline::totals(entries), files)
            },
        );
        Parts {
            conversation,
            spans,
            totals,
            files,
        }
    }
}

impl RecordingView {
    /// Reads `cassette` into the view: its replay (for the verdicts) beside
    /// one pass over the events (for the conversation).
    pub fn read(cassette: &Cassette, opts: &Options, anchor: &str) -> RecordingView {
        let (replayed, parts) = rayon::join(
            || {
                replay::replay_cassette(cassette, &ReplayOptions::default())
                    .map_err(|e| e.to_string())
            },
            || Parts::read(cassette, opts),
        );
        RecordingView::of(
            cassette,
            Outcome::of(cassette, replayed),
            parts,
            opts,
            anchor,
        )
    }

    fn of(
        cassette: &Cassette,
        outcome: Outcome,
        parts: Parts,
        opts: &Options,
        anchor: &str,
    ) -> RecordingView {
        let conversation = parts.conversation;
        RecordingView {
            file: cassette.path.display().to_string(),
            scenario: outcome.scenario.clone(),
            verdict_pass: outcome.verdict_pass,
            facts: facts(&outcome, &conversation),
            pages: pages(&conversation.turns, opts.page_size),
            omitted: omitted(cassette, &conversation, opts),
            files: parts.files,
            assertions: assertions(&outcome),
            spans: parts.spans,
            totals: parts.totals,
            conversation,
            anchor: anchor.to_owned(),
            snapshots: snapshots(cassette),
        }
    }

    /// The turns of one page.
    pub fn page_turns(&self, page: &TurnPage) -> &[Turn] {
        &self.conversation.turns[page.first..page.end]
    }

    pub fn failed_assertions(&self) -> usize {
        self.assertions.iter().filter(|a| !a.pass).count()
    }
}

/// The recording view of `cassette` as one HTML page.
pub fn render(cassette: &Cassette, opts: &Options) -> Result<String, RenderError> {
    page(&RecordingView::read(cassette, opts, "rec"))
}

/// The recording view of the cassette at `path`, loaded and replayed at
/// once: replay's own streaming load (which folds the events as it scans)
/// on one core, a lean load for the page on the other. Replaying the loaded
/// cassette instead would re-read every event after the load.
pub fn render_file(path: &Path, opts: &Options) -> Result<Result<String, RenderError>, LoadError> {
    let (replayed, cassette) = rayon::join(
        || replay::replay_file(path, &ReplayOptions::default()),
        || Cassette::load_lean(path),
    );
    let cassette = cassette?;
    let replayed = match replayed.error.clone() {
        Some(why) => Err(why),
        None => Ok(replayed),
    };
    let parts = Parts::read(&cassette, opts);
    let outcome = Outcome::of(&cassette, replayed);
    Ok(page(&RecordingView::of(
        &cassette, outcome, parts, opts, "rec",
    )))
}

fn page(rec: &RecordingView) -> Result<String, RenderError> {
    Page {
        chrome: Chrome::new(format!("reel report — {}", rec.scenario)),
        rec,
    }
    .render()
}

/// Which turns the window leaves out, and how to see them.
fn omitted(cassette: &Cassette, conversation: &Conversation, opts: &Options) -> Option<String> {
    let shown = conversation.turns.len();
    (shown < conversation.total_turns).then(|| {
        let first = conversation.turns.first().map_or(0, |t| t.number);
        format!(
            "This report shows turns {}–{} of {}. Turns outside that window are left out to keep \
             the page small; `reel report {} --from-turn N` shows the {} turns from turn N.",
            thousands(first as u64),
            thousands((first + shown).saturating_sub(1) as u64),
            thousands(conversation.total_turns as u64),
            cassette.path.display(),
            thousands(opts.max_turns as u64),
        )
    })
}

fn pages(turns: &[Turn], size: usize) -> Vec<TurnPage> {
    let size = size.max(1);
    (0..turns.len())
        .step_by(size)
        .enumerate()
        .map(|(i, first)| {
            let end = (first + size).min(turns.len());
            TurnPage {
                label: format!(
                    "turns {}–{}",
                    thousands(turns[first].number as u64),
                    thousands(turns[end - 1].number as u64)
                ),
                open: i == 0,
                first,
                end,
            }
        })
        .collect()
}

fn facts(r: &Outcome, c: &Conversation) -> Vec<(String, String)> {
    let mut out = vec![("turns".to_owned(), thousands(c.total_turns as u64))];
    // A multi-turn recording: how each user turn's assertions fared.
    let per_turn =
        replay::turns::tally_of((r.assertions.iter()).map(|a| (a.source.as_deref(), a.pass)));
    if let Some(line) = replay::turns::line_of(&per_turn) {
        out.push(("assertions per turn".to_owned(), line));
    }
    let show = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for key in [
        "result",
        "resultSubtype",
        "agentVersion",
        "models",
        "costUsd",
        "effectiveFidelity",
        "cassetteVersion",
    ] {
        if let Some(v) = r.meta.get(key) {
            out.push((key.to_owned(), show(v)));
        }
    }
    if let Some(u) = r.meta.get("usage").and_then(Value::as_object) {
        for (k, v) in u {
            if v.is_number() {
                out.push((k.clone(), show(v)));
            }
        }
    }
    out.push((
        "tool calls".to_owned(),
        thousands(c.total_tool_calls as u64),
    ));
    out
}

fn files(cassette: &Cassette, cap: usize) -> Vec<FileView> {
    let pre: Vec<String> = cassette.pre_run_paths().unwrap_or_default();
    // A body the cassette did not keep, from its final snapshot.
    let snapshot = crate::snapshot::restore::final_state_files(cassette, SNAPSHOT_PREVIEW);
    let mut files: Vec<FileView> = cassette
        .artifacts()
        .unwrap_or_default()
        .into_iter()
        .map(|a| {
            let mut notes = Vec::new();
            if pre.contains(&a.path) {
                notes.push("pre-run input".to_owned());
            }
            if let Some(r) = a.truncation_reason {
                notes.push(format!("body not kept: {}", r.why_not_kept()));
            } else if a.truncated == Some(true) {
                let size = crate::cassette::TruncationReason::Size;
                notes.push(format!("body not kept: {}", size.why_not_kept()));
            }
            if let Some(k) = a.link_kind {
                notes.push(format!("{k:?}").to_lowercase());
            }
            let from_snapshot = (a.body.is_none() && a.link_kind.is_none())
                .then(|| snapshot_body(&a, &snapshot))
                .flatten();
            let preview = match &from_snapshot {
                Some((body, encoding)) => {
                    let shown = preview(&a.path, Some(body), *encoding, cap);
                    if !matches!(shown, Preview::None(_)) {
                        notes.push("preview from the snapshot".to_owned());
                    }
                    shown
                }
                None => preview(&a.path, a.body.as_deref(), a.encoding, cap),
            };
            FileView {
                size: bytes(a.bytes),
                sha256: a.sha256,
                path: a.path,
                preview,
                notes,
            }
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Largest file read from a snapshot for a preview.
const SNAPSHOT_PREVIEW: u64 = 8 << 20;

/// The body of a manifest entry from `snapshot`, as the cassette would
/// inline it (text, else base64), when its bytes hash to the entry's sha256.
fn snapshot_body(
    a: &crate::cassette::ManifestEntry,
    snapshot: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Option<(String, Option<BodyEncoding>)> {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let bytes = snapshot(&a.path)?;
    if hex::encode(Sha256::digest(&bytes)) != a.sha256 {
        return None;
    }
    Some(match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => (text, None),
        Ok(text) => (
            base64::engine::general_purpose::STANDARD.encode(text),
            Some(BodyEncoding::Base64),
        ),
        Err(e) => (
            base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            Some(BodyEncoding::Base64),
        ),
    })
}

/// A base64 body that is not an image: the text of a zip or PDF document
/// inside it (`document::text`, as a rerun compares it), else "binary".
fn document_preview(body: &str, cap: usize) -> Preview {
    let engine = base64::engine::general_purpose::STANDARD;
    let Ok(raw) = engine.decode(body.trim()) else {
        return Preview::None("body is not valid base64".into());
    };
    match crate::document::text(&raw) {
        Ok(Some(text)) => Preview::Text(Clip::new(&text, cap)),
        Ok(None) => Preview::None("binary".into()),
        Err(unread) => Preview::None(format!("document {unread}")),
    }
}

fn preview(path: &str, body: Option<&str>, encoding: Option<BodyEncoding>, cap: usize) -> Preview {
    let Some(body) = body else {
        return Preview::None("not inlined in the cassette".into());
    };
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if encoding == Some(BodyEncoding::Base64) {
        let mime = match ext.as_deref() {
            Some("png") => "image/png",
            Some("jpg" | "jpeg") => "image/jpeg",
            Some("gif") => "image/gif",
            Some("webp") => "image/webp",
            _ => return document_preview(body, cap),
        };
        // Only a body that really is base64 goes into the URI.
        let engine = base64::engine::general_purpose::STANDARD;
        return match engine.decode(body.trim()) {
            Ok(raw) if raw.len() <= MAX_IMAGE => {
                Preview::Image(format!("data:{mime};base64,{}", engine.encode(raw)))
            }
            Ok(_) => Preview::None("image too large to inline".into()),
            Err(_) => Preview::None("body is not valid base64".into()),
        };
    }
    if ext.as_deref() == Some("json")
        && let Ok(v) = serde_json::from_str::<Value>(body)
    {
        return Preview::Json(Clip::json(&v, cap));
    }
    Preview::Text(Clip::new(body, cap))
}

fn assertions(r: &Outcome) -> Vec<AssertionView> {
    r.assertions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (key, params) = match &a.assertion {
                Value::Object(m) if m.len() == 1 => {
                    let (k, v) = m.iter().next().expect("one entry");
                    (k.clone(), v.to_string())
                }
                other => (String::new(), other.to_string()),
            };
            AssertionView {
                key,
                params,
                pass: a.pass,
                // A failure's message, else what the passing check saw.
                evidence: if a.message.is_empty() {
                    r.evidence.get(i).cloned().unwrap_or_default()
                } else {
                    a.message.clone()
                },
                source: a.source.clone().unwrap_or_default(),
            }
        })
        .collect()
}
