//! The cassette loaders with the catalog's strict `assert:` check: the
//! `cassette` module loads a format and takes the key check as an argument
//! ([`crate::cassette::KeyCheck`]); this layer, which knows the keys, hands
//! over [`KEY_CHECK`] so every other caller loads with one call.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::catalog;
use crate::cassette::{
    Cassette, FoldReadLines, FoldTimeline, FoldedWhileLoading, KeyCheck, LoadError, ReadLineWith,
};

/// The catalog's strict check of one `assert:` item.
pub const KEY_CHECK: KeyCheck = KeyCheck {
    validate: catalog::validate,
    known: |key| catalog::bucket(key).is_some(),
};

impl Cassette {
    /// Loads and validates the cassette at `path` (docs/spec/replay.md §2.3;
    /// see `cassette::load` for the pipeline and what is refused). Tolerated
    /// problems of a future-version cassette are in
    /// [`Cassette::load_warnings`].
    pub fn load(path: &Path) -> Result<Cassette, LoadError> {
        Cassette::load_with(path, &KEY_CHECK)
    }

    /// [`Cassette::load`] for a reader: the same checks and errors, but
    /// `events` and `timeline` stay text in the file buffer, so loading
    /// costs one scan ([`Cassette::load_lean_with`]).
    pub fn load_lean(path: &Path) -> Result<Cassette, LoadError> {
        Cassette::load_lean_with(path, &KEY_CHECK)
    }

    /// [`Cassette::load_lean`] reading and folding the lines while it loads
    /// ([`Cassette::load_lean_reading_with`]).
    pub fn load_lean_reading<T: Send, R: Send, U: Send>(
        path: &Path,
        read: ReadLineWith<'_, T>,
        fold: FoldReadLines<'_, T, R>,
        fold_timeline: Option<FoldTimeline<'_, U>>,
    ) -> Result<(Cassette, Option<FoldedWhileLoading<R, U>>), LoadError> {
        Cassette::load_lean_reading_with(path, read, fold, fold_timeline, &KEY_CHECK)
    }

    /// The load pipeline over bytes already in memory; `path` is where the
    /// document will live and is named in errors.
    pub fn from_bytes(path: impl Into<PathBuf>, bytes: &[u8]) -> Result<Cassette, LoadError> {
        Cassette::from_bytes_with(path, bytes, &KEY_CHECK)
    }

    /// The pipeline (from the shape check on) over a parsed document, e.g.
    /// one `record` assembled in memory.
    pub fn from_doc(
        path: impl Into<PathBuf>,
        doc: Map<String, Value>,
    ) -> Result<Cassette, LoadError> {
        Cassette::from_doc_with(path, doc, &KEY_CHECK)
    }
}
