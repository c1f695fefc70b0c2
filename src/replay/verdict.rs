//! The verdict rule (cowork-harness `computeVerdict`, docs/spec/replay.md §2.7):
//! which signals fail a run, the `failures[]` list with kinds, the `outcome`,
//! and the exit code. This is the ONE home of the rule: `replay` calls it for
//! every cassette and `record` calls it for the live verdict (lane `Live`,
//! passing its live-only signals and guard results in).
//!
//! It does not evaluate assertions (that is `crate::assert`) and does not
//! decide what to print (that is `crate::report`).

use serde::Serialize;

use crate::assert::AssertionOutcome;
use crate::exit::ExitStatus;

/// Which lane the verdict is formed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Replaying a recording: live-only signals are not evaluated, guards are `na`.
    Replay,
    /// A live recording: the caller supplies live-only signals and guard results.
    Live,
}

/// Severity of a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Fail,
    Warn,
}

/// One reason the verdict is what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    /// `assertion`, `result_error`, `usage_limit`, `transport_error`,
    /// `infra_error`, `exec_infra_error`, `stalled`, `non_deterministic`, ...
    pub code: String,
    pub severity: Severity,
    pub message: String,
}

/// Status of a safety guard (`—` in the footer when `na`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardStatus {
    Ok,
    Fired,
    Na,
    Unverified,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guard {
    pub name: String,
    pub status: GuardStatus,
}

/// One entry of `verdict.failures[]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// The first key of the failing assertion (absent for pseudo-assertions
    /// with an empty `assertion` object and for guard failures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion: Option<String>,
    pub message: String,
    /// `assertion`, `staleness`, `cassette-format` or `guard`.
    pub kind: String,
}

/// The verdict of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub pass: bool,
    pub exit_code: ExitStatus,
    pub signals: Vec<Signal>,
    pub guards: Vec<Guard>,
    pub failures: Vec<Failure>,
}

/// `outcome` of a run (cowork-harness `outcome.ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Errored,
    NoDeliverable,
    DeliveredClean,
    DeliveredWithVerdictFail,
}

/// What the verdict is formed from.
#[derive(Debug, Clone, Default)]
pub struct VerdictInput<'a> {
    /// `"success"` or `"error"` (anything else reads as error).
    pub result: &'a str,
    /// `resultErrorKind`: `usage_limit` / `transport` pick the signal code.
    pub result_error_kind: Option<&'a str>,
    pub assertions: &'a [AssertionOutcome],
    /// `stalledOnQuestion` of the run.
    pub stalled: bool,
    /// `infra_error` events `(message, source)`.
    pub infra_errors: &'a [(String, Option<String>)],
    /// Live lane: the run was LLM/human-decided.
    pub non_deterministic: bool,
    /// Live lane: further signals the recorder computed (live-only block).
    pub extra_signals: Vec<Signal>,
    /// Live lane: guard results; `None` ⇒ every guard `na` (the replay lane).
    pub guards: Option<Vec<Guard>>,
}

/// The four guards, all `na` on replay.
pub const GUARD_NAMES: [&str; 4] = [
    "capability-use",
    "permissive-auto-allow",
    "host-path",
    "outputs-delete",
];

fn has_modifier(assertions: &[AssertionOutcome], key: &str) -> bool {
    assertions.iter().any(|a| {
        a.assertion
            .get(key)
            .is_some_and(|v| v == &serde_json::Value::Bool(true))
    })
}

/// `computeVerdict(result, lane)`.
pub fn compute(input: &VerdictInput<'_>, lane: Lane) -> Verdict {
    let mut signals = Vec::new();
    for a in input.assertions.iter().filter(|a| !a.pass) {
        signals.push(Signal {
            code: "assertion".into(),
            severity: Severity::Fail,
            message: a.message.clone(),
        });
    }
    if input.result != "success" {
        // Unconditional, even with an authored `result: error` (spec §8.4).
        signals.push(result_signal(input, lane));
    }
    signals.extend(infra_signals(input.infra_errors));
    if input.stalled && !has_modifier(input.assertions, crate::assert::keys::name::ALLOW_STALL) {
        signals.push(Signal {
            code: "stalled".into(),
            severity: Severity::Fail,
            // The original's wording, verbatim (its verdict message is part of the JSON result).
            message:
                "run ended on an unanswered question — the agent asked for input and stopped; \
                the task \
                      did not complete. Script the answer (answer: / --answer / a decider), or \
                          assert \
                      allow_stall: true if ending on a question is intended."
                    .into(),
        });
    }
    if lane == Lane::Live {
        if input.non_deterministic {
            signals.push(Signal {
                code: "non_deterministic".into(),
                severity: Severity::Warn,
                message: "non-deterministic (LLM/human-decided answers)".into(),
            });
        }
        signals.extend(input.extra_signals.iter().cloned());
    }
    let pass = !signals.iter().any(|s| s.severity == Severity::Fail);
    Verdict {
        pass,
        exit_code: ExitStatus::pass_fail(pass),
        failures: failures(input.assertions, &signals),
        guards: guards(input, lane),
        signals,
    }
}

/// The failed assertions, then every failing guard signal.
fn failures(assertions: &[AssertionOutcome], signals: &[Signal]) -> Vec<Failure> {
    let mut failures: Vec<Failure> = assertions
        .iter()
        .filter(|a| !a.pass)
        .map(|a| Failure {
            assertion: a
                .assertion
                .as_object()
                .and_then(|m| m.keys().next().cloned()),
            message: a.message.clone(),
            kind: a.source.clone().unwrap_or_else(|| "assertion".into()),
        })
        .collect();
    failures.extend(
        signals
            .iter()
            .filter(|s| s.severity == Severity::Fail && s.code != "assertion")
            .map(|s| Failure {
                assertion: None,
                message: s.message.clone(),
                kind: "guard".into(),
            }),
    );
    failures
}

/// The live run's guards; on replay every guard is not applicable.
fn guards(input: &VerdictInput<'_>, lane: Lane) -> Vec<Guard> {
    match (&input.guards, lane) {
        (Some(g), Lane::Live) => g.clone(),
        _ => GUARD_NAMES
            .iter()
            .map(|n| Guard {
                name: (*n).into(),
                status: GuardStatus::Na,
            })
            .collect(),
    }
}

/// The signal of a run whose result is not `success`: a usage limit, a
/// dropped transport (worded by what the assertions showed), or an error.
fn result_signal(input: &VerdictInput<'_>, lane: Lane) -> Signal {
    let (code, message) = match input.result_error_kind {
        Some("usage_limit") => (
            "usage_limit",
            "usage/quota limit hit (not a skill failure) — retry after the limit resets",
        ),
        Some("transport") => (
            "transport_error",
            if input.assertions.is_empty() {
                "transport dropped; NO assertions were defined, so success could not be \
                    verified — likely a flaky connection, retry"
            } else if input.assertions.iter().any(|a| !a.pass) {
                "transport dropped after a successful result, but an assertion also failed — \
                    treat as a real failure"
            } else if lane == Lane::Replay {
                "transport dropped after a successful result; assertions re-checked on replay \
                    — likely a flaky connection, retry"
            } else {
                "transport dropped after a successful result; assertions passed and artifacts \
                    were written — likely a flaky connection, retry"
            },
        ),
        _ => ("result_error", "run result was error"),
    };
    Signal {
        code: code.into(),
        severity: Severity::Fail,
        message: message.into(),
    }
}

/// Infrastructure errors split by origin, one signal per class listing
/// every message: a failed `docker exec` (hostloop-exec) only warns,
/// anything else contaminates the whole run.
fn infra_signals(infra_errors: &[(String, Option<String>)]) -> Vec<Signal> {
    let mut signals = Vec::new();
    let (exec, fatal): (Vec<_>, Vec<_>) = infra_errors
        .iter()
        .partition(|(_, source)| source.as_deref() == Some("hostloop-exec"));
    let joined = |errs: &[&(String, Option<String>)]| {
        errs.iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    };
    if !fatal.is_empty() {
        signals.push(Signal {
            code: "infra_error".into(),
            severity: Severity::Fail,
            message: format!(
                "infrastructure error(s) during the run (evidence contaminated): {}",
                joined(&fatal)
            ),
        });
    }
    if !exec.is_empty() {
        signals.push(Signal {
            code: "exec_infra_error".into(),
            severity: Severity::Warn,
            message: format!(
                "tool-call infrastructure error(s) — the affected command(s) failed, the run's \
                    evidence is otherwise intact: {}",
                joined(&exec)
            ),
        });
    }
    signals
}

/// `outcome` from the run result and its verdict.
pub fn outcome(result: &str, verdict: &Verdict) -> Outcome {
    if result != "success" {
        Outcome::Errored
    } else if verdict
        .signals
        .iter()
        .any(|s| s.code == "stalled" || s.code == "ended_with_question")
    {
        Outcome::NoDeliverable
    } else if verdict.pass {
        Outcome::DeliveredClean
    } else {
        Outcome::DeliveredWithVerdictFail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome_of(
        assertion: serde_json::Value,
        pass: bool,
        source: Option<&str>,
    ) -> AssertionOutcome {
        AssertionOutcome {
            assertion,
            pass,
            message: if pass { String::new() } else { "boom".into() },
            evidence: None,
            source: source.map(str::to_owned),
            judge: None,
        }
    }

    #[test]
    fn failing_assertions_become_failures_with_their_kind() {
        let a = [
            outcome_of(json!({"result": "success"}), true, None),
            outcome_of(json!({"tool_not_called": "Skill"}), false, None),
            outcome_of(json!({}), false, Some("staleness")),
        ];
        let v = compute(
            &VerdictInput {
                result: "success",
                assertions: &a,
                ..Default::default()
            },
            Lane::Replay,
        );
        assert!(!v.pass);
        assert_eq!(v.exit_code, ExitStatus::Failure);
        assert_eq!(v.failures.len(), 2);
        assert_eq!(v.failures[0].assertion.as_deref(), Some("tool_not_called"));
        assert_eq!(v.failures[0].kind, "assertion");
        assert_eq!(v.failures[1].assertion, None);
        assert_eq!(v.failures[1].kind, "staleness");
        assert_eq!(outcome("success", &v), Outcome::DeliveredWithVerdictFail);
    }

    #[test]
    fn an_error_result_always_fails_even_with_result_error_authored() {
        let a = [outcome_of(json!({"result": "error"}), true, None)];
        let v = compute(
            &VerdictInput {
                result: "error",
                assertions: &a,
                ..Default::default()
            },
            Lane::Replay,
        );
        assert!(!v.pass);
        assert_eq!(
            v.failures,
            vec![Failure {
                assertion: None,
                message: "run result was error".into(),
                kind: "guard".into()
            }]
        );
        assert_eq!(outcome("error", &v), Outcome::Errored);
    }

    #[test]
    fn stall_fails_unless_allowed_and_exec_infra_only_warns() {
        let infra = [(
            "sandbox hiccup".to_string(),
            Some("hostloop-exec".to_string()),
        )];
        let v = compute(
            &VerdictInput {
                result: "success",
                stalled: true,
                infra_errors: &infra,
                ..Default::default()
            },
            Lane::Replay,
        );
        assert!(!v.pass);
        assert_eq!(outcome("success", &v), Outcome::NoDeliverable);
        let allow = [outcome_of(json!({"allow_stall": true}), true, None)];
        let v = compute(
            &VerdictInput {
                result: "success",
                stalled: true,
                infra_errors: &infra,
                assertions: &allow,
                ..Default::default()
            },
            Lane::Replay,
        );
        assert!(v.pass, "{v:?}");
        assert_eq!(v.signals[0].code, "exec_infra_error");
    }
}
