//! `verify-cassettes --margins`: how close each recorded run came to the
//! budgets of its count-bound assertions (`tool_calls_max: 12` and the run
//! made 11 → headroom 1.1×), as cowork-harness reports them.
//!
//! The recorded value of every key is read off the re-driven
//! [`RunRecord`] through the very accessor the key's assertion judges
//! (`RunRecord::tool_calls_total`, `RunRecord::dispatch_count`, …), so the
//! margin can never disagree with the verdict about what the run did. The
//! re-drive happens only for a cassette that carries at least one such key.
//!
//! Diagnostic only: nothing here changes the gate's verdict or exit code, and
//! nothing here renders (see [`crate::report::verify`]). A single cassette is a
//! single sample, not a distribution.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::cassette::Cassette;
use crate::evidence::RunRecord;

/// Which side of the budget the key bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MarginKind {
    /// A ceiling: headroom = budget / recorded.
    Max,
    /// A floor: headroom = recorded / budget.
    Min,
}

/// A count-bound assertion key and where its recorded value comes from.
pub struct CountBound {
    pub key: &'static str,
    pub kind: MarginKind,
    /// The recorded value, `None` when the recording cannot show it.
    pub recorded: fn(&RunRecord) -> Option<f64>,
}

/// The count-bound keys `--margins` reports, in report order (cowork-harness
/// `COUNT_BOUND_MARGIN_KEYS`). A key missing here silently drops from the
/// report, so the list is explicit.
pub const COUNT_BOUND: [CountBound; 10] = [
    CountBound {
        key: "tool_calls_max",
        kind: MarginKind::Max,
        recorded: |r| Some(r.tool_calls_total() as f64),
    },
    CountBound {
        key: "max_tokens",
        kind: MarginKind::Max,
        recorded: RunRecord::tokens_total,
    },
    CountBound {
        key: "max_cost_usd",
        kind: MarginKind::Max,
        recorded: |r| r.cost_usd,
    },
    CountBound {
        key: "max_turns",
        kind: MarginKind::Max,
        recorded: |r| r.turns,
    },
    CountBound {
        key: "max_tool_errors",
        kind: MarginKind::Max,
        recorded: |r| Some(r.tool_errors_total() as f64),
    },
    CountBound {
        key: "max_redundant_tool_calls",
        kind: MarginKind::Max,
        recorded: |r| Some(r.redundant_calls_total() as f64),
    },
    CountBound {
        key: "dispatch_count_max",
        kind: MarginKind::Max,
        recorded: |r| Some(r.dispatch_count() as f64),
    },
    CountBound {
        key: "task_count_min",
        kind: MarginKind::Min,
        recorded: |r| Some(r.task_count() as f64),
    },
    CountBound {
        key: "gate_answer_count_min",
        kind: MarginKind::Min,
        recorded: |r| Some(r.gate_answers_delivered() as f64),
    },
    // Without controlOut the re-drive answers no question, so a count of 0
    // would be spurious (a false-infinite margin): not derivable instead.
    CountBound {
        key: "questions_count_max",
        kind: MarginKind::Max,
        recorded: |r| r.has_control_out.then(|| r.question_count() as f64),
    },
];

/// One `--margins` row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarginRow {
    pub key: &'static str,
    pub kind: MarginKind,
    #[serde(serialize_with = "js_number")]
    pub budget: f64,
    /// `None`: not derivable from this recording.
    #[serde(serialize_with = "js_opt_number")]
    pub recorded: Option<f64>,
    /// The headroom ratio (≥ 1 means within budget; may be infinite, which
    /// JSON shows as `null` like the original's `JSON.stringify`); `None`
    /// when `recorded` is.
    #[serde(serialize_with = "js_opt_number")]
    pub margin: Option<f64>,
}

/// The `--margins` rows of one cassette (the `margins[]` items of the JSON
/// report).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CassetteMargins {
    pub file: String,
    pub rows: Vec<MarginRow>,
    /// Computing the rows failed (never fails the gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The headroom of `recorded` against `budget`: `budget / recorded` for a
/// ceiling, `recorded / budget` for a floor; a zero divisor is infinite
/// headroom.
pub fn headroom(kind: MarginKind, budget: f64, recorded: f64) -> f64 {
    let (num, den) = match kind {
        MarginKind::Max => (budget, recorded),
        MarginKind::Min => (recorded, budget),
    };
    if den == 0.0 { f64::INFINITY } else { num / den }
}

/// The rows of one cassette, one per count-bound key its `scenario.assert`
/// carries (the first entry naming the key gives the budget). Empty — and no
/// re-drive — when it carries none.
pub fn rows(cassette: &Cassette) -> Vec<MarginRow> {
    let asserts: &[Value] = cassette
        .scenario()
        .get("assert")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let present: Vec<(&CountBound, f64)> = COUNT_BOUND
        .iter()
        .filter_map(|spec| {
            let budget = asserts.iter().find_map(|a| a.get(spec.key))?.as_f64()?;
            budget.is_finite().then_some((spec, budget))
        })
        .collect();
    if present.is_empty() {
        return vec![];
    }
    let run = RunRecord::from_cassette(cassette);
    present
        .into_iter()
        .map(|(spec, budget)| {
            let recorded = (spec.recorded)(&run);
            MarginRow {
                key: spec.key,
                kind: spec.kind,
                budget,
                recorded,
                margin: recorded.map(|r| headroom(spec.kind, budget, r)),
            }
        })
        .collect()
}

/// The `margins[]` item of one loaded cassette: `None` when it has no
/// count-bound key; a crash while computing becomes the item's `error`
/// (a diagnostic failure must not fail the gate).
pub fn of_cassette(file: &str, cassette: &Cassette) -> Option<CassetteMargins> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rows(cassette))) {
        Ok(rows) if rows.is_empty() => None,
        Ok(rows) => Some(CassetteMargins {
            file: file.to_owned(),
            rows,
            error: None,
        }),
        Err(_) => Some(CassetteMargins {
            file: file.to_owned(),
            rows: vec![],
            error: Some("internal error while computing margins (a bug — please report it)".into()),
        }),
    }
}

/// JavaScript `String(n)` of a number.
pub fn js_string(n: f64) -> String {
    match serde_json::Number::from_f64(n) {
        Some(num) => crate::evidence::parse::js_number(&num),
        None if n.is_nan() => "NaN".into(),
        None if n > 0.0 => "Infinity".into(),
        None => "-Infinity".into(),
    }
}

/// JavaScript `n.toFixed(1)` (a tie rounds away from zero, where Rust's
/// formatting rounds it to even: 1.25 → "1.3").
pub fn js_to_fixed_1(n: f64) -> String {
    if !n.is_finite() || n.abs() >= 1e21 {
        return js_string(n);
    }
    let tenths = n.abs() * 10.0;
    // A tie is exactly k + 0.5 tenths, i.e. a multiple of 1/20 that is
    // binary-exact, which only quarters are; for them `* 10` is exact too.
    let rounded = if (n.abs() * 4.0).fract() == 0.0 && tenths.fract() == 0.5 {
        (tenths.floor() + 1.0) / 10.0
    } else {
        n.abs()
    };
    let s = format!("{rounded:.1}");
    // JavaScript keeps the sign even when the digits round to zero.
    if n < 0.0 { format!("-{s}") } else { s }
}

/// Serializes an f64 as JavaScript's `JSON.stringify` would: `12`, not
/// `12.0`; a non-finite number as `null`.
fn js_number<S: Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    match serde_json::Number::from_f64(*n) {
        Some(num) => {
            // With serde_json's arbitrary_precision the parsed text is kept
            // verbatim, so `12` stays `12`.
            let text = crate::evidence::parse::js_number(&num);
            match text.parse::<serde_json::Number>() {
                Ok(js) => js.serialize(s),
                Err(_) => num.serialize(s),
            }
        }
        None => s.serialize_none(),
    }
}

fn js_opt_number<S: Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) => js_number(n, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headroom_of_a_ceiling_and_a_floor() {
        assert_eq!(headroom(MarginKind::Max, 12.0, 8.0), 1.5);
        assert_eq!(headroom(MarginKind::Max, 12.0, 0.0), f64::INFINITY);
        assert_eq!(headroom(MarginKind::Min, 2.0, 3.0), 1.5);
        assert_eq!(headroom(MarginKind::Min, 0.0, 3.0), f64::INFINITY);
        assert_eq!(headroom(MarginKind::Min, 4.0, 0.0), 0.0);
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero_like_javascript() {
        assert_eq!(js_to_fixed_1(1.25), "1.3");
        assert_eq!(js_to_fixed_1(0.75), "0.8");
        assert_eq!(js_to_fixed_1(0.25), "0.3");
        assert_eq!(js_to_fixed_1(12.0 / 11.0), "1.1");
        assert_eq!(js_to_fixed_1(1.5), "1.5");
        assert_eq!(js_to_fixed_1(2.0 / 3.0), "0.7");
        assert_eq!(js_to_fixed_1(0.0), "0.0");
        assert_eq!(js_to_fixed_1(-1.25), "-1.3");
        assert_eq!(js_to_fixed_1(-0.04), "-0.0");
        // 0.15 is not a tie in binary (slightly below): JavaScript says 0.1.
        assert_eq!(js_to_fixed_1(0.15), "0.1");
        // 0.35 is slightly below too: 0.3 in JavaScript.
        assert_eq!(js_to_fixed_1(0.35), "0.3");
    }

    #[test]
    fn rows_serialize_like_json_stringify() {
        let row = MarginRow {
            key: "tool_calls_max",
            kind: MarginKind::Max,
            budget: 12.0,
            recorded: Some(0.0),
            margin: Some(f64::INFINITY),
        };
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"key":"tool_calls_max","kind":"max","budget":12,"recorded":0,"margin":null}"#
        );
        let row = MarginRow {
            key: "max_cost_usd",
            kind: MarginKind::Max,
            budget: 0.02,
            recorded: Some(0.015),
            margin: Some(0.02 / 0.015),
        };
        assert_eq!(
            serde_json::to_value(&row).unwrap(),
            json!({"key": "max_cost_usd", "kind": "max", "budget": 0.02, "recorded": 0.015, "margin": 0.02 / 0.015})
        );
    }

    #[test]
    fn every_count_bound_key_is_a_known_assertion() {
        for spec in &COUNT_BOUND {
            assert!(
                crate::assert::catalog::bucket(spec.key).is_some(),
                "{} is not in the assertion catalog",
                spec.key
            );
        }
    }
}
