//! The user turn of a multi-turn rerun's first divergence (docs/multi-turn.md):
//! a divergence names the model turn of its conversation; the recording's
//! `reelTurns` marks say which user turn's slice of the events holds it.

use std::collections::HashSet;

use serde_json::Value;

use super::divergence::Divergence;
use crate::cassette::Cassette;
use crate::replay::turns::event_ranges;

/// For each main-conversation model turn, in order, the 1-based user turn it
/// answered: the distinct assistant message ids of the main conversation
/// (no `parent_tool_use_id`) in each turn's slice.
pub fn user_turn_of_model_turns(cassette: &Cassette) -> Vec<usize> {
    user_turn_of_main_message_ids(cassette)
        .into_iter()
        .map(|(_, turn)| turn)
        .collect()
}

/// Each main-conversation assistant message id, in order, with the 1-based
/// user turn whose slice of the events holds it.
pub fn user_turn_of_main_message_ids(cassette: &Cassette) -> Vec<(String, usize)> {
    let ranges = event_ranges(cassette);
    let lines: Vec<String> = cassette.events().map(|l| l.into_owned()).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, (start, end)) in ranges.into_iter().enumerate() {
        for line in lines.get(start..end).unwrap_or_default() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let main = v.get("parent_tool_use_id").is_none_or(Value::is_null);
            let id = v.pointer("/message/id").and_then(Value::as_str);
            if v["type"] == "assistant"
                && main
                && let Some(id) = id
                && seen.insert(id.to_owned())
            {
                out.push((id.to_owned(), i + 1));
            }
        }
    }
    out
}

/// Labels each main-conversation divergence of a multi-turn recording with
/// the user turn whose slice holds its model turn, and returns the earliest
/// such turn (1-based): the turn a rerun names as where it first diverged.
/// `None` for a one-prompt recording or when no divergence maps to a turn.
pub fn label_user_turns(cassette: &Cassette, divergences: &mut [Divergence]) -> Option<usize> {
    if divergences.is_empty() || event_ranges(cassette).is_empty() {
        return None;
    }
    let of_model_turn = user_turn_of_model_turns(cassette);
    for d in divergences.iter_mut().filter(|d| d.conversation == "main") {
        d.user_turn = d.turn.and_then(|t| of_model_turn.get(t).copied());
    }
    divergences.iter().filter_map(|d| d.user_turn).min()
}

/// "the first divergence is in user turn N (main turn M, tool)" for the
/// earliest divergence [`label_user_turns`] placed in a user turn.
pub fn first_divergence_note(divergences: &[Divergence]) -> Option<String> {
    let first = divergences
        .iter()
        .filter(|d| d.user_turn.is_some())
        .min_by_key(|d| (d.user_turn, d.turn))?;
    let (user_turn, model_turn) = (first.user_turn?, first.turn?);
    let tool = first.tool.as_deref().unwrap_or("-");
    // 1-based, as the text report's "divergence at main turn N".
    Some(format!(
        "the first divergence is in user turn {user_turn} (main turn {}, {tool})",
        model_turn + 1
    ))
}
