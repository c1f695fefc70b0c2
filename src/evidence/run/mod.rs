//! The run record: everything a recorded run shows ([`RunRecord`]), its data
//! types ([`types`]), and the accessors and cassette-format messages the
//! assertions and reports read. Filled by the re-drive (`evidence::drive`);
//! this module only says what the record holds.

mod context;
mod types;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use serde_json::Value;

use super::control::ControlOutIndex;
use super::parse::ThinkingBlock;

pub use context::{ContextData, ContextEvent};
pub use types::*;

/// How many reasoning blocks the record keeps (the newest); older ones are
/// only counted ([`RunRecord::thinking_elided`]).
pub const THINKING_CAP: usize = 50;

/// Tools whose path-bearing calls are recorded as file-tool attempts.
pub const FILE_ATTEMPT_TOOLS: &[&str] = &["Read", "Write", "Edit", "Glob", "Grep", "MultiEdit"];
/// The hostloop PreToolUse path-gate hook callback id.
pub const HOSTLOOP_PATH_GATE_ID: &str = "hostloop-path-gate";

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
    /// The text blocks of the last assistant message (any agent's) that has
    /// one, `"\n"`-joined: `claude plugin eval`'s `lastAssistantText`
    /// (`None` when no assistant message had text).
    pub last_message: Option<String>,
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
    /// Shared with every other record folding the same lines.
    pub tool_results: Vec<std::sync::Arc<ToolResult>>,
    /// Every tool call, sub-agents' included, with its top-level inputs.
    pub tool_calls: Vec<ToolCall>,
    /// Main-agent `(name, calls/errors)` in first-result order.
    pub tool_errors: Vec<(String, ToolErrorCount)>,
    /// Main-agent `(name, last line of the error)` per failing call, in
    /// result order (reel's addition: what `tool_no_error` quotes).
    pub tool_error_lines: Vec<(String, String)>,
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
    /// Shared with every other record folding the same lines.
    pub thinking: VecDeque<std::sync::Arc<ThinkingBlock>>,
    /// Reasoning blocks dropped, oldest first, past [`THINKING_CAP`]
    /// (`RunResult.thinkingElided`).
    pub thinking_elided: u64,
    pub stalled_on_question: bool,
    pub evidence_errors: EvidenceErrors,
    /// Skill reference/script files the main agent Read, first-seen order
    /// (`RunResult.referencesRead`).
    pub references_read: Vec<String>,
    /// Skill reference/script files the main agent reached through any
    /// channel (`RunResult.referencesAccessed`; `references_read` is its
    /// `read` projection).
    pub references_accessed: Vec<crate::evidence::ReferenceAccess>,
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
                "control-out.jsonl has duplicate request_id \"{id}\" with differing bodies — \
                    cassette is corrupt; re-record"
            ));
        }
        for i in &self.control_out.malformed_lines {
            out.push(format!(
                "control-out.jsonl line {i} is not valid JSON — cassette is corrupt; re-record"
            ));
        }
        for i in &self.malformed_event_lines {
            out.push(format!(
                "cassette events line {i} is not valid JSON — replay_protocol_error (malformed \
                    line may conceal a failed assertion)"
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
                "decision {id} present in events.jsonl has no matching control_response in \
                    control-out.jsonl — cassette is truncated; re-record"
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
            .map(|i| {
                (
                    *i,
                    format!(
                        "::warning:: [replay] control-out.jsonl line {i} is not valid \
                JSON — recording as cassette corruption"
                    ),
                )
            })
            .collect();
        control.extend(
            self.control_out
                .differing_duplicate_lines
                .iter()
                .map(|(i, id)| {
                    (
                        *i,
                        format!(
                            "::warning:: [replay] control-out.jsonl line {i}: duplicate \
                request_id \"{id}\" with DIFFERENT body — keeping first entry; cassette may be \
                corrupt"
                        ),
                    )
                }),
        );
        control.sort_by_key(|(i, _)| *i);
        let mut out: Vec<String> = control.into_iter().map(|(_, l)| l).collect();
        let mut lines: Vec<(usize, String)> = self
            .malformed_event_lines
            .iter()
            .map(|i| {
                (
                    *i,
                    format!(
                        "::warning:: [replay] cassette events line {i} is not valid JSON \
                — recording as replay_protocol_error"
                    ),
                )
            })
            .collect();
        lines.extend(self.protocol_error_lines.iter().map(|(i, m)| {
            (
                *i,
                format!(
                    "::warning:: [replay] cassette events line {i} is a malformed control \
                frame — recording as replay_protocol_fidelity failure: {m}"
                ),
            )
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
                crate::js::utf16::slice(g.error.as_deref().unwrap_or(""), 120)
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
