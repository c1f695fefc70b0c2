//! One recording read into the views people review: the tool calls with
//! their inputs and results, the questions and permission prompts with what
//! was answered, the transcript, the manifest, the assertions with their
//! verdicts, and the run's metadata. `reel diff` compares two of these;
//! `reel show` prints one.
//!
//! Everything is read through the existing homes: the cassette loader's
//! typed views, the evidence re-drive ([`RunRecord`]: answers, results,
//! transcript, usage), the one stream-json parser for tool inputs (the record
//! keeps only their digests), `replay` for the assertion verdicts, and the
//! `timeline` folds. Values pass through a [`Normalizer`] as they are read,
//! in a fixed order, so two recordings of one run get the same placeholders.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cassette::{BodyEncoding, Cassette};
use crate::evidence::RunRecord;
use crate::evidence::parse::{self, AgentEvent};
use crate::evidence::timeline;
use crate::mask::{Normalizer, Roots};
use crate::replay::{self, ReplayOptions};

/// One tool call (main agent and sub-agents, in recorded order).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The dispatching tool-use id of a sub-agent's call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    pub input: Value,
    /// `None`: no result was recorded for this call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The user turn (1-based) of a multi-turn recording whose events hold
    /// the call; absent for a one-prompt recording.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
}

/// One question or permission prompt and what the recording answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// `tool` | `question` | `dialog` | `elicit`.
    pub kind: String,
    /// The tool name (or `AskUserQuestion`).
    pub name: String,
    /// `allow` | `deny` | `answered` | ...
    pub decision: String,
    /// The asked sub-questions with their offered options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Value>,
    /// The delivered answers (`{question: label}`) or a denial's detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
    /// Whether the answer reached the model (`ok`, `errored`, `unobserved`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
}

/// One manifest entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    /// The inlined UTF-8 body (base64 bodies are compared by hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `utf8` | `base64` | absent (not inlined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// In the pre-run baseline (an input the run may have modified).
    pub pre_run: bool,
}

/// One `assert:` item and its verdict on this recording.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssertionVerdict {
    pub assertion: Value,
    pub pass: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `cassette-format` for pseudo-assertions about the cassette itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One timeline row for `reel show` (tool spans and skill windows).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineRow {
    /// `tool` | `skill`.
    pub kind: &'static str,
    pub name: String,
    pub calls: u64,
    /// Total milliseconds (masked when normalised).
    pub total_ms: Value,
}

/// A recording, read into its views.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recording {
    pub path: PathBuf,
    pub scenario: String,
    pub tools: Vec<ToolCall>,
    pub answers: Vec<Answer>,
    pub transcript: String,
    pub files: Vec<FileEntry>,
    pub assertions: Vec<AssertionVerdict>,
    /// The replay verdict, staleness aside (a property of the disk, not of
    /// the recording).
    pub verdict_pass: bool,
    pub timeline: Vec<TimelineRow>,
    /// Fingerprint, agent version, models, turns, usage, cost, ...
    pub meta: Map<String, Value>,
}

impl Recording {
    /// Reads `cassette` into its views, masking volatile values when
    /// `normalize` is set.
    pub fn read(cassette: &Cassette, normalize: bool) -> Recording {
        Recording::read_masked(cassette, normalize, &[])
    }

    /// [`Recording::read`], with the project's `masks` applied after the
    /// built-in ones.
    pub fn read_masked(
        cassette: &Cassette,
        normalize: bool,
        masks: &[crate::project::Mask],
    ) -> Recording {
        // One re-drive: replay's full run result carries the record's
        // evidence (results, decisions, deliveries, usage) beside the
        // verdicts; `diff` reads both sides, so a second drive per side
        // would be most of its time on a large cassette.
        let (replayed, calls) = rayon::join(
            || replay::replay_cassette(cassette, &ReplayOptions::default()),
            || tool_calls(cassette),
        );
        let (run, replayed) = match replayed {
            Ok(r) => (RunView::of_result(&r), Ok(r)),
            Err(e) => (
                RunView::of_record(RunRecord::from_cassette(cassette)),
                Err(e),
            ),
        };
        let init = init_line(cassette);
        let session_id = init
            .as_ref()
            .and_then(|i| i.get("session_id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let roots = if normalize {
            recorded_roots(cassette, &calls)
        } else {
            Default::default()
        };
        let mut norm = if normalize {
            Normalizer::new(roots, session_id.as_deref()).with_masks(masks.to_vec())
        } else {
            Normalizer::off()
        };

        // Order matters: placeholders are numbered by first appearance.
        let tools = tools_view(calls, &run, &mut norm);
        let answers = answers_view(&run, &mut norm);
        let transcript = norm.text(&run.transcript);
        let files = files_view(cassette, &mut norm);
        let (assertions, verdict_pass) = verdicts(replayed, &mut norm);
        let timeline = timeline_view(cassette, &mut norm);
        let meta = meta_view(cassette, &run, init.as_ref(), &mut norm);
        Recording {
            path: cassette.path.clone(),
            scenario: scenario_name(cassette),
            tools,
            answers,
            transcript,
            files,
            assertions,
            verdict_pass,
            timeline,
            meta,
        }
    }
}

/// What a recording concluded, from a replay already done: the verdicts
/// and the facts of [`Recording`] without its other views (what a page
/// about one recording needs, at the cost of the replay alone).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: String,
    pub assertions: Vec<AssertionVerdict>,
    /// Each assertion's evidence on pass (parallel to `assertions`; empty
    /// when there is none): what a page shows, never compared by `diff`.
    pub evidence: Vec<String>,
    pub verdict_pass: bool,
    pub meta: Map<String, Value>,
}

impl Outcome {
    /// `replayed` is `cassette`'s replay (its error when replay refused it).
    pub fn of(cassette: &Cassette, replayed: Result<replay::ReplayResult, String>) -> Outcome {
        let (run, replayed) = match replayed {
            Ok(r) => (RunView::of_result(&r), Ok(r)),
            Err(e) => (
                RunView::of_record(RunRecord::from_cassette(cassette)),
                Err(e),
            ),
        };
        let evidence = match &replayed {
            Ok(r) => r
                .assertions
                .iter()
                .filter(|a| a.source.as_deref() != Some("staleness"))
                .map(|a| a.evidence.clone().unwrap_or_default())
                .collect(),
            Err(_) => Vec::new(),
        };
        let mut norm = Normalizer::off();
        let (assertions, verdict_pass) = verdicts(replayed, &mut norm);
        let init = init_line(cassette);
        Outcome {
            scenario: scenario_name(cassette),
            assertions,
            evidence,
            verdict_pass,
            meta: meta_view(cassette, &run, init.as_ref(), &mut norm),
        }
    }
}

fn scenario_name(cassette: &Cassette) -> String {
    cassette
        .scenario()
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The assertions' verdicts, staleness aside (a property of the disk, not
/// of the recording), and the replay verdict they give.
fn verdicts<E: std::fmt::Display>(
    replayed: Result<replay::ReplayResult, E>,
    norm: &mut Normalizer,
) -> (Vec<AssertionVerdict>, bool) {
    let r = match replayed {
        Ok(r) => r,
        Err(e) => {
            let failure = AssertionVerdict {
                assertion: json!({}),
                pass: false,
                message: norm.text(&e.to_string()),
                source: Some("replay".into()),
            };
            return (vec![failure], false);
        }
    };
    let kept: Vec<_> = r
        .assertions
        .into_iter()
        .filter(|a| a.source.as_deref() != Some("staleness"))
        .collect();
    let result = r.facts.result.clone().unwrap_or_else(|| "error".into());
    let verdict = replay::verdict::compute(
        &replay::verdict::VerdictInput {
            result: &result,
            result_error_kind: r.facts.result_error_kind.as_deref(),
            assertions: &kept,
            stalled: r.facts.stalled,
            infra_errors: &r.facts.infra_errors,
            ..Default::default()
        },
        replay::Lane::Replay,
    );
    let views = kept
        .into_iter()
        .map(|a| AssertionVerdict {
            assertion: norm.value(&a.assertion),
            pass: a.pass,
            message: norm.text(&replay::materialise::mask_root_names(&a.message)),
            source: a.source,
        })
        .collect();
    (views, verdict.pass)
}

/// What the views read of the re-driven record, in the run result's JSON
/// spelling (`replay::run_result` is the one seam from record to JSON).
struct RunView {
    /// `toolUseId` → (is error, assertion text or display text).
    tool_results: std::collections::HashMap<String, (bool, String)>,
    decisions: Vec<Value>,
    deliveries: Vec<Value>,
    transcript: String,
    result: String,
    result_subtype: Option<String>,
    models: Vec<String>,
    usage: Option<Value>,
    turns: Option<Value>,
    cost_usd: Option<Value>,
}

impl RunView {
    fn of_result(r: &replay::ReplayResult) -> RunView {
        RunView::of_parts(&r.run, &r.facts, r.run.get("decisions"))
    }

    /// When replay refused the cassette (e.g. a malformed manifest): the
    /// record alone, through the same seam.
    fn of_record(run: RunRecord) -> RunView {
        let facts = replay::run_result::facts(run, true);
        let decisions = Value::Array(facts.decisions.clone());
        RunView::of_parts(&facts.fields, &facts, Some(&decisions))
    }

    fn of_parts(
        fields: &Map<String, Value>,
        facts: &replay::run_result::RecordFacts,
        decisions: Option<&Value>,
    ) -> RunView {
        let field = |k: &str| fields.get(k).or_else(|| facts.fields.get(k));
        let items = |k: &str| -> Vec<Value> {
            field(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let tool_results = facts
            .bulk
            .tool_results
            .iter()
            .filter_map(|t| {
                let id = t.tool_use_id.clone()?;
                let text = t.assert_text.as_deref().unwrap_or(t.text()).to_owned();
                Some((id, (t.is_error, text)))
            })
            .collect();
        let mut usage = field("usage").cloned();
        let turns = usage
            .as_mut()
            .and_then(Value::as_object_mut)
            .and_then(|u| u.shift_remove("turns"));
        let usage = usage.filter(|u| u.as_object().is_none_or(|o| !o.is_empty()));
        RunView {
            tool_results,
            decisions: decisions
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            deliveries: items("gateDeliveries"),
            transcript: facts.transcript.clone(),
            result: facts.result.clone().unwrap_or_else(|| "error".into()),
            result_subtype: facts.result_subtype.clone(),
            models: facts.models.clone(),
            usage,
            turns,
            cost_usd: field("cost").and_then(|c| c.get("usd")).cloned(),
        }
    }
}

/// The last `system/init` line, parsed (for `session_id`, the agent version
/// and the model, which the record does not keep).
fn init_line(cassette: &Cassette) -> Option<Map<String, Value>> {
    cassette
        .events()
        .filter(|l| l.contains("\"init\"") && l.contains("\"system\""))
        .filter_map(|l| serde_json::from_str::<Map<String, Value>>(&l).ok())
        .filter(|m| {
            m.get("type").and_then(Value::as_str) == Some("system")
                && m.get("subtype").and_then(Value::as_str) == Some("init")
        })
        .last()
}

/// A tool call as read: name, input, tool-use id, parent, user turn.
type CallRead = (String, Value, Option<String>, Option<String>, Option<usize>);

/// Tool calls with their full inputs, through the one stream-json parser,
/// each with the user turn (of a multi-turn recording) its line falls in.
fn tool_calls(cassette: &Cassette) -> Vec<CallRead> {
    use rayon::prelude::*;
    let finder = memchr::memmem::Finder::new(b"\"tool_use\"");
    let lines: Vec<std::borrow::Cow<'_, str>> = cassette.events().collect();
    let ranges = replay::turns::event_ranges(cassette);
    let turn_of = |i: usize| {
        // The marks are in event order: the first range not ending by `i`.
        let t = ranges.partition_point(|(_, end)| *end <= i);
        (ranges.get(t))
            .is_some_and(|(start, _)| *start <= i)
            .then_some(t + 1)
    };
    lines
        .par_iter()
        .enumerate()
        .with_min_len(512)
        .map(|(i, line)| {
            if !line.contains("\"assistant\"") || finder.find(line.as_bytes()).is_none() {
                return Vec::new();
            }
            let turn = turn_of(i);
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                return Vec::new();
            };
            parse::parse_message(v)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|e| match e {
                    AgentEvent::ToolUse {
                        name,
                        input,
                        parent,
                        tool_use_id,
                        ..
                    } => Some((name, input, tool_use_id, parent, turn)),
                    _ => None,
                })
                .collect()
        })
        .flatten()
        .collect()
}

/// The run's directories as the recording states them (the init `cwd`, the
/// skill base directories), through the one root finder; when the init
/// event named none, the work root a manifest path reveals.
fn recorded_roots(cassette: &Cassette, calls: &[CallRead]) -> Roots {
    let roots = Roots::stated(cassette.events());
    if roots.work.is_some() {
        return roots;
    }
    match inferred_work_root(cassette, calls) {
        Some(work) => {
            // The first init states the work root.
            let init = json!({"type": "system", "subtype": "init", "cwd": work}).to_string();
            Roots::stated(std::iter::once(init.into()).chain(cassette.events()))
        }
        None => roots,
    }
}

/// A run root from the manifest when the init event named none: the prefix
/// of a tool input's absolute path that ends in a manifest path.
fn inferred_work_root(cassette: &Cassette, calls: &[CallRead]) -> Option<String> {
    let artifacts = cassette.artifacts()?;
    for (_, input, ..) in calls {
        for key in ["file_path", "path"] {
            let Some(p) = input.get(key).and_then(Value::as_str) else {
                continue;
            };
            for a in &artifacts {
                if let Some(root) = p.strip_suffix(&format!("/{}", a.path))
                    && root.starts_with('/')
                {
                    return Some(root.to_owned());
                }
            }
        }
    }
    None
}

fn tools_view(calls: Vec<CallRead>, run: &RunView, norm: &mut Normalizer) -> Vec<ToolCall> {
    calls
        .into_iter()
        .map(|(name, input, id, parent, turn)| {
            let result = id.as_deref().and_then(|i| run.tool_results.get(i));
            ToolCall {
                name,
                id: id.as_deref().map(|i| norm.text(i)),
                parent: parent.as_deref().map(|p| norm.text(p)),
                input: norm.value(&input),
                is_error: result.map(|r| r.0),
                result: result.map(|r| norm.text(&r.1)),
                turn,
            }
        })
        .collect()
}

fn answers_view(run: &RunView, norm: &mut Normalizer) -> Vec<Answer> {
    let mut deliveries = run.deliveries.iter();
    let str_of = |d: &Value, k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    run.decisions
        .iter()
        .map(|d| {
            let (kind, decision) = (str_of(d, "kind"), str_of(d, "decision"));
            let delivery = (kind == "question" && decision == "answered")
                .then(|| deliveries.next().map(|g| str_of(g, "reason")))
                .flatten();
            Answer {
                name: str_of(d, "name"),
                questions: d.get("questions").map(|q| norm.value(q)),
                detail: d.get("detail").map(|v| norm.value(v)),
                kind,
                decision,
                delivery,
            }
        })
        .collect()
}

fn files_view(cassette: &Cassette, norm: &mut Normalizer) -> Vec<FileEntry> {
    let pre: std::collections::HashSet<String> = cassette
        .pre_run_paths()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut files: Vec<FileEntry> = cassette
        .artifacts()
        .unwrap_or_default()
        .into_iter()
        .map(|a| {
            let utf8 = a.body.is_some() && a.encoding != Some(BodyEncoding::Base64);
            FileEntry {
                pre_run: pre.contains(&a.path),
                path: norm.text(&a.path),
                bytes: a.bytes,
                sha256: a.sha256,
                text: if utf8 {
                    a.body.as_deref().map(|b| norm.text(b))
                } else {
                    None
                },
                encoding: match (&a.body, a.encoding) {
                    (None, _) => None,
                    (Some(_), Some(BodyEncoding::Base64)) => Some("base64"),
                    (Some(_), _) => Some("utf8"),
                },
                truncated: a
                    .truncation_reason
                    .map(|r| {
                        serde_json::to_value(r)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    })
                    .or_else(|| a.truncated.filter(|t| *t).map(|_| "size".to_owned())),
                link: a.link_kind.map(|k| format!("{k:?}").to_lowercase()),
            }
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

fn timeline_view(cassette: &Cassette, norm: &mut Normalizer) -> Vec<TimelineRow> {
    let Some(entries) = cassette.timeline_entries() else {
        return Vec::new();
    };
    let mut rows: Vec<TimelineRow> = timeline::tool_durations(&entries)
        .0
        .into_iter()
        .map(|(name, d)| TimelineRow {
            kind: "tool",
            name,
            calls: d.calls,
            total_ms: duration(norm, crate::js::number::json_value(d.total_ms)),
        })
        .collect();
    for w in timeline::skill_activity(&entries) {
        rows.push(TimelineRow {
            kind: "skill",
            name: w.skill_label(),
            calls: w.tool_call_count,
            total_ms: duration(norm, crate::js::number::json_value(w.duration_ms)),
        });
    }
    rows
}

fn duration(norm: &Normalizer, v: Value) -> Value {
    if norm.enabled() && !v.is_null() {
        Value::String("<duration>".into())
    } else {
        v
    }
}

fn meta_view(
    cassette: &Cassette,
    run: &RunView,
    init: Option<&Map<String, Value>>,
    norm: &mut Normalizer,
) -> Map<String, Value> {
    let mut m = Map::new();
    let put = |m: &mut Map<String, Value>, k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.to_owned(), v);
        }
    };
    let doc = &cassette.doc;
    put(&mut m, "cassetteVersion", Some(json!(cassette.version)));
    put(&mut m, "result", Some(json!(run.result)));
    put(
        &mut m,
        "resultSubtype",
        run.result_subtype.clone().map(Value::from),
    );
    put(
        &mut m,
        "agentVersion",
        init.and_then(|i| i.get("claude_code_version")).cloned(),
    );
    put(
        &mut m,
        "models",
        (!run.models.is_empty()).then(|| json!(run.models)),
    );
    put(&mut m, "turns", run.turns.clone());
    put(&mut m, "usage", run.usage.clone());
    put(&mut m, "costUsd", run.cost_usd.clone());
    put(
        &mut m,
        "effectiveFidelity",
        doc.get("effectiveFidelity").cloned(),
    );
    put(&mut m, "fingerprint", doc.get("fingerprint").cloned());
    // A regrade changes only the frozen verdicts (`crate::judge::freeze`).
    put(
        &mut m,
        crate::judge::freeze::CASSETTE_KEY,
        doc.get(crate::judge::freeze::CASSETTE_KEY).cloned(),
    );
    put(
        &mut m,
        "sessionFingerprint",
        doc.get("sessionFingerprint").cloned(),
    );
    // How the run was confined (`environment.sandbox`) is not what it
    // recorded: a re-recording under other sandbox layers is the same
    // recording (the layers are in every result, and in the cassette).
    let environment = doc.get("environment").cloned().map(|mut e| {
        if let Some(m) = e.as_object_mut() {
            m.shift_remove("sandbox");
        }
        e
    });
    put(&mut m, "environment", environment);
    put(
        &mut m,
        "userVisibleRoots",
        doc.get("userVisibleRoots").cloned(),
    );
    put(&mut m, "preRunPaths", doc.get("preRunPaths").cloned());
    put(&mut m, "preRunOrigin", doc.get("preRunOrigin").cloned());
    put(&mut m, "startedAt", doc.get("timelineHeader").cloned());
    // The frozen scenario minus `assert` (the assertions view owns it).
    let mut scenario = cassette.scenario().clone();
    scenario.shift_remove("assert");
    put(&mut m, "scenario", Some(Value::Object(scenario)));
    match norm.value(&Value::Object(m)) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
