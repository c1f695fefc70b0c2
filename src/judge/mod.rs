//! Judged assertions (`semantic_matches`): a rubric of claims graded by an
//! LLM judge, with votes, frozen into the cassette with exactly what was
//! judged so replay and `reel regrade` stay token-free while it is unchanged.
//!
//! - [`prompt`]: the one prompt template and its hash (`judgePromptHash`).
//! - [`grade`]: a reply read as a per-claim grade, or not a grade.
//! - [`client`]: the Messages API (live, the operator's credential) or reel's
//!   scripted endpoint ($0).
//! - [`evidence`]: the judged document, its digest, the privacy refusal.
//! - [`freeze`]: the frozen verdicts (`reelJudgedVerdicts`), their keys and
//!   staleness, and what replay reports for each judged assertion.
//!
//! Deliberately not here: running the agent (a judge never does), printing.
//!
//! Votes: majority and agreement, one retry, then `judgeInvalid`. Judged
//! evidence is scrubbed and refused when unvouched. Also here: `regrade` (`reel
//! regrade`, with `src/cli/regrade.rs`), `at_record` (judging at record time),
//! and the rerun carry-over of frozen verdicts.

pub mod at_record;
pub mod baseline;
pub mod client;
pub mod evidence;
pub mod freeze;
pub mod grade;
pub mod prompt;
pub mod regrade;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use client::{CallError, Complete};
use evidence::Evidence;

/// The assertion key a judge decides.
pub const KEY: &str = "semantic_matches";

/// Votes per judged assertion unless the operator says otherwise.
pub const DEFAULT_VOTES: u32 = 3;

/// The judge model when neither the assertion (`judge_model`) nor
/// `REEL_JUDGE_MODEL` names one (the original's default).
pub const DEFAULT_MODEL: &str = "claude-opus-4-8";

/// A `semantic_matches` parameter, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub rubric: Vec<String>,
    /// Claims that must pass (`min_pass`; `"all"` or absent = every claim).
    pub need: usize,
    pub judge_model: Option<String>,
    pub include_subagent_text: bool,
    pub include_fork_results: bool,
    pub evidence_files: Vec<String>,
    /// `baseline_transcript`: the first-party `baseline` grader's question
    /// (the run's trace at least as good as this transcript's) instead of a
    /// rubric over the run's text.
    pub baseline: Option<Baseline>,
}

/// A `baseline_transcript`, as the scenario loader inlined it: the file named
/// beside the scenario and its text (so replay never needs the file).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub file: String,
    pub text: String,
    /// The transcript's lines, parsed.
    pub lines: Vec<Value>,
}

impl Baseline {
    /// Reads an inlined `baseline_transcript` (`{file, text}`).
    fn from_value(v: &Value) -> Result<Baseline, String> {
        const AT: &str = "semantic_matches.baseline_transcript";
        let (Some(file), Some(text)) = (v["file"].as_str(), v["text"].as_str()) else {
            return Err(format!(
                "{AT}: the transcript was not read; load the scenario from its file (the \
                 loader reads FILE, relative to the scenario, into the assertion)"
            ));
        };
        let lines = baseline::read_transcript(text).map_err(|e| format!("{AT} `{file}`: {e}"))?;
        Ok(Baseline {
            file: file.to_owned(),
            text: text.to_owned(),
            lines,
        })
    }
}

/// The strings of a JSON list (other items skipped); `None` when `v` is no list.
fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

impl Spec {
    /// Reads a `semantic_matches` value (already checked by the catalog).
    pub fn from_value(v: &Value) -> Result<Spec, String> {
        let rubric: Vec<String> = strings(&v["rubric"])
            .filter(|r: &Vec<String>| !r.is_empty())
            .ok_or("semantic_matches.rubric: expected a non-empty list of claims")?;
        let need = match &v["min_pass"] {
            Value::Null => rubric.len(),
            Value::String(s) if s == "all" => rubric.len(),
            n => n
                .as_u64()
                .filter(|n| *n > 0)
                .map(|n| n as usize)
                .ok_or("semantic_matches.min_pass: expected \"all\" or an integer > 0")?,
        };
        let flag = |k: &str| v[k].as_bool() == Some(true);
        let baseline = match &v["baseline_transcript"] {
            Value::Null => None,
            b => Some(Baseline::from_value(b)?),
        };
        if baseline.is_some() {
            let alone = rubric.len() == 1
                && [
                    "include_subagent_text",
                    "include_fork_results",
                    "evidence_files",
                    "min_pass",
                ]
                .iter()
                .all(|k| v[*k].is_null());
            if !alone {
                return Err(
                    "semantic_matches.baseline_transcript: expected a rubric of exactly \
                            one criterion and no min_pass, include_* or evidence_files (the \
                            judge compares the run's trace with the baseline's, nothing else)"
                        .into(),
                );
            }
        }
        Ok(Spec {
            baseline,
            need,
            judge_model: v["judge_model"].as_str().map(str::to_owned),
            include_subagent_text: flag("include_subagent_text"),
            include_fork_results: flag("include_fork_results"),
            evidence_files: strings(&v["evidence_files"]).unwrap_or_default(),
            rubric,
        })
    }

    /// The model asked for: `judge_model`, else `REEL_JUDGE_MODEL`, else
    /// [`DEFAULT_MODEL`]. Part of the frozen verdict's key.
    pub fn model(&self) -> String {
        self.judge_model
            .clone()
            .or_else(|| {
                std::env::var("REEL_JUDGE_MODEL")
                    .ok()
                    .filter(|m| !m.is_empty())
            })
            .unwrap_or_else(|| DEFAULT_MODEL.into())
    }
}

/// One graded claim of a verdict (`semanticClaims[]`: the original's
/// `{index, claim, pass}`, plus the judge's `rationale`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub index: usize,
    pub claim: String,
    pub pass: bool,
    pub rationale: String,
}

/// What the votes decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Per claim, the majority of the valid votes (empty when invalid).
    pub semantic_claims: Vec<Claim>,
    /// The model that answered (provenance).
    pub judge_model: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge_invalid: bool,
    pub votes: u32,
    pub valid_votes: u32,
    /// The lowest share of valid votes that agreed with a claim's majority.
    pub agreement: f64,
    /// `None` when a call's price is unknown; 0 for a scripted judge.
    pub judge_cost_usd: Option<f64>,
}

impl Verdict {
    /// The assertion's pass and its message (the original's wording).
    pub fn outcome(&self, need: usize) -> (bool, String) {
        if self.judge_invalid {
            return (
                false,
                "judge grade INVALID (malformed/ambiguous after retry) — rep counts as invalid, \
                 not a pass"
                    .into(),
            );
        }
        let passed = self.semantic_claims.iter().filter(|c| c.pass).count();
        let total = self.semantic_claims.len();
        if passed >= need {
            (
                true,
                format!("semantic: {passed}/{total} rubric claims passed (need {need})"),
            )
        } else {
            let failed: Vec<String> = (self.semantic_claims.iter())
                .filter(|c| !c.pass)
                .map(|c| c.index.to_string())
                .collect();
            let failed = failed.join(",");
            let message = format!(
                "semantic: {passed}/{total} rubric claims passed (need {need}); failed claim indices: {failed}"
            );
            (false, message)
        }
    }
}

/// Why judging stopped short of a verdict.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Refused(#[from] evidence::Refusal),
    #[error(
        "judging would exceed --max-budget-usd {max:.4}: spent {spent:.4}, this assertion's \
         {votes} vote(s) estimated at up to {estimate}; raise the budget or lower the votes"
    )]
    Budget {
        max: f64,
        spent: f64,
        votes: u32,
        estimate: String,
    },
}

/// The judge spend of one command, and its cap.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    pub max_usd: Option<f64>,
    pub spent_usd: f64,
    /// True once a call of unknown price was made.
    pub unknown: bool,
}

impl Budget {
    /// Refuses, before any call, what could exceed the cap: `votes` calls
    /// of `prompt_chars` characters each (the retry of an unparseable one
    /// is inside the cap's margin only when it fits; it is checked again).
    fn admit(
        &self,
        client: &dyn Complete,
        model: &str,
        votes: u32,
        prompt_chars: usize,
    ) -> Result<(), JudgeError> {
        let Some(max) = self.max_usd.filter(|_| !client.is_scripted()) else {
            return Ok(());
        };
        let per_call =
            client::price(model).map(|(i, o)| (prompt_chars as f64 / 3.0 * i + 4096.0 * o) / 1e6);
        let refuse = |estimate: String| JudgeError::Budget {
            max,
            spent: self.spent_usd,
            votes,
            estimate,
        };
        match per_call {
            None => Err(refuse(format!("an unknown price (model `{model}`)"))),
            Some(c) if self.spent_usd + c * f64::from(votes) > max => {
                Err(refuse(format!("${:.4}", c * f64::from(votes))))
            }
            Some(_) => Ok(()),
        }
    }

    fn charge(&mut self, cost: Option<f64>) {
        match cost {
            Some(c) => self.spent_usd += c,
            None => self.unknown = true,
        }
    }
}

/// Judges `evidence` against `spec` with `votes` calls (each unparseable
/// grade retried once), majority per claim.
pub fn judge(
    spec: &Spec,
    votes: u32,
    evidence: &Evidence,
    client: &dyn Complete,
    budget: &mut Budget,
) -> Result<Verdict, JudgeError> {
    let votes = votes.max(1);
    if spec.baseline.is_some() {
        return judge_baseline(spec, votes, evidence, client, budget);
    }
    let model = spec.model();
    let prompt = prompt::render(&spec.rubric, &evidence.document);
    budget.admit(client, &model, votes, prompt.chars().count())?;
    let mut grades = Vec::new();
    let mut answered_by = model.clone();
    let mut cost = Some(0.0);
    for _ in 0..votes {
        for attempt in 0..2 {
            let c = client.complete(&model, None, &prompt)?;
            budget.charge(c.cost_usd);
            cost = cost.zip(c.cost_usd).map(|(a, b)| a + b);
            answered_by = c.model;
            match grade::parse(&c.text, spec.rubric.len()) {
                Ok(g) => {
                    grades.push(g);
                    break;
                }
                Err(e) if attempt == 1 => crate::messages::warn(format!(
                    "::warning:: semantic judge grade invalid after retry (the vote counts as \
                     invalid, not passed): {e}"
                )),
                Err(_) => {}
            }
        }
    }
    Ok(tally(spec, votes, grades, answered_by, cost))
}

/// A `baseline_transcript` judged as the first-party grader does: the
/// evidence is its whole prompt, sent with its system prompt; each reply is
/// a vote (PASS without FAIL), more than half PASS passes the one criterion.
fn judge_baseline(
    spec: &Spec,
    votes: u32,
    evidence: &Evidence,
    client: &dyn Complete,
    budget: &mut Budget,
) -> Result<Verdict, JudgeError> {
    let model = spec.model();
    let prompt = &evidence.document;
    budget.admit(client, &model, votes, prompt.chars().count())?;
    let mut said = Vec::new();
    let mut answered_by = model.clone();
    let mut cost = Some(0.0);
    for _ in 0..votes {
        let c = client.complete(&model, Some(baseline::SYSTEM), prompt)?;
        budget.charge(c.cost_usd);
        cost = cost.zip(c.cost_usd).map(|(a, b)| a + b);
        answered_by = c.model;
        said.push(baseline::vote(&c.text));
    }
    let pass = baseline::majority(&said);
    let yes = said.iter().filter(|v| **v).count() as u32;
    let agreeing = if pass { yes } else { votes - yes };
    Ok(Verdict {
        semantic_claims: vec![Claim {
            index: 0,
            claim: spec.rubric[0].clone(),
            pass,
            rationale: format!("{yes} of {votes} baseline vote(s) PASS"),
        }],
        judge_model: answered_by,
        judge_invalid: false,
        votes,
        valid_votes: votes,
        agreement: f64::from(agreeing) / f64::from(votes),
        judge_cost_usd: cost,
    })
}

/// The majority verdict of the valid `grades` of `votes` cast.
fn tally(
    spec: &Spec,
    votes: u32,
    grades: Vec<Vec<grade::ClaimGrade>>,
    judge_model: String,
    judge_cost_usd: Option<f64>,
) -> Verdict {
    let valid = grades.len() as u32;
    // A verdict needs a majority of the votes cast to be valid grades.
    let judge_invalid = valid * 2 <= votes;
    let mut agreement: f64 = 1.0;
    let semantic_claims = if judge_invalid {
        agreement = 0.0;
        Vec::new()
    } else {
        (spec.rubric.iter().enumerate())
            .map(|(index, claim)| {
                let yes = grades.iter().filter(|g| g[index].pass).count() as u32;
                // A tie is not a majority for pass.
                let pass = yes * 2 > valid;
                let agreeing = if pass { yes } else { valid - yes };
                agreement = agreement.min(f64::from(agreeing) / f64::from(valid));
                let rationale = (grades.iter().map(|g| &g[index]))
                    .find(|c| c.pass == pass)
                    .map(|c| c.rationale.clone())
                    .unwrap_or_default();
                Claim {
                    index,
                    claim: claim.clone(),
                    pass,
                    rationale,
                }
            })
            .collect()
    };
    Verdict {
        semantic_claims,
        judge_model,
        judge_invalid,
        votes,
        valid_votes: valid,
        agreement,
        judge_cost_usd,
    }
}

#[cfg(test)]
mod tests;
