//! The stream-json parser: one parsed `events` line → agent events
//! (spec/replay.md §3.1, cowork-harness `parseMessage`).
//!
//! Only the line types the original handles are recognised; everything else
//! (`stream_event` deltas, `rate_limit_event`, `control_response` echoes) yields
//! nothing. A structurally malformed frame (non-array init field, non-object
//! assistant block, bad `request_id`, malformed AskUserQuestion body) is an
//! `Err(message)` — the caller records it as a protocol-error line.

use serde_json::{Map, Value};

/// Assertion-fidelity cap for tool-result text, in UTF-16 code units.
pub const ASSERT_TEXT_CAP: usize = 10_240;
/// Display cap for tool-result text, in UTF-16 code units.
pub const DISPLAY_TEXT_CAP: usize = 500;
/// Cap on one recorded reasoning block's text, in UTF-16 code units (the
/// original's `THINKING_TEXT_CAP_BYTES`, which counts string length).
pub const THINKING_TEXT_CAP: usize = 10_240;

/// One reasoning block as the run records it (`RunResult.thinking[]`): the
/// text already capped to [`THINKING_TEXT_CAP`], and whether the model
/// reasoned with its text omitted (`redacted`: an empty `thinking` with a
/// non-empty `signature`, the default display mode of newer models).
///
/// `text` is a JSON value because the original keeps whatever the block
/// carried (`block.thinking ?? block.text ?? ""`); it is a string on every
/// real recording.
#[derive(Debug, Clone, PartialEq)]
pub struct ThinkingBlock {
    pub text: Value,
    pub redacted: bool,
}

impl ThinkingBlock {
    /// A block from its uncapped text (the original's `noteThinking` cap: a
    /// string keeps its first [`THINKING_TEXT_CAP`] UTF-16 units, an array its
    /// first that many items — JS `slice` — and any other value is kept).
    pub fn new(text: Value, redacted: bool) -> ThinkingBlock {
        let text = match text {
            Value::String(s) => Value::String(capped_thinking_text(s)),
            Value::Array(mut items) => {
                items.truncate(THINKING_TEXT_CAP);
                Value::Array(items)
            }
            other => other,
        };
        ThinkingBlock { text, redacted }
    }
}

/// `text` cut to [`THINKING_TEXT_CAP`] UTF-16 units, in place.
pub(super) fn capped_thinking_text(mut text: String) -> String {
    let keep = slice_utf16(&text, THINKING_TEXT_CAP).len();
    text.truncate(keep);
    text
}

impl serde::Serialize for ThinkingBlock {
    /// `{text, redacted?: true}` (the key is absent when not redacted).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1 + usize::from(self.redacted)))?;
        map.serialize_entry("text", &self.text)?;
        if self.redacted {
            map.serialize_entry("redacted", &true)?;
        }
        map.end()
    }
}

/// One sub-question of an AskUserQuestion request.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionSpec {
    pub question: Option<String>,
    pub header: Option<String>,
    pub options: Option<Vec<(String, Option<String>)>>,
    pub multi_select: Option<bool>,
    /// The sub-question object as recorded (re-serialised verbatim by the guard).
    pub raw: Value,
}

impl QuestionSpec {
    /// `question || header` (display label, regex target).
    pub fn label(&self) -> String {
        match (&self.question, &self.header) {
            (Some(q), _) if !q.is_empty() => q.clone(),
            (_, Some(h)) => h.clone(),
            _ => String::new(),
        }
    }
}

/// A decision request (`control_request` the driver must answer).
#[derive(Debug, Clone, PartialEq)]
pub enum DecisionRequest {
    Permission {
        id: String,
        tool: String,
        input: Value,
        tool_use_id: Option<String>,
        agent_id: Option<String>,
        decision_reason_type: Option<String>,
    },
    Question {
        id: String,
        questions: Vec<QuestionSpec>,
        /// The recorded `input.questions` array (serialised verbatim).
        raw_questions: Value,
        tool_use_id: Option<String>,
    },
    Dialog {
        id: String,
    },
    Elicit {
        id: String,
    },
}

impl DecisionRequest {
    pub fn id(&self) -> &str {
        match self {
            DecisionRequest::Permission { id, .. }
            | DecisionRequest::Question { id, .. }
            | DecisionRequest::Dialog { id }
            | DecisionRequest::Elicit { id } => id,
        }
    }
}

/// What one events line means to the run recorder.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    InfraError {
        message: String,
        source: Option<String>,
    },
    Init {
        tools: Vec<String>,
        mcp_servers: Vec<Value>,
        skills: Vec<String>,
        cwd: Option<String>,
    },
    Metrics(Value),
    /// A reasoning block: an assistant `thinking` content block (with its
    /// message's model) or a `system`/`thinking` line (no model).
    Thinking {
        block: ThinkingBlock,
        model: Option<String>,
    },
    SystemEvent {
        subtype: String,
        data: super::record::ContextData,
    },
    Decision(DecisionRequest),
    AssistantText {
        text: String,
        parent: Option<String>,
        model: Option<String>,
    },
    ToolUse {
        name: String,
        input: Value,
        parent: Option<String>,
        tool_use_id: Option<String>,
        model: Option<String>,
    },
    SubagentDispatch {
        tool_use_id: String,
        parent: Option<String>,
        dispatch_agent_type: String,
        /// The input has neither `subagent_type` nor `subagentType` key.
        type_omitted: bool,
        declared_tools: Vec<String>,
        description: Option<String>,
        prompt: Option<String>,
        /// The dispatching message's model.
        dispatch_model: Option<String>,
    },
    SubagentResultMeta {
        tool_use_id: String,
        agent_type: Option<String>,
        /// The envelope's `resolvedModel` (the child's model), when a string.
        resolved_model: Option<String>,
    },
    ToolResult {
        tool_use_id: Option<String>,
        is_error: bool,
        text: String,
        assert_text: String,
        assert_text_truncated: bool,
        text_blocks: Option<Vec<String>>,
    },
    ProtocolEvidenceError,
    Result {
        is_error: bool,
        usage: Option<Value>,
        result_text: Option<String>,
        subtype: Option<String>,
        api_error_status: Option<f64>,
        cost_usd: Option<f64>,
        num_turns: Option<f64>,
        model_usage: Option<Value>,
    },
}

/// JavaScript `typeof`-style name, for error messages.
fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) | Value::Object(_) => "object",
    }
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// JavaScript `String(v)` for a JSON value.
pub fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// JavaScript `Number::toString` (ECMAScript 6.1.6.1.20): the shortest
/// round-trip digits, plain notation for exponents in [-6, 21), else
/// `d.ddde±x`.
pub fn js_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) => crate::canon::js_string_of_number(f),
        None => n.to_string(),
    }
}

/// JavaScript `Number(v)` (ToNumber) for an optional JSON value: absent is
/// NaN, null 0, a string is read as a JS numeric literal, an array through its
/// `String` form, an object NaN.
pub fn js_to_number(v: Option<&Value>) -> f64 {
    match v {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => string_to_number(s),
        Some(a @ Value::Array(_)) => string_to_number(&js_string(a)),
        Some(Value::Object(_)) => f64::NAN,
    }
}

/// ECMAScript StringToNumber: surrounding white space ignored, empty is 0,
/// `Infinity`, `0x`/`0o`/`0b` integers, else a decimal literal (or NaN).
fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}');
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return f64::NAN;
            }
            return digits.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            });
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    // Rust also reads `inf`/`nan`/`infinity`, which JavaScript does not: only
    // digits, one sign, a point and an exponent are let through.
    if unsigned.is_empty()
        || !unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        || !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// A JS number as the JSON value `JSON.stringify` writes: ECMAScript number
/// formatting (`10`, not `10.0`), and `null` for NaN/±Infinity.
pub fn js_number_value(n: f64) -> Value {
    // Safe integers (nearly every duration and count) print as themselves.
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
        return Value::from(n as i64); // -0 prints as 0, as in JavaScript
    }
    crate::canon::es_number(n)
        .and_then(|s| s.parse::<serde_json::Number>().ok())
        .map_or(Value::Null, Value::Number)
}

/// A JSON value as `JSON.stringify(JSON.parse(v))` writes it at the top level:
/// a number is re-formatted the JavaScript way (`1.0` → `1`); anything else
/// is kept as recorded.
pub fn js_reformat(v: &Value) -> Value {
    match v {
        // An integer written plainly is already in JavaScript's form.
        Value::Number(n)
            if n.as_i64()
                .is_some_and(|i| i != 0 && i.unsigned_abs() < 1 << 53) =>
        {
            v.clone()
        }
        Value::Number(n) => js_number_value(n.as_f64().unwrap_or(f64::NAN)),
        other => other.clone(),
    }
}

/// An optional string field (JS: `typeof v === "string" ? v : undefined`).
fn str_field(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// `for (const b of content ?? [])` over a content that is neither an
/// array nor a string: null iterates nothing, anything else throws V8's
/// TypeError, which the re-drive records as a malformed control frame.
fn not_iterable(v: &Value) -> Result<&'static [Value], String> {
    let what = match v {
        // An (empty) string iterates nothing here; callers handle the rest.
        Value::Null | Value::String(_) => return Ok(&[]),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {}", js_number(n)),
        _ => "object".to_owned(),
    };
    Err(format!(
        "{what} is not iterable (cannot read property Symbol(Symbol.iterator))"
    ))
}

/// JS `v ? String(v) : undefined`.
fn truthy_string(v: Option<&Value>) -> Option<String> {
    if truthy(v) { v.map(js_string) } else { None }
}

/// Slices `s` to at most `max` UTF-16 code units (JS `String.prototype.slice`).
pub fn slice_utf16(s: &str, max: usize) -> &str {
    // A UTF-8 string never has more UTF-16 units than bytes.
    if s.len() <= max {
        return s;
    }
    // ASCII is one unit per byte (and every byte is a char boundary).
    if s.as_bytes()[..max].is_ascii() {
        return &s[..max];
    }
    let mut units = 0usize;
    for (idx, ch) in s.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &s[..idx];
        }
    }
    s
}

/// Length in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
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
        utf16_len(&full)
    };
    // Most results fit the assertion cap whole: keep the string itself then.
    let assert_text = match slice_utf16(&full, ASSERT_TEXT_CAP).len() {
        n if n == full.len() => full,
        n => full[..n].to_owned(),
    };
    AgentEvent::ToolResult {
        tool_use_id,
        is_error,
        text: slice_utf16(&assert_text, DISPLAY_TEXT_CAP).to_owned(),
        assert_text,
        // The original measures the 200 000-char provenance copy.
        assert_text_truncated: full_len.min(200_000) > ASSERT_TEXT_CAP,
        text_blocks,
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
        return Err(format!(
            "<root>: Invalid input: expected array, received {}",
            js_type(v)
        ));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(q) = item.as_object() else {
            return Err(format!(
                "{i}: Invalid input: expected object, received {}",
                js_type(item)
            ));
        };
        let opt_str = |k: &str| -> Result<Option<String>, String> {
            match q.get(k) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(o) => Err(format!(
                    "{i}.{k}: Invalid input: expected string, received {}",
                    js_type(o)
                )),
            }
        };
        let question = opt_str("question")?;
        let header = opt_str("header")?;
        let multi_select = match q.get("multiSelect") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(o) => {
                return Err(format!(
                    "{i}.multiSelect: Invalid input: expected boolean, received {}",
                    js_type(o)
                ));
            }
        };
        let options = match q.get("options") {
            None => None,
            Some(Value::Array(opts)) => {
                let mut parsed = Vec::with_capacity(opts.len());
                for (j, o) in opts.iter().enumerate() {
                    let Some(om) = o.as_object() else {
                        return Err(format!(
                            "{i}.options.{j}: Invalid input: expected object, received {}",
                            js_type(o)
                        ));
                    };
                    let label = match om.get("label") {
                        Some(Value::String(s)) => s.clone(),
                        other => {
                            return Err(format!(
                                "{i}.options.{j}.label: Invalid input: expected string, received {}",
                                other.map_or("undefined", js_type)
                            ));
                        }
                    };
                    let description = match om.get("description") {
                        None => None,
                        Some(Value::String(s)) => Some(s.clone()),
                        Some(d) => {
                            return Err(format!(
                                "{i}.options.{j}.description: Invalid input: expected string, received {}",
                                js_type(d)
                            ));
                        }
                    };
                    parsed.push((label, description));
                }
                Some(parsed)
            }
            Some(o) => {
                return Err(format!(
                    "{i}.options: Invalid input: expected array, received {}",
                    js_type(o)
                ));
            }
        };
        out.push(QuestionSpec {
            question,
            header,
            options,
            multi_select,
            raw: item.clone(),
        });
    }
    Ok(out)
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
    let m = &map;
    match m.get("type").and_then(Value::as_str) {
        Some("infra_error") => ev.push(AgentEvent::InfraError {
            message: str_field(m, "message").unwrap_or_else(|| "infrastructure error".into()),
            source: str_field(m, "source"),
        }),
        Some("system") => match m.get("subtype").and_then(Value::as_str) {
            Some("init") => {
                let tools = require_init_array(m, "tools")?
                    .iter()
                    .map(js_string)
                    .collect();
                let mcp_servers = require_init_array(m, "mcp_servers")?.to_vec();
                let skills = require_init_array(m, "skills")?
                    .iter()
                    .map(js_string)
                    .collect();
                ev.push(AgentEvent::Init {
                    tools,
                    mcp_servers,
                    skills,
                    cwd: str_field(m, "cwd"),
                });
            }
            Some("api_metrics") => ev.push(AgentEvent::Metrics(Value::Object(map))),
            Some("thinking") => ev.push(AgentEvent::Thinking {
                // `String(msg.content ?? "")`; never redacted, no model.
                block: ThinkingBlock::new(
                    Value::String(
                        m.get("content")
                            .filter(|c| !c.is_null())
                            .map(js_string)
                            .unwrap_or_default(),
                    ),
                    false,
                ),
                model: None,
            }),
            Some(sub) => {
                let subtype = sub.to_owned();
                let mut data = map;
                data.shift_remove("type");
                data.shift_remove("subtype");
                ev.push(AgentEvent::SystemEvent {
                    subtype,
                    data: super::record::ContextData::Fields(data),
                });
            }
            None => {}
        },
        Some("control_request") => {
            if let Some(dr) = to_decision_request(m)? {
                ev.push(AgentEvent::Decision(dr));
            }
        }
        Some("assistant") => {
            let msg_parent = truthy_string(m.get("parent_tool_use_id"));
            let message = m.get("message").and_then(Value::as_object);
            let model = message.and_then(|mm| str_field(mm, "model"));
            let content = message.and_then(|mm| mm.get("content"));
            let blocks: &[Value] = match content {
                Some(Value::Array(a)) => a,
                // `for…of` over a string: its first code point is a
                // non-object block.
                Some(Value::String(t)) if !t.is_empty() => {
                    return Err(
                        "control-in: malformed assistant content block at index 0: expected an object, got string"
                            .into(),
                    );
                }
                Some(other) => not_iterable(other)?,
                None => &[],
            };
            for (block_index, raw) in blocks.iter().enumerate() {
                let Some(block) = raw.as_object() else {
                    return Err(format!(
                        "control-in: malformed assistant content block at index {block_index}: expected an object, got {}",
                        js_type(raw)
                    ));
                };
                let parent =
                    truthy_string(block.get("parent_tool_use_id")).or_else(|| msg_parent.clone());
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => ev.push(AgentEvent::AssistantText {
                        text: block.get("text").map(js_string).unwrap_or_default(),
                        parent,
                        model: model.clone(),
                    }),
                    Some("thinking") => {
                        // `block.thinking ?? block.text ?? ""`; redacted when
                        // that is "" and a non-empty string `signature` shows
                        // the model did reason.
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
                        ev.push(AgentEvent::Thinking {
                            block: ThinkingBlock::new(text, redacted),
                            model: model.clone(),
                        });
                    }
                    Some("tool_use") => {
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
                            let declared = match (inp.get("tools"), inp.get("allowedTools")) {
                                (Some(Value::Array(t)), _) => t.iter().map(js_string).collect(),
                                (_, Some(Value::Array(t))) => t.iter().map(js_string).collect(),
                                _ => Vec::new(),
                            };
                            let msg_key = message
                                .and_then(|mm| mm.get("id"))
                                .filter(|v| !v.is_null())
                                .or_else(|| m.get("uuid").filter(|v| !v.is_null()))
                                .map_or_else(|| "anon".to_owned(), js_string);
                            let dispatch_type = inp
                                .get("subagent_type")
                                .filter(|v| !v.is_null())
                                .or_else(|| inp.get("subagentType").filter(|v| !v.is_null()))
                                .map_or_else(|| "unknown".to_owned(), js_string);
                            ev.push(AgentEvent::SubagentDispatch {
                                tool_use_id: tool_use_id.unwrap_or_else(|| {
                                    format!("unpaired-{msg_key}-b{block_index}")
                                }),
                                parent,
                                dispatch_agent_type: dispatch_type,
                                type_omitted: !inp.contains_key("subagent_type")
                                    && !inp.contains_key("subagentType"),
                                declared_tools: declared,
                                description: inp
                                    .get("description")
                                    .filter(|v| !v.is_null())
                                    .map(js_string),
                                prompt: inp.get("prompt").filter(|v| !v.is_null()).map(|p| {
                                    slice_utf16(&js_string(p), ASSERT_TEXT_CAP).to_owned()
                                }),
                                dispatch_model: model.clone(),
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
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
                let tr = blocks.iter().find(|b| {
                    b.as_object().is_some_and(|o| {
                        o.get("type").and_then(Value::as_str) == Some("tool_result")
                    })
                });
                let tool_use_id = tr.and_then(|t| truthy_string(t.get("tool_use_id")));
                let has = ["resolvedModel", "agentType", "status"]
                    .iter()
                    .any(|k| env.get(*k).is_some_and(Value::is_string));
                if let (Some(tool_use_id), true) = (tool_use_id, has) {
                    ev.push(AgentEvent::SubagentResultMeta {
                        tool_use_id,
                        agent_type: str_field(env, "agentType"),
                        resolved_model: str_field(env, "resolvedModel"),
                    });
                }
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
        }
        Some("result") => ev.push(AgentEvent::Result {
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
        }),
        _ => {}
    }
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn js_number_matches_number_to_string() {
        for (v, want) in [
            ("5", "5"),
            ("1.5", "1.5"),
            ("-2", "-2"),
            ("0", "0"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("123456789012345678901234", "1.2345678901234569e+23"),
            ("1e20", "100000000000000000000"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.25e-7", "1.25e-7"),
            ("0.1", "0.1"),
            ("100.5", "100.5"),
        ] {
            let n: serde_json::Number = serde_json::from_str(v).unwrap();
            assert_eq!(js_number(&n), want, "{v}");
        }
    }

    #[test]
    fn utf16_slicing_counts_code_units() {
        assert_eq!(slice_utf16("abc", 2), "ab");
        assert_eq!(slice_utf16("a😀b", 2), "a");
        assert_eq!(slice_utf16("a😀b", 3), "a😀");
        assert_eq!(utf16_len("a😀"), 3);
    }

    #[test]
    fn to_number_follows_javascript() {
        let n = |v: Value| js_to_number(Some(&v));
        assert_eq!(js_to_number(None).to_bits(), f64::NAN.to_bits());
        assert_eq!(n(json!(null)), 0.0);
        assert_eq!(n(json!(true)), 1.0);
        assert_eq!(n(json!(12.5)), 12.5);
        assert_eq!(n(json!(" 42\n")), 42.0);
        assert_eq!(n(json!("")), 0.0);
        assert_eq!(n(json!("-1e3")), -1000.0);
        assert_eq!(n(json!(".5")), 0.5);
        assert_eq!(n(json!("0x1F")), 31.0);
        assert_eq!(n(json!("-Infinity")), f64::NEG_INFINITY);
        assert_eq!(n(json!([7])), 7.0);
        assert_eq!(n(json!([])), 0.0);
        for nan in [
            json!("inf"),
            json!("nan"),
            json!("1_0"),
            json!("-0x1"),
            json!("12px"),
            json!([1, 2]),
            json!({}),
        ] {
            assert!(n(nan.clone()).is_nan(), "{nan}");
        }
    }

    #[test]
    fn numbers_are_written_the_javascript_way() {
        assert_eq!(js_number_value(10.0).to_string(), "10");
        assert_eq!(js_number_value(1.5).to_string(), "1.5");
        assert_eq!(js_number_value(f64::NAN), Value::Null);
        assert_eq!(js_number_value(f64::INFINITY), Value::Null);
        assert_eq!(js_reformat(&json!(3.0)).to_string(), "3");
        assert_eq!(js_reformat(&json!("s")), json!("s"));
    }

    #[test]
    fn thinking_text_is_capped_by_utf16_length() {
        let long = "x".repeat(THINKING_TEXT_CAP + 1);
        let b = ThinkingBlock::new(Value::String(long), false);
        assert_eq!(b.text.as_str().map(str::len), Some(THINKING_TEXT_CAP));
        let b = ThinkingBlock::new(json!([0, 0, 0]), true);
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"text":[0,0,0],"redacted":true}"#
        );
        let b = ThinkingBlock::new(json!(7), false);
        assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"text":7}"#);
    }

    #[test]
    fn non_object_assistant_block_is_a_protocol_error() {
        let e = parse_message(json!({"type":"assistant","message":{"content":[3]}})).unwrap_err();
        assert!(e.contains("expected an object, got number"), "{e}");
    }

    #[test]
    fn init_with_scalar_tools_is_a_protocol_error() {
        let e =
            parse_message(json!({"type":"system","subtype":"init","tools":"Read"})).unwrap_err();
        assert!(e.contains("\"tools\" must be an array, got string"), "{e}");
    }

    #[test]
    fn control_request_without_id_is_a_protocol_error() {
        let e =
            parse_message(json!({"type":"control_request","request":{"subtype":"hook_callback"}}))
                .unwrap_err();
        assert_eq!(e, "control-in: malformed request_id: undefined");
    }

    #[test]
    fn tool_result_array_content_is_flattened_with_spaces() {
        let ev = parse_message(json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","x":1}]}]}})).unwrap();
        match &ev[0] {
            AgentEvent::ToolResult {
                assert_text,
                text_blocks,
                ..
            } => {
                assert_eq!(assert_text, "a {\"type\":\"image\",\"x\":1}");
                assert_eq!(text_blocks.as_deref(), Some(&["a".to_owned()][..]));
            }
            other => panic!("{other:?}"),
        }
    }
}
