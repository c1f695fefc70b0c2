//! The plugin hook keys: what the agent's own command hooks did, read from
//! the `hook_started` / `hook_response` frames it streams (stream content:
//! no `controlOut` needed). None passes vacuously: an event with no frame
//! fails, and a frame whose outcome cannot be read makes a count that could
//! fall either side of the bound evidence-unavailable.

mod failure;
mod frames;
mod output;

use serde_json::Value;

use self::failure::Inventory;
pub(crate) use self::failure::agents_predate_on_failure;
use self::frames::{Decision, Frame, Via, frames, normalize};
use super::*;

/// The object form of `hook_event_blocked` / `no_hook_event_blocked` (v15).
const HOOK_EVENT: &[Field] = &[
    req("event", Param::NonEmpty),
    opt("tool", Param::NonEmpty),
    opt("via", Param::NonEmpty),
    opt("min", Param::UInt),
    opt("max", Param::UInt),
];

/// `hook_decision` (v15).
const HOOK_DECISION: &[Field] = &[
    req("event", Param::NonEmpty),
    req("decision", Param::NonEmpty),
    opt("tool", Param::NonEmpty),
    opt("min", Param::UInt),
    opt("max", Param::UInt),
];

/// `hook_output_contains` / `hook_output_not_contains` (v14).
const HOOK_OUTPUT: &[Field] = &[
    req("event", Param::NonEmpty),
    opt("stream", Param::NonEmpty),
    opt("text", Param::NonEmpty),
    opt("matches", Param::NonEmptyRegex),
];

/// A hook key's record (the six share every field but these).
macro_rules! hook_key {
    ($name:literal, $param:expr, $description:literal, $example:expr, $rank:literal, $eval:expr) => {
        Key {
            name: $name,
            bucket: Bucket::Always,
            param: $param,
            description: $description,
            example: Some($example),
            ranks: Ranks {
                listed: $rank,
                check: $rank,
                schema: $rank,
                strip: Some($rank - 12),
            },
            eval: Eval::One($eval),
            ..Key::DEFAULTS
        }
    };
}

pub(super) const KEYS: &[Key] = &[
    hook_key!(
        "hook_event_fired",
        Param::NonEmpty,
        "a command hook for this event ran (its hook_response frame was streamed)",
        || Value::from("Stop"),
        80,
        hook_event_fired
    ),
    hook_key!(
        "hook_event_blocked",
        Param::OneOf(&[Param::NonEmpty, Param::Object(HOOK_EVENT, Refine::Hook)]),
        "a command hook for this event blocked (exit 2; the object form counts JSON denies too and bounds the count)",
        || Value::from("Stop"),
        81,
        hook_event_blocked
    ),
    hook_key!(
        "no_hook_event_blocked",
        Param::OneOf(&[Param::True, Param::Object(HOOK_EVENT, Refine::Hook)]),
        "no command hook (for this event / tool) blocked, by exit 2 or a JSON deny",
        || Value::Bool(true),
        82,
        no_hook_event_blocked
    ),
    hook_key!(
        "hook_decision",
        Param::Object(HOOK_DECISION, Refine::Hook),
        "command hooks for this event decided this (allow, deny, ask, defer; block = deny, approve = allow) within the bounds",
        || serde_json::json!({"event": "PreToolUse", "decision": "deny"}),
        83,
        hook_decision
    ),
    hook_key!(
        "hook_output_contains",
        Param::Object(HOOK_OUTPUT, Refine::HookOutput),
        "a command hook for this event printed this text (case-sensitive) or regex match (case-insensitive)",
        || serde_json::json!({"event": "Stop", "text": "checked"}),
        84,
        output::contains
    ),
    hook_key!(
        "hook_output_not_contains",
        Param::Object(HOOK_OUTPUT, Refine::HookOutput),
        "no command hook for this event printed this text or regex match",
        || serde_json::json!({"event": "Stop", "stream": "stderr", "text": "failed open"}),
        85,
        output::not_contains
    ),
];

/// What `Refine::Hook` refuses in a hook key's object (the original's
/// schema refinements).
pub(crate) fn hook_object_problem(
    m: &serde_json::Map<String, Value>,
    output: bool,
) -> Option<String> {
    let s = |k: &str| m.get(k).and_then(Value::as_str);
    let n = |k: &str| m.get(k).and_then(Value::as_u64);
    if let (Some(lo), Some(hi)) = (n("min"), n("max"))
        && lo > hi
    {
        return Some(format!("`min` ({lo}) is greater than `max` ({hi})"));
    }
    if let Some(via) = s("via")
        && !matches!(via, "exit2" | "json" | "any")
    {
        return Some(format!("`via` must be exit2, json or any, got \"{via}\""));
    }
    if let Some(d) = s("decision")
        && !matches!(d, "allow" | "deny" | "ask" | "defer" | "block" | "approve")
    {
        return Some(format!(
            "`decision` must be allow, deny, ask, defer, block or approve, got \"{d}\""
        ));
    }
    if let Some(stream) = s("stream")
        && !matches!(stream, "stdout" | "stderr" | "any")
    {
        return Some(format!(
            "`stream` must be stdout, stderr or any, got \"{stream}\""
        ));
    }
    let needles = usize::from(m.contains_key("text")) + usize::from(m.contains_key("matches"));
    if output {
        if needles != 1 {
            return Some("set exactly one of `text` or `matches`".into());
        }
        // A YAML double-quoted "\b" loads a backspace, which no hook prints.
        if [s("text"), s("matches")].into_iter().flatten().any(|t| {
            t.chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        }) {
            return Some(
                "the needle holds a control character (a YAML \"\\b\" is a backspace; write '\\b' for a word boundary)"
                    .into(),
            );
        }
    }
    None
}

/// `event`'s frames, narrowed to `tool`: an event that never fired fails; a
/// `tool` over frames that carry no tool name (a Stop hook's) is
/// evidence-unavailable.
fn scoped<'f>(
    key: &str,
    all: &'f [Frame],
    event: &str,
    tool: Option<&str>,
) -> Result<Vec<&'f Frame>, String> {
    let of_event: Vec<&Frame> = all.iter().filter(|f| f.event == event).collect();
    let Some(tool) = tool else {
        return if of_event.is_empty() {
            Err(never_fired(key, event, None))
        } else {
            Ok(of_event)
        };
    };
    if !of_event.is_empty() && of_event.iter().all(|f| f.tool().is_none()) {
        return Err(format!(
            "evidence unavailable: {key}: the `{event}` hook frames carry no tool name (their hook_name \
             is the bare event), so `tool: {tool}` cannot be checked — cannot verify"
        ));
    }
    let of_tool: Vec<&Frame> = of_event
        .into_iter()
        .filter(|f| f.tool() == Some(tool))
        .collect();
    if of_tool.is_empty() {
        Err(never_fired(key, event, Some(tool)))
    } else {
        Ok(of_tool)
    }
}

fn never_fired(key: &str, event: &str, tool: Option<&str>) -> String {
    let tool = tool.map(|t| format!(" (tool `{t}`)")).unwrap_or_default();
    format!(
        "{key}: no hook_response frame for `{event}`{tool} — the hook never fired (the agent streams \
         hook frames only with --include-hook-events)"
    )
}

/// At most five labels, then `+N more`.
fn listed(labels: impl IntoIterator<Item = String>) -> String {
    let labels: Vec<String> = labels.into_iter().collect();
    let mut shown = labels
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if labels.len() > 5 {
        shown.push_str(&format!("; +{} more", labels.len() - 5));
    }
    shown
}

/// A count of `known` frames (plus `unknown` that cannot be read) against
/// `[min, max]`: inside passes, disjoint fails, straddling is
/// evidence-unavailable.
fn judge_count(
    key: &str,
    what: &str,
    hits: &[&Frame],
    unknown: &[&Frame],
    bound: (u64, Option<u64>),
) -> KeyResult {
    let (min, max) = bound;
    let (lo, hi) = (hits.len() as u64, (hits.len() + unknown.len()) as u64);
    let named = if hits.is_empty() {
        String::new()
    } else {
        format!(" ({})", listed(hits.iter().map(|f| f.label())))
    };
    let plus = if unknown.is_empty() {
        String::new()
    } else {
        format!(
            " plus {} whose outcome cannot be read ({})",
            unknown.len(),
            listed(unknown.iter().map(|f| f.label()))
        )
    };
    let range = match max {
        Some(max) => format!("[{min}, {max}]"),
        None => format!("at least {min}"),
    };
    if lo >= min && max.is_none_or(|m| hi <= m) {
        return ok_ev(format!("{key}: {lo} {what}{named}{plus}, within {range}"));
    }
    if hi < min {
        return Err(format!(
            "{key}: {lo} {what}{named}{plus}, expected at least {min}"
        ));
    }
    if let Some(max) = max
        && lo > max
    {
        return Err(format!(
            "{key}: {lo} {what}{named}{plus}, expected at most {max}"
        ));
    }
    Err(format!(
        "evidence unavailable: {key}: {lo} {what}{named}{plus} — the count lies between {lo} and {hi}, \
         which straddles {range} — cannot verify"
    ))
}

/// `min` (1 when neither bound is set) and `max`.
fn bounds(o: &serde_json::Map<String, Value>) -> (u64, Option<u64>) {
    let max = o.get("max").and_then(Value::as_u64);
    let min = o
        .get("min")
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(max.is_none()));
    (min, max)
}

fn hook_event_fired(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let event = v.as_str().unwrap_or_default();
    let all = frames(env.run);
    let fired = scoped(key, &all, event, None)?;
    ok_ev(format!("{key}: `{event}` fired {} time(s)", fired.len()))
}

/// The run's frames, each failed frame of an event the cassette's
/// `hookFailureBlocks` lists (or of any non-exempt event, when unknown)
/// marked unreadable, and the inventory (test/hook-failure-blocks.test.ts).
fn decided_frames(env: &Env<'_>) -> (Vec<Frame>, Inventory) {
    let inventory = Inventory::of(env.ctx.cassette);
    let mut all = frames(env.run);
    for f in &mut all {
        f.may_block_on_failure = inventory.may_block_on_failure(&f.event);
    }
    (all, inventory)
}

fn hook_event_blocked(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let (all, _) = decided_frames(env);
    let Some(o) = v.as_object() else {
        return bare_blocked(key, &all, v.as_str().unwrap_or_default());
    };
    let event = o.get("event").and_then(Value::as_str).unwrap_or_default();
    let tool = o.get("tool").and_then(Value::as_str);
    let via = Via::parse(o.get("via").and_then(Value::as_str));
    let scope = scoped(key, &all, event, tool)?;
    let hits: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.blocked(via) == Some(true))
        .collect();
    let unknown: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.blocked(via).is_none())
        .collect();
    judge_count(
        key,
        &format!("blocking `{event}` hook frame(s)"),
        &hits,
        &unknown,
        bounds(o),
    )
}

/// The bare form: at least one exit-2 block.
fn bare_blocked(key: &str, all: &[Frame], event: &str) -> KeyResult {
    let scope = scoped(key, all, event, None)?;
    let blocks = scope
        .iter()
        .filter(|f| f.blocked(Via::Exit2) == Some(true))
        .count();
    if blocks > 0 {
        return ok_ev(format!(
            "{key}: `{event}` blocked {blocks} time(s) (exit 2)"
        ));
    }
    if scope.iter().any(|f| f.blocked(Via::Exit2).is_none()) {
        return Err(format!(
            "evidence unavailable: {key}: `{event}` never blocked by exit 2 in the frames that can be read, \
             and some never answered or carry no exit code — cannot verify"
        ));
    }
    let json = scope
        .iter()
        .filter(|f| f.blocked(Via::Json) == Some(true))
        .count();
    let note = if json > 0 {
        format!(
            "; {json} frame(s) denied by JSON on stdout, which the bare form does not count — use \
             `{{event: {event}, via: any}}` to count them"
        )
    } else {
        String::new()
    };
    Err(format!(
        "{key}: `{event}` fired {} time(s) but never blocked (exit 2){note}",
        scope.len()
    ))
}

fn no_hook_event_blocked(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let (all, inventory) = decided_frames(env);
    let scope: Vec<&Frame> = match v.as_object() {
        Some(o) => {
            let event = o.get("event").and_then(Value::as_str).unwrap_or_default();
            scoped(key, &all, event, o.get("tool").and_then(Value::as_str))?
        }
        None => unscoped(key, &all)?,
    };
    let blocked: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.blocked(Via::Any) == Some(true))
        .collect();
    if let Some(first) = blocked.first() {
        return Err(format!(
            "{key}: {} blocked — {} of {} hook frame(s) blocked ({})",
            first.label(),
            blocked.len(),
            scope.len(),
            listed(blocked.iter().map(|f| f.label()))
        ));
    }
    let unknown: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.blocked(Via::Any).is_none())
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "evidence unavailable: {key}: {} of {} hook frame(s) cannot be read ({}) — cannot verify",
            unknown.len(),
            scope.len(),
            listed(unknown.iter().map(|f| f.label()))
        ));
    }
    // Unscoped, a block on an event that streams no frame is part of the
    // claim, and cannot be seen.
    if !v.is_object()
        && let Some(why) = inventory.hidden_blocks()
    {
        return Err(format!(
            "evidence unavailable: {key}: none of {} hook frame(s) blocked, but {why} — cannot verify",
            scope.len()
        ));
    }
    ok_ev(format!(
        "{key}: none of {} hook frame(s) blocked",
        scope.len()
    ))
}

/// Every frame but SessionStart's, which streams without
/// `--include-hook-events` and so proves nothing about the others.
fn unscoped<'f>(key: &str, all: &'f [Frame]) -> Result<Vec<&'f Frame>, String> {
    let scope: Vec<&Frame> = all.iter().filter(|f| f.event != "SessionStart").collect();
    if scope.is_empty() {
        return Err(format!(
            "evidence unavailable: {key}: no hook frame beyond SessionStart's was recorded (the agent streams \
             the others only with --include-hook-events) — cannot verify"
        ));
    }
    Ok(scope)
}

fn hook_decision(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let Some(o) = v.as_object() else {
        return Err(bad_param(key));
    };
    let event = o.get("event").and_then(Value::as_str).unwrap_or_default();
    let asked = o
        .get("decision")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let want = normalize(asked);
    let (all, _) = decided_frames(env);
    let scope = scoped(key, &all, event, o.get("tool").and_then(Value::as_str))?;
    let hits: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.decision().normalized() == Some(want))
        .collect();
    let unknown: Vec<&Frame> = scope
        .iter()
        .copied()
        .filter(|f| f.decision() == Decision::Unknown)
        .collect();
    judge_count(
        key,
        &format!("`{event}` hook frame(s) decided {asked}"),
        &hits,
        &unknown,
        bounds(o),
    )
}
