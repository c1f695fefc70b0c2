//! `report.md` of an eval: what `report.json` says, for a person.

use std::fmt::Write;

use crate::eval::history::ArmHistory;
use crate::eval::report::{Cost, Report, ScenarioReport};

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{:.0}%", v * 100.0))
}

fn num(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.4}"))
}

/// The Markdown report (`report.md`; also the text report on stderr).
pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let [a, b] = &r.arms;
    let _ = writeln!(s, "# reel eval: {}\n", r.status.as_str());
    let _ = writeln!(
        s,
        "Axis: {:?}. A = `{}` ({}), B = `{}` ({}). {} reps, seed {}.",
        r.axis, a.name, a.source, b.name, b.source, r.reps, r.seed
    );
    let p = &r.policy;
    let _ = writeln!(
        s,
        "Policy: ≥ {} completed pairs, ≤ {:.0}% errored, α = {}: the verdict by the exact McNemar \
         test alone, assertion rows Holm-corrected among those Tarone's rule counts; {:.0}% \
         Newcombe interval, cost ratio ≤ {}.\n",
        p.effective_min_pairs(),
        p.max_error_share * 100.0,
        p.alpha,
        p.confidence * 100.0,
        p.max_cost_ratio
    );
    for sc in &r.scenarios {
        scenario(&mut s, sc);
    }
    s
}

fn scenario(s: &mut String, sc: &ScenarioReport) {
    let _ = writeln!(
        s,
        "## {} — {}\n\n{}\n",
        sc.scenario,
        sc.status.as_str(),
        sc.reason
    );
    let [ta, tb] = &sc.trials;
    let _ = writeln!(
        s,
        "Trials (attempted / completed / errored / passed): A {}/{}/{}/{}, B {}/{}/{}/{}; {} completed pairs.\n",
        ta.attempted,
        ta.completed,
        ta.errored,
        ta.passed,
        tb.attempted,
        tb.completed,
        tb.errored,
        tb.passed,
        sc.pairs
    );
    let _ = writeln!(
        s,
        "| row | role | A | B | B − A | interval | p | p decided on | status |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    for row in &sc.rows {
        let ci = row
            .interval
            .map_or("–".into(), |[l, h]| format!("[{l:+.2}, {h:+.2}]"));
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.row.replace('|', "\\|"),
            row.role.label(),
            pct(row.pass_rate_a),
            pct(row.pass_rate_b),
            row.difference
                .map_or("–".into(), |d| format!("{:+.0} pts", d * 100.0)),
            ci,
            num(row.p_value),
            num(row.p_adjusted),
            row.status.as_str()
        );
    }
    if let Some(k) = sc.secondary_k {
        let _ = writeln!(s, "\nTarone's K for the assertion rows: {k}.");
    }
    for (arm, causes) in ["A", "B"].iter().zip(&sc.causes) {
        for c in causes.iter().take(3) {
            let _ = writeln!(s, "\n{arm} cause: {c}");
        }
    }
    if let Some(h) = &sc.history {
        for (arm, h) in ["A", "B"].iter().zip(h) {
            let _ = writeln!(s, "\nHistory {arm}: {}", history(h));
        }
    }
    let _ = writeln!(s, "\n{}\n", cost(&sc.cost));
}

fn history(h: &ArmHistory) -> String {
    match (h.pass_rate, h.band) {
        (Some(p), Some([lo, hi])) => format!(
            "{}: {:.0}% over {} earlier run(s) ({}/{}), noise band [{:.0}%, {:.0}%]",
            h.state,
            p * 100.0,
            h.runs,
            h.passed,
            h.completed,
            lo * 100.0,
            hi * 100.0
        ),
        _ => "new: no earlier run of this arm".into(),
    }
}

fn cost(c: &Cost) -> String {
    if c.guardrail == "scripted" {
        return format!(
            "Cost: $0 — scripted (A {} and B {} trials ran against a scripted model; nothing billed).",
            c.arms[0].scripted, c.arms[1].scripted
        );
    }
    format!(
        "Cost per attempted / completed / passed trial: A ${} / ${} / ${}, B ${} / ${} / ${}; \
         guardrail {} (ratio {}).",
        num(c.arms[0].per_attempted),
        num(c.arms[0].per_completed),
        num(c.arms[0].per_passed),
        num(c.arms[1].per_attempted),
        num(c.arms[1].per_completed),
        num(c.arms[1].per_passed),
        c.guardrail,
        num(c.ratio_per_completed)
    )
}

#[cfg(test)]
mod tests {
    use crate::eval::policy::Policy;
    use crate::eval::rows::{Arm, AssertionResult, Axis, Loaded, Manifest, Outcome, Row};

    fn row(arm: &str, rep: u64, outcome: Outcome, cost: f64) -> Row {
        Row {
            scenario: "note".into(),
            arm: arm.into(),
            rep,
            seed: rep,
            outcome,
            assertions: vec![AssertionResult {
                label: r#"{"file_exists":"outputs/note.md"}"#.into(),
                pass: outcome == Outcome::Passed,
            }],
            cost_usd: Some(cost),
            duration_ms: 10,
            error: None,
            cause: (outcome == Outcome::Failed)
                .then(|| "file_exists outputs/note.md: missing".into()),
            scripted: false,
        }
    }

    #[test]
    fn the_markdown_report_reads_as_a_table() {
        let arm = |n: &str, s: &str| Arm {
            name: n.into(),
            source: s.into(),
        };
        let mut rows = Vec::new();
        for rep in 0..8 {
            rows.push(row("old", rep, Outcome::Failed, 0.01));
            let b = if rep == 7 {
                Outcome::Failed
            } else {
                Outcome::Passed
            };
            rows.push(row("new", rep, b, 0.02));
        }
        let loaded = Loaded {
            manifest: Manifest {
                format: 1,
                axis: Axis::Skill,
                arms: [arm("old", "git:main:skills/x"), arm("new", "skills/x")],
                scenarios: vec!["note.yaml".into()],
                reps: 8,
                seed: 0,
                policy: Policy::default(),
                identities: None,
            },
            rows,
            history: Vec::new(),
        };
        let report = crate::eval::report::build(&loaded);
        insta::assert_snapshot!(super::markdown(&report));
    }

    /// A multi-turn scenario's trials: each turn's assertion is a row of
    /// its own, so the arms are compared turn by turn.
    #[test]
    fn a_multi_turn_scenario_reports_a_row_per_turn_assertion() {
        let arm = |n: &str, s: &str| Arm {
            name: n.into(),
            source: s.into(),
        };
        let mut rows = Vec::new();
        for rep in 0..6 {
            for (name, turn_3) in [("old", true), ("new", false)] {
                let mut r = row(name, rep, Outcome::Passed, 0.0);
                r.scenario = "conversation".into();
                r.assertions = vec![
                    AssertionResult {
                        label: r#"turn 1: {"transcript_contains":"KESTREL-42"}"#.into(),
                        pass: true,
                    },
                    AssertionResult {
                        label: r#"turn 3: {"tool_result_contains":"\"total\": 245"}"#.into(),
                        pass: turn_3,
                    },
                ];
                if !turn_3 {
                    r.outcome = Outcome::Failed;
                }
                rows.push(r);
            }
        }
        let loaded = Loaded {
            manifest: Manifest {
                format: 1,
                axis: Axis::Skill,
                arms: [
                    arm("old", "git:main:skills/csv-stats"),
                    arm("new", "skills/csv-stats"),
                ],
                scenarios: vec!["conversation.yaml".into()],
                reps: 6,
                seed: 0,
                policy: Policy::default(),
                identities: None,
            },
            rows,
            history: Vec::new(),
        };
        let report = crate::eval::report::build(&loaded);
        insta::assert_snapshot!(super::markdown(&report));
    }
}
