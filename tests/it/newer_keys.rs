//! The assertion keys and forms cowork-harness added after 2.0.0 (cassette
//! formats v13–v16 and the keys without a format bump): pass, fail and
//! evidence-unavailable per evaluated key, on cassettes built with the kit's
//! `CassetteDoc`. Each case cites the original's test or catalog entry it
//! follows.

use std::path::Path;

use reel::assert::{AssertionOutcome, Context, catalog, check};
use reel::cassette::Cassette;
use reel::evidence::RunRecord;
use serde_json::{Map, Value, json};

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
    // "refuses … before the spawn": a double-quoted YAML "\b" arrives as a
    // backspace, in `matches` or `when_question`.
    for bad in [
        json!({"matches": "^No\u{8}", "exactly": 0}),
        json!({"matches": "x", "when_question": "a\u{8}b", "exactly": 0}),
    ] {
        let e = catalog::validate(&json!({"question_option_count": bad})).unwrap_err();
        assert!(e.contains("control character"), "{e}");
    }
    // "requires a gate, so it contradicts questions_count_max: 0 — exactly: 0
    // included": `record`'s loader refuses the pair.
    let yaml = "fidelity: protocol\nprompt: hi\nassert:\n  - questions_count_max: 0\n  - question_option_count: \
        {matches: x, exactly: 0}\n";
    let err = reel::scenario::Scenario::from_str(Path::new("s.yaml"), yaml)
        .unwrap_err()
        .to_string();
    assert!(err.contains("question_option_count"), "{err}");
    // "accepts exactly: 0 and min-only / max-only".
    for good in [
        json!({"matches": "x", "exactly": 0}),
        json!({"matches": "x", "min": 1}),
        json!({"matches": "x", "max": 0}),
    ] {
        assert!(catalog::validate(&json!({"question_option_count": good})).is_ok());
    }
}

/// The multiselect recording with its one gate swapped for `gates`, each a
/// question and its option labels (answered with its first label, if any),
/// in every line that carries the gate.
fn gated(gates: &[(&str, &[&str])]) -> Cassette {
    with_questions(
        gates
            .iter()
            .map(|(q, labels)| {
                let options: Vec<Value> = labels.iter().map(|l| json!({"label": l})).collect();
                json!({"question": q, "header": "Pick", "options": options, "multiSelect": false})
            })
            .collect(),
    )
}

/// The multiselect recording with its one gate swapped for `questions`
/// (AskUserQuestion's `questions` items), each answered with its first
/// label.
fn with_questions(questions: Vec<Value>) -> Cassette {
    let answers: Map<String, Value> = questions
        .iter()
        .map(|q| {
            let first = q["options"][0]["label"].as_str().unwrap_or("x");
            (q["question"].as_str().unwrap().to_owned(), json!(first))
        })
        .collect();
    fn swap(v: &mut Value, questions: &[Value], answers: &Map<String, Value>) {
        match v {
            Value::Object(m) => {
                if m.get("questions").is_some_and(Value::is_array) {
                    m.insert("questions".into(), Value::Array(questions.to_vec()));
                    if m.contains_key("answers") {
                        m.insert("answers".into(), Value::Object(answers.clone()));
                    }
                }
                m.values_mut().for_each(|x| swap(x, questions, answers));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| swap(x, questions, answers)),
            _ => {}
        }
    }
    cassette(
        multiselect()
            .edit_lines("events", |l| swap(l, &questions, &answers))
            .edit_lines("controlOut", |l| swap(l, &questions, &answers)),
    )
}

const NO_CHANGE: &str = "No changes — ";

/// test/question-option-count.test.ts's three gates, each offering one
/// no-change option.
fn three_gates() -> Vec<(&'static str, Vec<String>)> {
    vec![
        (
            "Keep the TAM figure?",
            vec![
                format!("{NO_CHANGE}keep it"),
                "Replace with bottom-up".into(),
            ],
        ),
        (
            "Keep the competitor list?",
            vec!["Add Acme".into(), format!("{NO_CHANGE}keep the list")],
        ),
        (
            "Ship the report?",
            vec![format!("{NO_CHANGE}ship as is"), "Re-score moat".into()],
        ),
    ]
}

fn gated_owned(gates: &[(&str, Vec<String>)]) -> Cassette {
    let labels: Vec<Vec<&str>> = gates
        .iter()
        .map(|(_, l)| l.iter().map(String::as_str).collect())
        .collect();
    let refs: Vec<(&str, &[&str])> = gates
        .iter()
        .zip(&labels)
        .map(|((q, _), l)| (*q, l.as_slice()))
        .collect();
    gated(&refs)
}

fn qoc(c: &Cassette, param: Value) -> AssertionOutcome {
    one(c, json!({ "question_option_count": param }))
}

/// test/question-option-count.test.ts "exactly: 1 passes when every
/// sub-question has one match" and "fails naming ONLY the offending
/// sub-question, with its count and labels".
#[test]
fn question_option_count_over_several_gates_names_only_the_offender() {
    let prefix = format!("^{NO_CHANGE}");
    let o = qoc(
        &gated_owned(&three_gates()),
        json!({"matches": prefix, "exactly": 1}),
    );
    assert!(o.pass, "{}", o.message);
    assert!(
        o.evidence
            .as_deref()
            .unwrap()
            .contains("all 3 sub-question(s)"),
        "{:?}",
        o.evidence
    );
    let mut two = three_gates();
    two[2].1 = vec![format!("{NO_CHANGE}ship"), format!("{NO_CHANGE}re-score")];
    let o = qoc(&gated_owned(&two), json!({"matches": prefix, "exactly": 1}));
    assert!(!o.pass);
    assert!(
        o.message
            .contains("1 of 3 did not: \"Ship the report?\" has 2 of ["),
        "{}",
        o.message
    );
    assert!(!o.message.contains("TAM"), "{}", o.message);
}

/// test/question-option-count.test.ts "exactly: 0 passes when nothing
/// matches and fails on one match", "min / max, alone and together", "a
/// sub-question with no options counts 0; a duplicated label counts twice".
#[test]
fn question_option_count_bounds() {
    let verb = format!("^{NO_CHANGE}.*\\b(add|remove|re-score)\\b");
    assert!(
        qoc(
            &gated_owned(&three_gates()),
            json!({"matches": verb, "exactly": 0})
        )
        .pass
    );
    let bad = gated(&[("Keep the list?", &["No changes — add Acme", "Remove Beta"])]);
    assert!(!qoc(&bad, json!({"matches": verb, "exactly": 0})).pass);

    let pick = gated(&[("Pick", &["keep a", "keep b", "drop c"])]);
    for (bound, pass) in [
        (json!({"min": 2}), true),
        (json!({"min": 3}), false),
        (json!({"max": 1}), false),
        (json!({"min": 1, "max": 2}), true),
    ] {
        let mut p = json!({"matches": "^keep"});
        p.as_object_mut()
            .unwrap()
            .extend(bound.as_object().unwrap().clone());
        assert_eq!(qoc(&pick, p.clone()).pass, pass, "{p}");
    }
    let free_text = gated(&[("Free text?", &[])]);
    assert!(!qoc(&free_text, json!({"matches": "x", "exactly": 1})).pass);
    let twice = gated(&[("Pick", &["keep", "keep"])]);
    assert!(qoc(&twice, json!({"matches": "^keep", "exactly": 2})).pass);
}

/// test/question-option-count.test.ts "when_question narrows; an
/// unselected sub-question cannot fail the rule", "a verb rule stays
/// case-insensitive by default", "a bad regex fails naming it".
#[test]
fn question_option_count_selection_case_and_bad_regexes() {
    let prefix = format!("^{NO_CHANGE}");
    let mut g = three_gates();
    g.push(("Which file?", vec!["a.xlsx".into(), "b.xlsx".into()]));
    let c = gated_owned(&g);
    assert!(!qoc(&c, json!({"matches": prefix, "exactly": 1})).pass);
    assert!(
        qoc(
            &c,
            json!({"when_question": "^(Keep|Ship)", "matches": prefix, "exactly": 1})
        )
        .pass
    );
    let verb = format!("^{NO_CHANGE}.*\\b(add|remove)\\b");
    let c = gated(&[("Keep the list?", &["No changes — Add Acme", "Remove Beta"])]);
    assert!(!qoc(&c, json!({"matches": verb, "exactly": 0})).pass);
    assert!(
        qoc(
            &c,
            json!({"matches": verb, "exactly": 0, "case_sensitive": true})
        )
        .pass
    );

    // The catalog refuses a bad regex at load; the evaluator names it too.
    let c = gated_owned(&three_gates());
    for param in [
        json!({"matches": "(", "exactly": 1}),
        json!({"matches": "(", "exactly": 1, "case_sensitive": true}),
        json!({"matches": "x", "when_question": "(", "exactly": 1}),
    ] {
        let run = RunRecord::from_cassette(&c);
        let ctx = Context::new(&c, &run, Some(Path::new("/tmp/root")));
        let item = json!({ "question_option_count": param });
        let o = check(item.as_object().unwrap(), &ctx);
        assert!(
            !o.pass && o.message.contains("bad regex \"(\""),
            "{}",
            o.message
        );
    }
}

const TOKEN: &str = "[REDACTED:path:0123456789ab]";

fn unavailable_qoc(c: &Cassette, param: Value) -> String {
    let o = qoc(c, param.clone());
    assert!(!o.pass, "{param} passed");
    assert!(
        o.message.starts_with("evidence unavailable: "),
        "{param}: {}",
        o.message
    );
    o.message
}

/// test/question-option-count.test.ts "redaction-rewritten labels":
/// "exactly: 0 is evidence-unavailable when a rewritten label might have
/// matched", "a count the unknown labels cannot change still decides", "a
/// regex never hits a token's own text", and the three regexes "over a
/// rewritten label is evidence-unavailable, never a verdict".
#[test]
fn question_option_count_on_rewritten_labels() {
    let write_to = format!("Write to {TOKEN}");
    let c = gated(&[("Pick", &[write_to.as_str(), "Skip"])]);
    let m = unavailable_qoc(&c, json!({"matches": "/Users/", "exactly": 0}));
    assert!(m.contains("redaction") && !m.contains(TOKEN), "{m}");

    let g = vec![(
        "Pick",
        vec![
            format!("{NO_CHANGE}keep"),
            format!("{NO_CHANGE}also"),
            format!("Write to {TOKEN}"),
        ],
    )];
    let c = gated_owned(&g);
    let prefix = format!("^{NO_CHANGE}");
    let o = qoc(&c, json!({"matches": prefix, "exactly": 1}));
    assert!(!o.pass && o.message.contains("did not"), "{}", o.message);
    assert!(qoc(&c, json!({"matches": prefix, "min": 2})).pass);

    let c = gated(&[("Pick", &[TOKEN])]);
    unavailable_qoc(&c, json!({"matches": "REDACTED", "min": 1}));

    let keep = format!("Keep {TOKEN}");
    let save = format!("Save to {TOKEN}");
    for (matches, bound, labels) in [
        (
            "^Keep [^/]",
            json!({"exactly": 1}),
            vec![keep.as_str(), "Other"],
        ),
        (
            "^Write to .$",
            json!({"exactly": 0}),
            vec![write_to.as_str()],
        ),
        (
            "^(?!.*/Users)",
            json!({"exactly": 1}),
            vec![save.as_str(), "Skip"],
        ),
    ] {
        let mut p = json!({ "matches": matches });
        p.as_object_mut()
            .unwrap()
            .extend(bound.as_object().unwrap().clone());
        let m = unavailable_qoc(&gated(&[("Pick", &labels)]), p);
        assert!(m.contains("redaction"), "{m}");
    }
}

/// test/question-option-count.test.ts "a when_question that cannot see a
/// rewritten question blocks a pass, never a fail the others earned" and
/// "a frozen regex the policy rewrote is evidence-unavailable".
#[test]
fn question_option_count_on_rewritten_questions_and_regexes() {
    let hidden = format!("Save {TOKEN}?");
    let sel = json!({"when_question": "/Users/", "matches": "^keep", "exactly": 1});
    let c = gated(&[
        (hidden.as_str(), &["keep a", "keep b"]),
        ("Save /Users/b?", &["keep a"]),
    ]);
    let m = unavailable_qoc(&c, sel.clone());
    assert!(
        m.contains("question text") && m.contains("rewritten"),
        "{m}"
    );
    let c = gated(&[
        (hidden.as_str(), &["keep a"]),
        ("Save /Users/b?", &["keep a", "keep b"]),
    ]);
    let o = qoc(&c, sel.clone());
    assert!(!o.pass && o.message.contains("did not"), "{}", o.message);
    let c = gated(&[(hidden.as_str(), &["keep"])]);
    let m = unavailable_qoc(&c, sel);
    assert!(m.contains("no sub-question"), "{m}");

    let c = gated_owned(&three_gates());
    let m = unavailable_qoc(&c, json!({"matches": format!("^{TOKEN}"), "exactly": 0}));
    assert!(m.contains("rewritten"), "{m}");
}

/// cowork-harness `gateVisibleFields`: a gate's question, labels and
/// descriptions are SEPARATE fields, each tested on its own (issue #39
/// item 8: reel once tested one joined text, so `^…$` on one description
/// failed and `[\s\S]` stitched a description to the next label).
#[test]
fn question_context_searches_everything_the_gate_showed() {
    let c = cassette(multiselect());
    passes(&c, json!({"question_context": {"matches": "invoicing"}}));
    passes(
        &c,
        json!({"question_context": {"matches": "^Which features"}}),
    );
    passes(
        &c,
        json!({"question_context": {"when_question": "features", "matches": "should be enabled"}}),
    );
    // Anchors apply per field: one label, one whole description.
    passes(&c, json!({"question_context": {"matches": "^billing$"}}));
    passes(
        &c,
        json!({"question_context": {"matches": "^Payments, subscriptions, and invoicing\\.$"}}),
    );
    // Nothing spans two fields: not a space, not a newline, not [\s\S].
    let m = fails(&c, json!({"question_context": {"matches": "Auth User"}}));
    assert!(
        m.starts_with("question_context: no question showed text matching /Auth User/i"),
        "{m}"
    );
    fails(
        &c,
        json!({"question_context": {"matches": "\\bauth\\nuser"}}),
    );
    fails(
        &c,
        json!({"question_context": {"matches": "invoicing[\\s\\S]*Audit logging"}}),
    );
    let no_gate = cassette(CassetteDoc::minimal());
    let m = fails(&no_gate, json!({"question_context": {"matches": "x"}}));
    assert_eq!(
        m,
        "question_context: no question was asked (0 gate(s) recorded)"
    );
}

/// test/question-context.test.ts's recorded gate: the sentence the user was
/// shown lives only in an option description.
fn stage_gate() -> Value {
    json!({"question": "Does this stage detection look right?", "header": "Stage",
        "multiSelect": false, "options": [
        {"label": "Looks right", "description": "Detected stage: Pre-seed (high confidence). Key \
            evidence: no revenue to date, 3 non-paying design partners. (The deck states: Seed. \
            This review reads it as Pre-seed.)"},
        {"label": "Different stage", "description": "I want to choose the stage myself"},
        {"label": "Not sure — proceed anyway", "description": "Proceed with pre-seed at lower confidence"}]})
}

const SENTENCE: &str = "The deck states: Seed\\. This review reads it as Pre-seed\\.";

/// test/question-context.test.ts: "matches text that lives ONLY in an
/// option description, where question_asked cannot see it", "matches a
/// question label and an option label too", "does NOT refuse an unselected
/// multi-gate run as ambiguous", "when_question narrows, and a selector
/// matching no gate FAILS", "FAILS when the text was never shown, and names
/// the gates it searched", "reports a bad regex", "contradicts
/// questions_count_max: 0, refused at load".
#[test]
fn question_context_follows_the_original() {
    let real = with_questions(vec![stage_gate()]);
    passes(&real, json!({"question_context": {"matches": SENTENCE}}));
    fails(&real, json!({"question_asked": SENTENCE}));
    passes(
        &real,
        json!({"question_context": {"matches": "stage detection look right"}}),
    );
    passes(
        &real,
        json!({"question_context": {"matches": "Different stage"}}),
    );

    let company = json!({"question": "Company name?", "header": "Company", "multiSelect": false,
        "options": [{"label": "Northwind",
            "description": "The deck states: Seed. This review reads it as Pre-seed."}]});
    let many = with_questions(vec![company, stage_gate()]);
    passes(&many, json!({"question_context": {"matches": SENTENCE}}));
    passes(
        &many,
        json!({"question_context": {"when_question": "stage detection", "matches": SENTENCE}}),
    );
    let m = fails(
        &many,
        json!({"question_context": {"when_question": "no such gate", "matches": SENTENCE}}),
    );
    assert!(m.contains("no question matching"), "{m}");

    let m = fails(
        &real,
        json!({"question_context": {"matches": "never shown to anyone"}}),
    );
    assert!(m.contains("Does this stage detection look right?"), "{m}");
    let run = RunRecord::from_cassette(&real);
    let ctx = Context::new(&real, &run, Some(Path::new("/tmp/root")));
    let item = json!({"question_context": {"matches": "([unclosed"}});
    let o = check(item.as_object().unwrap(), &ctx);
    assert!(!o.pass && o.message.contains("bad regex"), "{}", o.message);

    let yaml = "fidelity: protocol\nprompt: p\nassert:\n  - questions_count_max: 0\n  - \
        question_context: {matches: anything}\n";
    let err = reel::scenario::Scenario::from_str(Path::new("s.yaml"), yaml)
        .unwrap_err()
        .to_string();
    assert!(err.contains("question_context"), "{err}");
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
    // src/tool-call-assert.ts: input, result, scope and count predicates.
    passes(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "input": {"questions": "features"}}}),
    );
    let m = fails(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "input": {"questions": "zzz"}}}),
    );
    assert!(
        m.starts_with(
            "tool not called: no AskUserQuestion call in scope main satisfied every predicate. \
             Considered in scope main: AskUserQuestion[main] questions="
        ),
        "{m}"
    );
    passes(
        &c,
        json!({"tool_not_called": {"tool": "AskUserQuestion", "input_any": "zzz"}}),
    );
    let m = fails(
        &c,
        json!({"tool_not_called": {"tool": "AskUserQuestion", "input_any": "features"}}),
    );
    assert!(
        m.starts_with("tool unexpectedly called: 1 AskUserQuestion call(s)"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "count": {"min": 2}}}),
    );
    assert!(
        m.starts_with("tool called too rarely: 1 AskUserQuestion"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "scope": "subagent"}}),
    );
    assert!(
        m.contains("1 matching call in scope main — set `scope: any`"),
        "{m}"
    );
    // An unpaired call never settles a `result` predicate: evidence unavailable, both ways.
    let unpaired = cassette(multiselect().edit_lines("events", |l| {
        if l["type"] == "user" {
            *l = json!({"type": "system", "subtype": "status"});
        }
    }));
    for key in ["tool_called", "tool_not_called"] {
        let m = fails(
            &unpaired,
            json!({ key: {"tool": "AskUserQuestion", "result": {"is_error": false}} }),
        );
        assert!(m.starts_with("evidence unavailable: "), "{key}: {m}");
    }
    // tool_not_called has no `count`.
    assert!(
        catalog::validate(&json!({"tool_not_called": {"tool": "Bash", "count": {"max": 1}}}))
            .is_err()
    );
    assert!(
        catalog::validate(&json!({"tool_called": {"tool": "Bash", "count": {"min": 2}}})).is_ok()
    );
}

/// src/tool-call-assert.ts (f221359), `notChecked`: a negative pass names
/// the name-matching calls it did not look at, by origin.
#[test]
fn a_negative_object_pass_names_what_it_did_not_check() {
    let c = cassette(multiselect());
    let o = passes(
        &c,
        json!({"tool_not_called": {"tool": "AskUserQuestion", "scope": "subagent"}}),
    );
    assert_eq!(
        o.evidence.as_deref(),
        Some(
            "tool_not_called: no AskUserQuestion call satisfied every predicate — 0 in scope \
             subagent checked; 1 main-agent call not checked (use `scope: any` to include it)"
        )
    );
    let o = passes(
        &c,
        json!({"tool_not_called": {"tool": "AskUserQuestion", "input_any": "zzz"}}),
    );
    assert_eq!(
        o.evidence.as_deref(),
        Some(
            "tool_not_called: no AskUserQuestion call satisfied every predicate — 1 in scope main checked"
        )
    );
}

/// src/tool-call-assert.ts (f221359), `missIsUnknown`: over a field a
/// redaction policy rewrote, a positive regex miss stays "not called"
/// unless the regex names a literal of a kind redaction rewrites (a home
/// path, an email); then the red says the call could not be settled.
#[test]
fn a_positive_miss_over_a_rewritten_field_is_unknown_only_for_redactable_literals() {
    let c = cassette(multiselect().map_strings(&|s| {
        s.replace(
            "Which features should be enabled?",
            "Which features should [REDACTED:path:0123456789ab] enable?",
        )
    }));
    for regex in ["/Users/acme", "\\/home\\/bob", "ops@acme\\.io"] {
        let m = fails(
            &c,
            json!({"tool_called": {"tool": "AskUserQuestion", "input": {"questions": regex}}}),
        );
        assert!(
            m.starts_with(
                "evidence unavailable: 0 AskUserQuestion call(s) satisfied every predicate \
                 (need 1+), and 1 more could not be settled — AskUserQuestion[main] questions="
            ),
            "{regex}: {m}"
        );
    }
    let m = fails(
        &c,
        json!({"tool_called": {"tool": "AskUserQuestion", "input": {"questions": "zzz"}}}),
    );
    assert!(m.starts_with("tool not called: "), "{m}");
    // The negative direction: any token makes a miss unknown.
    let m = fails(
        &c,
        json!({"tool_not_called": {"tool": "AskUserQuestion", "input": {"questions": "zzz"}}}),
    );
    assert!(
        m.starts_with("evidence unavailable: 1 AskUserQuestion call(s)"),
        "{m}"
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

/// A recording whose main agent made `calls` (tool name, input), with
/// their results.
fn tool_calls(calls: &[(&str, Value)]) -> CassetteDoc {
    let mut events: Vec<String> = Vec::new();
    for (i, (name, input)) in calls.iter().enumerate() {
        let id = format!("t{i}");
        events.push(
            json!({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": name, "input": input}]}})
            .to_string(),
        );
        events.push(
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": "ok"}]}})
            .to_string(),
        );
    }
    events.push(json!({"type": "result", "subtype": "success", "is_error": false}).to_string());
    CassetteDoc::minimal().set("events", json!(events))
}

const PRICING: &str = "/sessions/s/mnt/.local-plugins/p/skills/s/references/pricing.md";

/// A cassette whose main agent `Read` a mounted skill's reference file.
fn reference_reader() -> Cassette {
    cassette(tool_calls(&[("Read", json!({ "file_path": PRICING }))]))
}

/// test/assert-reference-access.test.ts: unanchored, case-insensitive,
/// naming the channel; a miss says the detector under-approximates; an
/// access names how it was reached.
#[test]
fn reference_keys_read_the_observed_accesses() {
    let c = reference_reader();
    let o = passes(&c, json!({"reference_read": "PRICING\\.md$"}));
    assert_eq!(
        o.evidence.as_deref(),
        Some("reference_read: references/pricing.md (read) matched /PRICING\\.md$/i")
    );
    passes(&c, json!({"no_observed_reference_access": "legacy"}));
    let m = fails(&c, json!({"reference_read": "legacy"}));
    assert!(
        m.starts_with(
            "reference_read: no observed reference access matched /legacy/i (observed: \
             references/pricing.md (read)) — the detector under-approximates"
        ),
        "{m}"
    );
    let m = fails(&c, json!({"no_observed_reference_access": "pricing"}));
    assert_eq!(
        m,
        "no_observed_reference_access: references/pricing.md (read) was accessed (matched /pricing/i)"
    );
    let m = fails(&c, json!({"reference_read": "(["}));
    assert!(m.contains("bad regex"), "{m}");
}

/// test/assert-reference-access.test.ts "passes on an access reached
/// through a NON-Read channel, and names the channel", "fails when the path
/// WAS accessed, naming how"; the tests of `referenceAccessesOf` (the channels:
/// a Grep's `path`, a shell command that reads the file, never one that
/// only names it).
#[test]
fn reference_keys_see_grep_and_shell_reads() {
    let env_md = "/sessions/s1/mnt/.local-plugins/acme/references/env.md";
    let c = cassette(tool_calls(&[
        (
            "Bash",
            json!({"command": format!("head -50 \"{env_md}\" | grep -i tier")}),
        ),
        ("Grep", json!({"pattern": "tier", "path": env_md})),
        ("Bash", json!({"command": format!("ls -la {PRICING}")})),
    ]));
    let o = passes(&c, json!({"reference_read": "env\\.md"}));
    assert_eq!(
        o.evidence.as_deref(),
        Some("reference_read: references/env.md (bash, grep) matched /env\\.md/i")
    );
    let m = fails(&c, json!({"no_observed_reference_access": "env\\.md"}));
    assert!(m.contains("references/env.md (bash, grep)"), "{m}");
    // `ls` only names the file: no access.
    passes(&c, json!({"no_observed_reference_access": "pricing"}));
    fails(&c, json!({"reference_read": "pricing"}));
}

/// test/assert-reference-access.test.ts "passes on an EMPTY list — the
/// drive ran and observed nothing (a real negative)" and "FAILS
/// evidence-unavailable when the field is absent": a run with no tool call
/// observed nothing; only a cassette that could not be driven (truncated)
/// is unobservable, both ways.
#[test]
fn reference_keys_on_an_empty_and_an_unobservable_run() {
    let silent = cassette(CassetteDoc::minimal());
    passes(&silent, json!({"no_observed_reference_access": "x"}));
    let m = fails(&silent, json!({"reference_read": "x"}));
    assert!(m.contains("(observed: none)"), "{m}");
    // The multiselect recording with its one answer removed: a truncated
    // cassette (no decider answered the question).
    let truncated = cassette(multiselect().edit_lines("controlOut", |l| {
        if l["type"] == "control_response" {
            *l = json!({"type": "noop"});
        }
    }));
    for key in ["reference_read", "no_observed_reference_access"] {
        let m = fails(&truncated, json!({key: "x"}));
        assert!(m.starts_with("evidence unavailable:"), "{key}: {m}");
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

/// The multiselect cassette with one more permission gate: `tool` asked
/// through `can_use_tool` (before the result line), answered `behavior`.
fn with_permission(doc: CassetteDoc, tool: &str, behavior: &str) -> CassetteDoc {
    let id = format!("perm-{tool}");
    let request = json!({"type": "control_request", "request_id": id, "request": {
        "subtype": "can_use_tool", "tool_name": tool, "input": {"command": "ls"},
        "tool_use_id": format!("toolu_{tool}")}});
    let mut reply = json!({"behavior": behavior});
    if behavior == "allow" {
        reply["updatedInput"] = json!({"command": "ls"});
    } else {
        reply["message"] = json!("denied by scenario policy");
    }
    let response = json!({"type": "control_response", "response": {"subtype": "success",
        "request_id": id, "response": reply}});
    doc.edit(|m| {
        let events = m["events"].as_array_mut().unwrap();
        let at = events.len() - 1;
        events.insert(at, Value::from(request.to_string()));
        m["controlOut"]
            .as_array_mut()
            .unwrap()
            .push(Value::from(response.to_string()));
    })
}

const GATE: &str = "Which features should be enabled?";

/// test/gates-all-scripted.test.ts ("a replayed gate the frozen rules cover
/// is scripted"): the recording's own `answers:` cover its one gate.
#[test]
fn gates_all_scripted_passes_when_the_frozen_rules_cover_every_gate() {
    let o = passes(
        &cassette(multiselect()),
        json!({"gates_all_scripted": true}),
    );
    assert_eq!(
        o.evidence.as_deref(),
        Some("all 1 question gate(s) answered by scripted rules")
    );
    // test/gates-all-scripted.test.ts: a run with no question gate passes,
    // and says what to pair it with.
    let none = cassette(CassetteDoc::minimal());
    let o = passes(&none, json!({"gates_all_scripted": true}));
    assert!(
        o.evidence
            .as_deref()
            .unwrap()
            .starts_with("no question gate fired — pair with"),
        "{o:?}"
    );
}

/// test/gates-all-scripted.test.ts ("a replayed gate no frozen rule covers
/// fails, naming the gate"; "… only PART of fails").
#[test]
fn gates_all_scripted_fails_naming_the_gate_no_frozen_rule_answers() {
    let bare = cassette(multiselect().set("scenario.answers", json!([])));
    let m = fails(&bare, json!({"gates_all_scripted": true}));
    assert_eq!(
        m,
        format!(
            "1 gate(s) not answered by a scripted rule — question gate \"{GATE}\": no frozen \
                rule answers \"{GATE}\""
        )
    );
    let other = cassette(multiselect().set(
        "scenario.answers",
        json!([{"when_question": "plan", "choose": "1"}]),
    ));
    let m = fails(&other, json!({"gates_all_scripted": true}));
    assert!(
        m.contains(GATE) && !m.starts_with("evidence unavailable"),
        "{m}"
    );
}

/// test/gates-all-scripted.test.ts: redacted frozen answers, answers that
/// do not compile, and a non-deterministic recording whose rules cover
/// every gate never pass.
#[test]
fn gates_all_scripted_is_evidence_unavailable_when_the_rules_cannot_attribute() {
    let redacted = cassette(multiselect().set(
        "scenario.answers",
        json!([{"when_question": "[REDACTED:customer:ab12cd34ef56]", "choose": "first"}]),
    ));
    let m = fails(&redacted, json!({"gates_all_scripted": true}));
    assert!(
        m.starts_with("evidence unavailable:") && m.contains("redact"),
        "{m}"
    );

    let broken = cassette(multiselect().set(
        "scenario.answers",
        json!([{"when_question": "(", "choose": "1"}]),
    ));
    let m = fails(&broken, json!({"gates_all_scripted": true}));
    assert_eq!(
        m,
        format!(
            "evidence unavailable: question gate \"{GATE}\": the cassette's frozen answers do not \
                compile"
        )
    );

    let nondet = cassette(multiselect().set(
        "authoring",
        json!({"nonDeterministic": true, "deciders": ["first"]}),
    ));
    let m = fails(&nondet, json!({"gates_all_scripted": true}));
    assert!(
        m.starts_with("evidence unavailable:") && m.contains("live decider"),
        "{m}"
    );
    // … but rules that miss a gate still name it.
    let nondet_bare = cassette(
        multiselect()
            .set(
                "authoring",
                json!({"nonDeterministic": true, "deciders": ["first"]}),
            )
            .set("scenario.answers", json!([])),
    );
    let m = fails(&nondet_bare, json!({"gates_all_scripted": true}));
    assert!(
        m.contains(GATE) && !m.starts_with("evidence unavailable"),
        "{m}"
    );
}

/// test/gates-all-scripted.test.ts (include_permissions on replay): an
/// off-registry allow no rule covers is cowork parity's permissive
/// auto-allow; a rule, the registry and a deny are scripted or fixed; the
/// question-only form ignores permissions; web_fetch cannot be attributed.
#[test]
fn gates_all_scripted_include_permissions_reclassifies_permissions() {
    let with = json!({"gates_all_scripted": {"include_permissions": true}});
    let permissive = cassette(with_permission(multiselect(), "Bash", "allow"));
    passes(&permissive, json!({"gates_all_scripted": true}));
    let m = fails(&permissive, with.clone());
    assert_eq!(
        m,
        "1 gate(s) not answered by a scripted rule — permission Bash (allow): permissive \
            off-registry auto-allow (cowork parity)"
    );

    let ruled = cassette(with_permission(multiselect(), "Bash", "allow").edit(|m| {
        m["scenario"]["answers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"when_tool": "Bash", "decide": "allow"}));
    }));
    let o = passes(&ruled, with.clone());
    assert_eq!(
        o.evidence.as_deref(),
        Some(
            "all 1 question gate(s) answered by scripted rules, 1 permission decision(s) by \
                scripted or fixed rules"
        )
    );
    passes(
        &cassette(with_permission(multiselect(), "Read", "allow")),
        with.clone(),
    );
    passes(
        &cassette(with_permission(multiselect(), "Bash", "deny")),
        with.clone(),
    );

    let web = cassette(with_permission(
        multiselect(),
        "mcp__workspace__web_fetch",
        "allow",
    ));
    let m = fails(&web, with);
    assert!(
        m.starts_with("evidence unavailable:") && m.contains("web_fetch"),
        "{m}"
    );
}

/// A cassette without `controlOut` cannot say who answered: replay excludes
/// the key loudly (assertion-catalog: gate keys replay only with a
/// `controlOut` cassette), never a pass.
#[test]
fn gates_all_scripted_without_control_out_is_excluded_on_replay() {
    let fx = support::Fixture::new();
    let path = fx.path("g.cassette.json");
    multiselect()
        .remove("controlOut")
        .edit(|m| {
            m["scenario"]["assert"] = json!([{"gates_all_scripted": true}]);
        })
        .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
        .run();
    let v = run.json();
    assert!(
        v["results"][0]["assertions"].as_array().unwrap().is_empty(),
        "{v}"
    );
    assert!(
        run.stderr.contains("no controlOut") && run.stderr.contains("NOT checked"),
        "{}",
        run.stderr
    );
}

/// test/gates-all-scripted-replay.test.ts ("a truncated recording (a gate
/// with no recorded answer) is evidence-unavailable, never a zero-gate
/// pass").
#[test]
fn gates_all_scripted_on_a_gate_with_no_recorded_answer_never_passes() {
    let truncated = cassette(multiselect().edit(|m| {
        m["controlOut"].as_array_mut().unwrap().retain(|l| {
            !l.as_str().unwrap().contains("can_use_tool")
                && !l.as_str().unwrap().contains("\"answers\"")
        });
    }));
    let m = fails(&truncated, json!({"gates_all_scripted": true}));
    assert!(m.starts_with("evidence unavailable"), "{m}");
}

/// One hook run as the agent streams it: `hook_started`, then (unless
/// `exit` is `None` and `answered` false) its `hook_response`.
fn hook_run(id: &str, name: &str, exit: Option<i64>, stdout: &str, stderr: &str) -> Vec<Value> {
    let event = name.split(':').next().unwrap();
    let started = json!({"type": "system", "subtype": "hook_started", "hook_id": id,
        "hook_name": name, "hook_event": event});
    let mut response = json!({"type": "system", "subtype": "hook_response", "hook_id": id,
        "hook_name": name, "hook_event": event, "output": format!("{stdout}{stderr}"),
        "stdout": stdout, "stderr": stderr,
        "outcome": if exit == Some(0) { "success" } else { "error" }});
    if let Some(code) = exit {
        response["exit_code"] = json!(code);
    }
    vec![started, response]
}

/// A recording of `runs` by agent 2.1.293, the last without `onFailure`
/// (the original's `cassetteOf` default), so no failed frame is tainted.
fn hook_cassette(runs: Vec<Vec<Value>>) -> Cassette {
    cassette(hook_doc(runs, Some("2.1.293")))
}

/// A recording of `runs`; `agent` is the version its init frame reports.
fn hook_doc(runs: Vec<Vec<Value>>, agent: Option<&str>) -> CassetteDoc {
    let mut init = json!({"type": "system", "subtype": "init", "tools": [], "skills": []});
    if let Some(agent) = agent {
        init["claude_code_version"] = json!(agent);
    }
    let mut lines = vec![init];
    lines.extend(runs.into_iter().flatten());
    lines.push(json!({"type": "result", "subtype": "success", "is_error": false}));
    let events: Vec<Value> = lines.iter().map(|l| Value::from(l.to_string())).collect();
    CassetteDoc::minimal().set("events", Value::Array(events))
}

/// A recording of `runs` by a newer agent, with the v16 inventory frozen.
fn hook_cassette_v16(runs: Vec<Vec<Value>>, inventory: Value) -> Cassette {
    cassette(
        hook_doc(runs, Some("2.1.295"))
            .set("cassetteVersion", json!(16))
            .set("hookFailureBlocks", inventory),
    )
}

/// The agent runner's failed-frame shapes (test/hook-failure-blocks.test.ts):
/// exit 1, a timeout (143, cancelled), an HTTP 500.
fn failed_run(id: &str, name: &str, code: i64) -> Vec<Value> {
    let mut run = hook_run(id, name, Some(code), "", "boom");
    if code == 143 {
        run[1]["outcome"] = json!("cancelled");
    }
    run
}

/// test/hook-failure-blocks.test.ts ("a failed frame of an event with an
/// onFailure:block hook is unreadable, not 'no decision'").
#[test]
fn hook_failure_blocks_make_failed_frames_unreadable() {
    let pre = json!({"events": ["PreToolUse"]});
    for code in [1, 143, 500] {
        let c = hook_cassette_v16(vec![failed_run("h", "PreToolUse:Bash", code)], pre.clone());
        for item in [
            json!({"no_hook_event_blocked": {"event": "PreToolUse"}}),
            json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "max": 0}}),
            json!({"hook_event_blocked": {"event": "PreToolUse", "max": 0}}),
        ] {
            let m = unavailable(&c, item.clone());
            assert!(m.contains("onFailure: block"), "{code} {item}: {m}");
        }
        // The exit-2 channel is exact: a converted failure is no exit 2.
        passes(
            &c,
            json!({"hook_event_blocked": {"event": "PreToolUse", "via": "exit2", "max": 0}}),
        );
        // Without such a hook the reading is unchanged (no decision).
        let plain = hook_cassette_v16(
            vec![failed_run("h", "PreToolUse:Bash", code)],
            json!({"events": []}),
        );
        passes(
            &plain,
            json!({"no_hook_event_blocked": {"event": "PreToolUse"}}),
        );
    }
    let failed = || vec![failed_run("h", "PreToolUse:Bash", 1)];
    // An unknown inventory taints failed frames too.
    let unknown = json!({"unknown": true, "why": "a hooks source could not be parsed"});
    unavailable(
        &hook_cassette_v16(failed(), unknown.clone()),
        json!({"no_hook_event_blocked": {"event": "PreToolUse"}}),
    );
    // Another event's eligible hook does not taint this one.
    let post = hook_cassette_v16(vec![failed_run("h", "PostToolUse:Bash", 1)], pre.clone());
    passes(
        &post,
        json!({"no_hook_event_blocked": {"event": "PostToolUse"}}),
    );
    // Success and exit-2 frames are never tainted.
    let clear = hook_cassette_v16(
        vec![
            hook_run("a", "PreToolUse:Bash", Some(0), "", ""),
            hook_run("b", "PreToolUse:Write", Some(2), "", "no"),
        ],
        pre.clone(),
    );
    passes(
        &clear,
        json!({"hook_event_blocked": {"event": "PreToolUse", "min": 1, "max": 1}}),
    );
    passes(
        &clear,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "min": 1, "max": 1}}),
    );
    passes(
        &clear,
        json!({"hook_event_blocked": {"event": "PreToolUse", "via": "json", "max": 0}}),
    );
    // The exempt events keep today's reading.
    let stop = hook_cassette_v16(
        vec![failed_run("h", "Stop", 1)],
        json!({"events": ["Stop"]}),
    );
    passes(&stop, json!({"no_hook_event_blocked": {"event": "Stop"}}));
    // No frame for the event: unchanged, whatever the inventory.
    let other = hook_cassette_v16(
        vec![hook_run("h", "PostToolUse:Bash", Some(0), "", "")],
        unknown,
    );
    passes(
        &other,
        json!({"no_hook_event_blocked": {"event": "PostToolUse"}}),
    );
}

/// test/hook-failure-blocks.test.ts ("events whose hooks stream no frame at
/// all"): unscoped, a block there is part of the claim and cannot be seen.
#[test]
fn hook_failure_blocks_on_frameless_events_leave_the_unscoped_form_unverifiable() {
    let ok = || vec![hook_run("h", "PreToolUse:Bash", Some(0), "", "")];
    let item = json!({"no_hook_event_blocked": true});
    passes(
        &hook_cassette_v16(ok(), json!({"events": []})),
        item.clone(),
    );
    let m = unavailable(
        &hook_cassette_v16(ok(), json!({"events": ["Notification"]})),
        item.clone(),
    );
    assert!(m.contains("Notification"), "{m}");
    unavailable(
        &hook_cassette_v16(ok(), json!({"unknown": true, "why": "x"})),
        item,
    );
}

/// test/hook-failure-blocks.test.ts ("replay reads the frozen inventory":
/// an older cassette without it is judged by the agent its init frame
/// reports, and one with no failed frame is unchanged).
#[test]
fn a_cassette_without_hook_failure_blocks_is_judged_by_its_agent() {
    let failed = || vec![failed_run("h", "PreToolUse:Bash", 1)];
    let item = json!({"no_hook_event_blocked": {"event": "PreToolUse"}});
    passes(&cassette(hook_doc(failed(), Some("2.1.293"))), item.clone());
    for agent in [Some("2.1.295"), Some("2.1.1000"), None] {
        let m = unavailable(&cassette(hook_doc(failed(), agent)), item.clone());
        assert!(m.contains("onFailure: block"), "{agent:?}: {m}");
    }
    let ok = vec![hook_run("h", "PreToolUse:Bash", Some(0), "", "")];
    passes(&cassette(hook_doc(ok, Some("2.1.295"))), item);
}

/// test/hook-failure-blocks.test.ts ("a cassette file carrying [a malformed
/// inventory] is refused cleanly on read").
#[test]
fn a_malformed_hook_failure_blocks_is_refused_on_load() {
    let fx = support::Fixture::new();
    let path = fx.path("bad.cassette.json");
    hook_doc(vec![failed_run("h", "PreToolUse:Bash", 1)], Some("2.1.295"))
        .set("cassetteVersion", json!(16))
        .set("hookFailureBlocks", json!({"events": "PreToolUse"}))
        .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap()])
        .run();
    assert_eq!(run.code, 2, "{}", run.streams());
    assert!(run.stderr.contains("hookFailureBlocks"), "{}", run.stderr);
}

const STOP_STDERR: &str = "Your final message must end with the word PINEAPPLE";

/// The original's Stop recording (test/fixtures/hook-frames/stop-hook-block):
/// the hook blocks once with exit 2, then passes with exit 0.
fn stop_block_then_pass() -> Vec<Vec<Value>> {
    vec![
        hook_run("h1", "Stop", Some(2), "", STOP_STDERR),
        hook_run("h2", "Stop", Some(0), "", ""),
    ]
}

/// The original's hook-decision recording: Bash denied by JSON (exit 0),
/// Write blocked by exit 2, Stop blocked once by JSON and then passed.
fn decision_runs() -> Vec<Vec<Value>> {
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
    vec![
        hook_run("d1", "PreToolUse:Bash", Some(0), deny, ""),
        hook_run("d2", "PreToolUse:Write", Some(2), "", "blocked write"),
        hook_run(
            "d3",
            "Stop",
            Some(0),
            r#"{"decision":"block","reason":"again"}"#,
            "",
        ),
        hook_run("d4", "Stop", Some(0), "", ""),
    ]
}

fn unavailable(c: &Cassette, item: Value) -> String {
    let m = fails(c, item.clone());
    assert!(m.starts_with("evidence unavailable: "), "{item}: {m}");
    m
}

/// test/hook-event-blocked-count.test.ts: the bare and count forms of
/// `hook_event_blocked`, `no_hook_event_blocked`, and the range rule over
/// frames whose outcome cannot be read.
#[test]
fn hook_event_blocked_follows_the_original() {
    let c = hook_cassette(stop_block_then_pass());
    passes(&c, json!({"hook_event_blocked": "Stop"}));
    passes(&c, json!({"hook_event_blocked": {"event": "Stop"}}));
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "min": 1, "max": 1}}),
    );
    let m = fails(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "max": 0}}),
    );
    assert!(
        m.contains("1 blocking") && m.ends_with("expected at most 0"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "min": 2}}),
    );
    assert!(m.ends_with("expected at least 2"), "{m}");
    let m = fails(
        &c,
        json!({"hook_event_blocked": {"event": "PostToolUse", "max": 0}}),
    );
    assert!(
        m.contains("no hook_response frame for `PostToolUse`"),
        "{m}"
    );
    let m = unavailable(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "tool": "Bash"}}),
    );
    assert!(m.contains("carry no tool name"), "{m}");

    let pass_only = hook_cassette(vec![hook_run("h2", "Stop", Some(0), "", "")]);
    fails(&pass_only, json!({"hook_event_blocked": {"event": "Stop"}}));
    passes(
        &pass_only,
        json!({"hook_event_blocked": {"event": "Stop", "max": 0}}),
    );

    // One block and one frame without an exit code: the count is 1 or 2.
    let no_code = hook_cassette(vec![
        hook_run("h1", "Stop", Some(2), "", STOP_STDERR),
        hook_run("h2", "Stop", None, "", ""),
    ]);
    passes(
        &no_code,
        json!({"hook_event_blocked": {"event": "Stop", "max": 5}}),
    );
    let m = fails(
        &no_code,
        json!({"hook_event_blocked": {"event": "Stop", "min": 3}}),
    );
    assert!(!m.starts_with("evidence unavailable"), "{m}");
    unavailable(
        &no_code,
        json!({"hook_event_blocked": {"event": "Stop", "min": 2, "max": 2}}),
    );
    unavailable(
        &no_code,
        json!({"hook_event_blocked": {"event": "Stop", "max": 1}}),
    );
    // A hook that started and never answered is unknown too.
    let mut pending = stop_block_then_pass();
    pending[1].truncate(1);
    let pending = hook_cassette(pending);
    unavailable(
        &pending,
        json!({"hook_event_blocked": {"event": "Stop", "max": 1}}),
    );
    passes(
        &pending,
        json!({"hook_event_blocked": {"event": "Stop", "max": 5}}),
    );
}

/// test/hook-event-blocked-count.test.ts, "the JSON decision channel".
#[test]
fn hook_json_decisions_follow_the_original() {
    let c = hook_cassette(decision_runs());
    passes(&c, json!({"hook_event_blocked": "PreToolUse"}));
    let m = fails(&c, json!({"hook_event_blocked": "Stop"}));
    assert!(
        m.contains("never blocked")
            && m.contains("1 frame(s) denied by JSON on stdout")
            && m.contains("via: any"),
        "{m}"
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "min": 2, "max": 2}}),
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "min": 1, "max": 1}}),
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "via": "exit2", "min": 1, "max": 1}}),
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "via": "json", "min": 1, "max": 1}}),
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "Stop", "via": "exit2", "max": 0}}),
    );
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Bash", "via": "exit2", "max": 0}}),
    );
    let m = fails(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Edit"}}),
    );
    assert!(
        m.contains("no hook_response frame for `PreToolUse` (tool `Edit`)"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"no_hook_event_blocked": {"event": "PreToolUse", "tool": "Bash"}}),
    );
    assert!(
        m.contains("PreToolUse:Bash (exit 0, JSON deny) blocked"),
        "{m}"
    );

    // Stdout that is not a whole JSON decision decides nothing.
    for stdout in [
        "deny\n",
        "note: {\"decision\":\"block\"}\n",
        "[{\"decision\":\"block\"}]\n",
        "{\"continue\":false}\n",
    ] {
        let c = hook_cassette(vec![hook_run("d1", "PreToolUse:Bash", Some(0), stdout, "")]);
        passes(
            &c,
            json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Bash", "max": 0}}),
        );
        passes(
            &c,
            json!({"hook_decision": {"event": "PreToolUse", "tool": "Bash", "decision": "deny", "max": 0}}),
        );
    }
    // Stdout a redaction or the agent's truncation broke cannot be read;
    // the exit-2 channel ignores it.
    for stdout in [
        "{\"hookSpecificOutput\": [REDACTED]\n",
        "{\"hookSpecificOutput\": {\"hookEventName\"\nOutput truncated (40KB total)",
    ] {
        let c = hook_cassette(vec![hook_run("d1", "PreToolUse:Bash", Some(0), stdout, "")]);
        unavailable(
            &c,
            json!({"hook_decision": {"event": "PreToolUse", "tool": "Bash", "decision": "deny", "max": 0}}),
        );
        unavailable(
            &c,
            json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Bash", "via": "json", "max": 0}}),
        );
        passes(
            &c,
            json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Bash", "via": "exit2", "max": 0}}),
        );
    }
    // A hookEventName naming another event makes the decision unreadable.
    let wrong =
        r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"deny"}}"#;
    let c = hook_cassette(vec![hook_run("d1", "PreToolUse:Bash", Some(0), wrong, "")]);
    unavailable(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "tool": "Bash", "decision": "deny", "max": 0}}),
    );
    // An exit code other than 0 or 2 decides nothing.
    let deny =
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"}}"#;
    let c = hook_cassette(vec![hook_run("d1", "PreToolUse:Bash", Some(1), deny, "")]);
    passes(
        &c,
        json!({"hook_event_blocked": {"event": "PreToolUse", "tool": "Bash", "max": 0}}),
    );
}

/// test/hook-event-blocked-count.test.ts, `no_hook_event_blocked`.
#[test]
fn no_hook_event_blocked_follows_the_original() {
    let c = hook_cassette(stop_block_then_pass());
    for v in [json!(true), json!({"event": "Stop"})] {
        let m = fails(&c, json!({ "no_hook_event_blocked": v }));
        assert!(m.contains(": Stop (exit 2) blocked — 1 of 2 "), "{m}");
    }
    let pass_only = hook_cassette(vec![hook_run("h2", "Stop", Some(0), "", "")]);
    passes(&pass_only, json!({"no_hook_event_blocked": true}));
    passes(
        &pass_only,
        json!({"no_hook_event_blocked": {"event": "Stop"}}),
    );
    // Never vacuous: no frame in scope.
    fails(
        &pass_only,
        json!({"no_hook_event_blocked": {"event": "PostToolUse"}}),
    );
    unavailable(
        &hook_cassette(vec![]),
        json!({"no_hook_event_blocked": true}),
    );
    // SessionStart frames stream without --include-hook-events.
    let session_start = hook_cassette(vec![hook_run("s", "SessionStart", Some(0), "", "")]);
    let m = unavailable(&session_start, json!({"no_hook_event_blocked": true}));
    assert!(m.contains("--include-hook-events"), "{m}");
    passes(
        &session_start,
        json!({"no_hook_event_blocked": {"event": "SessionStart"}}),
    );
    // A frame without an exit code, or one never answered, is unreadable.
    unavailable(
        &hook_cassette(vec![hook_run("h", "Stop", None, "", "")]),
        json!({"no_hook_event_blocked": true}),
    );
    let mut never = vec![hook_run("h", "Stop", Some(0), "", "")];
    never.push(hook_run("n", "Stop", Some(0), "", "")[..1].to_vec());
    unavailable(
        &hook_cassette(never),
        json!({"no_hook_event_blocked": true}),
    );
}

/// test/hook-event-blocked-count.test.ts, `hook_decision`; and
/// `hook_event_fired` (the catalog: a plugin's hook ran).
#[test]
fn hook_decision_and_fired_follow_the_original() {
    let c = hook_cassette(decision_runs());
    passes(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "min": 2, "max": 2}}),
    );
    passes(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "tool": "Write", "min": 1, "max": 1}}),
    );
    passes(
        &c,
        json!({"hook_decision": {"event": "Stop", "decision": "block", "min": 1, "max": 1}}),
    );
    passes(
        &c,
        json!({"hook_decision": {"event": "Stop", "decision": "deny", "min": 1, "max": 1}}),
    );
    let m = fails(
        &c,
        json!({"hook_decision": {"event": "Stop", "decision": "allow"}}),
    );
    assert!(m.contains("0 `Stop` hook frame(s) decided allow"), "{m}");
    let m = fails(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "tool": "Bash", "max": 0}}),
    );
    assert!(m.contains("PreToolUse:Bash (exit 0, JSON deny)"), "{m}");
    let m = fails(
        &c,
        json!({"hook_decision": {"event": "PostToolUse", "decision": "deny", "max": 0}}),
    );
    assert!(
        m.contains("no hook_response frame for `PostToolUse`"),
        "{m}"
    );
    for v in ["allow", "ask", "defer"] {
        let out =
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": v}})
                .to_string();
        let c = hook_cassette(vec![hook_run("d", "PreToolUse:Bash", Some(0), &out, "")]);
        passes(
            &c,
            json!({"hook_decision": {"event": "PreToolUse", "tool": "Bash", "decision": v}}),
        );
    }
    let approve = hook_cassette(vec![hook_run(
        "a",
        "Stop",
        Some(0),
        r#"{"decision":"approve"}"#,
        "",
    )]);
    passes(
        &approve,
        json!({"hook_decision": {"event": "Stop", "decision": "allow"}}),
    );
    // A frame with no exit code is unknown: the range rule decides.
    let mut runs = decision_runs();
    runs[1] = hook_run("d2", "PreToolUse:Write", None, "", "");
    let c = hook_cassette(runs);
    unavailable(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "min": 2, "max": 2}}),
    );
    passes(
        &c,
        json!({"hook_decision": {"event": "PreToolUse", "decision": "deny", "min": 1, "max": 5}}),
    );

    let c = hook_cassette(stop_block_then_pass());
    passes(&c, json!({"hook_event_fired": "Stop"}));
    let m = fails(&c, json!({"hook_event_fired": "PostToolUse"}));
    assert!(
        m.contains("no hook_response frame for `PostToolUse`"),
        "{m}"
    );
}

/// test/hook-output.test.ts: literal and regex needles, streams, excerpts,
/// missing fields and redaction tokens.
#[test]
fn hook_output_follows_the_original() {
    let c = hook_cassette(stop_block_then_pass());
    let o = passes(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": STOP_STDERR}}),
    );
    assert!(
        o.evidence.unwrap().contains("Stop printed"),
        "evidence names the frame"
    );
    let m = fails(
        &c,
        json!({"hook_output_not_contains": {"event": "Stop", "stream": "stderr", "text": STOP_STDERR}}),
    );
    assert!(
        m.contains("1 `Stop` hook frame(s) printed")
            && m.contains("(exit 2): \"Your final message"),
        "{m}"
    );
    fails(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "text": STOP_STDERR.to_lowercase()}}),
    );
    passes(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "matches": "pineapple"}}),
    );
    fails(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "stream": "stdout", "matches": "pineapple"}}),
    );
    passes(
        &c,
        json!({"hook_output_not_contains": {"event": "Stop", "stream": "stderr", "text": "no handover.txt"}}),
    );
    for k in ["hook_output_contains", "hook_output_not_contains"] {
        let m = fails(&c, json!({ k: {"event": "PostToolUse", "text": "x"} }));
        assert!(
            m.contains("no hook_response frame for `PostToolUse`"),
            "{m}"
        );
    }
    // A frame without the field: not_contains cannot pass, contains cannot fail.
    let mut runs = stop_block_then_pass();
    runs[1][1].as_object_mut().unwrap().remove("stderr");
    let c = hook_cassette(runs);
    let m = unavailable(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": "never printed"}}),
    );
    assert!(m.contains("(1 without the stderr field)"), "{m}");
    let mut runs = stop_block_then_pass();
    runs[1][1].as_object_mut().unwrap().remove("stdout");
    let m = unavailable(
        &hook_cassette(runs),
        json!({"hook_output_not_contains": {"event": "Stop", "text": "never printed"}}),
    );
    assert!(m.contains("carry no stdout and stderr field"), "{m}");

    // Redaction tokens: a literal hit outside a token counts; a miss or a
    // regex over a rewritten stream cannot be trusted.
    let token = "[REDACTED:path:0123456789ab]";
    let red = hook_cassette(vec![hook_run(
        "r",
        "Stop",
        Some(0),
        "",
        &format!("no handover.txt under {token}"),
    )]);
    passes(
        &red,
        json!({"hook_output_contains": {"event": "Stop", "text": "no handover.txt"}}),
    );
    fails(
        &red,
        json!({"hook_output_not_contains": {"event": "Stop", "text": "no handover.txt"}}),
    );
    let m = unavailable(
        &red,
        json!({"hook_output_not_contains": {"event": "Stop", "text": "/Users/x"}}),
    );
    assert!(m.contains("rewritten by a redaction policy"), "{m}");
    unavailable(
        &red,
        json!({"hook_output_contains": {"event": "Stop", "matches": "^no .$"}}),
    );
    let m = unavailable(
        &red,
        json!({"hook_output_not_contains": {"event": "Stop", "text": format!("under {token}")}}),
    );
    assert!(
        m.contains("rewritten by the cassette's redaction policy"),
        "{m}"
    );

    // The excerpt is centred on the hit, within ~200 characters; a token
    // shows as (redacted).
    let long = format!("{} NEEDLE-HERE {}", "a".repeat(500), "b".repeat(500));
    let c = hook_cassette(vec![hook_run("l", "Stop", Some(0), "", &long)]);
    let ev = passes(&c, json!({"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": "NEEDLE-HERE"}}))
        .evidence
        .unwrap();
    let shown: String = serde_json::from_str(&ev[ev.find(": \"").unwrap() + 2..]).unwrap();
    assert!(
        shown.contains("NEEDLE-HERE") && shown.starts_with('…') && shown.ends_with('…'),
        "{shown}"
    );
    assert!(shown.chars().count() <= 202, "{}", shown.chars().count());
    let s = format!(
        "{} wrote {token} then failed open {}",
        "x".repeat(300),
        "y".repeat(300)
    );
    let c = hook_cassette(vec![hook_run("t", "Stop", Some(0), "", &s)]);
    let ev = passes(&c, json!({"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": "failed open"}}))
        .evidence
        .unwrap();
    assert!(
        ev.contains("(redacted) then failed open") && !ev.contains("REDACTED"),
        "{ev}"
    );
    fails(
        &c,
        json!({"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": "wrote [REDACTED"}}),
    );

    // The seen: list names at most five frames, then +N more.
    let runs: Vec<Vec<Value>> = (0..8)
        .map(|i| {
            hook_run(
                &format!("p{i}"),
                &format!("PreToolUse:T{i}"),
                Some(0),
                "",
                &format!("ok {i}"),
            )
        })
        .collect();
    let c = hook_cassette(runs);
    let m = fails(
        &c,
        json!({"hook_output_contains": {"event": "PreToolUse", "text": "never"}}),
    );
    assert!(
        m.contains("PreToolUse:T4: ") && m.ends_with("; +3 more") && !m.contains("T5"),
        "{m}"
    );
    let m = fails(
        &c,
        json!({"hook_output_not_contains": {"event": "PreToolUse", "text": "ok"}}),
    );
    assert!(
        m.contains("8 `PreToolUse` hook frame(s)") && m.ends_with("; +3 more"),
        "{m}"
    );
}

/// test/hook-event-blocked-count.test.ts "schema", test/hook-output.test.ts
/// "load time": the refinements the original's schema makes.
#[test]
fn hook_key_parameters_are_refused_as_the_original_refuses_them() {
    for bad in [
        json!({"hook_event_blocked": {"event": "Stop", "min": 3, "max": 1}}),
        json!({"hook_event_blocked": {"event": "Stop", "via": "stdout"}}),
        json!({"no_hook_event_blocked": false}),
        json!({"no_hook_event_blocked": {"tool": "Bash"}}),
        json!({"hook_decision": {"event": "PreToolUse", "decision": "denied"}}),
        json!({"hook_decision": {"event": "PreToolUse"}}),
        json!({"hook_output_contains": {"event": "Stop"}}),
        json!({"hook_output_contains": {"event": "Stop", "text": "a", "matches": "b"}}),
        json!({"hook_output_contains": {"event": "Stop", "text": ""}}),
        json!({"hook_output_not_contains": {"event": "Stop", "stream": "both", "text": "a"}}),
        json!({"hook_output_not_contains": {"event": "Stop", "matches": "\u{8}failed open\u{8}"}}),
    ] {
        assert!(catalog::validate(&bad).is_err(), "{bad} was accepted");
    }
    assert!(
        catalog::validate(
            &json!({"hook_output_not_contains": {"event": "Stop", "matches": "\\bfailed open\\b"}})
        )
        .is_ok()
    );
}

/// test/hook-output.test.ts "on replay": the recorded frames, frozen into a
/// cassette and re-driven by `reel replay`, reach the hook keys' verdicts.
#[test]
fn the_hook_keys_judge_the_frames_on_replay() {
    let fx = support::Fixture::new();
    let path = fx.path("hooks.cassette.json");
    let frames: Vec<Value> = stop_block_then_pass()
        .into_iter()
        .flatten()
        .map(|l| Value::from(l.to_string()))
        .collect();
    let mut doc = multiselect().set("cassetteVersion", json!(15));
    doc = doc.edit(|m| {
        let events = m["events"].as_array_mut().unwrap();
        let at = events.len() - 1;
        for (i, f) in frames.into_iter().enumerate() {
            events.insert(at + i, f);
        }
    });
    doc.set(
        "scenario.assert",
        json!([{"hook_output_contains": {"event": "Stop", "stream": "stderr", "text": "PINEAPPLE"}},
               {"hook_event_blocked": {"event": "Stop", "min": 1, "max": 1}},
               {"no_hook_event_blocked": true}]),
    )
    .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
        .run();
    let v = run.json();
    let pass: Vec<bool> = v["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["pass"].as_bool().unwrap())
        .collect();
    assert_eq!(pass, [true, true, false], "{v}");
    assert_eq!(run.code, 1, "{}", run.streams());
}

/// src/types.ts (`toolCallObjectFields`, `ToolCalledObject`): the object
/// form's `input`, `result` and `count` are refused at load with the field
/// and the fix named, never left to fail at evaluation.
#[test]
fn the_tool_object_form_is_shape_checked_at_load() {
    let refused = |item: Value, want: &str| {
        let e = catalog::validate(&item).expect_err(&item.to_string());
        assert!(e.contains(want), "{item}: {e}");
    };
    refused(
        json!({"tool_called": {"tool": "Bash", "input": "git"}}),
        "field `input`: expected an object of input field → regex",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "input": {"command": ""}}}),
        "field `input.command`: an empty input regex matches every value",
    );
    refused(
        json!({"tool_not_called": {"tool": "Bash", "input": {"timeout": 5}}}),
        "field `input.timeout`: expected a regex string, got 5",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "result": {"contains": "ok"}}}),
        "unknown field `contains` (expected one of: matches, not_matches, is_error)",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "result": {"is_error": "no"}}}),
        "is_error",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "result": {"matches": ""}}}),
        "matches",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "count": {"min": 3, "max": 1}}}),
        "count.min (3) is greater than count.max (1)",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "count": {"exactly": 1}}}),
        "unknown field `exactly` (expected one of: min, max)",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "count": {"min": -1}}}),
        "min",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "subagent_type": "writer"}}),
        "`subagent_type` applies only with `scope: subagent`",
    );
    refused(
        json!({"tool_called": {"tool": "Bash", "scope": "everywhere"}}),
        "expected `main`, `subagent` or `any`",
    );
    for ok in [
        json!({"tool_called": {"tool": "Bash", "input": {"command": "^git "}, "result": {"is_error": false}, "count": {"min": 1, "max": 2}}}),
        json!({"tool_not_called": {"tool": ["Bash"], "scope": "subagent", "subagent_type": "writer"}}),
    ] {
        catalog::validate(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
