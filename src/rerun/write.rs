//! `rerun --write`: the fresh recording replaces the committed cassette
//! (through the review stage) only when it passes and, unless
//! `--accept-divergence`, matches the recording.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::divergence::Divergence;
use super::{RerunError, RerunOptions};
use crate::cassette::Cassette;

/// Writes the fresh recording if the verdict allows, saying what happened in
/// `notes`; a difference refused in CI joins `failures`.
pub(super) fn write_back(
    path: &Path,
    fresh: &Cassette,
    divergences: &[Divergence],
    failures: &mut Vec<String>,
    notes: &mut Vec<String>,
    opts: &RerunOptions,
) -> Result<Option<PathBuf>, RerunError> {
    if opts.live_model {
        return stage_live(path, fresh, failures, notes, opts.from_turn.unwrap_or(1));
    }
    let may_write = failures.is_empty() && (divergences.is_empty() || opts.accept_divergence);
    if !may_write {
        notes.push(if !failures.is_empty() {
            "::notice:: [rerun] --write: the verdict fails; the cassette was left as it is".into()
        } else {
            format!(
                "::notice:: [rerun] --write: {} divergence(s); the cassette was left as it is \
                    (--accept-divergence writes it, marked)",
                divergences.len()
            )
        });
        return Ok(None);
    }
    let mut fresh = fresh.clone();
    if !divergences.is_empty() {
        mark_diverged(&mut fresh, divergences.len());
    }
    stage(path, &fresh, opts.stage, "--write", (failures, notes))
}

/// `--live-model`: a passing fresh recording, marked as answered live from
/// turn `n`, always goes to a `.new` for review (even under CI, and whatever
/// diverged: a live model's replies differ by nature), never over `path`.
fn stage_live(
    path: &Path,
    fresh: &Cassette,
    failures: &mut Vec<String>,
    notes: &mut Vec<String>,
    n: usize,
) -> Result<Option<PathBuf>, RerunError> {
    if !failures.is_empty() {
        notes.push(
            "::notice:: [rerun] --live-model: the verdict fails; nothing was staged (the run \
                directory is kept)"
                .into(),
        );
        return Ok(None);
    }
    let mut fresh = fresh.clone();
    mark(
        &mut fresh,
        json!({
            "liveModelFromTurn": n,
            "note": "written by `reel rerun --live-model`: the replies from this turn on came from \
                the live model, the earlier ones from the recording it was rerun from",
        }),
    );
    let review = crate::review::StageOptions {
        accept: false,
        ci: false,
    };
    stage(path, &fresh, review, "--live-model", (failures, notes))
}

/// Stages `fresh` as the re-recording of `path` for `flag`, saying what
/// happened.
fn stage(
    path: &Path,
    fresh: &Cassette,
    review: crate::review::StageOptions,
    flag: &str,
    (failures, notes): (&mut Vec<String>, &mut Vec<String>),
) -> Result<Option<PathBuf>, RerunError> {
    match crate::review::stage_rerecording(path, fresh, review) {
        Ok(crate::review::Outcome::Written { path: to, .. }) => {
            notes.push(format!("::notice:: [rerun] wrote {}", to.display()));
            Ok(Some(to))
        }
        Ok(crate::review::Outcome::Unchanged { .. }) => {
            notes.push(format!(
                "::notice:: [rerun] {flag}: the fresh recording is identical to the committed \
                        cassette; nothing written"
            ));
            Ok(None)
        }
        Ok(crate::review::Outcome::Pending {
            new,
            summary,
            review_command,
            ..
        }) => {
            let accept = if flag == "--write" {
                " (--accept writes in place)"
            } else {
                ""
            };
            notes.push(format!(
                "::notice:: [rerun] {flag}: the fresh recording differs ({summary}); written to \
                    {} for review: {review_command}{accept}",
                new.display()
            ));
            Ok(Some(new))
        }
        Err(crate::review::StageError::Write { path: to, source }) => Err(RerunError::invalid(
            format!("write `{}`: {source}", to.display()),
            "the committed cassette was left intact".to_owned(),
        )),
        Err(e @ crate::review::StageError::DiffersInCi { .. }) => {
            let mut message = e.to_string();
            if let Some(d) = e.diff() {
                message.push('\n');
                message.push_str(&crate::diff::render::diff_text(d, false));
            }
            failures.push(message);
            Ok(None)
        }
    }
}

/// Marks a cassette written from a diverged rerun, where cowork-harness
/// tolerates it (`environment` is open to additive keys): a later reader
/// knows its replies were not produced from its own inputs.
fn mark_diverged(cassette: &mut Cassette, count: usize) {
    mark(
        cassette,
        json!({
            "divergedFromRecording": true,
            "divergences": count,
            "note": "written by `reel rerun --accept-divergence`: the model replies were \
                recorded from other inputs",
        }),
    );
}

/// Sets `environment.reelRerun`, where cowork-harness tolerates it.
fn mark(cassette: &mut Cassette, value: serde_json::Value) {
    let env = cassette
        .doc
        .entry("environment")
        .or_insert_with(|| json!({"location": "local"}));
    if let Some(env) = env.as_object_mut() {
        env.insert("reelRerun".into(), value);
    }
}

/// `fresh`, stamped no lower than `read` (the version of the cassette it
/// replaces): a fresh recording is stamped with the lowest version its
/// scenario needs, and writing that over a newer-stamped cassette would
/// silently downgrade the committed file. Every format from the hash epoch
/// on shares one digest scheme, so a higher stamp reads the same.
pub(super) fn at_least_version(fresh: &Cassette, read: u64) -> Cassette {
    let mut out = fresh.clone();
    if read > out.version && read <= crate::cassette::CASSETTE_VERSION {
        out.doc
            .insert("$schema".into(), json!(crate::cassette::schema_url(read)));
        out.doc.insert("cassetteVersion".into(), json!(read));
        out.version = read;
    }
    out
}
