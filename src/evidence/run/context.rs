//! The run result's `contextEvents`: the `system` lines the parser does not
//! special-case, carried into the JSON run result and never consulted.
//!
//! A long run carries megabytes of them (`thinking_tokens` is one line in
//! four), so none is parsed into a map unless it must be:
//! - in a large lean-loaded cassette, the line stays where the mapped file
//!   holds it ([`ContextData::Stored`]) and a report writes it straight
//!   from its stored text ([`flat_json_stored`]);
//! - otherwise a flat one (every value a scalar) becomes, as it is read,
//!   the JSON text a report copies as it is ([`ContextData::Json`]).
//!
//! Every form means the same fields: equality and every other reading go
//! through [`ContextData::fields`].

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::cassette::KeptToken;
use crate::js::json::{Cursor, NestedCursor, Tokens};

/// A `system` event the parser does not special-case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextEvent {
    pub subtype: String,
    pub data: ContextData,
}

/// A system event's fields other than `type` and `subtype`.
#[derive(Debug, Clone)]
pub enum ContextData {
    /// Parsed (the reference parser's form, and a line that is not flat).
    Fields(Map<String, Value>),
    /// The fields as JSON text: exactly what serde_json writes for their
    /// [`ContextData::Fields`] form (compact, in the line's order). Kept as
    /// written, not shrunk to fit: a shrink moves the text (one copy per
    /// line of a run that carries thousands) to save a few bytes.
    Json(String),
    /// The line's `events` token, kept where the mapped cassette holds it
    /// (a lean load's replay): read again, straight from its stored text,
    /// when the report is written, so the megabytes a long run carries are
    /// never copied.
    Stored(KeptToken),
    /// Not kept: the line was read for a verdict only
    /// ([`crate::evidence::read_line_for_verdict`]), where no fold consults
    /// these fields and no report writes them. Reads as no fields.
    Unkept,
}

impl ContextData {
    /// A carried line's data (`line`: a JSON object with string `type`
    /// and `subtype`): its JSON text when it is flat, else its fields.
    pub fn of_line(line: &str) -> ContextData {
        match flat_json(line) {
            Some(json) => ContextData::Json(json),
            None => ContextData::Fields(fields_of_line(line)),
        }
    }

    /// [`ContextData::of_line`] of the line stored as `stored` (a JSON
    /// string's inside that [`crate::js::json::unescape_into`] takes).
    pub fn of_stored(stored: &str) -> ContextData {
        match flat_json_stored(stored) {
            Some(json) => ContextData::Json(json),
            None => {
                let mut line = String::with_capacity(stored.len());
                crate::js::json::unescape_into(stored.as_bytes(), &mut line);
                ContextData::of_line(&line)
            }
        }
    }

    /// The fields (parsed on demand from [`ContextData::Json`] and
    /// [`ContextData::Stored`]).
    pub fn fields(&self) -> Cow<'_, Map<String, Value>> {
        match self {
            ContextData::Fields(m) => Cow::Borrowed(m),
            ContextData::Json(json) => Cow::Owned(serde_json::from_str(json).unwrap_or_default()),
            ContextData::Stored(token) => {
                // Parsed once (not first written as JSON text, then parsed).
                let mut line = String::new();
                crate::js::json::unescape_into(stored_inside(token).as_bytes(), &mut line);
                Cow::Owned(fields_of_line(&line))
            }
            ContextData::Unkept => Cow::Owned(Map::new()),
        }
    }

    /// Appends the fields' JSON text (what their serde form writes).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            ContextData::Json(json) => out.extend_from_slice(json.as_bytes()),
            ContextData::Stored(token)
                if flat_json_stored_into(stored_inside(token), out).is_some() => {}
            data => serde_json::to_writer(&mut *out, &*data.fields())?,
        }
        Ok(())
    }
}

/// A kept token's inside (its text without the quotes).
fn stored_inside(token: &KeptToken) -> &str {
    let text = token.text();
    text.get(1..text.len().saturating_sub(1))
        .unwrap_or_default()
}

/// A line's members but `type` and `subtype`, parsed (an unparsable line,
/// which the line views never let through, reads as no fields).
fn fields_of_line(line: &str) -> Map<String, Value> {
    let mut m = serde_json::from_str::<Map<String, Value>>(line).unwrap_or_default();
    m.shift_remove("type");
    m.shift_remove("subtype");
    m
}

impl ContextEvent {
    /// About how long [`ContextEvent::write_json`]'s text is (exactly, for
    /// a line kept as its JSON text and a subtype with nothing to escape).
    pub fn json_len_hint(&self) -> usize {
        let data = match &self.data {
            ContextData::Json(json) => json.len(),
            ContextData::Stored(token) => token.text().len(),
            _ => 64,
        };
        r#"{"subtype":"","data":}"#.len() + self.subtype.len() + data
    }

    /// Appends the event's JSON text (what its serde form writes).
    pub fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"subtype\":");
        crate::js::json::quote(&self.subtype, out);
        out.extend_from_slice(b",\"data\":");
        self.data.write_json(out)?;
        out.push(b'}');
        Ok(())
    }
}

impl PartialEq for ContextData {
    fn eq(&self, other: &Self) -> bool {
        self.fields() == other.fields()
    }
}

impl Serialize for ContextData {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        match self {
            // serde_json's raw text, which it writes as it is (and parses
            // when serialising into a `Value`).
            ContextData::Json(json) => serde_json::from_str::<&serde_json::value::RawValue>(json)
                .map_err(S::Error::custom)?
                .serialize(s),
            ContextData::Stored(_) => {
                let mut json = Vec::new();
                self.write_json(&mut json).map_err(S::Error::custom)?;
                let json = String::from_utf8(json).map_err(S::Error::custom)?;
                serde_json::value::RawValue::from_string(json)
                    .map_err(S::Error::custom)?
                    .serialize(s)
            }
            data => data.fields().serialize(s),
        }
    }
}

/// The JSON text of a flat line's fields, written as it is read: the one
/// writer behind both readers ([`flat_json`], [`flat_json_stored`]), which
/// settle the rules of keys and scalars in one place.
struct FlatWriter<'a, 'o> {
    out: &'o mut Vec<u8>,
    /// Where the object starts in `out`.
    start: usize,
    keys: Vec<&'a str>,
}

impl<'a, 'o> FlatWriter<'a, 'o> {
    fn new(out: &'o mut Vec<u8>) -> Self {
        let start = out.len();
        out.push(b'{');
        FlatWriter {
            out,
            start,
            keys: Vec::new(),
        }
    }

    /// A key (its text, which held no escape): whether its member is
    /// written (`type` and `subtype` are not); `None` for a key that
    /// repeats (the parsed map keeps the last value in the first place) or
    /// that serde_json reserves.
    fn key(&mut self, key: &'a str) -> Option<bool> {
        if key.starts_with('$') || self.keys.contains(&key) {
            return None;
        }
        self.keys.push(key);
        if key == "type" || key == "subtype" {
            return Some(false);
        }
        if self.out.len() > self.start + 1 {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        Some(true)
    }

    /// A number, `true`, `false` or `null`, as serde_json writes it: as
    /// spelled (it keeps a number's text), but an exponent, which it
    /// respells (`1E5` → `1e+5`), is refused.
    fn scalar(&mut self, text: &str, written: bool) -> Option<()> {
        if text.contains(['e', 'E']) && !matches!(text, "true" | "false") {
            return None;
        }
        if written {
            self.out.extend_from_slice(text.as_bytes());
        }
        Some(())
    }
}

/// The members of a carried line but `type` and `subtype`, as serde_json
/// writes them, when every value is a scalar and no key repeats; `None`
/// otherwise (or for a string the strict cursor leaves to others), and the
/// line is parsed ([`ContextData::of_line`]).
pub(super) fn flat_json(line: &str) -> Option<String> {
    let mut out = Vec::with_capacity(line.len());
    // Read by the strict cursor: anything it refuses (a key with an
    // escape, a `\u` escape) is the parser's.
    flat_object(
        Cursor::new(line),
        &mut out,
        |c| match c.string()? {
            (key, false) => Some(key),
            _ => None,
        },
        |c, out| {
            let (inner, escaped) = c.string()?;
            out.map_or(Some(()), |out| write_string(inner, escaped, out))
        },
    )?;
    // Whole keys and values of UTF-8 text, and ASCII punctuation.
    String::from_utf8(out).ok()
}

/// [`flat_json`] of the line stored as `stored` (a JSON string's inside,
/// as a cassette holds an `events` line): the same text, made from the
/// stored text without unescaping the line ([`NestedCursor`], which
/// refuses a `\u` escape and a string it could not write back exactly).
pub(super) fn flat_json_stored(stored: &str) -> Option<String> {
    let mut out = Vec::with_capacity(stored.len());
    flat_json_stored_into(stored, &mut out)?;
    String::from_utf8(out).ok()
}

/// [`flat_json_stored`], appended to `out` (left as it was on `None`).
fn flat_json_stored_into(stored: &str, out: &mut Vec<u8>) -> Option<()> {
    flat_object(
        NestedCursor::new(stored),
        out,
        |c| c.string()?.plain(),
        |c, out| {
            let value = c.string()?;
            if let Some(out) = out {
                value.write_json(out);
            }
            Some(())
        },
    )
}

/// The one reading of a flat object behind both readers, appended to
/// `out` (left as it was on `None`): `key` reads a key (`None` for one
/// that holds an escape), `string` a string value, which it writes when
/// given the output (`None`: one it leaves to the parser).
fn flat_object<'a, C: Tokens<'a>>(
    mut c: C,
    out: &mut Vec<u8>,
    key: impl Fn(&mut C) -> Option<&'a str>,
    string: impl Fn(&mut C, Option<&mut Vec<u8>>) -> Option<()>,
) -> Option<()> {
    let start = out.len();
    let written = (|| {
        let mut w = FlatWriter::new(out);
        if !c.eat(b'{') {
            return None;
        }
        let mut more = !c.eat(b'}');
        while more {
            let key = key(&mut c)?;
            if !c.eat(b':') {
                return None;
            }
            let written = w.key(key)?;
            match c.peek()? {
                b'"' => string(&mut c, written.then_some(&mut *w.out))?,
                b'{' | b'[' => return None,
                _ => w.scalar(c.value(0)?, written)?,
            }
            more = c.eat(b',');
            if !more && !c.eat(b'}') {
                return None;
            }
        }
        c.at_end().then(|| w.out.push(b'}'))
    })();
    if written.is_none() {
        out.truncate(start);
    }
    written
}

/// A string's inside as serde_json writes its text; `None` for one the
/// fast unescaper refuses.
fn write_string(inner: &str, escaped: bool, out: &mut Vec<u8>) -> Option<()> {
    if !escaped || escaped_as_serde_escapes(inner) {
        // Written as it is: unescaping and escaping again would give back
        // the same text.
        out.push(b'"');
        out.extend_from_slice(inner.as_bytes());
        out.push(b'"');
    } else {
        let mut text = String::with_capacity(inner.len());
        if !crate::js::json::unescape_into(inner.as_bytes(), &mut text) {
            return None;
        }
        crate::js::json::quote(&text, out);
    }
    Some(())
}

/// Whether a JSON string's inside spells every escape as serde_json writes
/// it (`\"`, `\\`, `\b` `\f` `\n` `\r` `\t`, and `\u00xx` in lowercase hex
/// for the other control characters) and escapes nothing else.
fn escaped_as_serde_escapes(inner: &str) -> bool {
    let bytes = inner.as_bytes();
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\\', &bytes[from..]).map(|i| from + i) {
        from = match bytes.get(at + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => at + 2,
            Some(b'u') => match bytes.get(at + 2..at + 6) {
                Some(
                    [
                        b'0',
                        b'0',
                        hi @ (b'0' | b'1'),
                        lo @ (b'0'..=b'9' | b'a'..=b'f'),
                    ],
                ) if !matches!((hi, lo), (b'0', b'8' | b'9' | b'a' | b'c' | b'd')) => at + 6,
                _ => return false,
            },
            _ => return false,
        };
    }
    true
}
