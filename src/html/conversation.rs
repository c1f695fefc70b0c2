//! A recording's conversation turn by turn, as the report shows it.
//!
//! A turn is one model reply of the main conversation (an `assistant`
//! message id) with everything that follows it until the next: its text
//! and reasoning, its tool calls with their results, the permission and
//! question prompts with what the host answered (read from `controlOut` by
//! request id), hook frames, the agent's `system` notices and the final
//! `result`. A sub-agent's messages (`parent_tool_use_id`) nest under the
//! tool call that dispatched them. Streaming fragments (`stream_event`)
//! are not shown: the `assistant` line that follows carries the same
//! content whole.
//!
//! Only a window of turns is built ([`Options`]); lines outside it are read
//! just far enough to count turns, so a 50,000-event recording costs one
//! shallow pass plus the shown turns.

use std::collections::HashMap;

use crate::mask::Roots;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::{Clip, Options};
use crate::cassette::Cassette;

/// The shown part of a recording's conversation.
#[derive(Debug, Default)]
pub struct Conversation {
    /// The prompt the host sent (the first `user` frame of `controlOut`).
    pub prompt: Option<Clip>,
    /// Notices before the first reply (init, hooks), as turn 0.
    pub prelude: Turn,
    pub turns: Vec<Turn>,
    /// Turns in the whole recording.
    pub total_turns: usize,
    /// Tool calls in the whole recording (main agent and sub-agents).
    pub total_tool_calls: usize,
}

/// One model reply and what followed it.
#[derive(Debug, Default)]
pub struct Turn {
    /// 1-based.
    pub number: usize,
    pub nodes: Vec<Node>,
}

/// One thing that happened in a turn.
#[derive(Debug)]
pub enum Node {
    Text(Clip),
    Thinking {
        text: Clip,
        redacted: bool,
    },
    /// Content the agent sent back beside tool results (a skill's body).
    UserText(Clip),
    Tool(ToolNode),
    Permission {
        tool: String,
        /// `None` when the tool call above shows the same input.
        input: Option<Clip>,
        decision: String,
        message: String,
    },
    Question {
        asked: Vec<Asked>,
        decision: String,
        /// `(question, answer delivered)`.
        answers: Vec<(String, String)>,
    },
    Hook {
        label: String,
        detail: Clip,
    },
    System {
        subtype: String,
        detail: Clip,
    },
    Result {
        subtype: String,
        is_error: bool,
        text: Clip,
        summary: String,
    },
}

/// One tool call, its result and (for a sub-agent dispatch) what the
/// sub-agent did.
#[derive(Debug)]
pub struct ToolNode {
    pub name: String,
    pub id: String,
    /// One line saying what the call does (its command, path, description…).
    pub brief: String,
    pub input: Clip,
    /// `None`: no result recorded.
    pub result: Option<Clip>,
    pub is_error: bool,
    pub children: Vec<Node>,
}

/// One asked sub-question with its offered options.
#[derive(Debug)]
pub struct Asked {
    pub question: String,
    pub options: Vec<String>,
}

/// A tree node flattened for the template (which cannot recurse): a tool
/// call opens, its children follow, then it closes.
pub enum Row<'a> {
    Leaf(&'a Node),
    Open(&'a ToolNode),
    Close,
}

impl Conversation {
    /// What came before the first reply, as turn 0.
    pub fn prelude_turn(&self) -> &Turn {
        &self.prelude
    }
}

impl Turn {
    /// The nodes in document order, tool calls as open/close pairs.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut rows = Vec::new();
        flatten(&self.nodes, &mut rows);
        rows
    }

    /// Tool names called in this turn (for the page's filter), space-separated.
    pub fn tool_names(&self) -> String {
        let mut names = Vec::new();
        collect_names(&self.nodes, &mut names);
        names.join(" ")
    }
}

fn flatten<'a>(nodes: &'a [Node], rows: &mut Vec<Row<'a>>) {
    for n in nodes {
        match n {
            Node::Tool(t) => {
                rows.push(Row::Open(t));
                flatten(&t.children, rows);
                rows.push(Row::Close);
            }
            leaf => rows.push(Row::Leaf(leaf)),
        }
    }
}

fn collect_names(nodes: &[Node], out: &mut Vec<String>) {
    for n in nodes {
        if let Node::Tool(t) = n {
            if !out.contains(&t.name) {
                out.push(t.name.clone());
            }
            collect_names(&t.children, out);
        }
    }
}

/// Deepest sub-agent nesting kept (a hostile recording may chain ids).
const MAX_DEPTH: usize = 8;

/// The fields read of every line to place it (the rest is skipped unbuilt).
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<String>,
    parent_tool_use_id: Option<String>,
    message: Option<HeadMessage>,
}

#[derive(Deserialize)]
struct HeadMessage {
    id: Option<String>,
    #[serde(default)]
    content: ToolUses,
}

/// The number of `tool_use` blocks in a message's `content`, read without
/// building it: every line is read this far, shown or not, so the page can
/// count every call of a 50,000-event recording. Any other shape counts 0
/// (never an error: the line must still be placed).
#[derive(Default)]
struct ToolUses(usize);

impl<'de> Deserialize<'de> for ToolUses {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ToolUsesVisitor)
    }
}

struct ToolUsesVisitor;

impl<'de> serde::de::Visitor<'de> for ToolUsesVisitor {
    type Value = ToolUses;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("message content")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<ToolUses, A::Error> {
        let mut n = 0;
        while let Some(block) = seq.next_element::<BlockKind>()? {
            n += usize::from(block.0);
        }
        Ok(ToolUses(n))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ToolUses, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ToolUses(0))
    }

    fn visit_str<E>(self, _: &str) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
    fn visit_bool<E>(self, _: bool) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
    fn visit_i64<E>(self, _: i64) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
    fn visit_u64<E>(self, _: u64) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
    fn visit_f64<E>(self, _: f64) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
    fn visit_unit<E>(self) -> Result<ToolUses, E> {
        Ok(ToolUses(0))
    }
}

/// Whether one content block is a `tool_use` (any shape accepted).
struct BlockKind(bool);

impl<'de> Deserialize<'de> for BlockKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let uses = d.deserialize_any(BlockVisitor)?;
        Ok(BlockKind(uses))
    }
}

struct BlockVisitor;

impl<'de> serde::de::Visitor<'de> for BlockVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut tool_use = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "type" {
                tool_use = map.next_value::<Value>()?.as_str() == Some("tool_use");
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(tool_use)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// Where a shown tool call is: its turn (`None` = prelude) and the child
/// indices down to it.
type ToolPath = (Option<usize>, Vec<usize>);

struct Builder<'o> {
    opts: &'o Options,
    out: Conversation,
    /// Index of the current turn among all turns (`None`: before the first).
    current: Option<usize>,
    last_main_id: Option<String>,
    tools: HashMap<String, ToolPath>,
    responses: HashMap<String, Value>,
    /// The recording's run roots (from its `system/init`), shown as the
    /// placeholders a rerun shows (`{{cwd}}`, `{{config}}`, …).
    roots: Roots,
}

impl Conversation {
    /// Reads `cassette`'s conversation, building the turns `opts` shows.
    pub fn read(cassette: &Cassette, opts: &Options) -> Conversation {
        let mut b = Builder {
            opts,
            out: Conversation::default(),
            current: None,
            last_main_id: None,
            tools: HashMap::new(),
            responses: HashMap::new(),
            roots: Roots::default(),
        };
        b.read_control_out(cassette);
        for line in cassette.events() {
            b.line(&line);
        }
        b.out.total_turns = b.current.map_or(0, |c| c + 1);
        b.out
    }
}

impl Builder<'_> {
    /// A text as shown: run roots as placeholders, cut to the body cap.
    fn clip(&self, text: &str) -> Clip {
        Clip::new(&self.roots.to_placeholders(text), self.opts.body_cap)
    }

    /// A JSON value as shown (pretty-printed), run roots as placeholders.
    fn clip_json(&self, v: &Value, cap: usize) -> Clip {
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        Clip::new(&self.roots.to_placeholders(&text), cap)
    }

    /// A tool input as shown: one `key: value` line per field, a multi-line
    /// string (a written file's content, a script) as its lines, not one
    /// escaped JSON string.
    fn clip_input(&self, input: Option<&Value>) -> Clip {
        self.clip(&input_text(input.unwrap_or(&Value::Null)))
    }

    fn read_control_out(&mut self, cassette: &Cassette) {
        for frame in cassette.control_out().unwrap_or_default() {
            let Ok(Value::Object(f)) = serde_json::from_str::<Value>(frame) else {
                continue;
            };
            match f.get("type").and_then(Value::as_str) {
                Some("user") if self.out.prompt.is_none() => {
                    let text = message_text(f.get("message"));
                    self.out.prompt = Some(Clip::new(&text, self.opts.body_cap));
                }
                Some("control_response") => {
                    let r = f.get("response");
                    if let Some(id) = r.and_then(|r| r.get("request_id")).and_then(Value::as_str) {
                        let body = r.and_then(|r| r.get("response")).cloned();
                        self.responses
                            .insert(id.to_owned(), body.unwrap_or(Value::Null));
                    }
                }
                _ => {}
            }
        }
    }

    fn shown(&self, turn: Option<usize>) -> bool {
        turn.is_none_or(|t| {
            t >= self.opts.from_turn && t < self.opts.from_turn.saturating_add(self.opts.max_turns)
        })
    }

    fn line(&mut self, line: &str) {
        let Ok(head) = serde_json::from_str::<Head>(line) else {
            return;
        };
        let kind = head.kind.as_deref().unwrap_or("");
        if kind == "assistant" {
            let calls = head.message.as_ref().map_or(0, |m| m.content.0);
            self.out.total_tool_calls += calls;
        }
        if kind == "assistant" && head.parent_tool_use_id.is_none() {
            let id = head.message.and_then(|m| m.id);
            if id.is_none() || id != self.last_main_id {
                let next = self.current.map_or(0, |c| c + 1);
                self.current = Some(next);
                if self.shown(Some(next)) {
                    self.out.turns.push(Turn {
                        number: next + 1,
                        nodes: Vec::new(),
                    });
                }
            }
            self.last_main_id = id;
        }
        let parent = head.parent_tool_use_id;
        // A sub-agent's line goes where its dispatch is, when that is shown.
        let placed_in_tool = parent.as_ref().is_some_and(|p| self.tools.contains_key(p));
        if !placed_in_tool && !self.shown(self.current) {
            return;
        }
        if !matches!(
            kind,
            "assistant" | "user" | "control_request" | "system" | "result"
        ) {
            return;
        }
        let Ok(Value::Object(v)) = serde_json::from_str::<Value>(line) else {
            return;
        };
        match kind {
            "assistant" => self.assistant(&v, parent.as_deref()),
            "user" => self.user(&v, parent.as_deref()),
            "control_request" => self.request(&v),
            "system" => self.system(&v, parent.as_deref()),
            _ => self.result(&v),
        }
    }

    /// Adds `node` under the tool call `parent` when it is shown and not
    /// too deep, else at the top of the current turn.
    fn push(&mut self, parent: Option<&str>, node: Node) -> Option<ToolPath> {
        if let Some((turn, mut path)) = parent.and_then(|p| self.tools.get(p)).cloned()
            && path.len() < MAX_DEPTH
            && let Some(Node::Tool(t)) = self.node_at(turn, &path)
        {
            t.children.push(node);
            path.push(t.children.len() - 1);
            return Some((turn, path));
        }
        if !self.shown(self.current) {
            return None;
        }
        let turn = self.current.map(|_| self.out.turns.len() - 1);
        let nodes = self.top(self.current);
        nodes.push(node);
        Some((turn, vec![nodes.len() - 1]))
    }

    /// The top-level nodes of `turn` (an index among all turns; `None` = prelude).
    fn top(&mut self, turn: Option<usize>) -> &mut Vec<Node> {
        match turn {
            None => &mut self.out.prelude.nodes,
            Some(_) => {
                &mut self
                    .out
                    .turns
                    .last_mut()
                    .expect("a shown turn was pushed")
                    .nodes
            }
        }
    }

    fn node_at(&mut self, turn: Option<usize>, path: &[usize]) -> Option<&mut Node> {
        let mut nodes = match turn {
            None => &mut self.out.prelude.nodes,
            Some(t) => &mut self.out.turns.get_mut(t)?.nodes,
        };
        let (last, inner) = path.split_last()?;
        for &i in inner {
            match nodes.get_mut(i)? {
                Node::Tool(t) => nodes = &mut t.children,
                _ => return None,
            }
        }
        nodes.get_mut(*last)
    }

    fn assistant(&mut self, v: &Map<String, Value>, parent: Option<&str>) {
        let content = v.get("message").and_then(|m| m.get("content"));
        let blocks: Vec<Value> = match content {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        for b in blocks {
            let node = match b.get("type").and_then(Value::as_str) {
                Some("text") => Node::Text(self.clip(str_of(&b, "text"))),
                Some("thinking") | Some("redacted_thinking") => {
                    let text = str_of(&b, "thinking");
                    Node::Thinking {
                        redacted: text.is_empty(),
                        text: self.clip(text),
                    }
                }
                Some("tool_use") => {
                    let id = str_of(&b, "id").to_owned();
                    let node = Node::Tool(ToolNode {
                        name: str_of(&b, "name").to_owned(),
                        id: id.clone(),
                        brief: self.roots.to_placeholders(&brief(b.get("input"))),
                        input: self.clip_input(b.get("input")),
                        result: None,
                        is_error: false,
                        children: Vec::new(),
                    });
                    if let Some(path) = self.push(parent, node)
                        && !id.is_empty()
                    {
                        // A repeated id keeps its first call (no cycles).
                        self.tools.entry(id).or_insert(path);
                    }
                    continue;
                }
                _ => continue,
            };
            self.push(parent, node);
        }
    }

    fn user(&mut self, v: &Map<String, Value>, parent: Option<&str>) {
        let content = v.get("message").and_then(|m| m.get("content"));
        let blocks: Vec<Value> = match content {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            _ => Vec::new(),
        };
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_result") => {
                    let id = str_of(&b, "tool_use_id");
                    let text = result_text(b.get("content"));
                    let is_error = b.get("is_error").and_then(Value::as_bool) == Some(true);
                    let shown = self.clip(&text);
                    if let Some((turn, path)) = self.tools.get(id).cloned()
                        && let Some(Node::Tool(t)) = self.node_at(turn, &path)
                    {
                        t.result = Some(shown);
                        t.is_error = is_error;
                    }
                }
                Some("text") => {
                    let shown = self.clip(str_of(&b, "text"));
                    self.push(parent, Node::UserText(shown));
                }
                _ => {}
            }
        }
    }

    fn request(&mut self, v: &Map<String, Value>) {
        let cap = self.opts.body_cap;
        let id = v.get("request_id").and_then(Value::as_str).unwrap_or("");
        let response = self.responses.get(id).cloned().unwrap_or(Value::Null);
        let Some(req) = v.get("request") else { return };
        let node = match req.get("subtype").and_then(Value::as_str) {
            Some("can_use_tool") => {
                let tool = str_of(req, "tool_name").to_owned();
                let decision = match response.get("behavior").and_then(Value::as_str) {
                    Some(b) => b.to_owned(),
                    None if response.is_null() => "no answer recorded".to_owned(),
                    None => "answered".to_owned(),
                };
                if tool == "AskUserQuestion" {
                    question(req, &response, decision)
                } else {
                    // The input is the tool call's, shown with it above;
                    // shown here only for a call the page does not show.
                    let call = req.get("tool_use_id").and_then(Value::as_str);
                    let shown = call.is_some_and(|c| self.tools.contains_key(c));
                    Node::Permission {
                        tool,
                        input: (!shown).then(|| self.clip_input(req.get("input"))),
                        decision,
                        message: str_of(&response, "message").to_owned(),
                    }
                }
            }
            Some("hook_callback") => {
                let input = req.get("input");
                let event = input.map(|i| str_of(i, "hook_event_name")).unwrap_or("");
                Node::Hook {
                    label: format!("hook_callback {} {event}", str_of(req, "callback_id")),
                    detail: self.clip_json(
                        &serde_json::json!({"request": req, "response": response}),
                        cap,
                    ),
                }
            }
            Some(other) => Node::System {
                subtype: format!("control_request/{other}"),
                detail: self.clip_json(&Value::Object(v.clone()), cap),
            },
            None => return,
        };
        self.push(None, node);
    }

    fn system(&mut self, v: &Map<String, Value>, parent: Option<&str>) {
        let cap = self.opts.body_cap;
        let subtype = str_of_map(v, "subtype");
        if subtype == crate::protocol::subtype::INIT && self.roots.is_empty() {
            self.roots = Roots::recorded(std::iter::once(&Value::Object(v.clone())));
        }
        let node = match subtype {
            // Polling noise: a status line per model request.
            "status" => return,
            "hook_started" | "hook_response" => Node::Hook {
                label: format!(
                    "{subtype} {} {}",
                    str_of_map(v, "hook_name"),
                    str_of_map(v, "outcome")
                )
                .trim_end()
                .to_owned(),
                detail: self.clip_json(&Value::Object(v.clone()), cap),
            },
            _ => Node::System {
                subtype: subtype.to_owned(),
                detail: self.clip_json(&Value::Object(v.clone()), cap.min(1024)),
            },
        };
        self.push(parent, node);
    }

    fn result(&mut self, v: &Map<String, Value>) {
        let number = |k: &str| v.get(k).map(|n| n.to_string()).unwrap_or_default();
        let summary = [
            ("turns", number("num_turns")),
            ("cost USD", number("total_cost_usd")),
            ("duration ms", number("duration_ms")),
        ]
        .into_iter()
        .filter(|(_, n)| !n.is_empty())
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(" · ");
        self.push(
            None,
            Node::Result {
                subtype: str_of_map(v, "subtype").to_owned(),
                is_error: v.get("is_error").and_then(Value::as_bool) == Some(true),
                text: self.clip(str_of_map(v, "result")),
                summary,
            },
        );
    }
}

fn question(req: &Value, response: &Value, decision: String) -> Node {
    let asked = req
        .get("input")
        .and_then(|i| i.get("questions"))
        .and_then(Value::as_array)
        .map(|qs| {
            qs.iter()
                .map(|q| Asked {
                    question: match str_of(q, "question") {
                        "" => str_of(q, "header").to_owned(),
                        s => s.to_owned(),
                    },
                    options: q
                        .get("options")
                        .and_then(Value::as_array)
                        .map(|o| o.iter().map(|o| str_of(o, "label").to_owned()).collect())
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let answers = response
        .get("updatedInput")
        .and_then(|u| u.get("answers"))
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .map(|(q, v)| {
                    (
                        q.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Node::Question {
        asked,
        decision,
        answers,
    }
}

fn str_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn str_of_map<'v>(v: &'v Map<String, Value>, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A `user` message's text (string content, or its text blocks joined).
fn message_text(message: Option<&Value>) -> String {
    result_text(message.and_then(|m| m.get("content")))
}

/// A tool result's or message's content as text: a string as is, text
/// blocks joined, anything else as JSON.
fn result_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => str_of(b, "text").to_owned(),
                Some("image") => "[image]".to_owned(),
                _ => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

/// A tool input as text: `key: value` per field of an object (a string
/// as it is, a multi-line one on the lines after its key, indented two
/// spaces; any other value as compact JSON); anything but an object as
/// pretty JSON.
fn input_text(input: &Value) -> String {
    let Value::Object(fields) = input else {
        return serde_json::to_string_pretty(input).unwrap_or_default();
    };
    let mut out = String::new();
    for (k, v) in fields {
        match v {
            Value::String(s) if s.contains('\n') => {
                out.push_str(&format!("{k}: |\n"));
                for line in s.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            Value::String(s) => out.push_str(&format!("{k}: {s}\n")),
            other => out.push_str(&format!("{k}: {other}\n")),
        }
    }
    out
}

/// A tool input in one line: the field that says what the call does, else
/// the start of its JSON.
fn brief(input: Option<&Value>) -> String {
    let Some(input) = input else {
        return String::new();
    };
    let said = [
        "command",
        "file_path",
        "path",
        "pattern",
        "url",
        "query",
        "description",
        "skill",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(Value::as_str))
    .map_or_else(|| input.to_string(), str::to_owned);
    let line = said.lines().next().unwrap_or("");
    match line.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None if line.len() < said.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}
