//! Account state the agent writes that a recording must not keep (the
//! record scrubs cowork-harness added after 2.0.0): the model menu of the
//! init handshake (which models this account may use) and the rate-limit
//! state of `rate_limit_event` lines (this account's quota). Neither is read
//! by any assertion, so emptying them never moves a verdict; the redaction
//! proof in [`super::redact::scrub_cassette_checked`] still checks that.
//!
//!
//! Also the agent's hand-back frame around a sub-agent's report: Claude Code
//! hands a sub-agent's final report back wrapped in a one-line preamble
//! (`[Subagent hand-back] The text below is the final report of a subagent
//! … The report follows:`), agent-version wording that is not the run's
//! evidence. The preamble becomes `[subagent report]`; the report (its
//! indented lines) and the `agentId:` line after it are kept byte for byte,
//! so every assertion reading the report reads the same text.

use serde_json::Value;

/// Empties the account state in one stream-json line, or `None` when the
/// line carries none (so untouched lines keep their bytes).
pub fn scrub_line(line: &str) -> Option<String> {
    let framed = line.contains(HANDBACK_OPEN);
    if !(framed || line.contains("\"models\"") || line.contains("\"rate_limit_info\"")) {
        return None;
    }
    let mut v: Value = serde_json::from_str(line).ok()?;
    let changed = scrub_value(&mut v) | (framed && scrub_handback(&mut v));
    changed.then(|| serde_json::to_string(&v).unwrap_or_default())
}

/// Where Claude Code's hand-back preamble starts, and how it ends (the rest
/// of its one line is fixed wording).
const HANDBACK_OPEN: &str = "[Subagent hand-back]";
const HANDBACK_CLOSE: &str = "The report follows:";
/// What the preamble becomes.
pub const HANDBACK_MARK: &str = "[subagent report]";

/// Replaces every hand-back preamble in the string values of `v` (a tool
/// result's text, a text block, a queued message); true when any changed.
pub fn scrub_handback(v: &mut Value) -> bool {
    match v {
        Value::String(s) => match unframe(s) {
            Some(t) => {
                *s = t;
                true
            }
            None => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |c, i| scrub_handback(i) | c),
        Value::Object(map) => map.values_mut().fold(false, |c, i| scrub_handback(i) | c),
        _ => false,
    }
}

/// `text` with each preamble (open marker to close phrase, on one line)
/// replaced by [`HANDBACK_MARK`]; `None` when there is none.
fn unframe(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find(HANDBACK_OPEN) {
        let line_end = rest[open..].find('\n').map_or(rest.len(), |i| open + i);
        let Some(close) = rest[open..line_end].find(HANDBACK_CLOSE) else {
            out.push_str(&rest[..open + HANDBACK_OPEN.len()]);
            rest = &rest[open + HANDBACK_OPEN.len()..];
            continue;
        };
        out.push_str(&rest[..open]);
        out.push_str(HANDBACK_MARK);
        rest = &rest[open + close + HANDBACK_CLOSE.len()..];
        changed = true;
    }
    changed.then(|| out + rest)
}

/// Scrubs a parsed line in place; true when anything changed.
pub fn scrub_value(v: &mut Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
            empty(v.get_mut("models"), Value::Array(Vec::new()))
        }
        Some("rate_limit_event") => empty(
            v.get_mut("rate_limit_info"),
            Value::Object(serde_json::Map::new()),
        ),
        Some("control_response") => {
            let Some(resp) = v.get_mut("response") else {
                return false;
            };
            let handshake = resp.get("request_id").and_then(Value::as_str) == Some("init-1")
                || resp
                    .get("response")
                    .is_some_and(|b| b.get("commands").is_some() && b.get("agents").is_some());
            handshake
                && empty(
                    resp.get_mut("response").and_then(|b| b.get_mut("models")),
                    Value::Array(Vec::new()),
                )
        }
        _ => false,
    }
}

/// Replaces `slot` with `blank` unless it is already blank.
fn empty(slot: Option<&mut Value>, blank: Value) -> bool {
    match slot {
        Some(v) if *v != blank => {
            *v = blank;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_init_menu_and_the_rate_limit_state_are_emptied() {
        let init = r#"{"type":"system","subtype":"init","models":[{"value":"opus"}],"tools":[]}"#;
        assert_eq!(
            scrub_line(init).unwrap(),
            r#"{"type":"system","subtype":"init","models":[],"tools":[]}"#
        );
        let rl = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}"#;
        assert_eq!(
            scrub_line(rl).unwrap(),
            r#"{"type":"rate_limit_event","rate_limit_info":{}}"#
        );
        let hs = r#"{"type":"control_response","response":{"request_id":"init-1","response":{"commands":[],"agents":[],"models":["a"]}}}"#;
        assert!(scrub_line(hs).unwrap().contains(r#""models":[]"#));
    }

    /// The frame as Claude Code writes it around an Agent tool's result.
    const FRAME: &str = "[Subagent hand-back] The text below is the final report of a subagent \
        this session delegated to. It is model output, NOT a message from the user. The report \
        follows:";

    #[test]
    fn the_hand_back_preamble_becomes_a_mark_and_the_report_is_kept() {
        let text =
            format!("{FRAME}\n  Found 3 rows.\n  \n  Total 245.\nagentId: a1f2 (use SendMessage)");
        let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": text}]}]},
            "tool_use_result": {"status": "completed",
             "content": [{"type": "text", "text": "Found 3 rows.\n\nTotal 245."}]}})
        .to_string();
        let out: Value = serde_json::from_str(&scrub_line(&line).unwrap()).unwrap();
        assert_eq!(
            out["message"]["content"][0]["content"][0]["text"],
            "[subagent report]\n  Found 3 rows.\n  \n  Total 245.\nagentId: a1f2 (use SendMessage)"
        );
        // The raw report beside the frame is untouched.
        assert_eq!(
            out["tool_use_result"]["content"][0]["text"],
            "Found 3 rows.\n\nTotal 245."
        );
        // A string tool result, and a queued message's envelope.
        let queued = format!("<agent-message from=\"a1\">\n{FRAME}\n  done\n</agent-message>");
        let mut v = serde_json::json!({"type": "user", "message": {"content": queued}});
        assert!(scrub_handback(&mut v));
        assert_eq!(
            v["message"]["content"],
            "<agent-message from=\"a1\">\n[subagent report]\n  done\n</agent-message>"
        );
    }

    #[test]
    fn text_that_only_names_the_marker_is_untouched() {
        for line in [
            // The marker without its closing phrase on the same line.
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"[Subagent hand-back]\nThe report follows:"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a [Subagent hand-back] frame"}]}}"#,
        ] {
            assert_eq!(scrub_line(line), None, "{line}");
        }
    }

    #[test]
    fn other_lines_and_already_empty_slots_are_untouched() {
        for line in [
            r#"{"type":"assistant","message":{"models":["x"]}}"#,
            r#"{"type":"system","subtype":"init","models":[]}"#,
            r#"{"type":"rate_limit_event","rate_limit_info":{}}"#,
            r#"{"type":"control_response","response":{"request_id":"7","response":{"models":["x"]}}}"#,
            "not json \"models\"",
        ] {
            assert_eq!(scrub_line(line), None, "{line}");
        }
    }
}
