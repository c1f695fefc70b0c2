//! The deadline watchdog: a backtracking match runs on a worker thread and is
//! abandoned, not awaited, when it overruns; abandoned workers are counted so
//! a flood of catastrophic patterns cannot pile up threads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How long a backtracking (`regress`) match may run before it is abandoned.
pub const BACKTRACK_DEADLINE: Duration = Duration::from_secs(2);
/// An abandoned (timed-out) match keeps its worker thread busy until it ends
/// on its own (a thread cannot be killed); while this many are still running,
/// new backtracking matches are refused instead of piling up.
pub const MAX_RUNAWAY_WORKERS: usize = 4;

static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// Runs `search` with the backtracker on a worker thread, under
/// [`BACKTRACK_DEADLINE`].
pub(super) fn bounded<I: Send + 'static, T: Send + 'static>(
    re: &Arc<regress::Regex>,
    input: I,
    search: fn(&regress::Regex, &I) -> T,
) -> Result<T, String> {
    if ABANDONED.load(Ordering::SeqCst) >= MAX_RUNAWAY_WORKERS {
        return Err(format!(
            "regex evaluation refused: {MAX_RUNAWAY_WORKERS} abandoned backtracking matches are \
                still running (catastrophic patterns?)"
        ));
    }
    // 0 = running, 1 = finished, 2 = abandoned by the caller.
    let state = Arc::new(AtomicU8::new(0));
    let (tx, rx) = mpsc::channel();
    let re = Arc::clone(re);
    let worker_state = Arc::clone(&state);
    let spawned = std::thread::Builder::new()
        .name("reel-regex".into())
        .spawn(move || {
            let found = search(&re, &input);
            if worker_state.swap(1, Ordering::SeqCst) == 2 {
                ABANDONED.fetch_sub(1, Ordering::SeqCst);
            }
            // The receiver may be gone after a timeout; nothing to do then.
            let _ = tx.send(found);
        });
    if spawned.is_err() {
        return Err("regex evaluation could not start a worker thread".into());
    }
    match rx.recv_timeout(BACKTRACK_DEADLINE) {
        Ok(found) => Ok(found),
        Err(_) => {
            if state
                .compare_exchange(0, 2, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                ABANDONED.fetch_add(1, Ordering::SeqCst);
                Err(format!(
                    "regex evaluation exceeded {}s (catastrophic backtracking?) — simplify the \
                        pattern",
                    BACKTRACK_DEADLINE.as_secs()
                ))
            } else {
                // Finished just at the deadline: its answer is on the way.
                rx.recv()
                    .map_err(|_| "regex worker ended without an answer".to_owned())
            }
        }
    }
}
