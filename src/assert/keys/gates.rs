//! `gates_all_scripted` (v15): every gate that fired was answered by a
//! scripted rule, so nothing stood in for a human.
//!
//! A replayed decision always says `by: "replay"`, so each gate is
//! re-classified against the cassette's frozen `answers:` with the decider's
//! own rules ([`crate::scenario::answers`]): a question gate is scripted when
//! a `when_question` rule covers every sub-question (the decider answers a
//! gate atomically, or not at all); a permission when a `when_tool` rule
//! names the tool, the tool is on the default-allow registry, or the
//! parity default denied it. Frozen answers carrying a redaction token, or
//! a cassette whose `authoring.nonDeterministic` contradicts rules covering
//! every gate, cannot say who answered: evidence unavailable, never a pass
//! (the original's src/gates-scripted.ts, test/gates-all-scripted.test.ts).

use serde_json::{Map, Value};

use super::{Env, KeyResult, bad_param, json, ok_ev};
use crate::evidence::DecisionRecord;
use crate::scenario::answers::{AnswerRule, parse_rules};

/// What a redaction leaves in a string (`[REDACTED:<label>:<hash>]`).
const REDACTION_MARK: &str = "[REDACTED";

/// The MCP tool through which the hostloop's web_fetch gate asks; its
/// decider saw a per-domain request, so a rule naming the tool never fired.
const WEB_FETCH_TOOL: &str = "mcp__workspace__web_fetch";

/// How one gate was answered.
enum Verdict {
    Scripted,
    Not(String),
    Unavailable(String),
}

/// The frozen rules a replayed gate is re-classified against; `None` when
/// they do not parse.
type Rules = Option<Vec<AnswerRule>>;

pub(super) fn gates_all_scripted(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let with_permissions = match v {
        Value::Bool(true) => false,
        Value::Object(o) => o.get("include_permissions").and_then(Value::as_bool) == Some(true),
        _ => return Err(bad_param(key)),
    };
    // A truncated re-drive keeps no asked-question record (the original's
    // empty error record).
    if env.run.gate_options_missing() {
        return Err(
            "evidence unavailable: the asked-question record is absent — cannot tell \
            whether a gate went unanswered"
                .into(),
        );
    }
    let rules = frozen_rules(env.ctx.cassette.scenario())?;
    let decisions = &env.run.decisions;
    let questions: Vec<&DecisionRecord> =
        decisions.iter().filter(|d| d.kind == "question").collect();
    let permissions: Vec<&DecisionRecord> = if with_permissions {
        decisions
            .iter()
            .filter(|d| d.kind == "tool" && d.decision != "error")
            .collect()
    } else {
        Vec::new()
    };
    let mut not = Vec::new();
    let mut unavailable = Vec::new();
    for d in &questions {
        let name = gate_name(d);
        match classify_question(d, &rules) {
            Verdict::Scripted => {}
            Verdict::Not(why) => not.push(format!("question gate {name}: {why}")),
            Verdict::Unavailable(why) => unavailable.push(format!("question gate {name}: {why}")),
        }
    }
    for q in unanswered(&env.run.questions, decisions) {
        not.push(format!(
            "question gate {}: asked, but no answer was recorded",
            short(q)
        ));
    }
    for d in &permissions {
        let what = format!("permission {} ({})", d.name, d.decision);
        match classify_permission(d, &rules) {
            Verdict::Scripted => {}
            Verdict::Not(why) => not.push(format!("{what}: {why}")),
            Verdict::Unavailable(why) => unavailable.push(format!("{what}: {why}")),
        }
    }
    verdict(
        &not,
        &unavailable,
        env.ctx
            .cassette
            .authoring()
            .is_some_and(|a| a.non_deterministic),
        questions.len(),
        with_permissions.then_some(permissions.len()),
    )
}

/// The scenario's frozen `answers:` rules; redacted rules cannot show which
/// rule answered a gate.
fn frozen_rules(scenario: &Map<String, Value>) -> Result<Rules, String> {
    let frozen = scenario
        .get("answers")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    if crate::js::json::legacy_serde(&frozen).contains(REDACTION_MARK) {
        return Err(
            "evidence unavailable: the cassette's frozen answers were redacted, so they \
            cannot show which rule answered a replayed gate"
                .into(),
        );
    }
    Ok(parse_rules(&frozen, "answers").ok())
}

/// A question gate's name in messages: its sub-questions' short labels.
fn gate_name(d: &DecisionRecord) -> String {
    let name = labels_of(d)
        .iter()
        .map(|l| short(l))
        .collect::<Vec<_>>()
        .join(" / ");
    if name.is_empty() {
        "(no question text)".to_owned()
    } else {
        name
    }
}

/// The key's message from the classified gates.
fn verdict(
    not: &[String],
    unavailable: &[String],
    recorded_non_deterministic: bool,
    questions: usize,
    permissions: Option<usize>,
) -> KeyResult {
    if !not.is_empty() {
        let tail = if unavailable.is_empty() {
            String::new()
        } else {
            format!(" (and {} unattributable)", unavailable.len())
        };
        return Err(format!(
            "{} gate(s) not answered by a scripted rule — {}{tail}",
            not.len(),
            not.join("; ")
        ));
    }
    if !unavailable.is_empty() {
        return Err(format!("evidence unavailable: {}", unavailable.join("; ")));
    }
    // Rules covering every gate, yet the recording says a live decider
    // answered one: they are not the rules it ran with.
    if recorded_non_deterministic {
        return Err(
            "evidence unavailable: the cassette records that a live decider answered a \
            gate during recording, but its frozen answers cover every gate replayed here"
                .into(),
        );
    }
    let perm = permissions
        .map(|n| format!(", {n} permission decision(s) by scripted or fixed rules"))
        .unwrap_or_default();
    ok_ev(if questions > 0 {
        format!("all {questions} question gate(s) answered by scripted rules{perm}")
    } else {
        format!(
            "no question gate fired{perm} — pair with gate_answer_count_min or \
                questions_count_max to say whether gates were expected"
        )
    })
}

/// A question decision's sub-question labels (`question`, else `header`),
/// else the keys of its recorded answers.
fn labels_of(d: &DecisionRecord) -> Vec<String> {
    match d.questions.as_ref().and_then(Value::as_array) {
        Some(qs) if !qs.is_empty() => qs.iter().map(label).collect(),
        _ => d
            .detail
            .as_ref()
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default(),
    }
}

fn label(q: &Value) -> String {
    let text = |k: &str| q.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    text("question")
        .or_else(|| text("header"))
        .unwrap_or_default()
        .to_owned()
}

fn classify_question(d: &DecisionRecord, rules: &Rules) -> Verdict {
    match d.by {
        "scripted" => return Verdict::Scripted,
        "replay" => {}
        by => return Verdict::Not(format!("answered by {by}")),
    }
    let Some(rules) = rules else {
        return Verdict::Unavailable("the cassette's frozen answers do not compile".into());
    };
    let labels = labels_of(d);
    if labels.is_empty() {
        return Verdict::Unavailable("the recorded gate carries no question text".into());
    }
    let missed: Vec<String> = labels
        .iter()
        .filter(|l| !question_rule_covers(rules, l))
        .map(|l| json::stringify(Some(&Value::String(l.clone()))))
        .collect();
    if missed.is_empty() {
        Verdict::Scripted
    } else {
        Verdict::Not(format!("no frozen rule answers {}", missed.join(", ")))
    }
}

/// A `when_question` rule matches the sub-question (a pattern that runs out
/// of time matches nothing, as it failed the recording).
fn question_rule_covers(rules: &[AnswerRule], question: &str) -> bool {
    rules.iter().any(|r| match r {
        AnswerRule::Question { regex, .. } => regex.is_match(question).unwrap_or(false),
        AnswerRule::Tool { .. } => false,
    })
}

fn is_web_fetch(name: &str) -> bool {
    name == WEB_FETCH_TOOL || name.starts_with("webfetch:")
}

const PERMISSIVE: &str = "permissive off-registry auto-allow (cowork parity)";

fn classify_permission(d: &DecisionRecord, rules: &Rules) -> Verdict {
    match d.by {
        // The harness's own fixed rules.
        "scripted" | "agent" => return Verdict::Scripted,
        // Replay found no recorded answer for the request: missing evidence.
        "none" => {
            return Verdict::Unavailable("the recording holds no answer for it".into());
        }
        "replay" => {}
        by => return Verdict::Not(format!("answered by {by}")),
    }
    let Some(rules) = rules else {
        return Verdict::Unavailable("the cassette's frozen answers do not compile".into());
    };
    // Checked before the rules: live, the web_fetch gate's decider saw a
    // per-domain request, so a rule naming the tool never answered it.
    if is_web_fetch(&d.name) {
        return Verdict::Unavailable("a replayed web_fetch permission cannot be attributed".into());
    }
    let named = rules
        .iter()
        .any(|r| matches!(r, AnswerRule::Tool { tool, .. } if *tool == d.name));
    if named || crate::scenario::answers::is_default_allowed_tool(&d.name) {
        return Verdict::Scripted;
    }
    match d.decision.as_str() {
        "allow" => Verdict::Not(PERMISSIVE.into()),
        // Strict parity's deny, or the hostloop path gate: a fixed rule.
        "deny" => Verdict::Scripted,
        other => Verdict::Unavailable(format!("replayed permission with outcome {other}")),
    }
}

/// The sub-questions asked that no question decision answered (a multiset
/// difference by text).
fn unanswered<'a>(asked: &'a [String], decisions: &[DecisionRecord]) -> Vec<&'a str> {
    let mut left: std::collections::HashMap<String, usize> = Default::default();
    for d in decisions.iter().filter(|d| d.kind == "question") {
        for l in labels_of(d) {
            *left.entry(l).or_default() += 1;
        }
    }
    asked
        .iter()
        .filter(|q| match left.get_mut(q.as_str()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .map(String::as_str)
        .collect()
}

/// A label as the message quotes it: JSON text, over 120 UTF-16 units cut
/// to 117 and `...`.
fn short(s: &str) -> String {
    let cut = if crate::js::utf16::len(s) > 120 {
        format!("{}...", crate::js::utf16::slice(s, 117))
    } else {
        s.to_owned()
    };
    json::stringify(Some(&Value::String(cut)))
}
