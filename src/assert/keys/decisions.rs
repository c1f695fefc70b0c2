//! Questions and gate answers (controlOut).

use serde_json::{Value, json};

use super::*;
use crate::evidence::GateOptions;

const QUESTION_OPTIONS: &[Field] = &[
    opt("when_question", Param::Str),
    opt("equals", ANY),
    opt("contains", ANY),
    opt("order", Param::Str),
];

pub(super) const KEYS: &[Key] = &[
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
            ],
            why: "`questions_count_max: 0` allows no question",
            refusal: Some(
                "`questions_count_max: 0` contradicts gate assertions (gate_answer_count_min / \
                    question_asked / question_options / gate_answers_delivered: false)",
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
