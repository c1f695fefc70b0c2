//! The matrix view: cassettes × agent versions as a grid, each cell the
//! rerun's outcome under that version, linking to its rerun report; the
//! first version at which a cassette's outcome or replies change is marked.
//!
//! The input is a small documented model ([`MatrixInput`],
//! `schema/report-matrix.json`), or what a matrix run prints (`reel rerun
//! --agent-version … --output-format json`, `schema/rerun-matrix.json`),
//! converted; `reel report --matrix FILE` reads either.

use std::collections::HashMap;

use askama::Template;
use serde::Deserialize;

use super::rerun::InputError;
use super::{Chrome, RenderError};

/// A version matrix: which cassettes were rerun under which agent versions.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatrixInput {
    /// Agent versions, in release order (the grid's columns).
    pub versions: Vec<String>,
    /// Cassette paths (the grid's rows).
    pub cassettes: Vec<String>,
    /// The agent version each cassette was recorded with.
    #[serde(default)]
    pub recorded_with: HashMap<String, String>,
    pub cells: Vec<MatrixCell>,
}

/// One rerun: a cassette under a version.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatrixCell {
    pub cassette: String,
    pub version: String,
    /// `pass` | `pass_diverged` | `fail` | `could_not_run`.
    pub outcome: String,
    #[serde(default)]
    pub divergences: u64,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    /// The rerun's report or envelope: a relative path or an http(s) URL.
    #[serde(default)]
    pub link: Option<String>,
    /// The first divergence or the failure, in one line.
    #[serde(default)]
    pub message: Option<String>,
}

const OUTCOMES: [&str; 4] = ["pass", "pass_diverged", "fail", "could_not_run"];

impl MatrixInput {
    /// Reads and checks the matrix at `path`.
    pub fn load(path: &std::path::Path) -> Result<MatrixInput, InputError> {
        let err = |message: String| InputError {
            file: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
        let m: MatrixInput = if value["command"] == "rerun-matrix" {
            from_rerun_matrix(&value)
        } else {
            serde_json::from_value(value).map_err(|e| {
                err(format!(
                    "not a matrix report input: {e} (the format is schema/report-matrix.json, or \
                     the JSON of `reel rerun --agent-version …`)"
                ))
            })?
        };
        m.check().map_err(err)?;
        Ok(m)
    }

    fn check(&self) -> Result<(), String> {
        for (i, c) in self.cells.iter().enumerate() {
            if !self.cassettes.contains(&c.cassette) {
                return Err(format!(
                    "cells[{i}].cassette {:?} is not in `cassettes`; list it there",
                    c.cassette
                ));
            }
            if !self.versions.contains(&c.version) {
                return Err(format!(
                    "cells[{i}].version {:?} is not in `versions`; list it there",
                    c.version
                ));
            }
            if !OUTCOMES.contains(&c.outcome.as_str()) {
                return Err(format!(
                    "cells[{i}].outcome {:?} is not one of {}",
                    c.outcome,
                    OUTCOMES.join(", ")
                ));
            }
            if let Some(link) = &c.link
                && !safe_link(link)
            {
                return Err(format!(
                    "cells[{i}].link {link:?} is neither a relative path nor an http(s) URL"
                ));
            }
        }
        Ok(())
    }
}

/// The matrix a `reel rerun --agent-version … --output-format json` run
/// printed (schema/rerun-matrix.json) as this view's input: its releases,
/// the cassettes in the order their cells come, each cell's first
/// divergence or failure as its message.
fn from_rerun_matrix(envelope: &serde_json::Value) -> MatrixInput {
    use serde_json::Value;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let versions: Vec<String> = envelope["releases"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let mut cassettes: Vec<String> = Vec::new();
    let mut recorded_with = HashMap::new();
    let mut cells = Vec::new();
    for cell in envelope["cells"].as_array().into_iter().flatten() {
        let file = text(&cell["file"]);
        if !cassettes.contains(&file) {
            cassettes.push(file.clone());
        }
        if let Some(v) = cell["recordedAgentVersion"].as_str() {
            recorded_with.insert(file.clone(), v.to_owned());
        }
        let first = &cell["firstDivergence"];
        let message = cell["environment"]
            .as_str()
            .or_else(|| cell["failures"][0].as_str())
            .map(str::to_owned)
            .or_else(|| cell["error"]["message"].as_str().map(str::to_owned))
            .or_else(|| {
                first["kind"].as_str().map(|kind| {
                    format!(
                        "{kind}: {} → {}",
                        text(&first["recorded"]),
                        text(&first["now"])
                    )
                })
            });
        cells.push(MatrixCell {
            cassette: file,
            version: text(&cell["agentVersion"]),
            outcome: match cell["outcome"].as_str() {
                // A failure outside the skill is the environment's: could not run.
                Some("error" | "environment") | None => "could_not_run".into(),
                Some(o) => o.to_owned(),
            },
            divergences: cell["divergenceCount"].as_u64().unwrap_or(0),
            duration_ms: cell["durationMs"].as_f64(),
            link: None,
            message,
        });
    }
    MatrixInput {
        versions,
        cassettes,
        recorded_with,
        cells,
    }
}

/// A relative path, or an absolute http(s) URL: never `javascript:` or `data:`.
pub(super) fn safe_link(link: &str) -> bool {
    match link.split_once(':') {
        Some((scheme, _)) if !scheme.contains('/') => {
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        }
        _ => true,
    }
}

/// One row of the grid.
pub struct Row {
    pub cassette: String,
    pub recorded_with: String,
    pub cells: Vec<Option<Cell>>,
}

/// One cell as drawn.
pub struct Cell {
    pub outcome: String,
    pub divergences: u64,
    pub duration: String,
    pub link: Option<String>,
    pub message: String,
    /// The first version at which this cassette's outcome or replies changed.
    pub first_change: bool,
}

#[derive(Template)]
#[template(path = "matrix.html")]
struct Page<'a> {
    chrome: Chrome,
    versions: &'a [String],
    rows: &'a [Row],
    counts: Vec<(String, usize)>,
    /// Cells that link to a rerun report (the page promises links only
    /// when some exist).
    linked: usize,
}

/// The matrix view as one HTML page.
pub fn render(m: &MatrixInput) -> Result<String, RenderError> {
    let rows = rows(m);
    let counts = OUTCOMES
        .iter()
        .map(|o| {
            let n = m.cells.iter().filter(|c| c.outcome == *o).count();
            ((*o).to_owned(), n)
        })
        .collect();
    Page {
        chrome: Chrome::new("reel report — version matrix".into()),
        versions: &m.versions,
        linked: m.cells.iter().filter(|c| c.link.is_some()).count(),
        rows: &rows,
        counts,
    }
    .render()
}

/// The grid, with each row's first change marked.
pub fn rows(m: &MatrixInput) -> Vec<Row> {
    m.cassettes
        .iter()
        .map(|cassette| {
            let mut previous: Option<(String, bool)> = None;
            let mut marked = false;
            let cells = m
                .versions
                .iter()
                .map(|version| {
                    let c = m
                        .cells
                        .iter()
                        .find(|c| &c.cassette == cassette && &c.version == version)?;
                    let signature = (c.outcome.clone(), c.divergences > 0);
                    let changed = previous.as_ref().is_some_and(|p| *p != signature);
                    previous = Some(signature);
                    let first_change = changed && !marked;
                    marked |= first_change;
                    Some(Cell {
                        outcome: c.outcome.clone(),
                        divergences: c.divergences,
                        duration: c
                            .duration_ms
                            .map(|d| format!("{:.1} s", d / 1000.0))
                            .unwrap_or_default(),
                        link: c.link.clone(),
                        message: c.message.clone().unwrap_or_default(),
                        first_change,
                    })
                })
                .collect();
            Row {
                cassette: cassette.clone(),
                recorded_with: m.recorded_with.get(cassette).cloned().unwrap_or_default(),
                cells,
            }
        })
        .collect()
}

#[cfg(test)]
mod rerun_matrix_tests {
    use super::*;

    #[test]
    fn a_matrix_runs_own_json_is_read_as_the_views_input() {
        let envelope = serde_json::json!({
            "tool": "reel", "version": "0", "command": "rerun-matrix", "ok": false,
            "releases": ["2.1.112", "2.1.128"],
            "cells": [
                {"file": "cassettes/a.cassette.json", "agentVersion": "2.1.112", "outcome": "fail",
                 "exitCode": 1, "durationMs": 900, "divergenceCount": 2, "firstChange": false,
                 "failures": ["result: expected success"], "recordedAgentVersion": "2.1.332"},
                {"file": "cassettes/a.cassette.json", "agentVersion": "2.1.128", "outcome": "pass_diverged",
                 "exitCode": 0, "durationMs": 800, "divergenceCount": 1, "firstChange": true,
                 "firstDivergence": {"conversation": "main", "kind": "tool_result", "recorded": "x", "now": "y"}},
                {"file": "cassettes/b.cassette.json", "agentVersion": "2.1.128", "outcome": "error",
                 "exitCode": 3, "durationMs": 0, "divergenceCount": 0, "firstChange": false,
                 "error": {"message": "no release"}}
            ],
            "error": null
        });
        let m = from_rerun_matrix(&envelope);
        assert_eq!(m.versions, ["2.1.112", "2.1.128"]);
        assert_eq!(
            m.cassettes,
            ["cassettes/a.cassette.json", "cassettes/b.cassette.json"]
        );
        assert_eq!(m.recorded_with["cassettes/a.cassette.json"], "2.1.332");
        assert_eq!(
            m.cells[0].message.as_deref(),
            Some("result: expected success")
        );
        assert_eq!(m.cells[1].message.as_deref(), Some("tool_result: x → y"));
        assert_eq!(m.cells[2].outcome, "could_not_run");
        assert_eq!(m.cells[2].message.as_deref(), Some("no release"));
        m.check().unwrap();
        // Without links the page promises none.
        let page = render(&m).unwrap();
        assert!(!page.contains("A cell with a link"), "{page}");
        assert!(page.contains("No cell links to a rerun report"));
    }
}
