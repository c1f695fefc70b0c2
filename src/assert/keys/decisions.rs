//! Questions and gate answers (controlOut).

use serde_json::{Map, Value, json};

use super::*;
use crate::evidence::GateOptions;

const QUESTION_OPTIONS: &[Field] = &[
    opt("when_question", Param::Str),
    opt("equals", ANY),
    opt("contains", ANY),
    opt("order", Param::Str),
];

/// `question_option_count` (v14).
const OPTION_COUNT: &[Field] = &[
    opt("when_question", Param::Str),
    req("matches", Param::NonEmptyRegex),
    opt("exactly", Param::UInt),
    opt("min", Param::UInt),
    opt("max", Param::UInt),
    opt("case_sensitive", Param::True),
];

/// `question_context` (2.3.0, no format bump).
const QUESTION_CONTEXT: &[Field] = &[
    opt("when_question", Param::Str),
    req("matches", Param::NonEmptyRegex),
];

/// `gates_all_scripted` (v15): `true` or `{include_permissions}`.
const GATES_SCRIPTED: &[Field] = &[opt("include_permissions", Param::Bool)];

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "question_option_count",
        bucket: Bucket::NeedsControlOut,
        param: Param::Object(OPTION_COUNT, Refine::CountBound),
        description: "every (selected) question offered exactly / at least / at most N option \
            labels matching this regex",
        example: Some(|| json!({"matches": "^No changes — ", "exactly": 1})),
        ranks: Ranks {
            listed: 77,
            check: 77,
            schema: 77,
            strip: Some(65),
        },
        eval: Eval::One(question_option_count),
        ..Key::DEFAULTS
    },
    Key {
        name: "question_context",
        bucket: Bucket::NeedsControlOut,
        param: Param::Object(QUESTION_CONTEXT, Refine::None),
        description: "a (selected) question showed text matching this regex, in its question, \
            an option label or an option description",
        example: Some(|| json!({"matches": "takes effect next quarter"})),
        ranks: Ranks {
            listed: 78,
            check: 78,
            schema: 78,
            strip: Some(66),
        },
        eval: Eval::One(question_context),
        ..Key::DEFAULTS
    },
    Key {
        name: "gates_all_scripted",
        bucket: Bucket::NeedsControlOut,
        param: Param::OneOf(&[Param::True, Param::Object(GATES_SCRIPTED, Refine::None)]),
        description: "every question gate (and, with include_permissions, every permission) was \
            answered by a rule of the frozen `answers:`, never a stand-in for a human; passes \
            when no gate fired, so pair it with gate_answer_count_min",
        example: Some(|| json!({"include_permissions": true})),
        ranks: Ranks {
            listed: 79,
            check: 79,
            schema: 79,
            strip: Some(67),
        },
        eval: Eval::One(gates::gates_all_scripted),
        ..Key::DEFAULTS
    },
    Key {
        name: name::QUESTION_ASKED,
        bucket: Bucket::NeedsControlOut,
        param: Param::Regex,
        description: "the agent asked a question whose text matches this regex",
        example: Some(|| Value::from("Which format")),
        ranks: Ranks {
            listed: 47,
            check: 62,
            schema: 60,
            strip: Some(47),
        },
        eval: Eval::One(question_asked),
        ..Key::DEFAULTS
    },
    Key {
        name: "question_options",
        bucket: Bucket::NeedsControlOut,
        param: Param::Object(QUESTION_OPTIONS, Refine::EqualsXorContains),
        description: "a (selected) question offered exactly / at least these options",
        example: Some(|| json!({"when_question": "Which format", "contains": ["Markdown"]})),
        ranks: Ranks {
            listed: 48,
            check: 63,
            schema: 61,
            strip: Some(48),
        },
        eval: Eval::One(question_options),
        ..Key::DEFAULTS
    },
    Key {
        name: "questions_count_max",
        bucket: Bucket::NeedsControlOut,
        param: Param::UInt,
        description: "the agent asked at most N sub-questions",
        ranks: Ranks {
            listed: 49,
            check: 64,
            schema: 62,
            strip: Some(49),
        },
        eval: Eval::One(questions_count_max),
        margin: Some(Margin {
            rank: 9,
            kind: MarginKind::Max,
            recorded: |r| r.has_control_out.then(|| r.question_count() as f64),
        }),
        excludes: Some(Excludes {
            when: is_zero,
            others: &[
                ("gate_answer_count_min", |v| {
                    v.as_u64().is_some_and(|n| n >= 1)
                }),
                ("question_asked", any),
                ("question_options", any),
                ("gate_answers_delivered", |v| v.as_bool() == Some(false)),
                // Never vacuous: each fails when no question was asked
                // (test/question-option-count.test.ts, exactly: 0 included;
                // test/question-context.test.ts).
                ("question_option_count", any),
                ("question_context", any),
            ],
            why: "`questions_count_max: 0` allows no question",
            refusal: Some(
                "`questions_count_max: 0` contradicts gate assertions (gate_answer_count_min / \
                    question_asked / question_options / question_option_count / question_context / gate_answers_delivered: false)",
            ),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: name::GATE_ANSWERS_DELIVERED,
        bucket: Bucket::NeedsControlOut,
        param: Param::Bool,
        description: "every answered question reached the agent (true) or one did not (false)",
        ranks: Ranks {
            listed: 50,
            check: 65,
            schema: 63,
            strip: Some(50),
        },
        eval: Eval::One(gate_answers_delivered),
        ..Key::DEFAULTS
    },
    Key {
        name: "gate_answer_count_min",
        bucket: Bucket::NeedsControlOut,
        param: Param::UInt,
        description: "at least N answers were delivered to the agent",
        ranks: Ranks {
            listed: 51,
            check: 66,
            schema: 64,
            strip: Some(51),
        },
        eval: Eval::One(gate_answer_count_min),
        margin: Some(Margin {
            rank: 8,
            kind: MarginKind::Min,
            recorded: |r| Some(r.gate_answers_delivered() as f64),
        }),
        ..Key::DEFAULTS
    },
];

fn question_asked(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if any_t(key, &re, env.run.questions.iter().map(String::as_str))? {
        ok()
    } else {
        Err(format!("no question matched: {p}"))
    }
}

fn questions_count_max(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let max = f64_param(key, v)?;
    let n = env.run.question_count();
    if (n as f64) <= max {
        ok()
    } else {
        Err(format!("asked {n} questions, max {}", num(v)))
    }
}

fn gate_answer_count_min(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let min = f64_param(key, v)?;
    let n = env.run.gate_answers_delivered();
    if (n as f64) >= min {
        ok()
    } else {
        Err(format!(
            "only {n} gate answer(s) confirmed delivered, need ≥ {}",
            num(v)
        ))
    }
}

fn same_multiset(a: &[&str], b: &[String]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut rest: Vec<&str> = b.iter().map(String::as_str).collect();
    for x in a {
        match rest.iter().position(|y| y == x) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

fn question_options(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let qo = obj_param(key, v)?;
    if env.run.gate_options_missing() {
        return Err(
            "evidence unavailable: gate-option evidence absent for this run — cannot \
            evaluate question_options"
                .into(),
        );
    }
    let equals = str_list(qo.get("equals"));
    let contains = str_list(qo.get("contains"));
    if equals.is_some() == contains.is_some() {
        return Err("question_options: set exactly one of `equals` or `contains`".into());
    }
    let all = &env.run.gate_options;
    let when = opt_str(qo, "when_question");
    let (pool, selector) = gate_pool(env, key, when)?;
    if pool.is_empty() {
        return Err(format!(
            "question_options: no question{selector} was asked ({} gate(s) recorded)",
            all.len()
        ));
    }
    if when.is_none() && all.len() > 1 {
        let asked: Vec<String> = all
            .iter()
            .map(|g| json::stringify(Some(&Value::String(g.question.clone()))))
            .collect();
        return Err(format!(
            "question_options: {} sub-questions were asked and no `when_question` selects one — \
                add a selector (asked: {})",
            all.len(),
            asked.join(", ")
        ));
    }
    let is_equals = equals.is_some();
    let want = equals.or(contains).unwrap_or_default();
    let exact = opt_str(qo, "order").unwrap_or("exact") == "exact";
    let mut why = Vec::new();
    let hit = pool.into_iter().find(|g| {
        let got: Vec<&str> = g.options.iter().map(|o| o.label.as_str()).collect();
        match options_mismatch(&got, &want, is_equals, exact) {
            Some(w) => {
                why.push(w);
                false
            }
            None => true,
        }
    });
    match hit {
        Some(g) => ok_ev(format!(
            "question_options: gate {} offered the expected options",
            json::stringify(Some(&Value::String(g.question.clone())))
        )),
        None => Err(format!(
            "question_options ({}{}): expected [{}]; {}",
            if is_equals { "equals" } else { "contains" },
            if exact {
                ", order exact"
            } else {
                ", order any"
            },
            want.join(", "),
            why.join("; ")
        )),
    }
}

/// The gates `when_question` selects (every gate without one) and the
/// selector's words for messages.
fn gate_pool<'r>(
    env: &Env<'r>,
    key: &str,
    when: Option<&str>,
) -> Result<(Vec<&'r GateOptions>, String), String> {
    let all = &env.run.gate_options;
    Ok(match when {
        Some(w) => {
            let re = env.re(key, w)?;
            let mut pool = Vec::new();
            for g in all {
                if t(key, &re, &g.question)? {
                    pool.push(g);
                }
            }
            (pool, format!(" matching /{w}/i"))
        }
        None => (all.iter().collect(), String::new()),
    })
}

/// Why a gate's offered option labels fail the check (`equals` or
/// `contains`, in exact order or any), or `None` when they pass.
fn options_mismatch(got: &[&str], want: &[String], is_equals: bool, exact: bool) -> Option<String> {
    let offered = got.join(", ");
    if is_equals {
        let good = if exact {
            got.len() == want.len() && got.iter().zip(want).all(|(a, b)| a == b)
        } else {
            same_multiset(got, want)
        };
        return (!good).then(|| format!("offered [{offered}]"));
    }
    let missing: Vec<&str> = want
        .iter()
        .filter(|w| !got.contains(&w.as_str()))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "offered [{offered}] (missing {})",
            missing.join(", ")
        ));
    }
    if !exact {
        return None;
    }
    let mut i = 0;
    for l in got {
        if i < want.len() && *l == want[i] {
            i += 1;
        }
    }
    (i != want.len()).then(|| format!("offered [{offered}] (present but out of order)"))
}

fn gate_answers_delivered(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let want = v.as_bool().ok_or_else(|| bad_param(key))?;
    let gd = &env.run.gate_deliveries;
    if want {
        let bad: Vec<String> = gd
            .iter()
            .filter(|g| g.delivered != Some(true))
            .map(|g| {
                let why = match (g.delivered, g.reason) {
                    (Some(false), _) => g.error.clone().unwrap_or_else(|| "tool error".into()),
                    (_, "no-pairing-metadata") => {
                        "no pairing metadata — gate had no toolUseId".into()
                    }
                    _ => "delivery unobserved — no tool_result for this gate".into(),
                };
                format!("\"{}\" ({why})", g.question)
            })
            .collect();
        if bad.is_empty() {
            ok()
        } else {
            Err(format!(
                "gate answer(s) not confirmed delivered to the model: {}",
                bad.join("; ")
            ))
        }
    } else if gd.iter().any(|g| g.delivered == Some(false)) {
        ok()
    } else {
        Err("expected a confirmed gate-delivery failure but none was observed".into())
    }
}

/// What a redaction policy leaves in place of the bytes it rewrote
/// (`[REDACTED:<label>:<hash>]`).
const REDACTION_MARK: &str = "[REDACTED";

/// The count bound of a `question_option_count` parameter, in words, and
/// whether a count known only as a range satisfies it.
struct CountBound {
    exactly: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
}

/// Whether a bound holds for a count in `[n, n + unknown]`: for every value
/// in it, for none, or for some only (undecidable).
#[derive(PartialEq)]
enum Holds {
    Yes,
    No,
    Undecided,
}

impl CountBound {
    fn of(o: &Map<String, Value>) -> CountBound {
        let n = |k: &str| o.get(k).and_then(Value::as_u64);
        CountBound {
            exactly: n("exactly"),
            min: n("min"),
            max: n("max"),
        }
    }

    /// The bound as an interval `[lo, hi]` of satisfying counts.
    fn holds(&self, n: u64, unknown: u64) -> Holds {
        let lo = self.exactly.or(self.min).unwrap_or(0);
        let hi = self.exactly.or(self.max).unwrap_or(u64::MAX);
        if lo <= n && n + unknown <= hi {
            Holds::Yes
        } else if n + unknown < lo || n > hi {
            Holds::No
        } else {
            Holds::Undecided
        }
    }

    fn words(&self) -> String {
        match (self.exactly, self.min, self.max) {
            (Some(e), ..) => format!("exactly {e}"),
            (None, Some(lo), Some(hi)) => format!("{lo}–{hi}"),
            (None, Some(lo), None) => format!("at least {lo}"),
            (None, None, Some(hi)) => format!("at most {hi}"),
            (None, None, None) => "any number".into(),
        }
    }
}

/// test/question-option-count.test.ts: labels only, on every selected
/// sub-question; zero selected fails, even for `exactly: 0`. A label or
/// question a redaction policy rewrote is unknown, never a hit or a miss
/// (no regex over a token's text can be trusted): a count is the range
/// `[n, n + rewritten]`, and only a bound the whole range decides is a
/// verdict.
fn question_option_count(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let o = obj_param(key, v)?;
    // The bound first, so the message does not depend on the lane.
    if let Some(problem) = super::super::catalog::count_bound_problem(o) {
        return Err(format!("{key}: {problem}"));
    }
    let pattern = opt_str(o, "matches").ok_or_else(|| bad_param(key))?;
    let when = opt_str(o, "when_question");
    let flags = if o.get("case_sensitive").and_then(Value::as_bool) == Some(true) {
        ""
    } else {
        "i"
    };
    let re = crate::js::regex::compile_es_with_flags(pattern, flags)
        .map_err(|e| format!("{key}: bad regex \"{pattern}\": {e}"))?;
    if pattern.contains(REDACTION_MARK) || when.is_some_and(|w| w.contains(REDACTION_MARK)) {
        return Err(format!(
            "evidence unavailable: {key}: the frozen regex was rewritten by the cassette's \
                redaction policy — it no longer says what the author wrote; re-record without \
                redacting it"
        ));
    }
    let (pool, hidden, selector) = option_count_pool(env, key, when)?;
    if env.run.gate_options_missing() {
        return Err(format!(
            "evidence unavailable: gate-option evidence absent for this run — cannot evaluate {key}"
        ));
    }
    if pool.is_empty() && hidden > 0 {
        return Err(format!(
            "evidence unavailable: {key}: no sub-question{selector} could be identified — the \
                question text of {hidden} gate(s) was rewritten by the cassette's redaction policy"
        ));
    }
    if pool.is_empty() {
        return Err(format!(
            "{key}: no question{selector} was asked ({} gate(s) recorded)",
            env.run.gate_options.len()
        ));
    }
    let bound = CountBound::of(o);
    let (offending, undecided) = count_options(key, &re, &pool, &bound)?;
    let shown = format!("/{pattern}/{flags}");
    if !offending.is_empty() {
        return Err(format!(
            "{key}: expected {} option label(s) matching {shown} on every \
                sub-question{selector}; {} of {} did not: {}",
            bound.words(),
            offending.len(),
            pool.len(),
            offending.join("; ")
        ));
    }
    if undecided > 0 {
        return Err(format!(
            "evidence unavailable: {key}: {undecided} sub-question(s) offer option label(s) \
                rewritten by the cassette's redaction policy — whether {} label(s) match \
                {shown} cannot be decided",
            bound.words()
        ));
    }
    if hidden > 0 {
        return Err(format!(
            "evidence unavailable: {key}: the question text of {hidden} gate(s) was rewritten by \
                the cassette's redaction policy — cannot tell whether /{}/i selects them, and \
                the {} identified pass",
            when.unwrap_or_default(),
            pool.len()
        ));
    }
    ok_ev(format!(
        "{key}: all {} sub-question(s) have {} option label(s) matching {shown}",
        pool.len(),
        bound.words()
    ))
}

/// The gates `when_question` selects for `question_option_count`, and how
/// many it cannot judge because their question text was rewritten by a
/// redaction policy (with no `when_question`, every gate is selected).
fn option_count_pool<'r>(
    env: &Env<'r>,
    key: &str,
    when: Option<&str>,
) -> Result<(Vec<&'r GateOptions>, usize, String), String> {
    let Some(w) = when else {
        let (pool, selector) = gate_pool(env, key, None)?;
        return Ok((pool, 0, selector));
    };
    let (readable, hidden): (Vec<&GateOptions>, Vec<&GateOptions>) = env
        .run
        .gate_options
        .iter()
        .partition(|g| !g.question.contains(REDACTION_MARK));
    let re = env.re(key, w)?;
    let mut pool = Vec::new();
    for g in readable {
        if t(key, &re, &g.question)? {
            pool.push(g);
        }
    }
    Ok((pool, hidden.len(), format!(" matching /{w}/i")))
}

/// Each selected gate's verdict: the ones that definitely break the bound
/// (described), and how many a rewritten label leaves undecided.
fn count_options(
    key: &str,
    re: &EsRegex,
    pool: &[&GateOptions],
    bound: &CountBound,
) -> Result<(Vec<String>, usize), String> {
    let mut offending = Vec::new();
    let mut undecided = 0;
    for g in pool {
        let (mut n, mut unknown) = (0, 0);
        for option in &g.options {
            if option.label.contains(REDACTION_MARK) {
                unknown += 1;
            } else if t(key, re, &option.label)? {
                n += 1;
            }
        }
        match bound.holds(n, unknown) {
            Holds::Yes => {}
            Holds::Undecided => undecided += 1,
            Holds::No => {
                let labels: Vec<&str> = g.options.iter().map(|o| o.label.as_str()).collect();
                let has = if unknown == 0 {
                    n.to_string()
                } else {
                    format!("{n}–{}", n + unknown)
                };
                offending.push(format!(
                    "{} has {has} of [{}]",
                    json::stringify(Some(&Value::String(g.question.clone()))),
                    labels.join(", ")
                ));
            }
        }
    }
    Ok((offending, undecided))
}

/// Everything a gate put in front of the user, as separate fields: the
/// question, then each option's label and description when it has one
/// (cowork-harness `gateVisibleFields`). Each field is tested on its own, so
/// a pattern never matches text spanning two fields and `^` / `$` anchor to
/// one field's ends.
fn gate_visible_fields(g: &GateOptions) -> Vec<&str> {
    let mut fields = vec![g.question.as_str()];
    for o in &g.options {
        fields.push(&o.label);
        fields.extend(o.description.as_deref());
    }
    fields
}

/// test/question-context.test.ts: any (selected) gate's visible text
/// matches; no `when_question` searches every gate (a multi-gate run is
/// not ambiguous); zero gates fails; a miss names the gates searched.
fn question_context(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let o = obj_param(key, v)?;
    let pattern = opt_str(o, "matches").ok_or_else(|| bad_param(key))?;
    let re = env.re(key, pattern)?;
    let (pool, selector) = gate_pool(env, key, opt_str(o, "when_question"))?;
    if env.run.gate_options_missing() {
        return Err(format!(
            "evidence unavailable: gate-option evidence absent for this run — cannot evaluate {key}"
        ));
    }
    if pool.is_empty() {
        return Err(format!(
            "{key}: no question{selector} was asked ({} gate(s) recorded)",
            env.run.gate_options.len()
        ));
    }
    let quoted = |g: &GateOptions| json::stringify(Some(&Value::String(g.question.clone())));
    for g in &pool {
        let mut shown = false;
        for field in gate_visible_fields(g) {
            if t(key, &re, field)? {
                shown = true;
                break;
            }
        }
        if shown {
            return ok_ev(format!(
                "{key}: gate {} showed text matching /{pattern}/i",
                quoted(g)
            ));
        }
    }
    let searched: Vec<String> = pool.iter().map(|g| quoted(g)).collect();
    Err(format!(
        "{key}: no question{selector} showed text matching /{pattern}/i (searched {} gate(s) — \
            question, option labels and descriptions: {})",
        pool.len(),
        searched.join("; ")
    ))
}
