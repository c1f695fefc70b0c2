//! `verify-cassettes`: the per-cassette checks and the batch verdict
//! (docs/spec/fingerprint.md §5).
//!
//! Per cassette: load (a load error still gets a privacy scan of the raw
//! document), privacy scan, staleness (the shared
//! [`crate::fingerprint::staleness::compute`]), session-shape drift, scenario
//! drift, version, and under `--margins` the count-budget rows of
//! [`super::margins`] off the cassette already loaded. A batch runs on all
//! cores and keeps input order. One bad file never stops the rest: it
//! becomes that row's `error`.
//!
//! This module does not render (see [`crate::report::verify`]) and does not parse
//! command-line arguments (see `cli/verify.rs`).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use super::lifecycle::{self, OrphanScenario};
use super::margins::{self, CassetteMargins};
use super::scan::{AllowList, Finding, scan_document};
use crate::cassette::{CASSETTE_VERSION, Cassette};
use crate::exit::ExitStatus;
use crate::fingerprint::staleness;
use crate::scenario::sibling::{self, Via};
use crate::scenario::{Scenario, shaping};

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// `--session FILE`: resolve skill sources from this session (one
    /// cassette only).
    pub session: Option<PathBuf>,
    pub privacy: bool,
    pub staleness: bool,
    pub scenario_drift: bool,
    pub allow: AllowList,
    /// `--margins`: also re-drive each cassette that has count-bound
    /// assertions for its recorded counts (diagnostic only).
    pub margins: bool,
    /// `--max-age`: a cassette recorded longer ago fails.
    pub max_age: Option<MaxAgeCheck>,
    /// `--orphans`: a cassette whose recorded `scenarioSource` is gone fails.
    pub orphans: bool,
}

/// `--max-age DURATION` as given, and the time it is measured at.
#[derive(Debug, Clone)]
pub struct MaxAgeCheck {
    pub max: lifecycle::MaxAge,
    /// The flag's text (`90d`), echoed in the message.
    pub text: String,
    pub now: std::time::SystemTime,
}

/// The result for one cassette (the `results[]` rows of the JSON report).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CassetteResult {
    pub file: String,
    pub findings: Vec<Finding>,
    pub staleness: Vec<String>,
    pub unverifiable: Vec<String>,
    pub notes: Vec<String>,
    pub version: Vec<String>,
    pub scenario_drift: Vec<String>,
    /// A forgotten `NAME.cassette.json.new` beside it: an unreviewed
    /// re-recording (exit 1; see [`crate::review`]).
    pub pending_review: Vec<String>,
    /// `--max-age`: recorded too long ago (exit 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub age: Vec<String>,
    /// `--orphans`: the recorded scenario is gone (exit 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub orphan: Vec<String>,
    /// A checkpoint's snapshot missing from the store, or changed since it
    /// was written; a malformed `reelCheckpoints` (exit 1;
    /// [`super::snapshots`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub privacy_scanned: bool,
    /// `--margins` only, and only for a loadable cassette with count-bound
    /// assertions; reported apart from `results[]` (never in a verdict).
    #[serde(skip)]
    pub margins: Option<CassetteMargins>,
}

impl CassetteResult {
    pub fn real_findings(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.is_real())
            .map(|f| f.count)
            .sum()
    }
    /// A verified, real problem (exit 1).
    pub fn has_finding(&self) -> bool {
        self.real_findings() > 0
            || !self.staleness.is_empty()
            || !self.scenario_drift.is_empty()
            || !self.pending_review.is_empty()
            || !self.age.is_empty()
            || !self.orphan.is_empty()
            || !self.snapshots.is_empty()
    }
    /// Verification could not complete (exit 3).
    pub fn has_unverifiable(&self) -> bool {
        !self.unverifiable.is_empty() || !self.version.is_empty() || self.error.is_some()
    }
}

/// Outcome of a batch: a real finding wins over could-not-verify.
pub fn status(results: &[CassetteResult]) -> ExitStatus {
    if results.iter().any(CassetteResult::has_finding) {
        ExitStatus::Failure
    } else if results.iter().any(CassetteResult::has_unverifiable) {
        ExitStatus::Unverified
    } else {
        ExitStatus::Success
    }
}

/// Outcome of a batch with its orphan scenarios: a real finding (an orphan is
/// one) wins over could-not-verify.
pub fn batch_status(results: &[CassetteResult], orphans: Option<&[OrphanScenario]>) -> ExitStatus {
    if orphans.is_some_and(|o| !o.is_empty()) {
        ExitStatus::Failure
    } else {
        status(results)
    }
}

/// Why the targets could not be turned into a list of cassettes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error(
        "no .cassette.json files under {0} — nothing to do (loud non-zero, not a vacuous pass)"
    )]
    EmptyDir(String),
}

/// Expands the targets: a directory means its `*.cassette.json` files
/// ([`crate::discover::cassettes_in`]: non-recursive, sorted by name); a
/// file is taken as given.
pub fn collect_targets(targets: &[PathBuf]) -> Result<Vec<PathBuf>, TargetError> {
    let mut files = vec![];
    for t in targets {
        let shown = t.display().to_string();
        if t.is_dir() {
            let found = crate::discover::cassettes_in(t)
                .map_err(|_| TargetError::NotFound(shown.clone()))?;
            if found.is_empty() {
                return Err(TargetError::EmptyDir(shown));
            }
            files.extend(found);
        } else if t.exists() {
            files.push(t.clone());
        } else {
            return Err(TargetError::NotFound(shown));
        }
    }
    Ok(files)
}

/// Reads and parses a cassette file into its raw document (for the privacy
/// scan, which needs only a readable transcript, not a valid cassette).
fn read_document(path: &Path) -> Result<Map<String, Value>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read cassette: {e}"))?;
    if !meta.is_file() {
        return Err("cannot read cassette: not a regular file".into());
    }
    if meta.len() > crate::cassette::MAX_CASSETTE_BYTES {
        return Err(format!(
            "cannot read cassette: {} bytes is over the {} byte limit",
            meta.len(),
            crate::cassette::MAX_CASSETTE_BYTES
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read cassette: {e}"))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("unreadable / invalid cassette JSON: {e}"))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err("invalid cassette shape: (root): expected an object".into()),
    }
}

/// Loads a cassette through the one loader ([`Cassette::load`]); the error
/// is its message without the path (the report prints the file).
pub fn load_cassette(path: &Path) -> Result<Cassette, String> {
    Cassette::load(path).map_err(|e| e.message())
}

/// The loader's validation over an already-parsed document.
pub fn cassette_from_document(path: &Path, doc: Map<String, Value>) -> Result<Cassette, String> {
    Cassette::from_doc(path, doc).map_err(|e| e.message())
}

/// The session file a cassette's `scenario.session` resolves to (or the
/// override); `None` for an inline scenario. Delegates to the one resolver,
/// [`crate::fingerprint::resolve_session_path`].
pub fn resolve_session(cassette: &Cassette, session_override: Option<&Path>) -> Option<PathBuf> {
    let recorded = cassette.scenario().get("session").and_then(Value::as_str)?;
    crate::fingerprint::resolve_session_path(recorded, Some(cassette.dir()), session_override)
}

/// Scenario drift (docs/spec/fingerprint.md §5 step 5): `Ok(drifted fields)` when
/// comparable, `Err(Some(note))` when a sibling resolved but cannot be loaded
/// or was only found by name, `Err(None)` when there is nothing to compare.
///
/// The sibling is found by the one resolver ([`sibling::resolve`]), read by
/// the one loader ([`Scenario::load_authored`]) and compared by the one
/// recording-shaping comparison ([`shaping::drift`]). As in the original, any
/// load failure — unreadable, not YAML, or against the schema — is a
/// non-failing note: a half-edited scenario must never fail the gate.
fn scenario_drift(cassette: &Cassette) -> Result<Vec<&'static str>, Option<String>> {
    let (path, via) = sibling::resolve(cassette).found.ok_or(None)?;
    let on_disk = Scenario::load_authored(&path).map_err(|e| {
        Some(format!(
            "on-disk scenario {} did not parse ({}) — prompt drift not checked",
            path.display(),
            e.detail()
        ))
    })?;
    let drifted: Vec<&'static str> = shaping::drift(
        cassette.scenario(),
        crate::scenario::dir_of(&cassette.path),
        &on_disk,
    )
    .into_iter()
    .map(|d| d.field)
    .collect();
    // Only the recorded source is trusted enough to fail on: a name match
    // may be an unrelated same-named scenario.
    if !drifted.is_empty() && via != Via::Persisted {
        return Err(Some(format!(
            "on-disk {} (resolved by name, not a recorded source) has drifted recording-shaping \
                field(s) [{}] — re-record or `replay --assert-from` to confirm",
            path.display(),
            drifted.join(", ")
        )));
    }
    Ok(drifted)
}

/// Verifies one cassette. Never panics on input; a problem with the file
/// becomes the row's `error`.
pub fn verify_one(path: &Path, opts: &VerifyOptions) -> CassetteResult {
    let mut row = CassetteResult {
        file: path.display().to_string(),
        ..Default::default()
    };
    // Checked first: an unreviewed re-recording matters even when the
    // committed cassette itself cannot be read.
    row.pending_review.extend(pending_review(path));
    let doc = match read_document(path) {
        Ok(doc) => doc,
        Err(e) => {
            row.error = Some(e);
            return row;
        }
    };
    // The scan reads the raw document, so a cassette that fails to load
    // past it is still scanned.
    if opts.privacy {
        match scan_document(&doc, &opts.allow) {
            Ok(f) => {
                row.findings = super::scan::dedup(f);
                row.privacy_scanned = true;
            }
            Err(_) => row.privacy_scanned = false,
        }
    }
    let snapshots = super::snapshots::check(path, &doc, opts.privacy.then_some(&opts.allow));
    row.snapshots = snapshots.problems;
    row.findings.extend(super::scan::dedup(snapshots.findings));
    row.notes.extend(snapshots.notes);
    let cassette = match cassette_from_document(path, doc) {
        Ok(c) => c,
        Err(e) => {
            row.error = Some(e);
            return row;
        }
    };
    super::published::mark(&mut row.findings, &cassette, opts.session.as_deref());
    super::own_mcp::mark(&mut row.findings, &cassette, opts.session.as_deref());
    if opts.staleness {
        check_staleness(&cassette, opts, &mut row);
    }
    if opts.scenario_drift {
        check_scenario_drift(&cassette, &mut row);
    }
    if cassette.version > CASSETTE_VERSION {
        row.version.push(format!(
            "cassette format v{} is newer than this harness understands (v{CASSETTE_VERSION}) — \
                upgrade reel (can't verify ⇒ not green)",
            cassette.version
        ));
    }
    check_lifecycle(&cassette, opts, &mut row);
    if opts.margins {
        row.margins = margins::of_cassette(&row.file, &cassette);
    }
    row
}

/// The finding for a `.new` re-recording left beside `path`, if there is one.
fn pending_review(path: &Path) -> Option<String> {
    let pending = crate::review::pending_path(path);
    pending.is_file().then(|| {
        format!(
            "an unreviewed re-recording is pending beside it: {} — review it with `reel review \
                {}`, or resolve it with `reel accept` / `reel reject`",
            pending.display(),
            path.display()
        )
    })
}

/// Skill-source staleness (an `unverifiable-*` class is unverifiable, not
/// stale), then the session's shape and its MCP config.
fn check_staleness(cassette: &Cassette, opts: &VerifyOptions, row: &mut CassetteResult) {
    let st = staleness::compute(cassette, opts.session.as_deref());
    for f in st.findings {
        let unverifiable = serde_json::to_value(f.class)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.starts_with("unverifiable-")))
            .unwrap_or(false);
        if unverifiable {
            row.unverifiable.push(f.message);
        } else {
            row.staleness.push(f.message);
        }
    }
    row.notes.extend(st.notes);
    session_shape(cassette, opts, row);
    mcp_config_drift(cassette, opts, row);
}

/// The sibling scenario's recording-shaping fields against the frozen copy.
fn check_scenario_drift(cassette: &Cassette, row: &mut CassetteResult) {
    match scenario_drift(cassette) {
        Ok(d) if !d.is_empty() => row.scenario_drift.push(format!(
            "scenario recording-shaping field(s) [{}] differ from the cassette's frozen copy — \
                the frozen events no longer correspond to this scenario; re-record or `replay \
                --assert-from`",
            d.join(", ")
        )),
        Ok(_) | Err(None) => {}
        Err(Some(note)) => row.notes.push(format!("scenario-drift: {note}")),
    }
}

/// `--max-age` (an unknown recording time cannot be verified) and
/// `--orphans`.
fn check_lifecycle(cassette: &Cassette, opts: &VerifyOptions, row: &mut CassetteResult) {
    if let Some(check) = &opts.max_age {
        match lifecycle::check_age(cassette, &check.max, &check.text, check.now) {
            lifecycle::Age::Fresh => {}
            lifecycle::Age::TooOld(m) => row.age.push(m),
            lifecycle::Age::Unknown(m) => row.unverifiable.push(m),
        }
    }
    if opts.orphans
        && let Some(m) = lifecycle::orphan_cassette(cassette)
    {
        row.orphan.push(m);
    }
}

/// The `sessionFingerprint` check (spec §5 step 4).
fn session_shape(cassette: &Cassette, opts: &VerifyOptions, row: &mut CassetteResult) {
    let Some(recorded) = cassette.session_fingerprint() else {
        return; // pre-v9: not checked
    };
    let session = resolve_session(cassette, opts.session.as_deref())
        .filter(|p| p.as_os_str() != crate::fingerprint::INLINE_SESSION)
        .and_then(|p| crate::scenario::session::Session::load(&p).ok());
    let Some(session) = session else {
        row.notes.push(
            "session-fingerprint: could not resolve the current session file to recompute — cannot \
                verify session-shape staleness".into(),
        );
        return;
    };
    let live = crate::fingerprint::session_fingerprint_of(&session);
    if live == recorded {
        return;
    }
    // Recorded before `projects` joined the shape: the old hash says nothing
    // about the projects, so a match on the old shape is neither clean nor
    // drift.
    if !session.projects.is_empty()
        && crate::fingerprint::session_fingerprint_covering(
            &session,
            crate::fingerprint::ShapeCoverage::BeforeProjects,
        ) == recorded
    {
        row.unverifiable.push(
            "session-shape fingerprint predates `projects` coverage: this session declares \
            projects, which the recorded fingerprint never hashed — cannot tell whether a \
            connected project changed since record; re-record to adopt the coverage"
                .into(),
        );
        return;
    }
    // The cassette's recorded `scenarioSource` is gone: its tree moved, so
    // the session path (relative to it the same way) may have landed on an
    // unrelated file. That is the signal whether or not the name lookup then
    // finds a scenario; an explicit `--session` overrides the guess.
    let relocated = sibling::resolve(cassette).persisted_missing.is_some();
    if relocated && opts.session.is_none() {
        row.notes.push(
            "session-fingerprint: differs from the current session file, but this \
            cassette's directory structure could not be confirmed intact (scenario source resolved \
            by name lookup, not its persisted path) — may be an unrelated same-named sibling; \
            re-record, or verify manually before trusting the mismatch"
                .into(),
        );
        return;
    }
    row.staleness.push(
        "session-shape fingerprint differs from the current session file (connected \
        folders/plugin/skill/mcp/egress config changed since record) — re-record"
            .into(),
    );
}

/// reel's MCP-configuration check (a departure: cowork-harness hashes only
/// the config's path): the digest recorded with the MCP traffic against the
/// current session's MCP config and its servers' files.
fn mcp_config_drift(cassette: &Cassette, opts: &VerifyOptions, row: &mut CassetteResult) {
    match crate::mcp::digest::cassette_drift(cassette, opts.session.as_deref()) {
        // Recorded without MCP traffic: nothing to compare.
        None | Some(Ok(None)) => {}
        Some(Ok(Some(finding))) => row.staleness.push(finding),
        Some(Err(_)) => row.notes.push(
            "mcp-config: could not load the current session file — cannot verify MCP \
                configuration staleness"
                .into(),
        ),
    }
}

/// Verifies every file on all cores; results keep the input order.
pub fn verify_all(files: &[PathBuf], opts: &VerifyOptions) -> Vec<CassetteResult> {
    files
        .par_iter()
        .map(|f| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| verify_one(f, opts)))
                .unwrap_or_else(|_| CassetteResult {
                    file: f.display().to_string(),
                    error: Some(
                        "internal error while verifying this cassette (a bug — please report it)"
                            .into(),
                    ),
                    ..Default::default()
                })
        })
        .collect()
}
