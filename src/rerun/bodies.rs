//! The bytes of output files a manifest did not inline (over the body cap),
//! for rerun's content diffs (`outputs::Bodies`): the recorded side from
//! the recording's final snapshot (docs/snapshots.md), the fresh side from
//! the fresh run's work root, still on disk while rerun compares.

use std::path::{Path, PathBuf};

use crate::cassette::Cassette;
use crate::snapshot::restore;

/// Largest file read for a diff (the document readers have their own
/// budgets below this).
const READ_CAP: u64 = 256 << 20;

/// The recorded bytes of a path, from the cassette's run-end snapshot
/// (none when it has no checkpoint or the blob is not in the store).
pub fn recorded(cassette: &Cassette) -> impl Fn(&str) -> Option<Vec<u8>> + use<> {
    restore::final_state_files(cassette, READ_CAP)
}

/// The fresh run's bytes of a path (work-root-relative, plain components,
/// a regular file not over the cap).
pub fn fresh(work_root: &Path) -> impl Fn(&str) -> Option<Vec<u8>> + use<> {
    let root: PathBuf = work_root.to_path_buf();
    move |path| {
        let rel = crate::snapshot::archive::checked_path(path.as_bytes()).ok()?;
        let full = root.join(rel);
        let meta = std::fs::symlink_metadata(&full).ok()?;
        (meta.is_file() && meta.len() <= READ_CAP)
            .then(|| std::fs::read(&full).ok())
            .flatten()
    }
}
