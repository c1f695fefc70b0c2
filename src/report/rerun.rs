//! Renderers of `reel rerun`: the text report (stderr), the JSON envelope
//! (`schema/rerun.json`), JUnit and GitHub annotations. Nothing is decided
//! here; every figure comes from [`crate::rerun::Rerun`].

use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::report::outcome::{FileOutcome, Level, Status};
use crate::report::status::Tally;
use serde_json::{Map, Value, json};

use crate::exit::ExitStatus;
use crate::rerun::{Outcome, Rerun, RerunError};

/// One cassette's rerun: finished, or refused with the outcome it earns.
pub enum Entry {
    Done(Box<Rerun>),
    Refused {
        file: PathBuf,
        error: RerunError,
        status: ExitStatus,
    },
}

impl Entry {
    pub fn file(&self) -> &Path {
        match self {
            Entry::Done(r) => &r.file,
            Entry::Refused { file, .. } => file,
        }
    }
}

/// One cassette's rerun as the status reporter shows it: a status line
/// (`PASS file  5/5 assertions  0 divergences  3/3 replies  2.1 s`, with the
/// per-turn counts of a multi-turn recording), then its failures,
/// divergences (each with a short recorded-vs-now diff) and notes.
pub fn outcome(entry: &Entry) -> FileOutcome {
    let file = entry.file().display().to_string();
    match entry {
        Entry::Refused { error, .. } => {
            let mut o = FileOutcome::new(file, Status::Error, "not rerun");
            o.push(Level::Fail, error.to_string());
            if let Some(h) = error.hint() {
                o.push(Level::Note, format!("hint: {h}"));
            }
            o
        }
        Entry::Done(r) => done_outcome(file, r),
    }
}

/// The outcome of a finished rerun.
fn done_outcome(file: String, r: &Rerun) -> FileOutcome {
    let status = match r.outcome {
        Outcome::Fail => Status::Fail,
        Outcome::Pass | Outcome::PassDiverged => Status::Pass,
    };
    let mut o = FileOutcome::new(file, status, status_detail(r)).with_elapsed(r.elapsed);
    for f in &r.failures {
        o.push(Level::Fail, f.clone());
    }
    let level = if r.outcome == Outcome::Fail && r.failures.is_empty() {
        Level::Fail // --strict: the divergences are why it failed
    } else {
        Level::Warn
    };
    for d in &r.divergences {
        o.push(level, divergence_text(d));
    }
    for n in &r.notes {
        o.items.push(crate::report::outcome::annotation_item(n));
    }
    if !r.sandbox.enabled {
        o.push(Level::Warn, format!("sandbox {}", r.sandbox.summary()));
    }
    if let Some(dir) = &r.run_dir {
        o.push(
            Level::Note,
            format!("run directory kept: {}", dir.display()),
        );
    }
    o
}

/// `5/5 assertions (session 2/2 · turn 1 3/3)  1 divergence  3/3 replies`.
fn status_detail(r: &Rerun) -> String {
    let total = r.result.assertions.len();
    let passed = r.result.assertions.iter().filter(|a| a.pass).count();
    let per_turn = crate::replay::turns::tally_line(&r.result.assertions)
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    format!(
        "{passed}/{total} assertions{per_turn}  {}  {}/{} replies",
        match r.divergences.len() {
            1 => "1 divergence".to_owned(),
            n => format!("{n} divergences"),
        },
        r.replies_served,
        r.replies_recorded,
    )
}

/// One divergence: where (conversation, turn, tool, the user turn of a
/// multi-turn recording), what kind, then its diff.
fn divergence_text(d: &crate::rerun::divergence::Divergence) -> String {
    // A tool or file name is one line: its breaks shown, not made.
    let tool = d.tool.as_deref().map(crate::terminal_safe::inline);
    let mut at = match (d.turn, &tool) {
        (Some(t), Some(tool)) => format!(" turn {} {tool}", t + 1),
        (Some(t), None) => format!(" turn {}", t + 1),
        (None, Some(what)) => format!(" {what}"),
        (None, None) => String::new(),
    };
    if let Some(u) = d.user_turn {
        at.push_str(&format!(" (user turn {u})"));
    }
    let kind = serde_json::to_value(d.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut text = if d.kind == crate::rerun::divergence::Kind::File {
        format!("output changed: {}", tool.as_deref().unwrap_or("?"))
    } else if d.conversation == "-" {
        format!("divergence: {kind}{at}")
    } else {
        format!("divergence at {}{at}: {kind}", d.conversation)
    };
    let diff = if d.diff.is_empty() {
        crate::rerun::divergence::unified(&d.recorded, &d.now)
    } else {
        d.diff.clone()
    };
    for line in diff {
        text.push('\n');
        text.push_str(&line);
    }
    text
}

/// The sandbox line(s) of a batch: one line when every run had the same
/// layers, else one per set with its count.
pub fn sandbox_lines(layers: &[&crate::sandbox::Layers]) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for l in layers {
        let s = l.summary();
        match seen.iter_mut().find(|(t, _)| *t == s) {
            Some((_, n)) => *n += 1,
            None => seen.push((s, 1)),
        }
    }
    let mut out = String::new();
    for (text, n) in &seen {
        let scope = if seen.len() == 1 {
            "every run".to_owned()
        } else {
            format!("{n} run(s)")
        };
        out.push_str(&format!("sandbox: {text} ({scope})\n"));
    }
    out
}

/// The closing lines: how many passing reruns diverged (when any), then the
/// tally `N passed, N failed` (then stale / errors / skipped when non-zero).
pub fn summary(entries: &[Entry], color: bool) -> String {
    let outcomes: Vec<FileOutcome> = entries.iter().map(outcome).collect();
    let diverged = entries
        .iter()
        .filter(|e| matches!(e, Entry::Done(r) if !r.divergences.is_empty()))
        .count();
    let layers: Vec<&crate::sandbox::Layers> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Done(r) => Some(&r.sandbox),
            Entry::Refused { .. } => None,
        })
        .collect();
    let mut out = sandbox_lines(&layers);
    if diverged > 0 {
        out.push_str(&format!(
            "{diverged} rerun(s) diverged from their recordings (reported above; --strict fails on \
                them)\n"
        ));
    }
    out.push_str(&crate::report::status::render_tally(
        &Tally::of(&outcomes),
        color,
    ));
    out
}

/// `{"tool","version","command":"rerun","ok","results":[…],"error"}`.
pub fn envelope(entries: &[Entry]) -> Value {
    let results: Vec<Value> = entries.iter().map(result_json).collect();
    let ok = !entries.is_empty()
        && entries
            .iter()
            .all(|e| matches!(e, Entry::Done(r) if r.outcome != Outcome::Fail));
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "rerun",
        "ok": ok,
        "results": results,
        "error": Value::Null,
    })
}

/// The envelope of a run that failed before any cassette was rerun.
pub fn usage_error(message: &str, hint: Option<&str>) -> Value {
    let mut error = json!({"category": "usage", "message": message});
    if let Some(h) = hint {
        error["hint"] = json!(h);
    }
    json!({"tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "rerun",
           "ok": false, "results": [], "error": error})
}

fn result_json(entry: &Entry) -> Value {
    let mut out = Map::new();
    out.insert("file".into(), json!(entry.file().display().to_string()));
    match entry {
        Entry::Refused { error, status, .. } => {
            let category = if *status == ExitStatus::COULD_NOT_RUN {
                "could_not_rerun"
            } else {
                "invalid_input"
            };
            let mut e = json!({"category": category, "message": error.to_string()});
            if let Some(h) = error.hint() {
                e["hint"] = json!(h);
            }
            out.insert("error".into(), e);
        }
        Entry::Done(r) => {
            if let Ok(Value::Object(run)) = serde_json::to_value(r.result.run_result_json()) {
                for (k, v) in run {
                    if k != "file" {
                        out.insert(k, v);
                    }
                }
            }
            out.insert(
                "rerun".into(),
                json!({
                    "outcome": r.outcome,
                    "pass": r.outcome != Outcome::Fail,
                    "failures": r.failures,
                    "divergences": r.divergences,
                    "divergenceTurn": r.divergence_turn,
                    "replies": {"recorded": r.replies_recorded, "served": r.replies_served},
                    "agentVersion": {"recorded": r.agent_version_recorded, "now": r.agent_version_now},
                    "notes": r.notes,
                    "written": r.written.as_ref().map(|p| p.display().to_string()),
                    "sandbox": r.sandbox,
                }),
            );
        }
    }
    Value::Object(out)
}

/// JUnit: a suite per cassette, a case per assertion and per divergence (a
/// divergence is a failure only when it failed the rerun, under `--strict`).
pub fn junit(entries: &[Entry], strict: bool) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("reel rerun");
    for e in entries {
        let file = e.file().display().to_string();
        let mut suite = TestSuite::new(file.clone());
        match e {
            Entry::Refused { error, .. } => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(error.to_string());
                let mut case = TestCase::new("rerun", status);
                case.set_classname(file.clone());
                suite.add_test_case(case);
            }
            Entry::Done(r) => {
                for (i, a) in r.result.assertions.iter().enumerate() {
                    let status = if a.pass {
                        TestCaseStatus::success()
                    } else {
                        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                        s.set_message(a.message.clone());
                        s
                    };
                    let name = match crate::replay::turns::turn_of(a) {
                        Some(turn) => format!("[{i}] {turn}: {}", a.assertion),
                        None => format!("[{i}] {}", a.assertion),
                    };
                    let mut case = TestCase::new(name, status);
                    case.set_classname(file.clone());
                    suite.add_test_case(case);
                }
                for f in r
                    .failures
                    .iter()
                    .filter(|f| f.starts_with("run error") || f.starts_with("scripted model"))
                {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(f.clone());
                    let mut case = TestCase::new("run", s);
                    case.set_classname(file.clone());
                    suite.add_test_case(case);
                }
                for d in &r.divergences {
                    let mut name = format!(
                        "divergence {} turn {} {}",
                        d.conversation,
                        d.turn.map_or("-".into(), |t| (t + 1).to_string()),
                        d.tool.as_deref().unwrap_or("")
                    );
                    if let Some(u) = d.user_turn {
                        name.push_str(&format!(" (user turn {u})"));
                    }
                    let mut status = if strict {
                        TestCaseStatus::non_success(NonSuccessKind::Failure)
                    } else {
                        TestCaseStatus::success()
                    };
                    if strict && let TestCaseStatus::NonSuccess { .. } = status {
                        status.set_message(format!("recorded: {}\nnow: {}", d.recorded, d.now));
                    }
                    let mut case = TestCase::new(name, status);
                    case.set_classname(file.clone());
                    case.set_system_out(format!("recorded: {}\nnow: {}", d.recorded, d.now));
                    suite.add_test_case(case);
                }
            }
        }
        report.add_test_suite(suite);
    }
    // As replay's JUnit: recorded strings shown inert.
    report
        .to_string()
        .map(|xml| crate::terminal_safe::block(&xml).into_owned())
}

/// GitHub annotations: an `::error` per failing rerun, a `::warning` per divergence.
pub fn annotations(entry: &Entry) -> Vec<String> {
    use crate::terminal_safe::{workflow_data as esc, workflow_property};
    let file = workflow_property(&entry.file().display().to_string());
    match entry {
        Entry::Refused { error, .. } => vec![format!(
            "::error file={file}::rerun: {}",
            esc(&error.to_string())
        )],
        Entry::Done(r) => {
            let mut out: Vec<String> = r
                .failures
                .iter()
                .map(|f| format!("::error file={file}::rerun: {}", esc(f)))
                .collect();
            // Every part after `::` is the message: the conversation and the
            // tool (recorded names) escaped with it.
            out.extend(r.divergences.iter().map(|d| {
                let at = format!(
                    "rerun divergence at {} turn {}{}: {}",
                    d.conversation,
                    d.turn.map_or("-".into(), |t| (t + 1).to_string()),
                    d.tool
                        .as_deref()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default(),
                    d.now
                );
                format!("::warning file={file}::{}", esc(&at))
            }));
            out
        }
    }
}
