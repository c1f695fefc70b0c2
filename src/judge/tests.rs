//! Votes, retries, budget and the frozen keys, against a judge that answers
//! from a list (the HTTP clients are exercised in tests/it/judge.rs).

use std::cell::RefCell;

use super::client::{CallError, Complete, Completion};
use super::evidence::Evidence;
use super::freeze::Keys;
use super::*;
use crate::cassette::Cassette;

struct Listed {
    replies: RefCell<Vec<&'static str>>,
    calls: RefCell<usize>,
    scripted: bool,
}

impl Listed {
    fn new(replies: &[&'static str], scripted: bool) -> Listed {
        Listed {
            replies: RefCell::new(replies.iter().rev().copied().collect()),
            calls: RefCell::new(0),
            scripted,
        }
    }
}

impl Complete for Listed {
    fn complete(
        &self,
        model: &str,
        _system: Option<&str>,
        _prompt: &str,
    ) -> Result<Completion, CallError> {
        *self.calls.borrow_mut() += 1;
        let text = self
            .replies
            .borrow_mut()
            .pop()
            .unwrap_or("no more replies")
            .to_owned();
        Ok(Completion {
            text,
            model: format!("{model}-resolved"),
            cost_usd: Some(if self.scripted { 0.0 } else { 0.01 }),
        })
    }
    fn is_scripted(&self) -> bool {
        self.scripted
    }
}

fn spec(claims: usize) -> Spec {
    Spec {
        rubric: (0..claims).map(|i| format!("claim {i}")).collect(),
        need: claims,
        judge_model: Some("claude-haiku-4-5".into()),
        include_subagent_text: false,
        include_fork_results: false,
        evidence_files: Vec::new(),
        baseline: None,
    }
}

fn ev(text: &str) -> Evidence {
    Evidence {
        document: text.into(),
        digest: evidence::digest(text),
        unmasked_digest: None,
    }
}

const PP: &str =
    r#"{"results":[{"index":0,"pass":true,"rationale":"yes"},{"index":1,"pass":true}]}"#;
const PF: &str =
    r#"{"results":[{"index":0,"pass":true},{"index":1,"pass":false,"rationale":"no"}]}"#;
const FF: &str = r#"{"results":[{"index":0,"pass":false},{"index":1,"pass":false}]}"#;

#[test]
fn the_majority_decides_each_claim_and_agreement_is_the_weakest_claims_share() {
    let judge_with = |replies: &[&'static str]| {
        let client = Listed::new(replies, true);
        judge(&spec(2), 3, &ev("doc"), &client, &mut Budget::default()).unwrap()
    };
    let v = judge_with(&[PP, PF, PP]);
    assert!(v.semantic_claims[0].pass && v.semantic_claims[1].pass);
    assert_eq!(v.semantic_claims[0].rationale, "yes");
    assert!((v.agreement - 2.0 / 3.0).abs() < 1e-9, "{}", v.agreement);
    assert_eq!((v.votes, v.valid_votes), (3, 3));
    assert!(v.outcome(2).0);

    let v = judge_with(&[PF, FF, PF]);
    assert!(v.semantic_claims[0].pass && !v.semantic_claims[1].pass);
    assert_eq!(v.semantic_claims[1].rationale, "no");
    let (pass, message) = v.outcome(2);
    assert!(!pass);
    assert_eq!(
        message,
        "semantic: 1/2 rubric claims passed (need 2); failed claim indices: 1"
    );
    assert!(v.outcome(1).0, "min_pass 1 is met");
    assert_eq!(v.judge_model, "claude-haiku-4-5-resolved");
    assert_eq!(v.judge_cost_usd, Some(0.0), "a scripted judge costs $0");

    let unanimous = judge_with(&[FF, FF, FF]);
    assert_eq!(unanimous.agreement, 1.0);
}

#[test]
fn an_unparseable_grade_is_retried_once_then_the_verdict_is_judge_invalid() {
    // Retried once and recovered: one vote, two calls.
    let client = Listed::new(&["not json", PP], true);
    let v = judge(&spec(2), 1, &ev("d"), &client, &mut Budget::default()).unwrap();
    assert!(!v.judge_invalid);
    assert_eq!(*client.calls.borrow(), 2);
    // Unparseable twice: invalid, never a pass.
    let client = Listed::new(
        &["not json", r#"{"results":[{"index":0,"pass":true}]}"#],
        true,
    );
    let v = judge(&spec(2), 1, &ev("d"), &client, &mut Budget::default()).unwrap();
    assert_eq!(*client.calls.borrow(), 2, "exactly one retry");
    assert!(v.judge_invalid);
    let (pass, message) = v.outcome(2);
    assert!(!pass);
    assert!(message.starts_with("judge grade INVALID"), "{message}");
    // Two of three votes invalid: no majority of valid grades.
    let client = Listed::new(&["x", "x", PP, "x", "x"], true);
    let v = judge(&spec(2), 3, &ev("d"), &client, &mut Budget::default()).unwrap();
    assert!(v.judge_invalid);
    assert_eq!(v.valid_votes, 1);
}

#[test]
fn a_budget_refuses_before_any_call_and_a_scripted_judge_is_never_refused() {
    let client = Listed::new(&[PP, PP, PP], false);
    let mut budget = Budget {
        max_usd: Some(0.001),
        ..Budget::default()
    };
    let e = judge(&spec(2), 3, &ev("doc"), &client, &mut budget).unwrap_err();
    assert!(matches!(e, JudgeError::Budget { .. }), "{e}");
    assert!(e.to_string().contains("--max-budget-usd"), "{e}");
    assert_eq!(*client.calls.borrow(), 0, "refused up front");

    let scripted = Listed::new(&[PP, PP, PP], true);
    let v = judge(&spec(2), 3, &ev("doc"), &scripted, &mut budget).unwrap();
    assert_eq!(v.judge_cost_usd, Some(0.0));

    let mut roomy = Budget {
        max_usd: Some(10.0),
        ..Budget::default()
    };
    let v = judge(&spec(2), 3, &ev("doc"), &client, &mut roomy).unwrap();
    assert!((roomy.spent_usd - 0.03).abs() < 1e-9);
    assert!((v.judge_cost_usd.unwrap() - 0.03).abs() < 1e-9);
}

#[test]
fn each_key_names_its_own_mismatch() {
    let s = spec(2);
    let base = Keys::of(&s, &ev("doc"));
    assert!(base.differences(&base).is_empty());
    let evidence = Keys::of(&s, &ev("other doc"));
    assert_eq!(base.differences(&evidence), ["the judged evidence changed"]);
    let mut edited = s.clone();
    edited.rubric[1] = "claim one, edited".into();
    assert_eq!(
        base.differences(&Keys::of(&edited, &ev("doc"))),
        ["the rubric changed"]
    );
    let mut other_model = s.clone();
    other_model.judge_model = Some("claude-sonnet-4-5".into());
    assert_eq!(
        base.differences(&Keys::of(&other_model, &ev("doc"))),
        ["the judge model changed"]
    );
    let template = Keys {
        judge_prompt_hash: prompt::hash_template("an edited template"),
        ..base.clone()
    };
    assert_eq!(
        base.differences(&template),
        ["the judge prompt template changed"]
    );
}

/// A `baseline_transcript` (inlined by the loader) with its one criterion.
fn baseline_spec() -> Spec {
    let v = serde_json::json!({"rubric": ["writes the note"], "baseline_transcript": {
        "file": "b.jsonl", "text": "{\"type\":\"user\"}\n\n{\"type\":\"result\"}\n"}});
    Spec::from_value(&v).unwrap()
}

#[test]
fn a_baseline_transcript_is_read_and_stands_alone() {
    let s = baseline_spec();
    let b = s.baseline.as_ref().unwrap();
    assert_eq!(b.lines.len(), 2);
    let with = |extra: Value| {
        let mut v = serde_json::json!({"rubric": ["a"], "baseline_transcript": {
            "file": "b.jsonl", "text": "{}"}});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Spec::from_value(&v)
    };
    assert!(with(serde_json::json!({"rubric": ["a", "b"]})).is_err());
    assert!(with(serde_json::json!({"evidence_files": ["x"]})).is_err());
    let unread = serde_json::json!({"rubric": ["a"], "baseline_transcript": "b.jsonl"});
    let e = Spec::from_value(&unread).unwrap_err();
    assert!(e.contains("was not read"), "{e}");
    let bad =
        serde_json::json!({"rubric": ["a"], "baseline_transcript": {"file": "b", "text": "nope"}});
    let e = Spec::from_value(&bad).unwrap_err();
    assert!(e.contains("`b`: line 1: not JSON"), "{e}");
}

#[test]
fn a_baseline_is_judged_by_pass_fail_votes_and_keyed_by_its_bytes() {
    let s = baseline_spec();
    let trace = evidence::GradedTrace::new(
        vec![serde_json::json!({"type": "result"})],
        Default::default(),
    );
    let ev =
        evidence::derive_baseline("writes the note", s.baseline.as_ref().unwrap(), &trace).unwrap();
    assert!(
        ev.document
            .starts_with("You are comparing a NEW coding-agent trajectory")
    );
    let client = Listed::new(&["PASS", "FAIL", "pass."], true);
    let v = judge(&s, 3, &ev, &client, &mut Budget::default()).unwrap();
    assert!(v.outcome(1).0);
    assert_eq!(
        v.semantic_claims[0].rationale,
        "2 of 3 baseline vote(s) PASS"
    );
    assert!((v.agreement - 2.0 / 3.0).abs() < 1e-9);
    let client = Listed::new(&["FAIL", "PASS or FAIL", "PASS"], true);
    assert!(
        !judge(&s, 3, &ev, &client, &mut Budget::default())
            .unwrap()
            .outcome(1)
            .0
    );

    // The whole baseline file keys the verdict, and the template is the baseline's.
    let mut edited = s.clone();
    edited.baseline.as_mut().unwrap().text.push('\n');
    let ev2 =
        evidence::derive_baseline("writes the note", edited.baseline.as_ref().unwrap(), &trace)
            .unwrap();
    assert_eq!(ev.document, ev2.document);
    assert_ne!(ev.digest, ev2.digest);
    let keys = Keys::of(&s, &ev);
    assert_eq!(keys.judge_prompt_hash, baseline::prompt_hash());
    assert_ne!(
        keys.judge_prompt_hash,
        Keys::of(&spec(1), &ev).judge_prompt_hash
    );
}

/// One run of a baseline-judged scenario as a cassette: its `init` in run
/// directory `run`, session `session`, one Bash call of `command` (under the
/// run's config dir) at `time` taking `ms`, and `frozen` verdicts.
fn baseline_run(run: &str, session: &str, command: &str, time: &str, ms: u64) -> Cassette {
    let work = format!("/tmp/reel-0/runs/x/{run}/work");
    let config = format!("/tmp/reel-0/runs/x/{run}/config");
    let uuid = |n: u8| format!("{}{n:02}", &session[..34]);
    let lines = [
        serde_json::json!({"type": "system", "subtype": "init", "cwd": work,
            "session_id": session, "uuid": uuid(1)}),
        serde_json::json!({"type": "control_response", "response": {"subtype": "success"}}),
        serde_json::json!({"type": "assistant", "message": {"id": format!("msg_{run}"),
            "content": [{"type": "tool_use", "id": format!("toolu_{run}"), "name": "Bash",
                "input": {"command": format!("bash {config}/skills/s/{command}")}}]},
            "session_id": session, "uuid": uuid(2), "timestamp": time}),
        serde_json::json!({"type": "user", "message": {"content": [{"type": "tool_result",
            "tool_use_id": format!("toolu_{run}"), "content": "wrote outputs/note.md"}]},
            "session_id": session, "uuid": uuid(3), "timestamp": time}),
        serde_json::json!({"type": "result", "subtype": "success", "duration_ms": ms,
            "duration_api_ms": ms / 2, "result": "Written.", "session_id": session,
            "uuid": uuid(4)}),
    ];
    let spec = serde_json::json!({"rubric": ["writes the note"], "baseline_transcript": {
        "file": "b.jsonl", "text": "{\"type\":\"user\"}\n{\"type\":\"result\"}\n"}});
    let doc = serde_json::json!({
        "cassetteVersion": 14,
        "scenario": {"name": "x", "prompt": "p", "assert": [{"max_turns": 8}, {KEY: spec}]},
        "events": lines.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
    });
    let Value::Object(doc) = doc else {
        unreachable!()
    };
    Cassette::unchecked(format!("/c/{run}.cassette.json"), doc, 14)
}

/// `cassette` with its baseline verdict (assertion 2) frozen as passed
/// under `evidence_digest`.
fn frozen_with(mut cassette: Cassette, evidence_digest: &str) -> Cassette {
    let items = freeze::assert_items(&cassette);
    let spec = Spec::from_value(&items[1][KEY]).unwrap();
    let ev = ev("unused");
    let keys = Keys {
        evidence_digest: evidence_digest.into(),
        ..Keys::of(&spec, &ev)
    };
    let client = Listed::new(&["PASS", "PASS", "PASS"], true);
    let trace = evidence::graded_turn_trace(&cassette);
    let real = evidence::derive_baseline(&spec.rubric[0], spec.baseline.as_ref().unwrap(), &trace)
        .unwrap();
    let verdict = judge(&spec, 3, &real, &client, &mut Budget::default()).unwrap();
    let frozen = freeze::Frozen {
        assertion: 1,
        keys,
        verdict,
    };
    freeze::write(&mut cassette.doc, vec![frozen]);
    cassette
}

fn baseline_evidence(cassette: &Cassette) -> Evidence {
    let items = freeze::assert_items(cassette);
    let spec = Spec::from_value(&items[1][KEY]).unwrap();
    let trace = evidence::graded_turn_trace(cassette);
    evidence::derive_baseline(&spec.rubric[0], spec.baseline.as_ref().unwrap(), &trace).unwrap()
}

/// A rerun's carry-over and its notes.
fn carry(recorded: &Cassette, fresh: &mut Cassette) -> Vec<String> {
    freeze::carry_over(recorded, fresh);
    freeze::carried_notes(fresh)
}

const SESSION_A: &str = "da45fbb8-cffa-42cb-9c14-6bcb7593ff8d";
const SESSION_B: &str = "6dddf3fb-680e-4836-8756-83110c5d3da1";

#[test]
fn the_baseline_key_masks_the_runs_own_ids_paths_and_times_but_not_the_prompt() {
    let a = baseline_run(
        "local_a1",
        SESSION_A,
        "note.sh Friday",
        "2026-12-07T22:08:51.309Z",
        400,
    );
    let b = baseline_run(
        "local_b2",
        SESSION_B,
        "note.sh Friday",
        "2026-12-08T01:00:00.000Z",
        90,
    );
    let (ea, eb) = (baseline_evidence(&a), baseline_evidence(&b));
    // The judge is sent each run's own bytes; the key is the same.
    assert!(
        ea.document
            .contains("/tmp/reel-0/runs/x/local_a1/config/skills/s/note.sh")
    );
    assert!(ea.document.contains(SESSION_A) && ea.document.contains("toolu_local_a1"));
    assert!(!ea.document.contains("control_response"));
    assert_ne!(ea.document, eb.document);
    assert_eq!(ea.digest, eb.digest);
    assert_ne!(ea.unmasked_digest, eb.unmasked_digest);
    assert_eq!(
        ea.unmasked_digest.as_deref(),
        Some(frozen_digest_before_masking(&ea).as_str())
    );
    // A different trajectory is a different key.
    let c = baseline_run(
        "local_c3",
        SESSION_B,
        "note.sh Monday",
        "2026-12-08T01:00:00.000Z",
        90,
    );
    assert_ne!(baseline_evidence(&c).digest, ea.digest);
}

/// The key reel froze before masking: the prompt as sent, and the file.
fn frozen_digest_before_masking(ev: &Evidence) -> String {
    let file = "{\"type\":\"user\"}\n{\"type\":\"result\"}\n";
    evidence::digest(&format!(
        "{}\n\0baseline {}",
        ev.document,
        evidence::digest(file)
    ))
}

#[test]
fn a_rerun_carries_the_baseline_verdict_over_unless_the_trajectory_changed() {
    let recorded = baseline_run(
        "local_a1",
        SESSION_A,
        "note.sh Friday",
        "2026-12-07T22:08:51Z",
        400,
    );
    let key = baseline_evidence(&recorded).digest;
    let recorded = frozen_with(recorded, &key);
    let mut fresh = baseline_run(
        "local_b2",
        SESSION_B,
        "note.sh Friday",
        "2026-12-08T01:00:00Z",
        90,
    );
    let notes = carry(&recorded, &mut fresh);
    assert_eq!(
        notes,
        [
            "judged assertion 2 (semantic_matches): the judged answer is unchanged; its frozen \
          verdict holds"
        ]
    );
    let run = crate::evidence::RunRecord::from_cassette(&fresh);
    let assessed = freeze::assess(&fresh, &run, &freeze::assert_items(&fresh));
    assert!(
        matches!(assessed[0].status, freeze::Status::Frozen(_)),
        "{assessed:?}"
    );

    let mut changed = baseline_run(
        "local_b2",
        SESSION_B,
        "note.sh Monday",
        "2026-12-08T01:00:00Z",
        90,
    );
    let notes = carry(&recorded, &mut changed);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("needs regrade: the judged evidence changed"),
        "{notes:?}"
    );
}

/// A verdict frozen before reel masked the trace (keyed by the unmasked
/// prompt) still holds on the same bytes, and a rerun carries it over keyed
/// by the masked digest of the trace it was judged on.
#[test]
fn a_verdict_frozen_over_the_unmasked_trace_holds_and_carries_over_rekeyed() {
    let recorded = baseline_run(
        "local_a1",
        SESSION_A,
        "note.sh Friday",
        "2026-12-07T22:08:51Z",
        400,
    );
    let ev = baseline_evidence(&recorded);
    let legacy = ev.unmasked_digest.clone().unwrap();
    let recorded = frozen_with(recorded, &legacy);
    let run = crate::evidence::RunRecord::from_cassette(&recorded);
    let assessed = freeze::assess(&recorded, &run, &freeze::assert_items(&recorded));
    assert!(
        matches!(assessed[0].status, freeze::Status::Frozen(_)),
        "{assessed:?}"
    );

    let mut fresh = baseline_run(
        "local_b2",
        SESSION_B,
        "note.sh Friday",
        "2026-12-08T01:00:00Z",
        90,
    );
    let notes = carry(&recorded, &mut fresh);
    assert!(notes[0].ends_with("its frozen verdict holds"), "{notes:?}");
    assert_eq!(freeze::read(&fresh.doc)[0].keys.evidence_digest, ev.digest);
    // A legacy key over other bytes is stale, as before.
    let stale = frozen_with(
        baseline_run(
            "local_a1",
            SESSION_A,
            "note.sh Friday",
            "2026-12-07T22:08:51Z",
            400,
        ),
        &evidence::digest("other bytes"),
    );
    let mut fresh = baseline_run(
        "local_b2",
        SESSION_B,
        "note.sh Friday",
        "2026-12-08T01:00:00Z",
        90,
    );
    let notes = carry(&stale, &mut fresh);
    assert!(notes[0].contains("needs regrade"), "{notes:?}");
}
