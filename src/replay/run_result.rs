//! The one seam between the evidence module's [`RunRecord`] and what replay
//! reports about a run (the run-result fields of the JSON envelope, the text
//! footer's facts, the cassette-format problems found while re-driving).
//!
//! Nothing else in replay reads the record. The fields folded from the
//! cassette's `timeline` ([`timeline_fields`]) are added here too, so the
//! run-result JSON has one assembler. This module deliberately does not
//! parse `events` itself: the stream-json parser has exactly one home,
//! `crate::evidence`.

use std::io::Write;

use serde_json::{Map, Value, json};

use crate::evidence::timeline;
use crate::evidence::{
    ContextData, ContextEvent, FileToolAttempt, HookEvent, RunRecord, ToolResult,
};

/// What replay needs to know about a re-driven run.
#[derive(Debug, Clone, Default)]
pub struct RecordFacts {
    /// `"success"` / `"error"`; `None` = no `result` line (reads as error).
    pub result: Option<String>,
    /// `resultErrorKind` (`usage_limit`, `transport`, ...).
    pub result_error_kind: Option<String>,
    pub result_subtype: Option<String>,
    /// `errorSource` (`no_result`, ...).
    pub error_source: Option<String>,
    /// Top-level assistant text, `\n`-joined (the footer's transcript dump).
    pub transcript: String,
    /// Main-agent tool calls (the footer's `N tools`).
    pub tool_count: usize,
    /// Sub-agent dispatches (the footer's `· N sub-agents`).
    pub subagent_count: usize,
    /// Distinct models seen, in order.
    pub models: Vec<String>,
    /// The `Skill` tool (or an available skill) was offered to the agent.
    pub skill_offered: bool,
    /// A `Skill` tool_use happened on the main agent.
    pub skill_invoked: bool,
    /// `stalledOnQuestion`.
    pub stalled: bool,
    /// `infra_error` events: `(message, source)`.
    pub infra_errors: Vec<(String, Option<String>)>,
    /// Cassette-format problems found while re-driving, in the order of spec
    /// §2.5 step 16 items 3–9 (each becomes a `replay_protocol_fidelity`
    /// pseudo-assertion).
    pub format_problems: Vec<String>,
    /// Recorded decisions (`decisions[]` of the run result), as JSON.
    pub decisions: Vec<Value>,
    /// Further run-result fields (`toolCounts`, `toolErrors`, `subagents`,
    /// `context`, `usage`, `cost`, ...) in the original's key spelling; merged
    /// into the JSON result as they are. The [`Bulk`] keys hold a `null`
    /// placeholder (their place in the key order); their values are `bulk`.
    pub fields: Map<String, Value>,
    /// The two bulkiest run-result lists, kept typed.
    pub bulk: Bulk,
}

/// The run result's two bulkiest lists (`contextEvents`, `toolResults`: on a
/// long recording most of the result), kept typed rather than converted to
/// `Value`s: the JSON envelope serialises them in place, so their JSON never
/// exists in memory as a tree beside the record it came from.
#[derive(Debug, Clone, Default)]
pub struct Bulk {
    pub context_events: Vec<ContextEvent>,
    pub tool_results: Vec<std::sync::Arc<ToolResult>>,
}

impl Bulk {
    pub const CONTEXT_EVENTS: &'static str = "contextEvents";
    pub const TOOL_RESULTS: &'static str = "toolResults";

    /// The value of a bulk key, serialised in place (`None`: not a bulk key).
    pub fn field(&self, key: &str) -> Option<BulkField<'_>> {
        match key {
            Bulk::CONTEXT_EVENTS => Some(BulkField::ContextEvents(&self.context_events)),
            Bulk::TOOL_RESULTS => Some(BulkField::ToolResults(&self.tool_results)),
            _ => None,
        }
    }
}

/// One [`Bulk`] list, as the run result writes it.
pub enum BulkField<'a> {
    ContextEvents(&'a [ContextEvent]),
    ToolResults(&'a [std::sync::Arc<ToolResult>]),
}

impl serde::Serialize for BulkField<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BulkField::ContextEvents(items) => s.collect_seq(*items),
            BulkField::ToolResults(items) => s.collect_seq(items.iter().map(|r| &**r)),
        }
    }
}

impl BulkField<'_> {
    /// Writes the list as compact JSON text to `out`: exactly what its
    /// serde form writes, but turned into text on the pool, a chunk of
    /// elements at a time, and written in order as the chunks come. On a
    /// 50,000-event run these lists are most of a JSON report, and writing
    /// them on one core while the other idled was most of what JSON mode
    /// cost over text mode.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        match self {
            BulkField::ContextEvents(items) => write_on_the_pool(items, out),
            BulkField::ToolResults(items) => write_on_the_pool(items, out),
        }
    }
}

/// A JSON array of `items`, each element's text made on the pool
/// ([`BulkField::write_json`]). Only a few windows of text are held at once
/// (the report's size never sits in memory), and the caller's thread does
/// all the writing (a locked stdout cannot move to the pool).
fn write_on_the_pool<T: JsonText>(items: &[T], out: &mut dyn Write) -> std::io::Result<()> {
    use rayon::prelude::*;
    /// Elements per piece of text (a few hundred KB of a large run's
    /// tool results), and pieces made at once.
    const CHUNK: usize = 128;
    const WINDOW: usize = 8;
    let text_of = |chunk: &[T]| -> serde_json::Result<Vec<u8>> {
        // Sized up front: growing a piece of a few hundred KB moved it
        // (twice for a chunk of large tool results).
        let room = chunk.iter().map(|item| item.json_len_hint() + 1).sum();
        let mut text = Vec::with_capacity(room);
        for (i, item) in chunk.iter().enumerate() {
            if i > 0 {
                text.push(b',');
            }
            item.write_json_text(&mut text)?;
        }
        T::written(chunk);
        Ok(text)
    };
    out.write_all(b"[")?;
    if rayon::current_thread_index().is_some() {
        // On a pool thread, waiting for the pool could wait for itself.
        for (i, chunk) in items.chunks(CHUNK).enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(&text_of(chunk)?)?;
        }
        return out.write_all(b"]");
    }
    // One window waits while the next is made and the one before written.
    let (tx, rx) = std::sync::mpsc::sync_channel::<serde_json::Result<Vec<Vec<u8>>>>(1);
    rayon::in_place_scope(|scope| {
        scope.spawn(move |_| {
            for window in items.chunks(CHUNK * WINDOW) {
                let texts: serde_json::Result<Vec<Vec<u8>>> =
                    window.par_chunks(CHUNK).map(text_of).collect();
                let failed = texts.is_err();
                // A closed channel: the writer stopped on an error.
                if tx.send(texts).is_err() || failed {
                    return;
                }
            }
        });
        let mut first = true;
        for texts in rx {
            for text in texts? {
                if !std::mem::take(&mut first) {
                    out.write_all(b",")?;
                }
                out.write_all(&text)?;
            }
        }
        Ok::<(), std::io::Error>(())
    })?;
    out.write_all(b"]")
}

/// An element of a bulk list as its JSON text (its serde form's text).
trait JsonText: Sync {
    fn write_json_text(&self, out: &mut Vec<u8>) -> serde_json::Result<()>;
    /// About how many bytes it writes.
    fn json_len_hint(&self) -> usize;
    /// Called once `items` are written.
    fn written(items: &[Self])
    where
        Self: Sized,
    {
        let _ = items;
    }
}

impl JsonText for std::sync::Arc<ToolResult> {
    fn write_json_text(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        self.write_json(out);
        Ok(())
    }

    fn json_len_hint(&self) -> usize {
        ToolResult::json_len_hint(self)
    }
}

impl JsonText for ContextEvent {
    fn write_json_text(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        self.write_json(out)
    }

    fn json_len_hint(&self) -> usize {
        ContextEvent::json_len_hint(self)
    }

    /// The pages of the cassette their kept lines were read from again go
    /// back (a report writes 10 MB of them on a long run).
    fn written(items: &[Self]) {
        fn kept(e: &ContextEvent) -> Option<&crate::cassette::KeptToken> {
            match &e.data {
                ContextData::Stored(token) => Some(token),
                _ => None,
            }
        }
        if let (Some(first), Some(last)) = (
            items.iter().find_map(kept),
            items.iter().rev().find_map(kept),
        ) {
            crate::cassette::KeptToken::release_between(first, last);
        }
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn opt(o: &mut Map<String, Value>, key: &str, v: &Option<String>) {
    if let Some(v) = v {
        o.insert(key.into(), json!(v));
    }
}

/// `paths: {file_path?, path?}` as the original records it.
fn paths(file_path: &Option<String>, path: &Option<String>) -> Option<Value> {
    let mut o = Map::new();
    opt(&mut o, "file_path", file_path);
    opt(&mut o, "path", path);
    (!o.is_empty()).then_some(Value::Object(o))
}

/// `[(name, n)]` as an ordered JSON object.
fn counts(pairs: &[(String, u64)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(*v)))
            .collect(),
    )
}

/// Reads the facts replay reports out of a run record. With `with_fields`
/// false the run-result evidence fields (`toolResults`, `contextEvents`, ...)
/// are not built: the text report never shows them, and on a large cassette
/// they cost more than the evaluation.
pub fn facts(mut run: RunRecord, with_fields: bool) -> RecordFacts {
    let result = run.result.as_str().to_string();
    // `resultErrorKind`: the evidence module's classification of an
    // `is_error` result (`usage_limit` / `transport` / `agent`), as the
    // original re-derives it during the re-drive.
    let result_error_kind = run.result_error_kind.map(str::to_string);
    let (f, bulk) = if with_fields {
        run_fields(&mut run)
    } else {
        (Map::new(), Bulk::default())
    };
    RecordFacts {
        result: Some(result),
        result_error_kind,
        result_subtype: run.result_subtype.clone(),
        error_source: run.error_source.clone(),
        // Moved, not copied: it can be tens of MB.
        transcript: std::mem::take(&mut run.transcript),
        tool_count: run.tool_calls_total() as usize,
        subagent_count: run.subagents.len(),
        models: run.models.clone(),
        skill_offered: run.init_tools.iter().any(|t| t == "Skill")
            || run
                .init
                .as_ref()
                .and_then(|i| i.skills.as_ref())
                .is_some_and(|s| !s.is_empty()),
        skill_invoked: !run.skills_invoked.is_empty(),
        stalled: run.stalled_on_question,
        infra_errors: run
            .infra_errors
            .iter()
            .map(|e| (e.message.clone(), e.source.clone()))
            .collect(),
        format_problems: run.format_findings(),
        decisions: run
            .decisions
            .iter()
            .map(|d| {
                let mut v = to_value(d);
                if let Some(o) = v.as_object_mut() {
                    o.insert("rationale".into(), json!("recorded"));
                }
                v
            })
            .collect(),
        fields: f,
        bulk,
    }
}

/// One `subagents[]` entry in the original's key order: the dispatch's own
/// fields, then the late `resolvedAgentType` / `resolvedModel` in the order
/// they arrived, then the output.
fn subagent_json(s: &crate::evidence::Subagent) -> Value {
    let mut o = Map::new();
    o.insert("toolUseId".into(), json!(s.tool_use_id));
    opt(&mut o, "parentToolUseId", &s.parent_tool_use_id);
    o.insert("dispatchAgentType".into(), json!(s.dispatch_agent_type));
    if s.dispatch_type_omitted {
        o.insert("dispatchTypeOmitted".into(), json!(true));
    }
    o.insert("declaredTools".into(), to_value(&s.declared_tools));
    o.insert(
        "toolsUsed".into(),
        s.tools_used
            .iter()
            .map(|(name, count)| json!({"name": name, "count": count}))
            .collect(),
    );
    o.insert("referencesRead".into(), to_value(&s.references_read));
    opt(&mut o, "description", &s.description);
    opt(&mut o, "prompt", &s.prompt);
    opt(&mut o, "dispatchModel", &s.dispatch_model);
    if s.resolved_type_first || !s.meta_seen {
        opt(&mut o, "resolvedAgentType", &s.resolved_agent_type);
        opt(&mut o, "resolvedModel", &s.resolved_model);
    } else {
        opt(&mut o, "resolvedModel", &s.resolved_model);
        opt(&mut o, "resolvedAgentType", &s.resolved_agent_type);
    }
    opt(&mut o, "output", &s.output);
    if s.output_truncated {
        o.insert("outputTruncated".into(), json!(true));
    }
    Value::Object(o)
}

/// The run-result evidence fields, in the original's key spelling. The
/// record's two bulkiest lists are moved into [`Bulk`], not converted.
fn run_fields(run: &mut RunRecord) -> (Map<String, Value>, Bulk) {
    // The keys in the original's order; the bulk fields' places are held
    // by `null` until the writer streams them.
    let mut f = Map::new();
    tool_fields(run, &mut f);
    session_fields(run, &mut f);
    let bulk = Bulk {
        context_events: std::mem::take(&mut run.context_events),
        tool_results: std::mem::take(&mut run.tool_results),
    };
    f.insert(Bulk::CONTEXT_EVENTS.into(), Value::Null);
    file_fields(run, &mut f);
    f.insert(Bulk::TOOL_RESULTS.into(), Value::Null);
    error_fields(run, &mut f);
    (f, bulk)
}

/// `finalMessage` to `tasks`: what the run said and which tools it used.
fn tool_fields(run: &mut RunRecord, f: &mut Map<String, Value>) {
    if let Some(t) = &run.result_text {
        f.insert("finalMessage".into(), Value::from(t.clone()));
    }
    if !run.references_read.is_empty() {
        f.insert(
            "referencesRead".into(),
            to_value(&std::mem::take(&mut run.references_read)),
        );
    }
    f.insert("toolCounts".into(), counts(&run.tool_counts));
    if !run.web_searches.is_empty() {
        f.insert(
            "webSearches".into(),
            to_value(&std::mem::take(&mut run.web_searches)),
        );
    }
    // Omitted when empty (`rec.models.length ? … : undefined`).
    if !run.models.is_empty() {
        f.insert("models".into(), to_value(&run.models));
    }
    // Omitted when empty, like the original (`rec.thinking.length ? … :
    // undefined`); the count is always there.
    if !run.thinking.is_empty() {
        f.insert(
            "thinking".into(),
            to_value(&run.thinking.iter().map(|b| &**b).collect::<Vec<_>>()),
        );
    }
    f.insert("thinkingElided".into(), Value::from(run.thinking_elided));
    f.insert(
        "toolErrors".into(),
        Value::Object(
            run.tool_errors
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    );
    if let Some(mu) = &run.model_usage {
        f.insert("modelUsage".into(), mu.clone());
    }
    f.insert(
        "redundantToolCalls".into(),
        to_value(&run.redundant_tool_calls),
    );
    f.insert("tasks".into(), to_value(&run.tasks));
}

/// `context` to `skillToolAvailable`: the session, its sub-agents and cost.
fn session_fields(run: &mut RunRecord, f: &mut Map<String, Value>) {
    // `context` is `{}` until a `system/init` line arrives (evidence
    // unavailable, not an empty inventory); a truncated re-drive's empty
    // record carries `tools`/`mcpServers` but no `availableSkills`.
    f.insert("context".into(), context_json(run));
    f.insert("gateDeliveries".into(), to_value(&run.gate_deliveries));
    let subagents: Vec<Value> = run.subagents.iter().map(subagent_json).collect();
    f.insert("subagents".into(), Value::Array(subagents));
    if let Some(usage) = usage_json(run) {
        f.insert("usage".into(), usage);
    }
    if let Some(cost) = cost_json(run) {
        f.insert("cost".into(), cost);
    }
    f.insert("skillsInvoked".into(), to_value(&run.skills_invoked));
    f.insert(
        "skillToolAvailable".into(),
        Value::Bool(run.init_tools.iter().any(|t| t == "Skill")),
    );
}

/// `hookEvents` to `presentedFiles`: hooks and what the run did to files.
fn file_fields(run: &RunRecord, f: &mut Map<String, Value>) {
    if let Some(h) = &run.hook_events {
        let events = h.iter().map(hook_event_json).collect();
        f.insert("hookEvents".into(), Value::Array(events));
    }
    let attempts = run
        .file_tool_attempts
        .iter()
        .map(file_attempt_json)
        .collect();
    f.insert("fileToolAttempts".into(), Value::Array(attempts));
    if let Some(p) = &run.path_denials {
        f.insert("pathDenials".into(), to_value(p));
    }
    f.insert("presentedFiles".into(), to_value(&run.presented_files));
}

/// `infraErrors` and `evidenceErrors`, each only when there are any.
fn error_fields(run: &RunRecord, f: &mut Map<String, Value>) {
    if !run.infra_errors.is_empty() {
        f.insert("infraErrors".into(), to_value(&run.infra_errors));
    }
    let ee = run.evidence_errors;
    if ee.task_tracking + ee.web_search_parse + ee.present_files_malformed + ee.protocol_malformed
        > 0
    {
        f.insert("evidenceErrors".into(), to_value(&ee));
    }
}

/// `context`: `{}` until a `system/init` line arrives (evidence
/// unavailable, not an empty inventory); a truncated re-drive's empty
/// record carries `tools`/`mcpServers` but no `availableSkills`.
fn context_json(run: &RunRecord) -> Value {
    let mut context = Map::new();
    if let Some(init) = &run.init {
        context.insert("tools".into(), to_value(&init.tools));
        context.insert("mcpServers".into(), to_value(&init.mcp_servers));
        if let Some(skills) = &init.skills {
            context.insert(
                "availableSkills".into(),
                skills.iter().map(|id| json!({"id": id})).collect(),
            );
        }
    }
    Value::Object(context)
}

/// `usage` with the turn count, when the run reported either.
fn usage_json(run: &RunRecord) -> Option<Value> {
    if run.usage.is_none() && run.turns.is_none() {
        return None;
    }
    let mut usage = run.usage.clone().unwrap_or_else(|| json!({}));
    if let (Some(o), Some(t)) = (usage.as_object_mut(), run.turns) {
        // `num_turns` is an integer on the wire; keep it one.
        o.insert("turns".into(), crate::js::number::json_value(t));
    }
    Some(usage)
}

/// `cost` merges `usd` (result line) and `raw` (api_metrics line), keys in
/// the order they were first set; `None` when neither was.
fn cost_json(run: &mut RunRecord) -> Option<Value> {
    let mut cost = Map::new();
    let raw = run.cost_raw.take();
    if let (true, Some(r)) = (run.cost_raw_first, &raw) {
        cost.insert("raw".into(), r.clone());
    }
    if let Some(c) = run.cost_usd {
        cost.insert("usd".into(), json!(c));
    }
    if let (false, Some(r)) = (run.cost_raw_first, raw) {
        cost.insert("raw".into(), r);
    }
    (!cost.is_empty()).then_some(Value::Object(cost))
}

fn hook_event_json(e: &HookEvent) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!("hook_event"));
    o.insert("callbackId".into(), json!(e.callback_id));
    o.insert("decision".into(), json!(e.decision));
    opt(&mut o, "reason", &e.reason);
    opt(&mut o, "tool", &e.tool);
    if let Some(p) = paths(&e.file_path, &e.path) {
        o.insert("paths".into(), p);
    }
    opt(&mut o, "toolUseId", &e.tool_use_id);
    opt(&mut o, "agentId", &e.agent_id);
    Value::Object(o)
}

fn file_attempt_json(a: &FileToolAttempt) -> Value {
    let mut o = Map::new();
    o.insert("tool".into(), json!(a.tool));
    o.insert(
        "paths".into(),
        paths(&a.file_path, &a.path).unwrap_or_else(|| json!({})),
    );
    opt(&mut o, "gatePath", &a.gate_path);
    o.insert("origin".into(), json!(a.origin));
    opt(&mut o, "parentToolUseId", &a.parent_tool_use_id);
    opt(&mut o, "toolUseId", &a.tool_use_id);
    Value::Object(o)
}

/// The run-result fields folded from the cassette's `timeline`
/// (`toolDurations`, `skillActivity`, `subagents[].attributedSkillId`). The
/// original sets them only when the cassette has a timeline; without one the
/// keys are absent (`undefined`) and `subagents` is left as it is.
pub fn timeline_fields(fields: &mut Map<String, Value>, folds: timeline::TimelineFolds) {
    fields.insert("toolDurations".into(), to_value(&folds.tool_durations));
    fields.insert("skillActivity".into(), to_value(&folds.skill_activity));
    let Some(Value::Array(subagents)) = fields.get_mut("subagents") else {
        return;
    };
    if subagents.is_empty() {
        return;
    }
    let scopes = folds.dispatch_scopes;
    for sub in subagents.iter_mut().filter_map(Value::as_object_mut) {
        // `{...sa, attributedSkillId}`: an undefined scope writes no key.
        let scope = sub
            .get("toolUseId")
            .and_then(Value::as_str)
            .and_then(|id| scopes.get(id))
            .cloned()
            .flatten();
        match scope {
            Some(s) => {
                sub.insert("attributedSkillId".into(), s);
            }
            None => {
                sub.shift_remove("attributedSkillId");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cassette large enough that a JSON replay keeps its carried lines
    /// where the file holds it reports what a replay of the same cassette
    /// fully loaded reports, byte for byte, whatever the lines' shapes.
    #[test]
    fn a_large_cassettes_kept_lines_report_what_its_loaded_lines_report() {
        use crate::cassette::{Cassette, KEPT_FILE_MIN};
        use crate::evidence::ContextData;
        use crate::replay::{ReplayOptions, replay_cassette, replay_file};
        let carried = [
            r#"{"type":"system","subtype":"thinking_tokens","n":7,"pad":"a\nb \"q\" \\ \/ é"}"#,
            r#"{"type":"system","subtype":"s","x":{"b":[1,"\u00e9"]},"n":1E5}"#,
            r#"{"type":"system","subtype":"s","k":1,"k":2}"#,
            r#"{ "type" : "system", "subtype" : "s", "t": true }"#,
        ];
        let text = "x".repeat(900);
        let mut events =
            vec![json!({"type":"system","subtype":"init","tools":["Bash"]}).to_string()];
        let (mut i, mut bytes) = (0, 0);
        while bytes < KEPT_FILE_MIN + (1 << 20) {
            events.push(carried[i % carried.len()].to_owned());
            events.push(
                json!({"type":"assistant","message":{"content":[{"type":"text","text":text}]}})
                    .to_string(),
            );
            bytes += events[events.len() - 2..]
                .iter()
                .map(String::len)
                .sum::<usize>();
            i += 1;
        }
        events.push(json!({"type":"result","subtype":"success","is_error":false}).to_string());
        let doc = json!({
            "cassetteVersion": 12,
            "scenario": {"name": "big", "session": "(inline)", "prompt": "p",
                         "assert": [{"result": "success"}]},
            "events": events,
            "controlOut": [],
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.cassette.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        let opts = ReplayOptions::default();
        let lean = replay_file(&path, &opts);
        assert!(lean.error.is_none(), "{:?}", lean.error);
        let kept = lean.facts.bulk.context_events.iter();
        assert!(
            kept.filter(|e| matches!(e.data, ContextData::Stored(_)))
                .count()
                > 1000,
            "carried lines kept in the file"
        );
        let full = replay_cassette(&Cassette::load(&path).unwrap(), &opts).unwrap();
        let report = |r: &crate::replay::ReplayResult| {
            let mut out = Vec::new();
            crate::report::json::write_envelope(std::slice::from_ref(r), &mut out).unwrap();
            let v: Value = serde_json::from_slice(&out).unwrap();
            v["results"][0]["contextEvents"].clone()
        };
        let (lean, full) = (report(&lean), report(&full));
        assert_eq!(lean.as_array().map(Vec::len), Some(i));
        assert_eq!(lean, full);
    }

    fn fields(lines: &[&str]) -> Map<String, Value> {
        let lines: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        facts(RunRecord::from_taken_events(lines, None), true).fields
    }

    #[test]
    fn thinking_is_absent_when_empty_and_its_count_always_there() {
        let f = fields(&[r#"{"type":"result","is_error":false}"#]);
        assert!(!f.contains_key("thinking"));
        assert_eq!(f.get("thinkingElided"), Some(&json!(0)));
    }

    #[test]
    fn thinking_blocks_are_written_redacted_or_plain() {
        let f = fields(&[
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":"sig"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"plan"}]}}"#,
        ]);
        assert_eq!(
            serde_json::to_string(&f["thinking"]).unwrap(),
            r#"[{"text":"","redacted":true},{"text":"plan"}]"#
        );
        assert_eq!(f.get("thinkingElided"), Some(&json!(0)));
    }

    #[test]
    fn timeline_fields_fold_and_attribute_sub_agents() {
        let mut f = fields(&[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"D1","name":"Agent","input":{"subagent_type":"x"}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"D2","name":"Agent","input":{"subagent_type":"y"}}]}}"#,
        ]);
        let timeline = json!([
            {"seq":0,"ts":5,"type":"tool_use","toolUseId":"D1","name":"Agent","skillScope":"s:one"},
            {"seq":1,"ts":6,"type":"subagent_dispatch","toolUseId":"D1","skillScope":"s:one"},
            {"seq":2,"ts":9,"type":"tool_result","toolUseId":"D1"},
            {"seq":3,"ts":10,"type":"subagent_dispatch","toolUseId":"D2"},
        ]);
        let entries = crate::cassette::TimelineEntry::parse_all(&timeline.to_string()).unwrap();
        timeline_fields(&mut f, timeline::TimelineFolds::of(&entries));
        assert_eq!(
            f["toolDurations"],
            json!({"Agent": {"calls": 1, "totalMs": 4, "maxMs": 4}})
        );
        assert_eq!(
            f["skillActivity"],
            json!([
                {"skillId":"s:one","invocationSeq":0,"toolCounts":{"Agent":1},"toolCallCount":1,"dispatchCount":1,"durationMs":1},
                {"skillId":"(root)","invocationSeq":3,"toolCounts":{},"toolCallCount":0,"dispatchCount":1,"durationMs":0},
            ])
        );
        let subs = f["subagents"].as_array().unwrap();
        assert_eq!(subs[0]["attributedSkillId"], json!("s:one"));
        assert!(
            subs[1].get("attributedSkillId").is_none(),
            "a dispatch entry without skillScope attributes nothing"
        );
    }

    #[test]
    fn an_empty_timeline_still_writes_empty_folds() {
        let mut f = fields(&[]);
        timeline_fields(&mut f, timeline::TimelineFolds::of(&[]));
        assert_eq!(f["toolDurations"], json!({}));
        assert_eq!(f["skillActivity"], json!([]));
    }
}
