//! The run record and the re-drive that fills it (cowork-harness
//! `CassetteAgentSession.start` + `Run.drive` + the replay hook/path-denial
//! reconstruction; spec/replay.md §2.5 steps 2–8 and §3.3).

use std::collections::{HashMap, HashSet, VecDeque};

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use rayon::prelude::*;

use super::control::{self, ControlOutIndex, Reply};
use super::line::{self, LineOutcome};
use super::parse::{self, AgentEvent, DecisionRequest, ThinkingBlock, js_string};

/// Lines read in parallel before their events are folded into the record.
const READ_CHUNK_LINES: usize = 4096;
/// How many reasoning blocks the record keeps (the newest); older ones are
/// only counted ([`RunRecord::thinking_elided`]).
pub const THINKING_CAP: usize = 50;

/// Tools whose path-bearing calls are recorded as file-tool attempts.
pub const FILE_ATTEMPT_TOOLS: &[&str] = &["Read", "Write", "Edit", "Glob", "Grep", "MultiEdit"];
/// The hostloop PreToolUse path-gate hook callback id.
pub const HOSTLOOP_PATH_GATE_ID: &str = "hostloop-path-gate";
const TASK_EVENT_SUBTYPES: &[&str] = &[
    "task_started",
    "task_progress",
    "task_updated",
    "task_notification",
    "background_tasks_changed",
    "thinking_tokens",
];

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
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    pub is_error: bool,
    /// Display text (500 UTF-16 units).
    pub text: String,
    /// Assertion text (10 240 UTF-16 units); always present on a re-drive.
    pub assert_text: Option<String>,
    pub assert_text_truncated: bool,
    #[serde(skip)]
    pub text_blocks: Option<Vec<String>>,
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

/// A `system` event the parser does not special-case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextEvent {
    pub subtype: String,
    pub data: ContextData,
}

/// A system event's fields other than `type` and `subtype`.
///
/// Most system events of a long run (`thinking_tokens` is one line in four)
/// are only echoed into the JSON run result, never consulted, so the re-drive
/// keeps them as the recorded line and parses them only when the JSON result
/// is written. Both forms mean the same fields: equality and serialisation go
/// through [`ContextData::fields`].
#[derive(Debug, Clone)]
pub enum ContextData {
    /// Already parsed (the reference parser's form).
    Fields(Map<String, Value>),
    /// The whole recorded line, which a line view has checked is a JSON
    /// object with string `type` and `subtype`.
    Line(Box<str>),
}

impl ContextData {
    /// The fields, parsed on demand for [`ContextData::Line`] (an unparsable
    /// line, which the view never lets through, reads as no fields).
    pub fn fields(&self) -> std::borrow::Cow<'_, Map<String, Value>> {
        match self {
            ContextData::Fields(m) => std::borrow::Cow::Borrowed(m),
            ContextData::Line(line) => {
                let mut m = serde_json::from_str::<Map<String, Value>>(line).unwrap_or_default();
                m.shift_remove("type");
                m.shift_remove("subtype");
                std::borrow::Cow::Owned(m)
            }
        }
    }
}

impl ContextEvent {
    /// The event as its run-result JSON (`{subtype, data}`, the `Serialize`
    /// shape), built by moving the fields rather than copying them.
    pub fn into_json(self) -> Value {
        let data = match self.data {
            ContextData::Fields(m) => m,
            line @ ContextData::Line(_) => line.fields().into_owned(),
        };
        let mut o = Map::new();
        o.insert("subtype".into(), Value::String(self.subtype));
        o.insert("data".into(), Value::Object(data));
        Value::Object(o)
    }
}

impl PartialEq for ContextData {
    fn eq(&self, other: &Self) -> bool {
        self.fields() == other.fields()
    }
}

impl Serialize for ContextData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.fields().serialize(s)
    }
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

/// Everything the recorded run shows.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {
    pub result: RunOutcome,
    /// `result` | `no_result` (when `result` is error).
    pub error_source: Option<String>,
    pub result_subtype: Option<String>,
    /// The final `result` text (`finalMessage`).
    pub result_text: Option<String>,
    pub api_error_status: Option<f64>,
    /// `resultErrorKind` of an `is_error` result: `usage_limit` | `transport` | `agent`.
    pub result_error_kind: Option<&'static str>,
    /// Top-level assistant text, `"\n"`-joined.
    pub transcript: String,
    /// Main-agent tool names, first-call order.
    pub tools_called: Vec<String>,
    /// Main-agent `(name, count)`, first-call order.
    pub tool_counts: Vec<(String, u64)>,
    pub skills_invoked: Vec<String>,
    /// Tools of the last `system/init` (empty when none).
    pub init_tools: Vec<String>,
    /// `None` until a `system/init` line arrives.
    pub init: Option<InitContext>,
    pub subagents: Vec<Subagent>,
    /// Tool names used under a recognised (non-fork) dispatch, first-use order.
    pub subagent_tools: Vec<String>,
    pub tool_results: Vec<ToolResult>,
    /// Main-agent `(name, calls/errors)` in first-result order.
    pub tool_errors: Vec<(String, ToolErrorCount)>,
    pub redundant_tool_calls: Vec<RedundantGroup>,
    pub tasks: Vec<Task>,
    /// One label per sub-question asked.
    pub questions: Vec<String>,
    pub gate_options: Vec<GateOptions>,
    pub gate_deliveries: Vec<GateDelivery>,
    pub decisions: Vec<DecisionRecord>,
    pub context_events: Vec<ContextEvent>,
    pub infra_errors: Vec<InfraError>,
    /// `None` without controlOut (hook keys cannot be evaluated).
    pub hook_events: Option<Vec<HookEvent>>,
    /// `None` without controlOut.
    pub path_denials: Option<Vec<PathDenial>>,
    pub file_tool_attempts: Vec<FileToolAttempt>,
    pub presented_files: Vec<PresentedFile>,
    /// Last `result.usage` (raw object) — `None` when never reported.
    pub usage: Option<Value>,
    /// `result.num_turns`.
    pub turns: Option<f64>,
    pub cost_usd: Option<f64>,
    /// The last `system/api_metrics` line (`cost.raw`), verbatim.
    pub cost_raw: Option<Value>,
    /// `cost.raw` was set before `cost.usd` (the key order of `cost`).
    pub cost_raw_first: bool,
    pub model_usage: Option<Value>,
    pub models: Vec<String>,
    /// The last [`THINKING_CAP`] reasoning blocks, oldest first
    /// (`RunResult.thinking`).
    pub thinking: VecDeque<ThinkingBlock>,
    /// Reasoning blocks dropped, oldest first, past [`THINKING_CAP`]
    /// (`RunResult.thinkingElided`).
    pub thinking_elided: u64,
    pub stalled_on_question: bool,
    pub evidence_errors: EvidenceErrors,
    /// Skill reference/script files the main agent Read, first-seen order
    /// (`RunResult.referencesRead`).
    pub references_read: Vec<String>,
    /// Main-agent `WebSearch` calls whose result's links parsed.
    pub web_searches: Vec<WebSearch>,
    /// `controlOut` present and non-empty.
    pub has_control_out: bool,
    /// The controlOut index (request_id → recorded reply body) and its
    /// corruption signals.
    pub control_out: ControlOutIndex,
    /// 0-based indices of non-JSON `events` lines (before any truncation).
    pub malformed_event_lines: Vec<usize>,
    /// `(line, message)` of malformed control frames.
    pub protocol_error_lines: Vec<(usize, String)>,
    pub guard_mismatches: Vec<GuardMismatch>,
    /// Decision ids with no recorded reply (permission/dialog/elicit).
    pub missing_control_out: Vec<String>,
    /// `truncated cassette: …` when a question could not be answered.
    pub truncated: Option<String>,
}

impl RunRecord {
    /// The cassette-format pseudo-assertion messages, in the order the
    /// original appends them (spec §2.5 step 16 items 3–9). Each is a failing
    /// `{replay_protocol_fidelity: true}` with `source: "cassette-format"`.
    pub fn format_findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for id in &self.control_out.differing_duplicates {
            out.push(format!(
                "control-out.jsonl has duplicate request_id \"{id}\" with differing bodies — cassette is corrupt; re-record"
            ));
        }
        for i in &self.control_out.malformed_lines {
            out.push(format!(
                "control-out.jsonl line {i} is not valid JSON — cassette is corrupt; re-record"
            ));
        }
        for i in &self.malformed_event_lines {
            out.push(format!(
                "cassette events line {i} is not valid JSON — replay_protocol_error (malformed line may conceal a failed assertion)"
            ));
        }
        for (i, msg) in &self.protocol_error_lines {
            out.push(format!(
                "cassette events line {i} is a malformed control frame — {msg}"
            ));
        }
        for m in &self.guard_mismatches {
            out.push(format!(
                "serializeDecision output for {} != recorded envelope: expected {} got {}",
                m.id, m.expected, m.actual
            ));
        }
        for id in &self.missing_control_out {
            out.push(format!(
                "decision {id} present in events.jsonl has no matching control_response in control-out.jsonl — cassette is truncated; re-record"
            ));
        }
        if let Some(t) = &self.truncated {
            out.push(t.clone());
        }
        out
    }

    /// The `::warning::` lines the original prints while re-driving (controlOut
    /// index first, then events in order), for the caller to put on stderr.
    pub fn replay_warnings(&self) -> Vec<String> {
        // controlOut lines in order (one indexing pass in the original).
        let mut control: Vec<(usize, String)> = self
            .control_out
            .malformed_lines
            .iter()
            .map(|i| (*i, format!("::warning:: [replay] control-out.jsonl line {i} is not valid JSON — recording as cassette corruption")))
            .collect();
        control.extend(self.control_out.differing_duplicate_lines.iter().map(|(i, id)| {
            (*i, format!("::warning:: [replay] control-out.jsonl line {i}: duplicate request_id \"{id}\" with DIFFERENT body — keeping first entry; cassette may be corrupt"))
        }));
        control.sort_by_key(|(i, _)| *i);
        let mut out: Vec<String> = control.into_iter().map(|(_, l)| l).collect();
        let mut lines: Vec<(usize, String)> = self
            .malformed_event_lines
            .iter()
            .map(|i| (*i, format!("::warning:: [replay] cassette events line {i} is not valid JSON — recording as replay_protocol_error")))
            .collect();
        lines.extend(self.protocol_error_lines.iter().map(|(i, m)| {
            (*i, format!("::warning:: [replay] cassette events line {i} is a malformed control frame — recording as replay_protocol_fidelity failure: {m}"))
        }));
        lines.sort_by_key(|(i, _)| *i);
        out.extend(lines.into_iter().map(|(_, l)| l));
        for g in self
            .gate_deliveries
            .iter()
            .filter(|g| g.delivered == Some(false))
        {
            out.push(format!(
                "::warning:: [gate] DELIVERY FAILED for \"{}\" → tool error: {}",
                g.question,
                parse::slice_utf16(g.error.as_deref().unwrap_or(""), 120)
            ));
        }
        out
    }

    /// `usage.input_tokens + usage.output_tokens` (both must be numbers).
    pub fn tokens_total(&self) -> Option<f64> {
        let u = self.usage.as_ref()?;
        Some(u.get("input_tokens")?.as_f64()? + u.get("output_tokens")?.as_f64()?)
    }

    /// Sum of main-agent tool calls.
    pub fn tool_calls_total(&self) -> u64 {
        self.tool_counts.iter().map(|(_, c)| c).sum()
    }

    /// Sum of main-agent tool errors.
    pub fn tool_errors_total(&self) -> u64 {
        self.tool_errors.iter().map(|(_, c)| c.errors).sum()
    }

    /// Σ (count − 1) over redundant groups.
    pub fn redundant_calls_total(&self) -> u64 {
        self.redundant_tool_calls.iter().map(|g| g.count - 1).sum()
    }

    /// Sub-agents dispatched (what `dispatch_count_max` bounds).
    pub fn dispatch_count(&self) -> usize {
        self.subagents.len()
    }

    /// Tasks created (what `task_count_min` bounds).
    pub fn task_count(&self) -> usize {
        self.tasks.len()
    }

    /// Sub-questions asked (what `questions_count_max` bounds).
    pub fn question_count(&self) -> usize {
        self.questions.len()
    }

    /// Gate answers confirmed delivered (what `gate_answer_count_min` bounds).
    pub fn gate_answers_delivered(&self) -> usize {
        self.gate_deliveries
            .iter()
            .filter(|g| g.delivered == Some(true))
            .count()
    }

    /// Whether gate-option evidence is missing (a truncated re-drive).
    pub fn gate_options_missing(&self) -> bool {
        self.truncated.is_some()
    }
}

fn bump(list: &mut Vec<(String, u64)>, name: &str) {
    match list.iter_mut().find(|(n, _)| n == name) {
        Some((_, c)) => *c += 1,
        None => list.push((name.to_owned(), 1)),
    }
}

fn push_unique(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
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

/// POSIX `path.normalize` for an absolute path; `None` for a relative one.
fn posix_normalize_abs(p: &str) -> Option<String> {
    if !p.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if p.ends_with('/') && out != "/" {
        out.push('/');
    }
    Some(out)
}

/// A tool call as logged (all calls, sub-agents included).
struct LoggedCall {
    name: String,
    /// [`input_digest`] of the call's input (the input itself is not kept).
    input_digest: [u8; 32],
    parent: Option<String>,
}

struct PendingTask {
    subject: String,
    description: Option<String>,
    active_form: Option<String>,
}

struct GateAnswer {
    question: String,
    tool_use_id: Option<String>,
}

/// The re-drive state.
struct Driver {
    rec: RunRecord,
    /// Top-level assistant texts, `\n`-joined as they arrive (no second
    /// copy at the end).
    transcript: String,
    /// Where the last of those texts starts in `transcript`.
    last_text_start: Option<usize>,
    tool_log: Vec<LoggedCall>,
    tool_name_by_use_id: HashMap<String, String>,
    fork_scoped: HashSet<String>,
    pending_tasks: HashMap<String, PendingTask>,
    /// Main-agent `WebSearch` tool_use id → its query, until its result.
    pending_searches: HashMap<String, String>,
    pending_present: HashMap<String, Vec<String>>,
    gate_answers: Vec<GateAnswer>,
    cwd: Option<String>,
}

/// Re-drives `events` against the controlOut index (`None` or empty ⇒ legacy mode).
///
/// `events` may own its lines (`Vec<String>` taken out of a cassette): each
/// chunk of lines is then freed as soon as it has been read, so the record
/// grows into the memory the recording gave back instead of beside it.
pub fn drive<S: AsRef<str> + Sync + Send>(
    events: Vec<S>,
    control_out: Option<&[&str]>,
) -> RunRecord {
    let co_lines = control_out.unwrap_or(&[]);
    let mut d = Driver {
        rec: RunRecord {
            has_control_out: !co_lines.is_empty(),
            control_out: control::build_index(co_lines),
            ..RunRecord::default()
        },
        transcript: String::new(),
        last_text_start: None,
        tool_log: Vec::new(),
        tool_name_by_use_id: HashMap::new(),
        fork_scoped: HashSet::new(),
        pending_tasks: HashMap::new(),
        pending_searches: HashMap::new(),
        pending_present: HashMap::new(),
        gate_answers: Vec::new(),
        cwd: None,
    };
    // Hook reconstruction reads the control_request lines afterwards (all of
    // them, also past a truncation point), so those few are kept.
    let mut hook_lines: Vec<String> = Vec::new();
    let mut truncated: Option<String> = None;
    let mut first_index = 0;
    let mut rest = events.into_iter();
    // Reading a line (and canonicalising its tool inputs) is pure and most of
    // the work, so chunks are read in parallel; folding them into the record
    // is sequential, so chunk k is folded while chunk k+1 is being read.
    // Chunking bounds how many read-but-unfolded events exist at once.
    let mut pending: Option<(usize, ReadChunk)> = None;
    loop {
        let chunk: Vec<S> = rest.by_ref().take(READ_CHUNK_LINES).collect();
        if chunk.is_empty() && pending.is_none() {
            break;
        }
        if d.rec.has_control_out {
            hook_lines.extend(
                chunk
                    .iter()
                    .map(AsRef::as_ref)
                    .filter(|l| is_hook_candidate(l))
                    .map(str::to_owned),
            );
        }
        let chunk_len = chunk.len();
        let read_more = truncated.is_none() && chunk_len > 0;
        let (stop, read) = rayon::join(
            || {
                let (first, outcomes) = pending.take()?;
                d.fold_chunk(first, outcomes)
            },
            || read_more.then(|| read_chunk(chunk)),
        );
        if truncated.is_none() {
            truncated = stop;
        }
        if truncated.is_none() {
            pending = read.map(|outcomes| (first_index, outcomes));
        }
        first_index += chunk_len;
    }
    if let Some(t) = truncated {
        // The original replaces the record with an empty error record.
        let mut rec = RunRecord {
            has_control_out: d.rec.has_control_out,
            control_out: std::mem::take(&mut d.rec.control_out),
            malformed_event_lines: std::mem::take(&mut d.rec.malformed_event_lines),
            protocol_error_lines: std::mem::take(&mut d.rec.protocol_error_lines),
            guard_mismatches: std::mem::take(&mut d.rec.guard_mismatches),
            missing_control_out: std::mem::take(&mut d.rec.missing_control_out),
            truncated: Some(t),
            // The original's empty record has `context: {tools: [], mcpServers: []}`
            // and no `errorSource` (its end-of-run `no_result` fill-in is skipped).
            init: Some(InitContext::default()),
            ..RunRecord::default()
        };
        if rec.has_control_out {
            reconstruct_hooks(&mut rec, &hook_lines);
        }
        return rec;
    }
    d.finish(&hook_lines)
}

/// A chunk of read lines: each line's outcome and its tool-input digests.
type ReadChunk = Vec<(LineOutcome, Vec<[u8; 32]>)>;

/// Reads a chunk of lines in parallel, then frees the lines (when owned).
fn read_chunk<S: AsRef<str> + Sync>(chunk: Vec<S>) -> ReadChunk {
    chunk
        .par_iter()
        .map(|l| {
            let outcome = line::read(l.as_ref());
            let digests = tool_input_digests(&outcome);
            (outcome, digests)
        })
        .collect()
}

/// A decision's recorded input, or `{truncated: true, bytes}` when its
/// `JSON.stringify` text is over 10 KiB (counted in UTF-16 units, as the
/// original measures `json.length`).
fn capped_decision_input(input: &Value) -> Value {
    const CAP: usize = 10 * 1024;
    let text = crate::canon::legacy_serde(input);
    let units = parse::utf16_len(&text);
    if units > CAP {
        serde_json::json!({ "truncated": true, "bytes": units })
    } else {
        input.clone()
    }
}

/// The lines hook reconstruction parses (a cheap superset).
fn is_hook_candidate(line: &str) -> bool {
    line.contains("control_request")
}

/// SHA-256 of the canonical input of each `ToolUse` of a read line, in
/// order: the redundant-call grouping needs only these digests, so no input
/// is kept past its own event.
fn tool_input_digests(outcome: &LineOutcome) -> Vec<[u8; 32]> {
    let LineOutcome::Events(evs) = outcome else {
        return Vec::new();
    };
    evs.iter()
        .filter_map(|ev| match ev {
            AgentEvent::ToolUse { input, .. } => Some(input_digest(input)),
            _ => None,
        })
        .collect()
}

fn input_digest(input: &Value) -> [u8; 32] {
    Sha256::digest(control::canon(input).as_bytes()).into()
}

impl Driver {
    /// Folds one read chunk (its first line is `events[first_index]`) into
    /// the record, in order; `Some(message)` when the run is truncated there.
    fn fold_chunk(&mut self, first_index: usize, outcomes: ReadChunk) -> Option<String> {
        for (offset, (outcome, digests)) in outcomes.into_iter().enumerate() {
            let i = first_index + offset;
            let evs = match outcome {
                LineOutcome::Blank | LineOutcome::Ignored => continue,
                LineOutcome::Malformed => {
                    self.rec.malformed_event_lines.push(i);
                    continue;
                }
                LineOutcome::ProtocolError(message) => {
                    self.rec.protocol_error_lines.push((i, message));
                    continue;
                }
                LineOutcome::Events(evs) => evs,
            };
            let mut digests = digests.into_iter();
            for ev in evs {
                let digest = match ev {
                    AgentEvent::ToolUse { .. } => digests.next(),
                    _ => None,
                };
                if matches!(ev, AgentEvent::Decision(_)) && !self.rec.has_control_out {
                    continue;
                }
                if let Err(msg) = self.on_event(ev, digest) {
                    return Some(format!("truncated cassette: {msg}"));
                }
            }
        }
        None
    }

    /// `input_digest`: [`input_digest`] of a `ToolUse`'s input when the
    /// caller computed it already (in parallel).
    fn on_event(&mut self, ev: AgentEvent, input_digest: Option<[u8; 32]>) -> Result<(), String> {
        match ev {
            AgentEvent::Init {
                tools,
                mcp_servers,
                skills,
                cwd,
            } => {
                self.rec.init_tools = tools.clone();
                self.cwd = cwd.clone();
                self.rec.init = Some(InitContext {
                    tools,
                    mcp_servers,
                    skills: Some(skills),
                    cwd,
                });
            }
            AgentEvent::AssistantText {
                text,
                parent,
                model,
            } => {
                self.note_model(model);
                if parent.is_none() {
                    if self.last_text_start.is_some() {
                        self.transcript.push('\n');
                    }
                    self.last_text_start = Some(self.transcript.len());
                    self.transcript.push_str(&text);
                }
            }
            AgentEvent::ToolUse {
                name,
                input,
                parent,
                tool_use_id,
                model,
            } => {
                self.note_model(model);
                let digest = input_digest.unwrap_or_else(|| self::input_digest(&input));
                self.on_tool_use(name, input, digest, parent, tool_use_id);
            }
            AgentEvent::ToolResult {
                tool_use_id,
                is_error,
                text,
                assert_text,
                assert_text_truncated,
                text_blocks,
            } => {
                if let Some(id) = &tool_use_id {
                    self.note_presented(id, text_blocks.as_deref());
                    if let Some(name) = self.tool_name_by_use_id.get(id).cloned() {
                        let slot = match self.rec.tool_errors.iter_mut().find(|(n, _)| *n == name) {
                            Some(s) => s,
                            None => {
                                self.rec.tool_errors.push((name, ToolErrorCount::default()));
                                self.rec.tool_errors.last_mut().expect("just pushed")
                            }
                        };
                        slot.1.calls += 1;
                        if is_error {
                            slot.1.errors += 1;
                        }
                    }
                    if let Some(p) = self.pending_tasks.remove(id) {
                        match task_created_id(&text) {
                            Some(tid) => {
                                let task = Task {
                                    id: tid.clone(),
                                    subject: p.subject,
                                    status: "pending".into(),
                                    description: p.description,
                                    active_form: p.active_form,
                                };
                                match self.rec.tasks.iter_mut().find(|t| t.id == tid) {
                                    Some(t) => *t = task,
                                    None => self.rec.tasks.push(task),
                                }
                            }
                            None if !is_error => self.rec.evidence_errors.task_tracking += 1,
                            None => {}
                        }
                    }
                    if let Some(query) = self.pending_searches.remove(id) {
                        // Parsed from the 10 KB assertion text, not the display text.
                        match web_search_links(&assert_text) {
                            Some(results) => self.rec.web_searches.push(WebSearch {
                                tool_use_id: id.clone(),
                                query,
                                results,
                            }),
                            None => self.rec.evidence_errors.web_search_parse += 1,
                        }
                    }
                }
                self.rec.tool_results.push(ToolResult {
                    tool_use_id,
                    is_error,
                    text,
                    assert_text: Some(assert_text),
                    assert_text_truncated,
                    text_blocks,
                });
            }
            AgentEvent::SubagentDispatch {
                tool_use_id,
                parent,
                dispatch_agent_type,
                type_omitted,
                declared_tools,
                description,
                prompt,
                dispatch_model,
            } => {
                if dispatch_agent_type == "fork" {
                    self.fork_scoped.insert(tool_use_id.clone());
                }
                self.rec.subagents.push(Subagent {
                    tool_use_id,
                    parent_tool_use_id: parent,
                    dispatch_agent_type,
                    dispatch_type_omitted: type_omitted,
                    declared_tools,
                    description,
                    prompt,
                    dispatch_model,
                    ..Subagent::default()
                });
            }
            AgentEvent::SubagentResultMeta {
                tool_use_id,
                agent_type,
                resolved_model,
            } => {
                if let Some(sa) = self
                    .rec
                    .subagents
                    .iter_mut()
                    .find(|s| s.tool_use_id == tool_use_id)
                {
                    if !sa.meta_seen {
                        sa.meta_seen = true;
                        sa.resolved_type_first = sa.resolved_agent_type.is_some();
                    }
                    // Overwritten by every envelope, as the original does.
                    sa.resolved_model = resolved_model;
                    if sa.resolved_agent_type.is_none() {
                        sa.resolved_agent_type = agent_type;
                    }
                }
            }
            AgentEvent::Decision(req) => self.on_decision(req)?,
            AgentEvent::Result {
                is_error,
                usage,
                result_text,
                subtype,
                api_error_status,
                cost_usd,
                num_turns,
                model_usage,
            } => {
                let (this_subtype, this_text) = (subtype.clone(), result_text.clone());
                if subtype.is_some() {
                    self.rec.result_subtype = subtype;
                }
                if result_text.is_some() {
                    self.rec.result_text = result_text;
                }
                if is_error {
                    self.rec.result = RunOutcome::Error;
                    self.rec.error_source = Some("result".into());
                    self.rec.api_error_status = api_error_status;
                    let signature = format!(
                        "{} {}",
                        this_subtype.as_deref().unwrap_or(""),
                        this_text.as_deref().unwrap_or("")
                    );
                    self.rec.result_error_kind =
                        Some(classify_result_error(&signature, api_error_status));
                } else {
                    self.rec.result = RunOutcome::Success;
                }
                self.rec.turns = num_turns;
                self.rec.usage = if usage.is_some() || num_turns.is_some() {
                    usage.or(Some(Value::Null))
                } else {
                    None
                };
                if cost_usd.is_some() {
                    self.rec.cost_usd = cost_usd;
                }
                if model_usage.is_some() {
                    self.rec.model_usage = model_usage;
                }
            }
            AgentEvent::SystemEvent { subtype, data } => {
                // Only these two subtypes are consulted; line views leave
                // them parsed, so `fields()` borrows here.
                let consulted = subtype == "task_started" || subtype == "permission_denied";
                let fields = if consulted {
                    data.fields()
                } else {
                    std::borrow::Cow::Owned(Map::new())
                };
                let fields = &*fields;
                if TASK_EVENT_SUBTYPES.contains(&subtype.as_str())
                    && subtype == "task_started"
                    && let (Some(join), Some(st)) = (
                        fields.get("tool_use_id").and_then(Value::as_str),
                        fields.get("subagent_type").and_then(Value::as_str),
                    )
                    && let Some(sa) = self
                        .rec
                        .subagents
                        .iter_mut()
                        .find(|s| s.tool_use_id == join)
                {
                    sa.resolved_agent_type = Some(st.to_owned());
                }
                if subtype == "permission_denied"
                    && let Some(tuid) = fields.get("tool_use_id")
                {
                    let tuid = js_string(tuid);
                    if let Some(a) = self.rec.file_tool_attempts.iter().find(|a| {
                        a.tool_use_id.as_deref() == Some(tuid.as_str()) && a.gate_path.is_some()
                    }) {
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
                        self.rec
                            .path_denials
                            .get_or_insert_with(Vec::new)
                            .push(denial);
                    }
                }
                self.rec.context_events.push(ContextEvent { subtype, data });
            }
            AgentEvent::InfraError { message, source } => {
                // A recorded `source` is untrusted text: anything but the three
                // known origins (absent included) reads as the fatal class.
                let source = match source.as_deref() {
                    Some(s @ ("hostloop-sidecar" | "hostloop-exec" | "egress-sidecar")) => {
                        s.to_owned()
                    }
                    _ => "hostloop-sidecar".to_owned(),
                };
                self.rec.infra_errors.push(InfraError {
                    source: Some(source),
                    message,
                })
            }
            AgentEvent::ProtocolEvidenceError => self.rec.evidence_errors.protocol_malformed += 1,
            AgentEvent::Thinking { block, model } => {
                self.note_model(model);
                self.note_thinking(block);
            }
            AgentEvent::Metrics(data) => {
                if self.rec.cost_raw.is_none() {
                    self.rec.cost_raw_first = self.rec.cost_usd.is_none();
                }
                self.rec.cost_raw = Some(data);
            }
        }
        Ok(())
    }

    /// Keeps the newest [`THINKING_CAP`] blocks (sub-agents' included, as the
    /// original does), counting each one dropped.
    fn note_thinking(&mut self, block: ThinkingBlock) {
        self.rec.thinking.push_back(block);
        if self.rec.thinking.len() > THINKING_CAP {
            self.rec.thinking.pop_front();
            self.rec.thinking_elided += 1;
        }
    }

    fn note_model(&mut self, model: Option<String>) {
        if let Some(m) = model {
            push_unique(&mut self.rec.models, &m);
        }
    }

    fn on_tool_use(
        &mut self,
        name: String,
        input: Value,
        input_digest: [u8; 32],
        parent: Option<String>,
        tool_use_id: Option<String>,
    ) {
        let main_flow = parent.as_ref().is_none_or(|p| self.fork_scoped.contains(p));
        let empty = Map::new();
        let inp = input.as_object().unwrap_or(&empty);
        if FILE_ATTEMPT_TOOLS.contains(&name.as_str()) {
            let file_path = inp
                .get("file_path")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let path = inp.get("path").and_then(Value::as_str).map(str::to_owned);
            let origin = if main_flow {
                "main"
            } else if self
                .rec
                .subagents
                .iter()
                .any(|s| Some(&s.tool_use_id) == parent.as_ref())
            {
                "subagent"
            } else {
                "unknown"
            };
            self.rec.file_tool_attempts.push(FileToolAttempt {
                tool: name.clone(),
                gate_path: file_path.clone().or_else(|| path.clone()),
                file_path,
                path,
                origin,
                parent_tool_use_id: parent.clone(),
                tool_use_id: tool_use_id.clone(),
            });
        }
        if main_flow {
            push_unique(&mut self.rec.tools_called, &name);
            bump(&mut self.rec.tool_counts, &name);
            if name == "Read"
                && let Some(r) = skill_reference_read_path(&read_file_path(inp))
            {
                push_unique(&mut self.rec.references_read, &r);
            }
            if name == "Skill" {
                self.rec.skills_invoked.push(
                    inp.get("skill")
                        .filter(|v| !v.is_null())
                        .map(js_string)
                        .unwrap_or_default(),
                );
            }
            if let Some(id) = &tool_use_id {
                self.tool_name_by_use_id.insert(id.clone(), name.clone());
                if name == "Skill" {
                    self.fork_scoped.insert(id.clone());
                }
                if name == "TaskCreate" {
                    let opt = |k: &str| inp.get(k).filter(|v| !v.is_null()).map(js_string);
                    self.pending_tasks.insert(
                        id.clone(),
                        PendingTask {
                            subject: opt("subject").unwrap_or_default(),
                            description: opt("description"),
                            active_form: opt("activeForm"),
                        },
                    );
                }
            }
            if name == "WebSearch"
                && let Some(id) = &tool_use_id
            {
                let query = inp
                    .get("query")
                    .filter(|v| !v.is_null())
                    .map(js_string)
                    .unwrap_or_default();
                self.pending_searches.insert(id.clone(), query);
            }
            if name == "TaskUpdate" {
                let opt = |k: &str| inp.get(k).filter(|v| !v.is_null()).map(js_string);
                if let (Some(tid), Some(status)) = (opt("taskId"), opt("status"))
                    && let Some(t) = self.rec.tasks.iter_mut().find(|t| t.id == tid)
                    && !status.is_empty()
                {
                    t.status = status;
                }
            }
        } else if let Some(p) = &parent
            && let Some(sa) = self.rec.subagents.iter_mut().find(|s| &s.tool_use_id == p)
        {
            push_unique(&mut self.rec.subagent_tools, &name);
            bump(&mut sa.tools_used, &name);
            if name == "Read"
                && let Some(r) = skill_reference_read_path(&read_file_path(inp))
            {
                push_unique(&mut sa.references_read, &r);
            }
        }
        if name == "mcp__cowork__present_files"
            && let Some(id) = &tool_use_id
        {
            let (files, malformed) = present_files_input(&input);
            self.pending_present.insert(id.clone(), files);
            self.rec.evidence_errors.present_files_malformed += malformed;
        }
        self.tool_log.push(LoggedCall {
            name,
            input_digest,
            parent,
        });
    }

    fn note_presented(&mut self, tool_use_id: &str, blocks: Option<&[String]>) {
        let Some(froms) = self.pending_present.remove(tool_use_id) else {
            return;
        };
        let tos = blocks.unwrap_or(&[]);
        let cwd = self.cwd.as_deref().and_then(posix_normalize_abs);
        if cwd.is_none() && !froms.is_empty() {
            self.rec.evidence_errors.present_files_malformed += froms.len() as u64;
        }
        for (i, from_raw) in froms.iter().enumerate() {
            let Some(to_raw) = tos.get(i) else {
                self.rec.evidence_errors.present_files_malformed += 1;
                continue;
            };
            let (Some(from), Some(to)) =
                (posix_normalize_abs(from_raw), posix_normalize_abs(to_raw))
            else {
                self.rec.evidence_errors.present_files_malformed += 1;
                continue;
            };
            let scratchpad = cwd.as_ref().is_some_and(|r| {
                from.starts_with(&format!("{r}/")) && !from.starts_with(&format!("{r}/mnt/"))
            });
            let promoted = scratchpad
                && cwd
                    .as_ref()
                    .is_some_and(|c| to.starts_with(&format!("{c}/mnt/outputs/")));
            self.rec.presented_files.push(PresentedFile {
                from,
                to,
                promoted,
                leaked: scratchpad && !promoted,
            });
        }
        if tos.len() > froms.len() {
            self.rec.evidence_errors.present_files_malformed += (tos.len() - froms.len()) as u64;
        }
    }

    fn on_decision(&mut self, req: DecisionRequest) -> Result<(), String> {
        if let DecisionRequest::Question { questions, .. } = &req {
            for q in questions {
                self.rec.questions.push(q.label());
                self.rec.gate_options.push(GateOptions {
                    question: q.label(),
                    options: q
                        .options
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(label, description)| GateOptionItem { label, description })
                        .collect(),
                    multi_select: q.multi_select,
                });
            }
            if questions.is_empty() {
                return Err("AskUserQuestion gate has an empty `questions` array — there is nothing to answer".into());
            }
            if questions
                .iter()
                .any(|q| q.question.as_deref().unwrap_or("").is_empty())
            {
                return Err("AskUserQuestion gate has a question with no `question` text (header-only) — the in-VM handler indexes answers by `question`, so it cannot be delivered".into());
            }
        }
        let id = req.id().to_owned();
        let Some(body) = self.rec.control_out.bodies.get(&id).cloned() else {
            if let DecisionRequest::Question { questions, .. } = &req {
                let q = questions.first().map(|q| q.label()).unwrap_or_default();
                return Err(format!(
                    "no decider answered the question \"{q}\" (terminal returned ABSTAIN — never silently default to option 1)"
                ));
            }
            // ABSTAIN ⇒ fail-closed deny, which has no recorded reply to compare with.
            if !self.rec.missing_control_out.contains(&id) {
                self.rec.missing_control_out.push(id.clone());
            }
            self.rec.decisions.push(DecisionRecord {
                kind: kind_of(&req),
                name: name_of(&req),
                decision: "abstain→deny".into(),
                by: "none",
                request_id: id,
                detail: None,
                rationale: None,
                questions: None,
            });
            return Ok(());
        };
        let reply = control::deserialize(&req, &body);
        let reserialized = control::serialize(&req, &reply);
        let actual = control::canon(&reserialized);
        let expected = control::canon(&Value::Object(body));
        if actual != expected {
            self.rec.guard_mismatches.push(GuardMismatch {
                id: id.clone(),
                expected,
                actual,
            });
        }
        let (decision, detail) = match (&req, &reply) {
            (
                DecisionRequest::Question {
                    questions,
                    tool_use_id,
                    ..
                },
                Reply::Answers(a),
            ) => {
                let label = questions
                    .iter()
                    .map(|q| q.label())
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join(" / ");
                self.gate_answers.push(GateAnswer {
                    question: label,
                    tool_use_id: tool_use_id.clone(),
                });
                ("answered".to_owned(), Some(Value::Object(a.clone())))
            }
            (_, Reply::Allow(_)) => ("allow".to_owned(), None),
            // A denied permission names the blocked invocation (the
            // original's `detail: {input}`), capped so a large input cannot
            // bloat the record; an allow keeps no detail.
            (DecisionRequest::Permission { input, .. }, Reply::Deny(_)) => (
                "deny".to_owned(),
                Some(serde_json::json!({ "input": capped_decision_input(input) })),
            ),
            (_, Reply::Deny(_)) => ("deny".to_owned(), None),
            (_, Reply::Dialog { ok, .. }) => {
                ((if *ok { "ok" } else { "cancelled" }).to_owned(), None)
            }
            (_, Reply::Elicit { action, .. }) => ((*action).to_owned(), None),
            (_, Reply::Answers(_)) => ("answered".to_owned(), None),
        };
        self.rec.decisions.push(DecisionRecord {
            kind: kind_of(&req),
            name: name_of(&req),
            decision,
            by: "replay",
            request_id: id,
            detail,
            rationale: Some("recorded".into()),
            questions: match &req {
                DecisionRequest::Question { raw_questions, .. } => Some(raw_questions.clone()),
                _ => None,
            },
        });
        Ok(())
    }

    fn finish(mut self, hook_lines: &[String]) -> RunRecord {
        self.rec.evidence_errors.task_tracking += self.pending_tasks.len() as u64;
        self.rec.evidence_errors.web_search_parse += self.pending_searches.len() as u64;
        self.rec.evidence_errors.present_files_malformed += self.pending_present.len() as u64;
        // Redundant identical main-agent calls, grouped by (name, SHA-256 of
        // the canonical input): keeping the digest instead of the canonical
        // text keeps this pass from holding a second copy of every input.
        let mut groups: Vec<(&str, [u8; 32], u64)> = Vec::new();
        // (name, digest) → index in `groups`: a linear search made this
        // quadratic in the number of calls.
        let mut index: HashMap<(&str, [u8; 32]), usize> = HashMap::new();
        for call in &self.tool_log {
            if call
                .parent
                .as_ref()
                .is_some_and(|p| !self.fork_scoped.contains(p))
            {
                continue;
            }
            let digest = call.input_digest;
            match index.entry((call.name.as_str(), digest)) {
                std::collections::hash_map::Entry::Occupied(e) => groups[*e.get()].2 += 1,
                std::collections::hash_map::Entry::Vacant(e) => {
                    groups.push((call.name.as_str(), digest, 1));
                    e.insert(groups.len() - 1);
                }
            }
        }
        let redundant_tool_calls = groups
            .into_iter()
            .filter(|g| g.2 >= 2)
            .map(|(name, digest, count)| RedundantGroup {
                name: name.to_owned(),
                arg_hash: hex::encode(&digest[..8]),
                count,
            })
            .collect();
        self.rec.redundant_tool_calls = redundant_tool_calls;
        if self.rec.result == RunOutcome::Error && self.rec.error_source.is_none() {
            self.rec.error_source = Some("no_result".into());
        }
        let last_text = self
            .last_text_start
            .map_or("", |start| self.transcript[start..].trim());
        let last_gate = self
            .tool_log
            .iter()
            .rposition(|t| t.name == "AskUserQuestion");
        let after = last_gate.map_or(0, |i| i + 1);
        let productive = self.tool_log[after..]
            .iter()
            .filter(|t| t.name != "AskUserQuestion")
            .count();
        self.rec.stalled_on_question =
            self.rec.result == RunOutcome::Success && last_text.ends_with('?') && productive == 0;
        self.rec.transcript = std::mem::take(&mut self.transcript);
        // Gate deliveries: pair each answered gate with its tool_result.
        self.rec.gate_deliveries = self
            .gate_answers
            .iter()
            .map(|g| match &g.tool_use_id {
                None => GateDelivery {
                    question: g.question.clone(),
                    delivered: None,
                    reason: "no-pairing-metadata",
                    error: None,
                },
                Some(id) => match self
                    .rec
                    .tool_results
                    .iter()
                    .find(|r| r.tool_use_id.as_deref() == Some(id))
                {
                    None => GateDelivery {
                        question: g.question.clone(),
                        delivered: None,
                        reason: "unobserved",
                        error: None,
                    },
                    Some(tr) if tr.is_error => GateDelivery {
                        question: g.question.clone(),
                        delivered: Some(false),
                        reason: "errored",
                        error: Some(
                            parse::slice_utf16(tr.text.split('\n').next().unwrap_or(""), 200)
                                .to_owned(),
                        ),
                    },
                    Some(_) => GateDelivery {
                        question: g.question.clone(),
                        delivered: Some(true),
                        reason: "ok",
                        error: None,
                    },
                },
            })
            .collect();
        // Sub-agent outputs: the dispatch's own tool_result.
        for sa in &mut self.rec.subagents {
            if let Some(tr) = self
                .rec
                .tool_results
                .iter()
                .find(|r| r.tool_use_id.as_deref() == Some(sa.tool_use_id.as_str()))
            {
                sa.output = Some(tr.assert_text.clone().unwrap_or_else(|| tr.text.clone()));
                sa.output_truncated = tr.assert_text_truncated;
            }
        }
        let permission_denied = self.rec.path_denials.take().unwrap_or_default();
        if self.rec.has_control_out {
            reconstruct_hooks(&mut self.rec, hook_lines);
            if let Some(pd) = self.rec.path_denials.as_mut() {
                pd.extend(permission_denied);
            }
        }
        self.rec
    }
}

/// `classifyResultError("result", …)`: quota exhaustion (terminal usage-limit
/// text, with HTTP 429 or no status), a transport drop, or an agent failure.
fn classify_result_error(signature: &str, api_error_status: Option<f64>) -> &'static str {
    use std::sync::OnceLock;
    static RES: OnceLock<Option<(Vec<regex::Regex>, regex::Regex, regex::Regex)>> = OnceLock::new();
    let Some((terminal, transient, transport)) = RES.get_or_init(|| {
        let terminal = [
            r"(?i)\byou'?ve (?:hit|reached) your\b[^.]*\blimit\b",
            r"(?i)\byou'?ve used\b[^.]*\b(?:usage )?limit\b",
            r"(?i)\byou'?re out of usage\b",
            r"(?i)\byour org is out of usage\b",
            r"(?i)\bout of usage credits\b",
            r"(?i)\brequires usage credits\b",
            r"(?i)\bthis service is disabled for your org\b",
            r"(?i)\byour seat type doesn'?t include\b",
        ]
        .iter()
        .map(|p| regex::Regex::new(p).ok())
        .collect::<Option<Vec<_>>>()?;
        let transient =
            regex::Regex::new(r"(?i)\brate limit\b|\boverloaded\b|\btry again\b").ok()?;
        let transport =
            regex::Regex::new(r"(?i)connection closed|ECONNRESET|socket hang up|fetch failed")
                .ok()?;
        Some((terminal, transient, transport))
    }) else {
        return "agent";
    };
    let usage_limit = !transient.is_match(signature)
        && terminal.iter().any(|r| r.is_match(signature))
        && api_error_status.is_none_or(|s| s == 429.0);
    if usage_limit {
        "usage_limit"
    } else if transport.is_match(signature) {
        "transport"
    } else {
        "agent"
    }
}

/// `String(input.file_path ?? "")` of a Read call.
fn read_file_path(inp: &Map<String, Value>) -> String {
    inp.get("file_path")
        .filter(|v| !v.is_null())
        .map(js_string)
        .unwrap_or_default()
}

/// The skill-relative `references/…` or `scripts/…` path of a file under a
/// plugin tree (`.local-plugins/` or `.remote-plugins/`); `None` otherwise.
fn skill_reference_read_path(file_path: &str) -> Option<String> {
    if !file_path.contains(".local-plugins/") && !file_path.contains(".remote-plugins/") {
        return None;
    }
    // `/((?:references|scripts)\/.+)$`: the first such segment wins; `.`
    // stops at a line break, so the match must run to the end without one.
    let mut from = 0;
    while let Some(i) = file_path[from..].find('/') {
        let at = from + i + 1;
        let rest = &file_path[at..];
        for dir in ["references/", "scripts/"] {
            if let Some(tail) = rest.strip_prefix(dir)
                && !tail.is_empty()
                && !rest.contains(['\n', '\r', '\u{2028}', '\u{2029}'])
            {
                return Some(rest.to_owned());
            }
        }
        from = at;
    }
    None
}

/// The `{title, url}` pairs of the JSON array after the first `Links: ` in
/// a WebSearch result; `None` when there is none, it is cut off, or it is
/// not a JSON array. Entries that are not objects, or have no url, are
/// dropped.
fn web_search_links(text: &str) -> Option<Vec<WebSearchLink>> {
    let start = text.find("Links: [")? + "Links: ".len();
    let bytes = text.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut end = None;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let arr: Value = serde_json::from_str(&text[start..end?]).ok()?;
    let field = |o: &Map<String, Value>, k: &str| {
        o.get(k)
            .filter(|v| !v.is_null())
            .map(js_string)
            .unwrap_or_default()
    };
    Some(
        arr.as_array()?
            .iter()
            .filter_map(|r| match r {
                Value::Object(o) => Some(WebSearchLink {
                    title: field(o, "title"),
                    url: field(o, "url"),
                }),
                // `typeof [] === "object"`: an array entry has neither key.
                Value::Array(_) => Some(WebSearchLink {
                    title: String::new(),
                    url: String::new(),
                }),
                _ => None,
            })
            .filter(|l| !l.url.is_empty())
            .collect(),
    )
}

/// `^Task #(\S+) created successfully`.
fn task_created_id(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Task #")?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (id, tail) = rest.split_at(end);
    if id.is_empty() || !tail.starts_with(" created successfully") {
        return None;
    }
    Some(id.to_owned())
}

fn present_files_input(input: &Value) -> (Vec<String>, u64) {
    match input.get("files") {
        None => (Vec::new(), 0),
        Some(Value::Array(items)) => {
            let mut files = Vec::new();
            let mut bad = 0;
            for f in items {
                match f.get("file_path").and_then(Value::as_str) {
                    Some(p) => files.push(p.to_owned()),
                    None => bad += 1,
                }
            }
            (files, bad)
        }
        Some(_) => (Vec::new(), 1),
    }
}

fn kind_of(req: &DecisionRequest) -> &'static str {
    match req {
        DecisionRequest::Permission { .. } => "tool",
        DecisionRequest::Question { .. } => "question",
        DecisionRequest::Dialog { .. } => "dialog",
        DecisionRequest::Elicit { .. } => "elicit",
    }
}

fn name_of(req: &DecisionRequest) -> String {
    match req {
        DecisionRequest::Permission { tool, .. } => tool.clone(),
        DecisionRequest::Question { .. } => "AskUserQuestion".into(),
        DecisionRequest::Dialog { .. } => "dialog".into(),
        DecisionRequest::Elicit { .. } => "elicit".into(),
    }
}

/// Hook events and pretooluse/can_use_tool path denials from the recorded
/// `control_request`s paired with their controlOut replies (spec §2.5 steps 7–8).
fn reconstruct_hooks(rec: &mut RunRecord, lines: &[String]) {
    let mut hooks = Vec::new();
    let mut denials = Vec::new();
    // Every line is scanned (also past a truncation point), as the original does.
    for line in lines.iter().filter(|l| is_hook_candidate(l)) {
        let Ok(Value::Object(mo)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let mo = &mo;
        if mo.get("type").and_then(Value::as_str) != Some("control_request") {
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
            Some("hook_callback") => {
                let callback_id = request
                    .get("callback_id")
                    .map(js_string)
                    .unwrap_or_else(|| "undefined".into());
                let hev = hook_event_from(
                    callback_id,
                    reply,
                    request.get("input"),
                    request
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                );
                if hev.callback_id == HOSTLOOP_PATH_GATE_ID && hev.decision == "block" {
                    let vm = [hev.file_path.as_deref(), hev.path.as_deref()]
                        .into_iter()
                        .find(|p| is_vm_sessions_path(*p))
                        .flatten();
                    denials.push(PathDenial {
                        source: "pretooluse",
                        tool: hev.tool.clone().unwrap_or_else(|| "?".into()),
                        path: vm
                            .or(hev.file_path.as_deref())
                            .or(hev.path.as_deref())
                            .map(str::to_owned),
                        callback_id: Some(hev.callback_id.clone()),
                        decision_reason_type: None,
                        agent_id: hev.agent_id.clone(),
                        decision: "deny",
                        reason: hev.reason.clone(),
                        tool_use_id: hev.tool_use_id.clone(),
                    });
                }
                hooks.push(hev);
            }
            Some("can_use_tool") => {
                let Some(body) = reply else { continue };
                let Ok(Some(req)) = parse::to_decision_request(mo) else {
                    continue;
                };
                let DecisionRequest::Permission {
                    tool,
                    input,
                    agent_id,
                    tool_use_id,
                    decision_reason_type,
                    ..
                } = &req
                else {
                    continue;
                };
                if !FILE_ATTEMPT_TOOLS.contains(&tool.as_str()) {
                    continue;
                }
                let Reply::Deny(message) = control::deserialize(&req, body) else {
                    continue;
                };
                let Some(p) = denied_path_from(
                    input.get("file_path").and_then(Value::as_str),
                    input.get("path").and_then(Value::as_str),
                ) else {
                    continue;
                };
                denials.push(PathDenial {
                    source: "can_use_tool",
                    tool: tool.clone(),
                    path: Some(p),
                    callback_id: None,
                    decision_reason_type: decision_reason_type.clone(),
                    agent_id: agent_id.clone(),
                    decision: "deny",
                    reason: Some(message),
                    tool_use_id: tool_use_id.clone(),
                });
            }
            _ => {}
        }
    }
    rec.hook_events = Some(hooks);
    rec.path_denials = Some(denials);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str], co: Option<&[&str]>) -> RunRecord {
        drive(events.to_vec(), co)
    }

    #[test]
    fn the_newest_fifty_thinking_blocks_are_kept_and_the_rest_counted() {
        let mut lines: Vec<String> = vec![
            r#"{"type":"assistant","message":{"model":"think-model","content":[{"type":"thinking","thinking":"","signature":"s"}]}}"#.into(),
            r#"{"type":"system","subtype":"thinking","content":"from system"}"#.into(),
            r#"{"type":"assistant","parent_tool_use_id":"A","message":{"model":"m2","content":[{"type":"thinking","thinking":"child"}]}}"#.into(),
        ];
        let r = drive(lines.clone(), None);
        assert_eq!(r.thinking.len(), 3);
        assert_eq!(r.thinking_elided, 0);
        assert!(r.thinking[0].redacted);
        assert_eq!(r.thinking[1].text, "from system");
        assert_eq!(
            r.thinking[2].text, "child",
            "a sub-agent's reasoning counts"
        );
        assert_eq!(
            r.models,
            vec!["think-model", "m2"],
            "thinking blocks note their model"
        );

        for i in 0..50 {
            lines.push(format!(
                r#"{{"type":"assistant","message":{{"content":[{{"type":"thinking","thinking":"t{i}"}}]}}}}"#
            ));
        }
        let r = drive(lines, None);
        assert_eq!(r.thinking.len(), THINKING_CAP);
        assert_eq!(r.thinking_elided, 3, "the three oldest are dropped");
        assert_eq!(
            r.thinking.front().map(|b| &b.text),
            Some(&Value::from("t0"))
        );
        assert_eq!(
            r.thinking.back().map(|b| &b.text),
            Some(&Value::from("t49"))
        );
    }

    #[test]
    fn a_truncated_run_keeps_no_thinking() {
        let r = run(
            &[
                r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"}]}}"#,
                r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Q?","options":[{"label":"a"}]}]}}}"#,
            ],
            Some(&[
                r#"{"type":"control_response","response":{"request_id":"other","subtype":"success","response":{}}}"#,
            ]),
        );
        assert!(r.truncated.is_some(), "{:?}", r.format_findings());
        assert!(r.thinking.is_empty());
        assert_eq!(r.thinking_elided, 0);
    }

    #[test]
    fn transcript_excludes_subagent_text_and_result_is_read() {
        let r = run(
            &[
                r#"{"type":"system","subtype":"init","tools":["Skill","Agent"],"skills":["pdf"]}"#,
                r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hello"}]}}"#,
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"A","name":"Agent","input":{"subagent_type":"x","tools":["Bash"]}}]}}"#,
                r#"{"type":"assistant","parent_tool_use_id":"A","message":{"content":[{"type":"text","text":"child"},{"type":"tool_use","id":"R","name":"Read","input":{"file_path":"/x"}}]}}"#,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"A","content":"done"}]}}"#,
                r#"{"type":"result","is_error":false,"num_turns":2,"total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":4}}"#,
            ],
            None,
        );
        assert_eq!(r.transcript, "hello");
        assert_eq!(r.result, RunOutcome::Success);
        assert_eq!(r.tools_called, vec!["Agent"]);
        assert_eq!(r.subagent_tools, vec!["Read"]);
        assert_eq!(r.subagents[0].output.as_deref(), Some("done"));
        assert_eq!(r.file_tool_attempts[0].origin, "subagent");
        assert_eq!(r.tokens_total(), Some(7.0));
        assert_eq!(r.turns, Some(2.0));
        assert!(r.hook_events.is_none());
    }

    #[test]
    fn unanswered_question_truncates_the_record() {
        let r = run(
            &[
                r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Pick?","options":[{"label":"A"}]}]}}}"#,
                r#"{"type":"result","is_error":false}"#,
            ],
            Some(&[r#"{"type":"user"}"#]),
        );
        assert_eq!(r.result, RunOutcome::Error);
        assert_eq!(
            r.truncated.as_deref(),
            Some(
                "truncated cassette: no decider answered the question \"Pick?\" (terminal returned ABSTAIN — never silently default to option 1)"
            )
        );
        assert!(r.gate_options_missing());
    }

    #[test]
    fn missing_permission_reply_and_guard_mismatch_are_findings() {
        let r = run(
            &[
                r#"{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/a"}}}"#,
                r#"{"type":"control_request","request_id":"p2","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/a"}}}"#,
                "{broken",
            ],
            Some(&[
                r#"{"type":"control_response","response":{"subtype":"success","request_id":"p2","response":{"behavior":"allow","updatedInput":{"file_path":"/a"},"extra":1}}}"#,
            ]),
        );
        let f = r.format_findings();
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].starts_with("cassette events line 2 is not valid JSON"));
        assert!(f[1].starts_with("serializeDecision output for p2 != recorded envelope: expected {\"behavior\":\"allow\",\"extra\":1"));
        assert!(
            f[2].starts_with(
                "decision p1 present in events.jsonl has no matching control_response"
            )
        );
    }

    #[test]
    fn hook_block_is_reconstructed_with_control_out() {
        let r = run(
            &[
                r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback","callback_id":"hostloop-path-gate","input":{"tool_name":"Read","tool_input":{"file_path":"/sessions/x/a"}}}}"#,
            ],
            Some(&[
                r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{"decision":"block","reason":"vm path"}}}"#,
            ]),
        );
        let hooks = r.hook_events.as_ref().unwrap();
        assert_eq!(hooks[0].decision, "block");
        let pd = r.path_denials.as_ref().unwrap();
        assert_eq!(pd[0].source, "pretooluse");
        assert_eq!(pd[0].path.as_deref(), Some("/sessions/x/a"));
    }

    #[test]
    fn tasks_are_tracked_and_malformed_creates_counted() {
        let r = run(
            &[
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"Write report"}},{"type":"tool_use","id":"t2","name":"TaskCreate","input":{"subject":"x"}}]}}"#,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Task #1 created successfully: Write report"},{"type":"tool_result","tool_use_id":"t2","content":"weird"}]}}"#,
                r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"u1","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}}]}}"#,
            ],
            None,
        );
        assert_eq!(r.tasks.len(), 1);
        assert_eq!(r.tasks[0].status, "completed");
        assert_eq!(r.evidence_errors.task_tracking, 1);
    }

    #[test]
    fn a_denied_permission_records_its_input_capped() {
        let req = |id: &str, input: &str| {
            format!(
                r#"{{"type":"control_request","request_id":"{id}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{input}}}}}"#
            )
        };
        let reply = |id: &str, behavior: &str| {
            format!(
                r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{id}","response":{{"behavior":"{behavior}"{}}}}}}}"#,
                if behavior == "deny" {
                    r#","message":"no""#
                } else {
                    r#","updatedInput":{}"#
                }
            )
        };
        let big = format!(r#"{{"command":"{}"}}"#, "x".repeat(11_000));
        let events = [
            req("a", r#"{"command":"rm -rf outputs"}"#),
            req("b", r#"{"command":"ls"}"#),
            req("c", &big),
        ];
        let co = [reply("a", "deny"), reply("b", "allow"), reply("c", "deny")];
        let r = drive(
            events.iter().map(String::as_str).collect(),
            Some(&co.iter().map(String::as_str).collect::<Vec<_>>()),
        );
        let details: Vec<Option<String>> = r
            .decisions
            .iter()
            .map(|d| d.detail.as_ref().map(Value::to_string))
            .collect();
        assert_eq!(
            details,
            [
                Some(r#"{"input":{"command":"rm -rf outputs"}}"#.to_owned()),
                None,
                Some(r#"{"input":{"truncated":true,"bytes":11014}}"#.to_owned()),
            ]
        );
    }

    #[test]
    fn context_event_json_is_its_serialisation() {
        let line = r#"{"type":"system","subtype":"status","n":1.50,"x":{"b":[1,"\u00e9"]}}"#;
        for data in [
            ContextData::Line(line.into()),
            ContextData::Fields(ContextData::Line(line.into()).fields().into_owned()),
        ] {
            let ev = ContextEvent {
                subtype: "status".into(),
                data,
            };
            assert_eq!(serde_json::to_value(&ev).unwrap(), ev.clone().into_json());
            assert_eq!(
                ev.into_json().to_string(),
                r#"{"subtype":"status","data":{"n":1.50,"x":{"b":[1,"é"]}}}"#
            );
        }
    }

    /// A long run spanning several read chunks: owning the lines (freed as
    /// read) and borrowing them give the same record, also when the run is
    /// truncated part-way and hooks after the truncation point still count.
    #[test]
    fn owned_and_borrowed_lines_drive_alike_across_chunks() {
        let hook = r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback","callback_id":"hostloop-path-gate","input":{"tool_name":"Read","tool_input":{"file_path":"/sessions/x/a"}}}}"#;
        let question = r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Pick?","options":[{"label":"A"}]}]}}}"#;
        let co = [
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{"decision":"block","reason":"vm path"}}}"#,
        ];
        for truncate in [false, true] {
            let mut lines: Vec<String> = vec![
                r#"{"type":"system","subtype":"init","tools":["Bash"],"mcp_servers":[],"skills":[]}"#.into(),
            ];
            for i in 0..(READ_CHUNK_LINES * 2 + 17) {
                lines.push(match i % 4 {
                    0 => format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"step {i}\n"}}]}}}}"#),
                    1 => format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t{i}","name":"Bash","input":{{"command":"echo {}"}}}}]}}}}"#, i % 7),
                    2 => format!(r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t{}","content":"out {i}"}}]}}}}"#, i - 1),
                    _ => format!(r#"{{"type":"system","subtype":"thinking_tokens","estimated_tokens":{i}}}"#),
                });
                if i == READ_CHUNK_LINES + 3 {
                    lines.push(if truncate {
                        question.into()
                    } else {
                        hook.into()
                    });
                }
            }
            lines.push(hook.into());
            lines.push(r#"{"type":"result","is_error":false,"num_turns":3}"#.into());
            let borrowed = drive(lines.iter().map(String::as_str).collect(), Some(&co));
            let owned = drive(lines, Some(&co));
            assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"));
            assert_eq!(owned.truncated.is_some(), truncate);
            assert!(owned.hook_events.as_ref().is_some_and(|h| !h.is_empty()));
            if !truncate {
                assert_eq!(
                    owned.redundant_tool_calls.len(),
                    7,
                    "7 distinct repeated commands"
                );
                assert_eq!(owned.context_events.len(), READ_CHUNK_LINES / 2 + 4);
            }
        }
    }
}
