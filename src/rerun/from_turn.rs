//! `reel rerun C --from-turn N` (docs/snapshots.md): rerun a multi-turn
//! recording from user turn N, with the workspace turn N−1 left.
//!
//! What is faithful and what is not: the agent's conversation history is
//! rebuilt by replaying turns 1..N−1 against their recorded replies in the
//! same session (Claude Code's own transcript is internal to it, so reel does
//! not forge one); their tool calls run again. At the boundary after turn
//! N−1 — before turn N's user message is sent — the writable workspace roots
//! are replaced by the recording's checkpoint of that turn
//! ([`crate::snapshot::restore::into_work_root`]), so turn N starts from the
//! files the recording had, whatever the replayed turns wrote. Turns before
//! N are neither compared (their divergences are dropped) nor judged (their
//! per-turn assertions are left out); turn N on, and the whole-session
//! assertions, are.

use std::path::PathBuf;

use super::RerunError;
use super::divergence::Divergence;
use crate::cassette::Cassette;
use crate::record::checkpoints::HookMut;
use crate::record::stage::Staged;
use crate::replay::ReplayResult;
use crate::snapshot::{Checkpoints, Ref, Store, restore};

/// The restore a `--from-turn N` rerun makes at the turn N−1 boundary.
pub struct Restore {
    from_turn: usize,
    store: Store,
    reference: Ref,
    roots: Vec<String>,
    work_root: Option<PathBuf>,
    /// `None`: the boundary never came; `Some(Err)`: the restore failed.
    done: Option<Result<(), String>>,
}

/// The restore of a rerun from turn `n` of `cassette` (`None` for turn 1:
/// a plain rerun), refused when the cassette cannot give it.
pub fn prepare(cassette: &Cassette, n: usize) -> Result<Option<Restore>, RerunError> {
    let path = cassette.path.display();
    let turns = crate::replay::turns::event_ranges(cassette).len().max(1);
    if n == 0 || n > turns {
        return Err(RerunError::invalid(
            format!("{path}: --from-turn {n}: the recording has {turns} user turn(s)"),
            format!("give a turn from 1 to {turns}"),
        ));
    }
    if n == 1 {
        return Ok(None);
    }
    let checkpoints = Checkpoints::of(&cassette.doc)
        .map_err(|e| RerunError::invalid(format!("{path}: {e}"), None))?
        .ok_or_else(|| {
            RerunError::invalid(
                format!("{path}: --from-turn {n}: the recording has no checkpoints"),
                "re-record it with this reel (record takes a snapshot at each turn end)".to_owned(),
            )
        })?;
    let checkpoint = checkpoints.after_turn(n - 1).ok_or_else(|| {
        RerunError::invalid(
            format!(
                "{path}: --from-turn {n}: no checkpoint after turn {}",
                n - 1
            ),
            "re-record it: its snapshot of that turn was not taken".to_owned(),
        )
    })?;
    let reference = checkpoint
        .parsed()
        .map_err(|e| RerunError::invalid(format!("{path}: {e}"), None))?;
    let store = Store::of_cassette(&cassette.path);
    store.check(&reference).map_err(|e| {
        RerunError::cannot(
            format!("{path}: --from-turn {n}: {e}"),
            "restore the snapshot store (e.g. `git lfs pull`) or re-record".to_owned(),
        )
    })?;
    Ok(Some(Restore {
        from_turn: n,
        store,
        reference,
        roots: checkpoints.roots,
        work_root: None,
        done: None,
    }))
}

impl HookMut for Restore {
    fn staged(&mut self, staged: &Staged) {
        self.work_root = Some(staged.work_root.clone());
    }

    fn turn_ended(&mut self, index: usize) {
        // `index` is 0-based: turn N−1 is index N−2.
        if index + 2 != self.from_turn {
            return;
        }
        let Some(work_root) = &self.work_root else {
            return;
        };
        self.done = Some(
            restore::into_work_root(&self.store, &self.reference, work_root, &self.roots)
                .map_err(|e| e.to_string()),
        );
    }
}

impl Restore {
    /// Turn N on, as the rerun reports it: divergences and per-turn
    /// outcomes of earlier turns dropped, a failed or missing restore a
    /// failure, and a note saying what was done.
    pub fn apply(
        self,
        cassette: &Cassette,
        divergences: &mut Vec<Divergence>,
        (failures, result): (&mut Vec<String>, &mut ReplayResult),
        notes: &mut Vec<String>,
    ) {
        let n = self.from_turn;
        let of_model_turn = super::turns::user_turn_of_model_turns(cassette);
        divergences.retain(|d| {
            let user_turn = (d.conversation == "main")
                .then_some(d.turn)
                .flatten()
                .and_then(|t| of_model_turn.get(t).copied());
            user_turn.is_none_or(|u| u >= n)
        });
        let earlier = |text: &str| {
            (1..n).any(|k| text.starts_with(&format!("turn {k}:")) || text == format!("turn {k}"))
        };
        failures.retain(|f| !earlier(f));
        result
            .assertions
            .retain(|a| !a.source.as_deref().is_some_and(earlier));
        if let Some(serde_json::Value::Array(rows)) = result.run.get_mut("assertions") {
            rows.retain(|a| {
                !a.get("source")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(earlier)
            });
        }
        let before = result.verdict.failures.len();
        result.verdict.failures.retain(|f| !earlier(&f.message));
        let other_fail_signal =
            result.verdict.signals.iter().any(|s| {
                s.severity == crate::replay::verdict::Severity::Fail && s.code != "assertion"
            });
        if result.verdict.failures.len() < before
            && result.verdict.failures.is_empty()
            && !other_fail_signal
        {
            result.verdict.pass = true;
        }
        match self.done {
            Some(Ok(())) => notes.push(format!(
                "from turn {n}: the workspace was restored from the checkpoint after turn {} \
                 ({}); {} replayed against the recorded replies to rebuild the conversation, \
                 neither compared nor judged",
                n - 1,
                self.reference,
                if n == 2 {
                    "turn 1 was".to_owned()
                } else {
                    format!("turns 1–{} were", n - 1)
                }
            )),
            Some(Err(e)) => failures.insert(0, format!("run error: --from-turn {n}: {e}")),
            None => failures.insert(
                0,
                format!(
                    "run error: --from-turn {n}: the session ended before turn {} did; nothing \
                     was restored",
                    n - 1
                ),
            ),
        }
    }
}
