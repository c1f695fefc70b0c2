//! The release matrix's renderers: the text table, the JSON envelope
//! (schema/rerun-matrix.json), JUnit (one case per cell) and the GitHub job
//! summary. A cell reads `pass`, `pass~N` (N divergences), `FAIL`, `ENV` (a
//! failure outside the skill: the release phoning home, crashing at start)
//! or `error`; `*` marks the first release at which a cassette changed.

use std::path::Path;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use semver::Version;
use serde_json::{Value, json};

use crate::matrix::bisect::outcome_name;
use crate::matrix::{Cell, CellResult};
use crate::rerun::Outcome;

/// The short text of a cell.
pub fn cell_text(c: &Cell) -> String {
    let base = match &c.result {
        CellResult::Done(_) if c.environment_cause().is_some() => "ENV".to_owned(),
        CellResult::Done(r) => match r.outcome {
            Outcome::Pass => "pass".to_owned(),
            Outcome::PassDiverged => format!("pass~{}", r.divergences.len()),
            Outcome::Fail => "FAIL".to_owned(),
        },
        CellResult::Refused { .. } => "error".to_owned(),
    };
    if c.first_change {
        format!("*{base}")
    } else {
        base
    }
}

fn name_of(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Rows (cassettes in first-seen order) and columns (releases ascending).
fn axes(cells: &[Cell]) -> (Vec<&Path>, Vec<&Version>) {
    let mut files: Vec<&Path> = Vec::new();
    let mut versions: Vec<&Version> = Vec::new();
    for c in cells {
        if !files.contains(&c.file.as_path()) {
            files.push(&c.file);
        }
        if !versions.contains(&&c.version) {
            versions.push(&c.version);
        }
    }
    versions.sort();
    (files, versions)
}

fn find<'c>(cells: &'c [Cell], f: &Path, v: &Version) -> Option<&'c Cell> {
    cells.iter().find(|c| c.file == f && &c.version == v)
}

/// The text table, then each changed cassette's first change explained.
pub fn table(cells: &[Cell]) -> String {
    let (files, versions) = axes(cells);
    let mut rows: Vec<Vec<String>> = vec![
        std::iter::once("cassette".to_owned())
            .chain(versions.iter().map(|v| v.to_string()))
            .collect(),
    ];
    for f in &files {
        let mut row = vec![name_of(f)];
        for v in &versions {
            row.push(find(cells, f, v).map_or_else(|| "-".into(), cell_text));
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(
        "(pass~N: passed with N divergences; *: the first release at which the cassette changed)\n",
    );
    for c in cells.iter().filter(|c| c.first_change) {
        out.push_str(&change_line(cells, c));
        out.push('\n');
    }
    for c in cells {
        if let Some(cause) = c.environment_cause() {
            out.push_str(&format!(
                "{} @ {}: ENV: {cause}\n",
                name_of(&c.file),
                c.version
            ));
        }
    }
    out
}

/// The cell of the release before `c`'s among the cells run.
fn previous<'c>(cells: &'c [Cell], c: &Cell) -> Option<&'c Cell> {
    cells
        .iter()
        .filter(|p| p.file == c.file && p.version < c.version)
        .max_by(|a, b| a.version.cmp(&b.version))
}

/// `NAME: changed at V (P: FAIL → V: pass): <what differs>`.
fn change_line(cells: &[Cell], c: &Cell) -> String {
    let prev = previous(cells, c);
    let mut line = format!("{}: changed at {}", name_of(&c.file), c.version);
    if let Some(p) = prev {
        line.push_str(&format!(
            " ({} {} → {} {})",
            p.version,
            cell_text(p).trim_start_matches('*'),
            c.version,
            cell_text(c).trim_start_matches('*')
        ));
    }
    let detail = first_divergence(c)
        .map(|d| format!("{}: {d}", c.version))
        .or_else(|| prev.and_then(|p| first_divergence(p).map(|d| format!("{}: {d}", p.version))));
    if let Some(d) = detail {
        line.push_str(&format!(" — {d}"));
    }
    line
}

/// The first divergence of a cell, on one line.
fn first_divergence(c: &Cell) -> Option<String> {
    match &c.result {
        CellResult::Done(r) => {
            if let Some(f) = r.failures.first() {
                return Some(format!("fails: {f}"));
            }
            r.divergences.first().map(|d| {
                format!(
                    "{:?} in {} turn {} ({}): recorded {:?}, now {:?}",
                    d.kind,
                    d.conversation,
                    d.turn.map_or("-".into(), |t| (t + 1).to_string()),
                    d.tool.as_deref().unwrap_or("-"),
                    d.recorded,
                    d.now
                )
            })
        }
        CellResult::Refused { error, .. } => Some(format!("could not rerun: {error}")),
    }
}

/// `{"tool","version","command":"rerun-matrix","ok","releases","cells","error"}`.
pub fn envelope(cells: &[Cell], releases: &[Version]) -> Value {
    let ok = !cells.is_empty() && cells.iter().all(|c| c.status().is_success());
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "rerun-matrix",
        "ok": ok,
        "releases": releases.iter().map(Version::to_string).collect::<Vec<_>>(),
        "cells": cells.iter().map(cell_json).collect::<Vec<_>>(),
        "error": Value::Null,
    })
}

fn cell_json(c: &Cell) -> Value {
    let mut v = json!({
        "file": c.file.display().to_string(),
        "agentVersion": c.version.to_string(),
        "exitCode": c.status().code(),
        "durationMs": c.elapsed().as_millis() as u64,
        "divergenceCount": c.divergence_count(),
        "firstChange": c.first_change,
    });
    match &c.result {
        CellResult::Done(r) => {
            v["outcome"] = match c.environment_cause() {
                Some(cause) => {
                    v["environment"] = json!(cause);
                    json!("environment")
                }
                None => json!(outcome_name(r.outcome)),
            };
            v["failures"] = json!(r.failures);
            v["recordedAgentVersion"] = json!(r.agent_version_recorded);
            v["reportedAgentVersion"] = json!(r.agent_version_now);
            v["firstDivergence"] = json!(r.divergences.first());
        }
        CellResult::Refused { error, .. } => {
            v["outcome"] = json!("error");
            v["error"] = json!({"message": error.to_string(), "hint": error.hint()});
        }
    }
    v
}

/// JUnit: a suite per release, a case per cassette (classname = release).
pub fn junit(cells: &[Cell]) -> Result<String, quick_junit::SerializeError> {
    let (_, versions) = axes(cells);
    let mut report = Report::new("reel rerun matrix");
    for v in versions {
        let mut suite = TestSuite::new(format!("claude-code@{v}"));
        for c in cells.iter().filter(|c| &c.version == v) {
            let status = if c.status().is_success() {
                TestCaseStatus::success()
            } else {
                let environment = c.environment_cause();
                let kind = match c.result {
                    CellResult::Done(_) if environment.is_none() => NonSuccessKind::Failure,
                    _ => NonSuccessKind::Error,
                };
                let mut s = TestCaseStatus::non_success(kind);
                if let Some(d) = environment.or_else(|| first_divergence(c)) {
                    s.set_message(d);
                }
                s
            };
            let mut case = TestCase::new(format!("{} @ {v}", name_of(&c.file)), status);
            case.set_classname(format!("claude-code@{v}"));
            case.set_time(c.elapsed());
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    report.to_string()
}

/// The GitHub job summary: the table in Markdown, first changes in bold.
pub fn github_summary(cells: &[Cell]) -> String {
    let (files, versions) = axes(cells);
    let mut md = String::from("### reel rerun — release matrix\n\n| cassette |");
    for v in &versions {
        md.push_str(&format!(" {v} |"));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(versions.len()));
    md.push('\n');
    for f in &files {
        md.push_str(&format!("| `{}` |", name_of(f)));
        for v in &versions {
            let text = find(cells, f, v).map_or_else(
                || "–".into(),
                |c| {
                    let t = cell_text(c).trim_start_matches('*').to_owned();
                    if c.first_change {
                        format!("**{t}** (changed)")
                    } else {
                        t
                    }
                },
            );
            md.push_str(&format!(" {text} |"));
        }
        md.push('\n');
    }
    for c in cells.iter().filter(|c| c.first_change) {
        md.push_str(&format!(
            "\n- {}",
            change_line(cells, c).replace('|', "\\|")
        ));
    }
    md.push('\n');
    md
}
