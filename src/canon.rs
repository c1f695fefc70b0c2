//! Canonical JSON: the `jcs1` canonical form and the legacy `JSON.stringify`
//! emulation (spec/fingerprint.md §2). The one home of JSON serialisation rules
//! that digests depend on.
//!
//! Both serializations work on [`JsValue`], a JSON value as ECMAScript's
//! `JSON.parse` would hold it: numbers are IEEE doubles, strings are UTF-16
//! code units (so lone surrogates survive), objects keep first-insertion order
//! with last-value-wins duplicates. [`parse`] is that lenient `JSON.parse`
//! (lossy UTF-8 decode, JS whitespace, BOM/NaN/comments rejected);
//! [`from_serde`] adapts an already-parsed `serde_json::Value` (its number
//! text is re-parsed to a double, never kept as an integer).
//!
//! * [`jcs1`]: keys sorted by UTF-16 code units, ECMAScript `Number::toString`,
//!   `JSON.stringify` string escaping; a non-finite number is an error. This is
//!   NOT RFC 8785: duplicates and lone surrogates are accepted (as upstream).
//! * [`legacy`]: `JSON.stringify` with V8 own-property order (array-index keys
//!   first, ascending; then insertion order); a non-finite number prints `null`.
//!
//! This module does not hash anything and does not know about manifests (that
//! is `fingerprint`); it only turns values into the exact bytes upstream hashed.

use std::collections::HashMap;
use std::fmt::Write as _;

/// Maximum nesting depth [`parse`] accepts. V8 accepts deeper documents, but a
/// manifest nested this deep is not a real plugin manifest; refusing it keeps
/// the parser from exhausting the stack (the manifest is then hashed raw, as
/// for any other unparseable file).
pub const MAX_DEPTH: usize = 1024;

/// A JSON value as ECMAScript holds it after `JSON.parse`.
#[derive(Debug, Clone, PartialEq)]
pub enum JsValue {
    Null,
    Bool(bool),
    /// Always a double (may be non-finite after overflow, e.g. `1e400`).
    Number(f64),
    /// UTF-16 code units; lone surrogates allowed.
    String(Vec<u16>),
    Array(Vec<JsValue>),
    Object(JsObject),
}

/// An object in first-insertion order; keys are unique (a duplicate key keeps
/// its first position and takes the last value, as `JSON.parse` does).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsObject {
    entries: Vec<(Vec<u16>, JsValue)>,
}

impl JsObject {
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries in insertion order.
    pub fn entries(&self) -> &[(Vec<u16>, JsValue)] {
        &self.entries
    }

    /// Sets `key` (keeps the position of an existing key).
    pub fn insert(&mut self, key: Vec<u16>, value: JsValue) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    /// The value of `key`, mutably (the `--mutate` pass perturbs one leaf in
    /// place and puts it back).
    pub fn get_mut(&mut self, key: &[u16]) -> Option<&mut JsValue> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k.as_slice() == key)
            .map(|(_, v)| v)
    }

    /// Entries in V8 own-property order (`Object.keys`, `JSON.stringify`):
    /// array-index keys first, ascending; then the rest in insertion order.
    pub fn property_order(&self) -> Vec<&(Vec<u16>, JsValue)> {
        let mut indexed: Vec<(u32, &(Vec<u16>, JsValue))> = Vec::new();
        let mut named: Vec<&(Vec<u16>, JsValue)> = Vec::new();
        for e in &self.entries {
            match array_index(&e.0) {
                Some(i) => indexed.push((i, e)),
                None => named.push(e),
            }
        }
        indexed.sort_by_key(|(i, _)| *i);
        indexed.into_iter().map(|(_, e)| e).chain(named).collect()
    }

    /// Deletes the own property `key` (the `delete obj.version` of the
    /// manifest transforms). Returns whether it existed.
    pub fn remove(&mut self, key: &str) -> bool {
        let key: Vec<u16> = key.encode_utf16().collect();
        let before = self.entries.len();
        self.entries.retain(|(k, _)| *k != key);
        before != self.entries.len()
    }
}

/// Why a text is not JSON (what `JSON.parse` would throw).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {what}")]
pub struct ParseError {
    pub offset: usize,
    pub what: &'static str,
}

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// `jcs1` refuses NaN/±Infinity (upstream `JcsCanonicalizationError`).
    #[error("cannot canonicalize a non-finite number")]
    NonFinite,
}

/// ECMAScript `JSON.parse` of `bytes` after a lossy UTF-8 decode (invalid
/// sequences become U+FFFD, as Node's `buffer.toString("utf8")`).
pub fn parse(bytes: &[u8]) -> Result<JsValue, ParseError> {
    parse_str(&String::from_utf8_lossy(bytes))
}

/// Rewrites every lone UTF-16 surrogate escape (`\ud83d` not followed by
/// its low half, or a stray low half) inside the JSON strings of `text` to
/// `\ufffd`; `None` when there is none.
///
/// `JSON.parse` accepts such escapes (they appear when a producer cut a
/// string between the halves of an emoji and `JSON.stringify` escaped the
/// orphan), but a Rust string cannot hold them, so serde_json refuses the
/// whole document. Reading the orphan as U+FFFD keeps everything else of the
/// document exact. Escapes are recognised only inside strings, after an odd
/// run of backslashes, so `"\\ud800"` (an escaped backslash) is left alone.
pub fn replace_lone_surrogate_escapes(text: &str) -> Option<String> {
    fn hex4(b: &[u8]) -> Option<u16> {
        let s = std::str::from_utf8(b.get(..4)?).ok()?;
        u16::from_str_radix(s, 16).ok()
    }
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if b.get(i + 1) != Some(&b'u') {
                    i += 2; // a two-character escape
                    continue;
                }
                let Some(unit) = hex4(&b[i + 2..]) else {
                    i += 2;
                    continue;
                };
                let high = (0xd800..=0xdbff).contains(&unit);
                let low = (0xdc00..=0xdfff).contains(&unit);
                let paired = high
                    && b.get(i + 6) == Some(&b'\\')
                    && b.get(i + 7) == Some(&b'u')
                    && hex4(&b[(i + 8).min(b.len())..])
                        .is_some_and(|u| (0xdc00..=0xdfff).contains(&u));
                if paired {
                    i += 12;
                    continue;
                }
                if high || low {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(&text[copied..i]);
                    o.push_str("\\ufffd");
                    copied = i + 6;
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

/// ECMAScript `JSON.parse` of `text`.
pub fn parse_str(text: &str) -> Result<JsValue, ParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("unexpected data after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err(&self, what: &'static str) -> ParseError {
        ParseError {
            offset: self.i,
            what,
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn lit(&mut self, word: &[u8], v: JsValue) -> Result<JsValue, ParseError> {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("unexpected token"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsValue, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.s.get(self.i) {
            None => Err(self.err("unexpected end of input")),
            Some(b'n') => self.lit(b"null", JsValue::Null),
            Some(b't') => self.lit(b"true", JsValue::Bool(true)),
            Some(b'f') => self.lit(b"false", JsValue::Bool(false)),
            Some(b'"') => Ok(JsValue::String(self.string()?)),
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(JsValue::Array(items));
                }
                loop {
                    self.ws();
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(JsValue::Array(items));
                        }
                        _ => return Err(self.err("expected `,` or `]`")),
                    }
                }
            }
            Some(b'{') => {
                self.i += 1;
                let mut obj = JsObject::new();
                let mut index: HashMap<Vec<u16>, usize> = HashMap::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(JsValue::Object(obj));
                }
                loop {
                    self.ws();
                    if self.s.get(self.i) != Some(&b'"') {
                        return Err(self.err("expected a string key"));
                    }
                    let key = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.err("expected `:`"));
                    }
                    self.i += 1;
                    self.ws();
                    let v = self.value(depth + 1)?;
                    match index.get(&key) {
                        Some(&at) => obj.entries[at].1 = v,
                        None => {
                            index.insert(key.clone(), obj.entries.len());
                            obj.entries.push((key, v));
                        }
                    }
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(JsValue::Object(obj));
                        }
                        _ => return Err(self.err("expected `,` or `}`")),
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("unexpected token")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.s.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<JsValue, ParseError> {
        let start = self.i;
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.s.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("invalid number")),
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.err("invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("invalid number"));
            }
        }
        // The slice is ASCII by construction; Rust's f64 parser rounds
        // correctly and overflows to ±inf like ECMAScript.
        let text =
            std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("invalid number"))?;
        text.parse::<f64>()
            .map(JsValue::Number)
            .map_err(|_| self.err("invalid number"))
    }

    fn hex4(&mut self) -> Result<u16, ParseError> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .ok_or_else(|| self.err("bad \\u escape"))?;
        let h = std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?;
        if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.err("bad \\u escape"));
        }
        let v = u16::from_str_radix(h, 16).map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<Vec<u16>, ParseError> {
        self.i += 1; // opening quote
        let mut out: Vec<u16> = Vec::new();
        loop {
            let run_start = self.i;
            while let Some(&b) = self.s.get(self.i) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            if run_start < self.i {
                // The input is a &str and the run stops only at ASCII bytes, so
                // it is valid UTF-8.
                let run = std::str::from_utf8(&self.s[run_start..self.i])
                    .map_err(|_| self.err("invalid UTF-8"))?;
                out.extend(run.encode_utf16());
            }
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let esc = *self.s.get(self.i).ok_or_else(|| self.err("bad escape"))?;
                    self.i += 1;
                    out.push(match esc {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => self.hex4()?,
                        _ => return Err(self.err("bad escape")),
                    });
                }
                Some(_) => return Err(self.err("control character in string")),
            }
        }
    }
}

/// Converts a `serde_json::Value` (this crate keeps number spellings) to the
/// value `JSON.parse` would produce: every number becomes a double.
pub fn from_serde(v: &serde_json::Value) -> JsValue {
    use serde_json::Value;
    match v {
        Value::Null => JsValue::Null,
        Value::Bool(b) => JsValue::Bool(*b),
        // With `arbitrary_precision` the Display is the original text, which
        // is valid JSON number syntax, so it parses (possibly to ±inf).
        Value::Number(n) => JsValue::Number(n.to_string().parse::<f64>().unwrap_or(f64::NAN)),
        Value::String(s) => JsValue::String(s.encode_utf16().collect()),
        Value::Array(a) => JsValue::Array(a.iter().map(from_serde).collect()),
        Value::Object(m) => JsValue::Object(JsObject {
            entries: m
                .iter()
                .map(|(k, v)| (k.encode_utf16().collect(), from_serde(v)))
                .collect(),
        }),
    }
}

/// The `jcs1` canonical form of `v`.
pub fn jcs1(v: &JsValue) -> Result<String, CanonError> {
    let mut out = String::new();
    write_jcs1(v, &mut out)?;
    Ok(out)
}

/// `jcs1` of a `serde_json::Value`.
///
/// Same bytes as `jcs1(&from_serde(v))`, written straight from the serde
/// value: a `serde_json::Value` holds valid UTF-8 with no duplicate keys and
/// no lone surrogates, so the UTF-16 detour only matters for the key order,
/// and that is compared on the fly. Replay canonicalises every recorded tool
/// input, so skipping the conversion matters (a property test pins the two
/// paths together).
pub fn jcs1_serde(v: &serde_json::Value) -> Result<String, CanonError> {
    let mut out = String::new();
    write_jcs1_serde(v, &mut out)?;
    Ok(out)
}

fn write_jcs1_serde(v: &serde_json::Value, out: &mut String) -> Result<(), CanonError> {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Same double as `from_serde` reads.
            let d = n.to_string().parse::<f64>().unwrap_or(f64::NAN);
            out.push_str(&es_number(d).ok_or(CanonError::NonFinite)?);
        }
        Value::String(s) => write_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs1_serde(item, out)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut sorted: Vec<(&String, &Value)> = m.iter().collect();
            // JS default sort: by UTF-16 code unit, which differs from UTF-8
            // byte order only between astral and U+E000..U+FFFF characters.
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, val)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_jcs1_serde(val, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// `JSON.stringify` escaping of a valid UTF-8 string: runs that need no
/// escape are copied whole.
fn write_str(s: &str, out: &mut String) {
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

fn write_jcs1(v: &JsValue, out: &mut String) -> Result<(), CanonError> {
    match v {
        JsValue::Null => out.push_str("null"),
        JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsValue::Number(n) => out.push_str(&es_number(*n).ok_or(CanonError::NonFinite)?),
        JsValue::String(s) => write_string(s, out),
        JsValue::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs1(item, out)?;
            }
            out.push(']');
        }
        JsValue::Object(o) => {
            let mut sorted: Vec<&(Vec<u16>, JsValue)> = o.entries.iter().collect();
            // Vec<u16> orders lexicographically by code unit: JS default sort.
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, val)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_jcs1(val, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

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

/// The array index a key denotes in V8's own-property order, if any:
/// canonical decimal of an integer in `0..=4294967294`.
fn array_index(key: &[u16]) -> Option<u32> {
    if key.is_empty() || key.len() > 10 || (key.len() > 1 && key[0] == u16::from(b'0')) {
        return None;
    }
    let mut n: u64 = 0;
    for &c in key {
        if !(u16::from(b'0')..=u16::from(b'9')).contains(&c) {
            return None;
        }
        n = n * 10 + u64::from(c - u16::from(b'0'));
    }
    if n <= 4_294_967_294 {
        u32::try_from(n).ok()
    } else {
        None
    }
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
        JsValue::Number(n) => out.push_str(&es_number(*n).unwrap_or_else(|| "null".into())),
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

/// `JSON.stringify` quoting of a UTF-16 string (ES2019 well-formed stringify:
/// lone surrogates escaped as lowercase `\udXXX`).
fn write_string(s: &[u16], out: &mut String) {
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

/// JavaScript `String(n)`: [`es_number`], or `NaN` / `Infinity` / `-Infinity`.
pub fn js_string_of_number(n: f64) -> String {
    es_number(n).unwrap_or_else(|| {
        if n.is_nan() {
            "NaN".into()
        } else if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    })
}

/// ECMAScript `Number::toString(n)` (radix 10); `None` for NaN/±Infinity.
pub fn es_number(n: f64) -> Option<String> {
    if !n.is_finite() {
        return None;
    }
    if n == 0.0 {
        return Some("0".into()); // also -0
    }
    // Safe integers (the common case: counts, ids, timestamps) print as
    // themselves; the tie check below is only needed for fractions and
    // large magnitudes.
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        return Some(format!("{}", n as i64));
    }
    let sign = if n < 0.0 { "-" } else { "" };
    // Rust's `{:e}` prints the shortest digit string that round-trips, picking
    // the closest one on ties — the digits ECMAScript asks for.
    let sci = format!("{:e}", n.abs());
    let (mantissa, exp) = sci.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let (digits, exp) = ties_to_even(n.abs(), digits, exp);
    let k = i32::try_from(digits.len()).ok()?;
    let pos = exp + 1; // value = 0.d1..dk × 10^pos
    let body = if k <= pos && pos <= 21 {
        format!("{digits}{}", "0".repeat((pos - k) as usize))
    } else if 0 < pos && pos <= 21 {
        let (a, b) = digits.split_at(pos as usize);
        format!("{a}.{b}")
    } else if -6 < pos && pos <= 0 {
        format!("0.{}{digits}", "0".repeat((-pos) as usize))
    } else {
        let e = pos - 1;
        let esign = if e < 0 { '-' } else { '+' };
        let (d1, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{d1}e{esign}{}", e.abs())
        } else {
            format!("{d1}.{rest}e{esign}{}", e.abs())
        }
    };
    Some(format!("{sign}{body}"))
}

/// ECMAScript breaks an exact tie between two shortest digit strings towards
/// the even last digit; Rust's shortest formatter may pick the odd one (RFC
/// 8785's `1424953923781206.25` → `…206.2`). Only an odd last digit can be
/// wrong, and only when the double's exact decimal expansion is the midpoint.
fn ties_to_even(a: f64, digits: String, exp: i32) -> (String, i32) {
    let last = digits.as_bytes()[digits.len() - 1];
    if last.is_multiple_of(2) {
        return (digits, exp);
    }
    // Exact expansion: every double's decimal expansion has < 800 significant
    // digits, so this precision prints it exactly (trailing zeros).
    let exact = format!("{a:.800e}");
    let Some((m, e)) = exact.split_once('e') else {
        return (digits, exp);
    };
    if e.parse::<i32>().ok() != Some(exp) {
        return (digits, exp);
    }
    let exact_digits: String = m.chars().filter(|c| *c != '.').collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    let k = digits.len();
    if exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return (digits, exp);
    }
    let (head, _) = exact_digits.split_at(k);
    let (cd, ce) = if head == digits {
        // m = D.5 → tie between D and D+1: take D+1 (even).
        let (inc, carry) = increment(&digits);
        (inc, exp + carry)
    } else {
        // m = (D-1).5 → tie between D-1 and D: take D-1 (even; no borrow,
        // the last digit is odd so at least 1).
        let mut d = digits.clone().into_bytes();
        d[k - 1] -= 1;
        (String::from_utf8(d).unwrap_or_default(), exp)
    };
    let cd = cd.trim_end_matches('0').to_owned();
    if cd.is_empty() {
        return (digits, exp);
    }
    let text = format!("{}.{}e{ce}", &cd[..1], &cd[1..]).replace(".e", "e");
    if text.parse::<f64>().ok() == Some(a) {
        (cd, ce)
    } else {
        (digits, exp)
    }
}

/// Decimal increment of a digit string, with the exponent carry (1 when `99`
/// became `100`).
fn increment(digits: &str) -> (String, i32) {
    let mut d = digits.as_bytes().to_vec();
    let mut i = d.len();
    loop {
        if i == 0 {
            d.insert(0, b'1');
            return (String::from_utf8(d).unwrap_or_default(), 1);
        }
        i -= 1;
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            return (String::from_utf8(d).unwrap_or_default(), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    fn jcs(text: &str) -> String {
        jcs1(&parse_str(text).unwrap()).unwrap()
    }

    #[test]
    fn serialization_vectors_of_the_golden_file() {
        let raw = include_str!("../tests/data/golden/expected.json");
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
                "{\n  \"1\": \"one\",\n  \"b\": {\n    \"x\": [\n      true,\n      null\n    ]\n  },\n  \"a\": \"\\n\"\n}",
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
    fn rfc8785_number_samples() {
        // RFC 8785 Appendix B (IEEE hex → expected) where it agrees with ES.
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, want) in cases {
            assert_eq!(es_number(f64::from_bits(*bits)).unwrap(), *want, "{bits:x}");
        }
        assert_eq!(es_number(f64::NAN), None);
        assert_eq!(es_number(f64::INFINITY), None);
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
        let cp = jcs1_serde(&serde_json::json!({"schemaVersion":1,"kind":"HarnessCheckpointV1"}))
            .unwrap();
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
        let v =
            parse_str(r#"{"b":0,"4294967295":1,"01":2,"-1":3,"4294967294":4,"0":5,"10":6,"2":7}"#)
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
    fn safe_integers_print_as_themselves() {
        for (n, want) in [
            (9_007_199_254_740_991.0, "9007199254740991"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (-42.0, "-42"),
            (1e15, "1000000000000000"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
        ] {
            assert_eq!(es_number(n).as_deref(), Some(want), "{n}");
        }
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
        let v =
            serde_json::json!({"\u{fb01}": 1, "\u{1f600}": 2, "\u{7f}\u{1}": "\u{0}\"\\\u{1f}"});
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
}
