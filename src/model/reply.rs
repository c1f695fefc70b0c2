//! Turns a scripted turn into Messages API bytes: a server-sent-event stream
//! or one JSON message. Everything is derived from the turn index, so the same
//! request always gets byte-identical bytes (ids `msg_reel_<turn>` and
//! `toolu_reel_<turn>_<block>`, fixed usage).
//!
//! This file does not pick the turn or speak HTTP; it only renders.

use serde_json::{Map, Value, json};

use super::script::{Block, Turn};

/// Largest piece of text or JSON sent in one delta event; a real API splits
/// long content too, and agents must reassemble it.
const DELTA_CHUNK: usize = 64;

/// The resolved content of a reply, ready to render either way.
pub struct Reply<'a> {
    /// Index of the turn: tool_use ids derive from it.
    pub turn_index: usize,
    /// The message id, normally [`message_id`] of the turn index.
    pub message_id: String,
    pub turn: &'a Turn,
    pub model: &'a str,
    /// Replacement for `{{cwd}}` in tool inputs.
    pub cwd: Option<&'a str>,
    /// Further `{{name}}` → value replacements in tool inputs (`{{config}}`,
    /// `{{home}}`, `{{run}}`), from the serving options.
    pub vars: &'a [(String, String)],
}

/// What every message id the scripted model makes starts with (a script
/// may fix its own ids; `reel show` reads this prefix as "scripted").
pub const MESSAGE_ID_PREFIX: &str = "msg_reel_";

/// The message id of a turn.
pub fn message_id(turn_index: usize) -> String {
    format!("{MESSAGE_ID_PREFIX}{turn_index}")
}

/// The id of a tool_use block unless the script fixes one.
pub fn tool_use_id(turn_index: usize, block_index: usize) -> String {
    format!("toolu_reel_{turn_index}_{block_index}")
}

impl Reply<'_> {
    fn blocks(&self) -> Vec<Value> {
        self.turn
            .blocks
            .iter()
            .enumerate()
            .map(|(i, block)| match block {
                Block::Text(text) => json!({"type": "text", "text": text}),
                Block::ToolUse { name, input, id } => json!({
                    "type": "tool_use",
                    "id": id.clone().unwrap_or_else(|| tool_use_id(self.turn_index, i)),
                    "name": name,
                    "input": substitute(input, self.cwd, self.vars),
                }),
                Block::Thinking {
                    thinking,
                    signature,
                } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                Block::RedactedThinking { data } => {
                    json!({"type": "redacted_thinking", "data": data})
                }
            })
            .collect()
    }

    fn usage(&self, output_tokens: u64) -> Value {
        let u = &self.turn.usage;
        json!({
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
            "output_tokens": output_tokens,
        })
    }

    /// The non-streaming JSON message.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks(),
            "stop_reason": self.turn.stop_reason(),
            "stop_sequence": null,
            "usage": self.usage(self.turn.usage.output_tokens),
        })
    }

    /// The SSE body: `message_start`, `ping`, per block start/delta.../stop,
    /// `message_delta` (stop reason, output tokens), `message_stop`.
    pub fn to_sse(&self) -> String {
        let mut out = String::with_capacity(1024);
        event(
            &mut out,
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": self.message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                // Like the real API: output tokens so far, final count in message_delta.
                "usage": self.usage(1),
            }}),
        );
        event(&mut out, "ping", &json!({"type": "ping"}));
        for (index, block) in self.blocks().into_iter().enumerate() {
            block_events(&mut out, index, block);
        }
        event(
            &mut out,
            "message_delta",
            &json!({"type": "message_delta",
                    "delta": {"stop_reason": self.turn.stop_reason(), "stop_sequence": null},
                    "usage": {"output_tokens": self.turn.usage.output_tokens}}),
        );
        event(&mut out, "message_stop", &json!({"type": "message_stop"}));
        out
    }
}

/// One content block's events: its start, its deltas, its stop. A block
/// starts empty and its content arrives in deltas of [`DELTA_CHUNK`], as the
/// API streams it; a redacted thinking block arrives whole in its start.
fn block_events(out: &mut String, index: usize, block: Value) {
    let str_of = |key: &str| {
        block
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (start, deltas): (Value, Vec<Value>) = match block.get("type").and_then(Value::as_str) {
        Some("redacted_thinking") => (block, Vec::new()),
        Some("thinking") => {
            let (text, signature) = (str_of("thinking"), str_of("signature"));
            let deltas = chunks(&text, DELTA_CHUNK)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .chain([json!({"type": "signature_delta", "signature": signature})])
                .collect();
            (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            )
        }
        Some("tool_use") => {
            let payload = block.get("input").map(Value::to_string).unwrap_or_default();
            let deltas = chunks(&payload, DELTA_CHUNK)
                .into_iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            let mut start = block;
            start["input"] = Value::Object(Map::new());
            (start, deltas)
        }
        _ => {
            let text = str_of("text");
            let deltas = chunks(&text, DELTA_CHUNK)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}))
                .collect();
            (json!({"type": "text", "text": ""}), deltas)
        }
    };
    event(
        out,
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    );
    for delta in deltas {
        event(
            out,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
    }
    event(
        out,
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    );
}

/// The message id of every side reply.
const SIDE_MESSAGE_ID: &str = "msg_reel_side";

/// A complete side reply (title, summary): one short text, `end_turn`.
pub fn side_reply_json(model: &str, text: &str) -> Value {
    json!({
        "id": SIDE_MESSAGE_ID,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 5},
    })
}

/// The SSE rendering of [`side_reply_json`].
pub fn side_reply_sse(model: &str, text: &str) -> String {
    let turn = Turn::of_blocks(
        vec![Block::Text(text.to_string())],
        super::script::Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
        },
    );
    Reply {
        turn_index: 0,
        message_id: SIDE_MESSAGE_ID.to_string(),
        turn: &turn,
        model,
        cwd: None,
        vars: &[],
    }
    .to_sse()
}

/// An Anthropic-style error body.
pub fn error_json(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn event(out: &mut String, name: &str, data: &Value) {
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// Splits on char boundaries into pieces of at most `max` bytes (a char longer
/// than `max` still gets its own piece). Empty text gives no piece.
fn chunks(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = max.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Replaces `{{cwd}}` (and each `{{name}}` of `vars`) in every string of a
/// tool input.
fn substitute(input: &Value, cwd: Option<&str>, vars: &[(String, String)]) -> Value {
    if cwd.is_none() && vars.is_empty() {
        return input.clone();
    }
    match input {
        Value::String(s) if s.contains("{{") => {
            let mut out = s.clone();
            if let Some(cwd) = cwd {
                out = out.replace("{{cwd}}", cwd);
            }
            for (name, value) in vars {
                out = out.replace(&format!("{{{{{name}}}}}"), value);
            }
            Value::String(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| substitute(v, cwd, vars)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, cwd, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::script::Script;

    fn script() -> Script {
        Script::parse(
            "turns:\n  - blocks:\n      - text: \"héllo wörld, a longer text that is split into \
                several delta events\"\n      - tool: Write\n        input: \
                {file_path: \"{{cwd}}/a.txt\", content: \"x\"}\n",
            "t.yaml",
        )
        .unwrap()
    }

    #[test]
    fn sse_reassembles_to_the_json_message() {
        let script = script();
        let reply = Reply {
            turn_index: 0,
            message_id: message_id(0),
            turn: &script.turns[0],
            model: "m",
            cwd: Some("/w"),
            vars: &[],
        };
        let sse = reply.to_sse();
        let mut text = String::new();
        let mut json_input = String::new();
        let mut names = Vec::new();
        for frame in sse.split("\n\n").filter(|f| !f.is_empty()) {
            let mut lines = frame.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data: Value =
                serde_json::from_str(lines.next().unwrap().strip_prefix("data: ").unwrap())
                    .unwrap();
            assert_eq!(data["type"], name);
            names.push(name.to_string());
            if name == "content_block_delta" {
                if let Some(t) = data["delta"]["text"].as_str() {
                    text.push_str(t);
                }
                if let Some(t) = data["delta"]["partial_json"].as_str() {
                    json_input.push_str(t);
                }
            }
        }
        let message = reply.to_json();
        assert_eq!(text, message["content"][0]["text"].as_str().unwrap());
        let input: Value = serde_json::from_str(&json_input).unwrap();
        assert_eq!(input, message["content"][1]["input"]);
        assert_eq!(input["file_path"], "/w/a.txt");
        assert_eq!(message["content"][1]["id"], "toolu_reel_0_1");
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(names.first().map(String::as_str), Some("message_start"));
        assert_eq!(names.last().map(String::as_str), Some("message_stop"));
        assert_eq!(reply.to_sse(), sse, "rendering is deterministic");
    }

    #[test]
    fn chunks_respect_char_boundaries() {
        let s = "ééééé";
        let pieces = chunks(s, 3);
        assert_eq!(pieces.concat(), s);
        assert!(pieces.iter().all(|p| p.len() <= 4));
        assert!(chunks("", 4).is_empty());
    }
}
