//! The agent's own hook frames (`hook_started` / `hook_response` system
//! lines, streamed with `--include-hook-events`), paired by `hook_id`, and
//! what each one decided.

use serde_json::{Map, Value};

use crate::evidence::RunRecord;
use crate::evidence::line::HOOK_FRAME_SUBTYPES;

/// One hook run: its start and, once it answered, its response fields.
pub(super) struct Frame {
    /// `hook_name`: `Stop`, or `PreToolUse:Bash` for a tool event.
    pub name: String,
    pub event: String,
    pub response: Option<Map<String, Value>>,
    /// A hook on this event may block when it fails (`hookFailureBlocks`),
    /// so a failed frame's outcome cannot be read.
    pub may_block_on_failure: bool,
}

/// The channel a blocking frame used.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    /// Exit code 2.
    Exit2,
    /// A JSON decision printed on stdout with exit 0.
    Json,
    Any,
}

impl Via {
    pub(super) fn parse(v: Option<&str>) -> Via {
        match v {
            Some("exit2") => Via::Exit2,
            Some("json") => Via::Json,
            _ => Via::Any,
        }
    }
}

/// What a frame decided.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Decision {
    /// Exit 2: a block (a `deny`).
    Exit2,
    /// Exit 0 with a whole JSON decision on stdout; `raw` is the token it
    /// printed (`deny`, `block`, `allow`, `approve`, `ask`, `defer`).
    Json { raw: String },
    /// Exit 0 with no decision, or an exit code that decides nothing.
    Nothing,
    /// The outcome cannot be read (no exit code, never answered, stdout
    /// that looks like JSON but does not parse, or names another event).
    Unknown,
}

impl Decision {
    /// The normalised decision (`block` → `deny`, `approve` → `allow`).
    pub(super) fn normalized(&self) -> Option<&str> {
        match self {
            Decision::Exit2 => Some("deny"),
            Decision::Json { raw } => Some(normalize(raw)),
            Decision::Nothing | Decision::Unknown => None,
        }
    }
}

/// `block` is an alias of `deny`, `approve` of `allow`.
pub(super) fn normalize(d: &str) -> &str {
    match d {
        "block" => "deny",
        "approve" => "allow",
        other => other,
    }
}

impl Frame {
    /// The tool a tool event's frame names (`PreToolUse:Bash` → `Bash`).
    pub(super) fn tool(&self) -> Option<&str> {
        self.name
            .strip_prefix(self.event.as_str())
            .and_then(|rest| rest.strip_prefix(':'))
            .filter(|t| !t.is_empty())
    }

    pub(super) fn exit_code(&self) -> Option<i64> {
        self.response.as_ref()?.get("exit_code")?.as_i64()
    }

    pub(super) fn decision(&self) -> Decision {
        let Some(response) = &self.response else {
            return Decision::Unknown;
        };
        match self.exit_code() {
            None => Decision::Unknown,
            Some(2) => Decision::Exit2,
            Some(0) => json_decision(
                response.get("stdout").and_then(Value::as_str).unwrap_or(""),
                &self.event,
            ),
            // A failure an `onFailure: block` hook may have turned into a
            // block after the frame was streamed.
            Some(_) if self.may_block_on_failure => Decision::Unknown,
            Some(_) => Decision::Nothing,
        }
    }

    /// Whether the frame blocked through `via`: `Some(true)` / `Some(false)`,
    /// `None` when that cannot be read.
    pub(super) fn blocked(&self, via: Via) -> Option<bool> {
        match (self.decision(), via) {
            (Decision::Unknown, Via::Exit2) => self.exit_code().map(|_| false),
            (Decision::Unknown, _) => None,
            (Decision::Exit2, Via::Json) => Some(false),
            (Decision::Exit2, _) => Some(true),
            (d @ Decision::Json { .. }, Via::Json | Via::Any) => {
                Some(d.normalized() == Some("deny"))
            }
            _ => Some(false),
        }
    }

    /// `Stop (exit 2)`, `PreToolUse:Bash (exit 0, JSON deny)`.
    pub(super) fn label(&self) -> String {
        match (self.decision(), self.exit_code()) {
            (Decision::Json { raw }, Some(code)) => {
                format!("{} (exit {code}, JSON {raw})", self.name)
            }
            (Decision::Unknown, Some(code)) if self.may_block_on_failure => format!(
                "{} (exit {code}, failed: an onFailure: block hook may have blocked)",
                self.name
            ),
            (_, Some(code)) => format!("{} (exit {code})", self.name),
            (_, None) if self.response.is_none() => format!("{} (never answered)", self.name),
            (_, None) => format!("{} (no exit code)", self.name),
        }
    }
}

/// The decision a hook printed on stdout with exit 0: only a whole JSON
/// object decides; prose, an array or a string decide nothing, and an
/// object cut or rewritten so it no longer parses cannot be read.
fn json_decision(stdout: &str, event: &str) -> Decision {
    let text = stdout.trim();
    if !text.starts_with('{') {
        return Decision::Nothing;
    }
    let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) else {
        return Decision::Unknown;
    };
    if let Some(specific) = doc.get("hookSpecificOutput").and_then(Value::as_object) {
        if specific
            .get("hookEventName")
            .and_then(Value::as_str)
            .is_some_and(|named| named != event)
        {
            return Decision::Unknown;
        }
        if let Some(raw) = specific.get("permissionDecision").and_then(Value::as_str)
            && matches!(raw, "allow" | "deny" | "ask" | "defer")
        {
            return Decision::Json { raw: raw.into() };
        }
    }
    match doc.get("decision").and_then(Value::as_str) {
        Some(raw @ ("block" | "approve")) => Decision::Json { raw: raw.into() },
        _ => Decision::Nothing,
    }
}

/// The run's hook frames in the order they started (a response without a
/// start is a frame of its own).
pub(super) fn frames(run: &RunRecord) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut by_id: Vec<(String, usize)> = Vec::new();
    for e in run
        .context_events
        .iter()
        .filter(|e| HOOK_FRAME_SUBTYPES.contains(&e.subtype.as_str()))
    {
        let fields = e.data.fields().into_owned();
        let id = fields
            .get("hook_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let known = id
            .as_ref()
            .and_then(|id| by_id.iter().find(|(k, _)| k == id).map(|(_, i)| *i));
        let at = known.unwrap_or_else(|| {
            frames.push(Frame {
                name: str_of(&fields, "hook_name"),
                event: str_of(&fields, "hook_event"),
                response: None,
                may_block_on_failure: false,
            });
            if let Some(id) = &id {
                by_id.push((id.clone(), frames.len() - 1));
            }
            frames.len() - 1
        });
        if e.subtype == "hook_response" {
            frames[at].response = Some(fields);
        }
    }
    frames
}

fn str_of(m: &Map<String, Value>, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}
