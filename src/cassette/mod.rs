//! The cassette (v9–v16): model, load pipeline, loss-free write.
//!
//! A cassette is kept as its parsed JSON document ([`Cassette::doc`], key order
//! and number spellings preserved) plus typed views over it ([`views`]). The
//! document is the source of truth, so fields reel does not know round-trip
//! untouched and `events` / `controlOut` stay the raw line strings they were
//! recorded as. Writing goes through [`write`](mod@write) (2-space indent, no trailing
//! newline: the bytes cowork-harness writes) and [`crate::atomic`].
//!
//! Entry points: [`Cassette::load`] (a file), [`Cassette::from_bytes`] and
//! [`Cassette::from_doc`] (in memory) all run the one pipeline in [`load`];
//! [`Cassette::to_json_pretty`] / [`Cassette::save`] write
//! `JSON.stringify(doc, null, 2)` bytes; [`write::WriteStyle`] reproduces a
//! file re-dumped by Python (`\uxxxx` escapes, final newline) when a caller
//! wants to rewrite such a file without a spurious diff. Errors are
//! [`LoadError`] (Display: `<file>: <cowork-harness message>`, plus
//! [`LoadError::json_path`] and [`LoadError::hint`]) and [`SaveError`].
//!
//! This module does not judge a recording (that is `assert`/`replay`) nor the
//! skill tree (that is `fingerprint`); it only guarantees that what it hands
//! out is a structurally valid, supported cassette.
//!
//! Files: `load` (spec order: JSON, shape, version floor and ceiling,
//! hash-format epoch, strict `assert:` keys), `lean`, `write` (the
//! `JSON.stringify(…, 2)` writer) and `views` (typed views; `TimelineEntry`,
//! the keys the timeline folds read, parsed straight from a lean cassette's
//! text). Strict `assert:` keys are checked through the `KeyCheck` the caller
//! hands in, so this module imports nothing from `assert`; `assert::loading`
//! supplies the catalog's as `Cassette::load` and friends.
//!
//! The lean load (`lean`), which replay reads through: the file is mapped
//! read-only and `events` kept as JSON string tokens in it. The scan walks the
//! top-level object and has serde_json read each member, except an `events`
//! array laid out one item per line (as `JSON.stringify(…, 2)` writes it),
//! whose items are found by `memchr` and checked as JSON strings by the reader
//! that reads them (straight from the stored token where it can,
//! `ReadLines::read_stored`; else by unescaping them). `load_lean_reading`
//! queues each batch of lines for the pool as its scan passes them (read oldest
//! first; with 8 waiting, the scan reads one itself) and folds the lines read,
//! in order, as they come, on the `controlOut` guessed from where
//! `JSON.stringify(…, 2)` writes it (counted only if the scan finds the same;
//! else the full loader), so scan, reading and re-drive overlap. Pages go back
//! once read and fault back in from the file if read again. `timeline` is kept
//! as text until read, except that a JSON replay has it read (`TimelineReader`,
//! one entry at a time, none kept) and folded on the pool from load start, at
//! the array found from the end of the file (kept only if the scan finds the
//! timeline at the same bytes, which it then steps over). Anything unusual goes
//! through the full pipeline, so errors are the full loader's.

mod lean;
pub mod load;
pub mod views;
pub mod write;

pub use lean::{EventLine, KEPT_FILE_MIN, KeptToken, StoredToken};
pub use load::{AssertionIssue, LoadError, MAX_CASSETTE_BYTES, ShapeIssue};
pub use views::*;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Newest format this build reads (its ceiling; a newer stamp is refused as
/// too new). What a write stamps is the lowest version its scenario needs
/// (`assert::stamp::required_version`), never this.
pub const CASSETTE_VERSION: u64 = 16;
/// Read floor: older (or unstamped) cassettes are refused.
pub const MIN_SUPPORTED_CASSETTE_VERSION: u64 = 9;
/// Last version that changed the digest algorithms (`hashFormat: "jcs1"`).
pub const HASH_FORMAT_EPOCH: u64 = 12;
/// The `fingerprint.hashFormat` value of the current epoch.
pub const HASH_FORMAT_JCS1: &str = "jcs1";

/// `$schema` URL stamped into a cassette of version `v`.
pub fn schema_url(v: u64) -> String {
    format!(
        "https://raw.githubusercontent.com/yaniv-golan/cowork-harness/main/schema/cassette.v{v}.json"
    )
}

/// The strict `assert:` step of the load pipeline, handed to the loader by
/// the layer that knows the keys (`assert::catalog::KEY_CHECK`; its
/// `Cassette::load` family passes it), so this format module depends on
/// nothing above it.
#[derive(Clone, Copy)]
pub struct KeyCheck {
    /// Refuses one item: an unknown key or a parameter of the wrong shape,
    /// with the reason.
    pub validate: fn(&Value) -> Result<(), String>,
    /// Whether a key name is known at all.
    pub known: fn(&str) -> bool,
}

/// A loaded cassette.
#[derive(Debug, Clone)]
pub struct Cassette {
    /// The path it was loaded from (as given by the user).
    pub path: PathBuf,
    /// The whole document, loss-free. Mutate it only through methods that
    /// keep the cowork-harness key order.
    pub doc: Map<String, Value>,
    /// `cassetteVersion` (absent ⇒ 0, which the loader refuses).
    pub version: u64,
    /// Warnings raised while loading (e.g. tolerated assertions of a future
    /// cassette); the caller prints them.
    pub load_warnings: Vec<String>,
    /// Set by [`Cassette::load_lean`]: `events` and `timeline` kept as text
    /// (the document holds empty arrays in their place).
    raw: Option<Box<lean::RawParts>>,
}

/// Writing a cassette failed.
#[derive(Debug, thiserror::Error)]
#[error("write cassette `{}`: {source}", path.display())]
pub struct SaveError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl From<SaveError> for crate::Error {
    fn from(e: SaveError) -> Self {
        crate::Error::usage(e.to_string()).with_hint(
            "check that the directory exists and is writable; the previous file was left intact",
        )
    }
}

impl Cassette {
    /// Loads and validates the cassette at `path` (docs/spec/replay.md §2.3; see
    /// [`load`] for the pipeline and what is refused). Tolerated problems of a
    /// future-version cassette are in [`Cassette::load_warnings`].
    pub fn load_with(path: &Path, keys: &KeyCheck) -> Result<Cassette, LoadError> {
        let bytes = load::read_cassette_file(path)?;
        load::parse(path.to_path_buf(), &bytes, keys)
    }

    /// [`Cassette::load`] for a reader: the same checks and errors, but
    /// `events` and `timeline` stay text in the file buffer (see
    /// `cassette::lean`), so loading costs one scan and the events are
    /// unescaped where they are read ([`Cassette::event_lines`]). Writing
    /// such a cassette still writes the exact document.
    pub fn load_lean_with(path: &Path, keys: &KeyCheck) -> Result<Cassette, LoadError> {
        load::load_lean::<(), (), ()>(path, None, keys).map(|(c, _)| c)
    }

    /// [`Cassette::load_lean`] that also reads every `events` line with
    /// `read`, on the other cores while the scan is still going, and hands
    /// the lines read to `fold`, in order, as they come (with the
    /// `controlOut` lines): a large replay's load, line reading and re-drive
    /// overlap, and no line is kept unescaped. With `fold_timeline`, the
    /// [`Cassette::timeline_entries`] are read and folded on the pool
    /// meanwhile too. `None` beside the cassette when the file went through
    /// the full loader (read its [`Cassette::event_lines`] then).
    pub fn load_lean_reading_with<T: Send, R: Send, U: Send>(
        path: &Path,
        read: ReadLineWith<'_, T>,
        fold: FoldReadLines<'_, T, R>,
        fold_timeline: Option<FoldTimeline<'_, U>>,
        keys: &KeyCheck,
    ) -> Result<(Cassette, Option<FoldedWhileLoading<R, U>>), LoadError> {
        let reading = load::Reading {
            read,
            fold,
            fold_timeline,
        };
        load::load_lean(path, Some(reading), keys)
    }

    /// A cassette over `doc` as it is, unchecked (tests and in-memory
    /// assembly; loading goes through [`Cassette::load`]).
    pub fn unchecked(path: impl Into<PathBuf>, doc: Map<String, Value>, version: u64) -> Cassette {
        Cassette {
            path: path.into(),
            doc,
            version,
            load_warnings: Vec::new(),
            raw: None,
        }
    }

    /// Same pipeline as [`Cassette::load`] for a document already in memory
    /// (e.g. one `record` just assembled); `path` is where it will live and is
    /// named in errors.
    pub fn from_bytes_with(
        path: impl Into<PathBuf>,
        bytes: &[u8],
        keys: &KeyCheck,
    ) -> Result<Cassette, LoadError> {
        load::parse(path.into(), bytes, keys)
    }

    /// Same pipeline (from the shape check on) for a document already parsed,
    /// e.g. one `record` assembled in memory.
    pub fn from_doc_with(
        path: impl Into<PathBuf>,
        doc: Map<String, Value>,
        keys: &KeyCheck,
    ) -> Result<Cassette, LoadError> {
        load::validate(path.into(), Value::Object(doc), keys)
    }

    /// The file's bytes: `JSON.stringify(doc, null, 2)`, no trailing newline.
    pub fn to_json_pretty(&self) -> String {
        match &self.raw {
            None => write::to_json_pretty(&self.doc),
            Some(raw) => {
                let mut doc = self.doc.clone();
                raw.restore(&mut doc);
                write::to_json_pretty(&doc)
            }
        }
    }

    /// Writes the document to `path` atomically ([`crate::atomic::write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), SaveError> {
        crate::atomic::write_atomic(path, self.to_json_pretty().as_bytes()).map_err(|source| {
            SaveError {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// The directory relative paths inside the cassette resolve against.
    pub fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// True for a cassette newer than this build understands.
    pub fn is_future(&self) -> bool {
        self.version > CASSETTE_VERSION
    }

    /// The frozen scenario object (the loader guarantees it is an object with
    /// string `prompt` and `session`).
    pub fn scenario(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        self.doc
            .get("scenario")
            .and_then(Value::as_object)
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }

    /// Raw `events` lines (agent stdout), in order.
    pub fn events(&self) -> impl Iterator<Item = Cow<'_, str>> {
        self.event_lines().map(EventLine::text)
    }

    /// The `events` lines as stored: read a line with [`EventLine::text`];
    /// pre-filter on [`EventLine::stored`] to skip most of them unread.
    pub fn event_lines(&self) -> Box<dyn ExactSizeIterator<Item = EventLine<'_>> + '_> {
        match &self.raw {
            Some(raw) => Box::new(raw.events()),
            None => {
                let items = match self.doc.get("events") {
                    Some(Value::Array(items)) => items.as_slice(),
                    _ => &[],
                };
                // The loader guarantees every item is a string.
                Box::new(
                    items
                        .iter()
                        .map(|v| EventLine::Text(v.as_str().unwrap_or_default())),
                )
            }
        }
    }

    fn attach_raw(&mut self, raw: lean::RawParts) {
        self.raw = Some(Box::new(raw));
    }

    /// True for a cassette from [`Cassette::load_lean`].
    pub fn is_lean(&self) -> bool {
        self.raw.is_some()
    }

    /// Takes the `events` lines out of the document (leaving an empty array),
    /// for a caller that only needs to read them once more: a 50 MB cassette
    /// is mostly these lines. The document no longer round-trips afterwards.
    /// Empty for a lean cassette (read its [`Cassette::event_lines`]).
    pub fn take_events(&mut self) -> Vec<String> {
        let Some(Value::Array(items)) = self.doc.get_mut("events") else {
            return Vec::new();
        };
        std::mem::take(items)
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// Raw `controlOut` lines (driver → agent stdin); `None` when the field is
    /// absent. An empty array is "legacy mode" for replay, same as absent.
    pub fn control_out(&self) -> Option<Vec<&str>> {
        control_out_of(&self.doc)
    }

    /// Typed view of `fingerprint`.
    pub fn fingerprint(&self) -> Option<FingerprintRecord> {
        typed(self.doc.get("fingerprint"))
    }

    /// Typed view of `artifacts` (the post-run manifest); `None` when absent.
    pub fn artifacts(&self) -> Option<Vec<ManifestEntry>> {
        typed(self.doc.get("artifacts"))
    }

    /// `userVisibleRoots`; `None` when absent (legacy: `["outputs", ".projects"]`).
    pub fn user_visible_roots(&self) -> Option<Vec<String>> {
        typed(self.doc.get("userVisibleRoots"))
    }

    /// `preRunPaths` baseline.
    pub fn pre_run_paths(&self) -> Option<Vec<String>> {
        typed(self.doc.get("preRunPaths"))
    }

    /// `preRunHashes` baseline (`None` value = body was secret-scrubbed).
    pub fn pre_run_hashes(&self) -> Option<Vec<(String, Option<String>)>> {
        let map = self.doc.get("preRunHashes")?.as_object()?;
        Some(
            map.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned)))
                .collect(),
        )
    }

    /// `preRunOrigin`.
    pub fn pre_run_origin(&self) -> Option<PreRunOrigin> {
        typed(self.doc.get("preRunOrigin"))
    }

    /// `effectiveFidelity` (`protocol`, `container`, `hostloop`, `microvm`).
    pub fn effective_fidelity(&self) -> Option<&str> {
        self.doc.get("effectiveFidelity").and_then(Value::as_str)
    }

    /// `scenarioSource`, relative to [`Cassette::dir`].
    pub fn scenario_source(&self) -> Option<&str> {
        self.doc.get("scenarioSource").and_then(Value::as_str)
    }

    /// `sessionFingerprint`.
    pub fn session_fingerprint(&self) -> Option<&str> {
        self.doc.get("sessionFingerprint").and_then(Value::as_str)
    }

    /// `timeline` entries as the folds read them (`evidence::timeline`):
    /// borrowed from a lean cassette (parsed once, only the keys read),
    /// read off the document otherwise.
    pub fn timeline_entries(&self) -> Option<Cow<'_, [TimelineEntry]>> {
        match &self.raw {
            Some(raw) if raw.has_timeline() => raw.timeline_entries().map(Cow::Borrowed),
            _ => self
                .doc
                .get("timeline")
                .and_then(Value::as_array)
                .map(|items| Cow::Owned(items.iter().filter_map(TimelineEntry::of).collect())),
        }
    }

    /// `timeline` entries (kept as JSON: only a few keys are read).
    pub fn timeline(&self) -> Option<&Vec<Value>> {
        match &self.raw {
            Some(raw) if raw.has_timeline() => raw.timeline(),
            _ => self.doc.get("timeline").and_then(Value::as_array),
        }
    }

    /// `folderPrefixMap`.
    pub fn folder_prefix_map(&self) -> Option<Vec<FolderPrefix>> {
        typed(self.doc.get("folderPrefixMap"))
    }

    /// `environment`.
    pub fn environment(&self) -> Option<Environment> {
        typed(self.doc.get("environment"))
    }

    /// `authoring`.
    pub fn authoring(&self) -> Option<Authoring> {
        typed(self.doc.get("authoring"))
    }
}

fn str_items(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Deserialises a typed view of one field; a field of the wrong shape reads as
/// absent (the loader has already refused the shapes replay depends on).
fn typed<T: serde::de::DeserializeOwned>(v: Option<&Value>) -> Option<T> {
    v.and_then(|v| T::deserialize(v).ok())
}

/// How [`Cassette::load_lean_reading`] reads one `events` line (on any thread).
pub type ReadLineWith<'r, T> = &'r dyn ReadLines<T>;

/// A reader of `events` lines for [`Cassette::load_lean_reading`]: any
/// `Fn(EventLine) -> T`, or a reader that can also read a line straight
/// from its stored token.
pub trait ReadLines<T>: Sync {
    /// Reads one line.
    fn read(&self, line: EventLine<'_>) -> T;

    /// Reads one line from its JSON string token as the file stores it
    /// (quotes included, not yet checked), when it can: `Some` only for a
    /// token that is a string [`crate::js::json::unescape_into`] takes, read
    /// as [`ReadLines::read`] reads its text. `None`: the loader unescapes
    /// the token (checking it) and calls [`ReadLines::read`].
    fn read_stored(&self, token: StoredToken<'_>) -> Option<T> {
        let _ = token;
        None
    }
}

impl<T, F: Fn(EventLine<'_>) -> T + Sync> ReadLines<T> for F {
    fn read(&self, line: EventLine<'_>) -> T {
        self(line)
    }
}

/// How [`Cassette::load_lean_reading`] folds the lines read, in order, as
/// they come: given the cassette's `controlOut` lines
/// ([`Cassette::control_out`]).
pub type FoldReadLines<'f, T, R> =
    &'f mut (dyn FnMut(Option<&[&str]>, &mut dyn Iterator<Item = T>) -> R + Send);

/// How [`Cassette::load_lean_reading`] folds the cassette's
/// [`Cassette::timeline_entries`] (on any thread), as they are read: none
/// is kept (a fold made of entries the reader then refuses is dropped, and
/// the entries are read again, the reference way, and folded again).
pub type FoldTimeline<'f, U> = &'f (dyn Fn(&mut dyn Iterator<Item = TimelineEntry>) -> U + Sync);

/// What [`Cassette::load_lean_reading`] folded while it loaded.
pub struct FoldedWhileLoading<R, U> {
    /// The `events` lines' fold.
    pub lines: R,
    /// The timeline's fold, when it was asked for and the timeline read on
    /// the pool (else fold [`Cassette::timeline_entries`] when needed).
    pub timeline: Option<U>,
}

/// The `controlOut` lines of a cassette document ([`Cassette::control_out`]).
pub fn control_out_of(doc: &Map<String, Value>) -> Option<Vec<&str>> {
    doc.get("controlOut").map(|v| str_items(Some(v)).collect())
}
