//! How the run ended: the last `result` line (outcome, error source and
//! kind, final text, usage, turns, cost, per-model usage), the API metrics,
//! infrastructure errors, malformed protocol evidence, and whether the run
//! stalled on a question (its last words ask one and no tool ran after the
//! last gate).

use serde_json::Value;

use super::{End, Fold, Step};
use crate::evidence::parse::AgentEvent;
use crate::evidence::run::{InfraError, RunOutcome, RunRecord};
use crate::protocol::ASK_USER_QUESTION;

#[derive(Default)]
pub(in crate::evidence) struct Outcome {
    /// The last top-level assistant text, trimmed, ends with `?`.
    last_text_asks: bool,
    /// Tool calls (sub-agents' included) since the last `AskUserQuestion`,
    /// or since the start when none.
    calls_since_gate: usize,
}

impl Fold for Outcome {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::AssistantText {
                text, parent: None, ..
            } => self.last_text_asks = text.trim().ends_with('?'),
            AgentEvent::ToolUse { name, .. } => {
                if name == ASK_USER_QUESTION {
                    self.calls_since_gate = 0;
                } else {
                    self.calls_since_gate += 1;
                }
            }
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
                if subtype.is_some() {
                    rec.result_subtype = subtype.clone();
                }
                if result_text.is_some() {
                    rec.result_text = result_text.clone();
                }
                if *is_error {
                    rec.result = RunOutcome::Error;
                    rec.error_source = Some("result".into());
                    rec.api_error_status = *api_error_status;
                    let signature = format!(
                        "{} {}",
                        subtype.as_deref().unwrap_or(""),
                        result_text.as_deref().unwrap_or("")
                    );
                    rec.result_error_kind =
                        Some(classify_result_error(&signature, *api_error_status));
                } else {
                    rec.result = RunOutcome::Success;
                }
                rec.turns = *num_turns;
                rec.usage = if usage.is_some() || num_turns.is_some() {
                    usage.clone().or(Some(Value::Null))
                } else {
                    None
                };
                if cost_usd.is_some() {
                    rec.cost_usd = *cost_usd;
                }
                if model_usage.is_some() {
                    rec.model_usage = model_usage.clone();
                }
            }
            AgentEvent::Metrics(data) => {
                if rec.cost_raw.is_none() {
                    rec.cost_raw_first = rec.cost_usd.is_none();
                }
                rec.cost_raw = Some(data.clone());
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
                rec.infra_errors.push(InfraError {
                    source: Some(source),
                    message: message.clone(),
                })
            }
            AgentEvent::ProtocolEvidenceError => rec.evidence_errors.protocol_malformed += 1,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &End<'_>, rec: &mut RunRecord) {
        if rec.result == RunOutcome::Error && rec.error_source.is_none() {
            rec.error_source = Some("no_result".into());
        }
        rec.stalled_on_question =
            rec.result == RunOutcome::Success && self.last_text_asks && self.calls_since_gate == 0;
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
