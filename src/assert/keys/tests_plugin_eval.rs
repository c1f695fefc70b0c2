//! The keys that mirror `claude plugin eval`'s graders: `tool_order`,
//! `last_message_matches` / `_not_matches` and `tool_called.input_json`,
//! each evaluated on a small recorded stream, and their load-time refusals.

use serde_json::{Map, Value, json};

use crate::assert::{Context, catalog};
use crate::cassette::Cassette;
use crate::evidence::RunRecord;

/// An assistant line (`parent`: a sub-agent's) with these content blocks.
fn assistant(id: &str, parent: Option<&str>, content: Value) -> String {
    json!({"type": "assistant", "parent_tool_use_id": parent,
        "message": {"id": id, "role": "assistant", "model": "m", "content": content}})
    .to_string()
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// The stream: a Read, a sub-agent's Bash, a Write of notes/a.md, then a
/// final message of two text blocks.
fn stream() -> Vec<String> {
    vec![
        assistant(
            "m1",
            None,
            json!([
                text("Reading."),
                tool_use("t1", "Read", json!({"file_path": "in.txt"}))
            ]),
        ),
        assistant(
            "m2",
            Some("t0"),
            json!([tool_use("t2", "Bash", json!({"command": "date"}))]),
        ),
        assistant(
            "m3",
            None,
            json!([tool_use(
                "t3",
                "Write",
                json!({"file_path": "notes/a.md", "content": "Ship it"})
            )]),
        ),
        assistant(
            "m4",
            None,
            json!([text("Wrote the Note."), text("note, note")]),
        ),
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "done"})
            .to_string(),
    ]
}

fn verdict(lines: Vec<String>, item: Value) -> (bool, String) {
    let doc = json!({
        "scenario": {"prompt": "p", "session": "(inline)"},
        "events": lines,
        "preRunPaths": [],
        "preRunHashes": {},
    });
    let cassette = Cassette::unchecked("x.cassette.json", doc.as_object().cloned().unwrap(), 12);
    let run = RunRecord::from_cassette(&cassette);
    let ctx = Context::new(&cassette, &run, None);
    let item: Map<String, Value> = item.as_object().cloned().unwrap();
    let out = crate::assert::check(&item, &ctx);
    (out.pass, out.message)
}

fn passes(item: Value) -> bool {
    verdict(stream(), item).0
}

#[test]
fn the_last_message_is_the_last_assistant_line_with_text_its_blocks_joined() {
    let run = {
        let doc = json!({"scenario": {"prompt": "p"}, "events": stream()});
        let c = Cassette::unchecked("x", doc.as_object().cloned().unwrap(), 12);
        RunRecord::from_cassette(&c)
    };
    assert_eq!(
        run.last_message.as_deref(),
        Some("Wrote the Note.\nnote, note")
    );
    assert_eq!(
        run.tool_calls[2].input_json().text,
        r#"{"file_path":"notes/a.md","content":"Ship it"}"#
    );
}

#[test]
fn last_message_matches_case_and_count_as_the_grader() {
    assert!(passes(json!({"last_message_matches": "wrote the note"})));
    assert!(!passes(
        json!({"last_message_matches": {"pattern": "wrote the note", "flags": ""}})
    ));
    assert!(passes(
        json!({"last_message_matches": {"pattern": "Wrote the Note", "flags": ""}})
    ));
    // An earlier message is not the last one.
    assert!(!passes(json!({"last_message_matches": "Reading"})));
    // Exactly N matches: "Note" and "note" twice, case-insensitive by default.
    assert!(passes(
        json!({"last_message_matches": {"pattern": "note", "count": 3}})
    ));
    assert!(passes(
        json!({"last_message_matches": {"pattern": "note", "flags": "", "count": 2}})
    ));
    let (pass, message) = verdict(
        stream(),
        json!({"last_message_matches": {"pattern": "note", "count": 1}}),
    );
    assert!(!pass);
    assert_eq!(
        message,
        "the last message has 3 match(es) of /note/i (expected exactly 1)"
    );
    assert!(passes(
        json!({"last_message_matches": {"pattern": "x*", "flags": "g", "count": 27}})
    ));
    // `s` lets `.` cross the join.
    assert!(passes(
        json!({"last_message_matches": {"pattern": "Note\\..note", "flags": "s"}})
    ));
    assert!(!passes(
        json!({"last_message_matches": {"pattern": "Note\\..note", "flags": ""}})
    ));
}

#[test]
fn last_message_not_matches_and_a_run_without_text() {
    assert!(passes(
        json!({"last_message_not_matches": {"pattern": "WROTE", "flags": ""}})
    ));
    assert!(!passes(json!({"last_message_not_matches": "WROTE"})));
    let silent = vec![assistant(
        "m1",
        None,
        json!([tool_use("t1", "Read", json!({}))]),
    )];
    // No text: the grader tests "" — absent passes, `^$` matches.
    assert!(verdict(silent.clone(), json!({"last_message_not_matches": "x"})).0);
    assert!(verdict(silent.clone(), json!({"last_message_matches": "^$"})).0);
    assert!(!verdict(silent, json!({"last_message_matches": "x"})).0);
}

#[test]
fn tool_order_takes_the_first_matching_calls_of_any_agent() {
    assert!(passes(
        json!({"tool_order": {"before": "Read", "after": "Write"}})
    ));
    assert!(!passes(
        json!({"tool_order": {"before": "Write", "after": "Read"}})
    ));
    // The sub-agent's Bash counts, as in the grader's trace.
    assert!(passes(
        json!({"tool_order": {"before": "Bash", "after": "Write"}})
    ));
    let (pass, message) = verdict(
        stream(),
        json!({"tool_order": {"before": "Edit", "after": "Write"}}),
    );
    assert!(!pass);
    assert_eq!(message, "\"before\" tool Edit never called");
    let (pass, message) = verdict(
        stream(),
        json!({"tool_order": {"before": "Write", "after": "Read"}}),
    );
    assert!(!pass);
    assert_eq!(
        message,
        "Write@2 does not precede Read@0 (first matching calls, sub-agents' included)"
    );
    // input_json: case-sensitive, over JSON.stringify(input).
    let md = json!({"tool": "Write", "input_json": "\"file_path\":\"notes/"});
    assert!(passes(
        json!({"tool_order": {"before": "Read", "after": md}})
    ));
    let upper = json!({"tool": "Write", "input_json": "NOTES/"});
    assert!(!passes(
        json!({"tool_order": {"before": "Read", "after": upper}})
    ));
}

#[test]
fn tool_called_input_json_is_a_case_sensitive_regex_over_the_input() {
    let called = |re: &str, scope: &str| {
        passes(json!({"tool_called": {"tool": "Write", "input_json": re, "scope": scope}}))
    };
    assert!(called("\"content\":\"Ship", "main"));
    assert!(!called("\"content\":\"ship", "main"));
    // The sub-agent's Bash: counted with scope any, as the grader does.
    assert!(passes(
        json!({"tool_called": {"tool": "Bash", "input_json": "date", "scope": "any", "count": {"min": 1, "max": 1}}})
    ));
    assert!(passes(
        json!({"tool_not_called": {"tool": "Bash", "input_json": "rm ", "scope": "any"}})
    ));
    assert!(!passes(
        json!({"tool_not_called": {"tool": "Bash", "input_json": "date", "scope": "any"}})
    ));
}

#[test]
fn bad_parameters_are_refused_naming_the_field_and_the_fix() {
    let refusal = |item: Value| catalog::validate(&item).unwrap_err();
    assert!(
        refusal(json!({"last_message_matches": {"pattern": "a", "flags": "y"}}))
            .contains("field `flags`: `y` is not a flag this key takes")
    );
    assert!(
        refusal(json!({"last_message_matches": {"pattern": "a", "flags": "ii"}}))
            .contains("`i` is given twice")
    );
    assert!(
        refusal(json!({"last_message_matches": {"pattern": "(", "flags": ""}}))
            .contains("field `pattern`: bad regex")
    );
    assert!(
        refusal(json!({"last_message_not_matches": {"pattern": "a", "count": 1}}))
            .contains("unknown field `count`")
    );
    assert!(
        refusal(json!({"tool_order": {"before": "Read"}}))
            .contains("missing required field `after`")
    );
    assert!(
        refusal(
            json!({"tool_order": {"before": "Read", "after": {"tool": "Write", "input_json": "("}}})
        )
        .contains("field `after.input_json`: bad regex")
    );
    assert!(
        refusal(json!({"tool_called": {"tool": "Write", "input_json": "["}}))
            .contains("field `input_json`: bad regex")
    );
}
