//! `reel rerun C --from-turn N --live-model` (docs/snapshots.md): turns
//! before N are served from the recording, turn N on by the real API, the
//! loopback model switching over at the main conversation's first reply of
//! turn N (`model::upstream`). The fresh recording is staged for review as a
//! `.new` beside the cassette, never written over it (`write`).

use super::RerunError;
use crate::cassette::Cassette;
use crate::model::{Script, Upstream};

/// The live model a rerun from user turn `n` switches to, refused (exit 3)
/// without a credential.
pub fn upstream(cassette: &Cassette, script: &Script, n: usize) -> Result<Upstream, RerunError> {
    let from_main_turn = first_main_turn_of(cassette, script, n);
    Upstream::from_env(from_main_turn).map_err(|e| {
        RerunError::cannot(
            format!("{}: --live-model: {e}", cassette.path.display()),
            "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to the credential `reel record` uses \
             for a live run; ANTHROPIC_BASE_URL points it at another endpoint"
                .to_owned(),
        )
    })
}

/// The index among `script`'s main turns of the first reply recorded in
/// user turn `n` (by message id); every turn when turn `n` has none.
fn first_main_turn_of(cassette: &Cassette, script: &Script, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let of_id = super::turns::user_turn_of_main_message_ids(cassette);
    script
        .turns
        .iter()
        .position(|t| {
            t.id.as_deref()
                .and_then(|id| of_id.iter().find(|(m, _)| m == id))
                .is_some_and(|(_, user_turn)| *user_turn >= n)
        })
        .unwrap_or(script.turns.len())
}

/// The note of what the live model answered.
pub fn note(n: usize, upstream: &Upstream, forwarded: usize) -> String {
    format!(
        "--live-model: turn {n} on was answered by the live model at {} ({forwarded} \
         request(s)); the turns before it by the recorded replies",
        upstream.base_url
    )
}
