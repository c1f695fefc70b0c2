//! What the scripted model reads from a Messages API request: which turn is
//! due, what the agent last saw, where it runs.
//!
//! Turn selection is stateless on purpose: the turn index is the number of
//! assistant messages already in the request, so a retried request gets the
//! same answer and concurrent conversations never mix turns. Roles other than
//! `user`/`assistant` (Claude Code sends `role: "system"` messages) are kept,
//! not rejected. This file does not choose replies or speak HTTP.

use serde_json::Value;

/// A parsed `/v1/messages` request body, reduced to what the script needs.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub model: String,
    pub stream: bool,
    pub message_count: usize,
    /// Number of assistant messages: the index of the turn that is due.
    pub assistant_count: usize,
    /// True when the request offers tools.
    pub has_tools: bool,
    /// The last `tool_result` block: its text and `is_error`.
    pub last_tool_result: Option<(String, bool)>,
    /// Every `tool_result` block: its `tool_use_id` and text, in order.
    pub tool_results: Vec<(String, String)>,
    /// Text of user messages after the last assistant message.
    pub user_text_since_assistant: String,
    /// Text of the messages before the last assistant message: user text
    /// and `tool_result` contents (what an earlier user turn said and saw).
    pub history_text: String,
    /// The agent's working directory, from its environment section
    /// ("Primary working directory: ...").
    pub cwd: Option<String>,
    /// Text of the first user message (its text blocks joined by newlines):
    /// the prompt a conversation was started with.
    pub first_user_text: String,
    /// `tool_use` ids of the assistant messages, in order.
    pub assistant_tool_ids: Vec<String>,
    /// The first text block of the first assistant message.
    pub first_assistant_text: Option<String>,
}

/// Why a request body could not be read as a Messages request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("request body is not JSON: {0}")]
    NotJson(String),
    #[error("request body: {0}")]
    Shape(&'static str),
}

const CWD_MARKER: &str = "Primary working directory: ";

impl Conversation {
    /// A side call (title, summary, classifier) rather than an agent turn: it
    /// offers no tools and lacks the agent's environment section. Both are
    /// needed: an agent run with `--tools ""` still describes its environment.
    pub fn is_side_request(&self) -> bool {
        !self.has_tools && self.cwd.is_none()
    }

    pub fn parse(body: &[u8]) -> Result<Conversation, RequestError> {
        let value: Value =
            serde_json::from_slice(body).map_err(|e| RequestError::NotJson(e.to_string()))?;
        Conversation::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Conversation, RequestError> {
        let obj = value
            .as_object()
            .ok_or(RequestError::Shape("expected a JSON object"))?;
        let messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .ok_or(RequestError::Shape("`messages` must be an array"))?;
        let model = obj
            .get("model")
            .and_then(Value::as_str)
            .ok_or(RequestError::Shape("`model` must be a string"))?
            .to_string();
        let stream = obj.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let has_tools = obj
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());

        let assistant_count = messages.iter().filter(|m| role(m) == "assistant").count();
        let last_assistant = messages.iter().rposition(|m| role(m) == "assistant");

        let last_tool_result = last_tool_result(messages);
        let tool_results = tool_results(messages);
        let start = last_assistant.map_or(0, |i| i + 1);
        let user_text = user_text_of(&messages[start..]);
        let history_text = history_text_of(&messages[..last_assistant.unwrap_or(0)]);

        let cwd = find_cwd(obj.get("system"))
            .or_else(|| messages.iter().find_map(|m| find_cwd(m.get("content"))));

        let first_user_text = messages
            .iter()
            .find(|m| role(m) == "user")
            .map(message_text)
            .unwrap_or_default();
        let (assistant_tool_ids, first_assistant_text) = assistant_side(messages);

        Ok(Conversation {
            model,
            stream,
            message_count: messages.len(),
            assistant_count,
            has_tools,
            last_tool_result,
            tool_results,
            user_text_since_assistant: user_text,
            history_text,
            cwd,
            first_user_text,
            assistant_tool_ids,
            first_assistant_text,
        })
    }
}

/// The last `tool_result` block of the conversation: its text and whether
/// it is an error.
fn last_tool_result(messages: &[Value]) -> Option<(String, bool)> {
    messages.iter().rev().find_map(|message| {
        let found = blocks(message)
            .rev()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))?;
        let is_error = found
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some((content_text(found.get("content")), is_error))
    })
}

/// Every `tool_result` block's `tool_use_id` and text.
fn tool_results(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .flat_map(blocks)
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|b| {
            let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
            (id.to_owned(), content_text(b.get("content")))
        })
        .collect()
}

/// The user messages' text, one line per string content or text block.
fn user_text_of(messages: &[Value]) -> String {
    let mut user_text = String::new();
    for message in messages.iter().filter(|m| role(m) == "user") {
        match message.get("content") {
            Some(Value::String(s)) => push_line(&mut user_text, s),
            _ => {
                for block in blocks(message) {
                    if block.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(t) = block.get("text").and_then(Value::as_str)
                    {
                        push_line(&mut user_text, t);
                    }
                }
            }
        }
    }
    user_text
}

/// The user text and the `tool_result` contents of `messages`, a line each.
fn history_text_of(messages: &[Value]) -> String {
    let mut out = user_text_of(messages);
    for message in messages.iter().filter(|m| role(m) == "user") {
        for block in blocks(message) {
            if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                push_line(&mut out, &content_text(block.get("content")));
            }
        }
    }
    out
}

/// Every `tool_use` id the assistant sent, and its first text.
fn assistant_side(messages: &[Value]) -> (Vec<String>, Option<String>) {
    let mut assistant_tool_ids = Vec::new();
    let mut first_assistant_text = None;
    for message in messages.iter().filter(|m| role(m) == "assistant") {
        for block in blocks(message) {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if let Some(id) = block.get("id").and_then(Value::as_str) {
                        assistant_tool_ids.push(id.to_owned());
                    }
                }
                Some("text") if first_assistant_text.is_none() => {
                    first_assistant_text =
                        block.get("text").and_then(Value::as_str).map(str::to_owned);
                }
                _ => {}
            }
        }
        if first_assistant_text.is_none()
            && let Some(Value::String(s)) = message.get("content")
        {
            first_assistant_text = Some(s.clone());
        }
    }
    (assistant_tool_ids, first_assistant_text)
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

/// A message's text: a string `content`, or its text blocks joined by newlines.
fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            let mut out = String::new();
            for block in blocks(message) {
                if block.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(t) = block.get("text").and_then(Value::as_str)
                {
                    push_line(&mut out, t);
                }
            }
            out
        }
    }
}

fn push_line(out: &mut String, text: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(text);
}

/// The content blocks of a message (none when `content` is a plain string).
fn blocks(message: &Value) -> std::slice::Iter<'_, Value> {
    match message.get("content") {
        Some(Value::Array(items)) => items.iter(),
        _ => [].iter(),
    }
}

/// Text of a `tool_result.content`: a string, or text blocks joined by newlines.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut out = String::new();
            for item in items {
                if let Some(t) = item.get("text").and_then(Value::as_str) {
                    push_line(&mut out, t);
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// Searches a `system` value or a message `content` for the cwd marker.
fn find_cwd(value: Option<&Value>) -> Option<String> {
    let scan = |text: &str| {
        let at = text.find(CWD_MARKER)? + CWD_MARKER.len();
        let rest = &text[at..];
        let line = rest.split('\n').next().unwrap_or(rest).trim_end();
        (!line.is_empty()).then(|| line.to_string())
    };
    match value? {
        Value::String(s) => scan(s),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .find_map(scan),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_turns_and_reads_last_results() {
        let body = json!({
            "model": "m", "stream": true, "tools": [{"name": "Bash"}],
            "system": [{"type": "text", "text": "x"}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "text", "text": "env\n - Primary working \
                    directory: /w/x\n - more"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "out"}], "is_error": true},
                    {"type": "text", "text": "skill body"}
                ]}
            ]
        });
        let c = Conversation::from_value(&body).unwrap();
        assert_eq!(c.assistant_count, 1);
        assert_eq!(c.message_count, 4);
        assert!(c.stream && c.has_tools);
        assert_eq!(c.last_tool_result, Some(("out".into(), true)));
        assert_eq!(c.user_text_since_assistant, "skill body");
        assert_eq!(c.cwd.as_deref(), Some("/w/x"));
    }

    #[test]
    fn rejects_non_messages() {
        assert!(Conversation::parse(b"nope").is_err());
        assert!(Conversation::parse(b"{\"model\":\"m\"}").is_err());
    }
}
