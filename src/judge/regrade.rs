//! `reel regrade`: re-judge the judged assertions of a cassette that are
//! stale (or requested with `--all` / `--assertion N`) from the recorded
//! evidence — the agent never runs — and freeze the new verdicts. Writing is
//! the caller's (`crate::review`: `.new`, accept / reject).

use serde::Serialize;

use super::client::Complete;
use super::freeze::{self, Assessed, Frozen, Keys, Status};
use super::{Budget, JudgeError};
use crate::cassette::Cassette;
use crate::evidence::RunRecord;

/// Which judged assertions to re-judge.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Every judged assertion, stale or not.
    pub all: bool,
    /// These (1-based, as reports number them), stale or not.
    pub assertions: Vec<usize>,
}

/// What happened to one judged assertion.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Regraded {
    /// 1-based.
    pub assertion: usize,
    /// `regraded`, `fresh` (left as frozen), `refused`, `failed`.
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_cost_usd: Option<f64>,
    /// Why it was stale, or why it could not be judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Re-judges `cassette` in memory; the caller writes it. Stops at the first
/// call or budget error (what was judged before it is kept in `cassette`).
pub fn regrade(
    cassette: &mut Cassette,
    client: &dyn Complete,
    selection: &Selection,
    votes: u32,
    budget: &mut Budget,
) -> Result<Vec<Regraded>, (Vec<Regraded>, JudgeError)> {
    let run = RunRecord::from_cassette(cassette);
    let items = freeze::assert_items(cassette);
    let assessed = freeze::assess(cassette, &run, &items);
    let mut frozen = freeze::read(&cassette.doc);
    let mut report = Vec::new();
    for a in &assessed {
        let n = a.index + 1;
        let asked = selection.all || selection.assertions.contains(&n);
        let step = match (&a.status, asked) {
            (Status::Frozen(_), false) => Ok(row(n, "fresh", None, None, Vec::new())),
            (Status::Refused(r), _) => Ok(row(n, "refused", None, None, vec![r.to_string()])),
            (Status::Invalid(e), _) => Ok(row(n, "refused", None, None, vec![e.clone()])),
            (status, _) => judge_one(a, status, client, votes, budget).map(|(f, r)| {
                frozen.retain(|x| x.assertion != a.index);
                frozen.push(f);
                r
            }),
        };
        match step {
            Ok(r) => report.push(r),
            Err(e) => {
                freeze::write(&mut cassette.doc, frozen);
                return Err((report, e));
            }
        }
    }
    freeze::write(&mut cassette.doc, frozen);
    Ok(report)
}

fn judge_one(
    a: &Assessed,
    status: &Status,
    client: &dyn Complete,
    votes: u32,
    budget: &mut Budget,
) -> Result<(Frozen, Regraded), JudgeError> {
    let (Some(spec), Some(ev)) = (&a.spec, &a.evidence) else {
        unreachable!("a judged assertion with a spec and evidence")
    };
    let verdict = super::judge(spec, votes, ev, client, budget)?;
    let reasons = match status {
        Status::NeedsRegrade(why) => why.iter().map(|s| s.to_string()).collect(),
        _ => vec!["requested".into()],
    };
    let (pass, _) = verdict.outcome(spec.need);
    let r = row(
        a.index + 1,
        "regraded",
        Some(pass),
        verdict.judge_cost_usd,
        reasons,
    );
    let frozen = Frozen {
        assertion: a.index,
        keys: Keys::of(spec, ev),
        verdict,
    };
    Ok((frozen, r))
}

fn row(
    assertion: usize,
    action: &'static str,
    pass: Option<bool>,
    judge_cost_usd: Option<f64>,
    reasons: Vec<String>,
) -> Regraded {
    Regraded {
        assertion,
        action,
        pass,
        judge_cost_usd,
        reasons,
    }
}
