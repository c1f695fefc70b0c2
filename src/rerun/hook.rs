//! What a rerun watches the fresh run for (docs/snapshots.md): under
//! `--from-turn N` the restore at turn N−1's boundary ([`from_turn`]); under
//! `--write` the snapshots a recording takes (`record::checkpoints`), so the
//! cassette it writes names its own. One call to make it, one to finish it.

use std::cell::RefCell;
use std::path::Path;

use super::divergence::Divergence;
use super::{RerunError, RerunOptions, from_turn};
use crate::cassette::Cassette;
use crate::record::checkpoints::{self, RunHook, Snapshotter};
use crate::replay::ReplayResult;

/// The fresh run's hook.
pub enum Hook {
    Restore(RefCell<from_turn::Restore>),
    Snapshots(RefCell<Snapshotter>),
}

/// The hook `opts` asks for, if any (`--from-turn` and `--write` never
/// come together: the CLI refuses it).
pub fn of(
    cassette: &Cassette,
    path: &Path,
    opts: &RerunOptions,
) -> Result<Option<Hook>, RerunError> {
    if let Some(n) = opts.from_turn {
        return Ok(from_turn::prepare(cassette, n)?.map(|r| Hook::Restore(RefCell::new(r))));
    }
    if !opts.write {
        return Ok(None);
    }
    let snapshotter = checkpoints::for_recording(path)
        .map_err(|e| RerunError::invalid(crate::Error::from(e).message, None))?;
    Ok(snapshotter.map(|s| Hook::Snapshots(RefCell::new(s))))
}

impl Hook {
    pub fn as_run_hook(&self) -> &dyn RunHook {
        match self {
            Hook::Restore(r) => r,
            Hook::Snapshots(s) => s,
        }
    }

    /// After the comparison, before anything is written: turn N on only
    /// (`--from-turn`), or the checkpoints added to the fresh cassette.
    pub fn finish(
        self,
        (recorded, fresh): (&Cassette, &mut Cassette),
        divergences: &mut Vec<Divergence>,
        judged: (&mut Vec<String>, &mut ReplayResult),
        notes: &mut Vec<String>,
    ) {
        match self {
            Hook::Restore(r) => r.into_inner().apply(recorded, divergences, judged, notes),
            Hook::Snapshots(s) => notes.extend(checkpoints::insert_into(s.into_inner(), fresh)),
        }
    }
}
