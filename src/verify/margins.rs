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

use serde::Serialize;
use serde_json::Value;

use crate::assert::keys::{self, Key};
use crate::cassette::Cassette;
use crate::evidence::RunRecord;

pub use crate::assert::keys::MarginKind;

/// One `--margins` row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MarginRow {
    pub key: &'static str,
    pub kind: MarginKind,
    #[serde(serialize_with = "crate::js::number::serialize")]
    pub budget: f64,
    /// `None`: not derivable from this recording.
    #[serde(serialize_with = "crate::js::number::serialize_opt")]
    pub recorded: Option<f64>,
    /// The headroom ratio (≥ 1 means within budget; may be infinite, which
    /// JSON shows as `null` like the original's `JSON.stringify`); `None`
    /// when `recorded` is.
    #[serde(serialize_with = "crate::js::number::serialize_opt")]
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
/// carries (the first entry naming the key gives the budget), in report
/// order: the count-bound keys of the catalog (cowork-harness
/// `COUNT_BOUND_MARGIN_KEYS`, each key's `margin`). Empty — and no re-drive —
/// when it carries none.
pub fn rows(cassette: &Cassette) -> Vec<MarginRow> {
    let asserts: &[Value] = cassette
        .scenario()
        .get("assert")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let present: Vec<(&Key, f64)> = keys::count_bound()
        .iter()
        .filter_map(|key| {
            let budget = asserts.iter().find_map(|a| a.get(key.name))?.as_f64()?;
            budget.is_finite().then_some((*key, budget))
        })
        .collect();
    if present.is_empty() {
        return vec![];
    }
    let run = RunRecord::from_cassette(cassette);
    present
        .into_iter()
        .filter_map(|(key, budget)| {
            let bound = key.margin?;
            let recorded = (bound.recorded)(&run);
            Some(MarginRow {
                key: key.name,
                kind: bound.kind,
                budget,
                recorded,
                margin: recorded.map(|r| headroom(bound.kind, budget, r)),
            })
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
    fn a_floor_is_a_min_key_and_a_ceiling_a_max_key() {
        assert_eq!(keys::count_bound().len(), 10);
        for key in keys::count_bound() {
            let kind = key.margin.map(|m| m.kind);
            let want = if key.name.ends_with("_min") {
                MarginKind::Min
            } else {
                MarginKind::Max
            };
            assert_eq!(kind, Some(want), "{}", key.name);
        }
    }
}
