//! The line views against the reference parser.

use super::*;

/// Lines each path must judge alike: the common shapes the views take,
/// and the traps they must hand back (arrays for objects, nulls, other
/// types, duplicates, deep nesting, lone surrogates, dispatches).
const LINES: &[&str] = &[
    r#"{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"hi\nthere"}]},"parent_tool_use_id":null}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls","n":1.50}}]},"parent_tool_use_id":"p"}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"","name":"Read","input":null,"parent_tool_use_id":"q"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"x"},{"type":"redacted_thinking"}]}}"#,
    r#"{"type":"assistant","message":{"model":"m","content":[{"type":"thinking","thinking":"","signature":"EuYB"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":""}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":5}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"","signature":null}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","signature":"s"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":null,"text":"via text"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"a\nb \u00e9","signature":"s"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":5}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":["x"]}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"thinking","text":null,"signature":"s"}]}}"#,
    r#"{"type":"system","subtype":"thinking","content":"plain"}"#,
    r#"{"type":"system","subtype":"thinking","content":null}"#,
    r#"{"type":"system","subtype":"thinking","content":[1,null,"a"]}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":null}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":5}]}}"#,
    r#"{"type":"assistant","message":{"content":[[]]}}"#,
    r#"{"type":"assistant","message":{"content":[["text","hi"]]}}"#,
    r#"{"type":"assistant","message":{"content":[3]}}"#,
    r#"{"type":"assistant","message":[]}"#,
    r#"{"type":"assistant","message":"x"}"#,
    r#"{"type":"assistant","message":{"content":"plain"}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Task","input":{"prompt":"p"}}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t3","name":"X","input":{"subagent_type":"a"}}]}}"#,
    r#"{"type":"assistant","type":"user","message":{"content":[]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"\ud800"}]}}"#,
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a","x":"\udc00"}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"out","is_error":true}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"no id"}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":null,"is_error":null}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"}]}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":1}]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"text","text":"hello"},"str"]}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]},"tool_use_result":{"agentType":"general","status":"completed"}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]},"tool_use_result":{"status":1,"agentType":null}}"#,
    r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t9","content":"r"}]},"tool_use_result":"Error: x"}"#,
    r#"{"type":"stream_event","event":{"delta":{"text":"x"}}}"#,
    r#"{"type":"rate_limit_event","message":"not an object"}"#,
    r#"{"type":"system","subtype":"init","tools":[]}"#,
    r#"{"type":"system","subtype":"thinking_tokens","estimated_tokens":1.50,"uuid":"u","nested":{"a":[1,{"b":null}]}}"#,
    r#"{"subtype":"compact_boundary","type":"system","compact_metadata":{"trigger":"auto"}}"#,
    r#"{"type":"system","subtype":"task_started","tool_use_id":"t1","subagent_type":"x"}"#,
    r#"{"type":"system","subtype":"permission_denied","tool_use_id":"t1"}"#,
    r#"{"type":"system","subtype":5}"#,
    r#"{"type":"system","subtype":null,"x":1}"#,
    r#"{"type":"system"}"#,
    r#"{"type":"system","subtype":"hook_response","subtype":"other"}"#,
    r#"{"type":"system","subtype":"status","message":"not an object"}"#,
    r#"{"type":"result","subtype":"success","is_error":false}"#,
    r#"{"message":{"content":[]}}"#,
    r#"["assistant",{"content":[]}]"#,
    r#"[]"#,
    r#"{"type":"assistant","message":{"content":[]}} trailing"#,
    "   ",
    "not json",
];

#[test]
fn view_and_reference_agree() {
    // 130 levels: over the `Value` nesting limit, so a malformed line.
    let deep = format!(
        r#"{{"type":"assistant","message":{{"content":[]}},"extra":{}{}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    for line in LINES.iter().copied().chain([deep.as_str()]) {
        let reference = if line.trim().is_empty() {
            LineOutcome::Blank
        } else {
            read_reference(line)
        };
        assert_eq!(read(line), reference, "line: {line}");
    }
}

/// Every line of every cassette in the repository (real cowork-harness
/// recordings and the hand-made hostile ones) reads alike either way.
#[test]
fn repository_cassettes_read_alike() {
    let mut pending = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests"
    ))];
    let (mut lines, mut by_view) = (0, 0);
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read tests dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if !path.to_string_lossy().ends_with(".cassette.json") {
                continue;
            }
            let Ok(doc) = serde_json::from_slice::<Value>(&std::fs::read(&path).expect("read"))
            else {
                continue; // deliberately unreadable fixtures
            };
            let events = doc
                .get("events")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for line in events.iter().filter_map(Value::as_str) {
                let reference = if line.trim().is_empty() {
                    LineOutcome::Blank
                } else {
                    read_reference(line)
                };
                lines += 1;
                by_view += usize::from(read_view(line, true).is_some());
                assert_eq!(read(line), reference, "{}: {line}", path.display());
            }
        }
    }
    assert!(
        lines > 200 && by_view > lines / 3,
        "{by_view} of {lines} lines by view"
    );
}

#[test]
fn common_lines_take_the_view() {
    for line in &LINES[..4] {
        assert!(read_view(line, true).is_some(), "line: {line}");
    }
    let stream_event = r#"{"type":"stream_event","event":{"delta":{"text":"x"}}}"#;
    assert_eq!(read_view(stream_event, true), Some(LineOutcome::Ignored));
    let thinking =
        r#"{"type":"system","subtype":"thinking_tokens","estimated_tokens":7,"pad":"a\nb"}"#;
    let Some(LineOutcome::Events(evs)) = read_view(thinking, true) else {
        panic!("a thinking_tokens line takes the view");
    };
    let [AgentEvent::SystemEvent { subtype, data }] = evs.as_slice() else {
        panic!("one system event: {evs:?}");
    };
    assert_eq!(subtype, "thinking_tokens");
    assert!(matches!(data, ContextData::Line(_)), "kept as its line");
    assert_eq!(
        serde_json::to_string(data).unwrap(),
        r#"{"estimated_tokens":7,"pad":"a\nb"}"#
    );
    // Read for a verdict only: the subtype, not the line.
    let Some(LineOutcome::Events(evs)) = read_view(thinking, false) else {
        panic!("a thinking_tokens line takes the view");
    };
    let [AgentEvent::SystemEvent { subtype, data }] = evs.as_slice() else {
        panic!("one system event: {evs:?}");
    };
    assert_eq!(subtype, "thinking_tokens");
    assert!(matches!(data, ContextData::Unkept), "not kept");
    // Lines a fold reads are read whole either way.
    let task =
        r#"{"type":"system","subtype":"task_started","tool_use_id":"t","subagent_type":"x"}"#;
    assert_eq!(read_keeping(task, false), read_keeping(task, true));
    assert!(matches!(
        read_keeping(task, false),
        LineOutcome::Events(evs) if matches!(&evs[0], AgentEvent::SystemEvent { data: ContextData::Fields(f), .. } if f.contains_key("subagent_type"))
    ));
}

/// A long reasoning text is capped at 10 240 UTF-16 units either way,
/// also when the cut falls inside an escaped or astral character.
#[test]
fn long_thinking_is_capped_alike() {
    let plain = "é".repeat(parse::THINKING_TEXT_CAP + 5);
    let astral = format!("{}😀tail", "a".repeat(parse::THINKING_TEXT_CAP - 1));
    let escaped = format!("\\n{}", "b".repeat(parse::THINKING_TEXT_CAP));
    for (body, want) in [
        (plain.as_str(), "é".repeat(parse::THINKING_TEXT_CAP)),
        (astral.as_str(), "a".repeat(parse::THINKING_TEXT_CAP - 1)),
        (
            escaped.as_str(),
            format!("\n{}", "b".repeat(parse::THINKING_TEXT_CAP - 1)),
        ),
    ] {
        let line = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"thinking","thinking":"{body}"}}]}}}}"#
        );
        let want = LineOutcome::Events(vec![AgentEvent::Thinking {
            block: ThinkingBlock {
                text: Value::String(want),
                redacted: false,
            },
            model: None,
        }]);
        assert!(
            read_view(&line, true).is_some(),
            "a thinking line takes the view"
        );
        assert_eq!(read(&line), want);
        assert_eq!(read_reference(&line), want);
    }
}

#[test]
fn redacted_means_empty_text_with_a_signature() {
    let block = |text: &str, redacted: bool, model: Option<&str>| AgentEvent::Thinking {
        block: ThinkingBlock {
            text: Value::String(text.into()),
            redacted,
        },
        model: model.map(str::to_owned),
    };
    for (i, want) in [
        (4, block("", true, Some("m"))),
        (5, block("", false, None)), // empty signature
        (6, block("", false, None)), // a signature that is not a string
        (7, block("", false, None)), // null signature
        (8, block("", true, None)),  // no text at all (`?? ""`), signed
        (9, block("via text", false, None)),
        (10, block("a\nb é", false, None)), // signed, but has text
        (14, block("plain", false, None)),
        (15, block("", false, None)),
        (16, block("1,,a", false, None)),
    ] {
        assert_eq!(
            read(LINES[i]),
            LineOutcome::Events(vec![want]),
            "line: {}",
            LINES[i]
        );
    }
    for i in [4, 8, 10] {
        assert!(
            read_view(LINES[i], true).is_some(),
            "takes the view: {}",
            LINES[i]
        );
    }
    // A non-string text is kept as recorded (the original's `text` is
    // whatever the block held).
    let LineOutcome::Events(evs) = read(LINES[11]) else {
        panic!("events");
    };
    assert!(
        matches!(&evs[..], [AgentEvent::Thinking { block, .. }] if block.text == 5),
        "{evs:?}"
    );
}

#[test]
fn a_lone_surrogate_escape_reads_as_a_replacement_character() {
    // JSON.parse accepts the orphan half of an emoji; the line is not malformed.
    let line =
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"done \ud83d"}]}}"#;
    let LineOutcome::Events(evs) = read(line) else {
        panic!("read as events");
    };
    assert!(
        matches!(&evs[..], [AgentEvent::AssistantText { text, .. }] if text == "done \u{fffd}"),
        "{evs:?}"
    );
    assert_eq!(
        read(r#"{"type":"assistant","message":"\ud83d"#),
        LineOutcome::Malformed
    );
}

#[test]
fn traps_go_to_the_reference() {
    for trap in [
        r#"{"type":"assistant","message":{"content":[[]]}}"#,
        r#"["assistant",{"content":[]}]"#,
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":null}]}}"#,
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"a","x":"\udc00"}]}}"#,
    ] {
        assert!(read_view(trap, true).is_none(), "line: {trap}");
    }
}
