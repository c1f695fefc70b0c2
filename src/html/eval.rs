//! The eval view: per row (a scenario, or one assertion of it), both arms'
//! pass rates, the paired difference with its confidence interval drawn on
//! a −1…+1 axis, the status and its reason; then the trial rows.
//!
//! The input is a small documented model ([`EvalInput`],
//! `schema/report-eval.json`) that an eval run writes; `reel report --eval
//! FILE` reads it and checks what a page can check (two arms, rates within
//! their counts, intervals containing their difference). The statistics are
//! the eval's; this view draws them and decides nothing.

use askama::Template;
use serde::Deserialize;

use super::rerun::InputError;
use super::timeline::fmt;
use super::{Chrome, RenderError};

/// An eval's report, as the page reads it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvalInput {
    /// Exactly two arms: A (the baseline) then B (the candidate).
    pub arms: Vec<Arm>,
    /// The one axis the arms move: `skill`, `agent-version`, `model`, …
    pub axis: String,
    /// The policy the statuses were decided under (shown as given).
    #[serde(default)]
    pub policy: serde_json::Map<String, serde_json::Value>,
    pub rows: Vec<EvalRow>,
    #[serde(default)]
    pub trials: Vec<Trial>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub name: String,
    pub source: String,
}

/// One compared row.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvalRow {
    pub scenario: String,
    /// `None`: the scenario's verdict; else one assertion key.
    #[serde(default)]
    pub assertion: Option<String>,
    pub a: ArmStats,
    pub b: ArmStats,
    /// Matched pairs where both trials completed.
    pub pairs: u64,
    /// Pass rate of B minus pass rate of A over the pairs.
    #[serde(default)]
    pub difference: Option<f64>,
    /// The difference's confidence interval `[low, high]`.
    #[serde(default)]
    pub interval: Option<[f64; 2]>,
    #[serde(default)]
    pub p_value: Option<f64>,
    /// `improved` | `regressed` | `no_difference` | `insufficient_evidence` | `infrastructure_error`.
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmStats {
    pub passed: u64,
    pub completed: u64,
    pub attempted: u64,
}

/// One trial.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Trial {
    pub scenario: String,
    pub arm: String,
    pub rep: u64,
    /// `pass` | `fail` | `error`.
    pub status: String,
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    #[serde(default)]
    pub detail: Option<String>,
}

impl EvalInput {
    /// Reads and checks the eval report at `path`.
    pub fn load(path: &std::path::Path) -> Result<EvalInput, InputError> {
        let err = |message: String| InputError {
            file: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let e: EvalInput = serde_json::from_str(&text).map_err(|e| {
            err(format!(
                "not an eval report input: {e} (the format is schema/report-eval.json)"
            ))
        })?;
        e.check().map_err(err)?;
        Ok(e)
    }

    fn check(&self) -> Result<(), String> {
        if self.arms.len() != 2 {
            return Err(format!(
                "`arms` has {} entries; an eval compares exactly two (A, then B)",
                self.arms.len()
            ));
        }
        for (i, r) in self.rows.iter().enumerate() {
            for (arm, s) in [("a", r.a), ("b", r.b)] {
                if s.passed > s.completed || s.completed > s.attempted {
                    return Err(format!(
                        "rows[{i}].{arm}: passed ({}) ≤ completed ({}) ≤ attempted ({}) does not hold",
                        s.passed, s.completed, s.attempted
                    ));
                }
            }
            let unit = |v: f64| (-1.0..=1.0).contains(&v);
            if let Some(d) = r.difference
                && !unit(d)
            {
                return Err(format!("rows[{i}].difference {d} is outside −1…1"));
            }
            if let Some([lo, hi]) = r.interval {
                let inside = r.difference.is_none_or(|d| lo <= d && d <= hi);
                if !(unit(lo) && unit(hi) && lo <= hi && inside) {
                    return Err(format!(
                        "rows[{i}].interval [{lo}, {hi}] must be within −1…1, low ≤ high, and contain the difference"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One row as drawn.
pub struct RowView {
    pub label: String,
    pub a_rate: String,
    pub b_rate: String,
    pub pairs: u64,
    pub difference: String,
    pub interval: String,
    pub p_value: String,
    pub status: String,
    pub reason: String,
    /// The plot: y of the row, x of the point and of the interval's ends.
    pub y: String,
    pub point: Option<String>,
    pub ci: Option<(String, String)>,
}

const PLOT_W: f64 = 360.0;
const PLOT_ROW: f64 = 22.0;

#[derive(Template)]
#[template(path = "eval.html")]
struct Page<'a> {
    chrome: Chrome,
    input: &'a EvalInput,
    rows: Vec<RowView>,
    plot_w: String,
    plot_h: String,
    zero_x: String,
}

/// The eval view as one HTML page.
pub fn render(e: &EvalInput) -> Result<String, RenderError> {
    let x = |v: f64| fmt((v + 1.0) / 2.0 * PLOT_W);
    let rate = |s: ArmStats| match s.completed {
        0 => format!("– (0 of {} completed)", s.attempted),
        n => format!(
            "{:.0}% ({}/{n}, {} attempted)",
            s.passed as f64 * 100.0 / n as f64,
            s.passed,
            s.attempted
        ),
    };
    let rows = e
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| RowView {
            label: match &r.assertion {
                Some(a) => format!("{} · {a}", r.scenario),
                None => r.scenario.clone(),
            },
            a_rate: rate(r.a),
            b_rate: rate(r.b),
            pairs: r.pairs,
            difference: r
                .difference
                .map(|d| format!("{:+.2}", d))
                .unwrap_or_default(),
            interval: r
                .interval
                .map(|[l, h]| format!("[{l:+.2}, {h:+.2}]"))
                .unwrap_or_default(),
            p_value: r.p_value.map(|p| format!("{p:.4}")).unwrap_or_default(),
            status: r.status.clone(),
            reason: r.reason.clone().unwrap_or_default(),
            y: fmt(i as f64 * PLOT_ROW + PLOT_ROW / 2.0),
            point: r.difference.map(x),
            ci: r.interval.map(|[l, h]| (x(l), x(h))),
        })
        .collect::<Vec<_>>();
    Page {
        chrome: Chrome::new(format!(
            "reel report — eval {} vs {}",
            e.arms[0].name, e.arms[1].name
        )),
        input: e,
        plot_h: fmt(rows.len() as f64 * PLOT_ROW + 18.0),
        rows,
        plot_w: fmt(PLOT_W),
        zero_x: x(0.0),
    }
    .render()
}
