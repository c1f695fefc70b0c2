//! The assertion keys and forms cowork-harness added after 2.0.0 (cassette
//! formats v13–v16 and the keys without a format bump): pass, fail and
//! evidence-unavailable per evaluated key, on cassettes built with the kit's
//! `CassetteDoc`. Each case cites the original's test or catalog entry it
//! follows.

use std::path::Path;

use reel::assert::{AssertionOutcome, Context, catalog, check};
use reel::cassette::Cassette;
use reel::evidence::RunRecord;
use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, RunExt};

const MULTI: &str = "examples/replays/example-multiselect-gate.cassette.json";

/// The multiselect cassette: one gate, "Which features should be enabled?",
/// offering Auth, Billing and Audit, each with a description.
fn multiselect() -> CassetteDoc {
    CassetteDoc::from_file(&support::compat(MULTI))
}

fn cassette(doc: CassetteDoc) -> Cassette {
    let version = doc.doc()["cassetteVersion"].as_u64().unwrap_or(12);
    Cassette::unchecked("t.cassette.json", doc.into_map(), version)
}

fn one(c: &Cassette, item: Value) -> AssertionOutcome {
    catalog::validate(&item).unwrap_or_else(|e| panic!("{item}: {e}"));
    let run = RunRecord::from_cassette(c);
    let ctx = Context::new(c, &run, Some(Path::new("/tmp/root")));
    check(item.as_object().unwrap(), &ctx)
}

fn passes(c: &Cassette, item: Value) -> AssertionOutcome {
    let o = one(c, item.clone());
    assert!(o.pass, "{item} failed: {}", o.message);
    o
}

fn fails(c: &Cassette, item: Value) -> String {
    let o = one(c, item.clone());
    assert!(!o.pass, "{item} passed: {:?}", o.evidence);
    o.message
}

/// test/question-option-count.test.ts: bounds over every selected
/// sub-question, labels only, case-insensitive by default, never vacuous.
#[test]
fn question_option_count_follows_the_original() {
    let c = cassette(multiselect());
    let o = passes(
        &c,
        json!({"question_option_count": {"matches": "^(auth|audit)$", "exactly": 2}}),
    );
    assert_eq!(
        o.evidence.as_deref(),
        Some(
            "question_option_count: all 1 sub-question(s) have exactly 2 option label(s) matching /^(auth|audit)$/i"
        )
    );
    passes(
        &c,
        json!({"question_option_count": {"matches": "^a", "min": 1, "max": 2}}),
    );
    passes(
        &c,
        json!({"question_option_count": {"matches": "zzz", "exactly": 0}}),
    );
    // Labels only, never the description ("User authentication …").
    passes(
        &c,
        json!({"question_option_count": {"matches": "authentication", "exactly": 0}}),
    );
    // case_sensitive covers the whole pattern.
    passes(
        &c,
        json!({"question_option_count": {"matches": "^auth", "exactly": 0, "case_sensitive": true}}),
    );
    let m = fails(
        &c,
        json!({"question_option_count": {"matches": "^a", "exactly": 1}}),
    );
    assert_eq!(
        m,
        "question_option_count: expected exactly 1 option label(s) matching /^a/i on every \
         sub-question; 1 of 1 did not: \"Which features should be enabled?\" has 2 of [Auth, \
         Billing, Audit]"
    );
    let m = fails(
        &c,
        json!({"question_option_count": {"when_question": "nothing like this", "matches": "x", "exactly": 0}}),
    );
    assert_eq!(
        m,
        "question_option_count: no question matching /nothing like this/i was asked (1 gate(s) recorded)"
    );
    // Zero gates fails, even for `exactly: 0`.
    let no_gate = cassette(CassetteDoc::minimal());
    let m = fails(
        &no_gate,
        json!({"question_option_count": {"matches": "x", "exactly": 0}}),
    );
    assert_eq!(
        m,
        "question_option_count: no question was asked (0 gate(s) recorded)"
    );
    // A bad bound is reported first; load refuses it too.
    for (bound, why) in [
        (json!({"matches": "x"}), "checks nothing"),
        (json!({"matches": "x", "exactly": 1, "max": 2}), "not both"),
        (json!({"matches": "x", "min": 3, "max": 1}), "greater than"),
    ] {
        let e = catalog::validate(&json!({"question_option_count": bound})).unwrap_err();
        assert!(e.contains(why), "{e}");
    }
    for bad in [
        json!({"matches": "", "exactly": 1}),
        json!({"matches": "x", "exactly": -1}),
        json!({"matches": "x", "exactly": 1, "case_sensitive": false}),
        json!({"matches": "x", "exactly": 1, "extra": true}),
    ] {
        assert!(catalog::validate(&json!({"question_option_count": bad})).is_err());
    }
}

/// assertion-catalog-gates-hooks-modifiers.md `question_context`: the
/// question, every label and every description, each tested on its own.
#[test]
fn question_context_searches_everything_the_gate_showed() {
    let c = cassette(multiselect());
    passes(&c, json!({"question_context": {"matches": "invoicing"}}));
    passes(&c, json!({"question_context": {"matches": "^billing$"}}));
    passes(
        &c,
        json!({"question_context": {"when_question": "features", "matches": "should be enabled"}}),
    );
    // Each text on its own: no match across a label and its description.
    let m = fails(&c, json!({"question_context": {"matches": "Auth User"}}));
    assert!(
        m.starts_with("question_context: no question showed text matching /Auth User/i"),
        "{m}"
    );
    let no_gate = cassette(CassetteDoc::minimal());
    let m = fails(&no_gate, json!({"question_context": {"matches": "x"}}));
    assert_eq!(
        m,
        "question_context: no question was asked (0 gate(s) recorded)"
    );
}

/// The gate keys need controlOut: without it replay excludes them with the
/// original's warning and counts them skipped (docs/spec/replay.md §4.2).
#[test]
fn the_new_gate_keys_are_excluded_without_control_out() {
    let fx = support::Fixture::new();
    let path = fx.path("nocontrol.cassette.json");
    multiselect()
        .remove("controlOut")
        .set("cassetteVersion", json!(14))
        .set(
            "scenario.assert",
            json!([{"result": "success"},
                   {"question_option_count": {"matches": "^a", "exactly": 2}},
                   {"question_context": {"matches": "Billing"}}]),
        )
        .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
        .run();
    let v = run.json();
    assert_eq!(
        v["results"][0]["assertions"].as_array().unwrap().len(),
        1,
        "{v}"
    );
    assert!(run.stderr.contains("no controlOut"), "{}", run.stderr);
}

/// assertion-catalog-outcome-files-tools.md `tool_called`: "`{tool: X}`
/// alone is exactly `tool_called: X`"; any other predicate fails closed.
#[test]
fn the_object_form_of_the_tool_keys() {
    let c = cassette(multiselect());
    passes(&c, json!({"tool_called": {"tool": "AskUserQuestion"}}));
    passes(&c, json!({"tool_called": {"tool": ["Nope", "Ask*"]}}));
    passes(&c, json!({"tool_not_called": {"tool": ["Bash", "Write"]}}));
    let m = fails(&c, json!({"tool_called": {"tool": "Bash"}}));
    assert!(
        m.starts_with("tool not called: no called tool matched \"Bash\""),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"tool_not_called": {"tool": ["Bash", "AskUser*"]}}),
    );
    assert!(
        m.starts_with("tool unexpectedly called: \"AskUser*\""),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "input": {"questions": "x"}}}),
    );
    assert!(
        m.starts_with("evidence unavailable: tool_called: the object form's `input`"),
        "{m}"
    );
    // tool_not_called has no `count`.
    assert!(
        catalog::validate(&json!({"tool_not_called": {"tool": "Bash", "count": {"max": 1}}}))
            .is_err()
    );
    assert!(
        catalog::validate(&json!({"tool_called": {"tool": "Bash", "count": {"min": 2}}})).is_ok()
    );
}

/// A manifest with one fixture file left untouched, one rewritten and one
/// created by the run.
fn authored_fixture() -> Cassette {
    let sha = |c: &str| c.repeat(64);
    cassette(
        multiselect()
            .set(
                "artifacts",
                json!([
                    {"path": "outputs/kept.md", "bytes": 1, "sha256": sha("a"), "body": "k"},
                    {"path": "outputs/rewritten.md", "bytes": 1, "sha256": sha("c"), "body": "r"},
                    {"path": "outputs/new.json", "bytes": 7, "sha256": sha("d"), "body": "{\"a\":1}"},
                ]),
            )
            .set("preRunPaths", json!(["outputs/kept.md", "outputs/rewritten.md"]))
            .set(
                "preRunHashes",
                json!({"outputs/kept.md": sha("a"), "outputs/rewritten.md": sha("b")}),
            ),
    )
}

/// assertion-catalog-outcome-files-tools.md `file_exists`: `authored: true`
/// also requires that this run created or rewrote the file; an untouched
/// pre-run file fails; no pre-run manifest is evidence-unavailable.
#[test]
fn authored_is_decided_from_the_pre_run_hashes() {
    let c = authored_fixture();
    for p in ["outputs/rewritten.md", "outputs/new.json"] {
        passes(&c, json!({"file_exists": {"path": p, "authored": true}}));
        passes(
            &c,
            json!({"user_visible_artifact": {"path": p, "authored": true}}),
        );
    }
    passes(
        &c,
        json!({"file_exists": {"path": "outputs/kept.md", "authored": false}}),
    );
    let m = fails(
        &c,
        json!({"file_exists": {"path": "outputs/kept.md", "authored": true}}),
    );
    assert!(
        m.starts_with("file_exists: \"outputs/kept.md\" is untouched"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"artifact_text": {"artifact": "outputs/kept.md", "contains": ["k"], "authored": true}}),
    );
    assert!(m.contains("is untouched"), "{m}");
    passes(
        &c,
        json!({"artifact_json": {"artifact": "outputs/new.json", "path": "a", "equals": 1, "authored": true}}),
    );

    let no_baseline = cassette(
        CassetteDoc::minimal().set(
            "artifacts",
            json!([{"path": "outputs/new.json", "bytes": 7, "sha256": "d".repeat(64), "body": "{\"a\":1}"}]),
        ),
    );
    let m = fails(
        &no_baseline,
        json!({"file_exists": {"path": "outputs/new.json", "authored": true}}),
    );
    assert!(
        m.starts_with("evidence unavailable: file_exists: `authored: true` needs"),
        "{m}"
    );
    // The object form needs both fields.
    assert!(catalog::validate(&json!({"file_exists": {"path": "a"}})).is_err());
}

/// A cassette whose main agent `Read` a mounted skill's reference file.
fn reference_reader() -> Cassette {
    let read = json!({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "r1", "name": "Read",
         "input": {"file_path": "/sessions/s/mnt/.local-plugins/p/skills/s/references/pricing.md"}}]}});
    cassette(CassetteDoc::minimal().set(
        "events",
        json!([
            read.to_string(),
            json!({"type": "result", "subtype": "success", "is_error": false}).to_string()
        ]),
    ))
}

/// assertion-catalog-outcome-files-tools.md `reference_read` /
/// `no_observed_reference_access`: unanchored, case-insensitive; no tool
/// stream at all is evidence-unavailable, never a vacuous pass.
#[test]
fn reference_keys_read_the_observed_accesses() {
    let c = reference_reader();
    let o = passes(&c, json!({"reference_read": "PRICING\\.md$"}));
    assert_eq!(
        o.evidence.as_deref(),
        Some("reference_read: references/pricing.md matched /PRICING\\.md$/i")
    );
    passes(&c, json!({"no_observed_reference_access": "legacy"}));
    let m = fails(&c, json!({"reference_read": "legacy"}));
    assert_eq!(
        m,
        "reference_read: no observed reference access matched /legacy/i (observed: references/pricing.md)"
    );
    let m = fails(&c, json!({"no_observed_reference_access": "pricing"}));
    assert_eq!(
        m,
        "no_observed_reference_access: references/pricing.md was accessed (matched /pricing/i)"
    );
    let silent = cassette(CassetteDoc::minimal());
    for key in ["reference_read", "no_observed_reference_access"] {
        let m = fails(&silent, json!({key: "x"}));
        assert!(m.starts_with("evidence unavailable:"), "{m}");
    }
}

/// The judged keys are live-only: replay skips them with the original's
/// notice and counts them (docs/spec/replay.md §4.4).
#[test]
fn the_judged_keys_are_skipped_on_replay() {
    let fx = support::Fixture::new();
    let path = fx.path("judged.cassette.json");
    multiselect()
        .set("cassetteVersion", json!(14))
        .set(
            "scenario.assert",
            json!([{"result": "success"},
                   {"semantic_pairwise": {"refs": ["refs/base"], "pass_if": "not_worse"}},
                   {"semantic_matches": {"rubric": ["r"], "include_fork_results": true}}]),
        )
        .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
        .run();
    let v = run.json();
    assert_eq!(run.code, 0, "{}", run.streams());
    assert_eq!(
        v["results"][0]["assertions"].as_array().unwrap().len(),
        1,
        "{v}"
    );
    assert!(
        run.stderr.contains("semantic_pairwise") || run.stderr.contains("live-only"),
        "{}",
        run.stderr
    );
}

/// Keys a v13–v16 cassette may carry that this build does not evaluate yet
/// fail closed, never pass.
#[test]
fn keys_not_evaluated_yet_fail_closed() {
    let c = cassette(multiselect());
    for item in [
        json!({"gates_all_scripted": true}),
        json!({"hook_event_fired": "Stop"}),
        json!({"hook_event_blocked": {"event": "Stop", "max": 0}}),
        json!({"no_hook_event_blocked": true}),
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny"}}),
        json!({"hook_output_contains": {"event": "Stop", "text": "x"}}),
        json!({"hook_output_not_contains": {"event": "Stop", "matches": "x"}}),
    ] {
        let m = fails(&c, item.clone());
        assert!(
            m.starts_with("evidence unavailable:") && m.contains("not evaluated"),
            "{item}: {m}"
        );
    }
}
