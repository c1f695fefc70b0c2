//! `JSON.parse`: the parser, the lone-surrogate rewrite serde_json needs, and
//! V8's wording of a failure.

use std::collections::HashMap;

use super::{JsObject, JsValue, MAX_DEPTH};

/// Why a text is not JSON (what `JSON.parse` would throw).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {what}")]
pub struct ParseError {
    pub offset: usize,
    pub what: &'static str,
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

/// `JSON.parse`'s (V8, Node 22) message for `text` that failed to parse, for
/// the failures whose V8 wording is derivable without V8's parser: an empty
/// document and a document whose first token cannot start a JSON value (a
/// text or Markdown file read as JSON). Other failures keep `fallback`.
pub fn v8_parse_error(text: &str, fallback: &str) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let is_ws = |u: u16| matches!(u, 0x20 | 0x09 | 0x0a | 0x0d);
    let Some(pos) = units.iter().position(|u| !is_ws(*u)) else {
        return "Unexpected end of JSON input".to_owned();
    };
    let first = char::from_u32(u32::from(units[pos]));
    // A `t`/`f`/`n` start must spell its literal: V8 reports the first unit
    // that departs from it (or the end of input).
    let literal = match first {
        Some('t') => Some("true"),
        Some('f') => Some("false"),
        Some('n') => Some("null"),
        _ => None,
    };
    let mut pos = pos;
    if let Some(word) = literal {
        let word: Vec<u16> = word.encode_utf16().collect();
        match word
            .iter()
            .enumerate()
            .find(|(i, w)| units.get(pos + i) != Some(w))
        {
            None => return fallback.to_owned(),
            Some((i, _)) if pos + i >= units.len() => {
                return "Unexpected end of JSON input".to_owned();
            }
            Some((i, _)) => pos += i,
        }
    } else if first.is_some_and(|c| matches!(c, '{' | '[' | '"' | '-' | '0'..='9')) {
        return fallback.to_owned();
    }
    let token = String::from_utf16_lossy(&units[pos..pos + 1]);
    // V8 quotes the whole source when it is short, else a window of 10 units
    // either side of the token, marking each cut with `...`.
    const CONTEXT: usize = 10;
    if units.len() < 2 * CONTEXT + 1 {
        return format!("Unexpected token '{token}', \"{text}\" is not valid JSON");
    }
    let start = pos.saturating_sub(CONTEXT);
    let end = (pos + CONTEXT).min(units.len());
    let window = String::from_utf16_lossy(&units[start..end]);
    let before = if start > 0 { "..." } else { "" };
    let after = if end < units.len() { "..." } else { "" };
    format!("Unexpected token '{token}', {before}\"{window}\"{after} is not valid JSON")
}
