//! `JSON.parse` / `JSON.stringify` as ECMAScript defines them, and `jcs1`, the
//! canonical form digests are taken of (docs/spec/fingerprint.md §2). The one home
//! of the JSON serialisation rules that digests and frozen texts depend on.
//!
//! Everything works on [`JsValue`], a JSON value as `JSON.parse` holds it:
//! numbers are IEEE doubles, strings are UTF-16 code units (so lone surrogates
//! survive), objects keep first-insertion order with last-value-wins
//! duplicates.
//!
//! * [`parse()`] / [`parse_str`]: that lenient `JSON.parse` (lossy UTF-8
//!   decode, JS whitespace, BOM/NaN/comments rejected); [`from_serde`] adapts
//!   an already-parsed `serde_json::Value` (its number text is re-parsed to a
//!   double, never kept as an integer); [`v8_parse_error`] words a failure as
//!   V8 does.
//! * [`jcs1`]: keys sorted by UTF-16 code units, `Number::toString`,
//!   `JSON.stringify` string escaping; a non-finite number is an error. This
//!   is NOT RFC 8785: duplicates and lone surrogates are accepted (as
//!   upstream).
//! * [`legacy`]: `JSON.stringify` with V8 own-property order (array-index
//!   keys first, ascending; then insertion order); a non-finite number prints
//!   `null`.
//! * [`quote`] / [`escape`]: a string as JSON text (`JSON.stringify`'s
//!   escaping, which is serde_json's): the writer of hand-made JSON.
//! * [`unescape_into`]: a JSON string's inside to its text, fast and strict
//!   (anything unusual is refused for a reference path to decide): how
//!   reel reads strings in bulk.
//! * [`Cursor`]: a strict token reader that skips what it does not keep
//!   (a timeline's tens of thousands of small objects); [`NestedCursor`]
//!   the same over JSON held inside a JSON string, read as stored (a
//!   cassette's `events` lines), both [`Tokens`].
//!
//! Numbers are spelt by [`crate::js::number`]. This module hashes nothing and
//! knows nothing of manifests (that is `fingerprint`); it only turns values
//! into the exact bytes upstream hashed.

mod block;
mod cursor;
mod jcs1;
mod nested;
mod parse;
mod stringify;
#[cfg(test)]
mod tests;
mod unescape;

pub use cursor::{Cursor, Tokens};
pub use jcs1::{CanonError, jcs1, jcs1_serde, jcs1_serde_into};
pub use nested::{NestedCursor, NestedStr};
pub use parse::{ParseError, parse, parse_str, replace_lone_surrogate_escapes, v8_parse_error};
pub use stringify::{escape, legacy, legacy_indented, legacy_serde, quote};
pub use unescape::unescape_into;

/// Maximum nesting depth [`parse()`] accepts. V8 accepts deeper documents, but a
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
