//! The reference parser and its JavaScript helpers.

use super::*;
use serde_json::json;

#[test]
fn js_number_matches_number_to_string() {
    for (v, want) in [
        ("5", "5"),
        ("1.5", "1.5"),
        ("-2", "-2"),
        ("0", "0"),
        ("-0.0", "0"),
        ("1e21", "1e+21"),
        ("123456789012345678901234", "1.2345678901234569e+23"),
        ("1e20", "100000000000000000000"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1e-7"),
        ("1.25e-7", "1.25e-7"),
        ("0.1", "0.1"),
        ("100.5", "100.5"),
    ] {
        let n: serde_json::Number = serde_json::from_str(v).unwrap();
        assert_eq!(js_number(&n), want, "{v}");
    }
}

#[test]
fn utf16_slicing_counts_code_units() {
    assert_eq!(slice_utf16("abc", 2), "ab");
    assert_eq!(slice_utf16("a😀b", 2), "a");
    assert_eq!(slice_utf16("a😀b", 3), "a😀");
    assert_eq!(utf16_len("a😀"), 3);
}

#[test]
fn to_number_follows_javascript() {
    let n = |v: Value| js_to_number(Some(&v));
    assert_eq!(js_to_number(None).to_bits(), f64::NAN.to_bits());
    assert_eq!(n(json!(null)), 0.0);
    assert_eq!(n(json!(true)), 1.0);
    assert_eq!(n(json!(12.5)), 12.5);
    assert_eq!(n(json!(" 42\n")), 42.0);
    assert_eq!(n(json!("")), 0.0);
    assert_eq!(n(json!("-1e3")), -1000.0);
    assert_eq!(n(json!(".5")), 0.5);
    assert_eq!(n(json!("0x1F")), 31.0);
    assert_eq!(n(json!("-Infinity")), f64::NEG_INFINITY);
    assert_eq!(n(json!([7])), 7.0);
    assert_eq!(n(json!([])), 0.0);
    for nan in [
        json!("inf"),
        json!("nan"),
        json!("1_0"),
        json!("-0x1"),
        json!("12px"),
        json!([1, 2]),
        json!({}),
    ] {
        assert!(n(nan.clone()).is_nan(), "{nan}");
    }
}

#[test]
fn numbers_are_written_the_javascript_way() {
    assert_eq!(js_number_value(10.0).to_string(), "10");
    assert_eq!(js_number_value(1.5).to_string(), "1.5");
    assert_eq!(js_number_value(f64::NAN), Value::Null);
    assert_eq!(js_number_value(f64::INFINITY), Value::Null);
    assert_eq!(js_reformat(&json!(3.0)).to_string(), "3");
    assert_eq!(js_reformat(&json!("s")), json!("s"));
}

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
        AgentEvent::ToolResult {
            assert_text,
            text_blocks,
            ..
        } => {
            assert_eq!(assert_text, "a {\"type\":\"image\",\"x\":1}");
            assert_eq!(text_blocks.as_deref(), Some(&["a".to_owned()][..]));
        }
        other => panic!("{other:?}"),
    }
}
