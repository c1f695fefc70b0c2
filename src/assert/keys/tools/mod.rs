//! Tool calls of the main agent: globs over names, tool results, error and call budgets.

use serde_json::{Map, Value};

use super::*;

mod object;
mod order;
pub(crate) use order::tool_order_problem;

/// The object form of `tool_called` (cowork-harness v13).
const TOOL_CALL: &[Field] = &[
    req("tool", Param::GlobOrList),
    opt("input", ANY),
    opt("input_any", Param::NonEmpty),
    opt("input_json", Param::NonEmpty),
    opt("result", Param::Object(TOOL_RESULT, Refine::None)),
    opt("scope", Param::Str),
    opt("subagent_type", Param::NonEmpty),
    opt("count", Param::Object(TOOL_COUNT, Refine::None)),
];

/// The object form of `tool_not_called` (no `count`).
const TOOL_NOT_CALL: &[Field] = &[
    req("tool", Param::GlobOrList),
    opt("input", ANY),
    opt("input_any", Param::NonEmpty),
    opt("input_json", Param::NonEmpty),
    opt("result", Param::Object(TOOL_RESULT, Refine::None)),
    opt("scope", Param::Str),
    opt("subagent_type", Param::NonEmpty),
];

/// `result`: predicates on the call's paired tool_result.
const TOOL_RESULT: &[Field] = &[
    opt("matches", Param::NonEmpty),
    opt("not_matches", Param::NonEmpty),
    opt("is_error", Param::Bool),
];

/// `count`: how many calls must satisfy every predicate.
const TOOL_COUNT: &[Field] = &[opt("min", Param::UInt), opt("max", Param::UInt)];

/// What the original's schema refuses in a `tool_called` /
/// `tool_not_called` object beyond each field's own shape: `input` is a map
/// of field → non-empty regex, `scope` one of three, `subagent_type` only
/// with `scope: subagent`, `count.min` at most `count.max`.
pub(crate) fn tool_object_problem(m: &Map<String, Value>) -> Option<String> {
    if let Some(input) = m.get("input") {
        let Some(fields) = input.as_object() else {
            return Some(format!(
                "field `input`: expected an object of input field → regex (e.g. \
                 `input: {{command: \"^git \"}}`), got {}",
                crate::assert::catalog::render(input)
            ));
        };
        for (field, re) in fields {
            match re.as_str() {
                Some("") => {
                    return Some(format!(
                        "field `input.{field}`: an empty input regex matches every value and \
                         passes vacuously — give a pattern, or drop the field"
                    ));
                }
                Some(_) => {}
                None => {
                    return Some(format!(
                        "field `input.{field}`: expected a regex string, got {} — a non-string \
                         input value is matched against its JSON text, so write the pattern as a \
                         string",
                        crate::assert::catalog::render(re)
                    ));
                }
            }
        }
    }
    if let Some(src) = m.get("input_json").and_then(Value::as_str)
        && let Err(e) = order::input_json_regex(src)
    {
        return Some(format!("field `input_json`: {e}"));
    }
    let scope = m.get("scope").and_then(Value::as_str);
    if let Some(s) = scope
        && !matches!(s, "main" | "subagent" | "any")
    {
        return Some(format!(
            "field `scope`: expected `main`, `subagent` or `any`, got \"{s}\""
        ));
    }
    if m.contains_key("subagent_type") && scope != Some("subagent") {
        return Some("`subagent_type` applies only with `scope: subagent`".into());
    }
    let bound = |k: &str| {
        m.get("count")
            .and_then(|c| c.get(k))
            .and_then(Value::as_u64)
    };
    if let (Some(min), Some(max)) = (bound("min"), bound("max"))
        && min > max
    {
        return Some(format!(
            "count.min ({min}) is greater than count.max ({max}) — no number of calls can \
             satisfy it"
        ));
    }
    None
}

pub(super) const KEYS: &[Key] = &[
    Key {
        name: name::TOOL_CALLED,
        bucket: Bucket::Always,
        param: Param::OneOf(&[Param::ToolGlob, Param::Object(TOOL_CALL, Refine::ToolCall)]),
        description: "the main agent called a tool matching this glob (object form: {tool, input, input_any, input_json, result, scope, subagent_type, count})",
        example: Some(|| Value::from("Write")),
        ranks: Ranks {
            listed: 5,
            check: 13,
            schema: 10,
            strip: Some(8),
        },
        eval: Eval::One(tool_called),
        opposite: Some("tool_not_called"),
        ..Key::DEFAULTS
    },
    Key {
        name: name::TOOL_NOT_CALLED,
        bucket: Bucket::Always,
        param: Param::OneOf(&[
            Param::ToolGlob,
            Param::Object(TOOL_NOT_CALL, Refine::ToolCall),
        ]),
        description: "the main agent called no tool matching this glob (object form: {tool, input, input_any, input_json, result, scope, subagent_type})",
        example: Some(|| Value::from("Write")),
        ranks: Ranks {
            listed: 6,
            check: 14,
            schema: 11,
            strip: Some(9),
        },
        eval: Eval::One(tool_not_called),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_result_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "some single tool result contains this literal",
        ranks: Ranks {
            listed: 7,
            check: 3,
            schema: 4,
            strip: Some(4),
        },
        eval: Eval::One(tool_result_contains),
        opposite: Some("tool_result_not_contains"),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_result_not_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "no tool result contains this literal",
        ranks: Ranks {
            listed: 8,
            check: 4,
            schema: 5,
            strip: Some(5),
        },
        eval: Eval::One(tool_result_not_contains),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_result_matches",
        bucket: Bucket::Always,
        param: Param::NonEmptyRegex,
        description: "some single tool result matches this regex",
        ranks: Ranks {
            listed: 9,
            check: 5,
            schema: 6,
            strip: Some(6),
        },
        eval: Eval::One(tool_result_matches),
        opposite: Some("tool_result_not_matches"),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_result_not_matches",
        bucket: Bucket::Always,
        param: Param::NonEmptyRegex,
        description: "no tool result matches this regex",
        ranks: Ranks {
            listed: 10,
            check: 6,
            schema: 7,
            strip: Some(7),
        },
        eval: Eval::One(tool_result_not_matches),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_no_error",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "a matching tool was called and none of its calls errored",
        ranks: Ranks {
            listed: 30,
            check: 25,
            schema: 32,
            strip: Some(25),
        },
        eval: Eval::One(tool_no_error_required),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_no_error_if_called",
        bucket: Bucket::Always,
        param: Param::Str,
        description: "no call of a matching tool errored (not calling it passes)",
        ranks: Ranks {
            listed: 31,
            check: 26,
            schema: 33,
            strip: Some(26),
        },
        eval: Eval::One(tool_no_error_if_called),
        ..Key::DEFAULTS
    },
    Key {
        name: "max_tool_errors",
        bucket: Bucket::Always,
        param: Param::UInt,
        description: "at most N tool calls errored",
        ranks: Ranks {
            listed: 32,
            check: 27,
            schema: 34,
            strip: Some(27),
        },
        eval: Eval::One(max_tool_errors),
        margin: Some(Margin {
            rank: 4,
            kind: MarginKind::Max,
            recorded: |r| Some(r.tool_errors_total() as f64),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "max_redundant_tool_calls",
        bucket: Bucket::Always,
        param: Param::UInt,
        description: "at most N repeated identical tool calls",
        ranks: Ranks {
            listed: 33,
            check: 28,
            schema: 35,
            strip: Some(28),
        },
        eval: Eval::One(max_redundant_tool_calls),
        margin: Some(Margin {
            rank: 5,
            kind: MarginKind::Max,
            recorded: |r| Some(r.redundant_calls_total() as f64),
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_calls_max",
        bucket: Bucket::Always,
        param: Param::UInt,
        description: "the main agent made at most N tool calls",
        ranks: Ranks {
            listed: 28,
            check: 24,
            schema: 31,
            strip: Some(24),
        },
        eval: Eval::One(tool_calls_max),
        margin: Some(Margin {
            rank: 0,
            kind: MarginKind::Max,
            recorded: |r| Some(r.tool_calls_total() as f64),
        }),
        excludes: Some(Excludes {
            when: is_zero,
            others: &[("tool_called", any), ("tool_order", any)],
            why: "`tool_calls_max: 0` allows no tool call",
            refusal: None,
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "tool_order",
        bucket: Bucket::Always,
        param: Param::Object(order::TOOL_ORDER, Refine::ToolOrder),
        description: "the first call matching `before` came before the first call matching `after` (any agent's calls, in order; each a tool glob or {tool, input_json})",
        example: Some(
            || serde_json::json!({"before": "Read", "after": {"tool": "Write", "input_json": "\"file_path\":\"[^\"]*\\.md\""}}),
        ),
        ranks: Ranks {
            listed: 89,
            check: 89,
            schema: 89,
            strip: Some(76),
        },
        eval: Eval::One(order::tool_order),
        ..Key::DEFAULTS
    },
];

fn tool_no_error_required(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    tool_no_error(env, key, v, true)
}

fn tool_no_error_if_called(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    tool_no_error(env, key, v, false)
}

fn tool_calls_max(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    at_most(key, v, env.run.tool_calls_total(), "tool calls")
}

fn max_tool_errors(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    at_most(key, v, env.run.tool_errors_total(), "tool errors")
}

fn max_redundant_tool_calls(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    at_most(
        key,
        v,
        env.run.redundant_calls_total(),
        "wasted redundant call(s)",
    )
}

/// A count bound: `n` (what the run counted, as `what`) at most the key's
/// number.
fn at_most(key: &'static str, v: &Value, n: u64, what: &str) -> KeyResult {
    let max = f64_param(key, v)?;
    if (n as f64) <= max {
        ok()
    } else {
        Err(format!("{n} {what} exceeds max {}", num(v)))
    }
}

fn result_texts(run: &RunRecord) -> impl Iterator<Item = &str> {
    run.tool_results
        .iter()
        .map(|r| r.assert_text.as_deref().unwrap_or(r.text()))
}

fn any_display_truncated(run: &RunRecord) -> bool {
    run.tool_results.iter().any(|r| r.assert_text.is_none())
}

fn tool_result_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let needle = str_param(key, v)?;
    if result_texts(env.run).any(|t| t.contains(needle)) {
        ok()
    } else if any_display_truncated(env.run) {
        Err(format!(
            "evidence unavailable: no captured tool result contained \"{needle}\", but one or more \
                results are display-truncated (no assertText) — a match may be past the cap"
        ))
    } else {
        Err(format!("no tool result contained \"{needle}\""))
    }
}

fn tool_result_not_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let forbidden = str_param(key, v)?;
    if result_texts(env.run).any(|t| t.contains(forbidden)) {
        Err(format!(
            "a tool result unexpectedly contained \"{forbidden}\""
        ))
    } else if any_display_truncated(env.run) {
        Err(
            "evidence unavailable: one or more tool results are display-truncated (no assertText) \
            — cannot rule out forbidden substring"
                .into(),
        )
    } else {
        ok()
    }
}

fn tool_result_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if any_t(key, &re, result_texts(env.run))? {
        ok()
    } else if any_display_truncated(env.run) {
        Err(format!(
            "evidence unavailable: no captured tool result matched /{p}/i, but one or more results \
                are display-truncated (no assertText) — a match may be past the cap"
        ))
    } else {
        Err(format!("no tool result matched /{p}/i"))
    }
}

fn tool_result_not_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if any_t(key, &re, result_texts(env.run))? {
        Err(format!("a tool result matched forbidden /{p}/i"))
    } else if any_display_truncated(env.run) {
        Err(
            "evidence unavailable: one or more tool results are display-truncated (no assertText) \
            — cannot rule out a forbidden regex match"
                .into(),
        )
    } else {
        ok()
    }
}

pub(super) fn tool_sample(names: &[String]) -> String {
    if names.is_empty() {
        return "(none called)".into();
    }
    let mut s = names
        .iter()
        .take(12)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 12 {
        s.push_str(&format!(", …(+{})", names.len() - 12));
    }
    s
}

/// The key's tool glob and the names in `tools` it matches, in order (the
/// shared part of the used / not-used keys over a list of tool names).
pub(super) fn glob_matches<'v, 't>(
    env: &mut Env<'_>,
    key: &'static str,
    v: &'v Value,
    tools: &'t [String],
) -> Result<(&'v str, Vec<&'t str>), String> {
    let p = str_param(key, v)?;
    env.warn_if_regexish(key, p);
    let g = Glob::new(p);
    let hits = tools
        .iter()
        .filter(|t| g.is_match(t))
        .map(String::as_str)
        .collect();
    Ok((p, hits))
}

/// The globs of an object form that constrains nothing but `tool`: exactly
/// the string form (assertion-catalog: "`{tool: X}` alone is exactly
/// `tool_called: X`").
fn object_form_globs(v: &Value) -> Option<Vec<Value>> {
    object::routed_globs(v)
}

fn tool_called(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    if v.is_object() && object_form_globs(v).is_none() {
        return object::check_object(env, key, v);
    }
    if let Some(globs) = object_form_globs(v) {
        let mut last = Err(bad_param(key));
        for glob in &globs {
            last = tool_called(env, key, glob);
            if last.is_ok() {
                return last;
            }
        }
        return last;
    }
    let run = env.run;
    let (p, hits) = glob_matches(env, key, v, &run.tools_called)?;
    match hits.first() {
        Some(hit) => ok_ev(format!("tool_called: \"{p}\" matched {hit}")),
        None => Err(format!(
            "tool not called: no called tool matched \"{p}\" (called: {})",
            tool_sample(&run.tools_called)
        )),
    }
}

fn tool_not_called(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    if v.is_object() && object_form_globs(v).is_none() {
        return object::check_object(env, key, v);
    }
    if let Some(globs) = object_form_globs(v) {
        for glob in &globs {
            tool_not_called(env, key, glob)?;
        }
        return ok();
    }
    let run = env.run;
    let (p, hits) = glob_matches(env, key, v, &run.tools_called)?;
    if hits.is_empty() {
        ok()
    } else {
        Err(format!(
            "tool unexpectedly called: \"{p}\" matched {}",
            hits.join(", ")
        ))
    }
}

fn tool_no_error(env: &Env<'_>, key: &str, v: &Value, require_presence: bool) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    let mut matching = Vec::new();
    for (name, c) in &env.run.tool_errors {
        if t(key, &re, name)? {
            matching.push((name, c));
        }
    }
    if matching.is_empty() {
        return if require_presence {
            Err(format!(
                "{key}: no tool matching \"{p}\" was called — cannot verify it ran error-free (use \
                    tool_no_error_if_called to pass when the tool may legitimately not run)"
            ))
        } else {
            ok()
        };
    }
    let errored: Vec<String> = matching
        .iter()
        .filter(|(_, c)| c.errors > 0)
        .map(|(n, c)| format!("{n} ({})", c.errors))
        .collect();
    if errored.is_empty() {
        return ok();
    }
    let mut message = format!(
        "tool(s) matching \"{p}\" had errors: {}",
        errored.join(", ")
    );
    // reel's addition: each failing call's cause, one line each.
    for (name, line) in env.run.tool_error_lines.iter() {
        if matching.iter().any(|(n, _)| *n == name) {
            let line = crate::elide::head_tail(line, 300);
            let shown = if line.is_empty() {
                "(empty error)"
            } else {
                &line
            };
            message.push_str(&format!("\n  {name}: {shown}"));
        }
    }
    Err(message)
}
