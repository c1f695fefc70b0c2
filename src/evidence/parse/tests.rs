//! The reference parser and its JavaScript helpers.

use super::*;
use serde_json::json;

#[test]
fn thinking_text_is_capped_by_utf16_length() {
    let long = "x".repeat(THINKING_TEXT_CAP + 1);
    let b = ThinkingBlock::new(Value::String(long), false);
    assert_eq!(b.text.as_str().map(str::len), Some(THINKING_TEXT_CAP));
    let b = ThinkingBlock::new(json!([0, 0, 0]), true);
    assert_eq!(
        serde_json::to_string(&b).unwrap(),
        r#"{"text":[0,0,0],"redacted":true}"#
    );
    let b = ThinkingBlock::new(json!(7), false);
    assert_eq!(serde_json::to_string(&b).unwrap(), r#"{"text":7}"#);
}

#[test]
fn non_object_assistant_block_is_a_protocol_error() {
    let e = parse_message(json!({"type":"assistant","message":{"content":[3]}})).unwrap_err();
    assert!(e.contains("expected an object, got number"), "{e}");
}

#[test]
fn init_with_scalar_tools_is_a_protocol_error() {
    let e = parse_message(json!({"type":"system","subtype":"init","tools":"Read"})).unwrap_err();
    assert!(e.contains("\"tools\" must be an array, got string"), "{e}");
}

#[test]
fn control_request_without_id_is_a_protocol_error() {
    let e = parse_message(json!({"type":"control_request","request":{"subtype":"hook_callback"}}))
        .unwrap_err();
    assert_eq!(e, "control-in: malformed request_id: undefined");
}

#[test]
fn tool_result_array_content_is_flattened_with_spaces() {
    let ev = parse_message(json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","x":1}]}]}})).unwrap();
    match &ev[0] {
        AgentEvent::ToolResult { result, .. } => {
            assert_eq!(
                result.assert_text.as_deref(),
                Some("a {\"type\":\"image\",\"x\":1}")
            );
            assert_eq!(result.text_blocks.as_deref(), Some(&["a".to_owned()][..]));
        }
        other => panic!("{other:?}"),
    }
}

/// Each malformed `questions` shape gets zod's message for its path, the
/// first problem in document order.
#[test]
fn malformed_questions_name_the_path_and_both_types() {
    let cases = [
        (
            json!({}),
            "<root>: Invalid input: expected array, received object",
        ),
        (
            json!([1]),
            "0: Invalid input: expected object, received number",
        ),
        (
            json!([{"question": 2}]),
            "0.question: Invalid input: expected string, received number",
        ),
        (
            json!([{}, {"header": null}]),
            "1.header: Invalid input: expected string, received null",
        ),
        (
            json!([{"multiSelect": "yes"}]),
            "0.multiSelect: Invalid input: expected boolean, received string",
        ),
        (
            json!([{"options": {}}]),
            "0.options: Invalid input: expected array, received object",
        ),
        (
            json!([{"options": [{"label": "a"}, 3]}]),
            "0.options.1: Invalid input: expected object, received number",
        ),
        (
            json!([{"options": [{}]}]),
            "0.options.0.label: Invalid input: expected string, received undefined",
        ),
        (
            json!([{"options": [{"label": "a", "description": []}]}]),
            "0.options.0.description: Invalid input: expected string, received object",
        ),
        (
            json!([{"question": 1, "options": 2}]),
            "0.question: Invalid input: expected string, received number",
        ),
    ];
    for (value, message) in cases {
        assert_eq!(
            parse_questions(&value).err().as_deref(),
            Some(message),
            "{value}"
        );
    }
    let ok = parse_questions(&json!([{"question": "Q?", "options": [{"label": "a", "description": "d"}], "multiSelect": true}]))
        .expect("a well-formed question");
    assert_eq!(
        ok[0].options,
        Some(vec![("a".to_owned(), Some("d".to_owned()))])
    );
    assert_eq!(ok[0].multi_select, Some(true));
}
