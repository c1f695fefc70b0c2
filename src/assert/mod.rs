//! The assertion catalog: validation and evaluation of `assert:` keys
//! (spec/replay.md §4).
//!
//! CONTRACT (while being built):
//! - [`catalog::validate`] checks one `assert:` item against the strict schema
//!   (used by the cassette loader and the scenario loader);
//! - [`catalog::bucket`] says which replay bucket a key belongs to;
//! - [`check`] evaluates one item against the evidence.

pub mod catalog;

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::cassette::Cassette;
use crate::evidence::RunRecord;

/// The outcome of one assertion item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssertionOutcome {
    /// The item as evaluated (after bucket exclusion stripped keys).
    pub assertion: Value,
    pub pass: bool,
    /// Failure message (first failing key's), or a short pass summary.
    pub message: String,
    /// On pass: the `"; "`-joined evidence strings of the keys that emit one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// `"cassette-format"` for pseudo-assertions about the cassette itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What an assertion may read.
pub struct Context<'a> {
    pub cassette: &'a Cassette,
    pub run: &'a RunRecord,
    /// The materialised artifact tree (manifest-bucket keys), if any.
    pub work_root: Option<&'a Path>,
}

/// Evaluates one assertion item.
pub fn check(item: &Map<String, Value>, _ctx: &Context<'_>) -> AssertionOutcome {
    AssertionOutcome {
        assertion: Value::Object(item.clone()),
        pass: false,
        message: "evidence unavailable: assertion engine not built yet".into(),
        evidence: None,
        source: None,
    }
}
