//! PreToolUse hooks and path denials. During the events: a
//! `system/permission_denied` for a path-bearing file-tool call. At the end
//! (only with `controlOut`): every recorded `control_request` — also past a
//! truncation point, as the original does — paired with its recorded reply:
//! hook callbacks become hook events (a blocking hostloop path gate also a
//! `pretooluse` denial), denied file-tool permissions `can_use_tool` denials
//! (docs/spec/replay.md §2.5 steps 7–8).

use serde_json::{Map, Value};

use super::{End, Fold, Step};
use crate::evidence::control::{self, Reply};
use crate::evidence::parse::{self, AgentEvent, DecisionRequest};
use crate::evidence::run::{
    FILE_ATTEMPT_TOOLS, HOSTLOOP_PATH_GATE_ID, HookEvent, PathDenial, RunRecord,
};
use crate::js::coerce::js_string;
use crate::protocol::{kind, subtype};

#[derive(Default)]
pub(in crate::evidence) struct Hooks {
    /// `permission_denied` denials, listed after the reconstructed ones.
    permission_denied: Vec<PathDenial>,
}

impl Fold for Hooks {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        let AgentEvent::SystemEvent { subtype, data } = step.event else {
            return Ok(());
        };
        if subtype != "permission_denied" {
            return Ok(());
        }
        let fields = data.fields();
        let fields = &*fields;
        if let Some(tuid) = fields.get("tool_use_id") {
            let tuid = js_string(tuid);
            if let Some(a) = rec
                .file_tool_attempts
                .iter()
                .find(|a| a.tool_use_id.as_deref() == Some(tuid.as_str()) && a.gate_path.is_some())
            {
                let denial = PathDenial {
                    source: "permission_denied",
                    tool: fields
                        .get("tool_name")
                        .filter(|v| !v.is_null())
                        .map_or_else(|| a.tool.clone(), js_string),
                    path: denied_path_from(a.file_path.as_deref(), a.path.as_deref()),
                    callback_id: None,
                    decision_reason_type: fields
                        .get("decision_reason_type")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    agent_id: fields
                        .get("agent_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    decision: "deny",
                    reason: fields
                        .get("decision_reason")
                        .and_then(Value::as_str)
                        .or_else(|| fields.get("message").and_then(Value::as_str))
                        .map(str::to_owned),
                    tool_use_id: Some(tuid),
                };
                self.permission_denied.push(denial);
            }
        }
        Ok(())
    }

    /// Without `controlOut` hook keys cannot be evaluated: no hook events,
    /// no path denials (the `permission_denied` ones included).
    fn finish(&mut self, end: &End<'_>, rec: &mut RunRecord) {
        if rec.has_control_out {
            reconstruct_hooks(rec, end.hook_lines);
            if let Some(pd) = rec.path_denials.as_mut() {
                pd.extend(std::mem::take(&mut self.permission_denied));
            }
        }
    }
}

/// The lines hook reconstruction parses (a cheap superset).
pub(in crate::evidence) fn is_hook_candidate(line: &str) -> bool {
    // Asked of every recorded line: one searcher, built once.
    static CONTROL_REQUEST: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(kind::CONTROL_REQUEST));
    CONTROL_REQUEST.find(line.as_bytes()).is_some()
}

fn is_vm_sessions_path(p: Option<&str>) -> bool {
    p.is_some_and(|v| v == "/sessions" || v.starts_with("/sessions/"))
}

/// `deniedPathFrom`: the `/sessions` one of file_path/path, else the first present.
fn denied_path_from(file_path: Option<&str>, path: Option<&str>) -> Option<String> {
    [file_path, path]
        .into_iter()
        .find(|p| is_vm_sessions_path(*p))
        .flatten()
        .or(file_path)
        .or(path)
        .map(str::to_owned)
}

/// Hook events and pretooluse/can_use_tool path denials from the recorded
/// `control_request`s paired with their controlOut replies (spec §2.5 steps 7–8).
pub(in crate::evidence) fn reconstruct_hooks(rec: &mut RunRecord, lines: &[String]) {
    let mut hooks = Vec::new();
    let mut denials = Vec::new();
    // Every line is scanned (also past a truncation point), as the original does.
    for line in lines.iter().filter(|l| is_hook_candidate(l)) {
        let Ok(Value::Object(mo)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let mo = &mo;
        if mo.get("type").and_then(Value::as_str) != Some(kind::CONTROL_REQUEST) {
            continue;
        }
        let req_id = mo.get("request_id").and_then(Value::as_str);
        let reply = req_id.and_then(|id| rec.control_out.bodies.get(id));
        let empty = Map::new();
        let request = mo
            .get("request")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        match request.get("subtype").and_then(Value::as_str) {
            Some(subtype::HOOK_CALLBACK) => {
                let hev = hook_callback(request, reply);
                denials.extend(path_gate_denial(&hev));
                hooks.push(hev);
            }
            Some(subtype::CAN_USE_TOOL) => denials.extend(permission_denial(mo, reply)),
            _ => {}
        }
    }
    rec.hook_events = Some(hooks);
    rec.path_denials = Some(denials);
}

/// The hook event of a `hook_callback` request and its recorded reply.
fn hook_callback(request: &Map<String, Value>, reply: Option<&Map<String, Value>>) -> HookEvent {
    let callback_id = request
        .get("callback_id")
        .map(js_string)
        .unwrap_or_else(|| "undefined".into());
    let tool_use_id = request.get("tool_use_id").and_then(Value::as_str);
    hook_event_from(
        callback_id,
        reply,
        request.get("input"),
        tool_use_id.map(str::to_owned),
    )
}

/// The host loop's path gate blocking a tool is a path denial.
fn path_gate_denial(hev: &HookEvent) -> Option<PathDenial> {
    if hev.callback_id != HOSTLOOP_PATH_GATE_ID || hev.decision != "block" {
        return None;
    }
    Some(PathDenial {
        source: "pretooluse",
        tool: hev.tool.clone().unwrap_or_else(|| "?".into()),
        path: denied_path_from(hev.file_path.as_deref(), hev.path.as_deref()),
        callback_id: Some(hev.callback_id.clone()),
        decision_reason_type: None,
        agent_id: hev.agent_id.clone(),
        decision: "deny",
        reason: hev.reason.clone(),
        tool_use_id: hev.tool_use_id.clone(),
    })
}

/// A denied `can_use_tool` for a file tool, with the path it tried.
fn permission_denial(
    mo: &Map<String, Value>,
    reply: Option<&Map<String, Value>>,
) -> Option<PathDenial> {
    let body = reply?;
    let req = parse::to_decision_request(mo).ok()??;
    let DecisionRequest::Permission {
        tool,
        input,
        agent_id,
        tool_use_id,
        decision_reason_type,
        ..
    } = &req
    else {
        return None;
    };
    if !FILE_ATTEMPT_TOOLS.contains(&tool.as_str()) {
        return None;
    }
    let Reply::Deny(message) = control::deserialize(&req, body) else {
        return None;
    };
    let path = denied_path_from(
        input.get("file_path").and_then(Value::as_str),
        input.get("path").and_then(Value::as_str),
    )?;
    Some(PathDenial {
        source: "can_use_tool",
        tool: tool.clone(),
        path: Some(path),
        callback_id: None,
        decision_reason_type: decision_reason_type.clone(),
        agent_id: agent_id.clone(),
        decision: "deny",
        reason: Some(message),
        tool_use_id: tool_use_id.clone(),
    })
}

/// `hookEventFrom`: a hook reply body + request input → hook event.
fn hook_event_from(
    callback_id: String,
    reply: Option<&Map<String, Value>>,
    input: Option<&Value>,
    tool_use_id: Option<String>,
) -> HookEvent {
    let empty = Map::new();
    let r = reply.unwrap_or(&empty);
    let nested = r
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let block = r.get("decision").and_then(Value::as_str) == Some("block")
        || nested.get("permissionDecision").and_then(Value::as_str) == Some("deny");
    let reason = r
        .get("reason")
        .and_then(Value::as_str)
        .or_else(|| {
            nested
                .get("permissionDecisionReason")
                .and_then(Value::as_str)
        })
        .map(str::to_owned);
    let input = input.and_then(Value::as_object);
    let tool = input
        .and_then(|i| i.get("tool_name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let ti = input
        .and_then(|i| i.get("tool_input"))
        .and_then(Value::as_object);
    HookEvent {
        callback_id,
        decision: if block { "block" } else { "allow" },
        reason,
        tool,
        file_path: ti
            .and_then(|t| t.get("file_path"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        path: ti
            .and_then(|t| t.get("path"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        tool_use_id,
        agent_id: input
            .and_then(|i| i.get("agent_id"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    }
}
