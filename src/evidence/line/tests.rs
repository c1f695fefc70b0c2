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
    let (mut lines, mut by_view, mut by_stored) = (0, 0, 0);
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
                by_stored += usize::from(stored_reading(&token_of(line)).is_some());
                assert_eq!(read(line), reference, "{}: {line}", path.display());
            }
        }
    }
    assert!(
        lines > 200 && by_view > lines / 3 && by_stored > lines / 3,
        "{by_view} of {lines} lines by view, {by_stored} from the stored token"
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
    assert!(
        matches!(data, ContextData::Json(_)),
        "kept as its JSON text"
    );
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
    // A hook frame is kept even then: the hook keys judge it.
    let hook = r#"{"type":"system","subtype":"hook_response","hook_id":"h","hook_name":"Stop","hook_event":"Stop","exit_code":2}"#;
    let Some(LineOutcome::Events(evs)) = read_view(hook, false) else {
        panic!("a hook_response line takes the view");
    };
    let [AgentEvent::SystemEvent { data, .. }] = evs.as_slice() else {
        panic!("one system event: {evs:?}");
    };
    assert_eq!(data.fields().get("exit_code"), Some(&serde_json::json!(2)));
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
            block: std::sync::Arc::new(ThinkingBlock {
                text: Value::String(want),
                redacted: false,
            }),
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
        block: std::sync::Arc::new(ThinkingBlock {
            text: Value::String(text.into()),
            redacted,
        }),
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

/// A line's JSON string token, as a cassette stores it.
fn token_of(line: &str) -> Vec<u8> {
    let mut token = Vec::new();
    crate::js::json::quote(line, &mut token);
    token
}

/// What reading the stored token gives, checked against the unescaped
/// reading: `Some` only for a token that is a string the lean path takes,
/// and then the outcome the unescaped line reads as, either way of keeping.
fn stored_reading(token: &[u8]) -> Option<LineOutcome> {
    let token_text = std::str::from_utf8(token).ok()?;
    let got = read_stored_keeping(token_text, true, &|| None)?;
    let mut line = String::new();
    let inner = &token[1..token.len() - 1];
    assert!(
        crate::js::json::unescape_into(inner, &mut line),
        "taken, so a string the lean path takes: {}",
        String::from_utf8_lossy(token)
    );
    let want = read_keeping(&line, true);
    assert_eq!(got, want, "line: {line}");
    // Equal carried data means equal fields; its JSON text is the same
    // bytes too.
    let carried_json = |outcome: &LineOutcome| -> Vec<String> {
        let LineOutcome::Events(events) = outcome else {
            return Vec::new();
        };
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::SystemEvent { data, .. } => Some(serde_json::to_string(data).unwrap()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(carried_json(&got), carried_json(&want), "line: {line}");
    assert_eq!(
        read_stored_keeping(token_text, false, &|| None),
        Some(read_keeping(&line, false)),
        "line: {line}"
    );
    Some(got)
}

#[test]
fn stored_tokens_read_as_their_lines() {
    let deep = format!(
        r#"{{"type":"assistant","message":{{"content":[]}},"extra":{}{}}}"#,
        "[".repeat(130),
        "]".repeat(130)
    );
    let spaced = "{ \"type\" :\n\"assistant\",\t\"message\":{\"content\":[ {\"type\":\"text\",\r\n\"text\":\"a\\\\b\"} ]} }";
    for line in LINES.iter().copied().chain([deep.as_str(), spaced]) {
        let taken = stored_reading(&token_of(line)).is_some();
        // The view's lines are all taken, but those with a `\u` escape.
        if read_view(line, true).is_some() && !line.contains("\\u") {
            assert!(taken, "taken: {line}");
        }
    }
    assert!(
        stored_reading(&token_of(spaced)).is_some(),
        "whitespace, escaped or not"
    );
    // Every string form the reader decodes, kept where the view keeps it.
    let escapes = r#"{"type":"assistant","message":{"model":"m\/1","content":[{"type":"text","text":"a\"b\\c\/d\n\t\r\b\f é😀"},{"type":"tool_use","id":"t\\1","name":"B\"ash","input":{"k\"":"v\\\n","n":[1.50,-0,1e400]}}]}}"#;
    let Some(LineOutcome::Events(evs)) = stored_reading(&token_of(escapes)) else {
        panic!("taken");
    };
    assert!(
        matches!(&evs[0], AgentEvent::AssistantText { text, .. } if text == "a\"b\\c/d\n\t\r\u{8}\u{c} é😀")
    );
    // An outer `\/` is a `/` too (JSON writers may escape it).
    let slashed = br#""{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\/b\\\/c\"}]}}""#;
    let Some(LineOutcome::Events(evs)) = stored_reading(slashed) else {
        panic!("taken");
    };
    assert!(matches!(&evs[0], AgentEvent::AssistantText { text, .. } if text == "a/b/c"));
}

/// A tool input built straight from its stored token is the `Value`
/// serde_json parses from the line, whatever its shape.
#[test]
fn tool_inputs_from_the_stored_token_are_what_serde_json_parses() {
    let line = |input: &str| {
        format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"tool_use","id":"t","name":"Bash","input":{input}}}]}}}}"#
        )
    };
    let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let mut taken = 0;
    for input in [
        r#"{"a":1,"a":2,"b":{"c":[true,false,null,"x
y "q" \ \/"]}}"#
            .to_owned(),
        r#"{"n":[1E5,-0,1.50,123456789012345678901234567890,-1.5e-3,0]}"#.to_owned(),
        r#"{ "spaced" : [ 1 , { } , [ ] ] , "e" : "" }"#.to_owned(),
        r#"{"$serde_json::private::Number":"1"}"#.to_owned(),
        r#"{"ké":1}"#.to_owned(),
        r#""a string""#.to_owned(),
        "[]".to_owned(),
        deep(90),
        deep(97),
        deep(120),
    ] {
        taken += usize::from(stored_reading(&token_of(&line(&input))).is_some());
    }
    // All but the reserved key, the `\u` escape and the two nested past
    // the view's limit (which the unescaping path reads).
    assert_eq!(taken, 6, "inputs read from the stored token");
}

/// The tokens it leaves to the unescaping path: not a string, not one the
/// lean path takes, or a line the view does not read.
#[test]
fn stored_tokens_it_leaves_alone() {
    for token in [
        &br#""{\"type\":\"assistant\",\"message\":{\"content\":[]}}"#[..], // no closing quote
        br#""{\"type\":\"ass"istant\"}""#,                                 // a raw quote
        b"\"{\\\"type\\\":\\\"a\x01\\\"}\"",                               // a raw control
        b"\"{\\\"type\\\":\\\"\xff\\\"}\"",                                // not UTF-8
        br#""{\"type\":\"\u0061ssistant\",\"message\":{\"content\":[]}}""#, // a \u escape
        br#""{\"type\":\"assistant\",\"message\":{\"content\":[]},\"type\":\"user\"}""#,
        br#""{\"type\":\"assistant\",\"$serde_json::private::Number\":\"1\"}""#,
        br#""{\"type\":\"result\",\"subtype\":\"success\"}""#, // the reference reads it
        br#""  ""#,
        br#""[]""#,
    ] {
        assert_eq!(
            stored_reading(token),
            None,
            "{}",
            String::from_utf8_lossy(token)
        );
    }
}

/// Every one-byte change of tokens of the common line shapes: what the
/// stored reader takes is a string the lean path takes, and reads as its
/// unescaped line reads (checked in `stored_reading`).
#[test]
fn stored_tokens_changed_byte_by_byte_read_alike() {
    let lines = [
        LINES[0],
        LINES[1],
        LINES[4],
        LINES[31],
        LINES[37],
        r#"{"type":"system","subtype":"thinking_tokens","n":1.5e-3,"pad":"x\\y\"z","a":[true,false,null,{}]}"#,
        r#"{"type":"system","subtype":"thinking_tokens","n":7,"u":"a/b","pad":"x\\y\"z\n\/w","t":null}"#,
    ];
    let mut taken = 0;
    for line in lines {
        let token = token_of(line);
        for at in 0..token.len() {
            for b in [
                b'"', b'\\', b'/', b'u', b'n', b' ', b'{', b']', b',', b':', b'0', b'-', 0x01, 0xc3,
            ] {
                let mut changed = token.clone();
                changed[at] = b;
                taken += usize::from(stored_reading(&changed).is_some());
            }
            let mut cut = token.clone();
            cut.remove(at);
            taken += usize::from(stored_reading(&cut).is_some());
        }
    }
    assert!(taken > 1000, "{taken} changed tokens taken");
}
