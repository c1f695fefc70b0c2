//! The report: every aggregate, status and reason derived from a manifest
//! and its rows ([`build`]), and the check that a persisted report is
//! exactly what its rows say ([`verify`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::policy::{self, Policy, Status};
use super::rows::{Arm, Axis, Loaded, Outcome, Row};
use super::stats::{self, PairTable};

/// The label of a scenario's verdict row (its assertion rows carry the
/// assertion's JSON).
pub const VERDICT_ROW: &str = "verdict";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub axis: Axis,
    pub arms: [Arm; 2],
    pub reps: u64,
    pub seed: u64,
    pub policy: Policy,
    /// The worst scenario status.
    pub status: Status,
    pub scenarios: Vec<ScenarioReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioReport {
    pub scenario: String,
    /// The verdict row's status.
    pub status: Status,
    pub reason: String,
    /// Per arm (A, B).
    pub trials: [Trials; 2],
    /// Pairs where both trials completed.
    pub pairs: u64,
    pub rows: Vec<RowReport>,
    pub cost: Cost,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trials {
    pub attempted: u64,
    pub completed: u64,
    pub errored: u64,
    pub passed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowReport {
    pub row: String,
    /// The paired 2×2 table: [both pass, only A, only B, neither].
    pub table: [u64; 4],
    pub pass_rate_a: Option<f64>,
    pub pass_rate_b: Option<f64>,
    /// B − A over the completed pairs.
    pub difference: Option<f64>,
    /// Newcombe's hybrid score interval (method 10) at the policy's confidence.
    pub interval: Option<[f64; 2]>,
    /// Two-sided exact McNemar p-value.
    pub p_value: Option<f64>,
    /// Holm-adjusted across every tested row of the report.
    pub p_adjusted: Option<f64>,
    pub status: Status,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// Per arm (A, B).
    pub arms: [ArmCost; 2],
    /// B's cost per completed trial over A's.
    pub ratio_per_completed: Option<f64>,
    /// `ok`, `exceeded` (ratio above the policy's) or `unknown` (no cost).
    pub guardrail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmCost {
    pub total_usd: f64,
    pub per_attempted: Option<f64>,
    pub per_completed: Option<f64>,
    pub per_passed: Option<f64>,
}

/// Derives the report from the rows and the manifest's policy.
pub fn build(loaded: &Loaded) -> Report {
    let m = &loaded.manifest;
    let mut by_scenario: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &loaded.rows {
        by_scenario.entry(&r.scenario).or_default().push(r);
    }
    let mut scenarios: Vec<ScenarioReport> = by_scenario
        .iter()
        .map(|(name, rows)| scenario_report(m, name, rows))
        .collect();
    adjust(&m.policy, &mut scenarios);
    let status = scenarios
        .iter()
        .map(|s| s.status)
        .max()
        .unwrap_or(Status::InfrastructureError);
    Report {
        axis: m.axis,
        arms: m.arms.clone(),
        reps: m.reps,
        seed: m.seed,
        policy: m.policy,
        status,
        scenarios,
    }
}

fn scenario_report(m: &super::rows::Manifest, name: &str, rows: &[&Row]) -> ScenarioReport {
    let mut trials = [Trials::default(); 2];
    let mut by_rep: BTreeMap<u64, [Option<&Row>; 2]> = BTreeMap::new();
    for r in rows {
        let Some(i) = m.arm_index(&r.arm) else {
            continue;
        };
        let t = &mut trials[i];
        t.attempted += 1;
        match r.outcome {
            Outcome::Errored => t.errored += 1,
            Outcome::Passed => (t.completed, t.passed) = (t.completed + 1, t.passed + 1),
            Outcome::Failed => t.completed += 1,
        }
        by_rep.entry(r.rep).or_default()[i] = Some(r);
    }
    let pairs: Vec<(&Row, &Row)> = by_rep
        .values()
        .filter_map(|[a, b]| Some((a.filter(|r| completed(r))?, b.filter(|r| completed(r))?)))
        .collect();
    let attempted = trials[0].attempted + trials[1].attempted;
    let errored = trials[0].errored + trials[1].errored;
    let gate = policy::gate(&m.policy, attempted, errored, pairs.len() as u64);
    let mut tables: Vec<(String, PairTable)> = vec![(VERDICT_ROW.into(), PairTable::default())];
    let labels: BTreeSet<&str> = pairs
        .iter()
        .flat_map(|(a, _)| a.assertions.iter().map(|x| x.label.as_str()))
        .collect();
    tables.extend(labels.iter().map(|l| (l.to_string(), PairTable::default())));
    for (a, b) in &pairs {
        tables[0]
            .1
            .add(a.outcome == Outcome::Passed, b.outcome == Outcome::Passed);
        for (label, table) in tables.iter_mut().skip(1) {
            if let (Some(x), Some(y)) = (assertion(a, label), assertion(b, label)) {
                table.add(x, y);
            }
        }
    }
    let rows = tables
        .into_iter()
        .map(|(row, t)| row_report(&m.policy, row, &t, gate.clone()))
        .collect::<Vec<_>>();
    ScenarioReport {
        scenario: name.to_owned(),
        status: rows[0].status,
        reason: rows[0].reason.clone(),
        trials,
        pairs: pairs.len() as u64,
        cost: cost(&m.policy, rows_cost(m, rows_ref(&by_rep)), &trials),
        rows,
    }
}

fn rows_ref<'a>(by_rep: &BTreeMap<u64, [Option<&'a Row>; 2]>) -> Vec<&'a Row> {
    by_rep
        .values()
        .flat_map(|p| p.iter().flatten().copied())
        .collect()
}

fn rows_cost(m: &super::rows::Manifest, rows: Vec<&Row>) -> [f64; 2] {
    let mut total = [0.0; 2];
    for r in rows {
        if let (Some(i), Some(c)) = (m.arm_index(&r.arm), r.cost_usd) {
            total[i] += c;
        }
    }
    total
}

fn completed(r: &Row) -> bool {
    r.outcome != Outcome::Errored
}

fn assertion(r: &Row, label: &str) -> Option<bool> {
    r.assertions
        .iter()
        .find(|x| x.label == label)
        .map(|x| x.pass)
}

fn row_report(
    policy: &Policy,
    row: String,
    t: &PairTable,
    gate: Option<(Status, String)>,
) -> RowReport {
    let tested = gate.is_none() && t.pairs() >= policy.effective_min_pairs();
    let (status, reason) = gate.unwrap_or_else(|| {
        policy::gate(policy, 1, 0, t.pairs()).unwrap_or((Status::NoDifference, String::new()))
    });
    RowReport {
        row,
        table: [t.both, t.only_a, t.only_b, t.neither],
        pass_rate_a: t.rate_a(),
        pass_rate_b: t.rate_b(),
        difference: t.difference(),
        interval: stats::newcombe_paired(t, policy.confidence).map(|i| [i.low, i.high]),
        p_value: tested.then(|| stats::exact_mcnemar(t.only_a, t.only_b)),
        p_adjusted: None,
        status,
        reason,
    }
}

/// Holm across every tested row of the report, then each tested row's status.
fn adjust(policy: &Policy, scenarios: &mut [ScenarioReport]) {
    let raw: Vec<f64> = scenarios
        .iter()
        .flat_map(|s| s.rows.iter().filter_map(|r| r.p_value))
        .collect();
    let mut adjusted = stats::holm(&raw).into_iter();
    for s in scenarios.iter_mut() {
        for r in s.rows.iter_mut().filter(|r| r.p_value.is_some()) {
            let p = adjusted.next().unwrap_or(1.0);
            let [both, only_a, only_b, neither] = r.table;
            let t = PairTable {
                both,
                only_a,
                only_b,
                neither,
            };
            (r.status, r.reason) = policy::decide(policy, &t, p);
            r.p_adjusted = Some(p);
        }
        s.status = s.rows[0].status;
        s.reason = s.rows[0].reason.clone();
        if s.cost.guardrail == "exceeded" {
            s.reason.push_str(&format!(
                "; cost guardrail exceeded: B costs {:.2}× A per completed trial (policy {:.2}×)",
                s.cost.ratio_per_completed.unwrap_or(f64::NAN),
                policy.max_cost_ratio
            ));
        }
    }
}

fn cost(policy: &Policy, total: [f64; 2], t: &[Trials; 2]) -> Cost {
    let per = |x: f64, n: u64| (n > 0).then(|| x / n as f64);
    let arms = [0, 1].map(|i| ArmCost {
        total_usd: total[i],
        per_attempted: per(total[i], t[i].attempted),
        per_completed: per(total[i], t[i].completed),
        per_passed: per(total[i], t[i].passed),
    });
    let ratio = match (arms[0].per_completed, arms[1].per_completed) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a),
        _ => None,
    };
    let guardrail = match ratio {
        None => "unknown",
        Some(r) if r > policy.max_cost_ratio => "exceeded",
        Some(_) => "ok",
    };
    Cost {
        arms,
        ratio_per_completed: ratio,
        guardrail: guardrail.into(),
    }
}

/// The JSON envelope of a report (`schema/eval-report.json`).
pub fn envelope(report: &Report) -> serde_json::Value {
    serde_json::json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "eval",
        "ok": true,
        "results": report,
        "error": null,
    })
}

/// Checks a persisted `report.json` against the report its rows give:
/// `Err` names the first field that disagrees.
pub fn verify(persisted: &serde_json::Value, fresh: &Report) -> Result<(), String> {
    let fresh = serde_json::to_value(fresh).map_err(|e| e.to_string())?;
    let stored = persisted.get("results").unwrap_or(&serde_json::Value::Null);
    match first_difference(stored, &fresh, String::new()) {
        None => Ok(()),
        Some(path) => Err(format!(
            "`results{path}` disagrees with what the rows and the policy give: the report was \
                edited or is stale"
        )),
    }
}

fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                _ => Some(format!("{at}.{k}")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))),
        (Value::Number(x), Value::Number(y)) => {
            let same = match (x.as_f64(), y.as_f64()) {
                (Some(p), Some(q)) => p == q,
                _ => x == y,
            };
            (!same).then_some(at)
        }
        _ => (a != b).then_some(at),
    }
}
