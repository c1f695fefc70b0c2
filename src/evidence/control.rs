//! `controlOut`: the index of recorded decision replies and the
//! serialisation guard (docs/spec/replay.md §2.5 step 2, §3.2).
//!
//! Only `control_response` / `success` envelopes whose body is an object
//! without `mcp_response` are indexed, keyed by `request_id`; a repeated id
//! with a different canonical body is a "differing duplicate" (first wins).
//! The guard re-serialises `deserialize(recorded)` per request kind and
//! compares canonical forms — it detects a change in the serialiser, never a
//! hand-edited answer (spec §8.1).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::parse::DecisionRequest;
use crate::js::coerce::{js_string, truthy};

/// The controlOut index and its corruption signals.
#[derive(Debug, Clone, Default)]
pub struct ControlOutIndex {
    /// request_id → recorded `response.response` body.
    pub bodies: HashMap<String, Map<String, Value>>,
    /// Ids seen again with a different canonical body (first kept), in order.
    pub differing_duplicates: Vec<String>,
    /// 0-based indices of non-JSON lines.
    pub malformed_lines: Vec<usize>,
    /// Every line (0-based index, request_id) that repeated an id with a
    /// different body — each one a replay warning.
    pub differing_duplicate_lines: Vec<(usize, String)>,
}

/// Builds the index from the raw controlOut lines.
pub fn build_index(lines: &[&str]) -> ControlOutIndex {
    let mut idx = ControlOutIndex::default();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(m) = serde_json::from_str::<Value>(line) else {
            idx.malformed_lines.push(i);
            continue;
        };
        if m.get("type").and_then(Value::as_str) != Some("control_response") {
            continue;
        }
        let Some(resp) = m.get("response") else {
            continue;
        };
        if resp.get("subtype").and_then(Value::as_str) != Some("success") {
            continue;
        }
        let Some(body) = resp.get("response").and_then(Value::as_object) else {
            continue;
        };
        if body.contains_key("mcp_response") {
            continue;
        }
        let rid = match resp.get("request_id") {
            Some(v) if truthy(Some(v)) => js_string(v),
            _ => continue,
        };
        match idx.bodies.get(&rid) {
            Some(existing) => {
                if canon_object(existing) != canon_object(body) {
                    idx.differing_duplicate_lines.push((i, rid.clone()));
                    if !idx.differing_duplicates.contains(&rid) {
                        idx.differing_duplicates.push(rid);
                    }
                }
            }
            None => {
                idx.bodies.insert(rid, body.clone());
            }
        }
    }
    idx
}

/// Recursively key-sorted compact JSON (cowork-harness `canon()`), through
/// the one canonical serializer, [`crate::js::json`]. A value `jcs1` refuses (a
/// non-finite number) keeps its recorded spelling: both sides of every
/// comparison made here come from recorded values, so the fallback is stable.
pub fn canon(v: &Value) -> String {
    let mut out = String::new();
    canon_into(v, &mut out);
    out
}

/// [`canon`], appended to `out`.
pub fn canon_into(v: &Value, out: &mut String) {
    if crate::js::json::jcs1_serde_into(v, out).is_err() {
        use std::fmt::Write as _;
        let _ = write!(out, "{v}");
    }
}

fn canon_object(m: &Map<String, Value>) -> String {
    canon(&Value::Object(m.clone()))
}

/// What the replay decider answered (the deserialised recorded reply).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Allow(Option<Value>),
    Deny(String),
    Answers(Map<String, Value>),
    Dialog {
        ok: bool,
        choice: Option<Value>,
    },
    Elicit {
        action: &'static str,
        content: Option<Value>,
    },
}

/// `deserializeDecision`: recorded body → decider reply.
pub fn deserialize(req: &DecisionRequest, body: &Map<String, Value>) -> Reply {
    match req {
        DecisionRequest::Permission { .. } => match body.get("behavior").and_then(Value::as_str) {
            Some("deny") => Reply::Deny(
                body.get("message")
                    .filter(|v| !v.is_null())
                    .map_or_else(|| "denied".to_owned(), js_string),
            ),
            Some("allow") => Reply::Allow(body.get("updatedInput").cloned()),
            _ => Reply::Deny("deserializeDecision: invalid permission behavior".into()),
        },
        DecisionRequest::Question { .. } => {
            let answers = body
                .get("updatedInput")
                .and_then(Value::as_object)
                .and_then(|ui| ui.get("answers"))
                .and_then(Value::as_object)
                .filter(|a| a.values().all(Value::is_string))
                .cloned()
                .unwrap_or_default();
            Reply::Answers(answers)
        }
        DecisionRequest::Dialog { .. } => {
            let ok = body.get("behavior").and_then(Value::as_str) == Some("ok");
            Reply::Dialog {
                ok,
                choice: if ok {
                    body.get("choice").cloned()
                } else {
                    None
                },
            }
        }
        DecisionRequest::Elicit { .. } => Reply::Elicit {
            action: match body.get("action").and_then(Value::as_str) {
                Some("accept") => "accept",
                Some("cancel") => "cancel",
                _ => "decline",
            },
            content: body.get("content").cloned(),
        },
    }
}

/// `serializeDecision(...).response.response`: the reply body the driver writes.
pub fn serialize(req: &DecisionRequest, reply: &Reply) -> Value {
    match (req, reply) {
        (DecisionRequest::Permission { input, .. }, Reply::Allow(ui)) => {
            let updated = match ui {
                Some(v) if !v.is_null() => v.clone(),
                _ => input.clone(),
            };
            json!({"behavior": "allow", "updatedInput": updated})
        }
        (DecisionRequest::Permission { .. }, Reply::Deny(msg)) => {
            json!({"behavior": "deny", "message": msg})
        }
        (DecisionRequest::Question { raw_questions, .. }, Reply::Answers(a)) => {
            json!({"behavior": "allow", "updatedInput": {"questions": raw_questions, "answers": a}})
        }
        (DecisionRequest::Dialog { .. }, Reply::Dialog { ok: true, choice }) => match choice {
            Some(c) => json!({"behavior": "ok", "choice": c}),
            None => json!({"behavior": "ok"}),
        },
        (DecisionRequest::Dialog { .. }, Reply::Dialog { ok: false, .. }) => {
            json!({"behavior": "cancelled"})
        }
        (DecisionRequest::Elicit { .. }, Reply::Elicit { action, content }) => match content {
            Some(c) => json!({"action": action, "content": c}),
            None => json!({"action": action}),
        },
        _ => json!({"behavior": "deny", "message": "decider returned a mismatched response kind"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_skips_mcp_and_flags_differing_duplicates() {
        let lines = [
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"a","response":{"behavior":"allow","updatedInput":{}}}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"m","response":{"mcp_response":{}}}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"a","response":{"updatedInput":{},"behavior":"allow"}}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"a","response":{"behavior":"deny"}}}"#,
            "not json",
        ];
        let idx = build_index(&lines);
        assert_eq!(idx.bodies.len(), 1);
        assert_eq!(idx.differing_duplicates, vec!["a".to_owned()]);
        assert_eq!(idx.malformed_lines, vec![4]);
    }

    #[test]
    fn canon_sorts_keys_recursively() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"a":{"d":[2,{"z":1,"y":2}],"c":null}}"#).unwrap();
        assert_eq!(canon(&v), r#"{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}"#);
    }
}
