//! The stream-json parser: one parsed `events` line → agent events
//! (docs/spec/replay.md §3.1, cowork-harness `parseMessage`).
//!
//! Only the line types the original handles are recognised; everything else
//! (`stream_event` deltas, `rate_limit_event`, `control_response` echoes) yields
//! nothing. A structurally malformed frame (non-array init field, non-object
//! assistant block, bad `request_id`, malformed AskUserQuestion body) is an
//! `Err(message)` — the caller records it as a protocol-error line.

use serde_json::{Map, Value};

use crate::js::coerce::{js_string, js_type, not_iterable_error, truthy};
use crate::js::utf16;

pub use super::event::*;

/// An optional string field (JS: `typeof v === "string" ? v : undefined`).
fn str_field(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// `for (const b of content ?? [])` over a content that is neither an
/// array nor a string: null iterates nothing, anything else throws V8's
/// TypeError, which the re-drive records as a malformed control frame.
fn not_iterable(v: &Value) -> Result<&'static [Value], String> {
    match v {
        // An (empty) string iterates nothing here; callers handle the rest.
        Value::Null | Value::String(_) => Ok(&[]),
        other => Err(not_iterable_error(other)),
    }
}

/// JS `v ? String(v) : undefined`.
fn truthy_string(v: Option<&Value>) -> Option<String> {
    if truthy(v) { v.map(js_string) } else { None }
}

/// A `tool_result` block's event, from its flattened (uncapped) text: the
/// display and assertion caps are applied here, once.
pub(super) fn tool_result_event(
    tool_use_id: Option<String>,
    is_error: bool,
    full: String,
    text_blocks: Option<Vec<String>>,
) -> AgentEvent {
    let full_len = if full.len() <= ASSERT_TEXT_CAP {
        full.len()
    } else {
        utf16::len(&full)
    };
    let error_line = is_error
        .then(|| crate::elide::last_line(&full).map(str::to_owned))
        .flatten();
    // Most results fit the assertion cap whole: keep the string itself then.
    let assert_text = match utf16::slice(&full, ASSERT_TEXT_CAP).len() {
        n if n == full.len() => full,
        n => full[..n].to_owned(),
    };
    let text = utf16::slice(&assert_text, DISPLAY_TEXT_CAP).to_owned();
    AgentEvent::ToolResult {
        result: std::sync::Arc::new(crate::evidence::ToolResult::new(
            tool_use_id,
            is_error,
            text,
            Some(assert_text),
            // The original measures the 200 000-char provenance copy.
            full_len.min(200_000) > ASSERT_TEXT_CAP,
            text_blocks,
        )),
        error_line,
    }
}

/// Flattens a tool_result `content` (string, or array of blocks) without a cap.
fn flatten_tool_result(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.as_object() {
                Some(o) if o.contains_key("text") => {
                    o.get("text").map(js_string).unwrap_or_default()
                }
                _ => serde_json::to_string(b).unwrap_or_default(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

fn text_blocks(content: Option<&Value>) -> Option<Vec<String>> {
    let blocks = content?.as_array()?;
    let texts: Vec<String> = blocks
        .iter()
        .filter_map(Value::as_object)
        .filter(|o| o.get("type").and_then(Value::as_str) == Some("text"))
        .map(|o| {
            o.get("text")
                .map(js_string)
                .unwrap_or_else(|| "undefined".into())
        })
        .collect();
    if texts.is_empty() { None } else { Some(texts) }
}

fn require_init_array<'a>(msg: &'a Map<String, Value>, field: &str) -> Result<&'a [Value], String> {
    match msg.get(field) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(format!(
            "control-in: malformed system/init frame: \"{field}\" must be an array, got {}",
            js_type(v)
        )),
    }
}

fn require_request_id(msg: &Map<String, Value>) -> Result<String, String> {
    match msg.get("request_id") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        other => Err(format!(
            "control-in: malformed request_id: {}",
            other.map_or_else(
                || "undefined".to_owned(),
                |v| serde_json::to_string(v).unwrap_or_default()
            )
        )),
    }
}

/// Validates an AskUserQuestion `questions` value (zod `QuestionsSchema`).
fn parse_questions(v: &Value) -> Result<Vec<QuestionSpec>, String> {
    let Some(items) = v.as_array() else {
        return Err(invalid("<root>", "array", js_type(v)));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_question(i, item))
        .collect()
}

/// zod's message for a value of the wrong type at `path`.
fn invalid(path: &str, expected: &str, received: &str) -> String {
    format!("{path}: Invalid input: expected {expected}, received {received}")
}

/// Question `i` of a `questions` array.
fn parse_question(i: usize, item: &Value) -> Result<QuestionSpec, String> {
    let Some(q) = item.as_object() else {
        return Err(invalid(&i.to_string(), "object", js_type(item)));
    };
    let opt_str = |k: &str| -> Result<Option<String>, String> {
        match q.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(o) => Err(invalid(&format!("{i}.{k}"), "string", js_type(o))),
        }
    };
    let question = opt_str("question")?;
    let header = opt_str("header")?;
    let multi_select = match q.get("multiSelect") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(o) => return Err(invalid(&format!("{i}.multiSelect"), "boolean", js_type(o))),
    };
    let options = match q.get("options") {
        None => None,
        Some(Value::Array(opts)) => Some(
            opts.iter()
                .enumerate()
                .map(|(j, o)| parse_option(&format!("{i}.options.{j}"), o))
                .collect::<Result<Vec<_>, String>>()?,
        ),
        Some(o) => return Err(invalid(&format!("{i}.options"), "array", js_type(o))),
    };
    Ok(QuestionSpec {
        question,
        header,
        options,
        multi_select,
        raw: item.clone(),
    })
}

/// One offered option at `path`: its label and description.
fn parse_option(path: &str, o: &Value) -> Result<(String, Option<String>), String> {
    let Some(om) = o.as_object() else {
        return Err(invalid(path, "object", js_type(o)));
    };
    let label = match om.get("label") {
        Some(Value::String(s)) => s.clone(),
        other => {
            let received = other.map_or("undefined", js_type);
            return Err(invalid(&format!("{path}.label"), "string", received));
        }
    };
    let description = match om.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(d) => {
            return Err(invalid(
                &format!("{path}.description"),
                "string",
                js_type(d),
            ));
        }
    };
    Ok((label, description))
}

/// `toDecisionRequest`: a control_request → decision request (or none).
pub fn to_decision_request(msg: &Map<String, Value>) -> Result<Option<DecisionRequest>, String> {
    let id = require_request_id(msg)?;
    let empty = Map::new();
    let request = msg
        .get("request")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let sub = request.get("subtype").and_then(Value::as_str);
    match sub {
        Some("can_use_tool") => {
            let tool = match request.get("tool_name") {
                None | Some(Value::Null) => String::new(),
                Some(v) => js_string(v),
            };
            let input = request.get("input");
            let tool_use_id = truthy_string(request.get("tool_use_id"));
            if tool == "AskUserQuestion" {
                let raw_questions = input
                    .and_then(Value::as_object)
                    .and_then(|i| i.get("questions"))
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or_else(|| Value::Array(vec![]));
                let questions = parse_questions(&raw_questions).map_err(|e| {
                    format!("control-in: malformed AskUserQuestion questions for request {id}: {e}")
                })?;
                return Ok(Some(DecisionRequest::Question {
                    id,
                    questions,
                    raw_questions,
                    tool_use_id,
                }));
            }
            Ok(Some(DecisionRequest::Permission {
                id,
                tool,
                input: match input {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(v) => v.clone(),
                },
                tool_use_id,
                agent_id: truthy_string(request.get("agent_id")),
                decision_reason_type: str_field(request, "decision_reason_type"),
            }))
        }
        Some("request_user_dialog") => Ok(Some(DecisionRequest::Dialog { id })),
        Some("elicitation") | Some("side_question") => Ok(Some(DecisionRequest::Elicit { id })),
        _ => Ok(None),
    }
}

/// `parseMessage`: one parsed events line → agent events. Takes the line by
/// value so the events that keep a whole frame move it instead of cloning.
pub fn parse_message(msg: Value) -> Result<Vec<AgentEvent>, String> {
    let mut ev = Vec::new();
    let Value::Object(map) = msg else {
        return Ok(ev);
    };
    match map.get("type").and_then(Value::as_str) {
        Some("infra_error") => ev.push(AgentEvent::InfraError {
            message: str_field(&map, "message").unwrap_or_else(|| "infrastructure error".into()),
            source: str_field(&map, "source"),
        }),
        Some("system") => ev.extend(system_event(map)?),
        Some("control_request") => {
            if let Some(dr) = to_decision_request(&map)? {
                ev.push(AgentEvent::Decision(dr));
            }
        }
        Some("assistant") => assistant_events(&map, &mut ev)?,
        Some("user") => user_events(&map, &mut ev)?,
        Some("result") => ev.push(result_event(&map)),
        _ => {}
    }
    Ok(ev)
}

/// A `system` line: the init handshake, API metrics, a thinking line, or
/// any other subtype kept whole (without its `type` and `subtype`).
fn system_event(mut map: Map<String, Value>) -> Result<Option<AgentEvent>, String> {
    let m = &map;
    let event = match m.get("subtype").and_then(Value::as_str) {
        Some("init") => AgentEvent::Init {
            tools: require_init_array(m, "tools")?
                .iter()
                .map(js_string)
                .collect(),
            mcp_servers: require_init_array(m, "mcp_servers")?.to_vec(),
            skills: require_init_array(m, "skills")?
                .iter()
                .map(js_string)
                .collect(),
            cwd: str_field(m, "cwd"),
        },
        Some("api_metrics") => AgentEvent::Metrics(Value::Object(map)),
        Some("thinking") => AgentEvent::Thinking {
            // `String(msg.content ?? "")`; never redacted, no model.
            block: std::sync::Arc::new(ThinkingBlock::new(
                Value::String(
                    m.get("content")
                        .filter(|c| !c.is_null())
                        .map(js_string)
                        .unwrap_or_default(),
                ),
                false,
            )),
            model: None,
        },
        Some(sub) => {
            let subtype = sub.to_owned();
            map.shift_remove("type");
            map.shift_remove("subtype");
            AgentEvent::SystemEvent {
                subtype,
                data: super::run::ContextData::Fields(map),
            }
        }
        None => return Ok(None),
    };
    Ok(Some(event))
}

/// An `assistant` line's content blocks: text, thinking, tool uses (and the
/// sub-agent dispatch a delegating tool use is).
fn assistant_events(m: &Map<String, Value>, ev: &mut Vec<AgentEvent>) -> Result<(), String> {
    let msg_parent = truthy_string(m.get("parent_tool_use_id"));
    let message = m.get("message").and_then(Value::as_object);
    let model = message.and_then(|mm| str_field(mm, "model"));
    let blocks: &[Value] = match message.and_then(|mm| mm.get("content")) {
        Some(Value::Array(a)) => a,
        // `for…of` over a string: its first code point is a
        // non-object block.
        Some(Value::String(t)) if !t.is_empty() => {
            return Err(
                "control-in: malformed assistant content block at index 0: expected an \
                    object, got string"
                    .into(),
            );
        }
        Some(other) => not_iterable(other)?,
        None => &[],
    };
    for (block_index, raw) in blocks.iter().enumerate() {
        let Some(block) = raw.as_object() else {
            return Err(format!(
                "control-in: malformed assistant content block at index {block_index}: \
                    expected an object, got {}",
                js_type(raw)
            ));
        };
        let parent = truthy_string(block.get("parent_tool_use_id")).or_else(|| msg_parent.clone());
        match block.get("type").and_then(Value::as_str) {
            Some("text") => ev.push(AgentEvent::AssistantText {
                text: block.get("text").map(js_string).unwrap_or_default(),
                parent,
                model: model.clone(),
            }),
            Some("thinking") => ev.push(AgentEvent::Thinking {
                block: std::sync::Arc::new(thinking_block(block)),
                model: model.clone(),
            }),
            Some("tool_use") => {
                let at = BlockAt {
                    line: m,
                    message,
                    index: block_index,
                };
                tool_use_events(block, at, parent, &model, ev);
            }
            _ => {}
        }
    }
    Ok(())
}

/// A thinking block's text: `block.thinking ?? block.text ?? ""`; redacted
/// when that is "" and a non-empty string `signature` shows the model did
/// reason.
fn thinking_block(block: &Map<String, Value>) -> ThinkingBlock {
    let text = block
        .get("thinking")
        .filter(|t| !t.is_null())
        .or_else(|| block.get("text").filter(|t| !t.is_null()))
        .cloned()
        .unwrap_or_else(|| Value::String(String::new()));
    let redacted = text.as_str() == Some("")
        && block
            .get("signature")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
    ThinkingBlock::new(text, redacted)
}

/// Where a content block stands: its line, the line's `message`, and its
/// index among the message's blocks (what names an unpaired dispatch).
#[derive(Clone, Copy)]
struct BlockAt<'a> {
    line: &'a Map<String, Value>,
    message: Option<&'a Map<String, Value>>,
    index: usize,
}

/// A `tool_use` block: the tool use, and a sub-agent dispatch when the tool
/// delegates (`Agent`, `Task`, or any input naming a `subagent_type`).
fn tool_use_events(
    block: &Map<String, Value>,
    at: BlockAt<'_>,
    parent: Option<String>,
    model: &Option<String>,
    ev: &mut Vec<AgentEvent>,
) {
    let name = block.get("name").map(js_string).unwrap_or_default();
    let input = block.get("input").cloned().unwrap_or(Value::Null);
    let tool_use_id = truthy_string(block.get("id"));
    ev.push(AgentEvent::ToolUse {
        name: name.clone(),
        input: input.clone(),
        parent: parent.clone(),
        tool_use_id: tool_use_id.clone(),
        model: model.clone(),
    });
    let empty = Map::new();
    let inp = input.as_object().unwrap_or(&empty);
    if name == "Agent" || name == "Task" || inp.contains_key("subagent_type") {
        ev.push(subagent_dispatch(inp, at, tool_use_id, parent, model));
    }
}

/// The sub-agent dispatch of a delegating tool use, from its input.
fn subagent_dispatch(
    inp: &Map<String, Value>,
    at: BlockAt<'_>,
    tool_use_id: Option<String>,
    parent: Option<String>,
    model: &Option<String>,
) -> AgentEvent {
    let declared = match (inp.get("tools"), inp.get("allowedTools")) {
        (Some(Value::Array(t)), _) => t.iter().map(js_string).collect(),
        (_, Some(Value::Array(t))) => t.iter().map(js_string).collect(),
        _ => Vec::new(),
    };
    let msg_key = at
        .message
        .and_then(|mm| mm.get("id"))
        .filter(|v| !v.is_null())
        .or_else(|| at.line.get("uuid").filter(|v| !v.is_null()))
        .map_or_else(|| "anon".to_owned(), js_string);
    let dispatch_type = inp
        .get("subagent_type")
        .filter(|v| !v.is_null())
        .or_else(|| inp.get("subagentType").filter(|v| !v.is_null()))
        .map_or_else(|| "unknown".to_owned(), js_string);
    let block_index = at.index;
    AgentEvent::SubagentDispatch {
        tool_use_id: tool_use_id.unwrap_or_else(|| format!("unpaired-{msg_key}-b{block_index}")),
        parent,
        dispatch_agent_type: dispatch_type,
        type_omitted: !inp.contains_key("subagent_type") && !inp.contains_key("subagentType"),
        declared_tools: declared,
        description: inp
            .get("description")
            .filter(|v| !v.is_null())
            .map(js_string),
        prompt: inp
            .get("prompt")
            .filter(|v| !v.is_null())
            .map(|p| utf16::slice(&js_string(p), ASSERT_TEXT_CAP).to_owned()),
        dispatch_model: model.clone(),
    }
}

/// A `user` line: the sub-agent result envelope, then each tool result.
fn user_events(m: &Map<String, Value>, ev: &mut Vec<AgentEvent>) -> Result<(), String> {
    let message = m.get("message").and_then(Value::as_object);
    let blocks: &[Value] = match message.and_then(|mm| mm.get("content")) {
        Some(Value::Array(a)) => a,
        // The original iterates the content with `for…of`: a string
        // yields its code points, each a non-object (malformed) block.
        Some(Value::String(text)) => {
            ev.extend(text.chars().map(|_| AgentEvent::ProtocolEvidenceError));
            &[]
        }
        Some(other) => not_iterable(other)?,
        None => &[],
    };
    if let Some(env) = m.get("tool_use_result").and_then(Value::as_object) {
        ev.extend(subagent_result_meta(env, blocks));
    }
    for block in blocks {
        let Some(b) = block.as_object() else {
            ev.push(AgentEvent::ProtocolEvidenceError);
            continue;
        };
        if b.get("type").and_then(Value::as_str) != Some("tool_result") {
            continue;
        }
        let tool_use_id = truthy_string(b.get("tool_use_id"));
        if tool_use_id.is_none() {
            ev.push(AgentEvent::ProtocolEvidenceError);
        }
        ev.push(tool_result_event(
            tool_use_id,
            truthy(b.get("is_error")),
            flatten_tool_result(b.get("content")),
            text_blocks(b.get("content")),
        ));
    }
    Ok(())
}

/// A `tool_use_result` envelope that says which sub-agent answered (its
/// `resolvedModel`, `agentType` or `status`), paired with the line's first
/// tool result.
fn subagent_result_meta(env: &Map<String, Value>, blocks: &[Value]) -> Option<AgentEvent> {
    let tr = blocks.iter().find(|b| {
        b.as_object()
            .is_some_and(|o| o.get("type").and_then(Value::as_str) == Some("tool_result"))
    });
    let tool_use_id = tr.and_then(|t| truthy_string(t.get("tool_use_id")))?;
    let has = ["resolvedModel", "agentType", "status"]
        .iter()
        .any(|k| env.get(*k).is_some_and(Value::is_string));
    has.then(|| AgentEvent::SubagentResultMeta {
        tool_use_id,
        agent_type: str_field(env, "agentType"),
        resolved_model: str_field(env, "resolvedModel"),
    })
}

/// The run's `result` line.
fn result_event(m: &Map<String, Value>) -> AgentEvent {
    AgentEvent::Result {
        is_error: truthy(m.get("is_error")),
        usage: m.get("usage").filter(|u| !u.is_null()).cloned(),
        result_text: str_field(m, "result"),
        subtype: str_field(m, "subtype"),
        api_error_status: m.get("api_error_status").and_then(Value::as_f64),
        cost_usd: m.get("total_cost_usd").and_then(Value::as_f64),
        num_turns: m.get("num_turns").and_then(Value::as_f64),
        model_usage: m
            .get("modelUsage")
            .filter(|v| v.is_object() || v.is_array())
            .cloned(),
    }
}

#[cfg(test)]
mod tests;
