//! Record's checkpoints (docs/snapshots.md): a snapshot of the run's
//! writable workspace roots at each turn boundary and once the agent has
//! exited, each made durable in the store before the cassette that names it
//! is written (`record` inserts [`Snapshotter::finish`]'s key last).
//!
//! Best effort: a snapshot that cannot be taken (too large, a store that
//! cannot be written) is a warning and no checkpoint; the recording itself
//! goes on.

use std::path::PathBuf;

use super::stage::Staged;
use crate::snapshot::{At, Checkpoint, Checkpoints, Consistency, Store, archive::Limits};

pub use crate::run::hook::{HookMut, RunHook};

/// The roots a snapshot holds: the user-visible roots the agent can write
/// (`outputs/` and the writable connected folders); read-only mounts are
/// copies of their sources, staged again on every run.
pub fn writable_roots(staged: &Staged) -> Vec<String> {
    let mut roots: Vec<String> = staged
        .user_visible_roots
        .iter()
        .filter(|r| !staged.readonly_roots.contains(r) && !r.contains('/'))
        .cloned()
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// Takes the checkpoints of one recording.
pub struct Snapshotter {
    store: Store,
    limits: Limits,
    work: Option<(PathBuf, Vec<String>)>,
    taken: Vec<Checkpoint>,
    /// The last turn that ended (1-based).
    last_turn: usize,
    pub warnings: Vec<String>,
}

impl Snapshotter {
    pub fn new(store: Store) -> Snapshotter {
        Snapshotter {
            store,
            limits: Limits::default(),
            work: None,
            taken: Vec::new(),
            last_turn: 0,
            warnings: Vec::new(),
        }
    }

    /// One snapshot, recorded as a checkpoint when it was taken.
    fn take(&mut self, turn: usize, at: At) {
        let Some((work_root, roots)) = &self.work else {
            return;
        };
        match self.store.put(work_root, roots, &self.limits) {
            Ok(taken) => self.taken.push(Checkpoint {
                reference: taken.reference.to_string(),
                turn,
                at,
                consistency: if taken.archived.changed {
                    Consistency::Fuzzy
                } else {
                    Consistency::Quiescent
                },
                files: taken.archived.files,
                content_bytes: taken.archived.content_bytes,
                blob_bytes: taken.blob_bytes,
            }),
            Err(e) => self
                .warnings
                .push(format!("snapshot after turn {turn} not taken: {e}")),
        }
    }

    /// The run-end snapshot (the agent has exited), then the cassette key
    /// (`None`: nothing was staged or no snapshot could be taken).
    pub fn finish(mut self) -> (Option<Checkpoints>, Vec<String>) {
        let turn = self.last_turn.max(1);
        self.take(turn, At::RunEnd);
        let key = match (&self.work, self.taken.is_empty()) {
            (Some((_, roots)), false) => Some(Checkpoints {
                roots: roots.clone(),
                checkpoints: self.taken,
            }),
            _ => None,
        };
        (key, self.warnings)
    }
}

impl HookMut for Snapshotter {
    fn staged(&mut self, staged: &Staged) {
        self.work = Some((staged.work_root.clone(), writable_roots(staged)));
    }

    fn turn_ended(&mut self, index: usize) {
        self.last_turn = index + 1;
        self.take(index + 1, At::TurnEnd);
    }
}

/// The snapshotter of a recording to `cassette` (`None` under `[snapshots]
/// record = false`).
pub fn for_recording(
    cassette: &std::path::Path,
) -> Result<Option<Snapshotter>, super::RecordError> {
    let config =
        crate::project::ProjectConfig::discover_cwd().map_err(|e| super::RecordError::Setup {
            message: e.to_string(),
            hint: Some("fix reel.toml (docs/project-config.md)".into()),
        })?;
    Ok(config
        .snapshots
        .record
        .then(|| Snapshotter::new(Store::for_cassette(cassette, &config))))
}

/// The run-end snapshot taken and the checkpoints added at the end of the
/// cassette; the warnings of snapshots not taken.
pub fn insert_into(
    snapshotter: Snapshotter,
    cassette: &mut crate::cassette::Cassette,
) -> Vec<String> {
    let (key, mut warnings) = snapshotter.finish();
    if let Some(key) = key {
        key.insert_into(&mut cassette.doc);
        warnings.extend(crate::verify::snapshots::secret_warnings(
            &cassette.path,
            &cassette.doc,
        ));
    }
    warnings
}

/// `REEL_TEST_KILL_AFTER_SNAPSHOT=1`: the recorder kills itself (SIGKILL)
/// once its snapshots are durable and before the cassette is written — the
/// crash the blob-before-pointer order is for (tests/it/snapshot.rs).
pub fn test_crash_point() {
    if std::env::var_os("REEL_TEST_KILL_AFTER_SNAPSHOT").is_some_and(|v| v == "1") {
        // SAFETY: raise has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}
