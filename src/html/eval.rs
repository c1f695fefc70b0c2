//! The eval view: per scenario, its verdict row (the primary endpoint) and
//! assertion rows (secondary), both arms' pass rates, the paired difference
//! with its confidence interval drawn on a −1…+1 axis, the status and its
//! reason, the first causes of failed trials, the history band and the
//! cost; then the trial rows.
//!
//! The input is exactly what `reel eval` writes: an eval directory, or its
//! `report.json` (schema/eval-report.json) with `runs.jsonl` beside it for
//! the trials. When the directory's `eval.json` and `runs.jsonl` are there
//! the report is recomputed and a stale or edited one refused, as
//! `reel eval report` does. This view draws the statistics; it decides
//! nothing.

use std::path::{Path, PathBuf};

use askama::Template;

use super::rerun::InputError;
use super::timeline::fmt;
use super::{Chrome, RenderError};
use crate::eval::report::{Report, Role, RowReport, ScenarioReport};
use crate::eval::rows::{self, Outcome, Row};

/// An eval's report and its trial rows, as the page reads them.
#[derive(Debug, Clone)]
pub struct EvalInput {
    pub report: Report,
    pub trials: Vec<Row>,
}

impl EvalInput {
    /// Reads the eval at `path`: a directory holding `report.json`, or the
    /// `report.json` file itself.
    pub fn load(path: &Path) -> Result<EvalInput, InputError> {
        let (dir, file) = if path.is_dir() {
            (path.to_path_buf(), path.join("report.json"))
        } else {
            let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
            (dir, path.to_path_buf())
        };
        let err = |message: String| InputError {
            file: file.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(&file).map_err(|e| {
            err(format!(
                "cannot read: {e} (give an eval directory or its report.json; `reel eval report \
                 DIR` writes it)"
            ))
        })?;
        let envelope: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            err(format!(
                "not JSON: {e} (the format is schema/eval-report.json)"
            ))
        })?;
        if envelope.get("command").and_then(|c| c.as_str()) != Some("eval") {
            return Err(err(
                "`command` is not \"eval\": not a `reel eval` report (schema/eval-report.json)"
                    .into(),
            ));
        }
        let results = envelope.get("results").cloned().unwrap_or_default();
        let report: Report = serde_json::from_value(results).map_err(|e| {
            err(format!(
                "`results`: {e} (the format is schema/eval-report.json)"
            ))
        })?;
        let trials = if dir.join(rows::MANIFEST_FILE).exists() {
            let loaded = rows::load(std::slice::from_ref(&dir)).map_err(&err)?;
            crate::eval::report::verify(&envelope, &crate::eval::report::build(&loaded))
                .map_err(|e| err(format!("{e}; rebuild it with `reel eval report DIR`")))?;
            loaded.rows
        } else {
            Vec::new()
        };
        check(&report).map_err(err)?;
        Ok(EvalInput { report, trials })
    }
}

/// What a page can check of a report given without its rows.
fn check(r: &Report) -> Result<(), String> {
    for (i, s) in r.scenarios.iter().enumerate() {
        for (arm, t) in ["A", "B"].iter().zip(&s.trials) {
            if t.passed > t.completed || t.completed > t.attempted {
                return Err(format!(
                    "scenarios[{i}].trials ({arm}): passed ({}) ≤ completed ({}) ≤ attempted ({}) \
                     does not hold",
                    t.passed, t.completed, t.attempted
                ));
            }
        }
        for (j, row) in s.rows.iter().enumerate() {
            let unit = |v: f64| (-1.0..=1.0).contains(&v);
            if let Some([lo, hi]) = row.interval {
                let inside = row.difference.is_none_or(|d| lo <= d && d <= hi);
                if !(unit(lo) && unit(hi) && lo <= hi && inside) {
                    return Err(format!(
                        "scenarios[{i}].rows[{j}].interval [{lo}, {hi}] must be within −1…1, \
                         low ≤ high, and contain the difference"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// One row as drawn.
pub struct RowView {
    pub label: String,
    pub role: &'static str,
    pub a_rate: String,
    pub b_rate: String,
    pub pairs: u64,
    pub difference: String,
    pub interval: String,
    pub p_value: String,
    pub p_decided: String,
    pub status: &'static str,
    pub reason: String,
    /// The plot: y of the row, x of the point and of the interval's ends.
    pub y: String,
    pub point: Option<String>,
    pub ci: Option<(String, String)>,
}

/// One scenario's notes under the table.
pub struct ScenarioView {
    pub name: String,
    pub status: &'static str,
    pub reason: String,
    pub causes: Vec<String>,
    pub history: Vec<String>,
    pub cost: String,
}

/// One trial as drawn.
pub struct TrialView {
    pub scenario: String,
    pub arm: String,
    pub rep: u64,
    pub status: &'static str,
    pub cost: String,
    pub ms: u64,
    pub detail: String,
}

const PLOT_W: f64 = 360.0;
const PLOT_ROW: f64 = 22.0;

#[derive(Template)]
#[template(path = "eval.html")]
struct Page<'a> {
    chrome: Chrome,
    report: &'a Report,
    policy: Vec<(String, String)>,
    scenarios: Vec<ScenarioView>,
    rows: Vec<RowView>,
    trials: Vec<TrialView>,
    plot_w: String,
    plot_h: String,
    zero_x: String,
}

fn rate(passed: u64, completed: u64, attempted: u64) -> String {
    match completed {
        0 => format!("– (0 of {attempted} completed)"),
        n => format!(
            "{:.0}% ({passed}/{n}, {attempted} attempted)",
            passed as f64 * 100.0 / n as f64
        ),
    }
}

fn row_view(s: &ScenarioReport, r: &RowReport, i: usize) -> RowView {
    let x = |v: f64| fmt((v + 1.0) / 2.0 * PLOT_W);
    let [both, only_a, only_b, _] = r.table;
    let pairs = r.table.iter().sum::<u64>();
    let (a_rate, b_rate) = if r.role == Role::Primary || r.row == crate::eval::report::VERDICT_ROW {
        let [a, b] = s.trials;
        (
            rate(a.passed, a.completed, a.attempted),
            rate(b.passed, b.completed, b.attempted),
        )
    } else {
        (
            rate(both + only_a, pairs, pairs),
            rate(both + only_b, pairs, pairs),
        )
    };
    RowView {
        label: format!("{} · {}", s.scenario, r.row),
        role: r.role.label(),
        a_rate,
        b_rate,
        pairs,
        difference: r.difference.map(|d| format!("{d:+.2}")).unwrap_or_default(),
        interval: r
            .interval
            .map(|[l, h]| format!("[{l:+.2}, {h:+.2}]"))
            .unwrap_or_default(),
        p_value: r.p_value.map(|p| format!("{p:.4}")).unwrap_or_default(),
        p_decided: r.p_adjusted.map(|p| format!("{p:.4}")).unwrap_or_default(),
        status: r.status.as_str(),
        reason: r.reason.clone(),
        y: fmt(i as f64 * PLOT_ROW + PLOT_ROW / 2.0),
        point: r.difference.map(x),
        ci: r.interval.map(|[l, h]| (x(l), x(h))),
    }
}

fn scenario_view(s: &ScenarioReport) -> ScenarioView {
    let causes = ["A", "B"]
        .iter()
        .zip(&s.causes)
        .flat_map(|(arm, cs)| cs.iter().take(3).map(move |c| format!("{arm}: {c}")))
        .collect();
    let history = s
        .history
        .iter()
        .flat_map(|h| ["A", "B"].into_iter().zip(h.iter()))
        .map(|(arm, h)| match (h.pass_rate, h.band) {
            (Some(p), Some([lo, hi])) => format!(
                "{arm}: {} — {:.0}% over {} earlier run(s), noise band [{:.0}%, {:.0}%]",
                h.state,
                p * 100.0,
                h.runs,
                lo * 100.0,
                hi * 100.0
            ),
            _ => format!("{arm}: new — no earlier run of this arm"),
        })
        .collect();
    let c = &s.cost;
    let cost = if c.guardrail == "scripted" {
        "$0 — scripted (nothing billed)".to_owned()
    } else {
        format!(
            "A ${:.4}, B ${:.4}; guardrail {}",
            c.arms[0].total_usd, c.arms[1].total_usd, c.guardrail
        )
    };
    ScenarioView {
        name: s.scenario.clone(),
        status: s.status.as_str(),
        reason: s.reason.clone(),
        causes,
        history,
        cost,
    }
}

fn trial_view(t: &Row) -> TrialView {
    TrialView {
        scenario: t.scenario.clone(),
        arm: t.arm.clone(),
        rep: t.rep,
        status: match t.outcome {
            Outcome::Passed => "pass",
            Outcome::Failed => "fail",
            Outcome::Errored => "error",
        },
        cost: if t.scripted {
            "$0 scripted".into()
        } else {
            t.cost_usd.map(|c| format!("${c:.4}")).unwrap_or_default()
        },
        ms: t.duration_ms,
        detail: t
            .error
            .clone()
            .or_else(|| t.cause.clone())
            .unwrap_or_default(),
    }
}

/// The eval view as one HTML page.
pub fn render(e: &EvalInput) -> Result<String, RenderError> {
    let r = &e.report;
    let mut rows = Vec::new();
    for s in &r.scenarios {
        for row in &s.rows {
            let i = rows.len();
            rows.push(row_view(s, row, i));
        }
    }
    let p = &r.policy;
    let policy = vec![
        ("min pairs".into(), p.effective_min_pairs().to_string()),
        ("α".into(), p.alpha.to_string()),
        ("confidence".into(), p.confidence.to_string()),
        ("max error share".into(), p.max_error_share.to_string()),
        ("max cost ratio".into(), p.max_cost_ratio.to_string()),
        (
            "rule".into(),
            "verdict: exact McNemar alone; assertions: Tarone + Holm".into(),
        ),
    ];
    Page {
        chrome: Chrome::new(format!(
            "reel report — eval {} vs {}",
            r.arms[0].name, r.arms[1].name
        )),
        report: r,
        policy,
        scenarios: r.scenarios.iter().map(scenario_view).collect(),
        plot_h: fmt(rows.len() as f64 * PLOT_ROW + 18.0),
        rows,
        trials: {
            let mut t: Vec<&Row> = e.trials.iter().collect();
            t.sort_by(|a, b| (&a.scenario, a.rep, &a.arm).cmp(&(&b.scenario, b.rep, &b.arm)));
            t.into_iter().map(trial_view).collect()
        },
        plot_w: fmt(PLOT_W),
        zero_x: fmt(PLOT_W / 2.0),
    }
    .render()
}
