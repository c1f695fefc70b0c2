//! The rerun view, from the rerun's published JSON envelope
//! (`reel rerun --output-format json`, schema/rerun.json): per cassette, the
//! outcome, the divergences side by side (recorded | now, masked values
//! marked), the fresh run's assertions, then the recording's own view.
//!
//! Reading the envelope rather than rerunning keeps one design for every
//! caller: CI keeps the JSON as an artifact, a matrix cell links to it, and
//! the page can be rebuilt later without the agent.

use std::path::Path;

use askama::Template;
use serde::Deserialize;
use serde_json::Value;

use super::conversation::{Node, Row};
use super::recording::{AssertionView, Preview, RecordingView};
use super::text::{Segment, segments};
use super::{Chrome, Options, RenderError};
use crate::cassette::Cassette;

/// A rerun envelope that could not be read, with the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct InputError {
    pub file: String,
    pub message: String,
}

#[derive(Deserialize)]
struct Envelope {
    command: String,
    results: Vec<ResultJson>,
}

#[derive(Deserialize)]
struct ResultJson {
    file: String,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    assertions: Vec<Value>,
    #[serde(default)]
    rerun: Option<RerunJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RerunJson {
    outcome: String,
    #[serde(default)]
    failures: Vec<String>,
    #[serde(default)]
    divergences: Vec<DivergenceJson>,
    replies: Counts,
    agent_version: Versions,
    #[serde(default)]
    notes: Vec<String>,
    /// A multi-turn recording's user turn of the first divergence.
    #[serde(default)]
    divergence_turn: Option<u64>,
}

#[derive(Deserialize)]
struct Counts {
    recorded: u64,
    served: u64,
}

#[derive(Deserialize)]
struct Versions {
    recorded: Option<String>,
    now: Option<String>,
}

#[derive(Deserialize)]
struct DivergenceJson {
    conversation: String,
    turn: Option<u64>,
    tool: Option<String>,
    kind: String,
    recorded: String,
    now: String,
    #[serde(default, rename = "userTurn")]
    user_turn: Option<u64>,
}

/// One rerun cassette as the page shows it.
pub struct RerunView {
    pub file: String,
    pub anchor: String,
    /// `pass` | `pass_diverged` | `fail` | `error`.
    pub outcome: String,
    pub error: Option<String>,
    pub facts: Vec<(String, String)>,
    pub failures: Vec<String>,
    pub notes: Vec<String>,
    pub divergences: Vec<DivergenceView>,
    pub assertions: Vec<AssertionView>,
    pub recording: Option<RecordingView>,
    /// Why the recording is not shown.
    pub recording_note: Option<String>,
}

/// One divergence, both sides split into plain and masked runs.
pub struct DivergenceView {
    pub kind: String,
    pub place: String,
    pub recorded: Vec<Segment>,
    pub now: Vec<Segment>,
}

#[derive(Template)]
#[template(path = "rerun.html")]
struct Page<'a> {
    chrome: Chrome,
    source: &'a str,
    reruns: &'a [RerunView],
}

/// The rerun view of the envelope at `path`. Each result's cassette is
/// looked up as recorded (relative to the working directory), then beside
/// the envelope.
pub fn render(path: &Path, opts: &Options) -> Result<Result<String, RenderError>, InputError> {
    let reruns = read(path, opts)?;
    let source = path.display().to_string();
    Ok(Page {
        chrome: Chrome::new(format!("reel report — rerun {source}")),
        source: &source,
        reruns: &reruns,
    }
    .render())
}

/// The views of the envelope at `path`.
pub fn read(path: &Path, opts: &Options) -> Result<Vec<RerunView>, InputError> {
    let err = |message: String| InputError {
        file: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let env: Envelope = serde_json::from_str(&text).map_err(|e| {
        err(format!(
            "not a rerun JSON envelope ({e}); write one with `reel rerun CASSETTE --output-format json > rerun.json`"
        ))
    })?;
    if env.command != "rerun" {
        return Err(err(format!(
            "`command` is {:?}, not \"rerun\"; `--rerun` reads what `reel rerun --output-format json` writes",
            env.command
        )));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    Ok(env
        .results
        .into_iter()
        .enumerate()
        .map(|(i, r)| view(r, i, base, opts))
        .collect())
}

fn view(r: ResultJson, i: usize, base: &Path, opts: &Options) -> RerunView {
    let anchor = format!("rerun-{}", i + 1);
    let (recording, recording_note) = match recorded(&r.file, base) {
        Ok(c) => (
            Some(RecordingView::read(&c, opts, &format!("{anchor}-rec"))),
            None,
        ),
        Err(why) => (None, Some(why)),
    };
    let error = r.error.as_ref().map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .map_or_else(|| e.to_string(), str::to_owned)
    });
    let assertions = r.assertions.iter().map(assertion).collect();
    let Some(rerun) = r.rerun else {
        return RerunView {
            file: r.file,
            anchor,
            outcome: "error".into(),
            error: error.or_else(|| Some("the result has neither `rerun` nor `error`".into())),
            facts: Vec::new(),
            failures: Vec::new(),
            notes: Vec::new(),
            divergences: Vec::new(),
            assertions,
            recording,
            recording_note,
        };
    };
    RerunView {
        facts: facts(&rerun, &r.assertions),
        divergences: rerun.divergences.iter().map(divergence).collect(),
        file: r.file,
        anchor,
        outcome: rerun.outcome,
        error,
        failures: rerun.failures,
        // A note may be a GitHub annotation line (`::notice:: [replay] …`):
        // the page shows its text, as the terminal report does.
        notes: rerun
            .notes
            .iter()
            .map(|n| crate::report::outcome::annotation_item(n).text)
            .collect(),
        assertions,
        recording,
        recording_note,
    }
}

/// The rerun's figures; a multi-turn recording's also say where it first
/// diverged and how each turn's assertions fared.
fn facts(rerun: &RerunJson, assertions: &[Value]) -> Vec<(String, String)> {
    let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut out = vec![
        (
            "replies served".into(),
            format!("{} of {}", rerun.replies.served, rerun.replies.recorded),
        ),
        (
            "agent version".into(),
            format!(
                "{} recorded → {} now",
                version(&rerun.agent_version.recorded),
                version(&rerun.agent_version.now)
            ),
        ),
        ("divergences".into(), rerun.divergences.len().to_string()),
    ];
    if let Some(t) = rerun.divergence_turn {
        out.push(("first divergence".into(), format!("user turn {t}")));
    }
    let per_turn = crate::replay::turns::tally_of(assertions.iter().map(|a| {
        (
            a.get("source").and_then(Value::as_str),
            a.get("pass").and_then(Value::as_bool) == Some(true),
        )
    }));
    if let Some(line) = crate::replay::turns::line_of(&per_turn) {
        out.push(("assertions per turn".into(), line));
    }
    out
}

fn recorded(file: &str, base: &Path) -> Result<Cassette, String> {
    let given = Path::new(file);
    let beside = base.join(given);
    let path = if given.exists() || given.is_absolute() {
        given
    } else {
        &beside
    };
    Cassette::load(path).map_err(|e| format!("the recording is not shown: {e}"))
}

fn divergence(d: &DivergenceJson) -> DivergenceView {
    let mut place = vec![d.conversation.clone()];
    if let Some(u) = d.user_turn {
        place.push(format!("user turn {u}"));
    }
    if let Some(t) = d.turn {
        place.push(format!("turn {}", t + 1));
    }
    if let Some(tool) = &d.tool {
        place.push(tool.clone());
    }
    DivergenceView {
        kind: d.kind.replace('_', " "),
        place: place.join(" · "),
        recorded: segments(&d.recorded),
        now: segments(&d.now),
    }
}

fn assertion(a: &Value) -> AssertionView {
    let (key, params) = match a.get("assertion") {
        Some(Value::Object(m)) if m.len() == 1 => {
            let (k, v) = m.iter().next().expect("one entry");
            (k.clone(), v.to_string())
        }
        other => (
            String::new(),
            other.map(Value::to_string).unwrap_or_default(),
        ),
    };
    let text = |k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    AssertionView {
        key,
        params,
        pass: a.get("pass").and_then(Value::as_bool) == Some(true),
        evidence: [text("evidence"), text("message")]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" — "),
        source: text("source"),
    }
}
