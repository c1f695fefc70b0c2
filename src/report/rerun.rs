//! Renderers of `reel rerun`: the text report (stderr), the JSON envelope
//! (`schema/rerun.json`), JUnit and GitHub annotations. Nothing is decided
//! here; every figure comes from [`crate::rerun::Rerun`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde_json::{Map, Value, json};

use crate::rerun::{Outcome, Rerun, RerunError};

/// One cassette's rerun: finished, or refused with the exit code it earns.
pub enum Entry {
    Done(Box<Rerun>),
    Refused {
        file: PathBuf,
        error: RerunError,
        exit_code: u8,
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

/// The status word of a finished rerun.
fn status(r: &Rerun) -> &'static str {
    match r.outcome {
        Outcome::Pass => "PASS",
        Outcome::PassDiverged => "PASS (diverged)",
        Outcome::Fail => "FAIL",
    }
}

/// The text report of one cassette.
pub fn text(entry: &Entry) -> String {
    let mut out = String::new();
    match entry {
        Entry::Refused { file, error, .. } => {
            let _ = writeln!(out, "ERROR {}", file.display());
            let _ = writeln!(out, "  {error}");
            if let Some(h) = error.hint() {
                let _ = writeln!(out, "  hint: {h}");
            }
        }
        Entry::Done(r) => {
            let total = r.result.assertions.len();
            let passed = r.result.assertions.iter().filter(|a| a.pass).count();
            let _ = writeln!(
                out,
                "{} {}  {passed}/{total} assertions  {} divergence(s)  {}/{} replies served",
                status(r),
                r.file.display(),
                r.divergences.len(),
                r.replies_served,
                r.replies_recorded,
            );
            for n in &r.notes {
                let _ = writeln!(out, "  {n}");
            }
            for f in &r.failures {
                let _ = writeln!(out, "  ✗ {f}");
            }
            for d in &r.divergences {
                let at = match (d.turn, &d.tool) {
                    (Some(t), Some(tool)) => format!(" turn {t} {tool}"),
                    (Some(t), None) => format!(" turn {t}"),
                    (None, Some(what)) => format!(" {what}"),
                    (None, None) => String::new(),
                };
                let kind = serde_json::to_value(d.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let _ = writeln!(out, "  ~ divergence: {}{at}: {kind}", d.conversation);
                for line in unified(&d.recorded, &d.now) {
                    let _ = writeln!(out, "      {line}");
                }
            }
            if let Some(dir) = &r.run_dir {
                let _ = writeln!(out, "  run directory kept: {}", dir.display());
            }
        }
    }
    out
}

/// A short recorded-vs-now diff: `-` recorded lines, `+` fresh lines.
fn unified(recorded: &str, now: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(recorded, now);
    let mut lines = Vec::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => "- ",
            similar::ChangeTag::Insert => "+ ",
            similar::ChangeTag::Equal => "  ",
        };
        lines.push(format!("{sign}{}", change.value().trim_end_matches('\n')));
    }
    if lines.len() > 24 {
        let more = lines.len() - 24;
        lines.truncate(24);
        lines.push(format!("… {more} more line(s)"));
    }
    lines
}

/// The closing line: `N passed, N failed` (then diverged / errors when non-zero).
pub fn summary(entries: &[Entry]) -> String {
    let mut passed = 0;
    let mut failed = 0;
    let mut diverged = 0;
    let mut errors = 0;
    for e in entries {
        match e {
            Entry::Done(r) => {
                match r.outcome {
                    Outcome::Fail => failed += 1,
                    _ => passed += 1,
                }
                if !r.divergences.is_empty() {
                    diverged += 1;
                }
            }
            Entry::Refused { .. } => errors += 1,
        }
    }
    let mut s = format!("{passed} passed, {failed} failed");
    if diverged > 0 {
        let _ = write!(s, ", {diverged} diverged");
    }
    if errors > 0 {
        let _ = write!(s, ", {errors} errors");
    }
    s
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
        Entry::Refused {
            error, exit_code, ..
        } => {
            let category = if *exit_code == crate::exit::COULD_NOT_RUN {
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
                    "replies": {"recorded": r.replies_recorded, "served": r.replies_served},
                    "agentVersion": {"recorded": r.agent_version_recorded, "now": r.agent_version_now},
                    "notes": r.notes,
                    "written": r.written.as_ref().map(|p| p.display().to_string()),
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
                    let mut case = TestCase::new(format!("[{i}] {}", a.assertion), status);
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
                    let name = format!(
                        "divergence {} turn {} {}",
                        d.conversation,
                        d.turn.map_or("-".into(), |t| t.to_string()),
                        d.tool.as_deref().unwrap_or("")
                    );
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
    report.to_string()
}

/// GitHub annotations: an `::error` per failing rerun, a `::warning` per divergence.
pub fn annotations(entry: &Entry) -> Vec<String> {
    let esc = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let file = entry.file().display().to_string();
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
            out.extend(r.divergences.iter().map(|d| {
                format!(
                    "::warning file={file}::rerun divergence at {} turn {}{}: {}",
                    d.conversation,
                    d.turn.map_or("-".into(), |t| t.to_string()),
                    d.tool
                        .as_deref()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default(),
                    esc(&d.now)
                )
            }));
            out
        }
    }
}
