//! What one recorded `events` line means to the run record: the agent
//! events the parser yields ([`AgentEvent`]), the decision requests among
//! them, reasoning blocks, and the text caps applied while reading.

use serde_json::Value;

use crate::js::utf16;

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
pub(in crate::evidence) fn capped_thinking_text(mut text: String) -> String {
    let keep = utf16::slice(&text, THINKING_TEXT_CAP).len();
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
        /// Shared by every record that folds the line (as a tool result is).
        block: std::sync::Arc<ThinkingBlock>,
        model: Option<String>,
    },
    SystemEvent {
        subtype: String,
        data: super::run::ContextData,
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
        /// The result as the record keeps it (display and assertion texts
        /// capped, [`crate::evidence::parse`]), made once by the line's
        /// reader and shared by every record that folds the line (a
        /// multi-turn replay folds each into its turn's and the whole
        /// run's).
        result: std::sync::Arc<crate::evidence::ToolResult>,
        /// An error result's last non-empty line, from the uncapped text
        /// (where a traceback names its cause; `tool_no_error` quotes it).
        error_line: Option<String>,
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
