//! The decision policy of an eval and the status of a row under it.

use serde::{Deserialize, Serialize};

use super::stats::{self, PairTable};

/// What a comparison needs before it may say anything.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Fewer completed pairs than this is `insufficient_evidence`.
    pub min_pairs: u64,
    /// An errored share of attempted trials above this is `infrastructure_error`.
    pub max_error_share: f64,
    /// Significance level: of the verdict's exact test (alone), and of the
    /// assertion rows' family (Tarone + Holm).
    pub alpha: f64,
    /// Confidence of the paired-difference interval.
    pub confidence: f64,
    /// The cost guardrail: B's cost per completed trial over A's.
    pub max_cost_ratio: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_pairs: 5,
            max_error_share: 0.2,
            alpha: 0.05,
            confidence: 0.95,
            max_cost_ratio: 1.5,
        }
    }
}

/// One matched pair is never evidence, whatever a policy says.
pub const FLOOR_PAIRS: u64 = 2;

impl Policy {
    /// The minimum pairs actually applied.
    pub fn effective_min_pairs(&self) -> u64 {
        self.min_pairs.max(FLOOR_PAIRS)
    }

    /// Why this policy cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        let unit = |x: f64| x > 0.0 && x < 1.0;
        if !unit(self.alpha) || !unit(self.confidence) {
            return Err("`alpha` and `confidence` are numbers strictly between 0 and 1".into());
        }
        if !(0.0..=1.0).contains(&self.max_error_share)
            || self.max_cost_ratio.is_nan()
            || self.max_cost_ratio <= 0.0
        {
            return Err("`max_error_share` is in [0, 1] and `max_cost_ratio` is > 0".into());
        }
        Ok(())
    }
}

/// The status of a row (and of a scenario: its verdict row's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    NoDifference,
    Improvement,
    InsufficientEvidence,
    InfrastructureError,
    Regression,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NoDifference => "no_difference",
            Status::Improvement => "improvement",
            Status::InsufficientEvidence => "insufficient_evidence",
            Status::InfrastructureError => "infrastructure_error",
            Status::Regression => "regression",
        }
    }
}

/// The gates that come before any test: errors, then too few pairs.
pub fn gate(policy: &Policy, attempted: u64, errored: u64, pairs: u64) -> Option<(Status, String)> {
    let share = if attempted == 0 {
        1.0
    } else {
        errored as f64 / attempted as f64
    };
    if attempted == 0 || share > policy.max_error_share {
        return Some((
            Status::InfrastructureError,
            format!(
                "{errored} of {attempted} attempted trials errored ({:.0}%), above the policy's {:.0}%",
                share * 100.0,
                policy.max_error_share * 100.0
            ),
        ));
    }
    let min = policy.effective_min_pairs();
    if pairs < min {
        return Some((
            Status::InsufficientEvidence,
            format!("{pairs} completed pair(s), the policy needs at least {min}"),
        ));
    }
    None
}

/// The status of a row that passed the gates, from the p it is decided on
/// (the verdict's own, an assertion row's Holm-adjusted one).
pub fn decide(policy: &Policy, table: &PairTable, p_adjusted: f64) -> (Status, String) {
    let (a, b) = (table.only_a, table.only_b);
    if p_adjusted < policy.alpha {
        let status = if b > a {
            Status::Improvement
        } else {
            Status::Regression
        };
        let reason = format!(
            "{b} pair(s) favour B, {a} favour A; p = {p_adjusted:.4} < α = {}",
            policy.alpha
        );
        return (status, reason);
    }
    let k = stats::min_discordant_for(policy.alpha);
    let note = if a + b < k {
        format!("; fewer than {k} discordant pairs can never be significant")
    } else {
        String::new()
    };
    (
        Status::NoDifference,
        format!(
            "{b} pair(s) favour B, {a} favour A; p = {p_adjusted:.4} ≥ α = {}{note}",
            policy.alpha
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pair_never_accepts_even_under_a_permissive_policy() {
        let lax = Policy {
            min_pairs: 0,
            ..Policy::default()
        };
        let (s, why) = gate(&lax, 2, 0, 1).unwrap();
        assert_eq!(s, Status::InsufficientEvidence, "{why}");
        assert!(gate(&lax, 4, 0, 2).is_none());
    }

    #[test]
    fn errored_trials_count_in_the_attempted_share() {
        let p = Policy::default();
        let (s, _) = gate(&p, 10, 3, 7).unwrap();
        assert_eq!(s, Status::InfrastructureError);
        assert!(gate(&p, 10, 2, 8).is_none(), "20% is not above 20%");
        assert_eq!(gate(&p, 0, 0, 0).unwrap().0, Status::InfrastructureError);
    }

    #[test]
    fn the_direction_of_a_significant_row_decides_its_status() {
        let p = Policy::default();
        let t = PairTable {
            only_b: 7,
            ..PairTable::default()
        };
        assert_eq!(decide(&p, &t, 0.01).0, Status::Improvement);
        let t = PairTable {
            only_a: 7,
            ..PairTable::default()
        };
        assert_eq!(decide(&p, &t, 0.01).0, Status::Regression);
        assert_eq!(decide(&p, &t, 0.2).0, Status::NoDifference);
    }
}
