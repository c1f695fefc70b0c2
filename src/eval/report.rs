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
    /// Tarone's K for the assertion rows (`None`: none tested).
    pub secondary_k: Option<u64>,
    /// The first cause of each errored or failed trial that has one, per arm.
    pub causes: [Vec<String>; 2],
    pub rows: Vec<RowReport>,
    pub cost: Cost,
    /// Per arm (A, B): this scenario's earlier evals with the same arm
    /// identity (`None` without identities in the manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<[super::history::ArmHistory; 2]>,
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
    /// The p-value the status was decided on: the raw p for the verdict
    /// (the primary endpoint, tested alone), Holm-adjusted among the rows
    /// Tarone's rule counts for an assertion row, the verdict's for a row
    /// that duplicates it, `None` for a row not tested or not counted.
    pub p_adjusted: Option<f64>,
    /// The smallest p-value the row's discordant pairs allow (2·½^d).
    pub min_p: Option<f64>,
    pub role: Role,
    pub status: Status,
    pub reason: String,
}

/// How a row takes part in the scenario's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The scenario verdict: the primary endpoint, tested alone at α.
    Primary,
    /// An assertion row counted in Tarone's family and Holm-corrected.
    Secondary,
    /// An assertion row that cannot reach significance at α/K (too few
    /// discordant pairs): reported, not counted.
    NotCounted,
    /// An assertion row with the verdict's outcome in every pair: decided
    /// by the verdict, not counted twice.
    Duplicate,
    /// Not tested: the scenario's gate (errors, too few pairs) decided.
    Untested,
}

impl Role {
    /// The role as the text and HTML reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Secondary => "secondary",
            Role::NotCounted => "not counted",
            Role::Duplicate => "= verdict",
            Role::Untested => "untested",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// Per arm (A, B).
    pub arms: [ArmCost; 2],
    /// B's cost per completed trial over A's.
    pub ratio_per_completed: Option<f64>,
    /// `ok`, `exceeded` (ratio above the policy's), `scripted` (every trial
    /// ran against a scripted model: nothing billed) or `unknown` (no cost).
    pub guardrail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmCost {
    /// Recorded usage of live trials; a scripted trial costs $0.
    pub total_usd: f64,
    /// Trials run against a scripted model (no tokens billed).
    pub scripted: u64,
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
    let scenarios: Vec<ScenarioReport> = by_scenario
        .iter()
        .map(|(name, rows)| {
            let mut s = scenario_report(m, name, rows);
            s.history = m.identities.as_ref().map(|ids| {
                [0, 1].map(|i| {
                    let t = s.trials[i];
                    super::history::summarize(
                        &loaded.history,
                        name,
                        &ids[i],
                        (t.completed, t.passed),
                        m.policy.confidence,
                    )
                })
            });
            s
        })
        .collect();
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
    let rows = compare_rows(&m.policy, &pairs, gate);
    let all = rows_ref(&by_rep);
    let secondary_k = rows
        .iter()
        .any(|r| r.role == Role::Secondary || r.role == Role::NotCounted)
        .then(|| {
            let min_p: Vec<f64> = rows
                .iter()
                .filter(|r| matches!(r.role, Role::Secondary | Role::NotCounted))
                .filter_map(|r| r.min_p)
                .collect();
            stats::tarone(&min_p, m.policy.alpha).k as u64
        });
    let mut report = ScenarioReport {
        scenario: name.to_owned(),
        status: rows[0].status,
        reason: rows[0].reason.clone(),
        trials,
        pairs: pairs.len() as u64,
        secondary_k,
        causes: [0, 1].map(|i| causes_of(m, &all, i)),
        cost: cost(&m.policy, arm_costs(m, &all), &trials),
        rows,
        history: None,
    };
    explain(&m.policy, &mut report);
    report
}

/// The scenario's reason, completed: the B arm's first failure cause when
/// it regressed (the skill broke), A's when it improved, and the guardrail.
fn explain(policy: &Policy, s: &mut ScenarioReport) {
    let losing = match s.status {
        Status::Regression => Some(1),
        Status::Improvement => Some(0),
        Status::InfrastructureError => Some(if s.trials[1].errored >= s.trials[0].errored {
            1
        } else {
            0
        }),
        _ => None,
    };
    if let Some(i) = losing
        && let Some(first) = s.causes[i].first()
    {
        s.reason
            .push_str(&format!("; arm {}'s trials: {first}", ["A", "B"][i]));
    }
    if s.cost.guardrail == "exceeded" {
        s.reason.push_str(&format!(
            "; cost guardrail exceeded: B costs {:.2}× A per completed trial (policy {:.2}×)",
            s.cost.ratio_per_completed.unwrap_or(f64::NAN),
            policy.max_cost_ratio
        ));
    }
}

/// Distinct first causes of an arm's failed or errored trials, most
/// frequent first, each with its count.
fn causes_of(m: &super::rows::Manifest, rows: &[&Row], arm: usize) -> Vec<String> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| m.arm_index(&r.arm) == Some(arm)) {
        if let Some(c) = r.cause.as_deref().or(r.error.as_deref()) {
            *counts.entry(c).or_default() += 1;
        }
    }
    let mut v: Vec<(&str, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v.into_iter()
        .map(|(c, n)| format!("{n} trial(s): {c}"))
        .collect()
}

/// One row's pairs: the verdict's or one assertion's (A, B) outcome per
/// completed pair, `None` where a trial did not report the assertion.
type Outcomes = Vec<(Option<bool>, Option<bool>)>;

/// The verdict row (primary, tested alone) and the assertion rows
/// (secondary: Tarone's family, Holm within it).
fn compare_rows(
    policy: &Policy,
    pairs: &[(&Row, &Row)],
    gate: Option<(Status, String)>,
) -> Vec<RowReport> {
    let passed = |r: &Row| Some(r.outcome == Outcome::Passed);
    let verdict: Outcomes = pairs.iter().map(|(a, b)| (passed(a), passed(b))).collect();
    let labels: BTreeSet<&str> = pairs
        .iter()
        .flat_map(|(a, _)| a.assertions.iter().map(|x| x.label.as_str()))
        .collect();
    let mut rows = vec![row_report(policy, VERDICT_ROW.into(), &verdict, &gate)];
    if let Some(p) = rows[0].p_value {
        (rows[0].status, rows[0].reason) = policy::decide(policy, &table_of(&verdict), p);
        rows[0].p_adjusted = Some(p);
        rows[0].role = Role::Primary;
    }
    for label in labels {
        let outcomes: Outcomes = pairs
            .iter()
            .map(|(a, b)| (assertion(a, label), assertion(b, label)))
            .collect();
        let mut row = row_report(policy, label.to_owned(), &outcomes, &gate);
        if row.p_value.is_some() && outcomes == verdict {
            row.role = Role::Duplicate;
            row.p_adjusted = rows[0].p_adjusted;
            row.status = rows[0].status;
            row.reason = "the verdict's outcome in every pair: decided by the verdict, not \
                counted twice"
                .into();
        }
        rows.push(row);
    }
    secondary(policy, &mut rows[1..]);
    rows
}

/// Tarone's rule and Holm among the tested, non-duplicate assertion rows.
fn secondary(policy: &Policy, rows: &mut [RowReport]) {
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].p_value.is_some() && rows[i].role != Role::Duplicate)
        .collect();
    let p: Vec<f64> = tested.iter().filter_map(|&i| rows[i].p_value).collect();
    let min_p: Vec<f64> = tested.iter().filter_map(|&i| rows[i].min_p).collect();
    let (family, adjusted) = stats::tarone_holm(&p, &min_p, policy.alpha);
    for (j, &i) in tested.iter().enumerate() {
        let r = &mut rows[i];
        let t = PairTable::from(r.table);
        match adjusted[j] {
            Some(pa) => {
                r.role = Role::Secondary;
                r.p_adjusted = Some(pa);
                (r.status, r.reason) = policy::decide(policy, &t, pa);
                r.reason.push_str(&format!(
                    " (Holm among {} row(s) Tarone's rule counts, K = {})",
                    family.counted.iter().filter(|c| **c).count(),
                    family.k
                ));
            }
            None => {
                r.role = Role::NotCounted;
                r.status = Status::NoDifference;
                r.reason = format!(
                    "{} discordant pair(s): the smallest possible p is {:.4} > α/K = {:.4}; \
                        reported, not counted (Tarone's rule)",
                    t.only_a + t.only_b,
                    r.min_p.unwrap_or(1.0),
                    policy.alpha / family.k as f64
                );
            }
        }
    }
}

impl From<[u64; 4]> for PairTable {
    fn from([both, only_a, only_b, neither]: [u64; 4]) -> Self {
        PairTable {
            both,
            only_a,
            only_b,
            neither,
        }
    }
}

fn table_of(outcomes: &Outcomes) -> PairTable {
    let mut t = PairTable::default();
    for (a, b) in outcomes {
        if let (Some(x), Some(y)) = (a, b) {
            t.add(*x, *y);
        }
    }
    t
}

fn rows_ref<'a>(by_rep: &BTreeMap<u64, [Option<&'a Row>; 2]>) -> Vec<&'a Row> {
    by_rep
        .values()
        .flat_map(|p| p.iter().flatten().copied())
        .collect()
}

/// Per arm: the recorded cost total and how many trials were scripted.
fn arm_costs(m: &super::rows::Manifest, rows: &[&Row]) -> [(f64, u64); 2] {
    let mut total = [(0.0, 0); 2];
    for r in rows {
        let Some(i) = m.arm_index(&r.arm) else {
            continue;
        };
        if r.scripted {
            total[i].1 += 1;
        } else if let Some(c) = r.cost_usd {
            total[i].0 += c;
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

/// A row's table, interval and raw p (when the gates let it be tested);
/// its role and status are settled by the caller.
fn row_report(
    policy: &Policy,
    row: String,
    outcomes: &Outcomes,
    gate: &Option<(Status, String)>,
) -> RowReport {
    let t = table_of(outcomes);
    let tested = gate.is_none() && t.pairs() >= policy.effective_min_pairs();
    let (status, reason) = gate.clone().unwrap_or_else(|| {
        policy::gate(policy, 1, 0, t.pairs()).unwrap_or((Status::NoDifference, String::new()))
    });
    RowReport {
        row,
        table: [t.both, t.only_a, t.only_b, t.neither],
        pass_rate_a: t.rate_a(),
        pass_rate_b: t.rate_b(),
        difference: t.difference(),
        interval: stats::newcombe_paired(&t, policy.confidence).map(|i| [i.low, i.high]),
        p_value: tested.then(|| stats::exact_mcnemar(t.only_a, t.only_b)),
        p_adjusted: None,
        min_p: tested.then(|| stats::min_achievable_p(t.only_a + t.only_b)),
        role: Role::Untested,
        status,
        reason,
    }
}

fn cost(policy: &Policy, total: [(f64, u64); 2], t: &[Trials; 2]) -> Cost {
    let per = |x: f64, n: u64| (n > 0).then(|| x / n as f64);
    let arms = [0, 1].map(|i| ArmCost {
        total_usd: total[i].0,
        scripted: total[i].1,
        per_attempted: per(total[i].0, t[i].attempted),
        per_completed: per(total[i].0, t[i].completed),
        per_passed: per(total[i].0, t[i].passed),
    });
    let all_scripted = (0..2).all(|i| t[i].attempted > 0 && total[i].1 == t[i].attempted);
    let ratio = match (arms[0].per_completed, arms[1].per_completed) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a),
        _ => None,
    };
    let guardrail = match ratio {
        _ if all_scripted => "scripted",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::rows::{AssertionResult, Manifest};
    use proptest::test_runner::{RngAlgorithm, TestRng};
    use rand_core_shim::next_f64;

    /// A uniform draw in [0, 1) from proptest's seeded generator.
    mod rand_core_shim {
        pub fn next_f64(rng: &mut proptest::test_runner::TestRng) -> f64 {
            use proptest::prelude::Rng;
            (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn manifest(reps: u64) -> Manifest {
        Manifest {
            format: 1,
            axis: Axis::Skill,
            arms: [
                Arm {
                    name: "old".into(),
                    source: "skills/old".into(),
                },
                Arm {
                    name: "new".into(),
                    source: "skills/new".into(),
                },
            ],
            scenarios: vec!["note.yaml".into()],
            reps,
            seed: 0,
            policy: Policy::default(),
            identities: None,
        }
    }

    /// One trial row: the verdict and each assertion's result.
    fn trial(arm: &str, rep: u64, pass: bool, assertions: &[(&str, bool)]) -> Row {
        Row {
            scenario: "note".into(),
            arm: arm.into(),
            rep,
            seed: rep,
            outcome: if pass {
                Outcome::Passed
            } else {
                Outcome::Failed
            },
            assertions: assertions
                .iter()
                .map(|(l, p)| AssertionResult {
                    label: (*l).into(),
                    pass: *p,
                })
                .collect(),
            cost_usd: Some(0.0),
            duration_ms: 1,
            error: None,
            cause: None,
            scripted: true,
        }
    }

    #[test]
    fn a_six_to_zero_verdict_drop_is_a_regression_whatever_the_assertion_rows() {
        let steady: Vec<String> = (0..9).map(|i| format!("steady-{i}")).collect();
        let mut rows = Vec::new();
        for rep in 0..6 {
            for (arm, pass) in [("old", true), ("new", false)] {
                let mut a: Vec<(&str, bool)> = steady.iter().map(|l| (l.as_str(), true)).collect();
                a.push(("file_exists", pass));
                rows.push(trial(arm, rep, pass, &a));
            }
        }
        let r = build(&Loaded {
            manifest: manifest(6),
            rows,
            history: Vec::new(),
        });
        let s = &r.scenarios[0];
        assert_eq!(s.status, Status::Regression, "{}", s.reason);
        assert_eq!(r.status, Status::Regression);
        assert_eq!(s.rows[0].role, Role::Primary);
        let p = s.rows[0].p_adjusted.unwrap();
        assert!((p - 0.03125).abs() < 1e-12, "{p}");
        let dup = s.rows.iter().find(|x| x.row == "file_exists").unwrap();
        assert_eq!(dup.role, Role::Duplicate);
        assert_eq!(dup.status, Status::Regression);
        let not_counted = s.rows.iter().filter(|x| x.role == Role::NotCounted).count();
        assert_eq!(
            not_counted, 9,
            "rows without a discordant pair are not counted"
        );
        assert_eq!(s.cost.guardrail, "scripted");
    }

    /// Simulated A/A evals (identical arms): how often any row is called
    /// different. Returns (verdict false positives, any-row false positives).
    fn simulate(reps: u64, runs: u64, pass: f64, assertion_pass: &[f64], seed: u8) -> (u64, u64) {
        let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
        let labels: Vec<String> = (0..assertion_pass.len()).map(|i| format!("a{i}")).collect();
        let (mut verdict_fp, mut any_fp) = (0, 0);
        for _ in 0..runs {
            let mut rows = Vec::new();
            for rep in 0..reps {
                for arm in ["old", "new"] {
                    let a: Vec<(&str, bool)> = labels
                        .iter()
                        .zip(assertion_pass)
                        .map(|(l, p)| (l.as_str(), next_f64(&mut rng) < *p))
                        .collect();
                    rows.push(trial(arm, rep, next_f64(&mut rng) < pass, &a));
                }
            }
            let r = build(&Loaded {
                manifest: manifest(reps),
                rows,
                history: Vec::new(),
            });
            let differs = |s: Status| matches!(s, Status::Regression | Status::Improvement);
            let s = &r.scenarios[0];
            verdict_fp += u64::from(differs(s.status));
            any_fp += u64::from(s.rows.iter().any(|x| differs(x.status)));
        }
        (verdict_fp, any_fp)
    }

    #[test]
    fn identical_arms_are_rarely_called_different_over_many_seeds() {
        const RUNS: u64 = 4000;
        let alpha = Policy::default().alpha;
        let mut worst = 0.0_f64;
        for (i, (reps, pass)) in [(6, 0.5), (6, 0.8), (20, 0.5), (20, 0.8), (20, 0.3)]
            .into_iter()
            .enumerate()
        {
            let (verdict, any) = simulate(reps, RUNS, pass, &[0.5, 0.7, 0.9, 0.95], i as u8);
            let (v, a) = (verdict as f64 / RUNS as f64, any as f64 / RUNS as f64);
            eprintln!(
                "A/A {reps} reps, pass {pass}: verdict false positives {v:.4}, any row {a:.4} \
                 over {RUNS} simulated evals"
            );
            worst = worst.max(v);
            // The exact test is conservative: the verdict's rate stays under
            // α; the assertion family (Holm) under α too, so any row under 2α.
            assert!(v <= alpha, "verdict false-positive rate {v} at {reps} reps");
            assert!(
                a <= 2.0 * alpha,
                "any-row false-positive rate {a} at {reps} reps"
            );
        }
        assert!(worst < alpha);
    }
}
