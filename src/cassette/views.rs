//! Typed views of the v12 cassette fields (cowork-harness
//! `schema/cassette.v12.json`). These are *views*: the document in
//! [`super::Cassette::doc`] stays the source of truth, so unknown fields are
//! never lost.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::js::coerce::Scalar;
use crate::js::json::Tokens;

/// `fingerprint`: the staleness tripwire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FingerprintRecord {
    /// Agent/app version the run was recorded against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// `"jcs1"` on v12; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_assets_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_sources: Option<Vec<String>>,
    /// `"git"` or `"raw"` (absent ⇒ raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `"skill"` when agent scoping was on (absent ⇒ off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_scope: Option<String>,
    /// `[[path, sha256], ...]` in walk order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sigs: Option<Vec<(String, String)>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sigs_omitted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_scope: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_hash: Option<String>,
    /// Gate-option label provenance (kept as JSON; checked by staleness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_provenance: Option<serde_json::Value>,
    /// v14: sha256 over the staged `workspace_fixture` (see
    /// `fingerprint::fixture`); written after every other member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_fixture_sig: Option<String>,
    /// v14: `[[path, sha256 (+x when owner-executable)], ...]` of the fixture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_fixture_file_sigs: Option<Vec<(String, String)>>,
}

/// One `artifacts[]` entry of the post-run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestEntry {
    /// Work-root-relative path (untrusted: check before joining).
    pub path: String,
    #[serde(default)]
    pub bytes: u64,
    /// Hex sha256 of the file; `""` for links and unreadable files.
    #[serde(default)]
    pub sha256: String,
    /// Inlined body (UTF-8 text, or base64 when `encoding == Base64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<BodyEncoding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_reason: Option<TruncationReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_kind: Option<LinkKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyEncoding {
    Utf8,
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncationReason {
    Size,
    Readonly,
    Unreadable,
    Input,
    /// v14: an untouched binary `workspace_fixture` file, recorded hash-only.
    Fixture,
}

impl TruncationReason {
    /// The wire name (`truncationReason`).
    pub fn parse(wire: &str) -> Option<TruncationReason> {
        serde_json::from_value(serde_json::Value::String(wire.to_owned())).ok()
    }

    /// Why the cassette holds no body, in the words `show`, `diff` and the
    /// report print: an upload or a read-only file is left out by design, not
    /// because it was large or broken.
    pub fn why_not_kept(self) -> &'static str {
        match self {
            TruncationReason::Input => {
                "an upload (inputs are never inlined; only its hash is kept)"
            }
            TruncationReason::Readonly => "a read-only file (never inlined; only its hash is kept)",
            TruncationReason::Size => "over the recording's inline cap (only its hash is kept)",
            TruncationReason::Unreadable => "unreadable when the run was recorded",
            TruncationReason::Fixture => {
                "an untouched binary workspace_fixture file (recorded hash-only; assert on what \
                 the run writes)"
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Symlink,
    Hardlink,
}

/// `preRunOrigin`: how trustworthy the pre-run baseline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreRunOrigin {
    LocalWalk,
    RemoteUnavailable,
    LocalUnreadable,
}

/// `folderPrefixMap[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FolderPrefix {
    pub from: String,
    pub mount: String,
}

/// `environment`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_binary_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_image: Option<serde_json::Value>,
}

/// `authoring`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authoring {
    #[serde(default)]
    pub non_deterministic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// One `timeline` entry as its folds read it (`evidence::timeline`): the
/// keys they consult, each as recorded (any JSON value). Keys nobody reads
/// are skipped when a timeline is parsed ([`TimelineEntry::parse_all`]), so
/// a 37,000-entry timeline costs a fraction of its `Value` tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimelineEntry {
    /// The value of each of [`TimelineEntry::KEYS`], in that order.
    values: [Option<Recorded>; 6],
}

/// A recorded timeline value, compact: the values read are scalars, and a
/// `Value` slot is 72 bytes (six per entry made a 37,000-entry timeline
/// 16 MB of slots); this is 32. Anything else is kept as its `Value`.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    Null,
    Bool(bool),
    /// An integer spelt as serde_json spells its value (no `-0`, within
    /// `i64`): kept as the value, with no text to allocate (a timeline's
    /// `seq` and `ts` are these, two per entry).
    Integer(i64),
    /// Any other number, as recorded (serde_json keeps its spelling).
    Number(serde_json::Number),
    String(Box<str>),
    Other(Box<serde_json::Value>),
}

impl From<serde_json::Value> for Recorded {
    fn from(v: serde_json::Value) -> Self {
        use serde_json::Value;
        match v {
            Value::Null => Recorded::Null,
            Value::Bool(b) => Recorded::Bool(b),
            Value::Number(n) => match n.as_i64() {
                Some(i) if n.to_string() == i.to_string() => Recorded::Integer(i),
                _ => Recorded::Number(n),
            },
            Value::String(s) => Recorded::String(s.into_boxed_str()),
            other => Recorded::Other(Box::new(other)),
        }
    }
}

impl Recorded {
    /// The string, when it is one (borrowed).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Recorded::String(s) => Some(s),
            _ => None,
        }
    }

    /// The scalar it is (`None` for an object or an array).
    pub fn scalar(&self) -> Option<Scalar<'_>> {
        match self {
            Recorded::Null => Some(Scalar::Null),
            Recorded::Bool(b) => Some(Scalar::Bool(*b)),
            Recorded::Integer(_) | Recorded::Number(_) => {
                Some(Scalar::Number(self.number().unwrap_or(f64::NAN)))
            }
            Recorded::String(s) => Some(Scalar::String(s)),
            Recorded::Other(v) => Scalar::of(v),
        }
    }

    /// A number's value as a double (`None` for anything else).
    pub fn number(&self) -> Option<f64> {
        match self {
            // As serde_json reads the integer's text: the nearest double.
            Recorded::Integer(i) => Some(*i as f64),
            Recorded::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        self.scalar().is_none_or(Scalar::truthy)
    }

    /// JavaScript `Number(v)`.
    pub fn to_number(&self) -> f64 {
        match self {
            Recorded::Other(v) => crate::js::coerce::js_to_number(Some(v)),
            scalar => scalar.scalar().map_or(f64::NAN, Scalar::to_number),
        }
    }

    /// The value as `serde_json` holds it (a scalar is rebuilt).
    pub fn to_value(&self) -> Cow<'_, serde_json::Value> {
        use serde_json::Value;
        match self {
            Recorded::Null => Cow::Owned(Value::Null),
            Recorded::Bool(b) => Cow::Owned(Value::Bool(*b)),
            Recorded::Integer(i) => Cow::Owned(Value::Number((*i).into())),
            Recorded::Number(n) => Cow::Owned(Value::Number(n.clone())),
            Recorded::String(s) => Cow::Owned(Value::String(s.to_string())),
            Recorded::Other(v) => Cow::Borrowed(v),
        }
    }
}

impl TimelineEntry {
    /// The keys an entry is read by.
    const KEYS: [&'static str; 6] = ["type", "toolUseId", "ts", "name", "skillScope", "seq"];

    /// Where `key` is in [`TimelineEntry::KEYS`]: a `match`, which
    /// compares by length first (a timeline's every key is looked up).
    fn index(key: &str) -> Option<usize> {
        let i = match key {
            "type" => 0,
            "toolUseId" => 1,
            "ts" => 2,
            "name" => 3,
            "skillScope" => 4,
            "seq" => 5,
            _ => return None,
        };
        debug_assert_eq!(Self::KEYS[i], key);
        Some(i)
    }

    fn slot(&mut self, key: &str) -> Option<&mut Option<Recorded>> {
        Some(&mut self.values[Self::index(key)?])
    }

    /// The value of `key` (one of the keys an entry is read by), as
    /// `Map::get` finds it.
    pub fn get(&self, key: &str) -> Option<&Recorded> {
        self.values[Self::index(key)?].as_ref()
    }

    /// [`TimelineEntry::get`] as a `serde_json` value.
    pub fn value(&self, key: &str) -> Option<Cow<'_, serde_json::Value>> {
        self.get(key).map(Recorded::to_value)
    }

    /// An entry of a parsed timeline; `None` for a non-object, which no
    /// fold reads.
    pub fn of(v: &serde_json::Value) -> Option<TimelineEntry> {
        let obj = v.as_object()?;
        let mut e = TimelineEntry::default();
        for key in Self::KEYS {
            if let (Some(slot), Some(v)) = (e.slot(key), obj.get(key)) {
                *slot = Some(Recorded::from(v.clone()));
            }
        }
        Some(e)
    }

    /// The object entries of a `timeline` array's JSON text, each read as
    /// [`TimelineEntry::of`] reads its parsed value (a repeated key keeps
    /// its last value, as `JSON.parse` does); `None` when the text is not an
    /// array or does not parse.
    pub fn parse_all(text: &str) -> Option<Vec<TimelineEntry>> {
        // Within serde_json's nesting limit (128), which decides deeper texts.
        match Self::read_leading(text, 100) {
            // Only JSON's whitespace after it (not all of ASCII's).
            Some((entries, len))
                if text.as_bytes()[len..]
                    .iter()
                    .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) =>
            {
                Some(entries)
            }
            _ => Self::parse_all_serde(text),
        }
    }

    /// The entries of the `timeline` array `text` starts with, and the
    /// array's length in bytes, read by [`Cursor`](crate::js::json::Cursor): about twice as
    /// fast as serde's visitors, and nothing is built for the keys
    /// nobody reads. `None` for any array it does not take (a `\u` escape,
    /// a key with an escape, more than `max_depth` arrays and objects inside
    /// each other, the array's own counted, or invalid JSON), which
    /// [`TimelineEntry::parse_all`]'s reference reading decides.
    pub fn read_leading(text: &str, max_depth: usize) -> Option<(Vec<TimelineEntry>, usize)> {
        let mut reader = TimelineReader::new(text, max_depth)?;
        let mut out = Vec::with_capacity(most_entries(text));
        out.extend(&mut reader);
        Some((out, reader.end()?))
    }

    /// One object entry, at its `{`, whose values may nest `max_depth` deep.
    fn read_entry(c: &mut crate::js::json::Cursor<'_>, max_depth: usize) -> Option<TimelineEntry> {
        let mut e = TimelineEntry::default();
        c.eat(b'{');
        if c.eat(b'}') {
            return Some(e);
        }
        loop {
            let (key, escaped) = c.string()?;
            // serde_json reads a first key of `$serde_json::private::Number`
            // as a number: the reference path decides those.
            if escaped || key.starts_with('$') || !c.eat(b':') {
                return None;
            }
            match e.slot(key) {
                Some(slot) => *slot = Some(Self::read_value(c, max_depth)?),
                None => {
                    c.value(max_depth)?;
                }
            }
            if c.eat(b'}') {
                return Some(e);
            }
            if !c.eat(b',') {
                return None;
            }
        }
    }

    /// A read key's value, as serde_json would have made it.
    fn read_value(c: &mut crate::js::json::Cursor<'_>, max_depth: usize) -> Option<Recorded> {
        Some(match c.peek()? {
            b'"' => {
                let (inner, escaped) = c.string()?;
                if escaped {
                    let mut text = String::new();
                    if !crate::js::json::unescape_into(inner.as_bytes(), &mut text) {
                        return None;
                    }
                    Recorded::String(text.into_boxed_str())
                } else {
                    Recorded::String(inner.into())
                }
            }
            b'{' | b'[' => {
                let text = c.value(max_depth)?;
                Recorded::from(serde_json::from_str::<serde_json::Value>(text).ok()?)
            }
            b't' if c.literal("true") => Recorded::Bool(true),
            b'f' if c.literal("false") => Recorded::Bool(false),
            b'n' if c.literal("null") => Recorded::Null,
            _ => {
                let spelling = c.number()?;
                // An integer (the cursor takes no leading zero) other than
                // `-0` is spelt as serde_json spells its value; anything
                // else keeps its spelling through serde_json's own reading.
                match spelling.parse::<i64>() {
                    Ok(n) if spelling != "-0" => Recorded::Integer(n),
                    _ => Recorded::Number(serde_json::from_str(spelling).ok()?),
                }
            }
        })
    }

    /// The reference reading of [`TimelineEntry::parse_all`], by serde's
    /// visitors.
    pub(crate) fn parse_all_serde(text: &str) -> Option<Vec<TimelineEntry>> {
        use serde::de;
        let mut de = serde_json::Deserializer::from_str(text);
        let out = Vec::with_capacity(most_entries(text));
        let entries = de::Deserializer::deserialize_seq(&mut de, by_serde::Entries(out)).ok()?;
        de.end().ok()?;
        Some(entries)
    }
}

/// The serde visitors of [`TimelineEntry::parse_all_serde`]: the reference
/// reading the hand-written cursor is checked against.
mod by_serde {
    use std::borrow::Cow;

    use serde::Deserialize;
    use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

    use super::{Recorded, TimelineEntry};

    /// The entries, into the list given.
    pub(super) struct Entries(pub(super) Vec<TimelineEntry>);
    impl<'de> Visitor<'de> for Entries {
        type Value = Vec<TimelineEntry>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a timeline array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = self.0;
            while let Some(entry) = seq.next_element::<MaybeEntry>()? {
                out.extend(entry.0);
            }
            Ok(out)
        }
    }
    /// A key, borrowed from the text unless it holds an escape (serde's
    /// own `Cow<str>` always copies: a 37,000-entry timeline has
    /// a quarter of a million keys).
    struct Key<'de>(Cow<'de, str>);
    impl<'de> Deserialize<'de> for Key<'de> {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl<'de> Visitor<'de> for KeyVisitor {
                type Value = Key<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a key")
                }
                fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                    Ok(Key(Cow::Borrowed(s)))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                    Ok(Key(Cow::Owned(s.to_owned())))
                }
            }
            d.deserialize_str(KeyVisitor)
        }
    }
    struct MaybeEntry(Option<TimelineEntry>);
    impl<'de> Deserialize<'de> for MaybeEntry {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(EntryVisitor)
        }
    }
    struct EntryVisitor;
    impl<'de> Visitor<'de> for EntryVisitor {
        type Value = MaybeEntry;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a timeline entry")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeEntry, A::Error> {
            let mut e = TimelineEntry::default();
            let mut first = true;
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                // serde_json hands a number over as a one-key map
                // (`arbitrary_precision`): not an object entry.
                if std::mem::take(&mut first) && key == "$serde_json::private::Number" {
                    map.next_value::<IgnoredAny>()?;
                    return Ok(MaybeEntry(None));
                }
                match e.slot(&key) {
                    Some(slot) => {
                        *slot = Some(Recorded::from(map.next_value::<serde_json::Value>()?))
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(MaybeEntry(Some(e)))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeEntry, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(MaybeEntry(None))
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
        fn visit_unit<E: de::Error>(self) -> Result<MaybeEntry, E> {
            Ok(MaybeEntry(None))
        }
    }
}

/// At most how many entries a timeline text holds: each entry an object
/// holds ends in a `}` (a hostile text of braces reserves no more than the
/// cap; past it the list grows). The list is allocated once: growing it by
/// doubling copied and faulted in its megabytes again and again.
/// The object entries of the `timeline` array a text starts with, read one
/// at a time as [`TimelineEntry::read_leading`] reads them all: a fold
/// that takes them as they come keeps none of them (a 37,000-entry
/// timeline's entries are megabytes). The entries read are only the
/// array's when [`TimelineReader::end`] then says where it ended.
pub struct TimelineReader<'t> {
    c: crate::js::json::Cursor<'t>,
    /// How deep an item's values may nest (the array's own level taken).
    item_depth: usize,
    state: ReaderState,
}

#[derive(Clone, Copy, PartialEq)]
enum ReaderState {
    /// At the next item.
    Items,
    /// Past the closing `]`.
    Done,
    /// At text the reader does not take.
    Refused,
}

impl<'t> TimelineReader<'t> {
    /// A reader of the array `text` starts with, whose items may nest
    /// `max_depth` deep counting the array itself; `None` when it does
    /// not start with `[`.
    pub fn new(text: &'t str, max_depth: usize) -> Option<Self> {
        use crate::js::json::Cursor;
        let item_depth = max_depth.checked_sub(1)?;
        let mut c = Cursor::new(text);
        if !c.eat(b'[') {
            return None;
        }
        let state = if c.eat(b']') {
            ReaderState::Done
        } else {
            ReaderState::Items
        };
        Some(TimelineReader {
            c,
            item_depth,
            state,
        })
    }

    /// The array's length in bytes, once every item has been read and the
    /// reader took all of them; `None` otherwise.
    pub fn end(&self) -> Option<usize> {
        (self.state == ReaderState::Done).then(|| self.c.offset())
    }

    /// The item at the cursor (`Some(None)`: one that is not an object),
    /// and the `,` or `]` after it.
    fn item(&mut self) -> Option<Option<TimelineEntry>> {
        let entry = if self.c.peek() == Some(b'{') {
            Some(TimelineEntry::read_entry(
                &mut self.c,
                self.item_depth.checked_sub(1)?,
            )?)
        } else {
            self.c.value(self.item_depth)?;
            None
        };
        if self.c.eat(b']') {
            self.state = ReaderState::Done;
        } else if !self.c.eat(b',') {
            return None;
        }
        Some(entry)
    }
}

impl Iterator for TimelineReader<'_> {
    type Item = TimelineEntry;

    fn next(&mut self) -> Option<TimelineEntry> {
        while self.state == ReaderState::Items {
            match self.item() {
                Some(Some(entry)) => return Some(entry),
                Some(None) => {}
                None => self.state = ReaderState::Refused,
            }
        }
        None
    }
}

fn most_entries(text: &str) -> usize {
    const RESERVE_CAP: usize = 1 << 18;
    memchr::memchr_iter(b'}', text.as_bytes())
        .take(RESERVE_CAP)
        .count()
}

#[cfg(test)]
mod timeline_entry_tests {
    use super::{TimelineEntry, TimelineReader};

    /// An integer is kept as its value and spelt back as recorded; `-0`,
    /// a fraction and an integer past `i64` keep their spelling; all read
    /// as the double serde_json reads.
    #[test]
    fn numbers_keep_their_spelling_and_value() {
        let text = r#"[{"seq": 9007199254740993, "ts": -5}, {"seq": -0, "ts": 1.50}, {"seq": 12345678901234567890}]"#;
        let entries = TimelineEntry::parse_all(text).unwrap();
        let spelt: Vec<String> = entries
            .iter()
            .flat_map(|e| ["seq", "ts"].map(|k| e.value(k).map(|v| v.to_string())))
            .flatten()
            .collect();
        assert_eq!(
            spelt,
            [
                "9007199254740993",
                "-5",
                "-0",
                "1.50",
                "12345678901234567890"
            ]
        );
        let numbers: Vec<f64> = entries
            .iter()
            .flat_map(|e| ["seq", "ts"].map(|k| e.get(k).and_then(|v| v.number())))
            .flatten()
            .collect();
        let want: Vec<f64> = spelt.iter().map(|s| s.parse().unwrap()).collect();
        assert_eq!(numbers, want);
        assert!(matches!(
            entries[0].get("seq"),
            Some(super::Recorded::Integer(_))
        ));
        assert!(!matches!(
            entries[1].get("seq"),
            Some(super::Recorded::Integer(_))
        ));
    }

    /// The reader gives the entries one at a time, and says where the
    /// array ended only when it took all of it: a fold of the entries read
    /// before a refusal is not the array's.
    #[test]
    fn the_reader_ends_only_past_an_array_it_took_whole() {
        let text = r#"[{"type": "a"}, 7, {"type": "b"}] tail"#;
        let mut reader = TimelineReader::new(text, 8).unwrap();
        assert_eq!(reader.end(), None, "not yet read");
        let types: Vec<_> = reader
            .by_ref()
            .map(|e| e.get("type").and_then(|t| t.as_str()).map(str::to_owned))
            .collect();
        assert_eq!(types, [Some("a".to_owned()), Some("b".to_owned())]);
        assert_eq!(reader.end(), Some(text.len() - " tail".len()));
        assert_eq!(TimelineReader::new("[]", 8).unwrap().end(), Some(2));
        assert!(TimelineReader::new("{}", 8).is_none());
        for refused in [
            r#"[{"type": "a"}, {"type": "\u0062"}]"#,
            r#"[{"type": "a"},]"#,
            "[[[[1]]]]",
        ] {
            let mut reader = TimelineReader::new(refused, 3).unwrap();
            assert!(reader.by_ref().count() <= 1, "{refused}");
            assert_eq!(reader.end(), None, "{refused}");
            assert_eq!(reader.next(), None, "stays refused: {refused}");
        }
    }

    /// Reading a timeline's text straight into entries agrees with reading
    /// its parsed value: non-objects dropped (numbers too, which serde_json
    /// hands over as maps), a repeated key's last value kept, any value
    /// shape in a read key, unread keys of any depth skipped.
    #[test]
    fn text_and_value_readings_agree() {
        let texts = [
            r#"[1, 1.50, -0, 1e400, "s", null, true, [1, {"type": "x"}], {}]"#,
            r#"[{"type": "tool_use", "type": "tool_result", "ts": 1, "ts": "2"}]"#,
            r#"[{"skillScope": {"a": [1, 2]}, "seq": 1.0, "name": null, "line": {"deep": [[[]]]}}]"#,
            r#"[{"toolUseId": "t\u00e9", "extra": "\ud83d\ude00", "name": ["Bash"]}]"#,
            r#"[{"seq": 9007199254740993, "ts": -5}, {"seq": 0, "ts": -0}, {"seq": 12345678901234567890, "ts": 1.0}]"#,
        ];
        for text in texts {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let of_values: Vec<TimelineEntry> = value
                .as_array()
                .unwrap()
                .iter()
                .filter_map(TimelineEntry::of)
                .collect();
            assert_eq!(TimelineEntry::parse_all(text), Some(of_values), "{text}");
        }
        let e = &TimelineEntry::parse_all(texts[1]).unwrap()[0];
        assert_eq!(
            e.value("type").as_deref(),
            Some(&serde_json::json!("tool_result"))
        );
        assert_eq!(e.value("ts").as_deref(), Some(&serde_json::json!("2")));
        assert_eq!(e.value("line"), None, "an unread key is not kept");
        // Every shape reads back as the value it was.
        let e = &TimelineEntry::parse_all(texts[2]).unwrap()[0];
        assert_eq!(
            e.value("skillScope").as_deref(),
            Some(&serde_json::json!({"a": [1, 2]}))
        );
        assert_eq!(e.value("seq").unwrap().to_string(), "1.0", "spelling kept");
        assert_eq!(e.value("name").as_deref(), Some(&serde_json::Value::Null));
        assert_eq!(TimelineEntry::parse_all(r#"{"type": "x"}"#), None);
        assert_eq!(TimelineEntry::parse_all("[1,"), None);
    }

    /// The cursor's reading takes the texts writers write and reads them as
    /// serde's visitors do: numbers keep their spelling (`-0`, `1.50`,
    /// integers past `i64`), escapes are read, any shape is kept in a read
    /// key, and the array's own length is what it reports.
    #[test]
    fn the_cursor_reads_what_serde_reads() {
        let texts = [
            "[]",
            r#"[{}, 3, "s", [], null, {"type": "tool_use"}]"#,
            r#"[{"type": "a\nb\"c", "ts": -0, "seq": 1.50, "name": 1e5, "toolUseId": -12}]"#,
            r#"[{"ts": 99999999999999999999, "seq": -9223372036854775808, "name": 0}]"#,
            r#"[{"skillScope": [1, {"a": null}], "x": {"y": [true, false, null]}, "seq": true}]"#,
            "[\n  {\n    \"type\": \"t\",\n    \"type\": \"u\"\n  }\n]",
        ];
        for text in texts {
            let (entries, len) = TimelineEntry::read_leading(text, 100)
                .unwrap_or_else(|| panic!("the cursor takes {text}"));
            assert_eq!(len, text.len(), "{text}");
            assert_eq!(
                Some(entries),
                TimelineEntry::parse_all_serde(text),
                "{text}"
            );
        }
        let e = &TimelineEntry::read_leading(texts[2], 100).unwrap().0[0];
        assert_eq!(e.value("ts").unwrap().to_string(), "-0");
        assert_eq!(e.value("seq").unwrap().to_string(), "1.50");
        assert_eq!(
            e.get("type").and_then(super::Recorded::as_str),
            Some("a\nb\"c")
        );
        // What it leaves to serde_json: escapes it does not take, keys with
        // escapes, serde_json's reserved key, nesting past the limit given.
        for text in [
            r#"[{"type": "\u00e9"}]"#,
            r#"[{"t\u0079pe": "x"}]"#,
            r#"[{"ty\npe": "x"}]"#,
            r#"[{"$serde_json::private::Number": "1"}]"#,
        ] {
            assert_eq!(TimelineEntry::read_leading(text, 100), None, "{text}");
        }
        assert!(TimelineEntry::read_leading(r#"[{"seq": [[1]]}]"#, 4).is_some());
        assert_eq!(TimelineEntry::read_leading(r#"[{"seq": [[1]]}]"#, 3), None);
        // Text after the array is not its business, but `parse_all`'s: only
        // JSON's whitespace may follow.
        assert_eq!(
            TimelineEntry::read_leading("[1] ,", 100).map(|r| r.1),
            Some(3)
        );
        assert_eq!(
            TimelineEntry::parse_all("[{}] \t\r\n").map(|e| e.len()),
            Some(1)
        );
        assert_eq!(TimelineEntry::parse_all("[{}]\u{c}"), None);
        assert_eq!(TimelineEntry::parse_all("[{}] 1"), None);
    }
}
