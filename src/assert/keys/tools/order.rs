//! `tool_order`: the first call matching `before` came before the first call
//! matching `after` (`claude plugin eval`'s `tool_order` grader: every call
//! of the run, sub-agents' included, in trace order; each end a tool name,
//! optionally with a case-sensitive regex over the call's input JSON).

use serde_json::{Map, Value};

use super::*;
use crate::evidence::ToolCall;
use crate::js::regex::compile_es_with_flags;

/// One end of the order: `TOOL`, or `{tool: TOOL, input_json: REGEX}`.
const ORDER_END_FIELDS: &[Field] = &[
    req("tool", Param::ToolGlob),
    opt("input_json", Param::NonEmpty),
];

const ORDER_END: Param = Param::OneOf(&[
    Param::ToolGlob,
    Param::Object(ORDER_END_FIELDS, Refine::None),
]);

pub(super) const TOOL_ORDER: &[Field] = &[req("before", ORDER_END), req("after", ORDER_END)];

/// An `input_json` regex that does not compile, named by where it is.
pub(crate) fn tool_order_problem(m: &Map<String, Value>) -> Option<String> {
    ["before", "after"].into_iter().find_map(|end| {
        let src = m.get(end)?.get("input_json")?.as_str()?;
        input_json_regex(src)
            .err()
            .map(|e| format!("field `{end}.input_json`: {e}"))
    })
}

/// `new RegExp(src)`: case-sensitive, no flags, as the grader's
/// `input_match`.
pub(super) fn input_json_regex(src: &str) -> Result<EsRegex, String> {
    compile_es_with_flags(src, "")
        .map_err(|e| format!("bad regex \"{src}\": {e} (fix the pattern)"))
}

/// One end, read: its glob, its regex, and how it reads in a message.
struct End {
    glob: String,
    input_json: Option<(String, EsRegex)>,
}

impl End {
    fn read(key: &str, v: Option<&Value>) -> Result<End, String> {
        let (glob, src) = match v {
            Some(Value::String(g)) => (g.clone(), None),
            Some(Value::Object(o)) => (
                opt_str(o, "tool").ok_or_else(|| bad_param(key))?.to_owned(),
                opt_str(o, "input_json"),
            ),
            _ => return Err(bad_param(key)),
        };
        let input_json = match src {
            Some(s) => Some((
                s.to_owned(),
                input_json_regex(s).map_err(|e| format!("{key}: {e}"))?,
            )),
            None => None,
        };
        Ok(End { glob, input_json })
    }

    fn label(&self) -> String {
        match &self.input_json {
            Some((src, _)) => format!("{} (input_json /{src}/)", self.glob),
            None => self.glob.clone(),
        }
    }

    /// Whether `call` matches: `Err` when its input was cut where the
    /// regex did not match (the call cannot be placed, so the order is
    /// unknown).
    fn matches(&self, key: &str, call: &ToolCall) -> Result<bool, String> {
        if !crate::assert::glob::matches(&self.glob, &call.name) {
            return Ok(false);
        }
        let Some((_, re)) = &self.input_json else {
            return Ok(true);
        };
        if t(key, re, &call.input_json().text)? {
            Ok(true)
        } else if call.input_json().truncated {
            Err(format!(
                "evidence unavailable: {key}: a {} call's input is longer than the recorded \
                 10 KB, so whether it matches {} cannot be told",
                call.name,
                self.label()
            ))
        } else {
            Ok(false)
        }
    }

    /// The index of the first call it matches.
    fn first(&self, key: &str, calls: &[ToolCall]) -> Result<Option<usize>, String> {
        for (i, c) in calls.iter().enumerate() {
            if self.matches(key, c)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

pub(super) fn tool_order(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let o = obj_param(key, v)?;
    let before = End::read(key, o.get("before"))?;
    let after = End::read(key, o.get("after"))?;
    let calls = &env.run.tool_calls;
    let Some(b) = before.first(key, calls)? else {
        return Err(format!("\"before\" tool {} never called", before.label()));
    };
    let Some(a) = after.first(key, calls)? else {
        return Err(format!("\"after\" tool {} never called", after.label()));
    };
    if b < a {
        ok_ev(format!(
            "tool_order: {}@{b} precedes {}@{a}",
            before.label(),
            after.label()
        ))
    } else {
        Err(format!(
            "{}@{b} does not precede {}@{a} (first matching calls, sub-agents' included)",
            before.label(),
            after.label()
        ))
    }
}
