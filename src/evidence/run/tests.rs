//! The re-drive as a whole: events in, record out.

use super::context::{flat_json, flat_json_stored};
use super::*;
use crate::evidence::drive::{READ_CHUNK_LINES, drive};

fn run(events: &[&str], co: Option<&[&str]>) -> RunRecord {
    drive(events.to_vec(), co)
}

#[test]
fn the_newest_fifty_thinking_blocks_are_kept_and_the_rest_counted() {
    let mut lines: Vec<String> = vec![
        r#"{"type":"assistant","message":{"model":"think-model","content":[{"type":"thinking","thinking":"","signature":"s"}]}}"#.into(),
        r#"{"type":"system","subtype":"thinking","content":"from system"}"#.into(),
        r#"{"type":"assistant","parent_tool_use_id":"A","message":{"model":"m2","content":[{"type":"thinking","thinking":"child"}]}}"#.into(),
    ];
    let r = drive(lines.clone(), None);
    assert_eq!(r.thinking.len(), 3);
    assert_eq!(r.thinking_elided, 0);
    assert!(r.thinking[0].redacted);
    assert_eq!(r.thinking[1].text, "from system");
    assert_eq!(
        r.thinking[2].text, "child",
        "a sub-agent's reasoning counts"
    );
    assert_eq!(
        r.models,
        vec!["think-model", "m2"],
        "thinking blocks note their model"
    );

    for i in 0..50 {
        lines.push(format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"thinking","thinking":"t{i}"}}]}}}}"#
        ));
    }
    let r = drive(lines, None);
    assert_eq!(r.thinking.len(), THINKING_CAP);
    assert_eq!(r.thinking_elided, 3, "the three oldest are dropped");
    assert_eq!(
        r.thinking.front().map(|b| &b.text),
        Some(&Value::from("t0"))
    );
    assert_eq!(
        r.thinking.back().map(|b| &b.text),
        Some(&Value::from("t49"))
    );
}

#[test]
fn a_truncated_run_keeps_no_thinking() {
    let r = run(
        &[
            r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"}]}}"#,
            r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Q?","options":[{"label":"a"}]}]}}}"#,
        ],
        Some(&[
            r#"{"type":"control_response","response":{"request_id":"other","subtype":"success","response":{}}}"#,
        ]),
    );
    assert!(r.truncated.is_some(), "{:?}", r.format_findings());
    assert!(r.thinking.is_empty());
    assert_eq!(r.thinking_elided, 0);
}

#[test]
fn transcript_excludes_subagent_text_and_result_is_read() {
    let r = run(
        &[
            r#"{"type":"system","subtype":"init","tools":["Skill","Agent"],"skills":["pdf"]}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hello"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"A","name":"Agent","input":{"subagent_type":"x","tools":["Bash"]}}]}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"A","message":{"content":[{"type":"text","text":"child"},{"type":"tool_use","id":"R","name":"Read","input":{"file_path":"/x"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"A","content":"done"}]}}"#,
            r#"{"type":"result","is_error":false,"num_turns":2,"total_cost_usd":0.5,"usage":{"input_tokens":3,"output_tokens":4}}"#,
        ],
        None,
    );
    assert_eq!(r.transcript, "hello");
    assert_eq!(r.result, RunOutcome::Success);
    assert_eq!(r.tools_called, vec!["Agent"]);
    assert_eq!(r.subagent_tools, vec!["Read"]);
    assert_eq!(r.subagents[0].output.as_deref(), Some("done"));
    assert_eq!(r.file_tool_attempts[0].origin, "subagent");
    assert_eq!(r.tokens_total(), Some(7.0));
    assert_eq!(r.turns, Some(2.0));
    assert!(r.hook_events.is_none());
}

#[test]
fn unanswered_question_truncates_the_record() {
    let r = run(
        &[
            r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Pick?","options":[{"label":"A"}]}]}}}"#,
            r#"{"type":"result","is_error":false}"#,
        ],
        Some(&[r#"{"type":"user"}"#]),
    );
    assert_eq!(r.result, RunOutcome::Error);
    assert_eq!(
        r.truncated.as_deref(),
        Some(
            "truncated cassette: no decider answered the question \"Pick?\" (terminal returned \
                ABSTAIN — never silently default to option 1)"
        )
    );
    assert!(r.gate_options_missing());
}

#[test]
fn missing_permission_reply_and_guard_mismatch_are_findings() {
    let r = run(
        &[
            r#"{"type":"control_request","request_id":"p1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/a"}}}"#,
            r#"{"type":"control_request","request_id":"p2","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/a"}}}"#,
            "{broken",
        ],
        Some(&[
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"p2","response":{"behavior":"allow","updatedInput":{"file_path":"/a"},"extra":1}}}"#,
        ]),
    );
    let f = r.format_findings();
    assert_eq!(f.len(), 3, "{f:?}");
    assert!(f[0].starts_with("cassette events line 2 is not valid JSON"));
    assert!(f[1].starts_with(
        "serializeDecision output for p2 != recorded envelope: expected \
        {\"behavior\":\"allow\",\"extra\":1"
    ));
    assert!(
        f[2].starts_with("decision p1 present in events.jsonl has no matching control_response")
    );
}

#[test]
fn hook_block_is_reconstructed_with_control_out() {
    let r = run(
        &[
            r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback","callback_id":"hostloop-path-gate","input":{"tool_name":"Read","tool_input":{"file_path":"/sessions/x/a"}}}}"#,
        ],
        Some(&[
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{"decision":"block","reason":"vm path"}}}"#,
        ]),
    );
    let hooks = r.hook_events.as_ref().unwrap();
    assert_eq!(hooks[0].decision, "block");
    let pd = r.path_denials.as_ref().unwrap();
    assert_eq!(pd[0].source, "pretooluse");
    assert_eq!(pd[0].path.as_deref(), Some("/sessions/x/a"));
}

#[test]
fn tasks_are_tracked_and_malformed_creates_counted() {
    let r = run(
        &[
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"Write report"}},{"type":"tool_use","id":"t2","name":"TaskCreate","input":{"subject":"x"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"Task #1 created successfully: Write report"},{"type":"tool_result","tool_use_id":"t2","content":"weird"}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"u1","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}}]}}"#,
        ],
        None,
    );
    assert_eq!(r.tasks.len(), 1);
    assert_eq!(r.tasks[0].status, "completed");
    assert_eq!(r.evidence_errors.task_tracking, 1);
}

#[test]
fn a_denied_permission_records_its_input_capped() {
    let req = |id: &str, input: &str| {
        format!(
            r#"{{"type":"control_request","request_id":"{id}","request":{{"subtype":"can_use_tool","tool_name":"Bash","input":{input}}}}}"#
        )
    };
    let reply = |id: &str, behavior: &str| {
        format!(
            r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{id}","response":{{"behavior":"{behavior}"{}}}}}}}"#,
            if behavior == "deny" {
                r#","message":"no""#
            } else {
                r#","updatedInput":{}"#
            }
        )
    };
    let big = format!(r#"{{"command":"{}"}}"#, "x".repeat(11_000));
    let events = [
        req("a", r#"{"command":"rm -rf outputs"}"#),
        req("b", r#"{"command":"ls"}"#),
        req("c", &big),
    ];
    let co = [reply("a", "deny"), reply("b", "allow"), reply("c", "deny")];
    let r = drive(
        events.iter().map(String::as_str).collect(),
        Some(&co.iter().map(String::as_str).collect::<Vec<_>>()),
    );
    let details: Vec<Option<String>> = r
        .decisions
        .iter()
        .map(|d| d.detail.as_ref().map(Value::to_string))
        .collect();
    assert_eq!(
        details,
        [
            Some(r#"{"input":{"command":"rm -rf outputs"}}"#.to_owned()),
            None,
            Some(r#"{"input":{"truncated":true,"bytes":11014}}"#.to_owned()),
        ]
    );
}

#[test]
fn context_event_json_is_its_serialisation() {
    let line = r#"{"type":"system","subtype":"status","n":1.50,"x":{"b":[1,"\u00e9"]}}"#;
    let json = ContextData::Json(r#"{"n":1.50,"x":{"b":[1,"é"]}}"#.into());
    for data in [
        ContextData::of_line(line),
        ContextData::Fields(json.fields().into_owned()),
        json,
    ] {
        let ev = ContextEvent {
            subtype: "status".into(),
            data,
        };
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"subtype":"status","data":{"n":1.50,"x":{"b":[1,"é"]}}}"#
        );
    }
}

/// A long run spanning several read chunks: owning the lines (freed as
/// read) and borrowing them give the same record, also when the run is
/// truncated part-way and hooks after the truncation point still count.
#[test]
fn owned_and_borrowed_lines_drive_alike_across_chunks() {
    let hook = r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback","callback_id":"hostloop-path-gate","input":{"tool_name":"Read","tool_input":{"file_path":"/sessions/x/a"}}}}"#;
    let question = r#"{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[{"question":"Pick?","options":[{"label":"A"}]}]}}}"#;
    let co = [
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"h1","response":{"decision":"block","reason":"vm path"}}}"#,
    ];
    for truncate in [false, true] {
        let mut lines: Vec<String> = vec![
            r#"{"type":"system","subtype":"init","tools":["Bash"],"mcp_servers":[],"skills":[]}"#
                .into(),
        ];
        for i in 0..(READ_CHUNK_LINES * 2 + 17) {
            lines.push(match i % 4 {
                0 => format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"step {i}\n"}}]}}}}"#),
                1 => format!(r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t{i}","name":"Bash","input":{{"command":"echo {}"}}}}]}}}}"#, i % 7),
                2 => format!(r#"{{"type":"user","message":{{"content":[{{"type":"tool_result","tool_use_id":"t{}","content":"out {i}"}}]}}}}"#, i - 1),
                _ => format!(r#"{{"type":"system","subtype":"thinking_tokens","estimated_tokens":{i}}}"#),
            });
            if i == READ_CHUNK_LINES + 3 {
                lines.push(if truncate {
                    question.into()
                } else {
                    hook.into()
                });
            }
        }
        lines.push(hook.into());
        lines.push(r#"{"type":"result","is_error":false,"num_turns":3}"#.into());
        let borrowed = drive(lines.iter().map(String::as_str).collect(), Some(&co));
        let owned = drive(lines, Some(&co));
        assert_eq!(format!("{owned:?}"), format!("{borrowed:?}"));
        assert_eq!(owned.truncated.is_some(), truncate);
        assert!(owned.hook_events.as_ref().is_some_and(|h| !h.is_empty()));
        if !truncate {
            assert_eq!(
                owned.redundant_tool_calls.len(),
                7,
                "7 distinct repeated commands"
            );
            assert_eq!(owned.context_events.len(), READ_CHUNK_LINES / 2 + 4);
        }
    }
}

/// A carried line written straight from its text, or from its stored
/// token, writes what its parsed fields write, for every shape (flat or
/// not, escapes, numbers' spelling, repeated keys, keys in any place,
/// whitespace).
#[test]
fn a_carried_line_writes_what_its_fields_write() {
    let lines = [
        r#"{"type":"system","subtype":"thinking_tokens","estimated_tokens":425,"uuid":"00ad","pad":"a b"}"#,
        r#"{"subtype":"s","n":1.50,"e":1E400,"z":-0,"t":true,"f":false,"u":null,"type":"system"}"#,
        r#"{"type":"system","subtype":"s","n":1.50,"z":-0,"t":true,"f":false,"u":null,"big":123456789012345678901234567890}"#,
        r#"{"type":"system","subtype":"s","a":1e5,"b":2.5E-3,"c":-1e+2}"#,
        r#"{"type":"system","subtype":"s","s":"tab\t nl\n q\" bs\\ sl\/ \u00e9 \u20ac 😀 \u0001"}"#,
        r#"{"type":"system","subtype":"s","x":{"b":[1,"\u00e9"]}}"#,
        r#"{"type":"system","subtype":"s","a":[]}"#,
        r#"{"type":"system","subtype":"s","k":1,"k":2,"j":3}"#,
        r#"{"type":"system","subtype":"s","type":"again"}"#,
        r#"{"type":"system","subtype":"s","\u006b":"escaped key"}"#,
        r#"{"type":"system","subtype":"s","pair":"\ud83d\ude00"}"#,
        r#"{"type":"system","subtype":"s"}"#,
        r#"{ "type" : "system" , "subtype" : "s" , "spaced" : 1 }"#,
        r#"{"type":"system","subtype":"s","a":"\u001f\u0008\u000A\u0041\u00E9\/","b":"\b\f\n\r\t\"\\ \u0000\u001e \u007f"}"#,
        r#"{"type":"system","subtype":"s","c":"\u00e9","d":"\u0009","e":"\u001F","f":"x\/y"}"#,
        r#"{"type":"system","subtype":"s","s":"tab\t nl\n q\" bs\\ sl\/ é 😀"}"#,
        r#"{"type":"system","subtype":"s","$serde_json::private::Number":"1"}"#,
        "{\n  \"type\": \"system\",\r\n\t\"subtype\": \"s\",\n  \"k\": \"v\\\\/\"\n}",
    ];
    // The common shapes take the direct path, from the line or from its
    // stored token; a `\u` escape (which JSON.stringify writes only for
    // control characters and lone surrogates) goes the slow way.
    let stored = |line: &str| {
        let mut stored = Vec::new();
        crate::js::json::escape(line, &mut stored);
        String::from_utf8(stored).unwrap()
    };
    let escapes = r#"{"type":"system","subtype":"s","s":"tab\t nl\n q\" bs\\ sl\/ é 😀"}"#;
    for line in [lines[0], lines[2], escapes, lines[17]] {
        assert!(flat_json(line).is_some(), "{line}");
        assert!(flat_json_stored(&stored(line)).is_some(), "{line}");
    }
    assert!(flat_json(lines[4]).is_none(), "{}", lines[4]);
    for line in lines {
        let parsed = ContextData::Fields(ContextData::of_line(line).fields().into_owned());
        let want = serde_json::to_string(&parsed).unwrap();
        // Its stored token's flat text is the line's, where both are made.
        let from_stored = flat_json_stored(&stored(line));
        if from_stored.is_some() {
            assert_eq!(from_stored, flat_json(line), "{line}");
        }
        for data in [
            ContextData::of_line(line),
            ContextData::of_stored(&stored(line)),
        ] {
            assert_eq!(serde_json::to_string(&data).unwrap(), want, "{line}");
            // The report's writer, by hand, writes what the serde form
            // writes.
            let event = ContextEvent {
                subtype: "s\n\"é".into(),
                data,
            };
            let mut by_hand = Vec::new();
            event.write_json(&mut by_hand).unwrap();
            let parsed_event = ContextEvent {
                subtype: event.subtype.clone(),
                data: parsed.clone(),
            };
            assert_eq!(
                String::from_utf8(by_hand).unwrap(),
                serde_json::to_string(&parsed_event).unwrap(),
                "{line}"
            );
        }
    }
}

/// A tool result's JSON text (its serde form) in every shape: id or none,
/// the display text the start of the assertion text (escapes on both sides
/// of where it ends, a multi-byte character at the cut) or its own, no
/// assertion text.
#[test]
fn a_tool_result_writes_its_json_by_hand_as_a_derived_form_would() {
    let shapes = [
        (Some("t1"), true, "a\"b\n", Some("a\"b\nc\\d\u{1}é"), true),
        (None, false, "é€", Some("é€😀\t"), false),
        (Some("t\n2"), false, "own text", Some("different"), false),
        (Some(""), false, "", Some(""), false),
        (Some("t3"), true, "only display", None, false),
        (
            None,
            false,
            "",
            Some("\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\""),
            false,
        ),
    ];
    for (id, is_error, text, assert_text, truncated) in shapes {
        let result = ToolResult::new(
            id.map(str::to_owned),
            is_error,
            text.to_owned(),
            assert_text.map(str::to_owned),
            truncated,
            None,
        );
        let mut want = serde_json::Map::new();
        if let Some(id) = id {
            want.insert("toolUseId".into(), id.into());
        }
        want.insert("isError".into(), is_error.into());
        want.insert("text".into(), text.into());
        want.insert("assertText".into(), assert_text.into());
        want.insert("assertTextTruncated".into(), truncated.into());
        let want = serde_json::to_string(&want).unwrap();
        let mut got = Vec::new();
        result.write_json(&mut got);
        assert_eq!(String::from_utf8(got).unwrap(), want);
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            want,
            "its serde form"
        );
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            serde_json::from_str::<Value>(&want).unwrap()
        );
    }
}
