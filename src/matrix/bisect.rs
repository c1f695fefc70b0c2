//! Which release changed a cassette's rerun: a binary search over the
//! registry's releases between a good one and a bad one, each step one
//! rerun. "Bad" is a failing verdict, or with `strict` any divergence.
//!
//! The good release may be older (a regression: the first bad release is
//! found) or newer (a fix, or a cassette recorded with a newer release: the
//! first good release is found); either way the answer is the first release
//! that behaves like the newer endpoint.

use std::path::Path;

use semver::Version;

use super::{Cell, CellResult};
use crate::agents::{AgentsError, Cache, Installed, VersionList};
use crate::rerun::{Outcome, RerunOptions};

/// What was asked.
pub struct BisectPlan<'a> {
    pub cassette: &'a Path,
    pub good: Version,
    pub bad: Version,
    pub strict: bool,
    pub opts: &'a RerunOptions,
}

/// One rerun of the search.
#[derive(Debug, serde::Serialize)]
pub struct Step {
    pub version: String,
    pub bad: bool,
    /// `pass`, `pass_diverged`, `fail`, or `error`.
    pub outcome: String,
    pub divergences: usize,
    pub duration_ms: u64,
    /// Releases still in doubt after this step.
    pub remaining: usize,
}

/// The search's answer.
#[derive(Debug, serde::Serialize)]
pub struct Found {
    /// The first release that behaves like the newer endpoint.
    pub first_changed: String,
    /// The published release before it (behaves like the older endpoint).
    pub last_before: String,
    /// Whether the change made the cassette bad (a regression).
    pub regression: bool,
    pub steps: Vec<Step>,
}

/// Why the search could not answer.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    #[error(transparent)]
    Agents(#[from] AgentsError),
    /// An endpoint does not behave as the user said (exit 2).
    #[error("{0}")]
    Endpoint(String),
    /// A step's rerun could not run at all (exit 3).
    #[error("{0}")]
    CannotRun(String),
}

/// Runs the search; `progress` hears each step as it finishes.
pub fn bisect(
    plan: &BisectPlan<'_>,
    list: &VersionList,
    cache: &Cache,
    progress: &dyn Fn(&str),
) -> Result<Found, BisectError> {
    let mut steps = Vec::new();
    let mut probe = |v: &Version, remaining: usize| -> Result<bool, BisectError> {
        let release = crate::agents::ensure(cache, v, progress)?;
        let step = classify(&release, plan, remaining)?;
        progress(&format!(
            "bisect: {v}: {} ({}, {} divergence(s), {} ms){}",
            if step.bad { "bad" } else { "good" },
            step.outcome,
            step.divergences,
            step.duration_ms,
            if remaining > 0 {
                format!(
                    " — {remaining} release(s) left, ~{} step(s)",
                    log2_ceil(remaining)
                )
            } else {
                String::new()
            }
        ));
        let bad = step.bad;
        steps.push(step);
        Ok(bad)
    };
    let (older, newer) = if plan.good < plan.bad {
        (&plan.good, &plan.bad)
    } else {
        (&plan.bad, &plan.good)
    };
    let between = list.between(older, newer).to_vec();
    if probe(&plan.good, between.len())? {
        return Err(BisectError::Endpoint(format!(
            "the good release {} is bad for {}",
            plan.good,
            plan.cassette.display()
        )));
    }
    if !probe(&plan.bad, between.len())? {
        return Err(BisectError::Endpoint(format!(
            "the bad release {} is good for {}",
            plan.bad,
            plan.cassette.display()
        )));
    }
    let newer_is_bad = newer == &plan.bad;
    // Invariant: every release up to `lo` behaves like `older`, from `hi`
    // on like `newer` (indices into `between`, with the endpoints outside).
    let (mut lo, mut hi) = (0usize, between.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let bad = probe(&between[mid], hi - lo - 1)?;
        if bad == newer_is_bad {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let first = between.get(lo).unwrap_or(newer).clone();
    let before = if lo == 0 {
        older.clone()
    } else {
        between[lo - 1].clone()
    };
    Ok(Found {
        first_changed: first.to_string(),
        last_before: before.to_string(),
        regression: newer_is_bad,
        steps,
    })
}

fn classify(
    release: &Installed,
    plan: &BisectPlan<'_>,
    remaining: usize,
) -> Result<Step, BisectError> {
    let cell: Cell = super::run_cell(plan.cassette, release, plan.opts);
    let (outcome, bad) = match &cell.result {
        CellResult::Done(r) => {
            let bad = r.outcome == Outcome::Fail || (plan.strict && !r.divergences.is_empty());
            (outcome_name(r.outcome), bad)
        }
        CellResult::Refused { error, .. } => {
            return Err(BisectError::CannotRun(format!(
                "{} under {}: {error}",
                plan.cassette.display(),
                release.version
            )));
        }
    };
    Ok(Step {
        version: release.version.to_string(),
        bad,
        outcome: outcome.into(),
        divergences: cell.divergence_count(),
        duration_ms: cell.elapsed().as_millis() as u64,
        remaining,
    })
}

/// The name JSON gives an outcome.
pub fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::PassDiverged => "pass_diverged",
        Outcome::Fail => "fail",
    }
}

/// Reruns a search of `n` releases needs at most.
pub fn log2_ceil(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

#[cfg(test)]
mod tests {
    #[test]
    fn steps_grow_with_the_log_of_the_range() {
        assert_eq!(super::log2_ceil(0), 0);
        assert_eq!(super::log2_ceil(1), 1);
        assert_eq!(super::log2_ceil(7), 3);
        assert_eq!(super::log2_ceil(12), 4);
        assert_eq!(super::log2_ceil(286), 9);
    }
}
