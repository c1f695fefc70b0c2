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

/// `JSON.stringify` quoting of a valid UTF-8 string (as [`quote`]).
pub(super) fn write_str(s: &str, out: &mut String) {
    // SAFETY: `quote` appends valid UTF-8 (the text's own characters, whole,
    // and ASCII escapes).
    quote(s, unsafe { out.as_mut_vec() });
}

/// Appends `s` as a JSON string, quoted, to `out`: `JSON.stringify`'s
/// escaping of a valid string, which is serde_json's too (`"`, `\`,
/// `\b \f \n \r \t`, other controls as lowercase `\u00xx`; nothing else).
/// The one string writer of reel's JSON output where it is made by hand
/// (canonical forms, bulk report lists).
pub fn quote(s: &str, out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escape(s, out);
    out.push(b'"');
}

/// [`quote`] without the quotes: escaping is per byte, so the escape of a
/// text is the escapes of its pieces, joined.
pub fn escape(s: &str, out: &mut Vec<u8>) {
    use super::block::{BLOCK, plain_prefix};
    /// The longest escape (`\u00xx`) of one byte.
    const WIDEST: usize = 6;
    /// What a step may write past its output position: a block store, kept
    /// up to its first byte to escape, then that byte's escape right after
    /// the kept part (at most `BLOCK - 1 + WIDEST` bytes on). Room for less
    /// let a step write past the buffer when escapes came thick.
    const STEP: usize = BLOCK + WIDEST;
    let bytes = s.as_bytes();
    // Room for the text with an escape every 16 bytes or so; a text that
    // needs more grows the buffer as it goes.
    out.reserve(bytes.len() + bytes.len() / 16 + STEP);
    let start = out.len();
    let (mut i, mut o) = (0, 0);
    // SAFETY: (memory) a step's stores end at most STEP bytes past the `o`
    // it starts at (a block, then one escape after its plain prefix), and
    // the loop keeps STEP bytes free past `start + o` before each step.
    // (UTF-8) `set_len` keeps exactly the escaped text: the input's own
    // bytes, whole characters, and ASCII escapes; a block's bytes past its
    // plain prefix are overwritten or cut off.
    unsafe {
        let mut dst = out.as_mut_ptr().add(start);
        loop {
            if out.capacity() - start - o < STEP {
                out.set_len(start + o);
                out.reserve(STEP + (bytes.len() - i) * 2);
                dst = out.as_mut_ptr().add(start);
            }
            // Plain runs a block at a time, stored whole, kept up to the
            // first byte to escape (text has an escape every line or so,
            // and a copy call per run cost more than the escaping).
            if let Some(block) = bytes.get(i..i + BLOCK)
                && let Ok(block) = <&[u8; BLOCK]>::try_from(block)
            {
                dst.add(o).cast::<[u8; BLOCK]>().write_unaligned(*block);
                let plain = plain_prefix::<true>(block);
                i += plain;
                o += plain;
                if plain == BLOCK {
                    continue;
                }
            }
            let Some(&b) = bytes.get(i) else {
                break;
            };
            i += 1;
            let short = match b {
                b'"' => b'"',
                b'\\' => b'\\',
                0x08 => b'b',
                0x0c => b'f',
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                0x00..=0x1f => 0,
                _ => {
                    // The tail's plain bytes, one at a time.
                    dst.add(o).write(b);
                    o += 1;
                    continue;
                }
            };
            if short != 0 {
                dst.add(o).cast::<[u8; 2]>().write_unaligned([b'\\', short]);
                o += 2;
            } else {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let hex = |nibble: u8| HEX[usize::from(nibble)];
                dst.add(o).cast::<[u8; WIDEST]>().write_unaligned([
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    hex(b >> 4),
                    hex(b & 0xf),
                ]);
                o += WIDEST;
            }
        }
        out.set_len(start + o);
    }
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
