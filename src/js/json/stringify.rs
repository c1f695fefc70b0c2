//! `JSON.stringify(v, null, gap)` with V8's own-property order, and the
//! string quoting both serializations share.

use std::fmt::Write as _;

use super::{JsValue, from_serde};
use crate::js::number;

/// ECMAScript `JSON.stringify(v)` (no indentation).
pub fn legacy(v: &JsValue) -> String {
    legacy_indented(v, "")
}

/// ECMAScript `JSON.stringify(v, null, gap)`: with a non-empty `gap`, each
/// array item / object member on its own line indented by `gap` per level,
/// `": "` after keys, empty containers as `[]` / `{}`.
pub fn legacy_indented(v: &JsValue, gap: &str) -> String {
    let mut out = String::new();
    write_legacy(v, &mut out, gap, 0);
    out
}

/// `JSON.stringify` of a `serde_json::Value` (insertion order, V8 index-key
/// hoisting, JS number formatting and escaping).
pub fn legacy_serde(v: &serde_json::Value) -> String {
    legacy(&from_serde(v))
}

fn write_legacy(v: &JsValue, out: &mut String, gap: &str, level: usize) {
    // Before the item at `level + 1` (`"\n" + indent`), or nothing when compact.
    let open = |out: &mut String, level: usize| {
        if !gap.is_empty() {
            out.push('\n');
            for _ in 0..level {
                out.push_str(gap);
            }
        }
    };
    match v {
        JsValue::Null => out.push_str("null"),
        JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsValue::Number(n) => {
            if !number::write(*n, out) {
                out.push_str("null");
            }
        }
        JsValue::String(s) => write_string(s, out),
        JsValue::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                open(out, level + 1);
                write_legacy(item, out, gap, level + 1);
            }
            if !a.is_empty() {
                open(out, level);
            }
            out.push(']');
        }
        JsValue::Object(o) => {
            out.push('{');
            let members = o.property_order();
            for (i, (k, val)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                open(out, level + 1);
                write_string(k, out);
                out.push(':');
                if !gap.is_empty() {
                    out.push(' ');
                }
                write_legacy(val, out, gap, level + 1);
            }
            if !members.is_empty() {
                open(out, level);
            }
            out.push('}');
        }
    }
}

/// `JSON.stringify` escaping of a valid UTF-8 string: runs that need no
/// escape are copied whole.
pub(super) fn write_str(s: &str, out: &mut String) {
    /// Bytes `JSON.stringify` escapes (all ASCII).
    fn escaped(b: u8) -> bool {
        b < 0x20 || b == b'"' || b == b'\\'
    }
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip 16 plain bytes at a time (a branch-free fold the compiler
        // vectorises); most text has an escape only every line or so.
        if let Some(block) = bytes.get(i..i + 16)
            && !block.iter().fold(false, |acc, &b| acc | escaped(b))
        {
            i += 16;
            continue;
        }
        let b = bytes[i];
        i += 1;
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `b` is an ASCII byte, so both slices end on char boundaries.
        out.push_str(&s[run..i - 1]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        run = i;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// `JSON.stringify` quoting of a UTF-16 string (ES2019 well-formed stringify:
/// lone surrogates escaped as lowercase `\udXXX`).
pub(super) fn write_string(s: &[u16], out: &mut String) {
    out.push('"');
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x00..=0x1f => {
                let _ = write!(out, "\\u{c:04x}");
            }
            0xd800..=0xdbff if i + 1 < s.len() && (0xdc00..=0xdfff).contains(&s[i + 1]) => {
                let cp = 0x10000 + ((u32::from(c) - 0xd800) << 10) + (u32::from(s[i + 1]) - 0xdc00);
                // A valid pair always decodes to a scalar value.
                out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                i += 1;
            }
            0xd800..=0xdfff => {
                let _ = write!(out, "\\u{c:04x}");
            }
            _ => out.push(char::from_u32(u32::from(c)).unwrap_or('\u{fffd}')),
        }
        i += 1;
    }
    out.push('"');
}
