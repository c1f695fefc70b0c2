//! Account state the agent writes that a recording must not keep (the
//! record scrubs cowork-harness added after 2.0.0): the model menu of the
//! init handshake (which models this account may use) and the rate-limit
//! state of `rate_limit_event` lines (this account's quota). Neither is read
//! by any assertion, so emptying them never moves a verdict; the redaction
//! proof in [`super::redact::scrub_cassette_checked`] still checks that.
//!
//! Not done here: the agent's hand-back frame around a sub-agent's report,
//! whose exact text the original's sources did not settle.

use serde_json::Value;

/// Empties the account state in one stream-json line, or `None` when the
/// line carries none (so untouched lines keep their bytes).
pub fn scrub_line(line: &str) -> Option<String> {
    if !(line.contains("\"models\"") || line.contains("\"rate_limit_info\"")) {
        return None;
    }
    let mut v: Value = serde_json::from_str(line).ok()?;
    scrub_value(&mut v).then(|| serde_json::to_string(&v).unwrap_or_default())
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
