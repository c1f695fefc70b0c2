//! Evidence re-drive + assertion evaluation against real cowork-harness
//! cassettes: for every frozen `assert:` item, `RunRecord::from_cassette` +
//! `check` must reproduce the original CLI's pass/fail, message and evidence
//! (tests/compat/expected/replay-*-json.stdout), and mutated variants of
//! docs/spec/replay.md §9 must behave as observed there.

use std::path::Path;

use proptest::prelude::*;
use reel::assert::{AssertionOutcome, Context, catalog, check};
use reel::cassette::Cassette;
use reel::evidence::RunRecord;
use serde_json::{Map, Value, json};

use crate::support::{self, CassetteDoc};

/// The work root the original printed, normalised in its captured output.
const ORIGINAL_ROOT: &str = "/tmp/cwh-replay-XXXXXX";

fn load(rel: &str) -> Cassette {
    let path = support::compat(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let doc: Value = serde_json::from_slice(&bytes).expect("compat cassette is JSON");
    cassette_from(doc, &path)
}

fn cassette_from(doc: Value, path: &Path) -> Cassette {
    let version = doc
        .get("cassetteVersion")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Cassette::unchecked(path, doc.as_object().cloned().expect("object"), version)
}

fn evaluate(c: &Cassette, items: &[Value]) -> Vec<AssertionOutcome> {
    let run = RunRecord::from_cassette(c);
    let ctx = Context::new(c, &run, Some(Path::new(ORIGINAL_ROOT)));
    items
        .iter()
        .map(|i| {
            catalog::validate(i).unwrap_or_else(|e| panic!("frozen assertion {i} invalid: {e}"));
            check(i.as_object().expect("object"), &ctx)
        })
        .collect()
}

fn frozen(c: &Cassette) -> Vec<Value> {
    c.scenario()
        .get("assert")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The original's `assertions[]` of the (single) result in an expected envelope.
fn expected(name: &str) -> Vec<Value> {
    let path = support::compat(&format!("expected/{name}"));
    let env: Value = serde_json::from_slice(&std::fs::read(&path).expect("expected output"))
        .expect("JSON envelope");
    env["results"][0]["assertions"]
        .as_array()
        .cloned()
        .expect("assertions")
}

fn as_json(o: &AssertionOutcome) -> Value {
    serde_json::to_value(o).expect("serialisable")
}

fn assert_same(got: &[AssertionOutcome], want: &[Value]) {
    assert_eq!(got.len(), want.len(), "assertion count");
    for (g, w) in got.iter().zip(want) {
        let g = as_json(g);
        assert_eq!(&g, w, "\n got: {g}\nwant: {w}");
    }
}

#[test]
fn multiselect_gate_cassette_matches_the_original() {
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let got = evaluate(&c, &frozen(&c));
    assert_same(
        &got,
        &expected("replay-example-multiselect-gate-json.stdout"),
    );
    let run = RunRecord::from_cassette(&c);
    assert!(
        run.format_findings().is_empty(),
        "{:?}",
        run.format_findings()
    );
    assert!(run.has_control_out);
    assert_eq!(run.questions.len(), run.gate_options.len());
    assert!(
        run.gate_deliveries
            .iter()
            .all(|g| g.delivered == Some(true)),
        "{:?}",
        run.gate_deliveries
    );
}

#[test]
fn pdf_skill_cassette_matches_the_original() {
    let c = load("examples/replays/example-pdf-skill.cassette.json");
    let got = evaluate(&c, &frozen(&c));
    assert_same(&got, &expected("replay-example-pdf-skill-json.stdout"));
    let run = RunRecord::from_cassette(&c);
    assert!(
        run.format_findings().is_empty(),
        "{:?}",
        run.format_findings()
    );
    // The original's result: toolCounts {"Skill":1,"Bash":1,"Read":1,"Write":1}, cost 0.290787.
    let counts: Vec<(&str, u64)> = run
        .tool_counts
        .iter()
        .map(|(n, c)| (n.as_str(), *c))
        .collect();
    assert_eq!(
        counts,
        vec![("Skill", 1), ("Bash", 1), ("Read", 1), ("Write", 1)]
    );
    assert_eq!(run.cost_usd, Some(0.290787));
}

#[test]
fn hostloop_links_cassette_matches_the_original() {
    let c = load("examples/replays/hostloop-computer-links.cassette.json");
    let got = evaluate(&c, &frozen(&c));
    assert_same(
        &got,
        &expected("replay-hostloop-computer-links-json.stdout"),
    );
    assert!(RunRecord::from_cassette(&c).format_findings().is_empty());
}

#[test]
fn assert_from_failing_yaml_matches_the_original() {
    let c = load("examples/replays/example-pdf-skill.cassette.json");
    let yaml = std::fs::read_to_string(support::compat(
        "examples/replays/example-pdf-skill-ci-selftest-failing.yaml",
    ))
    .expect("scenario yaml");
    let scenario: Value = serde_yaml_ng::from_str(&yaml).expect("yaml");
    let items = scenario["assert"]
        .as_array()
        .cloned()
        .expect("assert block");
    let got = evaluate(&c, &items);
    assert_same(
        &got,
        &expected("replay-pdf-assert-from-failing-json.stdout"),
    );
}

/// The multiselect cassette with extra assertions (spec §9 case a).
fn mutated_multiselect() -> (Cassette, Map<String, Value>) {
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let mut doc = c.doc.clone();
    doc.insert("artifacts".into(), json!([]));
    doc.insert("preRunPaths".into(), json!([]));
    doc.insert("preRunHashes".into(), json!({}));
    (cassette_from(Value::Object(doc.clone()), &c.path), doc)
}

fn one(c: &Cassette, item: Value) -> AssertionOutcome {
    evaluate(c, &[item]).remove(0)
}

#[test]
fn gate_and_budget_keys_on_the_multiselect_cassette() {
    let (c, _) = mutated_multiselect();
    let pass = |item: Value| {
        let o = one(&c, item.clone());
        assert!(o.pass, "{item} failed: {}", o.message);
        o
    };
    pass(json!({"question_asked": "which"}));
    pass(json!({"gate_answers_delivered": true}));
    pass(json!({"gate_answer_count_min": 1}));
    pass(json!({"questions_count_max": 1}));
    let o = pass(json!({"max_tokens": 1000}));
    assert_eq!(o.evidence.as_deref(), Some("max_tokens: 190 ≤ 1000"));
    pass(json!({"no_unexpected_files": []}));
    pass(json!({"allow_stall": true}));

    let o = one(&c, json!({"input_unmodified": "outputs/**"}));
    assert!(!o.pass);
    assert_eq!(
        o.message,
        "input_unmodified matched no pre-run path(s): glob(s) outputs/** matched nothing in the pre-run manifest — nothing to verify; check the mount name/glob (a typo or renamed mount reads as a vacuous pass otherwise)"
    );
    let o = one(&c, json!({"questions_count_max": 0}));
    assert_eq!(o.message, "asked 1 questions, max 0");
    // spec §9 case a: `skill_triggered: x` fails listing no invoked skill.
    let o = one(&c, json!({"skill_triggered": "x"}));
    assert_eq!(o.message, "no invoked skill matched \"x\" (invoked: none)");
    pass(json!({"skill_available": "dataviz"}));
    pass(json!({"no_skill_triggered": "x"}));
}

#[test]
fn question_options_reads_what_was_offered() {
    let (c, _) = mutated_multiselect();
    let run = RunRecord::from_cassette(&c);
    let labels: Vec<String> = run.gate_options[0]
        .options
        .iter()
        .map(|o| o.label.clone())
        .collect();
    assert!(!labels.is_empty());
    let o = one(&c, json!({"question_options": {"equals": labels}}));
    assert!(o.pass, "{}", o.message);
    assert!(o.evidence.unwrap().starts_with("question_options: gate \""));
    let o = one(&c, json!({"question_options": {"contains": ["Nope"]}}));
    assert!(!o.pass);
    assert!(
        o.message
            .starts_with("question_options (contains, order exact): expected [Nope]; offered ["),
        "{}",
        o.message
    );
    assert!(o.message.ends_with("(missing Nope)"), "{}", o.message);
    let o = one(
        &c,
        json!({"question_options": {"when_question": "zzz", "equals": ["a"]}}),
    );
    assert_eq!(
        o.message,
        "question_options: no question matching /zzz/i was asked (1 gate(s) recorded)"
    );
}

#[test]
fn multiple_keys_are_anded_in_check_order() {
    let (c, _) = mutated_multiselect();
    // `result` is last in the chain, so the transcript failure is reported first.
    let o = one(
        &c,
        json!({"result": "error", "transcript_contains": "no such text"}),
    );
    assert!(!o.pass);
    assert_eq!(o.message, "transcript missing \"no such text\"");
    let o = one(
        &c,
        json!({"result": "success", "transcript_contains": "Auth"}),
    );
    assert!(o.pass);
    assert_eq!(
        o.evidence.as_deref(),
        Some("transcript_contains: found \"Auth\"; result: success")
    );
    let o = one(&c, json!({"result": "error"}));
    assert_eq!(o.message, "result was success, expected error");
}

#[test]
fn skill_and_tool_keys_fail_with_the_original_messages() {
    let c = load("examples/replays/example-pdf-skill.cassette.json");
    let o = one(&c, json!({"tool_called": "WebFetch"}));
    assert_eq!(
        o.message,
        "tool not called: no called tool matched \"WebFetch\" (called: Skill, Bash, Read, Write)"
    );
    let o = one(&c, json!({"tool_not_called": "Skill"}));
    assert_eq!(
        o.message,
        "tool unexpectedly called: \"Skill\" matched Skill"
    );
    let o = one(&c, json!({"skill_triggered": "my-pdf-skill"}));
    assert!(o.pass, "{}", o.message);
    let o = one(&c, json!({"skill_triggered": "^nope$"}));
    assert!(
        o.message
            .starts_with("no invoked skill matched \"^nope$\" (invoked: "),
        "{}",
        o.message
    );
    let o = one(&c, json!({"transcript_matches": "(unclosed"}));
    assert!(
        o.message
            .starts_with("transcript_matches: bad regex \"(unclosed\": "),
        "{}",
        o.message
    );
    let o = one(&c, json!({"max_cost_usd": 0.1}));
    assert_eq!(o.message, "cost $0.290787 exceeds max $0.1");
    let o = one(&c, json!({"dispatch_count_max": 0}));
    assert!(o.pass);
    let o = one(&c, json!({"no_vm_path_file_op": true}));
    assert_eq!(
        o.message,
        "no_vm_path_file_op: hostloop-only — /sessions/... is valid and there is no path hook on tier \"container\" — cannot verify; pin fidelity: hostloop"
    );
    let o = one(&c, json!({"tool_no_error": "Write"}));
    assert!(o.pass, "{}", o.message);
    let o = one(&c, json!({"tool_no_error": "^Nope$"}));
    assert!(
        o.message
            .starts_with("tool_no_error: no tool matching \"^Nope$\" was called"),
        "{}",
        o.message
    );
}

#[test]
fn manifest_keys_read_the_pdf_manifest() {
    let c = load("examples/replays/example-pdf-skill.cassette.json");
    let o = one(&c, json!({"file_exists": "uploads/report.pdf"}));
    assert!(
        o.pass,
        "body-less input entries prove existence: {}",
        o.message
    );
    let o = one(&c, json!({"file_exists": "project/outputs/missing.md"}));
    assert_eq!(
        o.message,
        format!("file not found: project/outputs/missing.md (under {ORIGINAL_ROOT})")
    );
    let o = one(&c, json!({"file_exists": "../escape"}));
    assert!(
        o.message
            .starts_with("unsafe file_exists path \"../escape\"")
    );
    let o = one(&c, json!({"user_visible_artifact": "uploads/report.pdf"}));
    assert_eq!(
        o.message,
        "\"uploads/report.pdf\" is not under a user-visible prefix (outputs, project) — invisible to the user in Cowork"
    );
    let o = one(
        &c,
        json!({"artifact_text": {"artifact": "project/outputs/actions.md", "contains": ["Action Items"], "matches": "q\\d"}}),
    );
    assert!(o.pass, "{}", o.message);
    assert_eq!(
        o.evidence.as_deref(),
        Some("artifact_text: project/outputs/actions.md satisfied every matcher")
    );
    let o = one(
        &c,
        json!({"artifact_text": {"artifact": "project/outputs/actions.md", "contains": ["zzz"], "not_contains": ["Action"]}}),
    );
    assert_eq!(
        o.message,
        "artifact_text: project/outputs/actions.md does not contain \"zzz\""
    );
    let o = one(
        &c,
        json!({"artifact_text": {"artifact": "uploads/report.pdf", "contains": ["x"]}}),
    );
    assert_eq!(
        o.message,
        "evidence unavailable: artifact_text target \"uploads/report.pdf\" was captured body-less (an uploaded input — captured hash-only, never inlined) — content is not available to match against"
    );
    let o = one(
        &c,
        json!({"artifact_json": {"artifact": "project/outputs/actions.md", "path": "a"}}),
    );
    assert!(
        o.message.starts_with(
            "artifact_json: project/outputs/actions.md could not be read/parsed as JSON: "
        ),
        "{}",
        o.message
    );
    let o = one(
        &c,
        json!({"input_unmodified": ["project/**", "uploads/**"]}),
    );
    assert!(o.pass, "{}", o.message);
    let o = one(&c, json!({"no_unexpected_files": ["project/outputs/*.md"]}));
    assert!(o.pass, "{}", o.message);
    let o = one(&c, json!({"no_unexpected_files": []}));
    assert_eq!(
        o.message,
        "unexpected file(s) created outside the allowlist: project/outputs/actions.md (allow: (none))"
    );
}

fn with_doc(c: &Cassette, edit: impl FnOnce(&mut Map<String, Value>)) -> Cassette {
    let mut doc = c.doc.clone();
    edit(&mut doc);
    cassette_from(Value::Object(doc), &c.path)
}

#[test]
fn input_unmodified_baseline_rules() {
    let c = load("examples/replays/example-pdf-skill.cassette.json");
    // A scrubbed (null) pre-hash is evidence-unavailable (with the original's size-cap wording).
    let scrubbed = with_doc(&c, |d| {
        d["preRunHashes"]["project/notes.txt"] = Value::Null;
    });
    let o = one(&scrubbed, json!({"input_unmodified": "project/**"}));
    assert_eq!(
        o.message,
        "evidence unavailable: pre-run hash missing (over size cap) for: project/notes.txt — raise COWORK_HARNESS_PRERUN_HASH_CAP or narrow the glob"
    );
    // A changed manifest hash is a modification; a vanished entry a removal.
    let changed = with_doc(&c, |d| {
        d["preRunHashes"]["project/notes.txt"] = json!("0".repeat(64));
        let arts = d["artifacts"].as_array_mut().unwrap();
        arts.retain(|a| a["path"] != "uploads/report.pdf");
    });
    let o = one(
        &changed,
        json!({"input_unmodified": ["project/**", "uploads/**"]}),
    );
    assert_eq!(
        o.message,
        "pre-existing file(s) changed — modified in place: project/notes.txt; removed: uploads/report.pdf"
    );
    // A non-local baseline origin makes both baseline keys evidence-unavailable.
    let remote = with_doc(&c, |d| {
        d.insert("preRunOrigin".into(), json!("local-unreadable"));
    });
    let o = one(&remote, json!({"input_unmodified": "project/**"}));
    assert!(o.message.starts_with("evidence unavailable: pre-run manifest origin is local-unreadable (a connected-folder source was unreadable"), "{}", o.message);
    let o = one(&remote, json!({"no_unexpected_files": ["**"]}));
    assert!(
        o.message.ends_with("— cannot compute created files"),
        "{}",
        o.message
    );
    // No userVisibleRoots ⇒ legacy roots; project/ is then not walked at all.
    let legacy = with_doc(&c, |d| {
        d.shift_remove("userVisibleRoots");
    });
    assert!(one(&legacy, json!({"no_unexpected_files": []})).pass);
}

#[test]
fn truncated_question_empties_the_record() {
    // spec §9 case h: the controlOut answer line removed.
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let cut = with_doc(&c, |d| {
        let co = d["controlOut"].as_array_mut().unwrap();
        co.retain(|l| !l.as_str().unwrap_or("").contains("\"answers\""));
    });
    let run = RunRecord::from_cassette(&cut);
    let findings = run.format_findings();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(
        findings[0].starts_with("truncated cassette: no decider answered the question"),
        "{}",
        findings[0]
    );
    let o = one(&cut, json!({"transcript_contains": "Auth"}));
    assert_eq!(o.message, "transcript missing \"Auth\"");
    let o = one(&cut, json!({"result": "success"}));
    assert_eq!(o.message, "result was error, expected success");
    let o = one(&cut, json!({"question_options": {"contains": ["Auth"]}}));
    assert_eq!(
        o.message,
        "evidence unavailable: gate-option evidence absent for this run — cannot evaluate question_options"
    );
}

#[test]
fn malformed_event_line_is_a_finding() {
    // spec §9 case i.
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let bad = with_doc(&c, |d| {
        d["events"]
            .as_array_mut()
            .unwrap()
            .insert(5, json!("{not json"));
    });
    let f = RunRecord::from_cassette(&bad).format_findings();
    assert_eq!(
        f,
        vec![
            "cassette events line 5 is not valid JSON — replay_protocol_error (malformed line may conceal a failed assertion)"
        ]
    );
}

#[test]
fn edited_answer_still_replays_green() {
    // spec §9 case g / §8.1: the O7 guard does not re-check answers.
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let edited = with_doc(&c, |d| {
        for l in d["controlOut"].as_array_mut().unwrap() {
            let s = l.as_str().unwrap().to_owned();
            if s.contains("\"answers\"") {
                let mut v: Value = serde_json::from_str(&s).unwrap();
                let answers = v["response"]["response"]["updatedInput"]["answers"]
                    .as_object_mut()
                    .unwrap();
                for a in answers.values_mut() {
                    *a = json!("Auth");
                }
                *l = Value::String(serde_json::to_string(&v).unwrap());
            }
        }
    });
    assert!(
        RunRecord::from_cassette(&edited)
            .format_findings()
            .is_empty()
    );
}

#[test]
fn no_control_out_leaves_gate_evidence_undefined() {
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let legacy = with_doc(&c, |d| {
        d.shift_remove("controlOut");
    });
    let run = RunRecord::from_cassette(&legacy);
    assert!(!run.has_control_out);
    assert!(run.hook_events.is_none() && run.path_denials.is_none());
    assert!(run.questions.is_empty());
    let o = one(&legacy, json!({"no_hook_blocked": true}));
    assert_eq!(
        o.message,
        "no_hook_blocked: no hook events (older run / replay without controlOut) — cannot verify"
    );
    // The content is still there: decision events are simply not yielded.
    assert!(one(&legacy, json!({"transcript_contains": "Auth"})).pass);
}

#[test]
fn every_frozen_compat_assertion_validates() {
    for name in [
        "example-multiselect-gate",
        "example-pdf-skill",
        "hostloop-computer-links",
    ] {
        let c = load(&format!("examples/replays/{name}.cassette.json"));
        for item in frozen(&c) {
            catalog::validate(&item).unwrap_or_else(|e| panic!("{name}: {item}: {e}"));
        }
    }
}

fn arb_line() -> impl Strategy<Value = String> {
    let fragments = prop_oneof![
        Just(r#"{"type":"assistant","message":{"content":["#.to_owned()),
        Just(r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"#.to_owned()),
        Just(r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":"#.to_owned()),
        Just(r#"{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":"#.to_owned()),
        Just(r#"{"type":"system","subtype":"init","tools":"#.to_owned()),
        Just(r#"{"type":"result","is_error":false,"usage":"#.to_owned()),
        Just(r#"{"type":"tool_use","id":"A","name":"Agent","input":{"subagent_type":"#.to_owned()),
        Just("null".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("\"x\"".to_owned()),
        Just("}".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        "[ -~]{0,12}",
    ];
    prop::collection::vec(fragments, 0..8).prop_map(|v| v.concat())
}

fn arb_value_line() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        "[a-zA-Z_]{0,6}".prop_map(Value::String),
        prop_oneof![
            Just("assistant"),
            Just("user"),
            Just("system"),
            Just("init"),
            Just("result"),
            Just("control_request"),
            Just("can_use_tool"),
            Just("AskUserQuestion"),
            Just("hook_callback"),
            Just("tool_use"),
            Just("tool_result"),
            Just("text"),
            Just("Skill"),
            Just("Agent")
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    let keys = prop_oneof![
        Just("type"),
        Just("subtype"),
        Just("message"),
        Just("content"),
        Just("request_id"),
        Just("request"),
        Just("tool_name"),
        Just("input"),
        Just("questions"),
        Just("options"),
        Just("label"),
        Just("id"),
        Just("name"),
        Just("tool_use_id"),
        Just("parent_tool_use_id"),
        Just("tools"),
        Just("response"),
        Just("behavior"),
        Just("answers"),
        Just("updatedInput"),
        Just("is_error"),
        Just("usage")
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..5).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
    .prop_map(|v| v.to_string())
}

fn drive_lines(events: Vec<String>, control_out: Vec<String>) -> RunRecord {
    let doc = json!({"scenario": {"prompt": "p", "session": "(inline)"}, "events": events, "controlOut": control_out});
    let c = cassette_from(doc, Path::new("fuzz.cassette.json"));
    let run = RunRecord::from_cassette(&c);
    // Evaluation over arbitrary evidence must not panic either.
    let ctx = Context::new(&c, &run, None);
    for item in [
        json!({"result": "success", "transcript_matches": "a|b", "tool_called": "*"}),
        json!({"question_options": {"contains": ["x"]}, "gate_answers_delivered": true}),
        json!({"computer_links_resolve_if_present": true, "no_hook_blocked": true}),
    ] {
        let _ = check(item.as_object().unwrap(), &ctx);
    }
    run
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fuzz_event_parser_arbitrary_text_never_panics(
        events in prop::collection::vec(arb_line(), 0..12),
        control_out in prop::collection::vec(arb_line(), 0..6),
    ) {
        let run = drive_lines(events, control_out);
        let _ = run.format_findings();
    }

    #[test]
    fn fuzz_event_parser_structured_json_never_panics(
        events in prop::collection::vec(arb_value_line(), 0..12),
        control_out in prop::collection::vec(arb_value_line(), 0..6),
    ) {
        let run = drive_lines(events, control_out);
        let _ = run.format_findings();
    }
}

/// A synthetic hostloop cassette (tests/data/assert/) with a sub-agent, a
/// path-gate hook block, a can_use_tool deny, an errored gate delivery,
/// tasks, present_files, compaction, a timeline and a manifest with link and
/// body-less entries: every key family, pass and fail, exact messages.
#[test]
fn every_key_family_on_a_hostloop_fixture() {
    let path = support::data("assert/hostloop-subagent.cassette.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("JSON");
    let c = cassette_from(doc, &path);
    let cases: Vec<(Value, Result<Option<&str>, &str>)> = vec![
        (json!({"transcript_not_contains": "child text"}), Ok(None)),
        (json!({"tool_result_contains": "SUBAGENT DONE"}), Ok(None)),
        (
            json!({"tool_result_not_matches": "permission denied"}),
            Err("a tool result matched forbidden /permission denied/i"),
        ),
        (json!({"skill_triggered": "report-gen"}), Ok(None)),
        (
            json!({"subagent_tool_used": "Write"}),
            Ok(Some("subagent_tool_used: \"Write\" matched Write")),
        ),
        (
            json!({"subagent_tool_absent": "Read"}),
            Err("sub-agent unexpectedly used: \"Read\" matched Read"),
        ),
        (json!({"subagent_dispatched": "writer"}), Ok(None)),
        (
            json!({"subagent_dispatched": "nope"}),
            Err("no sub-agent matching \"nope\" was dispatched (by type or description)"),
        ),
        (
            json!({"subagent_output_contains": {"contains": "SUBAGENT DONE"}}),
            Ok(None),
        ),
        (
            json!({"subagent_output_contains": {"match": "writer", "contains": "zzz"}}),
            Err("no sub-agent matching \"writer\" had output containing \"zzz\""),
        ),
        (
            json!({"subagent_declared_but_unused": "WebFetch"}),
            Err("sub-agent \"writer\" declared \"WebFetch\" but never used it (used: Write, Read)"),
        ),
        (
            json!({"dispatch_count_max": 0}),
            Err(
                "dispatched 1 sub-agents, max 0 (author-chosen budget under Cowork's agent-side fan-out cap — see SPEC §10)",
            ),
        ),
        (
            json!({"subagent_file_write": {"path_suffix": "outputs/report.md"}}),
            Ok(Some("Write /Users/me/proj/outputs/report.md")),
        ),
        (
            json!({"subagent_file_write": {"path": "outputs/report.md"}}),
            Err(
                "subagent_file_write: no SUB-AGENT-origin Write/Edit/MultiEdit attempt with path == \"outputs/report.md\" and a non-error paired result",
            ),
        ),
        (
            json!({"subagent_dispatch_healthy": {}}),
            Err(
                "subagent_dispatch_healthy: dispatch \"writer\" (ag1) unhealthy — no_vm_paths: attempted VM path \"/sessions/s1/mnt/outputs/x.md\"",
            ),
        ),
        (
            json!({"subagent_dispatch_healthy": {"no_vm_paths": false, "path_suffix": "report.md"}}),
            Ok(None),
        ),
        (
            json!({"no_vm_path_file_op": true}),
            Err(
                "no_vm_path_file_op: Read (subagent) attempted VM path \"/sessions/s1/mnt/outputs/x.md\"",
            ),
        ),
        (json!({"vm_path_denied": true}), Ok(None)),
        (
            json!({"path_denied": {"source": "can_use_tool", "path_matches": "secret"}}),
            Ok(Some("can_use_tool: Read /etc/secret")),
        ),
        (
            json!({"path_denied": {"agent_scope": "subagent", "tool": "Rea?"}}),
            Ok(Some("pretooluse: Read /sessions/s1/mnt/outputs/x.md")),
        ),
        (
            json!({"path_denied": {"tool": "Write"}}),
            Err("path_denied: no recorded denial matched all matchers"),
        ),
        (
            json!({"no_path_denied": true}),
            Err("no_path_denied: pretooluse denied Read on \"/sessions/s1/mnt/outputs/x.md\""),
        ),
        (json!({"hook_blocked": "read"}), Ok(None)),
        (
            json!({"no_hook_blocked": true}),
            Err("no_hook_blocked: \"Read\" was blocked (VM path outside the host loop)"),
        ),
        (json!({"question_asked": "format"}), Ok(None)),
        (
            json!({"gate_answers_delivered": true}),
            Err(
                "gate answer(s) not confirmed delivered to the model: \"Which format?\" (Answer delivery failed)",
            ),
        ),
        (json!({"gate_answers_delivered": false}), Ok(None)),
        (
            json!({"gate_answer_count_min": 1}),
            Err("only 0 gate answer(s) confirmed delivered, need ≥ 1"),
        ),
        (
            json!({"tool_no_error": "Bash"}),
            Err("tool(s) matching \"Bash\" had errors: Bash (1)\n  Bash: ls: error"),
        ),
        (json!({"tool_no_error_if_called": "Nope"}), Ok(None)),
        (
            json!({"max_tool_errors": 2}),
            Err("3 tool errors exceeds max 2"),
        ),
        (
            json!({"max_redundant_tool_calls": 0}),
            Err("1 wasted redundant call(s) exceeds max 0"),
        ),
        (
            json!({"tool_calls_max": 8}),
            Err("9 tool calls exceeds max 8"),
        ),
        (json!({"max_turns": 6}), Err("7 turns exceeds max 6")),
        (
            json!({"max_tokens": 100}),
            Err("123 tokens exceeds max 100"),
        ),
        (
            json!({"max_cost_usd": 1}),
            Ok(Some("max_cost_usd: $0.42 ≤ $1")),
        ),
        (json!({"compaction_occurred": true}), Ok(None)),
        (json!({"all_tasks_completed": true}), Ok(None)),
        (
            json!({"task_count_min": 2}),
            Err("task_count_min: 1 task(s) created, need ≥ 2"),
        ),
        (
            json!({"task_status": {"match": "draft", "status": "pending"}}),
            Err(
                "task \"Draft report\" matched \"draft\" but has status \"completed\", expected \"pending\"",
            ),
        ),
        (
            json!({"skill_tool_used": {"skill": "report-gen", "tool": "write"}}),
            Ok(None),
        ),
        (
            json!({"skill_tool_used": {"skill": "report-gen", "tool": "Bash"}}),
            Err("no tool matching \"Bash\" ran inside a window matching \"report-gen\""),
        ),
        (
            json!({"skill_tool_used": {"skill": "zzz", "tool": "x"}}),
            Err("no skill-activation window matched \"zzz\""),
        ),
        (json!({"skill_available": "pdf"}), Ok(None)),
        (json!({"connector_available": "cowork"}), Ok(None)),
        (json!({"present_files_called": true}), Ok(None)),
        (
            json!({"no_scratchpad_leak": true}),
            Err(
                "no_scratchpad_leak: promotion/leak semantics apply only at the container tier (this run: hostloop) — hostloop's present_files never promotes (production's host-loop branch passes a validated path through without copying, so there is no scratch→outputs copy to leak) — cannot verify; use fidelity: container for present_files-based delivery",
            ),
        ),
        (
            json!({"computer_links_resolve_if_present": true}),
            Err(
                "dangling computer:// link(s) (tier: hostloop): computer:///Users/me/proj/outputs/report.md — checked replay manifest (normalized from host path): proj/outputs/report.md; computer:///sessions/s1/mnt/outputs/missing.md — checked work tree: /tmp/cwh-replay-XXXXXX/outputs/missing.md",
            ),
        ),
        (
            json!({"no_unexpected_files": []}),
            Err(
                "unexpected file(s) created outside the allowlist: outputs/big.bin, outputs/link.md, outputs/report.md (allow: (none))",
            ),
        ),
        (json!({"no_unexpected_files": ["outputs/*"]}), Ok(None)),
        (json!({"input_unmodified": "proj/**"}), Ok(None)),
        (
            json!({"file_exists": "outputs/link.md"}),
            Err(
                "evidence unavailable: \"outputs/link.md\" was a symlink/hardlink at record time — replay can't confirm it resolves to real in-root content; re-record or assert on the deliverable",
            ),
        ),
        (
            json!({"file_exists": "outputs"}),
            Ok(Some(
                "file_exists: \"outputs\" present under /tmp/cwh-replay-XXXXXX",
            )),
        ),
        (
            json!({"user_visible_artifact": "outputs/big.bin"}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "a.n", "gt": 2}}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "a.n", "equals": 4}}),
            Err("artifact_json: \"a.n\" = 3, expected 4"),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "a.b", "is_null": true}}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "a.zz", "absent": true}}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "items.0.id", "in": ["y", "x"]}}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "equals": {"items": [{"id": "x"}], "a": {"n": 3.0, "b": null}}}}),
            Ok(None),
        ),
        (
            json!({"artifact_json": {"artifact": "proj/in.json", "path": "x.y"}}),
            Err(
                "artifact_json: path \"x.y\" unresolvable in proj/in.json — intermediate \"x\" is missing or not an object",
            ),
        ),
        (
            json!({"artifact_json": {"artifact": "outputs/big.bin"}}),
            Err(
                "evidence unavailable: artifact_json target \"outputs/big.bin\" was captured body-less (larger than the artifact-body cap — raise --max-artifact-bytes to capture it) — content is not in the cassette, so it cannot be evaluated on replay",
            ),
        ),
        (
            json!({"artifact_json": {"artifact": "outputs/nope.json"}}),
            Err("artifact_json: file not found: outputs/nope.json (under /tmp/cwh-replay-XXXXXX)"),
        ),
        (
            json!({"artifact_text": {"artifact": "outputs/link.md", "contains": ["x"]}}),
            Err(
                "evidence unavailable: \"outputs/link.md\" was a symlink/hardlink at record time — its content is not in the cassette; re-record or assert on the deliverable",
            ),
        ),
        (
            json!({"artifact_text": {"artifact": "outputs/report.md", "not_matches": "^# r$", "matches": "(?<=# )R"}}),
            Err("artifact_text: outputs/report.md unexpectedly matched /^# r$/i"),
        ),
        (
            json!({"allow_delete_in": ["outputs"], "allow_stall": true}),
            Ok(None),
        ),
    ];
    let items: Vec<Value> = cases.iter().map(|(i, _)| i.clone()).collect();
    let got = evaluate(&c, &items);
    let mut failures = Vec::new();
    for ((item, want), o) in cases.iter().zip(&got) {
        let ok = match want {
            Ok(ev) => o.pass && o.evidence.as_deref() == *ev,
            Err(msg) => !o.pass && o.message == *msg,
        };
        if !ok {
            failures.push(format!(
                "{item}\n   want: {want:?}\n    got: pass={} message={:?} evidence={:?}",
                o.pass, o.message, o.evidence
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let run = RunRecord::from_cassette(&c);
    assert!(
        run.format_findings().is_empty(),
        "{:?}",
        run.format_findings()
    );
    assert_eq!(run.transcript.lines().next(), Some("Planning the report."));
    assert!(!run.transcript.contains("child text"));
    assert_eq!(run.infra_errors[0].source.as_deref(), Some("hostloop-exec"));
    assert!(!run.stalled_on_question);
    assert!(run.presented_files[0].promoted);
    assert_eq!(
        run.replay_warnings(),
        vec!["::warning:: [gate] DELIVERY FAILED for \"Which format?\" → tool error: Answer delivery failed".to_owned()]
    );
    let (_, warnings) = reel::assert::check_with_warnings(
        json!({"tool_called": "Bash|Read"}).as_object().unwrap(),
        &Context::new(&c, &run, None),
    );
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].starts_with("::warning:: tool_called: \"Bash|Read\" looks like a regex"));
    let pseudo = reel::assert::cassette_format_outcomes(&run);
    assert!(pseudo.is_empty());
}

/// The run-result fields replay derives from the re-drive equal the
/// original's, key by key, on the compat runs.
#[test]
fn run_result_fields_match_the_original() {
    for (cassette, out) in [
        ("example-pdf-skill", "replay-example-pdf-skill-json.stdout"),
        (
            "example-multiselect-gate",
            "replay-example-multiselect-gate-json.stdout",
        ),
        (
            "hostloop-computer-links",
            "replay-hostloop-computer-links-json.stdout",
        ),
    ] {
        let c = load(&format!("examples/replays/{cassette}.cassette.json"));
        let result = reel::replay::replay_cassette(&c, &reel::replay::ReplayOptions::default())
            .expect("replays");
        let fields = result.to_json().as_object().cloned().unwrap();
        let env: Value = serde_json::from_slice(
            &std::fs::read(support::compat(&format!("expected/{out}"))).unwrap(),
        )
        .unwrap();
        let want = env["results"][0].as_object().cloned().unwrap();
        for key in [
            "toolCounts",
            "toolErrors",
            "redundantToolCalls",
            "skillsInvoked",
            "skillToolAvailable",
            "tasks",
            "gateDeliveries",
            "cost",
            "usage",
            "models",
            "thinking",
            "thinkingElided",
            "finalMessage",
            "hookEvents",
            "pathDenials",
            "context",
            "fileToolAttempts",
            "presentedFiles",
            "toolResults",
            "subagents",
            "contextEvents",
            "decisions",
            "infraErrors",
        ] {
            let w = want.get(key);
            let g = fields.get(key);
            let same = match (w, g) {
                (Some(w), Some(g)) => reel::assert::json::deep_eq(w, g),
                (None, None) => true,
                _ => false,
            };
            assert!(same, "{cassette}: `{key}`\n got: {g:?}\nwant: {w:?}");
        }
    }
}

#[test]
fn manifest_keys_without_a_manifest_fail_instead_of_passing_vacuously() {
    let c = load("examples/replays/example-multiselect-gate.cassette.json");
    let c = with_doc(&c, |d| {
        d.shift_remove("artifacts");
    });
    for item in [
        json!({"file_exists": "outputs/x"}),
        json!({"no_unexpected_files": []}),
        json!({"input_unmodified": "**"}),
    ] {
        let o = one(&c, item.clone());
        assert!(!o.pass, "{item}");
        assert!(
            o.message.starts_with("evidence unavailable: "),
            "{item}: {}",
            o.message
        );
    }
}

/// Regex keys count UTF-16 code units, as the original's `new RegExp(p, "i")`
/// does: an emoji in a tool result is two `.`s (checked against node:
/// `/SUBAGENT . DONE/i.test("SUBAGENT 😀 DONE")` is false).
#[test]
fn regex_keys_see_an_emoji_as_two_code_units() {
    let path = support::data("assert/hostloop-subagent.cassette.json");
    let text = std::fs::read_to_string(&path).expect("fixture");
    assert_eq!(text.matches("SUBAGENT DONE").count(), 1, "fixture changed");
    let doc = CassetteDoc::from_file(&path)
        .edit_lines("events", |line| {
            if let Some(Value::String(result)) = line.pointer_mut("/message/content/0/content") {
                *result = result.replace("SUBAGENT DONE", "SUBAGENT 😀 DONE");
            }
        })
        .into_value();
    assert!(
        doc.to_string().contains("SUBAGENT 😀 DONE"),
        "the edit landed"
    );
    let c = cassette_from(doc, &path);
    assert!(one(&c, json!({"tool_result_matches": "subagent .. done"})).pass);
    assert!(one(&c, json!({"tool_result_matches": "subagent [^x]{2} done"})).pass);
    let o = one(&c, json!({"tool_result_matches": "subagent . done"}));
    assert!(!o.pass, "{}", o.message);
    // A backreference forces the backtracker: the same per-unit answer.
    assert!(
        one(
            &c,
            json!({"tool_result_matches": "(s)ubagent .. done(?!\\1)"})
        )
        .pass
    );
    assert!(
        !one(
            &c,
            json!({"tool_result_matches": "(s)ubagent . done(?!\\1)"})
        )
        .pass
    );
}

/// Every difference scripts/parity-assert.py found and reel fixed, replayed
/// through the CLI and compared with cowork-harness 2.0.0's captured output
/// (tests/data/parity/README.md): the echoed assertion (key order, number
/// spelling), pass/fail, message and evidence, the skip tallies, the verdict's
/// failures, the exit code and the warning lines.
#[test]
fn parity_regressions_match_the_original() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        support::data("parity/regressions.cassette.json"),
        dir.path().join("regressions.cassette.json"),
    )
    .expect("copy the parity cassette");
    let out = support::reel()
        .current_dir(dir.path())
        .args([
            "replay",
            "regressions.cassette.json",
            "--output-format",
            "json",
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("run reel replay");
    let read = |rel: &str| {
        std::fs::read_to_string(support::data(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    };
    let original: Value = serde_json::from_str(&read("parity/regressions.original.json"))
        .expect("captured original output is JSON");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let work_root = regex_lite_work_root(&stdout);
    let ours: Value = serde_json::from_str(&stdout.replace(&work_root, "$WORK_ROOT"))
        .unwrap_or_else(|e| panic!("reel stdout is JSON ({e}): {stdout}"));
    assert_eq!(out.status.code(), Some(1), "exit code as the original's");
    let (o, r) = (&original["results"][0], &ours["results"][0]);
    let o_items = o["assertions"].as_array().expect("original assertions");
    let r_items = r["assertions"].as_array().expect("reel assertions");
    assert_eq!(r_items.len(), o_items.len());
    for (want, got) in o_items.iter().zip(r_items) {
        // Serialised so key order and number spelling count.
        assert_eq!(
            serde_json::to_string(got).unwrap(),
            serde_json::to_string(want).unwrap()
        );
    }
    assert_eq!(r["skippedAssertions"], o["skippedAssertions"]);
    assert_eq!(r["verdict"]["failures"], o["verdict"]["failures"]);
    let warnings = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("::"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        warnings(&String::from_utf8_lossy(&out.stderr)),
        warnings(&read("parity/regressions.original.stderr"))
    );
}

/// reel's replay work root as printed in `stdout` (`/tmp/reel-replay-XXXXXX`
/// or wherever TMPDIR points), found from the `file_exists` evidence.
fn regex_lite_work_root(stdout: &str) -> String {
    let marker = "present under ";
    let start = stdout.find(marker).map(|i| i + marker.len());
    start
        .and_then(|s| {
            let end = stdout[s..].find(';').map(|e| s + e)?;
            Some(stdout[s..end].to_owned())
        })
        .unwrap_or_else(|| panic!("no work root in reel's output: {stdout}"))
}
