//! Streamed content blocks, joined: what the scanner and the scrubber read
//! beside the lines themselves.
//!
//! With partial messages on, the agent streams a content block as
//! `stream_event` lines, one fragment each (`text_delta.text`,
//! `input_json_delta.partial_json`, `thinking_delta.thinking`), so a secret
//! the model wrote across fragments is in no single line, and the whole
//! block may be in none when its `assistant` line is missing or was edited.
//! A block is its fragments in order, per agent scope
//! (`parent_tool_use_id`) and block index, from its `content_block_start`
//! to its `content_block_stop` (or the end of the stream).

use std::collections::HashMap;

use serde_json::Value;

/// One streamed content block.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// `(events index, fragment text)` in stream order.
    pub fragments: Vec<(usize, String)>,
    /// `partial_json` fragments: the joined text is JSON.
    pub json: bool,
}

impl Block {
    /// The fragments joined.
    pub fn joined(&self) -> String {
        self.fragments.iter().map(|(_, f)| f.as_str()).collect()
    }

    /// Where a finding in the joined text is reported.
    pub fn location(&self) -> String {
        let first = self.fragments.first().map_or(0, |(i, _)| *i);
        let last = self.fragments.last().map_or(0, |(i, _)| *i);
        format!("events[{first}..={last}] (streamed fragments joined)")
    }
}

/// The delta field a fragment is in, by delta type.
pub fn fragment_field(delta_type: &str) -> Option<&'static str> {
    match delta_type {
        "text_delta" => Some("text"),
        "thinking_delta" => Some("thinking"),
        "input_json_delta" => Some("partial_json"),
        _ => None,
    }
}

/// Every block of two or more fragments in `events` (a block of one was
/// read whole with its line), in the order the blocks began.
pub fn blocks(events: &[&str]) -> Vec<Block> {
    let mut open: HashMap<(String, u64), Block> = HashMap::new();
    let mut done = Vec::new();
    for (i, line) in events.iter().enumerate() {
        // `stream_event` may be written with `\u` escapes (`stream\u005fevent`).
        if !line.contains("stream") && !line.contains("\\u") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("stream_event") {
            continue;
        }
        let scope = v
            .get("parent_tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let event = &v["event"];
        let key = (
            scope,
            event.get("index").and_then(Value::as_u64).unwrap_or(0),
        );
        match event.get("type").and_then(Value::as_str) {
            Some("content_block_start" | "content_block_stop") => done.extend(open.remove(&key)),
            Some("content_block_delta") => {
                let delta = &event["delta"];
                let Some(field) = delta
                    .get("type")
                    .and_then(Value::as_str)
                    .and_then(fragment_field)
                else {
                    continue;
                };
                let Some(fragment) = delta.get(field).and_then(Value::as_str) else {
                    continue;
                };
                let block = open.entry(key).or_insert_with(|| Block {
                    fragments: Vec::new(),
                    json: false,
                });
                block.json |= field == "partial_json";
                block.fragments.push((i, fragment.to_owned()));
            }
            _ => {}
        }
    }
    // Blocks a truncated stream never closed.
    done.extend(open.into_values());
    done.retain(|b| b.fragments.len() >= 2);
    done.sort_by_key(|b| b.fragments[0].0);
    done
}

/// Rewrites the fragment of `line` (a `content_block_delta` line) to
/// `fragment`; `None` when the line is not one.
pub fn with_fragment(line: &str, fragment: &str) -> Option<String> {
    let mut v = serde_json::from_str::<Value>(line).ok()?;
    let delta = v.get_mut("event")?.get_mut("delta")?;
    let field = fragment_field(delta.get("type")?.as_str()?)?;
    *delta.get_mut(field)? = Value::String(fragment.to_owned());
    serde_json::to_string(&v).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(parent: Option<&str>, event: Value) -> String {
        json!({"type": "stream_event", "event": event, "parent_tool_use_id": parent}).to_string()
    }

    fn delta(index: u64, ty: &str, field: &str, text: &str) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": {"type": ty, field: text}})
    }

    #[test]
    fn fragments_join_per_scope_and_index_between_start_and_stop() {
        let lines = [
            ev(None, json!({"type": "content_block_start", "index": 0})),
            ev(None, delta(0, "text_delta", "text", "a")),
            ev(Some("t1"), delta(0, "text_delta", "text", "x")),
            ev(None, delta(0, "text_delta", "text", "b")),
            ev(
                Some("t1"),
                delta(0, "input_json_delta", "partial_json", "y"),
            ),
            ev(None, json!({"type": "content_block_stop", "index": 0})),
            // A new block at the same index starts afresh; one fragment is
            // no block.
            ev(None, delta(0, "text_delta", "text", "c")),
            ev(None, json!({"type": "content_block_stop", "index": 0})),
            "not json".to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let b = blocks(&lines);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!((b[0].joined(), b[0].json), ("ab".to_owned(), false));
        assert_eq!(b[0].location(), "events[1..=3] (streamed fragments joined)");
        // The sub-agent's block was never closed: it ends with the stream.
        assert_eq!((b[1].joined(), b[1].json), ("xy".to_owned(), true));
    }

    #[test]
    fn a_fragment_is_rewritten_in_its_own_field() {
        let line = ev(None, delta(2, "thinking_delta", "thinking", "secret"));
        let out = with_fragment(&line, "[REDACTED]").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["event"]["delta"]["thinking"], "[REDACTED]");
        assert_eq!(v["event"]["index"], 2);
        assert!(with_fragment(r#"{"type":"assistant"}"#, "x").is_none());
    }
}
