//! The one seam between the evidence module's [`RunRecord`] and what replay
//! reports about a run (the run-result fields of the JSON envelope, the text
//! footer's facts, the cassette-format problems found while re-driving).
//!
//! [`facts`] reads the evidence module's record (its run-result fields come
//! from `RunRecord::run_result_fields`); nothing else in replay reads the
//! record. This module deliberately does not parse `events` itself: the
//! stream-json parser has exactly one home, `crate::evidence`.

use serde_json::{Map, Value};

use crate::evidence::RunRecord;

/// What replay needs to know about a re-driven run.
#[derive(Debug, Clone, Default)]
pub struct RecordFacts {
    /// `"success"` / `"error"`; `None` = no `result` line (reads as error).
    pub result: Option<String>,
    /// `resultErrorKind` (`usage_limit`, `transport`, ...).
    pub result_error_kind: Option<String>,
    pub result_subtype: Option<String>,
    /// `errorSource` (`no_result`, ...).
    pub error_source: Option<String>,
    /// Top-level assistant text, `\n`-joined (the footer's transcript dump).
    pub transcript: String,
    /// Main-agent tool calls (the footer's `N tools`).
    pub tool_count: usize,
    /// Sub-agent dispatches (the footer's `· N sub-agents`).
    pub subagent_count: usize,
    /// Distinct models seen, in order.
    pub models: Vec<String>,
    /// The `Skill` tool (or an available skill) was offered to the agent.
    pub skill_offered: bool,
    /// A `Skill` tool_use happened on the main agent.
    pub skill_invoked: bool,
    /// `stalledOnQuestion`.
    pub stalled: bool,
    /// `infra_error` events: `(message, source)`.
    pub infra_errors: Vec<(String, Option<String>)>,
    /// Cassette-format problems found while re-driving, in the order of spec
    /// §2.5 step 16 items 3–9 (each becomes a `replay_protocol_fidelity`
    /// pseudo-assertion).
    pub format_problems: Vec<String>,
    /// Recorded decisions (`decisions[]` of the run result), as JSON.
    pub decisions: Vec<Value>,
    /// Further run-result fields (`toolCounts`, `toolErrors`, `subagents`,
    /// `context`, `usage`, `cost`, ...) in the original's key spelling; merged
    /// into the JSON result as they are.
    pub fields: Map<String, Value>,
}

/// Reads the facts replay reports out of a run record.
pub fn facts(run: &RunRecord) -> RecordFacts {
    let mut fields = run.run_result_fields();
    let decisions = match fields.shift_remove("decisions") {
        Some(Value::Array(d)) => d,
        _ => Vec::new(),
    };
    RecordFacts {
        result: Some(run.result.as_str().to_owned()),
        result_error_kind: run.result_error_kind.map(str::to_owned),
        result_subtype: run.result_subtype.clone(),
        error_source: run.error_source.clone(),
        transcript: run.transcript.clone(),
        tool_count: run.tool_calls_total() as usize,
        subagent_count: run.subagents.len(),
        models: run.models.clone(),
        skill_offered: run.init_tools.iter().any(|t| t == "Skill")
            || run
                .init
                .as_ref()
                .and_then(|i| i.skills.as_ref())
                .is_some_and(|s| !s.is_empty()),
        skill_invoked: !run.skills_invoked.is_empty(),
        stalled: run.stalled_on_question,
        infra_errors: run
            .infra_errors
            .iter()
            .map(|e| (e.message.clone(), e.source.clone()))
            .collect(),
        format_problems: run.format_findings(),
        decisions,
        fields,
    }
}
