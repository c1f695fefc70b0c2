//! Decisions: each recorded permission, question, dialog and elicitation
//! served from `controlOut` (the replay decider), re-serialised through the
//! O7 guard; the questions asked and the options they offered; and, at the
//! end, whether each answered gate's answer reached the model.
//!
//! A question that cannot be answered (no recorded reply, no sub-questions,
//! a header-only sub-question) truncates the run.

use serde_json::Value;

use super::{End, Fold, Step};
use crate::evidence::control::{self, Reply};
use crate::evidence::parse::{AgentEvent, DecisionRequest, QuestionSpec};
use crate::evidence::run::{
    DecisionRecord, GateDelivery, GateOptionItem, GateOptions, GuardMismatch, RunRecord,
};
use crate::js::utf16;
use crate::protocol::ASK_USER_QUESTION;

struct GateAnswer {
    question: String,
    tool_use_id: Option<String>,
}

#[derive(Default)]
pub(in crate::evidence) struct Decisions {
    gate_answers: Vec<GateAnswer>,
}

impl Fold for Decisions {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::Decision(req) => self.on_decision(req, rec),
            _ => Ok(()),
        }
    }

    /// Gate deliveries: pair each answered gate with its tool_result.
    fn finish(&mut self, _end: &End<'_>, rec: &mut RunRecord) {
        rec.gate_deliveries = self
            .gate_answers
            .iter()
            .map(|g| match &g.tool_use_id {
                None => GateDelivery {
                    question: g.question.clone(),
                    delivered: None,
                    reason: "no-pairing-metadata",
                    error: None,
                },
                Some(id) => match rec
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
                            utf16::slice(tr.text().split('\n').next().unwrap_or(""), 200)
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
    }
}

impl Decisions {
    fn on_decision(&mut self, req: &DecisionRequest, rec: &mut RunRecord) -> Result<(), String> {
        if let DecisionRequest::Question { questions, .. } = req {
            note_questions(questions, rec)?;
        }
        let id = req.id().to_owned();
        let Some(body) = rec.control_out.bodies.get(&id).cloned() else {
            return abstained(req, id, rec);
        };
        let reply = control::deserialize(req, &body);
        let actual = control::canon(&control::serialize(req, &reply));
        let expected = control::canon(&Value::Object(body));
        if actual != expected {
            rec.guard_mismatches.push(GuardMismatch {
                id: id.clone(),
                expected,
                actual,
            });
        }
        let (decision, detail) = self.decision_of(req, &reply);
        rec.decisions.push(DecisionRecord {
            kind: kind_of(req),
            name: name_of(req),
            decision,
            by: "replay",
            request_id: id,
            detail,
            rationale: Some("recorded".into()),
            questions: match req {
                DecisionRequest::Question { raw_questions, .. } => Some(raw_questions.clone()),
                _ => None,
            },
        });
        Ok(())
    }

    /// The decision word and detail of a recorded reply; an answered
    /// question is remembered so its delivery can be checked at the end.
    fn decision_of(&mut self, req: &DecisionRequest, reply: &Reply) -> (String, Option<Value>) {
        match (req, reply) {
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
        }
    }
}

/// Records the questions a gate asked and the options each offered; a gate
/// with no question, or a header-only one, cannot be answered.
fn note_questions(questions: &[QuestionSpec], rec: &mut RunRecord) -> Result<(), String> {
    for q in questions {
        rec.questions.push(q.label());
        rec.gate_options.push(GateOptions {
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
        return Err(
            "AskUserQuestion gate has an empty `questions` array — there is nothing to answer"
                .into(),
        );
    }
    if questions
        .iter()
        .any(|q| q.question.as_deref().unwrap_or("").is_empty())
    {
        return Err(
            "AskUserQuestion gate has a question with no `question` text (header-only) — the \
            in-VM handler indexes answers by `question`, so it cannot be delivered"
                .into(),
        );
    }
    Ok(())
}

/// A request `controlOut` holds no reply to: a question truncates the run;
/// anything else is an ABSTAIN, a fail-closed deny with nothing to compare.
fn abstained(req: &DecisionRequest, id: String, rec: &mut RunRecord) -> Result<(), String> {
    if let DecisionRequest::Question { questions, .. } = req {
        let q = questions.first().map(|q| q.label()).unwrap_or_default();
        return Err(format!(
            "no decider answered the question \"{q}\" (terminal returned ABSTAIN — never \
                silently default to option 1)"
        ));
    }
    if !rec.missing_control_out.contains(&id) {
        rec.missing_control_out.push(id.clone());
    }
    rec.decisions.push(DecisionRecord {
        kind: kind_of(req),
        name: name_of(req),
        decision: "abstain→deny".into(),
        by: "none",
        request_id: id,
        detail: None,
        rationale: None,
        questions: None,
    });
    Ok(())
}

/// A decision's recorded input, or `{truncated: true, bytes}` when its
/// `JSON.stringify` text is over 10 KiB (counted in UTF-16 units, as the
/// original measures `json.length`).
fn capped_decision_input(input: &Value) -> Value {
    const CAP: usize = 10 * 1024;
    let text = crate::js::json::legacy_serde(input);
    let units = utf16::len(&text);
    if units > CAP {
        serde_json::json!({ "truncated": true, "bytes": units })
    } else {
        input.clone()
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
        DecisionRequest::Question { .. } => ASK_USER_QUESTION.into(),
        DecisionRequest::Dialog { .. } => "dialog".into(),
        DecisionRequest::Elicit { .. } => "elicit".into(),
    }
}
