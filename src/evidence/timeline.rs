//! Folds of a cassette's `timeline` (cowork-harness `src/run/timeline-fold.ts`):
//! per-tool wall-gap durations (`RunResult.toolDurations`), skill-activation
//! windows (`RunResult.skillActivity`, which `skill_tool_used` evaluates), and
//! the skill each sub-agent was dispatched under (`subagents[].attributedSkillId`).
//!
//! The timeline is the harness's own observation log (`seq`, `ts` in ms since
//! the run started, `type`, type-specific keys), frozen at record time and
//! never re-derived from `events`. It is untrusted JSON, read with the
//! original's JavaScript semantics (truthiness, `String(x)`, `Number(x)`,
//! strict equality). A non-object entry is skipped (the original would throw
//! on a `null` one; it never records one).
//!
//! Not here: whether a cassette *has* a timeline (`Cassette::timeline`) or what
//! the results are used for (replay's result JSON, the `skill_tool_used` key).

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::cassette::{Recorded, TimelineEntry};
use crate::js::coerce::js_string;
use crate::js::number;

/// One tool's calls paired `tool_use` → `tool_result` (`toolDurations[name]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolDuration {
    pub calls: u64,
    /// Sum of the wall gaps, in ms (NaN when a `ts` was not a number).
    pub total_ms: f64,
    /// Largest wall gap, in ms (starts at 0, like the original's `Math.max`).
    pub max_ms: f64,
}

impl Serialize for ToolDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("calls", &self.calls)?;
        map.serialize_entry("totalMs", &number::json_value(self.total_ms))?;
        map.serialize_entry("maxMs", &number::json_value(self.max_ms))?;
        map.end()
    }
}

/// Per-tool durations in first-pairing order (`toolDurations`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolDurations(pub Vec<(String, ToolDuration)>);

impl Serialize for ToolDurations {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, d) in &self.0 {
            map.serialize_entry(name, d)?;
        }
        map.end()
    }
}

/// One skill-activation window (`skillActivity[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct SkillWindow {
    /// The entries' `skillScope` as recorded (`"(root)"` when absent or null).
    pub skill_id: Value,
    /// `seq` of the window's first entry (`None` when that entry had none).
    pub invocation_seq: Option<Value>,
    /// `(tool name, calls)` in first-call order.
    pub tool_counts: Vec<(String, u64)>,
    pub tool_call_count: u64,
    pub dispatch_count: u64,
    /// Last entry's `ts` minus the first's, in ms (NaN when not numbers).
    pub duration_ms: f64,
}

impl SkillWindow {
    /// `skillId` as a regex subject (`RegExp.test` reads `String(skillId)`).
    pub fn skill_label(&self) -> String {
        js_string(&self.skill_id)
    }
}

impl Serialize for SkillWindow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("skillId", &number::reformat(&self.skill_id))?;
        if let Some(seq) = &self.invocation_seq {
            map.serialize_entry("invocationSeq", &number::reformat(seq))?;
        }
        let counts: Map<String, Value> = self
            .tool_counts
            .iter()
            .map(|(name, n)| (name.clone(), Value::from(*n)))
            .collect();
        map.serialize_entry("toolCounts", &counts)?;
        map.serialize_entry("toolCallCount", &self.tool_call_count)?;
        map.serialize_entry("dispatchCount", &self.dispatch_count)?;
        map.serialize_entry("durationMs", &number::json_value(self.duration_ms))?;
        map.end()
    }
}

/// A `toolUseId` as a JavaScript `Map` key (SameValueZero). Objects and
/// arrays are keys only by identity, so no other entry ever finds them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum PairKey {
    Str(Box<str>),
    /// The f64 bits (a JSON number is never NaN; `0` is not truthy, so `-0`
    /// never arrives here).
    Num(u64),
    True,
}

impl PairKey {
    fn of(v: &Recorded) -> Option<PairKey> {
        match v {
            Recorded::String(s) => Some(PairKey::Str(s.clone())),
            Recorded::Integer(_) | Recorded::Number(_) => {
                v.number().map(|f| PairKey::Num(f.to_bits()))
            }
            Recorded::Bool(true) => Some(PairKey::True),
            _ => None,
        }
    }
}

fn entry_type(ev: &TimelineEntry) -> Option<&str> {
    ev.get("type").and_then(Recorded::as_str)
}

fn tool_name(ev: &TimelineEntry) -> Cow<'_, str> {
    match ev.get("name") {
        Some(Recorded::String(s)) => Cow::Borrowed(s),
        Some(other) => Cow::Owned(js_string(&other.to_value())),
        None => Cow::Borrowed("undefined"),
    }
}

fn ts(ev: &TimelineEntry) -> f64 {
    ev.get("ts").map_or(f64::NAN, Recorded::to_number)
}

fn js_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn bump<'l, T>(
    list: &'l mut Vec<(String, T)>,
    name: Cow<'_, str>,
    new: impl FnOnce() -> T,
) -> &'l mut T {
    let i = match list.iter().position(|(n, _)| *n == *name) {
        Some(i) => i,
        None => {
            list.push((name.into_owned(), new()));
            list.len() - 1
        }
    };
    &mut list[i].1
}

/// Each fold takes the entries one at a time, in order ([`TimelineFolder`]
/// feeds all three as a timeline is read, keeping no entry).
trait Fold: Default {
    type Out;
    fn entry(&mut self, ev: &TimelineEntry);
    fn finish(self) -> Self::Out;

    fn of(timeline: &[TimelineEntry]) -> Self::Out {
        let mut fold = Self::default();
        for ev in timeline {
            fold.entry(ev);
        }
        fold.finish()
    }
}

/// `toolDurations`: each `tool_use` paired with the next `tool_result` of
/// its id.
#[derive(Default)]
struct DurationsFold {
    /// Open calls: their tool's name and start.
    pending: HashMap<PairKey, (String, f64)>,
    out: Vec<(String, ToolDuration)>,
}

impl Fold for DurationsFold {
    type Out = ToolDurations;

    fn entry(&mut self, ev: &TimelineEntry) {
        let id = ev.get("toolUseId");
        if !id.is_some_and(Recorded::truthy) {
            return;
        }
        let key = id.and_then(PairKey::of);
        match entry_type(ev) {
            Some("tool_use") => {
                if let Some(key) = key {
                    self.pending
                        .insert(key, (tool_name(ev).into_owned(), ts(ev)));
                }
            }
            Some("tool_result") => {
                let Some((name, start)) = key.and_then(|k| self.pending.remove(&k)) else {
                    return;
                };
                let call_ms = ts(ev) - start;
                let bucket = bump(&mut self.out, Cow::Owned(name), || ToolDuration {
                    calls: 0,
                    total_ms: 0.0,
                    max_ms: 0.0,
                });
                bucket.calls += 1;
                bucket.total_ms += call_ms;
                bucket.max_ms = js_max(bucket.max_ms, call_ms);
            }
            _ => {}
        }
    }

    fn finish(self) -> ToolDurations {
        ToolDurations(self.out)
    }
}

pub fn tool_durations(timeline: &[TimelineEntry]) -> ToolDurations {
    DurationsFold::of(timeline)
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineFolds {
    pub tool_durations: ToolDurations,
    pub skill_activity: Vec<SkillWindow>,
    pub dispatch_scopes: HashMap<String, Option<Value>>,
}

impl TimelineFolds {
    pub fn of(timeline: &[TimelineEntry]) -> TimelineFolds {
        TimelineFolder::of(timeline)
    }

    /// The folds of entries as they are read (none of them kept).
    pub fn of_each(entries: &mut dyn Iterator<Item = TimelineEntry>) -> TimelineFolds {
        let mut folder = TimelineFolder::default();
        for ev in entries {
            folder.entry(&ev);
        }
        folder.finish()
    }
}

/// All three folds at once ([`TimelineFolds`]).
#[derive(Default)]
struct TimelineFolder {
    durations: DurationsFold,
    activity: ActivityFold,
    dispatch: DispatchFold,
}

impl Fold for TimelineFolder {
    type Out = TimelineFolds;

    fn entry(&mut self, ev: &TimelineEntry) {
        self.durations.entry(ev);
        self.activity.entry(ev);
        self.dispatch.entry(ev);
    }

    fn finish(self) -> TimelineFolds {
        TimelineFolds {
            tool_durations: self.durations.finish(),
            skill_activity: self.activity.finish(),
            dispatch_scopes: self.dispatch.finish(),
        }
    }
}

fn differs(a: &Recorded, b: &Recorded) -> bool {
    match (a, b) {
        (Recorded::String(x), Recorded::String(y)) => x != y,
        (
            Recorded::Integer(_) | Recorded::Number(_),
            Recorded::Integer(_) | Recorded::Number(_),
        ) => a.number() != b.number(),
        (Recorded::Bool(x), Recorded::Bool(y)) => x != y,
        _ => true,
    }
}

/// `skillActivity`: runs of tool calls and dispatches under one skill scope.
#[derive(Default)]
struct ActivityFold {
    windows: Vec<SkillWindow>,
    /// The open window's scope (`None`: the root, absent or null).
    scope_now: Option<Recorded>,
    start_ts: f64,
}

impl Fold for ActivityFold {
    type Out = Vec<SkillWindow>;

    fn entry(&mut self, ev: &TimelineEntry) {
        let is_tool_use = match entry_type(ev) {
            Some("tool_use") => true,
            Some("subagent_dispatch") => false,
            _ => return,
        };
        if is_tool_use && !ev.get("toolUseId").is_some_and(Recorded::truthy) {
            return;
        }
        let scope = ev.get("skillScope").filter(|v| **v != Recorded::Null);
        let ts = ts(ev);
        let same = !self.windows.is_empty()
            && match (scope, &self.scope_now) {
                (Some(s), Some(now)) => !differs(now, s),
                (None, None) => true,
                (Some(s), None) | (None, Some(s)) => s.as_str() == Some("(root)"),
            };
        if !same {
            self.start_ts = ts;
            self.scope_now = scope.cloned();
            self.windows.push(SkillWindow {
                skill_id: scope.map_or_else(
                    || Value::String("(root)".into()),
                    |s| s.to_value().into_owned(),
                ),
                invocation_seq: ev.value("seq").map(Cow::into_owned),
                tool_counts: Vec::new(),
                tool_call_count: 0,
                dispatch_count: 0,
                duration_ms: 0.0,
            });
        }
        let Some(current) = self.windows.last_mut() else {
            return; // unreachable: a window was pushed above when none was open
        };
        current.duration_ms = ts - self.start_ts;
        if is_tool_use {
            *bump(&mut current.tool_counts, tool_name(ev), || 0) += 1;
            current.tool_call_count += 1;
        } else {
            current.dispatch_count += 1;
        }
    }

    fn finish(self) -> Vec<SkillWindow> {
        self.windows
    }
}

pub fn skill_activity(timeline: &[TimelineEntry]) -> Vec<SkillWindow> {
    ActivityFold::of(timeline)
}

/// The skill scope each sub-agent was dispatched under, by `toolUseId`.
#[derive(Default)]
struct DispatchFold(HashMap<String, Option<Value>>);

impl Fold for DispatchFold {
    type Out = HashMap<String, Option<Value>>;

    fn entry(&mut self, ev: &TimelineEntry) {
        if entry_type(ev) != Some("subagent_dispatch") {
            return;
        }
        if let Some(id) = ev.get("toolUseId").and_then(Recorded::as_str) {
            self.0.insert(
                id.to_owned(),
                ev.value("skillScope").as_deref().map(number::reformat),
            );
        }
    }

    fn finish(self) -> HashMap<String, Option<Value>> {
        self.0
    }
}

pub fn dispatch_skill_scopes(timeline: &[TimelineEntry]) -> HashMap<String, Option<Value>> {
    DispatchFold::of(timeline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The entries of a timeline, read both ways the folds get them (off
    /// a parsed document, and straight from the text), which must agree.
    fn tl(v: Value) -> Vec<TimelineEntry> {
        let of_values: Vec<TimelineEntry> = v
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(TimelineEntry::of)
            .collect();
        let text = v.to_string();
        let of_text = TimelineEntry::parse_all(&text).expect("an array");
        assert_eq!(of_values, of_text, "{v}");
        // Folded as the entries are read, none kept: the same folds.
        let mut reader = crate::cassette::TimelineReader::new(&text, 100).expect("an array");
        let streamed = TimelineFolds::of_each(&mut reader);
        assert!(reader.end().is_some(), "read whole: {v}");
        let whole = TimelineFolds::of(&of_values);
        let json = |f: &TimelineFolds| {
            serde_json::to_string(&(&f.tool_durations, &f.skill_activity)).unwrap()
        };
        assert_eq!(json(&streamed), json(&whole), "{v}");
        assert_eq!(streamed.dispatch_scopes, whole.dispatch_scopes, "{v}");
        of_values
    }

    fn durations_json(t: &[TimelineEntry]) -> String {
        serde_json::to_string(&tool_durations(t)).unwrap()
    }

    fn activity_json(t: &[TimelineEntry]) -> String {
        serde_json::to_string(&skill_activity(t)).unwrap()
    }

    #[test]
    fn durations_pair_use_and_result_by_id() {
        let t = tl(json!([
            {"seq":0,"ts":100,"type":"tool_use","toolUseId":"a","name":"Bash"},
            {"seq":1,"ts":105,"type":"tool_use","toolUseId":"b","name":"Read"},
            {"seq":2,"ts":130,"type":"tool_result","toolUseId":"a"},
            {"seq":3,"ts":140,"type":"tool_use","toolUseId":"c","name":"Bash"},
            {"seq":4,"ts":145,"type":"tool_result","toolUseId":"c"},
            {"seq":5,"ts":150,"type":"tool_result","toolUseId":"b"},
        ]));
        assert_eq!(
            durations_json(&t),
            r#"{"Bash":{"calls":2,"totalMs":35,"maxMs":30},"Read":{"calls":1,"totalMs":45,"maxMs":45}}"#
        );
    }

    #[test]
    fn durations_skip_unpaired_and_idless_calls() {
        let t = tl(json!([
            {"ts":1,"type":"tool_use","name":"mcp__x"},
            {"ts":2,"type":"tool_use","toolUseId":"","name":"Empty"},
            {"ts":3,"type":"tool_use","toolUseId":"open","name":"Never"},
            {"ts":4,"type":"tool_result","toolUseId":"nobody"},
            {"ts":5,"type":"tool_result"},
            null, 7, "x",
        ]));
        assert_eq!(durations_json(&t), "{}");
        assert_eq!(durations_json(&[]), "{}");
    }

    #[test]
    fn a_result_closes_its_call_once_and_a_reused_id_restarts_it() {
        let t = tl(json!([
            {"ts":0,"type":"tool_use","toolUseId":"a","name":"T"},
            {"ts":5,"type":"tool_use","toolUseId":"a","name":"T"},
            {"ts":8,"type":"tool_result","toolUseId":"a"},
            {"ts":50,"type":"tool_result","toolUseId":"a"},
        ]));
        assert_eq!(
            durations_json(&t),
            r#"{"T":{"calls":1,"totalMs":3,"maxMs":3}}"#
        );
    }

    #[test]
    fn ids_pair_by_javascript_map_keys() {
        // 7 and 7.0 are one key; 7 and "7" are two; an object never pairs.
        let t = tl(json!([
            {"ts":0,"type":"tool_use","toolUseId":7,"name":"N"},
            {"ts":4,"type":"tool_result","toolUseId":7.0},
            {"ts":0,"type":"tool_use","toolUseId":8,"name":"S"},
            {"ts":4,"type":"tool_result","toolUseId":"8"},
            {"ts":0,"type":"tool_use","toolUseId":{},"name":"O"},
            {"ts":4,"type":"tool_result","toolUseId":{}},
        ]));
        assert_eq!(
            durations_json(&t),
            r#"{"N":{"calls":1,"totalMs":4,"maxMs":4}}"#
        );
    }

    #[test]
    fn odd_timestamps_follow_javascript_arithmetic() {
        // Numeric strings count; a missing ts is NaN, written as null.
        let t = tl(json!([
            {"ts":"10","type":"tool_use","toolUseId":"a","name":"A"},
            {"ts":" 25 ","type":"tool_result","toolUseId":"a"},
            {"type":"tool_use","toolUseId":"b","name":"B"},
            {"ts":3,"type":"tool_result","toolUseId":"b"},
            {"ts":10,"type":"tool_use","toolUseId":"c","name":"C"},
            {"ts":4,"type":"tool_result","toolUseId":"c"},
            {"ts":0.5,"type":"tool_use","toolUseId":"d","name":"D"},
            {"ts":2,"type":"tool_result","toolUseId":"d"},
        ]));
        assert_eq!(
            durations_json(&t),
            concat!(
                r#"{"A":{"calls":1,"totalMs":15,"maxMs":15},"B":{"calls":1,"totalMs":null,"maxMs":null},"#,
                r#""C":{"calls":1,"totalMs":-6,"maxMs":0},"D":{"calls":1,"totalMs":1.5,"maxMs":1.5}}"#
            )
        );
    }

    #[test]
    fn windows_group_consecutive_entries_by_skill_scope() {
        let t = tl(json!([
            {"seq":0,"ts":10,"type":"tool_use","toolUseId":"a","name":"Read"},
            {"seq":1,"ts":20,"type":"thinking"},
            {"seq":2,"ts":30,"type":"tool_use","toolUseId":"b","name":"Skill","skillScope":"s:pdf"},
            {"seq":3,"ts":35,"type":"tool_result","toolUseId":"b","skillScope":"s:pdf"},
            {"seq":4,"ts":40,"type":"tool_use","toolUseId":"c","name":"Bash","skillScope":"s:pdf"},
            {"seq":5,"ts":45,"type":"subagent_dispatch","toolUseId":"d","skillScope":"s:pdf"},
            {"seq":6,"ts":50,"type":"tool_use","toolUseId":"e","name":"Bash","skillScope":"s:pdf"},
            {"seq":7,"ts":60,"type":"tool_use","toolUseId":"f","name":"Write","skillScope":null},
            {"seq":8,"ts":70,"type":"tool_use","toolUseId":"g","name":"Skill","skillScope":"s:pdf"},
        ]));
        assert_eq!(
            activity_json(&t),
            concat!(
                r#"[{"skillId":"(root)","invocationSeq":0,"toolCounts":{"Read":1},"toolCallCount":1,"dispatchCount":0,"durationMs":0},"#,
                r#"{"skillId":"s:pdf","invocationSeq":2,"toolCounts":{"Skill":1,"Bash":2},"toolCallCount":3,"dispatchCount":1,"durationMs":20},"#,
                r#"{"skillId":"(root)","invocationSeq":7,"toolCounts":{"Write":1},"toolCallCount":1,"dispatchCount":0,"durationMs":0},"#,
                r#"{"skillId":"s:pdf","invocationSeq":8,"toolCounts":{"Skill":1},"toolCallCount":1,"dispatchCount":0,"durationMs":0}]"#
            )
        );
    }

    #[test]
    fn windows_skip_synthetic_echoes_and_keep_odd_values_as_recorded() {
        let t = tl(json!([
            {"seq":0,"ts":1,"type":"tool_use","name":"mcp__cowork__*","skillScope":"(root)"},
            {"ts":2,"type":"tool_use","toolUseId":"a","skillScope":3},
            {"seq":2.0,"ts":4,"type":"tool_use","toolUseId":"b","name":"X","skillScope":3.0},
            {"seq":3,"ts":5,"type":"tool_use","toolUseId":"c","name":"X","skillScope":{"k":1}},
            {"seq":4,"ts":6,"type":"tool_use","toolUseId":"d","name":"X","skillScope":{"k":1}},
        ]));
        assert_eq!(
            activity_json(&t),
            concat!(
                r#"[{"skillId":3,"toolCounts":{"undefined":1,"X":1},"toolCallCount":2,"dispatchCount":0,"durationMs":2},"#,
                r#"{"skillId":{"k":1},"invocationSeq":3,"toolCounts":{"X":1},"toolCallCount":1,"dispatchCount":0,"durationMs":0},"#,
                r#"{"skillId":{"k":1},"invocationSeq":4,"toolCounts":{"X":1},"toolCallCount":1,"dispatchCount":0,"durationMs":0}]"#
            )
        );
        assert_eq!(skill_activity(&t)[0].skill_label(), "3");
        assert_eq!(activity_json(&[]), "[]");
        // A recorded "(root)" is the scope of an entry without one (either
        // way round); falsy ids are echoes; `true` and `0.5` are ids.
        let t = tl(json!([
            {"seq":0,"ts":1,"type":"tool_use","toolUseId":"a","name":"X","skillScope":"(root)"},
            {"seq":1,"ts":2,"type":"tool_use","toolUseId":true,"name":"Y"},
            {"seq":2,"ts":3,"type":"tool_use","toolUseId":0,"name":"Z","skillScope":"s"},
            {"seq":3,"ts":4,"type":"tool_use","toolUseId":"","name":"Z","skillScope":"s"},
            {"seq":4,"ts":5,"type":"tool_use","toolUseId":0.5,"name":"X","skillScope":null},
            {"seq":5,"ts":"7","type":"subagent_dispatch","skillScope":"(root)"},
            {"seq":6,"ts":9,"type":"tool_use","toolUseId":"b","name":"X","skillScope":false},
            {"seq":7,"ts":9,"type":"tool_use","toolUseId":"c","name":"X","skillScope":false},
        ]));
        assert_eq!(
            activity_json(&t),
            concat!(
                r#"[{"skillId":"(root)","invocationSeq":0,"toolCounts":{"X":2,"Y":1},"toolCallCount":3,"dispatchCount":1,"durationMs":6},"#,
                r#"{"skillId":false,"invocationSeq":6,"toolCounts":{"X":2},"toolCallCount":2,"dispatchCount":0,"durationMs":0}]"#
            )
        );
    }

    #[test]
    fn dispatch_scopes_key_by_string_id_and_the_last_entry_wins() {
        let t = tl(json!([
            {"type":"subagent_dispatch","toolUseId":"a","skillScope":"s1"},
            {"type":"subagent_dispatch","toolUseId":"a","skillScope":"s2"},
            {"type":"subagent_dispatch","toolUseId":"b"},
            {"type":"subagent_dispatch","toolUseId":5,"skillScope":"s3"},
            {"type":"tool_use","toolUseId":"c","skillScope":"s4"},
        ]));
        let m = dispatch_skill_scopes(&t);
        assert_eq!(m.get("a"), Some(&Some(json!("s2"))));
        assert_eq!(m.get("b"), Some(&None));
        assert_eq!(m.len(), 2);
    }
}
