//! Which conversation of a script a Messages request belongs to.
//!
//! A hand-written script has one conversation: every request is its. A
//! script taken from a recording may also hold sub-agent conversations, and
//! in Claude Code a sub-agent's requests look like the main agent's (same
//! tools, same environment section), so the request itself must say whose it
//! is. In order of strength:
//!
//! 1. a `tool_use` id of an earlier assistant message: ids are served
//!    verbatim from the recording, and each belongs to exactly one
//!    conversation;
//! 2. with no assistant message yet, the first user message: a sub-agent
//!    starts with its dispatch prompt, the main agent with the scenario
//!    prompt (the longest prompt the message holds wins; equal prompts are
//!    handed out in recorded order, one conversation each);
//! 3. the first assistant text (a text-only earlier turn).
//!
//! A request none of these place belongs to no recorded conversation.

use std::collections::HashSet;
use std::sync::Mutex;

use super::conversation::Conversation;
use super::script::{Script, Turn};

/// A conversation of a script: the main one or a sub-agent's (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConversationId {
    Main,
    Subagent(usize),
}

impl ConversationId {
    /// The name reports use: `main`, or `subagent:<dispatching tool_use id>`.
    pub fn label(self, script: &Script) -> String {
        match self {
            ConversationId::Main => "main".into(),
            ConversationId::Subagent(i) => format!(
                "subagent:{}",
                script
                    .subagents
                    .get(i)
                    .map_or("?", |s| s.parent_tool_use_id.as_str())
            ),
        }
    }
}

/// The turns of one conversation.
pub fn turns(script: &Script, id: ConversationId) -> &[Turn] {
    match id {
        ConversationId::Main => &script.turns,
        ConversationId::Subagent(i) => script.subagents.get(i).map_or(&[], |s| &s.turns),
    }
}

/// Routes requests; remembers which sub-agent conversations have started so
/// two sub-agents dispatched with the same prompt get one conversation each.
#[derive(Debug, Default)]
pub struct Router {
    started: Mutex<HashSet<usize>>,
}

impl Router {
    pub fn route(&self, script: &Script, c: &Conversation) -> Option<ConversationId> {
        if script.subagents.is_empty() {
            return Some(ConversationId::Main);
        }
        // 1. A served tool_use id names its conversation.
        if let Some(id) = c.assistant_tool_ids.iter().find_map(|id| owner(script, id)) {
            return Some(id);
        }
        // 2. The opening prompt.
        if c.assistant_count == 0 {
            return self.by_prompt(script, &c.first_user_text);
        }
        // 3. The first assistant text.
        let text = c.first_assistant_text.as_deref()?;
        let all = std::iter::once(ConversationId::Main)
            .chain((0..script.subagents.len()).map(ConversationId::Subagent));
        all.into_iter()
            .find(|id| turns(script, *id).first().and_then(Turn::first_text) == Some(text))
    }

    fn by_prompt(&self, script: &Script, opening: &str) -> Option<ConversationId> {
        let main_len = match &script.prompt {
            Some(p) if opening.contains(p.trim()) => Some(p.trim().len()),
            Some(_) => None,
            // No recorded main prompt: anything unclaimed is the main agent's.
            None => Some(0),
        };
        let best_sub = script
            .subagents
            .iter()
            .enumerate()
            .filter(|(_, s)| opening.contains(s.prompt.trim()))
            .map(|(i, s)| (s.prompt.trim().len(), i))
            .max_by_key(|(len, _)| *len);
        match (main_len, best_sub) {
            (Some(m), Some((s, _))) if m >= s => Some(ConversationId::Main),
            (_, Some((len, _))) => {
                // Among sub-agents with an equally long matching prompt, the
                // first that has not started yet (a retry of a started one
                // otherwise gets its conversation again).
                let candidates: Vec<usize> = script
                    .subagents
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| {
                        s.prompt.trim().len() == len && opening.contains(s.prompt.trim())
                    })
                    .map(|(i, _)| i)
                    .collect();
                let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
                let pick = candidates
                    .iter()
                    .copied()
                    .find(|i| !started.contains(i))
                    .or_else(|| candidates.first().copied())?;
                started.insert(pick);
                Some(ConversationId::Subagent(pick))
            }
            (Some(_), None) => Some(ConversationId::Main),
            (None, None) => None,
        }
    }
}

/// The turn of conversation `id` that `c` is due, and the turns passed over
/// on the way: the request's assistant messages, counted past each turn that
/// only waited for a background sub-agent (`Turn::waits_for`) which this
/// agent ran in the foreground instead. Stateless, like the count itself.
pub fn due_turn(script: &Script, id: ConversationId, c: &Conversation) -> (usize, Vec<usize>) {
    let turns = turns(script, id);
    let (mut index, mut answered, mut skipped) = (0, 0, Vec::new());
    while let Some(turn) = turns.get(index) {
        if turn
            .waits_for
            .as_deref()
            .is_some_and(|d| handed_back_inline(script, d, c))
        {
            skipped.push(index);
        } else if answered == c.assistant_count {
            break;
        } else {
            answered += 1;
        }
        index += 1;
    }
    if answered < c.assistant_count {
        index += c.assistant_count - answered;
    }
    (index, skipped)
}

/// Whether `c` holds the result of dispatch `tool_id` handed back at once:
/// its `tool_result` opens with the sub-agent's recorded final text (a
/// background launch is acknowledged by the agent's own notice instead).
/// Matched on that text because the request carries no other sign of which
/// way the agent ran the sub-agent.
fn handed_back_inline(script: &Script, tool_id: &str, c: &Conversation) -> bool {
    let Some(last) = script
        .subagents
        .iter()
        .find(|s| s.parent_tool_use_id == tool_id)
        .and_then(|s| s.turns.last())
        .and_then(Turn::first_text)
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return false;
    };
    c.tool_results
        .iter()
        .any(|(id, text)| id == tool_id && text.trim_start().starts_with(last))
}

/// Whether `c`, past the end of conversation `id`, only brings the
/// completion notice of a sub-agent that conversation dispatched: an agent
/// that runs sub-agents in the background reports each one after the turn
/// that used its result, where the recording (made with an agent that ran it
/// in the foreground) had already ended. Read from the notice's
/// `<tool-use-id>` element, the only place the request names the dispatch.
pub fn late_background_report(script: &Script, id: ConversationId, c: &Conversation) -> bool {
    let text = &c.user_text_since_assistant;
    if !text.contains("<task-notification>") {
        return false;
    }
    turns(script, id)
        .iter()
        .flat_map(Turn::fixed_tool_ids)
        .any(|d| text.contains(&format!("<tool-use-id>{d}</tool-use-id>")))
}

fn owner(script: &Script, tool_id: &str) -> Option<ConversationId> {
    let has = |turns: &[Turn]| {
        turns
            .iter()
            .any(|t| t.fixed_tool_ids().any(|id| id == tool_id))
    };
    if has(&script.turns) {
        return Some(ConversationId::Main);
    }
    script
        .subagents
        .iter()
        .position(|s| has(&s.turns))
        .map(ConversationId::Subagent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn script() -> Script {
        Script::parse(
            r#"
prompt: "Summarise the repo"
turns:
  - blocks: [{tool: Agent, id: toolu_main_0, input: {prompt: "count files"}}]
  - blocks: [{text: done}]
subagents:
  - parent_tool_use_id: toolu_main_0
    prompt: "count files"
    turns:
      - blocks: [{tool: Bash, id: toolu_sub_0, input: {command: ls}}]
      - blocks: [{text: "3 files"}]
  - parent_tool_use_id: toolu_main_9
    prompt: "count files"
    turns:
      - blocks: [{text: "again"}]
"#,
            "s.yaml",
        )
        .unwrap()
    }

    fn request(messages: serde_json::Value) -> Conversation {
        Conversation::from_value(
            &json!({"model": "m", "tools": [{"name": "Bash"}], "messages": messages}),
        )
        .unwrap()
    }

    #[test]
    fn routes_by_tool_id_prompt_and_text() {
        let s = script();
        let r = Router::default();
        let main0 =
            request(json!([{"role": "user", "content": "<reminder/>\nSummarise the repo"}]));
        assert_eq!(r.route(&s, &main0), Some(ConversationId::Main));
        let sub0 = request(
            json!([{"role": "user", "content": [{"type": "text", "text": "count files"}]}]),
        );
        assert_eq!(r.route(&s, &sub0), Some(ConversationId::Subagent(0)));
        // The second sub-agent with the same prompt gets the other conversation.
        assert_eq!(r.route(&s, &sub0), Some(ConversationId::Subagent(1)));
        let sub1 = request(json!([
            {"role": "user", "content": "count files"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_sub_0", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sub_0", "content": "a"}]}
        ]));
        assert_eq!(r.route(&s, &sub1), Some(ConversationId::Subagent(0)));
        let again = request(json!([
            {"role": "user", "content": "count files"},
            {"role": "assistant", "content": [{"type": "text", "text": "again"}]},
            {"role": "user", "content": "more"}
        ]));
        assert_eq!(r.route(&s, &again), Some(ConversationId::Subagent(1)));
        let stranger = request(json!([{"role": "user", "content": "write a poem"}]));
        assert_eq!(r.route(&s, &stranger), None);
        assert_eq!(
            ConversationId::Subagent(0).label(&s),
            "subagent:toolu_main_0"
        );
    }

    /// A turn recorded while a background sub-agent ran is passed over when
    /// the agent hands the sub-agent's result back at once, and served when
    /// the agent acknowledges a background launch.
    #[test]
    fn a_turn_that_waited_for_a_background_subagent_is_passed_over_when_it_ran_inline() {
        let mut s = script();
        s.turns.insert(
            1,
            Turn::of_blocks(
                vec![crate::model::Block::Text("waiting".into())],
                s.turns[0].usage,
            ),
        );
        s.turns[1].waits_for = Some("toolu_main_0".into());
        let after = |result: &str| {
            request(json!([
                {"role": "user", "content": "Summarise the repo"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_main_0", "name": "Agent", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_main_0", "content": [{"type": "text", "text": result}]}]}
            ]))
        };
        let inline = after("3 files\nagentId: a1 (use SendMessage …)");
        assert_eq!(due_turn(&s, ConversationId::Main, &inline), (2, vec![1]));
        let background = after("Async agent launched successfully.\nagentId: a1");
        assert_eq!(due_turn(&s, ConversationId::Main, &background), (1, vec![]));
        let first = request(json!([{"role": "user", "content": "Summarise the repo"}]));
        assert_eq!(due_turn(&s, ConversationId::Main, &first), (0, vec![]));
        // Past the end: counted on, so the script reports it out of turns.
        let mut long = after("3 files");
        long.assistant_count = 5;
        assert_eq!(due_turn(&s, ConversationId::Main, &long).0, 6);
    }

    /// Past the end, a completion notice of the conversation's own dispatch
    /// is a late background report; any other text is not.
    #[test]
    fn a_completion_notice_past_the_end_is_a_late_background_report() {
        let s = script();
        let notice = |id: &str| {
            request(json!([
                {"role": "user", "content": "Summarise the repo"},
                {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
                {"role": "user", "content": format!(
                    "<task-notification>\n<tool-use-id>{id}</tool-use-id>\n<result>3 files</result>\n</task-notification>")}
            ]))
        };
        assert!(late_background_report(
            &s,
            ConversationId::Main,
            &notice("toolu_main_0")
        ));
        assert!(!late_background_report(
            &s,
            ConversationId::Main,
            &notice("toolu_other")
        ));
        let plain = request(json!([
            {"role": "user", "content": "Summarise the repo"},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": "and now?"}
        ]));
        assert!(!late_background_report(&s, ConversationId::Main, &plain));
    }

    #[test]
    fn a_script_without_subagents_routes_everything_to_main() {
        let s = Script::parse("turns: [{blocks: [{text: hi}]}]", "s.yaml").unwrap();
        let c = request(json!([{"role": "user", "content": "anything"}]));
        assert_eq!(Router::default().route(&s, &c), Some(ConversationId::Main));
    }
}
