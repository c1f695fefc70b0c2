//! Measuring scenario `metrics:` over a cassette's artifact manifest
//! (cowork-harness `src/metrics.ts`): one outcome per declared metric, in
//! declaration order — the number at `path` in the JSON file `artifact`, or
//! `unavailable` with one reason, never a 0 and never a coerced string.
//!
//! The gates are `artifact_json`'s (the manifest view, [`ManifestView`]),
//! plus "the run wrote it", decided as `authored: true` decides it
//! ([`ManifestView::authorship`]): a number read from a file the run did
//! not write would measure the input, not the run. An outcome the recorded
//! evidence caused (no manifest, a body or hash the recording did not keep,
//! a link placeholder) rather than one stating what the run did is marked
//! [`Unavailable::evidence_limited`]; replay warns on those.
//!
//! Pure: reads the view, writes and prints nothing; the verdict never reads it.

use serde_json::Value;

use crate::assert::json::{self, DotResolve};
use crate::assert::tree::{Authorship, ManifestView, contained_rel};
use crate::cassette::TruncationReason;
use crate::scenario::metrics::MetricDecl;

/// Why a metric has no value (`RunResult.metrics[].unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No file there, a directory, or a path that leaves the work root.
    MissingArtifact,
    /// The file was there before the run and the run did not write it (or
    /// the cassette cannot tell that it did).
    PreRun,
    /// A read-only connected-folder input.
    Readonly,
    /// Larger than the artifact-body cap.
    Size,
    /// The file is not valid JSON.
    NotJson,
    /// `path` does not resolve in the document.
    MissingPath,
    /// The value at `path` is not a finite number.
    NotANumber,
    /// A `lane: remote` run: its filesystem is not locally observable.
    Remote,
}

impl Reason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::MissingArtifact => "missing_artifact",
            Reason::PreRun => "pre_run",
            Reason::Readonly => "readonly",
            Reason::Size => "size",
            Reason::NotJson => "not_json",
            Reason::MissingPath => "missing_path",
            Reason::NotANumber => "not_a_number",
            Reason::Remote => "remote",
        }
    }
}

/// A metric without a value, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable {
    pub reason: Reason,
    /// The detail, for a person.
    pub why: String,
    /// The recording, not the run, is why (see the module docs).
    pub evidence_limited: bool,
}

/// One declared metric's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub id: String,
    /// The number (a JSON number as `JSON.stringify` writes it), or why none.
    pub value: Result<Value, Unavailable>,
}

impl Measurement {
    /// The run-result form: `{id, value}` or `{id, unavailable}`.
    pub fn to_json(&self) -> Value {
        match &self.value {
            Ok(v) => serde_json::json!({"id": self.id, "value": v}),
            Err(u) => serde_json::json!({"id": self.id, "unavailable": u.reason.as_str()}),
        }
    }
}

/// Where the metrics are measured.
pub struct Evidence<'a> {
    pub view: &'a ManifestView,
    /// The cassette carries an `artifacts` manifest.
    pub has_manifest: bool,
    /// The scenario ran on `lane: remote`.
    pub lane_remote: bool,
}

/// One measurement per declared metric, in declaration order.
pub fn measure(evidence: &Evidence<'_>, decls: &[MetricDecl]) -> Vec<Measurement> {
    decls
        .iter()
        .map(|m| Measurement {
            id: m.id.clone(),
            value: measure_one(evidence, m),
        })
        .collect()
}

fn off(reason: Reason, why: impl Into<String>) -> Unavailable {
    Unavailable {
        reason,
        why: why.into(),
        evidence_limited: false,
    }
}

fn limited(reason: Reason, why: impl Into<String>) -> Unavailable {
    Unavailable {
        evidence_limited: true,
        ..off(reason, why)
    }
}

fn measure_one(evidence: &Evidence<'_>, m: &MetricDecl) -> Result<Value, Unavailable> {
    if evidence.lane_remote {
        return Err(off(
            Reason::Remote,
            "a remote lane's filesystem is not locally observable",
        ));
    }
    let Some(rel) = contained_rel(&m.artifact).filter(|r| !r.is_empty()) else {
        return Err(off(
            Reason::MissingArtifact,
            "the path leaves the work root",
        ));
    };
    let bytes = written_body(evidence, &rel)?;
    let doc = json::parse_document(&bytes)
        .map_err(|e| off(Reason::NotJson, format!("not valid JSON: {e}")))?;
    let value = match json::resolve_dot_path(&doc, Some(&m.path)) {
        DotResolve::Value(v) => v,
        DotResolve::Absent => {
            return Err(off(
                Reason::MissingPath,
                format!("\"{}\" is absent", m.path),
            ));
        }
        DotResolve::Unresolved { at } => {
            return Err(off(
                Reason::MissingPath,
                format!("\"{at}\" is missing or not an object"),
            ));
        }
    };
    match value
        .as_f64()
        .filter(|x| value.is_number() && x.is_finite())
    {
        Some(x) => Ok(crate::js::number::json_value(x)),
        None => Err(off(
            Reason::NotANumber,
            format!("\"{}\" is {}", m.path, json::stringify(Some(&value))),
        )),
    }
}

/// The recorded body of a file the run wrote, or why there is none to read.
fn written_body(evidence: &Evidence<'_>, rel: &str) -> Result<Vec<u8>, Unavailable> {
    let view = evidence.view;
    let tree = &view.tree;
    if tree.is_link(rel) {
        return Err(limited(
            Reason::PreRun,
            "it was a symlink or hard link at record time — a link is never counted as written \
             by the run",
        ));
    }
    if !tree.files.contains_key(rel) {
        return Err(if tree.exists(rel) {
            off(Reason::MissingArtifact, "not a regular file (a directory)")
        } else if !evidence.has_manifest {
            limited(
                Reason::MissingArtifact,
                "the cassette has no artifact manifest — re-record to measure it",
            )
        } else {
            off(Reason::MissingArtifact, "no file there")
        });
    }
    if let Some(reason) = tree.truncation(rel) {
        return Err(body_less(view, rel, reason));
    }
    let bytes = tree.bytes(rel).unwrap_or_default();
    if bytes.len() > crate::assert::keys::TEN_MIB {
        return Err(off(
            Reason::Size,
            format!("larger than {} bytes", crate::assert::keys::TEN_MIB),
        ));
    }
    match view.authorship(rel) {
        Authorship::Written => Ok(bytes),
        Authorship::Untouched => Err(off(
            Reason::PreRun,
            "an untouched pre-run file (identical bytes, even if rewritten)",
        )),
        Authorship::NoBaseline => Err(limited(
            Reason::PreRun,
            "the cassette has no pre-run hash manifest (preRunHashes), so it cannot tell that \
             the run wrote the file — re-record",
        )),
        Authorship::Scrubbed => Err(limited(
            Reason::PreRun,
            "its pre-run hash was scrubbed at record time, so the cassette cannot tell that the \
             run wrote it",
        )),
    }
}

/// A manifest entry recorded without its body.
fn body_less(view: &ManifestView, rel: &str, reason: Option<TruncationReason>) -> Unavailable {
    match reason {
        Some(TruncationReason::Readonly) => {
            off(Reason::Readonly, "a read-only connected-folder input")
        }
        Some(TruncationReason::Fixture) => {
            off(Reason::PreRun, "an untouched workspace_fixture file")
        }
        Some(TruncationReason::Input) => off(Reason::PreRun, "an uploaded input"),
        // An untouched pre-run file over the body cap is pre_run, not a cap
        // to raise.
        Some(TruncationReason::Size) if view.authorship(rel) == Authorship::Untouched => {
            off(Reason::PreRun, "an untouched pre-run file")
        }
        Some(TruncationReason::Size) => limited(
            Reason::Size,
            "larger than the recorded artifact-body cap (raise --max-artifact-bytes)",
        ),
        Some(TruncationReason::Unreadable) | None => limited(
            Reason::MissingArtifact,
            "its body was not recorded (unreadable at record time)",
        ),
    }
}
