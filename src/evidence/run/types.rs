//! The data types of the run record: what one recorded run shows, field by
//! field, in the shapes the JSON run result and the assertions read.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// `"success"` or `"error"` (the run's outcome as the recording shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    Success,
    #[default]
    Error,
}

impl RunOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Success => "success",
            RunOutcome::Error => "error",
        }
    }
}

/// Where a tool call ran (cowork-harness `ToolCallRecord.origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrigin {
    /// The main agent, a `Skill`'s or an `Agent(fork)`'s children included.
    Main,
    /// Under a sub-agent dispatch this run recorded.
    Subagent,
    /// Under a parent that is no recorded dispatch.
    Unknown,
}

impl CallOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOrigin::Main => "main",
            CallOrigin::Subagent => "subagent",
            CallOrigin::Unknown => "unknown",
        }
    }
}

/// One top-level input field of a tool call, as the object form of
/// `tool_called` matches it.
#[derive(Debug, Clone, PartialEq)]
pub struct InputField {
    /// A string as is, any other value as its JSON text; cut at
    /// [`INPUT_FIELD_CAP`] UTF-16 units.
    pub text: String,
    pub truncated: bool,
}

/// The cap of an [`InputField`]'s text (10 KB, the original's).
pub const INPUT_FIELD_CAP: usize = 10_240;

impl InputField {
    /// `text`, cut at [`INPUT_FIELD_CAP`] UTF-16 units.
    pub fn capped(text: String) -> InputField {
        if crate::js::utf16::len(&text) > INPUT_FIELD_CAP {
            InputField {
                text: crate::js::utf16::slice(&text, INPUT_FIELD_CAP).to_owned(),
                truncated: true,
            }
        } else {
            InputField {
                text,
                truncated: false,
            }
        }
    }
}

/// One tool call of any agent (cowork-harness `RunResult.toolCalls`).
#[derive(Clone)]
pub struct ToolCall {
    pub name: String,
    pub tool_use_id: Option<String>,
    pub parent: Option<String>,
    pub origin: CallOrigin,
    /// The top-level input fields, in input order. Shared: written once
    /// when the line is read, for every record that folds the line (a
    /// multi-turn replay folds each line into its turn's and the whole
    /// run's).
    pub input: Arc<[(String, InputField)]>,
    /// The whole input as `JSON.stringify` writes it: [`ToolCall::input_json`].
    pub input_json: Arc<InputJson>,
}

impl ToolCall {
    /// The whole input as `JSON.stringify` writes it (what `input_json`
    /// matches, as `claude plugin eval`'s `input_match` does), capped alike
    /// — joined from the fields on first use where that is exact.
    pub fn input_json(&self) -> &InputField {
        let json = &*self.input_json;
        json.text
            .get_or_init(|| InputField::capped(join_fields(&self.input, json.quoted.unwrap_or(0))))
    }
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("tool_use_id", &self.tool_use_id)
            .field("parent", &self.parent)
            .field("origin", &self.origin)
            .field("input", &self.input)
            .field("input_json", self.input_json())
            .finish()
    }
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.tool_use_id == other.tool_use_id
            && self.parent == other.parent
            && self.origin == other.origin
            && self.input == other.input
            && self.input_json() == other.input_json()
    }
}

/// A call's `JSON.stringify(input)`, joined from its top-level fields when
/// an assertion first reads it: only `input_json` patterns do, and writing
/// every input's text up front was a sixth of a long replay's reading
/// (issue 44). Written up front where joining would not be exact.
#[derive(Debug)]
pub struct InputJson {
    /// Bit `i` set when field `i` is a string (written quoted; any other
    /// field is its JSON text already); `None` when written up front.
    quoted: Option<u64>,
    text: std::sync::OnceLock<InputField>,
}

impl InputJson {
    /// The text, written already (capped).
    pub fn written(text: InputField) -> InputJson {
        InputJson {
            quoted: None,
            text: std::sync::OnceLock::from(text),
        }
    }

    /// Joined from the fields on first use; `quoted`: which are strings.
    pub fn joined(quoted: u64) -> InputJson {
        InputJson {
            quoted: Some(quoted),
            text: std::sync::OnceLock::new(),
        }
    }

    /// How many fields a joined text can name ([`InputJson::joined`]'s mask).
    pub const MAX_JOINED_FIELDS: usize = 64;
}

/// `{"key":value,…}` of the fields written: a field in `quoted` as a JSON
/// string, any other as its text (its JSON already). Exact for fields not
/// cut and keys not index-like (V8 writes those first).
pub fn join_fields(fields: &[(String, InputField)], quoted: u64) -> String {
    let room = fields
        .iter()
        .map(|(k, f)| k.len() + f.text.len() + 4)
        .sum::<usize>()
        + 2;
    let mut out = Vec::with_capacity(room);
    out.push(b'{');
    for (i, (k, f)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::js::json::quote(k, &mut out);
        out.push(b':');
        if quoted & (1 << i) != 0 {
            crate::js::json::quote(&f.text, &mut out);
        } else {
            out.extend_from_slice(f.text.as_bytes());
        }
    }
    out.push(b'}');
    // Joined from whole strings: always UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The `system/init` context.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitContext {
    pub tools: Vec<String>,
    pub mcp_servers: Vec<Value>,
    /// `availableSkills` ids (`None` after a truncated re-drive).
    pub skills: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// One sub-agent dispatch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    pub tool_use_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    pub dispatch_agent_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_agent_type: Option<String>,
    /// The dispatch input named no sub-agent type at all.
    pub dispatch_type_omitted: bool,
    pub declared_tools: Vec<String>,
    /// `(name, count)` in first-use order.
    pub tools_used: Vec<(String, u64)>,
    /// Skill reference/script files this sub-agent Read, first-seen order.
    pub references_read: Vec<String>,
    /// Every channel's accesses (`references_read` is the `read` one).
    #[serde(skip)]
    pub references_accessed: Vec<crate::evidence::ReferenceAccess>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The dispatching message's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch_model: Option<String>,
    /// The child's model, from the dispatch's `tool_use_result` envelope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<String>,
    /// `resolvedAgentType` was set before the result envelope arrived (the
    /// original's key order of the two late fields).
    #[serde(skip)]
    pub resolved_type_first: bool,
    /// A result envelope was joined (the `resolvedModel` key exists).
    #[serde(skip)]
    pub meta_seen: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub output_truncated: bool,
}

/// One `tool_result` block (main agent, sub-agents and gates alike).
#[derive(Debug, Clone, Default)]
pub struct ToolResult {
    pub tool_use_id: Option<String>,
    pub is_error: bool,
    /// Display text (500 UTF-16 units): [`ToolResult::text`].
    text: DisplayText,
    /// Assertion text (10 240 UTF-16 units); always present on a re-drive.
    pub assert_text: Option<String>,
    pub assert_text_truncated: bool,
    pub text_blocks: Option<Vec<String>>,
}

/// The display text is nearly always the start of the assertion text: it is
/// kept as its length then, not as a second copy (a 50,000-line run holds
/// 12,700 results).
#[derive(Debug, Clone)]
enum DisplayText {
    Own(String),
    StartOfAssertText(usize),
}

impl Default for DisplayText {
    fn default() -> Self {
        DisplayText::Own(String::new())
    }
}

impl ToolResult {
    pub fn new(
        tool_use_id: Option<String>,
        is_error: bool,
        text: String,
        assert_text: Option<String>,
        assert_text_truncated: bool,
        text_blocks: Option<Vec<String>>,
    ) -> ToolResult {
        let text = match &assert_text {
            Some(full) if full.starts_with(text.as_str()) => {
                DisplayText::StartOfAssertText(text.len())
            }
            _ => DisplayText::Own(text),
        };
        ToolResult {
            tool_use_id,
            is_error,
            text,
            assert_text,
            assert_text_truncated,
            text_blocks,
        }
    }

    /// The display text (500 UTF-16 units).
    pub fn text(&self) -> &str {
        match (&self.text, &self.assert_text) {
            (DisplayText::Own(text), _) => text,
            (DisplayText::StartOfAssertText(len), Some(full)) => &full[..*len],
            (DisplayText::StartOfAssertText(_), None) => "",
        }
    }
}

impl PartialEq for ToolResult {
    fn eq(&self, other: &Self) -> bool {
        self.tool_use_id == other.tool_use_id
            && self.is_error == other.is_error
            && self.text() == other.text()
            && self.assert_text == other.assert_text
            && self.assert_text_truncated == other.assert_text_truncated
            && self.text_blocks == other.text_blocks
    }
}

impl ToolResult {
    /// About how long [`ToolResult::write_json`]'s text is: its texts
    /// with an escape every 16 bytes, and the keys.
    pub fn json_len_hint(&self) -> usize {
        let texts = self.text().len()
            + self.assert_text.as_ref().map_or(0, String::len)
            + self.tool_use_id.as_ref().map_or(0, String::len);
        texts + texts / 16 + 96
    }

    /// Appends the result as compact JSON text (its serde form is this
    /// text): `{toolUseId?, isError, text, assertText, assertTextTruncated}`.
    /// Written by hand because a long run's report is mostly these: the
    /// display text, nearly always the start of the assertion text, is
    /// escaped once and copied.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        use crate::js::json::{escape, quote};
        let bool_text = |b: bool| if b { &b"true"[..] } else { b"false" };
        out.push(b'{');
        if let Some(id) = &self.tool_use_id {
            out.extend_from_slice(b"\"toolUseId\":");
            quote(id, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"isError\":");
        out.extend_from_slice(bool_text(self.is_error));
        out.extend_from_slice(b",\"text\":");
        let text_at = out.len();
        quote(self.text(), out);
        // The quote that opens the text and its escaped characters.
        let text_escaped = text_at..out.len() - 1;
        out.extend_from_slice(b",\"assertText\":");
        match (&self.text, &self.assert_text) {
            (DisplayText::StartOfAssertText(len), Some(full)) => {
                out.extend_from_within(text_escaped);
                escape(&full[*len..], out);
                out.push(b'"');
            }
            (_, Some(full)) => quote(full, out),
            (_, None) => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"assertTextTruncated\":");
        out.extend_from_slice(bool_text(self.assert_text_truncated));
        out.push(b'}');
    }
}

impl Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let mut text = Vec::new();
        self.write_json(&mut text);
        let text = String::from_utf8(text).map_err(S::Error::custom)?;
        serde_json::value::RawValue::from_string(text)
            .map_err(S::Error::custom)?
            .serialize(s)
    }
}

/// Per-tool call/error rollup (main agent only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ToolErrorCount {
    pub calls: u64,
    pub errors: u64,
}

/// A group of identical main-agent calls (count ≥ 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RedundantGroup {
    pub name: String,
    pub arg_hash: String,
    pub count: u64,
}

/// A Progress-panel task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    pub subject: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

/// An offered option of a gate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateOptionItem {
    pub label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One sub-question and the options it offered (captured at ask time).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateOptions {
    pub question: String,
    pub options: Vec<GateOptionItem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
}

/// Whether an answered gate's answer reached the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateDelivery {
    pub question: String,
    /// `Some(true)` delivered, `Some(false)` errored, `None` unobserved.
    pub delivered: Option<bool>,
    /// `ok` | `errored` | `unobserved` | `no-pairing-metadata`.
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One replayed decision (`by:"replay"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    /// `tool` | `question` | `dialog` | `elicit`.
    pub kind: &'static str,
    pub name: String,
    /// `allow` | `deny` | `answered` | `ok` | `cancelled` | `accept` | ... | `abstain→deny`.
    pub decision: String,
    pub by: &'static str,
    pub request_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
    /// `"recorded"` for a replay-served decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// The asked sub-questions (question decisions), as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Value>,
}

/// An `infra_error` line (source kept raw; the verdict decides what is fatal).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InfraError {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub message: String,
}

/// A reconstructed PreToolUse hook event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookEvent {
    pub callback_id: String,
    /// `block` | `allow`.
    pub decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip)]
    pub file_path: Option<String>,
    #[serde(skip)]
    pub path: Option<String>,
    #[serde(skip)]
    pub tool_use_id: Option<String>,
    #[serde(skip)]
    pub agent_id: Option<String>,
}

/// A decision-level path denial.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PathDenial {
    /// `pretooluse` | `can_use_tool` | `permission_denied`.
    pub source: &'static str,
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The hook callback id (`pretooluse` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_reason_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Always `deny` (the original records the decision on every row).
    pub decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// A file-tool attempt (`origin`: `main` | `subagent` | `unknown`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileToolAttempt {
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `file_path ?? path`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate_path: Option<String>,
    pub origin: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// A file delivered via `mcp__cowork__present_files`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresentedFile {
    pub from: String,
    pub to: String,
    pub promoted: bool,
    pub leaked: bool,
}

/// Malformed-telemetry counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceErrors {
    pub task_tracking: u64,
    pub web_search_parse: u64,
    pub present_files_malformed: u64,
    /// Absent until the first malformed block (the original creates the
    /// key on its first increment).
    #[serde(skip_serializing_if = "is_zero")]
    pub protocol_malformed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A main-agent `WebSearch` and the links its result listed
/// (`RunResult.webSearches`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearch {
    pub tool_use_id: String,
    pub query: String,
    pub results: Vec<WebSearchLink>,
}

/// One `{title, url}` of a `WebSearch` result's `Links: [...]` array.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebSearchLink {
    pub title: String,
    pub url: String,
}

/// An O7 serialisation-guard mismatch.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardMismatch {
    pub id: String,
    pub expected: String,
    pub actual: String,
}
