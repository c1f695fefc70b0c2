//! `reel show`: a readable digest of one recording — what the agent did
//! (tools), what it was asked and answered (questions), what it produced
//! (files, with a shallow preview of JSON artifacts), where the time went
//! (timeline) and the tokens (usage).
//!
//! The views are [`crate::diff::Recording`]'s, read with raw values (no
//! masking): `show` and `diff` present one reading of a cassette.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cassette::Cassette;
use crate::diff::Recording;
use crate::diff::digest::{Answer, FileEntry, TimelineRow, ToolCall};
use crate::diff::render::{Paint, cut, inline, paint};

/// One view of `reel show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ShowView {
    Tools,
    Questions,
    Files,
    Timeline,
    Usage,
    All,
}

impl ShowView {
    const EACH: [ShowView; 5] = [
        ShowView::Tools,
        ShowView::Questions,
        ShowView::Files,
        ShowView::Timeline,
        ShowView::Usage,
    ];

    fn includes(self, v: ShowView) -> bool {
        self == ShowView::All || self == v
    }
}

/// How many lines of a text body the text view previews.
const BODY_LINES: usize = 5;
/// How many keys / items of a JSON artifact the preview lists.
const JSON_KEYS: usize = 12;

/// The digest of one cassette.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Show {
    pub file: String,
    pub scenario: String,
    pub result: Value,
    pub verdict_pass: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Vec<Answer>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<FileShow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineRow>>,
    /// A multi-turn recording's user turns (docs/multi-turn.md): each
    /// turn's number, prompt, event range and whether it was delivered to a
    /// resumed session; absent for a one-prompt recording and a single view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_turns: Option<Vec<Value>>,
    /// The recording's checkpoints (docs/snapshots.md): each snapshot's
    /// turn, ref, sizes and whether its blob is in the store; absent when
    /// it has none, and for a single view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Map<String, Value>>,
}

/// The checkpoints of `cassette`, each with whether its blob is stored.
fn snapshots(cassette: &Cassette) -> Option<Vec<Value>> {
    let checkpoints = crate::snapshot::Checkpoints::of(&cassette.doc).ok()??;
    let store = crate::snapshot::Store::of_cassette(&cassette.path);
    let rows = checkpoints.checkpoints.iter().map(|c| {
        let stored = c.parsed().is_ok_and(|r| store.blob_path(&r).is_file());
        let mut row = serde_json::to_value(c).unwrap_or(Value::Null);
        row["stored"] = Value::Bool(stored);
        row
    });
    Some(rows.collect())
}

/// `snapshots: N` and a line per checkpoint.
fn snapshots_text(s: &mut String, rows: &[Value]) {
    let _ = writeln!(s, "snapshots: {}", rows.len());
    for r in rows {
        let missing = if r["stored"] == Value::Bool(true) {
            ""
        } else {
            " (missing from the store)"
        };
        let _ = writeln!(
            s,
            "  turn {} {} {}: {} file(s), {} B ({} B stored){missing}",
            r["turn"],
            r["at"].as_str().unwrap_or("?"),
            crate::terminal_safe::inline(r["ref"].as_str().unwrap_or("?")),
            r["files"],
            r["contentBytes"],
            r["blobBytes"]
        );
    }
}

/// The user turns of a multi-turn cassette: its frozen prompts beside the
/// recorder's `reelTurns` marks.
fn user_turns(cassette: &Cassette) -> Option<Vec<Value>> {
    let prompts = cassette.scenario().get("turns")?.as_array()?;
    let marks = cassette
        .doc
        .get(crate::replay::turns::REEL_TURNS)
        .and_then(|t| t.get("turns"))
        .and_then(Value::as_array);
    let turns = prompts.iter().enumerate().map(|(i, t)| {
        let mark = marks.and_then(|m| m.get(i));
        let field = |k: &str| mark.and_then(|m| m.get(k)).cloned().unwrap_or(Value::Null);
        serde_json::json!({
            "turn": i + 1,
            "prompt": t.get("prompt").cloned().unwrap_or(Value::Null),
            "eventStart": field("eventStart"),
            "eventEnd": field("eventEnd"),
            "resumed": field("resumed"),
        })
    });
    Some(turns.collect())
}

/// `user turns: N` and a line per turn (its event range and first prompt line).
fn user_turns_text(s: &mut String, turns: &[Value]) {
    let _ = writeln!(s, "user turns: {} (one agent session)", turns.len());
    for t in turns {
        let prompt = t["prompt"].as_str().unwrap_or_default();
        let first = prompt.lines().next().unwrap_or_default();
        let resumed = if t["resumed"] == Value::Bool(true) {
            " (resumed session)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  turn {} events {}..{}{resumed}: {first}",
            t["turn"], t["eventStart"], t["eventEnd"]
        );
    }
}

/// A manifest entry with its preview.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileShow {
    #[serde(flatten)]
    pub entry: FileEntry,
    /// Shallow outline of a JSON body: `{type, keys|length, ...}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_preview: Option<Value>,
}

impl Show {
    /// Reads `cassette` into the views `view` selects.
    pub fn of(cassette: &Cassette, view: ShowView) -> Show {
        let r = Recording::read(cassette, false);
        let usage_keys = [
            "result",
            "resultSubtype",
            "agentVersion",
            "models",
            "turns",
            "usage",
            "costUsd",
        ];
        Show {
            file: cassette.path.display().to_string(),
            scenario: r.scenario.clone(),
            result: r.meta.get("result").cloned().unwrap_or(Value::Null),
            verdict_pass: r.verdict_pass,
            tools: view.includes(ShowView::Tools).then(|| r.tools.clone()),
            questions: view
                .includes(ShowView::Questions)
                .then(|| r.answers.clone()),
            files: view.includes(ShowView::Files).then(|| {
                r.files
                    .iter()
                    .map(|f| FileShow {
                        json_preview: json_preview(f),
                        entry: f.clone(),
                    })
                    .collect()
            }),
            timeline: view
                .includes(ShowView::Timeline)
                .then(|| r.timeline.clone()),
            // Part of the whole digest; a single view stays that view.
            user_turns: (view == ShowView::All)
                .then(|| user_turns(cassette))
                .flatten(),
            snapshots: (view == ShowView::All)
                .then(|| snapshots(cassette))
                .flatten(),
            usage: view.includes(ShowView::Usage).then(|| {
                let mut usage: Map<String, Value> = usage_keys
                    .iter()
                    .filter_map(|k| r.meta.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                    .collect();
                if scripted_model(cassette) {
                    usage.insert("scriptedModel".into(), Value::Bool(true));
                }
                usage
            }),
        }
    }

    /// The digest as text (`color`: ANSI styling for a terminal).
    pub fn text(&self, color: bool) -> String {
        let mut s = String::new();
        let verdict = if self.verdict_pass { "pass" } else { "fail" };
        let _ = writeln!(
            s,
            "{} — scenario {} (result {}, verdict {verdict})",
            crate::terminal_safe::inline(&self.file),
            crate::terminal_safe::inline(&self.scenario),
            self.result.as_str().unwrap_or("?")
        );
        if let Some(turns) = &self.user_turns {
            user_turns_text(&mut s, turns);
        }
        if let Some(rows) = &self.snapshots {
            snapshots_text(&mut s, rows);
        }
        if let Some(tools) = &self.tools {
            tools_text(&mut s, tools, color);
        }
        if let Some(qs) = &self.questions {
            questions_text(&mut s, qs, color);
        }
        if let Some(files) = &self.files {
            files_text(&mut s, files, color);
        }
        if let Some(rows) = &self.timeline {
            timeline_text(&mut s, rows, color);
        }
        if let Some(u) = &self.usage {
            usage_text(&mut s, u, color);
        }
        // Everything above is the cassette's: shown inert, reel's colours kept.
        crate::terminal_safe::for_terminal(&s, color).into_owned()
    }

    /// Every view, for callers that want to iterate them (tests, docs).
    pub fn views() -> [ShowView; 5] {
        ShowView::EACH
    }
}

/// Whether the replies were the scripted model's: every assistant message
/// of the main conversation carries its id prefix
/// ([`crate::model::reply::MESSAGE_ID_PREFIX`]).
fn scripted_model(cassette: &Cassette) -> bool {
    let mut ids = cassette
        .events()
        .filter(|l| l.contains("\"assistant\""))
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|v| v.get("type").and_then(Value::as_str) == Some("assistant"))
        .filter_map(|v| v.pointer("/message/id")?.as_str().map(str::to_owned))
        .peekable();
    ids.peek().is_some() && ids.all(|id| id.starts_with(crate::model::reply::MESSAGE_ID_PREFIX))
}

/// `input 3600 · output 180 · cache read 0 · cache write 0` (the keys present).
fn token_line(m: &Map<String, Value>) -> String {
    let parts: Vec<String> = [
        ("input_tokens", "input"),
        ("output_tokens", "output"),
        ("cache_read_input_tokens", "cache read"),
        ("cache_creation_input_tokens", "cache write"),
    ]
    .into_iter()
    .filter_map(|(k, label)| m.get(k).map(|v| format!("{label} {v}")))
    .collect();
    if parts.is_empty() {
        cut(&inline(&Value::Object(m.clone())), 200)
    } else {
        format!("{} tokens", parts.join(" · "))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A shallow outline of a `.json` artifact's body: top-level type, keys (or
/// length) and each one's type — never the whole document.
fn json_preview(f: &FileEntry) -> Option<Value> {
    if !f.path.ends_with(".json") {
        return None;
    }
    let text = f.text.as_deref()?;
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(json!({"type": "invalid", "error": e.to_string()})),
    };
    Some(match &v {
        Value::Object(m) => {
            let fields: Map<_, _> = m
                .iter()
                .take(JSON_KEYS)
                .map(|(k, v)| (k.clone(), Value::String(shape(v))))
                .collect();
            json!({"type": "object", "keys": m.len(), "fields": fields})
        }
        Value::Array(a) => json!({
            "type": "array",
            "length": a.len(),
            "items": a.iter().take(JSON_KEYS).map(|v| Value::String(shape(v))).collect::<Vec<_>>(),
        }),
        other => json!({"type": type_name(other)}),
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One value's shape: `string "…"`, `number 3`, `object (4 keys)`, `array (2)`.
fn shape(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!(
            "string {}",
            cut(&serde_json::to_string(s).unwrap_or_default(), 40)
        ),
        Value::Array(a) => format!("array ({})", a.len()),
        Value::Object(m) => format!("object ({} keys)", m.len()),
    }
}

fn preview_text(p: &Value) -> String {
    match p.get("type").and_then(Value::as_str) {
        Some("object") => {
            let fields: Vec<String> = p["fields"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or("")))
                .collect();
            let more = p["keys"].as_u64().unwrap_or(0) as usize;
            let rest = if more > fields.len() {
                format!(", … ({} more)", more - fields.len())
            } else {
                String::new()
            };
            format!("object {{{}{rest}}}", fields.join(", "))
        }
        Some("array") => {
            let items: Vec<&str> = p["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!("array of {} [{}]", p["length"], items.join(", "))
        }
        Some("invalid") => format!("not valid JSON: {}", p["error"].as_str().unwrap_or("")),
        Some(t) => t.to_owned(),
        None => String::new(),
    }
}

/// The tool calls, each with its input and its result.
fn tools_text(s: &mut String, tools: &[ToolCall], color: bool) {
    head(
        s,
        format!("tools: {} call{}", tools.len(), plural(tools.len())),
        color,
    );
    for (i, t) in tools.iter().enumerate() {
        let sub = t
            .parent
            .as_deref()
            .map(|p| format!(" (under {p})"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  #{} {}{sub} {}",
            i + 1,
            crate::terminal_safe::inline(&t.name),
            cut(&inline(&t.input), 160)
        );
        let status = match t.is_error {
            None => paint("no result", color, Paint::Yellow),
            Some(true) => paint("error", color, Paint::Red),
            Some(false) => paint("ok", color, Paint::Green),
        };
        let result = t
            .result
            .as_deref()
            .map(|r| format!(": {}", cut(&one_line(r), 120)))
            .unwrap_or_default();
        let _ = writeln!(s, "      → {status}{result}");
    }
}

/// The questions and permission prompts, with what was answered.
fn questions_text(s: &mut String, qs: &[Answer], color: bool) {
    head(
        s,
        format!("questions: {} prompt{}", qs.len(), plural(qs.len())),
        color,
    );
    for (i, q) in qs.iter().enumerate() {
        let _ = writeln!(s, "  #{} {} {}: {}", i + 1, q.kind, q.name, q.decision);
        for asked in q.questions.iter().flat_map(|v| v.as_array()).flatten() {
            let label = asked
                .get("question")
                .or_else(|| asked.get("header"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            let options = crate::protocol::option_labels(asked);
            let multi = if asked.get("multiSelect") == Some(&Value::Bool(true)) {
                " (multi-select)"
            } else {
                ""
            };
            let _ = writeln!(s, "      asked: {label} [{}]{multi}", options.join(" | "));
        }
        if let Some(d) = &q.detail {
            let answer = match d {
                Value::Object(m) if q.kind == "question" => m
                    .values()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(" / "),
                other => cut(&inline(other), 160),
            };
            let delivered = q
                .delivery
                .as_deref()
                .map(|d| format!(" (delivery: {d})"))
                .unwrap_or_default();
            let label = if q.kind == "question" {
                "answer"
            } else {
                "detail"
            };
            let _ = writeln!(s, "      {label}: {answer}{delivered}");
        }
    }
}

/// The manifest, with the start of each inlined body.
fn files_text(s: &mut String, files: &[FileShow], color: bool) {
    head(s, format!("files: {} in the manifest", files.len()), color);
    for f in files {
        let e = &f.entry;
        let mut tags = vec![format!("{} B", e.bytes)];
        let why = e.truncated.as_deref().map(|t| {
            crate::cassette::TruncationReason::parse(t)
                .map_or_else(|| t.to_owned(), |r| r.why_not_kept().to_owned())
        });
        match (e.encoding, why) {
            (Some(enc), _) => tags.push(enc.to_owned()),
            (None, Some(why)) => tags.push(format!("body not kept: {why}")),
            (None, None) => tags.push("not inlined".into()),
        }
        if e.pre_run {
            tags.push("input (pre-run)".into());
        }
        if let Some(l) = &e.link {
            tags.push(l.clone());
        }
        if !e.sha256.is_empty() {
            tags.push(format!("sha256 {}", &e.sha256[..e.sha256.len().min(12)]));
        }
        let path = crate::terminal_safe::inline(&e.path);
        let _ = writeln!(s, "  {path}  ({})", tags.join(", "));
        if let Some(p) = &f.json_preview {
            let _ = writeln!(s, "      json: {}", preview_text(p));
        } else if let Some(text) = &e.text {
            let lines: Vec<&str> = text.lines().collect();
            for l in lines.iter().take(BODY_LINES) {
                let _ = writeln!(s, "      | {}", cut(l, 160));
            }
            if lines.len() > BODY_LINES {
                let _ = writeln!(s, "      | … ({} more lines)", lines.len() - BODY_LINES);
            }
        }
    }
}

/// The timeline rows (tool spans and skill windows).
fn timeline_text(s: &mut String, rows: &[TimelineRow], color: bool) {
    head(
        s,
        format!("timeline: {} row{}", rows.len(), plural(rows.len())),
        color,
    );
    if rows.is_empty() {
        let _ = writeln!(s, "  (no timeline recorded)");
    }
    for r in rows {
        let ms = match &r.total_ms {
            Value::Number(n) => format!("{n} ms"),
            other => inline(other),
        };
        let _ = writeln!(
            s,
            "  {:<5} {}  {} call{}  {ms}",
            r.kind,
            r.name,
            r.calls,
            plural(r.calls as usize)
        );
    }
}

/// Usage, cost and models (a scripted model's said to be the script's).
fn usage_text(s: &mut String, u: &Map<String, Value>, color: bool) {
    head(s, "usage".to_owned(), color);
    let scripted = u.get("scriptedModel") == Some(&Value::Bool(true));
    if scripted {
        let _ = writeln!(
            s,
            "  model: scripted by reel (token-free: the model name and token counts are the \
             script's; nothing was billed)"
        );
    }
    for (k, v) in u {
        let v = match (k.as_str(), v) {
            ("scriptedModel", _) => continue,
            ("models", Value::Array(_)) if scripted => {
                format!("{} (named by the script)", inline(v))
            }
            ("costUsd", _) if scripted => "none (scripted model)".to_owned(),
            (_, Value::String(s)) => s.clone(),
            ("usage", Value::Object(m)) => token_line(m),
            // Sums of binary floats (0.0144000…01): cents, not noise.
            ("costUsd", Value::Number(n)) => n.as_f64().map_or_else(
                || n.to_string(),
                |f| {
                    let t = format!("{f:.6}");
                    format!("${}", t.trim_end_matches('0').trim_end_matches('.'))
                },
            ),
            (_, other) => cut(&inline(other), 200),
        };
        let _ = writeln!(s, "  {k}: {v}");
    }
}

/// A section heading (bold when colour is on).
fn head(s: &mut String, title: String, color: bool) {
    let _ = writeln!(s, "{}", paint(&title, color, Paint::Bold));
}
