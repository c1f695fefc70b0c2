//! The assertion catalog: validation and evaluation of `assert:` keys
//! (docs/spec/replay.md §4).
//!
//! - [`catalog::validate`] checks one `assert:` item against the strict schema
//!   (used by the cassette loader and the scenario loader);
//! - [`catalog::bucket`] says which replay bucket a key belongs to, and
//!   [`catalog::manifest_key_active`] whether a manifest key is evaluable on
//!   a given cassette;
//! - [`check`] evaluates one item against the evidence: every key present is
//!   evaluated (AND), in the fixed order of the original's `check()` chain
//!   ([`keys::check_order`]); the message is the first failing key's, the
//!   evidence on pass the `"; "`-join of the keys that cite one;
//! - [`metrics::measure`] reads a scenario's `metrics:` numbers from the
//!   same manifest view (reported beside the verdict, never in it).
//!
//! Evaluation is pure: it never prints (the original's regex-looking-glob
//! warning is returned by [`check_with_warnings`]) and never reads
//! disk (manifest keys read the manifest, see [`tree`]). Bucket exclusion,
//! live-only stripping and skip tallies are `replay`'s job: a live-only key
//! that reaches [`check`] fails "live-only" rather than being guessed at.

pub mod catalog;
mod eval;
pub mod glob;
pub mod json;
pub mod json_schema;
pub mod keys;
pub mod links;
mod loading;
pub mod metrics;
pub mod stamp;
pub use loading::KEY_CHECK;
pub mod tree;

use std::path::Path;
use std::sync::OnceLock;

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
    /// Failure message (first failing key's); empty on pass (the original
    /// omits `message` for a passing assertion).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// On pass: the `"; "`-joined evidence strings of the keys that emit one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// `"cassette-format"` for pseudo-assertions about the cassette itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A judged assertion's fields (`semanticClaims`, `judgeModel`,
    /// `judgePromptHash`, `judgeCostUsd`, `judgeInvalid`, reel's
    /// `judgeStatus`), beside the others as the original writes them.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Map<String, Value>>,
}

/// What an assertion may read.
///
/// `work_root` is the materialised manifest (see [`tree`] for the contract);
/// manifest keys read `cassette.artifacts()` and only print `work_root`.
/// Lane (`scenario.lane`), tier (`effectiveFidelity`), `userVisibleRoots`,
/// `folderPrefixMap` and the pre-run baseline are read from `cassette`.
///
/// Build one per evaluation ([`Context::new`]) and pass it to every
/// assertion of that evaluation: the manifest view is read from the cassette
/// on first use and shared. A context whose cassette changes (`--mutate`'s
/// perturbations) is a new context.
pub struct Context<'a> {
    pub cassette: &'a Cassette,
    pub run: &'a RunRecord,
    /// The materialised artifact tree (manifest-bucket keys), if any.
    pub work_root: Option<&'a Path>,
    /// A live verdict (record, rerun): the run's files are the evidence, so a
    /// manifest key is evaluated even when the run produced no file (and
    /// fails), where a replay would exclude it for want of a manifest.
    pub live: bool,
    manifest: OnceLock<tree::ManifestView>,
}

impl<'a> Context<'a> {
    pub fn new(
        cassette: &'a Cassette,
        run: &'a RunRecord,
        work_root: Option<&'a Path>,
    ) -> Context<'a> {
        Context {
            cassette,
            run,
            work_root,
            live: false,
            manifest: OnceLock::new(),
        }
    }

    /// The same context judging a live run (see [`Context::live`]).
    pub fn for_live_run(mut self, live: bool) -> Context<'a> {
        self.live = live;
        self
    }

    /// The cassette's manifest as the manifest keys see it, built on first
    /// use and shared by every assertion evaluated with this context.
    pub fn manifest(&self) -> &tree::ManifestView {
        self.manifest
            .get_or_init(|| tree::ManifestView::from_cassette(self.cassette))
    }
}

/// The cassette-format pseudo-assertions of a re-drive (malformed lines,
/// differing duplicate ids, guard mismatches, missing replies, truncated
/// question), in the original's order: each a failing
/// `{replay_protocol_fidelity: true}` with `source: "cassette-format"`.
pub fn cassette_format_outcomes(run: &RunRecord) -> Vec<AssertionOutcome> {
    run.format_findings()
        .into_iter()
        .map(|message| AssertionOutcome {
            assertion: serde_json::json!({keys::name::REPLAY_PROTOCOL_FIDELITY: true}),
            pass: false,
            message,
            evidence: None,
            source: Some("cassette-format".into()),
            judge: None,
        })
        .collect()
}

/// Evaluates one assertion item.
pub fn check(item: &Map<String, Value>, ctx: &Context<'_>) -> AssertionOutcome {
    eval::check(item, ctx).0
}

/// [`check`], plus the advisory warning lines the original prints while
/// evaluating (full `::warning:: …` lines, e.g. a tool glob that looks like
/// a regex). The caller prints them on stderr.
pub fn check_with_warnings(
    item: &Map<String, Value>,
    ctx: &Context<'_>,
) -> (AssertionOutcome, Vec<String>) {
    eval::check(item, ctx)
}
