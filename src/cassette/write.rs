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
//! One more dialect exists in the wild: a cassette post-processed by Python's
//! `json.dump(doc, f, indent=2)` (cowork-harness's own committed
//! `example-pdf-skill.cassette.json` is one) escapes every non-ASCII character
//! as `\uxxxx` and may end in a newline. [`WriteStyle::detect`] recognises
//! it and [`to_json_pretty_with`] reproduces it, so such a file can be
//! rewritten without a spurious diff. The default ([`WriteStyle::JS`]) is what
//! cowork-harness's `record`, `rehash` and `replay --write` write.
//!
//! serde_json's pretty printer with a 2-space indent already produces exactly
//! these bytes (its string escaper uses the same table), so this module is a
//! thin, tested wrapper rather than a second serializer. It does not produce
//! canonical JSON for digests — that is `crate::js::json`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// How a cassette file spells what JSON leaves open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStyle {
    /// Escape every non-ASCII character as `\uxxxx` (UTF-16 units, lowercase
    /// hex, surrogate pairs above U+FFFF), as Python's `ensure_ascii` does.
    /// (Python also escapes DEL, U+007F; this does not, so a file holding a
    /// raw DEL in Python style would not round-trip. None is known.)
    pub escape_non_ascii: bool,
    /// End the file with `\n`.
    pub trailing_newline: bool,
}

impl WriteStyle {
    /// JavaScript's `JSON.stringify(doc, null, 2)` written with no newline:
    /// what cowork-harness (and reel) write.
    pub const JS: WriteStyle = WriteStyle {
        escape_non_ascii: false,
        trailing_newline: false,
    };

    /// The style of an existing file. An all-ASCII file is written back
    /// all-ASCII: if it held non-ASCII text, it was escaped; if it held none,
    /// both choices give the same bytes.
    pub fn detect(bytes: &[u8]) -> WriteStyle {
        WriteStyle {
            escape_non_ascii: bytes.is_ascii(),
            trailing_newline: bytes.last() == Some(&b'\n'),
        }
    }
}

/// `JSON.stringify(doc, null, 2)`: the bytes of a cassette file.
pub fn to_json_pretty(doc: &Map<String, Value>) -> String {
    to_json_pretty_with(doc, WriteStyle::JS)
}

/// [`to_json_pretty`] in a given [`WriteStyle`].
pub fn to_json_pretty_with(doc: &Map<String, Value>, style: WriteStyle) -> String {
    let mut text = to_json_pretty_js(doc);
    if style.escape_non_ascii && !text.is_ascii() {
        text = escape_non_ascii(&text);
    }
    if style.trailing_newline {
        text.push('\n');
    }
    text
}

/// Non-ASCII characters can only occur inside JSON strings (all structural
/// characters are ASCII), so escaping them in the finished text is exact.
fn escape_non_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut units = [0u16; 2];
    for ch in text.chars() {
        if ch.is_ascii() {
            out.push(ch);
        } else {
            for unit in ch.encode_utf16(&mut units) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{unit:04x}");
            }
        }
    }
    out
}

fn to_json_pretty_js(doc: &Map<String, Value>) -> String {
    if doc.is_empty() {
        return "{}".into();
    }
    let mut out = String::with_capacity(estimate_len(doc));
    out.push('{');
    for (i, (key, value)) in doc.iter().enumerate() {
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        // Writing to a String cannot fail (here and below).
        let _ = write!(out, "{}", Value::String(key.clone()));
        out.push_str(": ");
        // `{:#}` is serde_json's own pretty printer (2-space indent) compiled
        // inside serde_json, so it runs optimised even in reel's debug builds
        // (a generic `Serialize` call would be instantiated, unoptimised, here:
        // ~13x slower on a 50 MB cassette). Members are nested one level, so
        // every structural newline gets two more spaces; a newline inside a
        // string is always escaped, so `\n` in the output is structural.
        let nested = format!("{value:#}");
        for (j, line) in nested.split('\n').enumerate() {
            if j > 0 {
                out.push_str("\n  ");
            }
            out.push_str(line);
        }
    }
    out.push_str("\n}");
    out
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
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    {\n      \"d\": \
                null\n    }\n  ],\n  \"e\": true\n}"
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
    fn python_style_escapes_non_ascii_and_ends_with_a_newline() {
        let doc = json!({"s": "a—é😀\u{7f}"});
        let Value::Object(m) = doc else {
            unreachable!()
        };
        let style = WriteStyle {
            escape_non_ascii: true,
            trailing_newline: true,
        };
        // Python: json.dumps({"s": "a—é😀\x7f"}, indent=2) + "\n" (DEL stays raw here).
        assert_eq!(
            to_json_pretty_with(&m, style),
            "{\n  \"s\": \"a\\u2014\\u00e9\\ud83d\\ude00\u{7f}\"\n}\n"
        );
        assert_eq!(
            WriteStyle::detect(b"{}\n"),
            WriteStyle {
                escape_non_ascii: true,
                trailing_newline: true
            }
        );
        assert_eq!(
            WriteStyle::detect("{\"a\":\"é\"}".as_bytes()),
            WriteStyle::JS
        );
    }

    #[test]
    fn numbers_keep_their_spelling_but_the_exponent_marker() {
        let doc: Value = serde_json::from_str(
            r#"{"a":1.50,"b":1e400,"c":-0,"d":12345678901234567890123,"e":2E-7,"f":1e+21}"#,
        )
        .unwrap();
        assert_eq!(
            write(doc),
            "{\n  \"a\": 1.50,\n  \"b\": 1e+400,\n  \"c\": -0,\n  \"d\": \
                12345678901234567890123,\n  \"e\": 2e-7,\n  \"f\": 1e+21\n}"
        );
    }
}
