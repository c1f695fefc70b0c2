//! The loss-free cassette writer: the exact bytes of JavaScript's
//! `JSON.stringify(doc, null, 2)`, which is what cowork-harness writes.
//!
//! - 2-space indent, `"key": value`, one member/element per line, `[]` and
//!   `{}` for empty containers, no trailing newline;
//! - keys in document order (serde_json's `preserve_order`);
//! - numbers in their original spelling (`arbitrary_precision`: a `Number`
//!   displays as the text it was parsed from), except that serde_json
//!   normalises the exponent marker to `e+`/`e-` (a hand-written `1E5` comes
//!   back as `1e+5`). That is JavaScript's own spelling, and cowork-harness only
//!   ever writes ECMAScript's number spelling, so its files round-trip byte for
//!   byte;
//! - strings escaped as JavaScript does: `\"`, `\\`, `\b \f \n \r \t`, every
//!   other control character below U+0020 as lowercase `\u00xx`, everything
//!   else (DEL, U+2028/U+2029, non-ASCII) verbatim. JavaScript would also
//!   escape a lone surrogate as `\udxxx`; a Rust `String` cannot hold one
//!   (the loader refuses such input as invalid UTF-8, and serde_json refuses
//!   an escaped lone surrogate), so that case cannot arise.
//!
//! serde_json's pretty printer with a 2-space indent already produces exactly
//! these bytes (its string escaper uses the same table), so this module is a
//! thin, tested wrapper rather than a second serializer. It does not produce
//! canonical JSON for digests — that is `crate::canon`.

use serde::Serialize;
use serde_json::{Map, Value};

/// `JSON.stringify(doc, null, 2)`: the bytes of a cassette file.
pub fn to_json_pretty(doc: &Map<String, Value>) -> String {
    let mut out = Vec::with_capacity(estimate_len(doc));
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Serialising a `Map<String, Value>` into a `Vec` cannot fail: keys are
    // strings, writing to memory has no I/O error, numbers are valid JSON.
    doc.serialize(&mut ser)
        .expect("serialising a JSON map into memory cannot fail");
    // serde_json writes UTF-8 only (it copies `str` data and ASCII escapes).
    String::from_utf8(out).expect("serde_json output is UTF-8")
}

/// Rough output size, to allocate once for big event arrays.
fn estimate_len(doc: &Map<String, Value>) -> usize {
    doc.get("events")
        .and_then(Value::as_array)
        .map(|events| {
            events
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.len() + s.len() / 8 + 8)
                .sum::<usize>()
        })
        .unwrap_or(0)
        + 4096
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(v: Value) -> String {
        match v {
            Value::Object(m) => to_json_pretty(&m),
            _ => unreachable!("tests pass objects"),
        }
    }

    #[test]
    fn layout_matches_json_stringify_with_indent_2() {
        // Expected text produced by node: JSON.stringify(obj, null, 2).
        let got = write(json!({"a": [], "b": {}, "c": [1, {"d": null}], "e": true}));
        assert_eq!(
            got,
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": null\n    }\n  ],\n  \"e\": true\n}"
        );
    }

    #[test]
    fn empty_document_is_braces() {
        assert_eq!(to_json_pretty(&Map::new()), "{}");
    }

    #[test]
    fn strings_are_escaped_like_javascript() {
        let all_controls: String = (0u8..0x20).map(char::from).collect();
        let got = write(json!({ "s": all_controls }));
        assert_eq!(
            got,
            "{\n  \"s\": \"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"\n}"
        );
        let got = write(json!({ "k\"\\": "\u{7f}\u{2028}\u{2029}é😀/" }));
        assert_eq!(got, "{\n  \"k\\\"\\\\\": \"\u{7f}\u{2028}\u{2029}é😀/\"\n}");
    }

    #[test]
    fn numbers_keep_their_spelling_but_the_exponent_marker() {
        let doc: Value =
            serde_json::from_str(r#"{"a":1.50,"b":1e400,"c":-0,"d":12345678901234567890123,"e":2E-7,"f":1e+21}"#)
                .unwrap();
        assert_eq!(
            write(doc),
            "{\n  \"a\": 1.50,\n  \"b\": 1e+400,\n  \"c\": -0,\n  \"d\": 12345678901234567890123,\n  \"e\": 2e-7,\n  \"f\": 1e+21\n}"
        );
    }
}
