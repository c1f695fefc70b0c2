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
                out.push(i + 1);
            }
        }
    }
    out
}

/// "the first divergence is in user turn N …" for a multi-turn recording
/// whose first main-conversation divergence maps to a turn; else nothing.
pub fn first_divergence_note(cassette: &Cassette, divergences: &[Divergence]) -> Option<String> {
    let first = divergences
        .iter()
        .find(|d| d.conversation == "main" && d.turn.is_some())?;
    let model_turn = first.turn?;
    let user_turn = *user_turn_of_model_turns(cassette).get(model_turn)?;
    let tool = first.tool.as_deref().unwrap_or("-");
    // 1-based, as the text report's "divergence at main turn N".
    Some(format!(
        "the first divergence is in user turn {user_turn} (main turn {}, {tool})",
        model_turn + 1
    ))
}
