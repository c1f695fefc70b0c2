//! Frozen verdicts: the cassette's reel-only top-level `reelJudgedVerdicts`,
//! one entry per judged assertion, keyed by exactly what was judged — the
//! evidence digest (for a baseline trajectory, over its masked trace:
//! [`evidence::derive_baseline`]), the rubric digest, the judge prompt hash
//! and the judge model asked for. cowork-harness carries an unknown
//! top-level key untouched and skips `semantic_matches` as live-only
//! (docs/spec/replay.md §1, §4.4), so a cassette with frozen verdicts still
//! replays there.
//!
//! On replay every key is re-derived: all equal, the frozen verdict is used
//! (token-free) and the assertion says so; any differ, it `needs regrade`
//! (a loud skip, a failure under `--strict`), never a silent pass or skip.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::evidence::{self, Evidence, Refusal};
use super::{KEY, Spec, Verdict, prompt};
use crate::assert::AssertionOutcome;
use crate::cassette::{Cassette, ManifestEntry};
use crate::evidence::RunRecord;

/// The cassette's top-level key.
pub const CASSETTE_KEY: &str = "reelJudgedVerdicts";

/// What a verdict was judged over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Keys {
    pub evidence_digest: String,
    pub rubric_digest: String,
    pub judge_prompt_hash: String,
    /// The model asked for (the answering one is the verdict's `judgeModel`).
    pub judge_model_requested: String,
}

impl Keys {
    pub fn of(spec: &Spec, evidence: &Evidence) -> Keys {
        Keys {
            evidence_digest: evidence.digest.clone(),
            rubric_digest: evidence::digest(&json!(spec.rubric).to_string()),
            judge_prompt_hash: match spec.baseline {
                Some(_) => super::baseline::prompt_hash(),
                None => prompt::prompt_hash(),
            },
            judge_model_requested: spec.model(),
        }
    }

    /// What differs between frozen `self` and `now`, in the user's words.
    pub fn differences(&self, now: &Keys) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.evidence_digest != now.evidence_digest {
            out.push("the judged evidence changed");
        }
        if self.rubric_digest != now.rubric_digest {
            out.push("the rubric changed");
        }
        if self.judge_prompt_hash != now.judge_prompt_hash {
            out.push("the judge prompt template changed");
        }
        if self.judge_model_requested != now.judge_model_requested {
            out.push("the judge model changed");
        }
        out
    }
}

/// One frozen verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frozen {
    /// Index of the assertion in the scenario's `assert:`.
    pub assertion: usize,
    #[serde(flatten)]
    pub keys: Keys,
    pub verdict: Verdict,
}

/// The frozen verdicts of `doc` (an unreadable entry is ignored: it then
/// matches nothing and its assertion needs regrade).
pub fn read(doc: &Map<String, Value>) -> Vec<Frozen> {
    (doc.get(CASSETTE_KEY).and_then(Value::as_array))
        .map(|a| {
            a.iter()
                .filter_map(|v| serde_json::from_value(v.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `doc`'s frozen verdicts (the key is removed when none remain).
pub fn write(doc: &mut Map<String, Value>, mut frozen: Vec<Frozen>) {
    frozen.sort_by_key(|f| f.assertion);
    if frozen.is_empty() {
        doc.shift_remove(CASSETTE_KEY);
    } else {
        let v = serde_json::to_value(frozen).expect("frozen verdicts serialise");
        doc.insert(CASSETTE_KEY.into(), v);
    }
}

/// The items of the scenario frozen in `cassette` (a non-object item is
/// an empty one).
pub fn assert_items(cassette: &Cassette) -> Vec<Map<String, Value>> {
    (cassette.scenario().get("assert"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_object().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// A rerun, before the fresh run's verdict: the recorded cassette's frozen
/// verdicts carried into the fresh one (unless the fresh run was judged
/// itself), so the verdict reads each that still holds as replay does.
pub fn carry_over(recorded: &Cassette, fresh: &mut Cassette) {
    let prior = read(&recorded.doc);
    if prior.is_empty() || !read(&fresh.doc).is_empty() {
        return;
    }
    write(&mut fresh.doc, rekeyed(recorded, prior));
}

/// After a rerun: one note per judged assertion of the `fresh` cassette
/// holding carried verdicts, saying whether its verdict still holds or the
/// answer changed and it needs regrade (none when nothing was carried).
pub fn carried_notes(fresh: &Cassette) -> Vec<String> {
    if read(&fresh.doc).is_empty() {
        return Vec::new();
    }
    let run = RunRecord::from_cassette(fresh);
    let items = assert_items(fresh);
    (assess(fresh, &run, &items).iter())
        .map(|a| match &a.status {
            Status::Frozen(_) => format!(
                "judged assertion {} (semantic_matches): the judged answer is unchanged; its \
                 frozen verdict holds",
                a.index + 1
            ),
            Status::NeedsRegrade(why) => format!(
                "judged assertion {} (semantic_matches) needs regrade: {} — run `reel regrade` \
                 on the written cassette",
                a.index + 1,
                why.join("; ")
            ),
            Status::Refused(r) => format!("judged assertion {}: {r}", a.index + 1),
            Status::Invalid(e) => format!("judged assertion {}: {e}", a.index + 1),
        })
        .collect()
}

/// `prior`, each baseline verdict that holds on `recorded` keyed by the
/// masked digest of the very trace it was judged on: one frozen by a reel
/// that keyed the unmasked trace holds there only by its unmasked digest,
/// which a fresh run's new ids and paths always change. Other verdicts are
/// keyed as they were.
fn rekeyed(recorded: &Cassette, mut prior: Vec<Frozen>) -> Vec<Frozen> {
    let items = assert_items(recorded);
    let baseline = |m: &Map<String, Value>| {
        m.get(KEY)
            .is_some_and(|v| v.get("baseline_transcript").is_some())
    };
    if !items.iter().any(baseline) {
        return prior;
    }
    let run = RunRecord::from_cassette(recorded);
    for a in assess(recorded, &run, &items) {
        if let (Status::Frozen(_), Some(ev)) = (&a.status, &a.evidence)
            && let Some(f) = prior.iter_mut().find(|f| f.assertion == a.index)
        {
            f.keys.evidence_digest = ev.digest.clone();
        }
    }
    prior
}

/// Where one judged assertion stands against its cassette.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Every key matches: the frozen verdict holds.
    Frozen(Box<Frozen>),
    /// No frozen verdict, or one whose keys differ (the reasons).
    NeedsRegrade(Vec<&'static str>),
    /// The evidence could not be vouched for (nothing is sent to a judge).
    Refused(Refusal),
    /// The parameter is unreadable.
    Invalid(String),
}

/// One judged assertion of a cassette.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessed {
    pub index: usize,
    pub value: Value,
    pub spec: Option<Spec>,
    pub evidence: Option<Evidence>,
    pub status: Status,
}

/// Every `semantic_matches` of `items` (the scenario's `assert:` in order),
/// assessed against the frozen verdicts of `cassette` over the re-driven `run`.
pub fn assess(cassette: &Cassette, run: &RunRecord, items: &[Map<String, Value>]) -> Vec<Assessed> {
    if !items.iter().any(|m| m.contains_key(KEY)) {
        return Vec::new();
    }
    let frozen = read(&cassette.doc);
    let artifacts: Vec<ManifestEntry> = cassette.artifacts().unwrap_or_default();
    let trace = std::cell::OnceCell::new();
    (items.iter().enumerate())
        .filter_map(|(index, item)| item.get(KEY).map(|v| (index, v)))
        .map(|(index, value)| {
            let spec = Spec::from_value(value);
            let (spec, evidence, status) = match spec {
                Err(e) => (None, None, Status::Invalid(e)),
                Ok(spec) => match derive(&spec, run, &artifacts, cassette, &trace) {
                    Err(r) => (Some(spec), None, Status::Refused(r)),
                    Ok(ev) => {
                        let status =
                            status_of(&spec, &ev, frozen.iter().find(|f| f.assertion == index));
                        (Some(spec), Some(ev), status)
                    }
                },
            };
            Assessed {
                index,
                value: value.clone(),
                spec,
                evidence,
                status,
            }
        })
        .collect()
}

/// The judged document of `spec`: the run's text and files, or for a
/// `baseline_transcript` the graded turn's trace (read once per cassette).
fn derive(
    spec: &Spec,
    run: &RunRecord,
    artifacts: &[ManifestEntry],
    cassette: &Cassette,
    trace: &std::cell::OnceCell<evidence::GradedTrace>,
) -> Result<Evidence, Refusal> {
    match &spec.baseline {
        Some(b) => {
            let trace = trace.get_or_init(|| evidence::graded_turn_trace(cassette));
            evidence::derive_baseline(&spec.rubric[0], b, trace)
        }
        None => evidence::derive(spec, run, artifacts),
    }
}

fn status_of(spec: &Spec, ev: &Evidence, frozen: Option<&Frozen>) -> Status {
    let Some(f) = frozen else {
        return Status::NeedsRegrade(vec!["no frozen verdict"]);
    };
    let mut now = Keys::of(spec, ev);
    if ev.unmasked_digest.as_ref() == Some(&f.keys.evidence_digest) {
        // Frozen before the baseline trace was masked, over these bytes.
        now.evidence_digest = f.keys.evidence_digest.clone();
    }
    let diff = f.keys.differences(&now);
    if diff.is_empty() {
        Status::Frozen(Box::new(f.clone()))
    } else {
        Status::NeedsRegrade(diff)
    }
}

/// The judged fields of an outcome (the original's `semanticClaims`,
/// `judgeModel`, `judgeInvalid`; `judgePromptHash`, `judgeCostUsd`; reel's
/// `judgeStatus`, `votes`, `agreement`).
pub fn outcome_fields(keys: &Keys, v: &Verdict, status: &str) -> Map<String, Value> {
    let mut m = Map::new();
    if !v.semantic_claims.is_empty() {
        m.insert("semanticClaims".into(), json!(v.semantic_claims));
    }
    m.insert("judgeModel".into(), json!(v.judge_model));
    if v.judge_invalid {
        m.insert("judgeInvalid".into(), json!(true));
    }
    m.insert("judgePromptHash".into(), json!(keys.judge_prompt_hash));
    m.insert("judgeCostUsd".into(), json!(v.judge_cost_usd));
    m.insert("judgeStatus".into(), json!(status));
    m.insert(
        "votes".into(),
        json!({"cast": v.votes, "valid": v.valid_votes}),
    );
    m.insert("agreement".into(), json!(v.agreement));
    m
}

/// The outcome replay reports for `a`, or `None` for a loud skip (a
/// `needs regrade` outside `--strict`), with the notice that says so.
pub fn replay_outcome(a: &Assessed, strict: bool) -> (Option<AssertionOutcome>, Option<String>) {
    let assertion = json!({ KEY: a.value });
    let fail = |message: String, status: &str| AssertionOutcome {
        assertion: assertion.clone(),
        pass: false,
        message,
        evidence: None,
        source: None,
        judge: Some(Map::from_iter([("judgeStatus".into(), json!(status))])),
    };
    let n = a.index + 1;
    match &a.status {
        Status::Frozen(f) => {
            let need = a.spec.as_ref().map_or(0, |s| s.need);
            let (pass, message) = f.verdict.outcome(need);
            let note = format!(
                "frozen verdict reused (judge {}, {}/{} votes, agreement {:.2}; token-free)",
                f.verdict.judge_model, f.verdict.valid_votes, f.verdict.votes, f.verdict.agreement
            );
            let outcome = AssertionOutcome {
                assertion,
                pass,
                message: if pass {
                    String::new()
                } else {
                    format!("{message} [{note}]")
                },
                evidence: pass.then(|| format!("{message} [{note}]")),
                source: None,
                judge: Some(outcome_fields(&f.keys, &f.verdict, "frozen")),
            };
            (Some(outcome), None)
        }
        Status::NeedsRegrade(why) => {
            let text = format!(
                "assertion {n} (semantic_matches) needs regrade: {} — run `reel regrade` on this \
                 cassette",
                why.join("; ")
            );
            if strict {
                (Some(fail(text, "needs-regrade")), None)
            } else {
                (
                    None,
                    Some(format!(
                        "::warning:: [judge] {text} (not evaluated; fails under --strict)"
                    )),
                )
            }
        }
        Status::Refused(r) => (
            Some(fail(format!("evidence unavailable: {r}"), "refused")),
            None,
        ),
        Status::Invalid(e) => (Some(fail(e.clone(), "invalid")), None),
    }
}
