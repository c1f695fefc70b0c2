//! The decider: how a recording answers the agent's questions and permission
//! requests from a scenario's `answers:` rules (docs/spec/record.md §1.8).
//!
//! The chain is `scripted rules → permission-parity default → terminal`:
//! - `when_question` rules (ECMAScript regex, case-insensitive, unanchored;
//!   compiled by [`crate::js::regex`], the one bounded ES-regex home)
//!   answer a whole AskUserQuestion gate atomically, with `answer:` verbatim
//!   or `choose:` resolved against the offered labels by the resolution
//!   ladder; multi-select answers are the canonical labels joined by `", "`;
//! - `when_tool` rules match the tool name exactly, with `decide:` or an
//!   `allow_if:` JavaScript predicate evaluated in [`crate::js::sandbox`] (no I/O,
//!   memory limit, time bound) with `else:` (default deny);
//! - unscripted permissions follow the session's `permission_parity`;
//! - an unscripted question fails loud (`on_unanswered: fail`, the default)
//!   with a ready-to-paste YAML rule, or takes option 1 under `first`
//!   (non-deterministic authoring).
//!
//! [`check_recorded_answers`] re-derives a cassette's recorded answers with the
//! same decider (replay's `replay_protocol_fidelity`).
//!
//! Not here: writing the control frames (that is `crate::agent`), dialogs and
//! elicitations (always fail-closed at protocol), LLM/decider-dir terminals.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::cassette::Cassette;
use crate::js::regex::{EsRegex, compile_es, escape_literal};
use crate::js::sandbox;

/// `decide:` / `else:` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decide {
    Allow,
    Deny,
}

impl Decide {
    fn parse(v: &Value, at: &str) -> Result<Decide, String> {
        match v.as_str() {
            Some("allow") => Ok(Decide::Allow),
            Some("deny") => Ok(Decide::Deny),
            _ => Err(format!("{at}: must be `allow` or `deny`")),
        }
    }
}

/// What a `when_question` rule delivers.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionReply {
    /// `choose:` members (a string is a one-member list).
    Choose(Vec<String>),
    /// `answer:` free text, delivered verbatim.
    Answer(String),
}

/// What a `when_tool` rule decides.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolDecision {
    Decide(Decide),
    /// `allow_if:` JavaScript predicate, `else:` when falsy.
    AllowIf {
        expr: String,
        otherwise: Decide,
    },
}

/// One `answers:` rule.
#[derive(Debug, Clone)]
pub enum AnswerRule {
    Question {
        pattern: String,
        /// `new RegExp(pattern, "i")`, compiled by reel's one bounded
        /// ECMAScript entry point.
        regex: EsRegex,
        reply: QuestionReply,
    },
    Tool {
        tool: String,
        decision: ToolDecision,
    },
}

/// A rule's keys in the order the original's loader emits them (its schema's
/// declaration order), so a frozen rule reads as the original freezes it.
pub const RULE_KEYS: &[&str] = &[
    "when_question",
    "choose",
    "answer",
    "when_tool",
    "decide",
    "allow_if",
    "else",
    "grant",
];

/// Why an `answers:` list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuleError {
    /// The problem, prefixed with the rule's JSON path (`answers[2].choose: …`).
    pub message: String,
    /// The rule's shape is valid and only its `when_question` pattern or
    /// `allow_if` predicate failed to compile: a load-time check rather than
    /// a schema violation (the original's loader tells the two apart).
    pub compile: bool,
}

/// Parses and validates the `answers:` list; `at` is the JSON path prefix used
/// in messages (e.g. `answers`).
pub fn parse_rules(v: &Value, at: &str) -> Result<Vec<AnswerRule>, RuleError> {
    let Some(items) = v.as_array() else {
        return Err(RuleError {
            message: format!("{at}: must be a list of rules"),
            compile: false,
        });
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut compile = false;
            parse_rule(item, &format!("{at}[{i}]"), &mut compile)
                .map_err(|message| RuleError { message, compile })
        })
        .collect()
}

/// The rule objects of an `answers:` value with their keys in [`RULE_KEYS`]
/// order (anything else is returned as it is).
pub fn in_schema_order(answers: &Value) -> Value {
    let Some(items) = answers.as_array() else {
        return answers.clone();
    };
    Value::Array(
        items
            .iter()
            .map(|item| match item.as_object() {
                Some(map) => Value::Object(
                    RULE_KEYS
                        .iter()
                        .filter_map(|k| map.get(*k).map(|v| ((*k).to_owned(), v.clone())))
                        .chain(
                            map.iter()
                                .filter(|(k, _)| !RULE_KEYS.contains(&k.as_str()))
                                .map(|(k, v)| (k.clone(), v.clone())),
                        )
                        .collect(),
                ),
                None => item.clone(),
            })
            .collect(),
    )
}

/// One rule; `compile` is set when the error is a pattern or predicate that
/// does not compile.
fn parse_rule(v: &Value, at: &str, compile: &mut bool) -> Result<AnswerRule, String> {
    let Some(map) = v.as_object() else {
        return Err(format!(
            "{at}: a rule must be an object with `when_question` or `when_tool`"
        ));
    };
    for key in map.keys() {
        if !RULE_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "{at}: unknown key `{key}`{}",
                super::did_you_mean(key, RULE_KEYS)
            ));
        }
    }
    let str_at = |key: &str| rule_str(map, key, at);
    let when_q = str_at("when_question")?;
    let when_t = str_at("when_tool")?;
    match (when_q, when_t) {
        (Some(_), Some(_)) => Err(format!(
            "{at}: has both `when_question` and `when_tool`; a rule matches one family — split it \
                in two"
        )),
        (None, None) => Err(format!("{at}: needs `when_question` or `when_tool`")),
        (Some(pattern), None) => question_rule(map, pattern, at, compile),
        (None, Some(tool)) => tool_rule(map, tool, at, compile),
    }
}

/// A string-valued rule field, `None` when absent.
fn rule_str(map: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{at}.{key}: must be a string")),
    }
}

/// A `when_question` rule: a pattern and exactly one of `choose` / `answer`.
fn question_rule(
    map: &Map<String, Value>,
    pattern: String,
    at: &str,
    compile: &mut bool,
) -> Result<AnswerRule, String> {
    for k in ["decide", "allow_if", "else", "grant"] {
        if map.contains_key(k) {
            return Err(format!(
                "{at}.{k}: only valid on a `when_tool` rule; a question rule uses `choose` \
                    or `answer`"
            ));
        }
    }
    let regex = compile_es(&pattern).map_err(|e| {
        *compile = true;
        format!("{at}.when_question: invalid regex `{pattern}`: {e}")
    })?;
    let reply = match (map.get("choose"), rule_str(map, "answer", at)?) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at}: has both `choose` and `answer`; keep exactly one"
            ));
        }
        (None, None) => {
            return Err(format!(
                "{at}: a question rule needs `choose` (an offered label, index, `first` or \
                    `recommended`) or `answer` (free text)"
            ));
        }
        (Some(c), None) => QuestionReply::Choose(parse_choose(c, &format!("{at}.choose"))?),
        (None, Some(a)) => QuestionReply::Answer(a),
    };
    Ok(AnswerRule::Question {
        pattern,
        regex,
        reply,
    })
}

/// A `when_tool` rule: a tool and exactly one of `decide` / `allow_if`.
fn tool_rule(
    map: &Map<String, Value>,
    tool: String,
    at: &str,
    compile: &mut bool,
) -> Result<AnswerRule, String> {
    for k in ["choose", "answer"] {
        if map.contains_key(k) {
            return Err(format!(
                "{at}.{k}: only valid on a `when_question` rule; a tool rule uses `decide` \
                    or `allow_if`"
            ));
        }
    }
    if tool.is_empty() {
        return Err(format!("{at}.when_tool: must not be empty"));
    }
    if map.contains_key("grant") && !tool.starts_with("webfetch:") {
        return Err(format!(
            "{at}.grant: only valid on a `when_tool: \"webfetch:<domain>\"` rule"
        ));
    }
    let decision = match (map.get("decide"), rule_str(map, "allow_if", at)?) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{at}: has both `decide` and `allow_if`; keep exactly one"
            ));
        }
        (None, None) => {
            return Err(format!(
                "{at}: a tool rule needs `decide: allow|deny` or `allow_if: <JS \
                    expression>`"
            ));
        }
        (Some(d), None) => {
            if map.contains_key("else") {
                return Err(format!(
                    "{at}.else: only meaningful with `allow_if`; remove it"
                ));
            }
            ToolDecision::Decide(Decide::parse(d, &format!("{at}.decide"))?)
        }
        (None, Some(expr)) => {
            let otherwise = match map.get("else") {
                None => Decide::Deny,
                Some(e) => Decide::parse(e, &format!("{at}.else"))?,
            };
            sandbox::check_syntax(&expr).map_err(|e| {
                *compile = true;
                format!("{at}.allow_if: does not compile: {e}")
            })?;
            ToolDecision::AllowIf { expr, otherwise }
        }
    };
    Ok(AnswerRule::Tool { tool, decision })
}

/// Compiles an `allow_if` predicate in the sandbox without running it (the
/// load-time check; `reel lint` reports it with the rule's line).
pub fn check_allow_if(expr: &str) -> Result<(), String> {
    sandbox::check_syntax(expr)
}

fn parse_choose(v: &Value, at: &str) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                // YAML `choose: 2` / `- 2`: an index written as a number.
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("{at}: list members must be strings")),
            })
            .collect(),
        Value::Number(n) => Ok(vec![n.to_string()]),
        _ => Err(format!(
            "{at}: must be a string or a non-empty list of strings"
        )),
    }
}

/// `permission_parity` of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionParity {
    #[default]
    Cowork,
    Strict,
}

/// Terminal policy for an unscripted question (`on_unanswered`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unanswered {
    #[default]
    Fail,
    First,
}

/// Where a permission decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionSource {
    /// A `when_tool` rule.
    Scripted,
    /// `Read`/`Glob`/`Grep` under either parity.
    DefaultAllowBuiltin,
    /// `cowork` parity allowed an unscripted tool (fail signal unless opted in).
    PermissiveAutoAllow,
    /// `strict` parity denied an unscripted tool.
    StrictDeny,
}

/// A permission decision.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAnswer {
    pub allow: bool,
    /// Deny message (`None` on allow).
    pub message: Option<String>,
    pub source: PermissionSource,
}

/// A question gate's answers, keyed by the sub-question's `question` text.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionAnswer {
    pub answers: Map<String, Value>,
    /// True when the `first` terminal answered (authoring is non-deterministic).
    pub nondeterministic: bool,
    pub warnings: Vec<String>,
}

/// Why the decider could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecideError {
    /// No rule answers the gate and the policy is `fail` (message carries the
    /// ready-to-paste rule).
    #[error("{0}")]
    Unanswered(String),
    /// A rule matched but cannot be applied (bad `choose`, predicate error,
    /// malformed gate). Fatal: never silently denied.
    #[error("{0}")]
    Script(String),
}

/// The decider chain for one run.
#[derive(Debug, Clone)]
pub struct Decider {
    pub rules: Vec<AnswerRule>,
    pub parity: PermissionParity,
    pub unanswered: Unanswered,
}

/// One sub-question of an AskUserQuestion gate, as offered.
#[derive(Debug, Clone)]
struct SubQuestion {
    question: String,
    options: Vec<String>,
    multi: bool,
}

fn sub_questions(questions: &Value) -> Result<Vec<SubQuestion>, DecideError> {
    let Some(items) = questions.as_array() else {
        return Err(DecideError::Script(
            "malformed AskUserQuestion: `input.questions` is not an array".into(),
        ));
    };
    if items.is_empty() {
        return Err(DecideError::Script(
            "malformed AskUserQuestion: the gate has zero questions".into(),
        ));
    }
    let mut out = Vec::new();
    for (i, q) in items.iter().enumerate() {
        let Some(q) = q.as_object() else {
            return Err(DecideError::Script(format!(
                "malformed AskUserQuestion: questions[{i}] is not an object"
            )));
        };
        let question = match q.get("question") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(DecideError::Script(format!(
                    "malformed AskUserQuestion: questions[{i}] has no `question` text (answers are \
                        keyed by it)"
                )));
            }
        };
        let mut options = Vec::new();
        match q.get("options") {
            None | Some(Value::Null) => {}
            Some(Value::Array(opts)) => {
                for (j, o) in opts.iter().enumerate() {
                    match o.get("label").and_then(Value::as_str) {
                        Some(l) => options.push(l.to_owned()),
                        None => {
                            return Err(DecideError::Script(format!(
                                "malformed AskUserQuestion: questions[{i}].options[{j}] has no \
                                    string `label`"
                            )));
                        }
                    }
                }
            }
            Some(_) => {
                return Err(DecideError::Script(format!(
                    "malformed AskUserQuestion: questions[{i}].options is not an array"
                )));
            }
        }
        let multi = match q.get("multiSelect") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(DecideError::Script(format!(
                    "malformed AskUserQuestion: questions[{i}].multiSelect is not a boolean"
                )));
            }
        };
        out.push(SubQuestion {
            question,
            options,
            multi,
        });
    }
    Ok(out)
}

impl Decider {
    /// Answers an AskUserQuestion gate (`input.questions`).
    pub fn decide_question(&self, questions: &Value) -> Result<QuestionAnswer, DecideError> {
        let subs = sub_questions(questions)?;
        let mut warnings = Vec::new();
        // Atomic gate: every sub-question needs a rule, else the whole gate abstains.
        let mut matched = Vec::new();
        let mut unmatched = Vec::new();
        for sub in &subs {
            match self.question_rule(sub)? {
                Some(reply) => matched.push((sub, reply)),
                None => unmatched.push(sub),
            }
        }
        if !unmatched.is_empty() {
            if !matched.is_empty() {
                warnings.push(format!(
                    "answers are atomic per gate: no rule matched {}",
                    unmatched
                        .iter()
                        .map(|s| format!("{:?}", s.question))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            return match self.unanswered {
                Unanswered::Fail => Err(DecideError::Unanswered(unanswered_message(&subs))),
                Unanswered::First => first_options(&subs, warnings),
            };
        }
        let mut answers = Map::new();
        for (sub, reply) in matched {
            let text = match reply {
                QuestionReply::Answer(a) => a.clone(),
                QuestionReply::Choose(members) => {
                    resolve_choose(members, sub, &mut warnings).map_err(DecideError::Script)?
                }
            };
            answers.insert(sub.question.clone(), Value::String(text));
        }
        Ok(QuestionAnswer {
            answers,
            nondeterministic: false,
            warnings,
        })
    }

    /// The reply of the first `when_question` rule matching `sub`. A
    /// backtracking pattern that runs out of time is a script error, not a
    /// silent "no match".
    fn question_rule(&self, sub: &SubQuestion) -> Result<Option<&QuestionReply>, DecideError> {
        for r in &self.rules {
            let AnswerRule::Question {
                pattern,
                regex,
                reply,
            } = r
            else {
                continue;
            };
            let hit = regex.is_match(&sub.question).map_err(|e| {
                DecideError::Script(format!("answers: when_question `{pattern}`: {e}"))
            })?;
            if hit {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    /// Answers a `can_use_tool` for any tool but AskUserQuestion.
    pub fn decide_permission(
        &self,
        tool: &str,
        input: &Value,
    ) -> Result<PermissionAnswer, DecideError> {
        let rule = self.rules.iter().find_map(|r| match r {
            AnswerRule::Tool { tool: t, decision } if t == tool => Some(decision),
            _ => None,
        });
        if let Some(decision) = rule {
            let allow = match decision {
                ToolDecision::Decide(d) => *d == Decide::Allow,
                ToolDecision::AllowIf { expr, otherwise } => {
                    let truthy = sandbox::eval_predicate(expr, input).map_err(|e| {
                        DecideError::Script(format!(
                            "allow_if for `{tool}` failed: {e} (a predicate error is fatal, never \
                                a silent deny)"
                        ))
                    })?;
                    truthy || *otherwise == Decide::Allow
                }
            };
            return Ok(PermissionAnswer {
                allow,
                message: (!allow).then(|| "denied by scenario policy".to_owned()),
                source: PermissionSource::Scripted,
            });
        }
        if is_default_allowed_tool(tool) {
            return Ok(PermissionAnswer {
                allow: true,
                message: None,
                source: PermissionSource::DefaultAllowBuiltin,
            });
        }
        Ok(match self.parity {
            PermissionParity::Cowork => PermissionAnswer {
                allow: true,
                message: None,
                source: PermissionSource::PermissiveAutoAllow,
            },
            PermissionParity::Strict => PermissionAnswer {
                allow: false,
                message: Some("denied (strict, off-registry)".into()),
                source: PermissionSource::StrictDeny,
            },
        })
    }
}

/// The built-in tools either parity allows without a rule (the default-allow
/// registry).
pub fn is_default_allowed_tool(tool: &str) -> bool {
    matches!(tool, "Read" | "Glob" | "Grep")
}

/// The resolution ladder of §1.8 for one sub-question.
fn resolve_choose(
    members: &[String],
    sub: &SubQuestion,
    warnings: &mut Vec<String>,
) -> Result<String, String> {
    if members.len() > 1 && !sub.multi {
        return Err(format!(
            "scripted answer lists {} choices for {:?}, but that question is single-select; choose \
                one",
            members.len(),
            sub.question
        ));
    }
    if sub.options.is_empty() {
        return Ok(members.join(", "));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, l) in sub.options.iter().enumerate() {
        if !seen.insert(l.to_lowercase()) {
            warnings.push(format!("{:?} offers the label {l:?} twice", sub.question));
        }
        if l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty() && l != &(i + 1).to_string() {
            warnings.push(format!(
                "{:?}: numeric label {l:?} collides with 1-based indexes",
                sub.question
            ));
        }
    }
    let mut chosen: Vec<&str> = Vec::new();
    for m in members {
        let label = resolve_one(m, &sub.options).ok_or_else(|| {
            let mut msg = format!(
                "scripted answer {m:?} for {:?} matched no offered option; valid labels: {}",
                sub.question,
                sub.options.join(" | ")
            );
            if let Some(near) = nearest_label(m, &sub.options) {
                msg.push_str(&format!(" (did you mean {near:?}?)"));
            }
            msg
        })?;
        if !chosen.contains(&label) {
            chosen.push(label);
        }
    }
    if chosen.len() > 1 && chosen.iter().any(|l| l.contains(',')) {
        warnings.push(format!(
            "{:?}: a chosen label contains a comma, so the joined answer is ambiguous",
            sub.question
        ));
    }
    Ok(chosen.join(", "))
}

fn strip_recommended(s: &str) -> String {
    let t = s.trim().to_lowercase();
    t.strip_suffix("(recommended)")
        .map(|r| r.trim_end().to_owned())
        .unwrap_or(t)
}

fn resolve_one<'a>(value: &str, labels: &'a [String]) -> Option<&'a str> {
    let v = value.trim();
    let lower = v.to_lowercase();
    // 1. case-insensitive exact label
    if let Some(l) = labels.iter().find(|l| l.to_lowercase() == lower) {
        return Some(l);
    }
    // 2. 1-based index
    if !v.is_empty()
        && v.chars().all(|c| c.is_ascii_digit())
        && let Ok(i) = v.parse::<usize>()
        && i >= 1
        && i <= labels.len()
    {
        return Some(&labels[i - 1]);
    }
    // 3. equal modulo a trailing " (Recommended)"
    let stripped = strip_recommended(v);
    if let Some(l) = labels.iter().find(|l| strip_recommended(l) == stripped) {
        return Some(l);
    }
    // 4. keyword `recommended`
    if lower == "recommended"
        && let Some(l) = labels
            .iter()
            .find(|l| l.trim().to_lowercase().ends_with("(recommended)"))
    {
        return Some(l);
    }
    // 5. keyword `first`
    if lower == "first" {
        return labels.first().map(String::as_str);
    }
    // 6. unique boundary prefix
    if lower.is_empty() {
        return None;
    }
    let hits: Vec<&String> = labels
        .iter()
        .filter(|l| {
            let ll = l.to_lowercase();
            let Some(rest) = ll.strip_prefix(&lower) else {
                return false;
            };
            let rest = rest.trim_start();
            rest.is_empty() || rest.starts_with([':', '(', ',', '—', '–'])
        })
        .collect();
    if hits.len() == 1 {
        return Some(hits[0]);
    }
    None
}

fn nearest_label<'a>(value: &str, labels: &'a [String]) -> Option<&'a str> {
    let v = value.to_lowercase();
    labels
        .iter()
        .map(|l| (super::levenshtein(&v, &l.to_lowercase()), l))
        .filter(|(d, l)| {
            let max = v.chars().count().max(l.chars().count());
            *d <= max.div_ceil(3)
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, l)| l.as_str())
}

fn yaml_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `on_unanswered: first`: option 1 of every sub-question, marked
/// non-deterministic; a sub-question with no options cannot be answered.
fn first_options(
    subs: &[SubQuestion],
    mut warnings: Vec<String>,
) -> Result<QuestionAnswer, DecideError> {
    let mut answers = Map::new();
    for sub in subs {
        let Some(first) = sub.options.first() else {
            return Err(DecideError::Script(format!(
                "on_unanswered: first cannot answer {:?}: it offers no options",
                sub.question
            )));
        };
        answers.insert(sub.question.clone(), Value::String(first.clone()));
    }
    warnings
        .push("on_unanswered: first answered with option 1 (non-deterministic authoring)".into());
    Ok(QuestionAnswer {
        answers,
        nondeterministic: true,
        warnings,
    })
}

/// The fail-loud message for an unscripted gate, with a ready-to-paste rule.
fn unanswered_message(subs: &[SubQuestion]) -> String {
    let mut msg = String::from("unscripted AskUserQuestion (on_unanswered=fail):");
    for sub in subs {
        msg.push_str(&format!("\n  question: {:?}", sub.question));
        if !sub.options.is_empty() {
            msg.push_str(&format!("\n  offered:  {}", sub.options.join(" | ")));
        }
        let head: String = sub.question.chars().take(40).collect();
        let choice = sub.options.first().cloned().unwrap_or_else(|| "…".into());
        msg.push_str("\n  add to the scenario's `answers:`:\n");
        msg.push_str(&format!(
            "    - when_question: {}\n      choose: {}",
            yaml_quote(&escape_literal(&head)),
            yaml_quote(&choice)
        ));
    }
    msg
}

/// What a strict-parity deny of an unscripted permission prompt prints: the
/// tool, its input, and a ready-to-paste `answers:` rule that allows it
/// (narrowed to the command or file when the input names one).
pub fn unanswered_permission_message(tool: &str, input: &Value) -> String {
    let shown = crate::elide::head_tail(&input.to_string(), 300);
    let js = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let first_line =
        |s: &str| -> String { s.lines().next().unwrap_or("").chars().take(60).collect() };
    let str_field = |k: &str| {
        input
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let condition = if let Some(cmd) = str_field("command") {
        Some(format!("command.startsWith({})", js(&first_line(cmd))))
    } else if let Some(path) = str_field("file_path").or_else(|| str_field("notebook_path")) {
        // The absolute path is the run's; its file name is what stays.
        let name = path.rsplit('/').next().unwrap_or(path);
        let key = if input.get("file_path").is_some() {
            "file_path"
        } else {
            "notebook_path"
        };
        Some(format!("{key}.endsWith({})", js(&format!("/{name}"))))
    } else {
        None
    };
    let mut msg = format!(
        "unscripted permission prompt for `{tool}` denied (permission_parity: strict)\n  \
         input:    {shown}\n  add to the scenario's `answers:`:\n    - when_tool: {}",
        yaml_quote(tool)
    );
    match condition {
        Some(c) => msg.push_str(&format!(
            "\n      allow_if: {}\n      else: deny",
            yaml_quote(&c)
        )),
        None => msg.push_str("\n      decide: allow"),
    }
    msg
}

/// Problems reported before [`check_recorded_answers`] stops looking.
const MAX_PROBLEMS: usize = 20;

/// For a cassette whose authoring is fully scripted, re-derives every recorded
/// can_use_tool answer in `controlOut` from the frozen `answers:` (rules,
/// choose ladder, permission-parity default) and returns one problem string
/// per recorded answer that could not have come from them. A cassette with
/// `authoring.nonDeterministic`, or with unparsable rules, yields the reason
/// as a single problem only for the latter.
pub fn check_recorded_answers(cassette: &Cassette) -> Vec<String> {
    if cassette.authoring().is_some_and(|a| a.non_deterministic) {
        return Vec::new();
    }
    let decider = match frozen_decider(cassette) {
        Ok(d) => d,
        Err(e) => return vec![format!("frozen answers do not parse: {e}")],
    };
    let requests = permission_requests(cassette);
    let mut problems = Vec::new();
    for line in cassette.control_out().unwrap_or_default() {
        // An untrusted cassette could repeat a costly request thousands of
        // times; a handful of problems already fails the replay.
        if problems.len() >= MAX_PROBLEMS {
            problems.push("… further recorded answers not checked".into());
            break;
        }
        let Some(answer) = RecordedAnswer::parse(line) else {
            continue;
        };
        let Some((tool, input)) = requests.get(&answer.request_id) else {
            continue;
        };
        let problem = if tool == "AskUserQuestion" {
            question_problem(&decider, &answer, input)
        } else {
            permission_problem(&decider, &answer, tool, input)
        };
        problems.extend(problem);
    }
    problems
}

/// The decider the cassette's frozen scenario builds: its rules, its
/// session's permission parity and its `on_unanswered`.
fn frozen_decider(cassette: &Cassette) -> Result<Decider, String> {
    let scenario = cassette.scenario();
    let rules = match scenario.get("answers") {
        None => Vec::new(),
        Some(v) => parse_rules(v, "scenario.answers").map_err(|e| e.message)?,
    };
    let unanswered = match scenario.get("on_unanswered").and_then(Value::as_str) {
        Some("first") => Unanswered::First,
        _ => Unanswered::Fail,
    };
    let parity = scenario
        .get("session")
        .and_then(Value::as_str)
        .filter(|s| *s != "(inline)")
        .and_then(|s| super::session_keys::permission_parity(&cassette.dir().join(s)))
        .unwrap_or_default();
    Ok(Decider {
        rules,
        parity,
        unanswered,
    })
}

/// request_id → (tool_name, input) of every `can_use_tool` the agent sent.
fn permission_requests(cassette: &Cassette) -> HashMap<String, (String, Value)> {
    let mut requests = HashMap::new();
    for line in cassette.event_lines() {
        // Cheap pre-filter: only permission requests are parsed.
        if !line.stored().contains("can_use_tool") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line.text()) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("control_request") {
            continue;
        }
        let req = v.get("request");
        if req.and_then(|r| r.get("subtype")).and_then(Value::as_str) != Some("can_use_tool") {
            continue;
        }
        let (Some(id), Some(tool)) = (
            v.get("request_id").and_then(Value::as_str),
            req.and_then(|r| r.get("tool_name")).and_then(Value::as_str),
        ) else {
            continue;
        };
        let input = req
            .and_then(|r| r.get("input"))
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        requests.insert(id.to_owned(), (tool.to_owned(), input));
    }
    requests
}

/// A permission or question answer reel sent, read from one `controlOut` line.
struct RecordedAnswer {
    request_id: String,
    behavior: String,
    body: Value,
}

impl RecordedAnswer {
    fn parse(line: &str) -> Option<Self> {
        if !line.contains("\"behavior\"") {
            return None; // not a permission/question answer
        }
        let mut v = serde_json::from_str::<Value>(line).ok()?;
        if v.get("type").and_then(Value::as_str) != Some("control_response") {
            return None;
        }
        let resp = v.get_mut("response")?;
        let request_id = resp.get("request_id")?.as_str()?.to_owned();
        let body = resp.get_mut("response")?.take();
        let behavior = body.get("behavior")?.as_str()?.to_owned();
        Some(Self {
            request_id,
            behavior,
            body,
        })
    }
}

/// Whether the frozen answers give the recorded answer to an AskUserQuestion.
fn question_problem(decider: &Decider, answer: &RecordedAnswer, input: &Value) -> Option<String> {
    let RecordedAnswer {
        request_id: id,
        behavior,
        body,
    } = answer;
    let recorded = body.get("updatedInput").and_then(|u| u.get("answers"));
    let derived = input
        .get("questions")
        .map(|q| decider.decide_question(q))
        .unwrap_or_else(|| Err(DecideError::Script("no `questions` in the request".into())));
    match derived {
        Ok(a) if behavior == "allow" && recorded == Some(&Value::Object(a.answers.clone())) => None,
        Ok(a) => Some(format!(
            "request {id} (AskUserQuestion): recorded {} {}, but the frozen answers give {}",
            behavior,
            recorded
                .map(|r| r.to_string())
                .unwrap_or_else(|| "no answers".into()),
            Value::Object(a.answers)
        )),
        Err(e) => Some(format!(
            "request {id} (AskUserQuestion): recorded {behavior}, but the frozen answers cannot \
                answer it: {}",
            e.to_string().lines().next().unwrap_or_default()
        )),
    }
}

/// Whether the frozen answers give the recorded allow/deny to a tool request.
fn permission_problem(
    decider: &Decider,
    answer: &RecordedAnswer,
    tool: &str,
    input: &Value,
) -> Option<String> {
    let (id, behavior) = (&answer.request_id, &answer.behavior);
    match decider.decide_permission(tool, input) {
        Ok(p) if p.allow == (behavior == "allow") => None,
        Ok(p) => Some(format!(
            "request {id} ({tool}): recorded {behavior}, but the frozen answers give {}",
            if p.allow { "allow" } else { "deny" }
        )),
        Err(e) => Some(format!("request {id} ({tool}): {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decider(rules: Value) -> Decider {
        Decider {
            rules: parse_rules(&rules, "answers").unwrap(),
            parity: PermissionParity::Cowork,
            unanswered: Unanswered::Fail,
        }
    }

    fn gate(q: &str, labels: &[&str], multi: bool) -> Value {
        json!([{"question": q, "header": "H",
                "options": labels.iter().map(|l| json!({"label": l})).collect::<Vec<_>>(),
                "multiSelect": multi}])
    }

    #[test]
    fn choose_ladder_resolves_each_rung() {
        let labels = ["Markdown (Recommended)", "Plain text", "HTML: raw"];
        let cases = [
            ("plain text", "Plain text"),
            ("2", "Plain text"),
            ("markdown", "Markdown (Recommended)"),
            ("recommended", "Markdown (Recommended)"),
            ("first", "Markdown (Recommended)"),
            ("HTML", "HTML: raw"),
        ];
        for (choose, want) in cases {
            let d = decider(json!([{"when_question": "format", "choose": choose}]));
            let a = d
                .decide_question(&gate("Which FORMAT?", &labels, false))
                .unwrap();
            assert_eq!(a.answers["Which FORMAT?"], json!(want), "choose {choose}");
        }
    }

    #[test]
    fn prefix_needs_a_boundary_and_a_miss_names_the_nearest_label() {
        let d = decider(json!([{"when_question": ".", "choose": "Plai"}]));
        let err = d
            .decide_question(&gate("q?", &["Plain", "Rich"], false))
            .unwrap_err();
        assert!(
            err.to_string().contains("matched no offered option"),
            "{err}"
        );
        assert!(err.to_string().contains("did you mean \"Plain\""), "{err}");
    }

    #[test]
    fn multi_select_joins_canonical_labels_and_single_select_refuses_lists() {
        let d = decider(json!([{"when_question": "feature", "choose": ["auth", "3", "Auth"]}]));
        let a = d
            .decide_question(&gate(
                "Which features?",
                &["Auth", "Billing", "Audit"],
                true,
            ))
            .unwrap();
        assert_eq!(a.answers["Which features?"], json!("Auth, Audit"));
        let err = d
            .decide_question(&gate("Which features?", &["Auth", "Billing"], false))
            .unwrap_err();
        assert!(matches!(err, DecideError::Script(_)));
    }

    #[test]
    fn unscripted_question_fails_with_a_paste_ready_rule() {
        let d = decider(json!([{"when_tool": "Write", "decide": "allow"}]));
        let err = d
            .decide_question(&gate("Which color (pick one)?", &["Red", "Blue"], false))
            .unwrap_err();
        let DecideError::Unanswered(msg) = err else {
            panic!("not unanswered")
        };
        assert!(
            msg.contains("- when_question: \"Which color \\\\(pick one\\\\)\\\\?\""),
            "{msg}"
        );
        assert!(msg.contains("choose: \"Red\""), "{msg}");
        // The printed rule, pasted back, answers the gate.
        let d =
            decider(json!([{"when_question": "Which color \\(pick one\\)\\?", "choose": "Red"}]));
        assert!(
            d.decide_question(&gate("Which color (pick one)?", &["Red", "Blue"], false))
                .is_ok()
        );
    }

    #[test]
    fn allow_if_is_javascript_over_the_input() {
        let d = decider(
            json!([{"when_tool": "Bash", "allow_if": "!command.includes('rm') && \
                input.command.length < 50"}]),
        );
        assert!(
            d.decide_permission("Bash", &json!({"command": "ls -la"}))
                .unwrap()
                .allow
        );
        let deny = d
            .decide_permission("Bash", &json!({"command": "rm -rf /"}))
            .unwrap();
        assert!(!deny.allow);
        assert_eq!(deny.message.as_deref(), Some("denied by scenario policy"));
    }

    #[test]
    fn allow_if_errors_and_runaway_loops_are_fatal_not_denies() {
        let d = decider(json!([{"when_tool": "Bash", "allow_if": "nosuchvar.x"}]));
        assert!(matches!(
            d.decide_permission("Bash", &json!({})),
            Err(DecideError::Script(_))
        ));
        let d =
            decider(json!([{"when_tool": "Bash", "allow_if": "(() => { while (true) {} })()"}]));
        assert!(matches!(
            d.decide_permission("Bash", &json!({})),
            Err(DecideError::Script(_))
        ));
        let d = decider(
            json!([{"when_tool": "Bash", "allow_if": "(() => { let a = []; while (true) \
                a.push('xxxxxxxxxxxxxxxx'); })()"}]),
        );
        assert!(matches!(
            d.decide_permission("Bash", &json!({})),
            Err(DecideError::Script(_))
        ));
        let err = parse_rules(
            &json!([{"when_tool": "Bash", "allow_if": "command.includes("}]),
            "answers",
        )
        .unwrap_err();
        assert!(
            err.message
                .contains("answers[0].allow_if: does not compile")
                && err.compile,
            "{err}"
        );
    }

    #[test]
    fn parity_default_for_unscripted_tools() {
        let mut d = decider(json!([]));
        assert_eq!(
            d.decide_permission("Read", &json!({})).unwrap().source,
            PermissionSource::DefaultAllowBuiltin
        );
        assert_eq!(
            d.decide_permission("Write", &json!({})).unwrap().source,
            PermissionSource::PermissiveAutoAllow
        );
        d.parity = PermissionParity::Strict;
        let p = d.decide_permission("Write", &json!({})).unwrap();
        assert!(!p.allow);
        assert_eq!(p.message.as_deref(), Some("denied (strict, off-registry)"));
    }

    #[test]
    fn rule_shape_errors_name_the_path_and_fix() {
        for (rule, want) in [
            (
                json!({"when_question": "x"}),
                "answers[0]: a question rule needs",
            ),
            (
                json!({"when_tool": "Bash", "choose": "x", "decide": "allow"}),
                "answers[0].choose: only valid",
            ),
            (
                json!({"when_tool": "Bash", "decid": "allow"}),
                "did you mean `decide`",
            ),
            (
                json!({"when_question": "(", "answer": "x"}),
                "answers[0].when_question: invalid regex",
            ),
        ] {
            let err = parse_rules(&json!([rule]), "answers").unwrap_err();
            assert!(err.message.contains(want), "{err} !~ {want}");
            assert_eq!(err.compile, want.contains("invalid regex"), "{err}");
        }
    }
}
