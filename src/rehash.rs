//! `rehash`: migrate legacy-hash (v10/v11) cassettes to v12 (`jcs1`) with
//! proof (docs/spec/fingerprint.md §4).
//!
//! The proof: recompute the LEGACY `skillHash` of the current skill tree and
//! require it to equal the recorded one, under the same file-set mode and
//! agent scope, with `fileSigs` lining up entry for entry. Only then are the
//! fingerprint's digests replaced by their `jcs1` values (from the SAME walk,
//! [`crate::fingerprint::live_for_cassette`]) and the version stamped.
//!
//! The rewrite touches only `$schema`, `cassetteVersion`, `generator` (if
//! absent) and fingerprint digest fields, in place: key order is kept and
//! `hashFormat` is appended, so the file differs from the original in exactly
//! those lines. Writes are atomic; a v12 cassette is skipped (idempotent).
//!
//! This module does not decide staleness (that is `fingerprint::staleness`);
//! it never migrates on a failed or partial proof.

use std::path::{Path, PathBuf};

use crate::cassette::write::WriteStyle;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::cassette::{
    Cassette, FingerprintRecord, HASH_FORMAT_EPOCH, HASH_FORMAT_JCS1, schema_url,
};
use crate::fingerprint::LiveFingerprints;

/// What happened to one cassette.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Migrated,
    Skipped,
    Error,
}

/// One row of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RehashRow {
    pub file: String,
    pub action: Action,
    pub reason: String,
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct RehashOptions {
    pub dry_run: bool,
    /// `--session FILE` (single-cassette form), made absolute by the caller.
    pub session: Option<PathBuf>,
}

/// The whole run.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RehashSummary {
    pub dry_run: bool,
    pub migrated: usize,
    pub skipped: usize,
    pub errors: usize,
    pub results: Vec<RehashRow>,
}

impl RehashSummary {
    pub fn ok(&self) -> bool {
        self.errors == 0
    }
    pub fn status(&self) -> crate::exit::ExitStatus {
        crate::exit::ExitStatus::pass_fail(self.ok())
    }
}

/// Migrates every file (already expanded by the caller), sequentially: each
/// write is independent and atomic, so an interrupted run leaves every file
/// either untouched or fully migrated.
pub fn rehash_files(files: &[PathBuf], opts: &RehashOptions) -> RehashSummary {
    let mut summary = RehashSummary {
        dry_run: opts.dry_run,
        ..Default::default()
    };
    for file in files {
        let (action, reason) = match rehash_one(file, opts) {
            Ok((action, reason)) => (action, reason),
            Err(reason) => (Action::Error, reason),
        };
        match action {
            Action::Migrated => summary.migrated += 1,
            Action::Skipped => summary.skipped += 1,
            Action::Error => summary.errors += 1,
        }
        summary.results.push(RehashRow {
            file: file.display().to_string(),
            action,
            reason,
        });
    }
    summary
}

fn v9_refusal(version: u64) -> String {
    format!(
        "v10 records symlink/hardlink identity (#38) the v{version} manifest could not capture — \
            `rehash` cannot add it; re-record to migrate"
    )
}

/// Migrates one cassette; `Err(reason)` is a refusal.
pub fn rehash_one(file: &Path, opts: &RehashOptions) -> Result<(Action, String), String> {
    let cassette = crate::verify::gate::load_cassette(file)?;
    let version = cassette.version;
    let fp_value = cassette.doc.get("fingerprint").and_then(Value::as_object);
    if version == HASH_FORMAT_EPOCH
        && fp_value.is_some()
        && fp_value
            .and_then(|f| f.get("hashFormat"))
            .and_then(Value::as_str)
            != Some(HASH_FORMAT_JCS1)
    {
        return Err(format!(
            "v{version} cassette is missing fingerprint.hashFormat — inconsistent with its stamped \
                version; re-record"
        ));
    }
    if version >= HASH_FORMAT_EPOCH {
        return Ok((Action::Skipped, format!("already at v{version}")));
    }
    let crosses_into_v10 = version < 10;
    let recorded = cassette.fingerprint().unwrap_or_default();

    if recorded.skill_hash.is_none() {
        return metadata_only(&cassette, opts, crosses_into_v10);
    }
    if opts.session.is_some() && crate::verify::gate::resolve_session(&cassette, None).is_none() {
        return Err(
            "--session cannot apply to an INLINE scenario (it has no session file to override) — \
                re-record"
                .into(),
        );
    }
    let live = proven_unchanged(&cassette, &recorded, opts)?;
    if crosses_into_v10 {
        return Err(v9_refusal(version));
    }
    let migrated_sigs = migrate_file_sigs(&recorded, &live.legacy, &live.jcs1)
        .map_err(|reason| format!("{reason} — re-record required"))?;
    let mut doc = cassette.doc.clone();
    stamp_version(&mut doc);
    if let Some(Value::Object(fp)) = doc.get_mut("fingerprint") {
        write_jcs1(fp, &live.jcs1, migrated_sigs);
    }
    let to = stamped_version(&doc);
    finish(&cassette, doc, opts, format!("v{version} → v{to}"))
}

/// The live fingerprints, once they prove the skill unchanged since the
/// recording: same file-set mode, same agent scope, same legacy skillHash.
fn proven_unchanged(
    cassette: &Cassette,
    recorded: &FingerprintRecord,
    opts: &RehashOptions,
) -> Result<LiveFingerprints, String> {
    let live =
        crate::fingerprint::live_for_cassette(cassette, opts.session.as_deref()).map_err(|_| {
            "skill dirs not resolvable from cassette location — cannot prove content unchanged"
                .to_owned()
        })?;
    let (Some(live_legacy_hash), Some(_)) = (&live.legacy.skill_hash, &live.jcs1.skill_hash) else {
        return Err("unreadable skill sources — cannot prove content unchanged; re-record".into());
    };
    let rec_mode = recorded.mode.as_deref().unwrap_or("raw");
    let live_mode = live.jcs1.mode.as_deref().unwrap_or("raw");
    if rec_mode != live_mode {
        return Err(format!(
            "recorded in '{rec_mode}' file-set mode, now '{live_mode}' — re-record under the same \
                mode"
        ));
    }
    if recorded.agent_scope.as_deref().unwrap_or("off")
        != live.jcs1.agent_scope.as_deref().unwrap_or("off")
    {
        return Err(
            "agent-scope differs from the recording — re-record under the same setting".into(),
        );
    }
    if Some(live_legacy_hash) != recorded.skill_hash.as_ref() {
        return Err(
            "skill content changed since recording (legacy skillHash mismatch) — re-record \
            required"
                .into(),
        );
    }
    Ok(live)
}

/// Writes the jcs1 digests (and the migrated fileSigs) into a fingerprint.
fn write_jcs1(
    fp: &mut Map<String, Value>,
    jcs1: &FingerprintRecord,
    migrated_sigs: Option<Vec<(String, String)>>,
) {
    set_or_remove(fp, "skillHash", jcs1.skill_hash.clone());
    set_or_remove(fp, "contentSig", jcs1.content_sig.clone());
    set_or_remove(fp, "sharedHash", jcs1.shared_hash.clone());
    set_or_remove(fp, "mode", jcs1.mode.clone());
    if let Some(sigs) = migrated_sigs {
        fp.insert(
            "fileSigs".into(),
            Value::Array(
                sigs.into_iter()
                    .map(|(p, s)| Value::Array(vec![Value::String(p), Value::String(s)]))
                    .collect(),
            ),
        );
    }
    fp.insert("hashFormat".into(), Value::String(HASH_FORMAT_JCS1.into()));
}

/// A baseline-only fingerprint (no skillHash): migrate only with positive
/// proof that the recording had zero skill sources (the recorded session
/// shape still matches, and the session resolves to zero roots).
fn metadata_only(
    cassette: &Cassette,
    opts: &RehashOptions,
    crosses_into_v10: bool,
) -> Result<(Action, String), String> {
    let session = crate::verify::gate::resolve_session(cassette, opts.session.as_deref());
    let live_shape = session
        .as_deref()
        .and_then(crate::fingerprint::session_fingerprint);
    let shape_intact = cassette.session_fingerprint().is_some()
        && cassette.session_fingerprint() == live_shape.as_deref();
    let recorded_session = cassette
        .scenario()
        .get("session")
        .and_then(Value::as_str)
        .unwrap_or("");
    let sources = crate::fingerprint::resolve_sources(
        recorded_session,
        Some(cassette.dir()),
        opts.session.as_deref(),
    );
    let genuinely_zero = sources.failure.is_none() && sources.roots.is_empty();
    if !shape_intact || !genuinely_zero {
        return Err(match &sources.failure {
            Some(crate::fingerprint::SourceFailure::DeclaredDirsMissing { declared, .. }) => {
                format!(
                    "no skillHash, and the session declares {declared} skill root(s) that do not \
                    resolve — absence means the hash FAILED, not that there was nothing to hash; \
                    re-record"
                )
            }
            Some(f) => format!(
                "no skillHash, and the session could not be resolved ({f}) — cannot prove the \
                    recording had zero skill sources; re-record"
            ),
            None => "no skillHash, and no matching session shape to prove the recording genuinely \
                had zero skill sources — re-record if this cassette needs to be current"
                .into(),
        });
    }
    if crosses_into_v10 {
        return Err(v9_refusal(cassette.version));
    }
    let mut doc = cassette.doc.clone();
    stamp_version(&mut doc);
    if let Some(Value::Object(fp)) = doc.get_mut("fingerprint") {
        fp.insert("hashFormat".into(), Value::String(HASH_FORMAT_JCS1.into()));
    }
    let to = stamped_version(&doc);
    finish(
        cassette,
        doc,
        opts,
        format!(
            "v{} → v{to} (metadata only — zero skill sources)",
            cassette.version
        ),
    )
}

/// The version a migrated cassette stamps: the lowest its scenario needs
/// (the epoch for any scenario a pre-epoch cassette can hold).
fn stamped_version(doc: &Map<String, Value>) -> u64 {
    let scenario = doc.get("scenario").and_then(Value::as_object);
    crate::assert::stamp::required_version(scenario.unwrap_or(&Map::new()), doc)
}

fn stamp_version(doc: &mut Map<String, Value>) {
    let version = stamped_version(doc);
    doc.insert("$schema".into(), Value::String(schema_url(version)));
    if !doc.contains_key("generator") {
        doc.insert("generator".into(), Value::String("cowork-harness".into()));
    }
    doc.insert("cassetteVersion".into(), Value::from(version));
}

fn set_or_remove(fp: &mut Map<String, Value>, key: &str, value: Option<String>) {
    match value {
        Some(v) => {
            fp.insert(key.into(), Value::String(v));
        }
        None => {
            fp.shift_remove(key);
        }
    }
}

fn finish(
    cassette: &Cassette,
    doc: Map<String, Value>,
    opts: &RehashOptions,
    reason: String,
) -> Result<(Action, String), String> {
    if opts.dry_run {
        return Ok((Action::Migrated, format!("{reason} (dry-run)")));
    }
    // Keep the file's own dialect (JS or Python-escaped JSON, final newline
    // or not) so only the migrated fields change.
    let style = std::fs::read(&cassette.path)
        .map(|b| WriteStyle::detect(&b))
        .unwrap_or(WriteStyle::JS);
    let text = crate::cassette::write::to_json_pretty_with(&doc, style);
    crate::atomic::write_atomic(&cassette.path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", cassette.path.display()))?;
    Ok((Action::Migrated, reason))
}

/// fileSigs migration: counts must match, kinds line up, the legacy
/// recompute must equal the recorded list at every index (paths are not
/// compared: they may be redacted). Returns the recorded paths with the
/// jcs1 digests swapped in, `None` when the cassette records no fileSigs.
fn migrate_file_sigs(
    recorded: &FingerprintRecord,
    live_legacy: &FingerprintRecord,
    live_jcs1: &FingerprintRecord,
) -> Result<Option<Vec<(String, String)>>, String> {
    let Some(rec) = &recorded.file_sigs else {
        return Ok(None);
    };
    let (Some(legacy), Some(jcs1)) = (&live_legacy.file_sigs, &live_jcs1.file_sigs) else {
        return Err(
            "the live tree exceeds the fileSigs cap while the recording has a manifest — \
            cannot migrate"
                .into(),
        );
    };
    if rec.len() != jcs1.len() || legacy.len() != rec.len() {
        return Err(format!(
            "fileSigs entry count differs (recorded {}, live {}) — cannot migrate",
            rec.len(),
            jcs1.len()
        ));
    }
    let mut out = Vec::with_capacity(rec.len());
    for (i, ((rp, rs), ((_, ls), (_, js)))) in rec.iter().zip(legacy.iter().zip(jcs1)).enumerate() {
        if rs.starts_with("lnk:") != js.starts_with("lnk:") {
            return Err(format!(
                "fileSigs entry {i} changed kind (file <-> link) — cannot migrate"
            ));
        }
        if rs != ls {
            return Err(format!(
                "fileSigs entry {i} does not match the legacy recompute — order or content \
                    differs; cannot migrate"
            ));
        }
        out.push((rp.clone(), js.clone()));
    }
    Ok(Some(out))
}

/// Expands rehash targets: a directory means its `*.cassette.json`
/// ([`crate::discover::cassettes_in`]); a file is taken as given.
pub fn collect_files(target: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !target.is_dir() {
        return Ok(vec![target.to_path_buf()]);
    }
    crate::discover::cassettes_in(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sigs: &[(&str, &str)]) -> FingerprintRecord {
        FingerprintRecord {
            file_sigs: Some(
                sigs.iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn file_sigs_swap_digests_and_keep_recorded_paths() {
        let out = migrate_file_sigs(
            &rec(&[("[REDACTED:x]/a.md", "L1"), ("b", "lnk:t")]),
            &rec(&[("real/a.md", "L1"), ("b", "lnk:t")]),
            &rec(&[("real/a.md", "J1"), ("b", "lnk:t")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(out[0], ("[REDACTED:x]/a.md".into(), "J1".into()));
    }

    #[test]
    fn file_sigs_refuse_on_count_kind_and_digest() {
        let r = rec(&[("a", "L1")]);
        assert!(
            migrate_file_sigs(&r, &rec(&[]), &rec(&[]))
                .unwrap_err()
                .contains("count differs")
        );
        assert!(
            migrate_file_sigs(&r, &rec(&[("a", "L2")]), &rec(&[("a", "J")]))
                .unwrap_err()
                .contains("entry 0")
        );
        assert!(
            migrate_file_sigs(&r, &rec(&[("a", "L1")]), &rec(&[("a", "lnk:x")]))
                .unwrap_err()
                .contains("kind")
        );
    }

    #[test]
    fn writer_keeps_order_and_appends_hash_format() {
        let text = r#"{"$schema":"x","cassetteVersion":11,"fingerprint":{"baseline":"1","skillHash":"h"},"z":1}"#;
        let mut doc: Map<String, Value> = serde_json::from_str(text).unwrap();
        stamp_version(&mut doc);
        if let Some(Value::Object(fp)) = doc.get_mut("fingerprint") {
            fp.insert("hashFormat".into(), Value::String("jcs1".into()));
        }
        let keys: Vec<_> = doc.keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "$schema",
                "cassetteVersion",
                "fingerprint",
                "z",
                "generator"
            ]
        );
        let fp_keys: Vec<_> = doc["fingerprint"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(fp_keys, ["baseline", "skillHash", "hashFormat"]);
    }
}
