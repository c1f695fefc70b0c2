//! The model's replies, rebuilt from a recording: the one home used by
//! `rerun` (served to the real agent) and `reel model extract` (written as a
//! model script).
//!
//! A turn is one assistant message. Claude Code streams a message as several
//! `assistant` lines sharing a `message.id` (one per content block), so lines
//! are grouped by id within their conversation. The main conversation is the
//! lines without `parent_tool_use_id`; each sub-agent's is the lines carrying
//! its dispatching call's id, and its prompt is that call's `prompt` input.
//! Messages the agent made up itself (`model: "<synthetic>"`, e.g. an API
//! error it surfaced) are not model replies and are left out.
//!
//! A sub-agent that runs in the foreground does not stream its final message:
//! Claude Code hands it back as the dispatching call's result
//! (`tool_use_result.content`, after `harnessNoteCount` notes and before
//! `harnessTailCount` ones). When a sub-agent's last streamed turn still calls
//! tools, that hand-back is its final turn.
//!
//! Recorded run paths in tool inputs are written as placeholders
//! ([`super::paths`]), so the replies fit any fresh run.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::mask::Roots;
use crate::model::{Block, Script, Subagent, Turn, Usage};
use crate::protocol::{self, Line};

/// Why no replies could be taken from a cassette.
#[derive(Debug, thiserror::Error)]
pub enum RepliesError {
    #[error("`events` is empty: the recording holds no model reply to serve")]
    NoEvents,
    #[error(
        "no main conversation: no assistant message without `parent_tool_use_id` in `events` ({0} \
            line(s))"
    )]
    NoMainConversation(usize),
    #[error("events[{line}]: {message}")]
    Malformed { line: usize, message: String },
}

/// Replies and what was noticed while taking them.
#[derive(Debug, Clone)]
pub struct Replies {
    pub script: Script,
    pub roots: Roots,
    /// Things a reader should know (skipped lines, unmappable paths).
    pub notes: Vec<String>,
}

impl Replies {
    /// Total recorded turns over all conversations.
    pub fn turn_count(&self) -> usize {
        self.script.turns.len()
            + self
                .script
                .subagents
                .iter()
                .map(|s| s.turns.len())
                .sum::<usize>()
    }
}

struct Building {
    turns: Vec<(Option<String>, Turn)>,
}

/// Takes the replies of `cassette`'s events. `origin` names the script.
pub fn from_cassette(cassette: &crate::cassette::Cassette) -> Result<Replies, RepliesError> {
    let mut notes = Vec::new();
    let (parsed, lines) = parse_events(cassette, &mut notes)?;
    let roots = Roots::recorded(parsed.iter().map(|(_, v)| v));
    if roots.is_empty() {
        notes.push(format!(
            "the recorded work root {} cannot be mapped (redacted or not absolute): recorded paths \
                are served as recorded",
            roots
                .work
                .as_deref()
                .map_or("(absent)".to_owned(), |w| format!("`{w}`"))
        ));
    }
    let mut read = Conversations::new(&roots);
    for (i, v) in &parsed {
        read.line(*i, v)?;
    }
    if read.synthetic > 0 {
        notes.push(format!(
            "{} synthetic assistant message(s) (made by the agent, not the model) are not served",
            read.synthetic
        ));
    }
    let main = read
        .convs
        .remove(&None)
        .ok_or(RepliesError::NoMainConversation(lines))?;
    let mut turns: Vec<Turn> = main.turns.into_iter().map(|(_, t)| t).collect();
    drop_empty(&mut turns);
    keep_working_turns(&mut turns);
    if turns.is_empty() {
        return Err(RepliesError::NoMainConversation(lines));
    }
    spread_output_tokens(&mut turns, cassette);
    let subagents = read.subagents(&mut notes);
    let prompt = cassette
        .scenario()
        .get("prompt")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Replies {
        script: Script {
            origin: cassette.path.clone(),
            model: None,
            turns,
            prompt,
            subagents,
            judge: Vec::new(),
            side: Vec::new(),
        },
        roots,
        notes,
    })
}

/// The events parsed, each with its index, and how many lines there were
/// (a line that is not JSON is skipped with a note).
fn parse_events(
    cassette: &crate::cassette::Cassette,
    notes: &mut Vec<String>,
) -> Result<(Vec<(usize, Value)>, usize), RepliesError> {
    let mut parsed = Vec::new();
    let mut not_json = 0usize;
    for (i, line) in cassette.events().enumerate() {
        match serde_json::from_str::<Value>(&line) {
            Ok(v) => parsed.push((i, v)),
            Err(_) => not_json += 1,
        }
    }
    if parsed.is_empty() && not_json == 0 {
        return Err(RepliesError::NoEvents);
    }
    if not_json > 0 {
        notes.push(format!(
            "{not_json} events line(s) are not JSON and were skipped"
        ));
    }
    let lines = parsed.len() + not_json;
    Ok((parsed, lines))
}

/// The conversations read so far: the main one (key `None`) and each
/// sub-agent's (key: its dispatching call's id), with what names a
/// sub-agent's prompt and what it handed back.
struct Conversations<'r> {
    roots: &'r Roots,
    convs: BTreeMap<Option<String>, Building>,
    order: Vec<Option<String>>,
    dispatch_prompts: BTreeMap<String, String>,
    first_user_text: BTreeMap<String, String>,
    hand_backs: BTreeMap<String, HandBack>,
    /// Background sub-agents launched and not yet reported complete: a main
    /// turn recorded meanwhile only waited for them (`Turn::waits_for`).
    running: Vec<String>,
    synthetic: usize,
}

impl<'r> Conversations<'r> {
    fn new(roots: &'r Roots) -> Self {
        Conversations {
            roots,
            convs: BTreeMap::new(),
            order: Vec::new(),
            dispatch_prompts: BTreeMap::new(),
            first_user_text: BTreeMap::new(),
            hand_backs: BTreeMap::new(),
            running: Vec::new(),
            synthetic: 0,
        }
    }

    fn line(&mut self, i: usize, v: &Value) -> Result<(), RepliesError> {
        match Line::of(v) {
            Line::Assistant(m) => self.assistant(i, &m),
            Line::User(m) => {
                self.user(&m);
                Ok(())
            }
            Line::System {
                subtype: "task_notification",
                body,
            } => {
                let done = body.get("tool_use_id").and_then(Value::as_str);
                self.running.retain(|id| Some(id.as_str()) != done);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// One `assistant` line: a new turn of its conversation, or more blocks
    /// of the turn with the same message id.
    fn assistant(&mut self, i: usize, m: &protocol::Message<'_>) -> Result<(), RepliesError> {
        if m.model == Some("<synthetic>") {
            self.synthetic += 1;
            return Ok(());
        }
        if !matches!(m.content, Some(Value::Array(_))) {
            return Err(RepliesError::Malformed {
                line: i,
                message: "assistant `message.content` is not an array of blocks".into(),
            });
        }
        let key = m.parent_tool_use_id.map(str::to_owned);
        if !self.convs.contains_key(&key) {
            self.order.push(key.clone());
        }
        let conv = self
            .convs
            .entry(key)
            .or_insert(Building { turns: Vec::new() });
        let id = m.id.map(str::to_owned);
        let continues = id.is_some() && conv.turns.last().is_some_and(|(last, _)| *last == id);
        if !continues {
            let mut turn = Turn::of_blocks(Vec::new(), usage_of(m.usage()));
            turn.model = m.model.map(str::to_owned);
            turn.id = id.clone();
            if m.parent_tool_use_id.is_none() {
                turn.waits_for = self.running.first().cloned();
            }
            conv.turns.push((id, turn));
        }
        let (_, turn) = conv.turns.last_mut().expect("a turn was just ensured");
        if let Some(stop) = m.stop_reason() {
            turn.stop_reason = Some(stop.to_owned());
        }
        for block in m.blocks() {
            if let Some(b) = served_block(i, block, self.roots, &mut self.dispatch_prompts)? {
                turn.blocks.push(b);
            }
        }
        Ok(())
    }

    /// One `user` line: a dispatch's hand-back, or a sub-agent's first
    /// prompt text (its prompt when the dispatch input had none).
    fn user(&mut self, m: &protocol::Message<'_>) {
        if let Some((id, back)) = hand_back(m) {
            self.hand_backs.insert(id, back);
        }
        if let Some(id) = background_launch(m) {
            self.running.push(id);
        }
        let Some(parent) = m.parent_tool_use_id else {
            return;
        };
        if self.first_user_text.contains_key(parent) {
            return;
        }
        let text = match m.content {
            Some(Value::String(s)) => s.clone(),
            _ => m
                .blocks()
                .filter_map(|b| match b {
                    protocol::Block::Text(t) => Some(t),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        if !text.is_empty() {
            self.first_user_text.insert(parent.to_owned(), text);
        }
    }

    /// Each sub-agent's conversation with its prompt, in first-seen order
    /// (one without a recorded prompt is noted and not served).
    fn subagents(mut self, notes: &mut Vec<String>) -> Vec<Subagent> {
        let mut subagents = Vec::new();
        for key in std::mem::take(&mut self.order).into_iter().flatten() {
            let Some(conv) = self.convs.remove(&Some(key.clone())) else {
                continue;
            };
            let prompt = self
                .dispatch_prompts
                .get(&key)
                .or_else(|| self.first_user_text.get(&key))
                .cloned();
            let sub_turns = finished_turns(conv, self.hand_backs.get(&key));
            match prompt {
                Some(prompt) if !sub_turns.is_empty() => subagents.push(Subagent {
                    parent_tool_use_id: key,
                    prompt: self.roots.to_placeholders(&prompt),
                    turns: sub_turns,
                }),
                _ => notes.push(format!(
                    "the sub-agent conversation of `{key}` has no recorded prompt and is not served"
                )),
            }
        }
        subagents
    }
}

/// A content block as served (`None`: not part of a reply); a dispatch
/// call's `prompt` is noted as its sub-agent's prompt.
fn served_block(
    i: usize,
    block: protocol::Block<'_>,
    roots: &Roots,
    dispatch_prompts: &mut BTreeMap<String, String>,
) -> Result<Option<Block>, RepliesError> {
    Ok(Some(match block {
        protocol::Block::Text(t) => Block::Text(t.to_owned()),
        protocol::Block::ToolUse { id, name, input } => {
            if protocol::DISPATCH_TOOLS.contains(&name)
                && let (Some(id), Some(p)) = (
                    id,
                    input.and_then(|i| i.get("prompt")).and_then(Value::as_str),
                )
            {
                dispatch_prompts.insert(id.to_owned(), p.to_owned());
            }
            let input = input.cloned().unwrap_or_else(|| Value::Object(Map::new()));
            if !input.is_object() {
                return Err(RepliesError::Malformed {
                    line: i,
                    message: format!("tool_use `{name}` has an input that is not an object"),
                });
            }
            Block::ToolUse {
                name: name.to_owned(),
                input: roots.value_to_placeholders(&input),
                id: id.map(str::to_owned),
            }
        }
        protocol::Block::Thinking {
            thinking,
            signature,
        } => Block::Thinking {
            thinking: thinking.as_str().unwrap_or_default().to_owned(),
            signature: signature.unwrap_or_default().to_owned(),
        },
        protocol::Block::RedactedThinking { data } => Block::RedactedThinking {
            data: data.unwrap_or_default().to_owned(),
        },
        protocol::Block::ToolResult { .. } | protocol::Block::Other(_) => return Ok(None),
    }))
}

/// A sub-agent's turns, ending with its hand-back when its last streamed
/// turn still called tools (a foreground sub-agent's final message is not
/// streamed).
fn finished_turns(conv: Building, back: Option<&HandBack>) -> Vec<Turn> {
    let mut sub_turns: Vec<Turn> = conv.turns.into_iter().map(|(_, t)| t).collect();
    drop_empty(&mut sub_turns);
    let unfinished = sub_turns
        .last()
        .is_some_and(|t| t.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. })));
    if unfinished && let Some(back) = back.filter(|b| !b.texts.is_empty()) {
        let mut last = Turn::of_blocks(
            back.texts.iter().cloned().map(Block::Text).collect(),
            sub_turns.last().map(|t| t.usage).unwrap_or_default(),
        );
        last.model = sub_turns.last().and_then(|t| t.model.clone());
        sub_turns.push(last);
    }
    // The hand-back states the final request's real usage (the stream
    // only had its `message_start` counts): the agent reports it back.
    if let (Some(usage), Some(last)) = (back.and_then(|b| b.usage), sub_turns.last_mut()) {
        last.usage = usage;
    }
    sub_turns
}

/// What a completed dispatch call handed back.
struct HandBack {
    /// The sub-agent's final text blocks, harness notes removed.
    texts: Vec<String>,
    /// The usage of the sub-agent's final request.
    usage: Option<Usage>,
}

/// A dispatch call's hand-back, keyed by its tool_use id, from a completed
/// `tool_use_result`.
fn hand_back(m: &protocol::Message<'_>) -> Option<(String, HandBack)> {
    let result = m.line.get("tool_use_result")?.as_object()?;
    if result.get("status").and_then(Value::as_str) != Some("completed") {
        return None;
    }
    let content = result.get("content")?.as_array()?;
    let id = m.blocks().find_map(|b| match b {
        protocol::Block::ToolResult {
            tool_use_id: Some(id),
            ..
        } => Some(id.to_owned()),
        _ => None,
    })?;
    let count = |k: &str| result.get(k).and_then(Value::as_u64).unwrap_or(0) as usize;
    let (head, tail) = (count("harnessNoteCount"), count("harnessTailCount"));
    let texts: Vec<String> = content
        .iter()
        .skip(head)
        .take(content.len().saturating_sub(head + tail))
        .filter_map(|b| match protocol::Block::of(b) {
            protocol::Block::Text(t) => Some(t.to_owned()),
            _ => None,
        })
        .collect();
    let usage = result
        .get("usage")
        .and_then(Value::as_object)
        .map(|u| usage_of(Some(u)));
    Some((id, HandBack { texts, usage }))
}

/// The dispatch id of a sub-agent the agent launched in the background (its
/// result says `status: async_launched`; the sub-agent reports later).
fn background_launch(m: &protocol::Message<'_>) -> Option<String> {
    let result = m.line.get("tool_use_result")?.as_object()?;
    if result.get("status").and_then(Value::as_str) != Some("async_launched") {
        return None;
    }
    m.blocks().find_map(|b| match b {
        protocol::Block::ToolResult {
            tool_use_id: Some(id),
            ..
        } => Some(id.to_owned()),
        _ => None,
    })
}

/// A turn that calls a tool does work of its own, so it is never passed over
/// as one that only waited for a background sub-agent.
fn keep_working_turns(turns: &mut [Turn]) {
    for t in turns {
        if t.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
            t.waits_for = None;
        }
    }
}

/// A message whose blocks were all of unknown kinds cannot be served.
fn drop_empty(turns: &mut Vec<Turn>) {
    turns.retain(|t| !t.blocks.is_empty());
}

fn usage_of(usage: Option<&Map<String, Value>>) -> Usage {
    let n = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
    }
}

/// Claude Code logs each message's usage as of `message_start` (output
/// tokens not yet counted); the `result` holds the run's total. Spread that
/// total over the main turns so the fresh run reports the recorded total
/// (and so the recorded cost).
fn spread_output_tokens(turns: &mut [Turn], cassette: &crate::cassette::Cassette) {
    let lines: Vec<std::borrow::Cow<'_, str>> = cassette.events().collect();
    let total = lines.iter().rev().find_map(|line| {
        if !line.contains("\"result\"") {
            return None;
        }
        let v: Value = serde_json::from_str(line).ok()?;
        match Line::of(&v) {
            Line::Result(r) => r.get("usage")?.get("output_tokens")?.as_u64(),
            _ => None,
        }
    });
    let Some(total) = total else { return };
    let n = turns.len() as u64;
    if n == 0 {
        return;
    }
    for (i, turn) in turns.iter_mut().enumerate() {
        turn.usage.output_tokens = total / n + u64::from((i as u64) < total % n);
    }
}
