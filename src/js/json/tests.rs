//! The JSON emulation against the golden vectors, RFC 8785 samples, Node's
//! outputs and fuzzing.

use super::*;
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn jcs(text: &str) -> String {
    jcs1(&parse_str(text).unwrap()).unwrap()
}

#[test]
fn serialization_vectors_of_the_golden_file() {
    let raw = include_str!("../../../tests/data/golden/expected.json");
    let doc: serde_json::Value = serde_json::from_str(raw).unwrap();
    let vectors = doc["serializationVectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 16);
    for v in vectors {
        let input = v["inputText"].as_str().unwrap();
        let parsed = parse_str(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(
            legacy(&parsed),
            v["legacyJSONstringify"].as_str().unwrap(),
            "legacy of {input}"
        );
        match v["jcs1"].as_str() {
            Some(want) => assert_eq!(jcs1(&parsed).unwrap(), want, "jcs1 of {input}"),
            None => assert_eq!(jcs1(&parsed), Err(CanonError::NonFinite), "{input}"),
        }
    }
}

#[test]
fn indented_legacy_is_json_stringify_with_a_gap() {
    // Expected strings are Node's `JSON.stringify(JSON.parse(input), null, 2)`.
    let cases: &[(&str, &str)] = &[
        ("1.50", "1.5"),
        ("[]", "[]"),
        ("{}", "{}"),
        ("[1,[],{}]", "[\n  1,\n  [],\n  {}\n]"),
        (
            r#"{"b":{"x":[true,null]},"1":"one","a":"\n"}"#,
            "{\n  \"1\": \"one\",\n  \"b\": {\n    \"x\": \
                [\n      true,\n      null\n    ]\n  },\n  \"a\": \"\\n\"\n}",
        ),
    ];
    for (input, want) in cases {
        let v = parse_str(input).unwrap();
        assert_eq!(legacy_indented(&v, "  "), *want, "{input}");
    }
    let v = parse_str(r#"{"b":1,"1":2}"#).unwrap();
    assert_eq!(legacy(&v), r#"{"1":2,"b":1}"#);
    let JsValue::Object(mut o) = v else {
        unreachable!("parsed an object")
    };
    let keys: Vec<String> = o
        .property_order()
        .iter()
        .map(|(k, _)| String::from_utf16_lossy(k))
        .collect();
    assert_eq!(keys, ["1", "b"]);
    *o.get_mut(&"b".encode_utf16().collect::<Vec<_>>()).unwrap() = JsValue::Bool(true);
    assert_eq!(legacy(&JsValue::Object(o)), r#"{"1":2,"b":true}"#);
}

#[test]
fn rfc8785_structure_sample() {
    let input = r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]}"#;
    assert_eq!(
        jcs(input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

fn domain_digest(prefix: &str, payload: &str) -> String {
    let mut h = Sha256::new();
    h.update(prefix.as_bytes());
    h.update(payload.as_bytes());
    hex::encode(h.finalize())
}

#[test]
fn domain_separated_digests() {
    let state = jcs1_serde(&serde_json::json!({"b":["x",true],"a":1})).unwrap();
    assert_eq!(
        domain_digest("better-harness:state:v1\0", &state),
        "ace4cb866f47a3e12db918d5aeabffc4cdce10732bd5b501170a76874cc12860"
    );
    let cp =
        jcs1_serde(&serde_json::json!({"schemaVersion":1,"kind":"HarnessCheckpointV1"})).unwrap();
    assert_eq!(
        domain_digest("better-harness:checkpoint:v1\0", &cp),
        "9497144b285361db56ddc4bda56ba13dcab4fe5f5fb7e172eae2cc9b583ac630"
    );
    assert_eq!(
        domain_digest("better-harness:workspace-ref:v1\0", "/workspace/demo"),
        "2d1595ed152363ba65867ad6b465639c4e02fd16fd2b4c76380552d0e604316f"
    );
}

#[test]
fn parser_rejects_what_json_parse_rejects() {
    for bad in [
        "\u{feff}{}",
        "NaN",
        "Infinity",
        "{\"a\":1,}",
        "[1,]",
        "'a'",
        "// c\n1",
        "01",
        "1.",
        ".5",
        "\"\t\"",
        "{\"a\" 1}",
        "",
        "  ",
        "\u{a0}1",
        "[",
        "\"\\x\"",
        "\"\\u12\"",
        "tru",
    ] {
        assert!(parse_str(bad).is_err(), "{bad:?} should not parse");
    }
    assert!(parse_str(" \t\r\n1 \n").is_ok());
    assert_eq!(parse(b"\"\xff\"").unwrap(), JsValue::String(vec![0xfffd]));
    let deep = "[".repeat(MAX_DEPTH + 2);
    assert!(parse_str(&deep).is_err());
    assert_eq!(legacy(&parse_str("1e400").unwrap()), "null");
}

#[test]
fn index_keys_hoist_only_in_legacy() {
    let v = parse_str(r#"{"b":0,"4294967295":1,"01":2,"-1":3,"4294967294":4,"0":5,"10":6,"2":7}"#)
        .unwrap();
    assert_eq!(
        legacy(&v),
        r#"{"0":5,"2":7,"10":6,"4294967294":4,"b":0,"4294967295":1,"01":2,"-1":3}"#
    );
    assert_eq!(
        jcs1(&v).unwrap(),
        r#"{"-1":3,"0":5,"01":2,"10":6,"2":7,"4294967294":4,"4294967295":1,"b":0}"#
    );
}

#[test]
fn lone_surrogate_escapes_become_replacement_characters() {
    let fix = |t: &str| replace_lone_surrogate_escapes(t);
    assert_eq!(
        fix(r#"{"a":"x\ud83d"}"#).as_deref(),
        Some(r#"{"a":"x\ufffd"}"#)
    );
    assert_eq!(
        fix(r#"["\udc00\ud800y"]"#).as_deref(),
        Some(r#"["\ufffd\ufffdy"]"#)
    );
    // A pair, an escaped backslash, a BMP escape, text outside strings: untouched.
    assert_eq!(
        fix(r#"{"a":"\ud83d\ude00","b":"\\ud800","c":"\u00e9"}"#),
        None
    );
    assert_eq!(fix(r#"{"k\ud800":1}"#).as_deref(), Some(r#"{"k\ufffd":1}"#));
    // Truncated escapes are left for the parser to refuse.
    assert_eq!(fix(r#"["\ud8"]"#), None);
    let fixed = fix(r#"{"t":"ok \ud83d","n":1.50}"#).unwrap();
    let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(v["t"], "ok \u{fffd}");
    assert_eq!(v["n"].to_string(), "1.50");
}

#[test]
fn serde_writer_orders_keys_by_utf16_units() {
    // U+1F600 (surrogates 0xD83D..) sorts before U+FB01 in UTF-16, after it in UTF-8.
    let v = serde_json::json!({"\u{fb01}": 1, "\u{1f600}": 2, "\u{7f}\u{1}": "\u{0}\"\\\u{1f}"});
    assert_eq!(jcs1_serde(&v).unwrap(), jcs1(&from_serde(&v)).unwrap());
    assert!(
        jcs1_serde(&v)
            .unwrap()
            .starts_with("{\"\u{7f}\\u0001\":\"\\u0000\\\"\\\\\\u001f\",\"\u{1f600}\"")
    );
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        ".*".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..6)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Run longer with `PROPTEST_CASES=100000 cargo test --lib fuzz_canon`.
    #[test]
    fn fuzz_canon_arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(v) = parse(&bytes) {
            let _ = legacy(&v);
            if let Ok(s) = jcs1(&v) {
                let again = parse_str(&s).expect("jcs1 output re-parses");
                prop_assert_eq!(jcs1(&again).unwrap(), s);
            }
        }
    }

    #[test]
    fn fuzz_canon_json_like_text_never_panics(text in r#"[\[\]{}",:0-9eE+\-. a-z\\u]{0,64}"#) {
        if let Ok(v) = parse_str(&text) {
            let _ = legacy(&v);
            let _ = jcs1(&v);
        }
    }

    #[test]
    fn fuzz_canon_jcs1_reparses_equal_and_is_idempotent(value in arb_json()) {
        let js = from_serde(&value);
        let canon = jcs1(&js).unwrap();
        let reparsed = parse_str(&canon).expect("canonical text parses");
        // Equal as values: same canonical form, and legacy of the sorted
        // value agrees with serde's view of the same document.
        prop_assert_eq!(jcs1(&reparsed).unwrap(), canon.clone());
        let serde_back: serde_json::Value = serde_json::from_str(&canon).unwrap();
        prop_assert_eq!(jcs1_serde(&serde_back).unwrap(), canon);
        let leg = legacy(&js);
        prop_assert!(parse_str(&leg).is_ok());
    }

    /// Never panics, and whatever it rewrites JSON.parse reads alike
    /// apart from the orphans becoming U+FFFD.
    #[test]
    fn fuzz_canon_lone_surrogate_rewrite(text in r#"[\[\]{}",:a-f0-9\\u ]{0,48}"#) {
        if let Some(fixed) = replace_lone_surrogate_escapes(&text) {
            prop_assert_eq!(parse_str(&text).is_ok(), parse_str(&fixed).is_ok());
        }
    }

    /// The direct serde writer and the `JsValue` route are one form.
    #[test]
    fn fuzz_canon_serde_writer_matches_jsvalue_route(value in arb_json()) {
        prop_assert_eq!(jcs1_serde(&value).unwrap(), jcs1(&from_serde(&value)).unwrap());
    }
}

/// JSON.parse messages captured from cowork-harness 2.0.0 (Node 22).
#[test]
fn parse_errors_read_as_v8_reports_them() {
    assert_eq!(
        v8_parse_error("reel smoke: the recorder works\n", "x"),
        "Unexpected token 'r', \"reel smoke\"... is not valid JSON"
    );
    assert_eq!(
        v8_parse_error("hello", "x"),
        "Unexpected token 'h', \"hello\" is not valid JSON"
    );
    assert_eq!(v8_parse_error("   \n", "x"), "Unexpected end of JSON input");
    assert_eq!(
        v8_parse_error("            # hello world and more", "x"),
        "Unexpected token '#', ...\"          # hello wo\"... is not valid JSON"
    );
    assert_eq!(
        v8_parse_error("# Title\n\nSome text here", "x"),
        "Unexpected token '#', \"# Title\n\nS\"... is not valid JSON"
    );
    assert_eq!(v8_parse_error("{\"a\": }", "fallback"), "fallback");
    // a literal's first departing unit (example-pdf-skill's project/notes.txt)
    assert_eq!(
        v8_parse_error("fixture project file\n", "x"),
        "Unexpected token 'i', \"fixture pro\"... is not valid JSON"
    );
    assert_eq!(v8_parse_error("nul", "x"), "Unexpected end of JSON input");
    assert_eq!(v8_parse_error("true", "fallback"), "fallback");
}

/// The string writer writes what serde_json writes, at every alignment of
/// every kind of character (each control, the quote and backslash, DEL,
/// two-, three- and four-byte characters, U+2028).
#[test]
fn quote_writes_what_serde_json_writes() {
    let mut pieces: Vec<String> = (0u8..0x20).map(|b| char::from(b).to_string()).collect();
    pieces.extend(
        [
            "\"",
            "\\",
            "\u{7f}",
            "/",
            "é",
            "€",
            "😀",
            "\u{2028}",
            "abcdefghijklmnopq",
        ]
        .map(str::to_owned),
    );
    for lead in 0..18 {
        for a in &pieces {
            for b in ["x", "\"", "é", "\n"] {
                let s = format!("{}{a}{b}{a}", "y".repeat(lead));
                let mut got = b"kept".to_vec();
                quote(&s, &mut got);
                let want = format!("kept{}", serde_json::to_string(&s).unwrap());
                assert_eq!(String::from_utf8(got).unwrap(), want, "{s:?}");
            }
        }
    }
    let mut got = Vec::new();
    quote("", &mut got);
    assert_eq!(got, b"\"\"");
    // A text of nothing but escapes outgrows the room first reserved.
    for s in ["\u{1}".repeat(1000), "\n".repeat(333), "\"a".repeat(77)] {
        let mut got = Vec::new();
        quote(&s, &mut got);
        assert_eq!(got, serde_json::to_vec(&s).unwrap());
    }
}

/// Regression (proptest case in proptest-regressions/js/json/tests.txt): a
/// step stores a block, keeps its plain prefix and writes the next byte's
/// escape (six bytes for a control byte) right after it, so it can reach
/// `BLOCK - 1 + 6` bytes past where it started; the writer kept room for
/// `BLOCK` only, and a step with little room left wrote past the buffer
/// (in a debug build, the next room check underflowed). Many strings of
/// plain runs and escapes, at every alignment against the room left, must
/// escape exactly as `JSON.stringify` (serde_json's escaping) does.
#[test]
fn dense_escapes_after_plain_runs_escape_exactly() {
    const UNITS: [&str; 8] = ["a", "a", "a", "\0", "\u{e}", "\"", "é", "𐀀"];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..20_000 {
        let len = next(120);
        let s: String = (0..len).map(|_| UNITS[next(UNITS.len())]).collect();
        // Some text already in the buffer, as when a key or value follows.
        let mut out = b"x".repeat(next(40));
        let before = out.len();
        quote(&s, &mut out);
        assert_eq!(
            &out[before..],
            serde_json::to_string(&s).unwrap().as_bytes(),
            "{s:?}"
        );
    }
}
