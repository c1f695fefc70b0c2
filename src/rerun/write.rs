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
    match crate::review::stage_rerecording(path, &fresh, opts.stage) {
        Ok(crate::review::Outcome::Written { path: to, .. }) => {
            notes.push(format!("::notice:: [rerun] wrote {}", to.display()));
            Ok(Some(to))
        }
        Ok(crate::review::Outcome::Unchanged { .. }) => {
            notes.push(
                "::notice:: [rerun] --write: the fresh recording is identical to the committed \
                    cassette; nothing written"
                    .into(),
            );
            Ok(None)
        }
        Ok(crate::review::Outcome::Pending {
            new,
            summary,
            review_command,
            ..
        }) => {
            notes.push(format!(
                "::notice:: [rerun] --write: the fresh recording differs ({summary}); written to \
                    {} for review: {review_command} (--accept writes in place)",
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
    let env = cassette
        .doc
        .entry("environment")
        .or_insert_with(|| json!({"location": "local"}));
    if let Some(env) = env.as_object_mut() {
        env.insert(
            "reelRerun".into(),
            json!({
                "divergedFromRecording": true,
                "divergences": count,
                "note": "written by `reel rerun --accept-divergence`: the model replies were \
                    recorded from other inputs",
            }),
        );
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
