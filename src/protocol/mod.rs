//! The stream-json protocol between a host and a Claude Code style agent, in
//! one place: the typed view of each line the agent writes, and the frames
//! the host writes back (docs/spec/real-client.md §1b, §3).
//!
//! Everything here is a *view* over a parsed `serde_json::Value`: agents and
//! cassettes are untrusted, so a line of an unexpected shape is
//! [`Line::Other`] or a block is [`Block::Other`], never an error. Readers
//! that must reject malformed content (the live loop's protocol checks, the
//! replay re-drive's parity rules) decide that themselves; this module only
//! says what the wire means.
//!
//! Read by the live agent loop (`agent::session`), the recorded-reply
//! extraction and the divergence check of `rerun`.
//!
//! What it holds: the `Line` / `Message` / `Block` views, `Request` (what a
//! `control_request` asks: `can_use_tool`, `hook_callback`, `mcp_message`,
//! dialogs), readers of init, result and tool-input fields, the protocol
//! strings, and the host frame builders (permission, hook, MCP and dialog
//! answers). The live loop (`agent::session`) spells no protocol string of its
//! own.

use serde_json::{Map, Value, json};

/// `type` of the lines and frames.
pub mod kind {
    pub const SYSTEM: &str = "system";
    pub const ASSISTANT: &str = "assistant";
    pub const USER: &str = "user";
    pub const RESULT: &str = "result";
    pub const CONTROL_REQUEST: &str = "control_request";
    pub const CONTROL_RESPONSE: &str = "control_response";
}

/// `subtype` of `system` lines and control requests.
pub mod subtype {
    pub const INIT: &str = "init";
    /// The agent's current background tasks (`tasks: [...]`), e.g. an
    /// asynchronous sub-agent still running.
    pub const BACKGROUND_TASKS_CHANGED: &str = "background_tasks_changed";
    pub const INITIALIZE: &str = "initialize";
    pub const CAN_USE_TOOL: &str = "can_use_tool";
    pub const HOOK_CALLBACK: &str = "hook_callback";
    pub const MCP_MESSAGE: &str = "mcp_message";
    pub const REQUEST_USER_DIALOG: &str = "request_user_dialog";
    pub const ELICITATION: &str = "elicitation";
    pub const SIDE_QUESTION: &str = "side_question";
    pub const SUCCESS: &str = "success";
    pub const ERROR: &str = "error";
}

/// The tool whose permission request is a question to the user.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
/// The tool that loads a skill.
pub const SKILL_TOOL: &str = "Skill";
/// Tools that dispatch a sub-agent.
pub const DISPATCH_TOOLS: [&str; 2] = ["Agent", "Task"];

/// The option labels of one `AskUserQuestion` question (`options[].label`),
/// in order; an option without a string label is left out.
pub fn option_labels(question: &Value) -> Vec<&str> {
    question
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("label").and_then(Value::as_str))
        .collect()
}

/// One line the agent wrote, by `type`.
#[derive(Debug, Clone, Copy)]
pub enum Line<'a> {
    /// `system` (with its `subtype`, `init` among them).
    System {
        subtype: &'a str,
        body: &'a Map<String, Value>,
    },
    Assistant(Message<'a>),
    User(Message<'a>),
    Result(&'a Map<String, Value>),
    ControlRequest {
        request_id: Option<&'a str>,
        subtype: &'a str,
        request: Option<&'a Map<String, Value>>,
    },
    ControlResponse(&'a Map<String, Value>),
    /// Any other object, or a value that is not an object.
    Other,
}

/// An `assistant` or `user` line.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub line: &'a Map<String, Value>,
    /// `parent_tool_use_id`: the dispatching tool call of a sub-agent's line.
    pub parent_tool_use_id: Option<&'a str>,
    /// `message.id` (assistant lines).
    pub id: Option<&'a str>,
    /// `message.model`.
    pub model: Option<&'a str>,
    /// `message.content`: blocks, or a plain string.
    pub content: Option<&'a Value>,
}

impl<'a> Message<'a> {
    /// The content blocks (none for string content).
    pub fn blocks(&self) -> impl Iterator<Item = Block<'a>> + 'a {
        let items: &'a [Value] = match self.content {
            Some(Value::Array(items)) => items,
            _ => &[],
        };
        items.iter().map(Block::of)
    }

    /// `message.usage`.
    pub fn usage(&self) -> Option<&'a Map<String, Value>> {
        self.line
            .get("message")?
            .get("usage")
            .and_then(Value::as_object)
    }

    /// `message.stop_reason` when set (Claude Code streams `null`).
    pub fn stop_reason(&self) -> Option<&'a str> {
        self.line
            .get("message")?
            .get("stop_reason")
            .and_then(Value::as_str)
    }

    /// `isSynthetic: true`: text the agent injected (a skill body), not typed by a user.
    pub fn is_synthetic(&self) -> bool {
        self.line.get("isSynthetic").and_then(Value::as_bool) == Some(true)
    }
}

/// One content block.
#[derive(Debug, Clone, Copy)]
pub enum Block<'a> {
    Text(&'a str),
    ToolUse {
        id: Option<&'a str>,
        name: &'a str,
        input: Option<&'a Value>,
    },
    ToolResult {
        tool_use_id: Option<&'a str>,
        content: Option<&'a Value>,
        is_error: bool,
    },
    Thinking {
        thinking: &'a Value,
        signature: Option<&'a str>,
    },
    RedactedThinking {
        data: Option<&'a str>,
    },
    /// Images, documents, unknown types, non-objects.
    Other(&'a Value),
}

impl<'a> Block<'a> {
    pub fn of(v: &'a Value) -> Block<'a> {
        let Some(b) = v.as_object() else {
            return Block::Other(v);
        };
        let s = |k: &str| b.get(k).and_then(Value::as_str);
        match s("type") {
            Some("text") => match s("text") {
                Some(t) => Block::Text(t),
                None => Block::Other(v),
            },
            Some("tool_use") => Block::ToolUse {
                id: s("id"),
                name: s("name").unwrap_or_default(),
                input: b.get("input"),
            },
            Some("tool_result") => Block::ToolResult {
                tool_use_id: s("tool_use_id"),
                content: b.get("content"),
                is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
            },
            Some("thinking") => Block::Thinking {
                thinking: b.get("thinking").unwrap_or(&Value::Null),
                signature: s("signature"),
            },
            Some("redacted_thinking") => Block::RedactedThinking { data: s("data") },
            _ => Block::Other(v),
        }
    }
}

impl<'a> Line<'a> {
    /// Reads a parsed line.
    pub fn of(v: &'a Value) -> Line<'a> {
        let Some(obj) = v.as_object() else {
            return Line::Other;
        };
        let s = |k: &str| obj.get(k).and_then(Value::as_str);
        let message = || {
            let m = obj.get("message");
            Message {
                line: obj,
                parent_tool_use_id: s("parent_tool_use_id"),
                id: m.and_then(|m| m.get("id")).and_then(Value::as_str),
                model: m.and_then(|m| m.get("model")).and_then(Value::as_str),
                content: m.and_then(|m| m.get("content")),
            }
        };
        match s("type") {
            Some(kind::SYSTEM) => Line::System {
                subtype: s("subtype").unwrap_or_default(),
                body: obj,
            },
            Some(kind::ASSISTANT) => Line::Assistant(message()),
            Some(kind::USER) => Line::User(message()),
            Some(kind::RESULT) => Line::Result(obj),
            Some(kind::CONTROL_REQUEST) => {
                let request = obj.get("request").and_then(Value::as_object);
                Line::ControlRequest {
                    request_id: s("request_id"),
                    subtype: request
                        .and_then(|r| r.get("subtype"))
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    request,
                }
            }
            Some(kind::CONTROL_RESPONSE) => Line::ControlResponse(obj),
            _ => Line::Other,
        }
    }
}

/// The `system/init` field (`tools`, `mcp_servers`, `skills`) that is
/// present but not an array: a malformed init.
pub fn init_non_array_field(init: &Map<String, Value>) -> Option<&'static str> {
    ["tools", "mcp_servers", "skills"]
        .into_iter()
        .find(|k| init.get(*k).is_some_and(|v| !v.is_array()))
}

/// How many background tasks a `system/background_tasks_changed` line
/// lists as running.
pub fn background_task_count(body: &Map<String, Value>) -> usize {
    body.get("tasks")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A `result` line's `is_error` (absent or not a bool reads as false).
pub fn result_is_error(result: &Map<String, Value>) -> bool {
    result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The skill a `Skill` tool call loads (`input.skill`).
pub fn skill_of(input: Option<&Value>) -> Option<&str> {
    input.and_then(|i| i.get("skill")).and_then(Value::as_str)
}

/// Whether a tool call dispatches a sub-agent (an `Agent`/`Task` call, or
/// any call naming a `subagent_type`), and the type it names.
pub fn dispatch_of<'a>(name: &str, input: Option<&'a Value>) -> (bool, Option<&'a str>) {
    let named = input.and_then(|i| i.get("subagent_type"));
    (
        DISPATCH_TOOLS.contains(&name) || named.is_some(),
        named.and_then(Value::as_str),
    )
}

/// What a `control_request` asks, by subtype.
#[derive(Debug)]
pub enum Request<'a> {
    /// `can_use_tool`: may `tool_name` run with `input` (`{}` when absent)?
    CanUseTool { tool_name: &'a str, input: Value },
    /// `hook_callback`: a registered hook fired.
    HookCallback {
        callback_id: Option<&'a str>,
        /// `input.tool_input.run_in_background`.
        run_in_background: Option<&'a Value>,
    },
    /// `mcp_message`: a JSON-RPC message for an SDK MCP server (`message.id`).
    McpMessage {
        server: Option<&'a str>,
        message: Option<&'a Value>,
        rpc_id: Option<&'a Value>,
    },
    /// `request_user_dialog`.
    UserDialog,
    /// `elicitation` or `side_question`.
    Elicitation,
    /// A subtype the host does not support.
    Unsupported(&'a str),
}

impl<'a> Request<'a> {
    /// Reads a request of `subtype` from its `request` object.
    pub fn of(subtype: &'a str, request: &'a Map<String, Value>) -> Request<'a> {
        match subtype {
            subtype::CAN_USE_TOOL => Request::CanUseTool {
                tool_name: request
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                input: request.get("input").cloned().unwrap_or_else(|| json!({})),
            },
            subtype::HOOK_CALLBACK => Request::HookCallback {
                callback_id: request.get("callback_id").and_then(Value::as_str),
                run_in_background: request
                    .get("input")
                    .and_then(|i| i.pointer("/tool_input/run_in_background")),
            },
            subtype::MCP_MESSAGE => Request::McpMessage {
                server: request.get("server_name").and_then(Value::as_str),
                message: request.get("message"),
                rpc_id: request
                    .get("message")
                    .and_then(|m| m.get("id"))
                    .filter(|id| !id.is_null()),
            },
            subtype::REQUEST_USER_DIALOG => Request::UserDialog,
            subtype::ELICITATION | subtype::SIDE_QUESTION => Request::Elicitation,
            other => Request::Unsupported(other),
        }
    }
}

/// The `AskUserQuestion` call's `questions`.
pub fn questions_of(input: &Value) -> Value {
    input.get("questions").cloned().unwrap_or(Value::Null)
}

/// The input an `AskUserQuestion` call runs with once answered: its own
/// input with `questions` and the chosen `answers`.
pub fn answered_questions(input: &Value, questions: Value, answers: Map<String, Value>) -> Value {
    let mut updated = input.as_object().cloned().unwrap_or_default();
    updated.insert("questions".into(), questions);
    updated.insert("answers".into(), Value::Object(answers));
    Value::Object(updated)
}

/// Text of a `tool_result.content`: a string, or its text blocks joined by
/// newlines (images and other blocks are named by type).
pub fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match Block::of(item) {
                Block::Text(t) => t.to_owned(),
                _ => format!(
                    "[{}]",
                    item.get("type").and_then(Value::as_str).unwrap_or("block")
                ),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

// ---- frames the host writes ----

/// The `initialize` control request, with the hooks the host registers and
/// the SDK MCP servers it hosts (`sdkMcpServers`, left out when none, so a
/// run without them writes the frame it always did).
pub fn initialize_request(request_id: &str, hooks: Value, sdk_servers: &[String]) -> Value {
    let mut request = json!({"subtype": subtype::INITIALIZE, "hooks": hooks});
    if !sdk_servers.is_empty() {
        request["sdkMcpServers"] = json!(sdk_servers);
    }
    json!({
        "type": kind::CONTROL_REQUEST,
        "request_id": request_id,
        "request": request
    })
}

/// The `initialize` hooks: one `PreToolUse` hook on `matcher` tools,
/// answered under `callback_id`.
pub fn pre_tool_use_hook(matcher: &str, callback_id: &str) -> Value {
    json!({"PreToolUse": [{"matcher": matcher, "hookCallbackIds": [callback_id]}]})
}

/// A hook answer that blocks the tool call, with the reason the model sees.
pub fn hook_block(reason: &str) -> Value {
    json!({"decision": "block", "reason": reason})
}

/// A hook answer that lets the tool call go on.
pub fn hook_continue() -> Value {
    json!({})
}

/// The JSON-RPC error answer to an `mcp_message` for a server the host
/// does not run (`-32601`, method not found).
pub fn mcp_no_handler(rpc_id: &Value) -> Value {
    json!({"mcp_response": {
        "jsonrpc": "2.0", "id": rpc_id,
        "error": {"code": -32601, "message": "no sdkMcp handler configured"}}})
}

/// The answer to an `mcp_message` the host's SDK server handled: its
/// JSON-RPC reply, or `{}` for a notification (nothing to answer).
pub fn mcp_response(reply: Option<Value>) -> Value {
    match reply {
        Some(reply) => json!({"mcp_response": reply}),
        None => json!({}),
    }
}

/// The answer to a `request_user_dialog` nobody scripted.
pub fn dialog_cancelled() -> Value {
    json!({"behavior": "cancelled"})
}

/// The answer to an `elicitation` or `side_question` nobody scripted.
pub fn elicitation_declined() -> Value {
    json!({"action": "decline"})
}

/// A user turn of text.
pub fn user_text(text: &str) -> Value {
    json!({
        "type": kind::USER,
        "message": {"role": "user", "content": [{"type": "text", "text": text}]}
    })
}

/// The host's `interrupt` control request: the agent stops the turn in
/// flight and writes its `result`.
pub fn interrupt_request(request_id: &str) -> Value {
    json!({"type": "control_request", "request_id": request_id,
           "request": {"subtype": "interrupt"}})
}

/// A successful control response carrying `body`.
pub fn control_success(request_id: &str, body: Value) -> Value {
    json!({"type": kind::CONTROL_RESPONSE,
           "response": {"subtype": subtype::SUCCESS, "request_id": request_id, "response": body}})
}

/// An error control response (an unsupported request).
pub fn control_error(request_id: &str, error: &str) -> Value {
    json!({"type": kind::CONTROL_RESPONSE,
           "response": {"subtype": subtype::ERROR, "request_id": request_id, "error": error}})
}

/// A `can_use_tool` answer that allows, with the input the tool runs with.
pub fn permission_allow(updated_input: Value) -> Value {
    json!({"behavior": "allow", "updatedInput": updated_input})
}

/// A `can_use_tool` answer that denies, with the message the model sees.
pub fn permission_deny(message: &str) -> Value {
    json!({"behavior": "deny", "message": message})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_assistant_blocks_and_requests() {
        let v = json!({"type": "assistant", "parent_tool_use_id": "toolu_p",
            "message": {"id": "msg_1", "model": "m", "content": [
                {"type": "thinking", "thinking": "", "signature": "sig"},
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                {"type": "image"}, 7]}});
        let Line::Assistant(m) = Line::of(&v) else {
            panic!("an assistant line")
        };
        assert_eq!(m.id, Some("msg_1"));
        assert_eq!(m.parent_tool_use_id, Some("toolu_p"));
        let kinds: Vec<&str> = m
            .blocks()
            .map(|b| match b {
                Block::Thinking { .. } => "thinking",
                Block::Text(_) => "text",
                Block::ToolUse { .. } => "tool_use",
                Block::Other(_) => "other",
                _ => "?",
            })
            .collect();
        assert_eq!(kinds, ["thinking", "text", "tool_use", "other", "other"]);

        let r = json!({"type": "control_request", "request_id": "r1",
                       "request": {"subtype": "can_use_tool", "tool_name": "Write"}});
        match Line::of(&r) {
            Line::ControlRequest {
                request_id,
                subtype,
                ..
            } => {
                assert_eq!(request_id, Some("r1"));
                assert_eq!(subtype, subtype::CAN_USE_TOOL);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(Line::of(&json!([1])), Line::Other));
        assert!(matches!(Line::of(&json!({"type": "x"})), Line::Other));
    }

    #[test]
    fn tool_result_text_joins_blocks() {
        let c = json!([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]);
        assert_eq!(tool_result_text(Some(&c)), "a\n[image]\nb");
        assert_eq!(tool_result_text(Some(&json!("x"))), "x");
        assert_eq!(tool_result_text(None), "");
    }
}
