//! Departure 2 (README "Differences"): on a fully scripted cassette, every
//! recorded answer must be one the frozen `answers:` could have produced; one
//! that could not (a hand-edited controlOut) fails replay with a
//! `replay_protocol_fidelity` pseudo-assertion instead of replaying green
//! (cowork-harness replays it green, docs/spec/replay.md §8.1).
//!
//! The decider lives in `crate::scenario::answers` (the "record" helper): its
//! `check_recorded_answers(&Cassette) -> Vec<String>` re-derives each answer
//! with the whole decider (rules, `choose` ladder, permission-parity default).

use crate::cassette::Cassette;

/// Problems with the recorded answers of `cassette`, empty when consistent or
/// when the cassette's authoring was not fully scripted (an LLM/human-decided
/// answer cannot be re-derived).
pub fn recorded_answer_problems(cassette: &Cassette) -> Vec<String> {
    let scripted = cassette.authoring().is_none_or(|a| !a.non_deterministic);
    let has_control_out = cassette.control_out().is_some_and(|c| !c.is_empty());
    if !scripted || !has_control_out {
        return Vec::new();
    }
    crate::scenario::answers::check_recorded_answers(cassette)
}

/// The pseudo-assertion message for one problem.
pub fn message(problem: &str) -> String {
    format!(
        "recorded answer could not have come from the frozen answers: — {problem} (a hand-edited \
            cassette does not \
         replay green; re-record)"
    )
}
