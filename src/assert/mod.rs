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
//!
//! Files: `keys/` holds one `Key` record per assertion key (name, bucket,
//! parameter shape, description, example, ordering ranks, evaluator,
//! `--margins` bound, pre-run baseline field, cross-key rules), grouped by
//! family with each family's evaluators beside its records; `keys/hooks/`
//! covers the plugin hook keys over the agent's own hook frames, paired by
//! `hook_id`, and v16's `hookFailureBlocks` inventory (`hooks/failure`);
//! `keys/gates` is `gates_all_scripted`, each replayed gate re-classified
//! against the frozen `answers:` with the decider's rules. `keys/mod.rs`
//! derives the catalog, `check()`, schema, replay-strip and `--margins` orders
//! by sorting on a rank, so a new key is one record; `keys/tests.rs` pins the
//! orders and fails on a key whose evaluator does not fit its bucket.
//!
//! `catalog` holds the buckets, parameter shapes and their validation, and
//! `KeyEntry` (the row `reel assertions` prints); `eval` is `check()` over the
//! records and the evaluators' shared helpers; `json_schema` is
//! `artifact_json.schema` (JSON Schema 2020-12 on the `jsonschema` crate, with
//! the original's refusals checked by a walk of its own); `glob` the
//! linear-time globs (`Glob`, the reference, and `GlobList`, an indexed any-of
//! matcher for long allowlists, property-tested against it; regexes are
//! `js::regex`); `tree` the manifest view built once per `Context` and shared
//! by its assertions and by scenario `metrics:`; `loading` the catalog's key
//! check handed to the cassette loader; `stamp` the cassette version a scenario
//! needs (what `record` and `rehash` stamp).

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
