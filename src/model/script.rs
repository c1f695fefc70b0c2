//! The model script: the assistant turns the scripted model answers with.
//!
//! A script is YAML (schema: `schema/model-script.json`):
//!
//! ```yaml
//! usage: {input_tokens: 1000, output_tokens: 50}   # default for every turn (optional)
//! turns:
//!   - blocks:
//!       - text: "Writing the file."
//!       - tool: Write
//!         input: {file_path: "{{cwd}}/hello.txt", content: "hello\n"}
//!   - expect: {last_tool_result_contains: "File created"}
//!     blocks:
//!       - text: Done.
//! ```
//!
//! A turn may also say `overloaded: N`: its first N requests are answered
//! with HTTP 529 so the agent's retry path runs (deterministic as long as the
//! agent asks for that turn from one conversation at a time).
//!
//! The reply to a request is `turns[k]` where `k` is the number of assistant
//! messages already in the request (see [`super::conversation`]). `{{cwd}}` in
//! a tool input string is replaced, per request, by the agent's working
//! directory as the agent itself reports it.
//!
//! **Seeded variation.** Instead of `blocks`, a turn may list weighted
//! `alternatives` (each with its own `blocks`, and optionally `usage`,
//! `expect`, `stop_reason`); one is chosen when the script is loaded, from a
//! seed ([`Script::parse_seeded`]; [`Script::load`] uses seed 0):
//!
//! ```yaml
//! turns:
//!   - alternatives:
//!       - weight: 3
//!         blocks: [{tool: Write, input: {file_path: "{{cwd}}/out.txt", content: "ok"}}]
//!       - weight: 1
//!         blocks: [{text: "I would rather not."}]
//! ```
//!
//! A turn's draw is a function of the seed and the turn's position only
//! ([`draw`]), so two scripts loaded with one seed draw the same number at
//! the same turn — `reel eval` pairs trials on that (common random numbers).
//!
//! This file only loads and validates; it does not know about HTTP or SSE.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a script problem was found and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("read model script `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parse model script `{}`: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("model script `{}`: {field}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        /// JSON path of the offending field, e.g. `turns[1].blocks[0]`.
        field: String,
        message: String,
    },
}

impl From<ScriptError> for crate::Error {
    fn from(e: ScriptError) -> Self {
        let hint = match &e {
            ScriptError::Read { .. } => "check the `--script` path",
            ScriptError::Parse { .. } | ScriptError::Invalid { .. } => {
                "see schema/model-script.json for the script format"
            }
        };
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

/// Token counts reported for a turn. Fixed per turn so the agent's cost
/// computation is reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default = "Usage::default_input")]
    pub input_tokens: u64,
    #[serde(default = "Usage::default_output")]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

impl Usage {
    fn default_input() -> u64 {
        1000
    }
    fn default_output() -> u64 {
        50
    }
}

impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: Usage::default_input(),
            output_tokens: Usage::default_output(),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
        }
    }
}

/// Checks on the request that must hold before a turn is answered. A failed
/// check fails the request loudly instead of letting the agent carry on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The last `tool_result` in the request contains this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_result_contains: Option<String>,
    /// The last `tool_result` in the request is (true) / is not (false) an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_result_is_error: Option<bool>,
    /// The user text sent since the last assistant message contains this text
    /// (the prompt, or e.g. a skill body the agent injected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_text_contains: Option<String>,
    /// The conversation before the last assistant message (user text and
    /// tool results) contains this text: proof that an earlier user turn of
    /// the session is in this request's history (docs/multi-turn.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_contains: Option<String>,
}

/// One content block of an assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse {
        /// Tool name, e.g. `Write`.
        name: String,
        input: Value,
        /// Fixed id; `None` means the deterministic `toolu_reel_<turn>_<block>`.
        id: Option<String>,
    },
    /// Extended thinking as recorded: the (often empty) text and its signature.
    Thinking {
        thinking: String,
        signature: String,
    },
    /// A `redacted_thinking` block: opaque data the agent sends back verbatim.
    RedactedThinking {
        data: String,
    },
}

/// One assistant turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub blocks: Vec<Block>,
    pub usage: Usage,
    pub expect: Expect,
    /// Answer the first this-many requests for this turn with HTTP 529
    /// `overloaded_error`, so the agent's retry path is exercised; the retry
    /// then gets the turn.
    pub overloaded: u32,
    /// Stop reason to report; `None` derives it from the blocks.
    pub stop_reason: Option<String>,
    /// Model id to report for this turn (a recording's per-message model).
    pub model: Option<String>,
    /// Fixed message id; `None` means `msg_reel_<turn>`.
    pub id: Option<String>,
    /// The `tool_use` id of a background sub-agent this turn only waited for
    /// (recorded between its launch notice and its completion notice). An
    /// agent that runs the sub-agent in the foreground hands its result back
    /// at once, never asks for this turn, and the turns after it are served
    /// one earlier (`route::due_turn`).
    pub waits_for: Option<String>,
}

impl Turn {
    /// A turn of `blocks` with default usage and nothing else set.
    pub fn of_blocks(blocks: Vec<Block>, usage: Usage) -> Turn {
        Turn {
            blocks,
            usage,
            expect: Expect::default(),
            overloaded: 0,
            stop_reason: None,
            model: None,
            id: None,
            waits_for: None,
        }
    }

    /// The stop reason: the fixed one, else `tool_use` when the turn calls a
    /// tool, else `end_turn`.
    pub fn stop_reason(&self) -> &str {
        if let Some(fixed) = &self.stop_reason {
            return fixed;
        }
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }

    /// Ids of the turn's `tool_use` blocks that the script fixes.
    pub fn fixed_tool_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolUse { id: Some(id), .. } => Some(id.as_str()),
            _ => None,
        })
    }

    /// The first text block, if any (routes a request to its conversation).
    pub fn first_text(&self) -> Option<&str> {
        self.blocks.iter().find_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
    }
}

/// A sub-agent's own conversation in a script taken from a recording: its
/// turns are served to the requests that carry its prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    /// The dispatching `tool_use` id as recorded (the events' `parent_tool_use_id`).
    pub parent_tool_use_id: String,
    /// The sub-agent's first user message (the dispatch input's `prompt`).
    pub prompt: String,
    pub turns: Vec<Turn>,
}

/// A loaded, validated script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// Where it came from (for messages).
    pub origin: PathBuf,
    /// Model id to report; `None` echoes the request's model.
    pub model: Option<String>,
    /// The main conversation's turns.
    pub turns: Vec<Turn>,
    /// The main conversation's prompt, when known (a script taken from a
    /// recording): a request whose first user message holds neither it nor a
    /// sub-agent's prompt belongs to no conversation of the script.
    pub prompt: Option<String>,
    /// Sub-agent conversations (empty for a hand-written script: every
    /// request is then the main conversation's).
    pub subagents: Vec<Subagent>,
    /// Replies to reel's judge (`semantic_matches`), served in order to
    /// requests that offer no tools and open with
    /// [`JUDGE_OPENING`](crate::model::JUDGE_OPENING); empty when the script
    /// judges nothing.
    pub judge: Vec<Turn>,
    /// Fixed answers to side requests (no tools, no agent environment) whose
    /// first user text contains `when_contains`, e.g. another harness's
    /// judge asking for PASS or FAIL (`claude plugin eval`'s llm and baseline
    /// graders), and reel's judge of a `semantic_matches.baseline_transcript`
    /// (the baseline grader's question); the first match answers, as often
    /// as asked. Empty: the neutral text.
    pub side: Vec<SideReply>,
}

/// One `side:` entry of a script.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SideReply {
    pub when_contains: String,
    pub text: String,
}

// The on-disk shape; validated into `Script`. Also the shape `to_yaml` writes.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt: Option<String>,
    turns: Vec<RawTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subagents: Vec<RawSubagent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    judge: Vec<RawTurn>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    side: Vec<SideReply>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawSubagent {
    parent_tool_use_id: String,
    prompt: String,
    turns: Vec<RawTurn>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waits_for: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<RawBlock>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    alternatives: Vec<RawAlternative>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expect: Option<Expect>,
    #[serde(default, skip_serializing_if = "is_zero")]
    overloaded: u32,
}

/// One weighted alternative of a varying turn.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawAlternative {
    #[serde(default = "RawAlternative::default_weight")]
    weight: f64,
    blocks: Vec<RawBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expect: Option<Expect>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stop_reason: Option<String>,
}

impl RawAlternative {
    fn default_weight() -> f64 {
        1.0
    }
}

/// How a varying turn is resolved at load.
#[derive(Clone, Copy)]
struct Pick {
    seed: u64,
    default_usage: Usage,
}

/// The seeded draw of turn `turn` of the conversation at `at`, uniform in
/// [0, 1): SplitMix64 over the seed, the conversation's path and the turn.
/// Written here rather than taken from `rand` because the value must stay
/// the same across versions (a documented seed reproduces a trial), which
/// `rand`'s generators do not promise.
pub fn draw(seed: u64, at: &str, turn: usize) -> f64 {
    let mut x = seed ^ (turn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in at.bytes() {
        x = (x ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Deserialize, Serialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redacted_thinking: Option<String>,
}

impl Script {
    /// Reads and validates a YAML script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Script, ScriptError> {
        Script::load_seeded(path, 0)
    }

    /// Reads a YAML script file, choosing each turn's alternative from `seed`.
    pub fn load_seeded(path: impl AsRef<Path>, seed: u64) -> Result<Script, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Script::parse_seeded(&text, path, seed)
    }

    /// Validates YAML text; `origin` names it in error messages.
    pub fn parse(yaml: &str, origin: impl Into<PathBuf>) -> Result<Script, ScriptError> {
        Script::parse_seeded(yaml, origin, 0)
    }

    /// [`Script::parse`], choosing each turn's alternative from `seed`.
    pub fn parse_seeded(
        yaml: &str,
        origin: impl Into<PathBuf>,
        seed: u64,
    ) -> Result<Script, ScriptError> {
        let origin = origin.into();
        let raw: RawScript = serde_yaml_ng::from_str(yaml).map_err(|e| ScriptError::Parse {
            path: origin.clone(),
            message: e.to_string(),
        })?;
        let invalid = |field: String, message: &str| ScriptError::Invalid {
            path: origin.clone(),
            field,
            message: message.to_string(),
        };
        if raw.turns.is_empty() {
            return Err(invalid(
                "turns".into(),
                "a script needs at least one turn (add `- blocks: [{text: Done.}]`)",
            ));
        }
        let default_usage = raw.usage.unwrap_or_default();
        let pick = Pick {
            seed,
            default_usage,
        };
        let turns = validate_turns(raw.turns, "turns", pick, &invalid)?;
        let mut subagents = Vec::with_capacity(raw.subagents.len());
        for (i, sub) in raw.subagents.into_iter().enumerate() {
            let at = format!("subagents[{i}]");
            if sub.prompt.is_empty() {
                return Err(invalid(
                    format!("{at}.prompt"),
                    "a sub-agent conversation needs the prompt it was dispatched with",
                ));
            }
            if sub.turns.is_empty() {
                return Err(invalid(
                    format!("{at}.turns"),
                    "a sub-agent conversation needs at least one turn",
                ));
            }
            subagents.push(Subagent {
                parent_tool_use_id: sub.parent_tool_use_id,
                prompt: sub.prompt,
                turns: validate_turns(sub.turns, &format!("{at}.turns"), pick, &invalid)?,
            });
        }
        let judge = validate_turns(raw.judge, "judge", pick, &invalid)?;
        Ok(Script {
            origin,
            model: raw.model,
            turns,
            prompt: raw.prompt,
            subagents,
            judge,
            side: raw.side,
        })
    }

    /// The script as YAML that [`Script::parse`] reads back to an equal script.
    pub fn to_yaml(&self) -> String {
        let raw = RawScript {
            model: self.model.clone(),
            usage: None,
            prompt: self.prompt.clone(),
            turns: self.turns.iter().map(raw_turn).collect(),
            subagents: self
                .subagents
                .iter()
                .map(|s| RawSubagent {
                    parent_tool_use_id: s.parent_tool_use_id.clone(),
                    prompt: s.prompt.clone(),
                    turns: s.turns.iter().map(raw_turn).collect(),
                })
                .collect(),
            judge: self.judge.iter().map(raw_turn).collect(),
            side: self.side.clone(),
        };
        // Invariant: every field is a string, number, bool, map or sequence.
        serde_yaml_ng::to_string(&raw).expect("a script serialises to YAML")
    }
}

fn raw_turn(turn: &Turn) -> RawTurn {
    RawTurn {
        id: turn.id.clone(),
        model: turn.model.clone(),
        stop_reason: turn.stop_reason.clone(),
        blocks: turn
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(text) => RawBlock {
                    text: Some(text.clone()),
                    ..RawBlock::default()
                },
                Block::ToolUse { name, input, id } => RawBlock {
                    tool: Some(name.clone()),
                    input: Some(input.clone()),
                    id: id.clone(),
                    ..RawBlock::default()
                },
                Block::Thinking {
                    thinking,
                    signature,
                } => RawBlock {
                    thinking: Some(thinking.clone()),
                    signature: Some(signature.clone()),
                    ..RawBlock::default()
                },
                Block::RedactedThinking { data } => RawBlock {
                    redacted_thinking: Some(data.clone()),
                    ..RawBlock::default()
                },
            })
            .collect(),
        alternatives: Vec::new(),
        usage: Some(turn.usage),
        expect: (turn.expect != Expect::default()).then(|| turn.expect.clone()),
        overloaded: turn.overloaded,
        waits_for: turn.waits_for.clone(),
    }
}

fn validate_turns(
    raw_turns: Vec<RawTurn>,
    at: &str,
    pick: Pick,
    invalid: &dyn Fn(String, &str) -> ScriptError,
) -> Result<Vec<Turn>, ScriptError> {
    let default_usage = pick.default_usage;
    let mut turns = Vec::with_capacity(raw_turns.len());
    for (t, mut raw_turn) in raw_turns.into_iter().enumerate() {
        if !raw_turn.alternatives.is_empty() {
            choose_alternative(
                &mut raw_turn,
                &format!("{at}[{t}]"),
                draw(pick.seed, at, t),
                invalid,
            )?;
        }
        if raw_turn.blocks.is_empty() {
            return Err(invalid(
                format!("{at}[{t}].blocks"),
                "a turn needs at least one block (`- text: ...` or `- tool: Name`)",
            ));
        }
        let mut blocks = Vec::with_capacity(raw_turn.blocks.len());
        for (b, raw_block) in raw_turn.blocks.into_iter().enumerate() {
            blocks.push(validate_block(
                raw_block,
                &format!("{at}[{t}].blocks[{b}]"),
                invalid,
            )?);
        }
        turns.push(Turn {
            blocks,
            usage: raw_turn.usage.unwrap_or(default_usage),
            expect: raw_turn.expect.unwrap_or_default(),
            overloaded: raw_turn.overloaded,
            stop_reason: raw_turn.stop_reason,
            model: raw_turn.model,
            id: raw_turn.id,
            waits_for: raw_turn.waits_for,
        });
    }
    Ok(turns)
}

/// Replaces a varying turn's `alternatives` by the one `x` falls in (every
/// alternative is validated, chosen or not).
fn choose_alternative(
    turn: &mut RawTurn,
    field: &str,
    x: f64,
    invalid: &dyn Fn(String, &str) -> ScriptError,
) -> Result<(), ScriptError> {
    if !turn.blocks.is_empty() {
        return Err(invalid(
            format!("{field}.alternatives"),
            "a turn has either `blocks` or `alternatives`, not both (move the blocks into an \
                alternative)",
        ));
    }
    for (i, alt) in turn.alternatives.iter().enumerate() {
        let at = format!("{field}.alternatives[{i}]");
        if !(alt.weight.is_finite() && alt.weight > 0.0) {
            return Err(invalid(format!("{at}.weight"), "a weight is a number > 0"));
        }
        if alt.blocks.is_empty() {
            return Err(invalid(
                format!("{at}.blocks"),
                "an alternative needs at least one block",
            ));
        }
        for (b, block) in alt.blocks.iter().enumerate() {
            validate_block(block.clone(), &format!("{at}.blocks[{b}]"), invalid)?;
        }
    }
    let total: f64 = turn.alternatives.iter().map(|a| a.weight).sum();
    let mut point = x * total;
    let mut chosen = turn.alternatives.len() - 1;
    for (i, alt) in turn.alternatives.iter().enumerate() {
        if point < alt.weight {
            chosen = i;
            break;
        }
        point -= alt.weight;
    }
    let alt = turn.alternatives.swap_remove(chosen);
    turn.alternatives.clear();
    turn.blocks = alt.blocks;
    turn.usage = alt.usage.or(turn.usage);
    turn.expect = alt.expect.or(turn.expect.take());
    turn.stop_reason = alt.stop_reason.or(turn.stop_reason.take());
    Ok(())
}

fn validate_block(
    raw: RawBlock,
    field: &str,
    invalid: &dyn Fn(String, &str) -> ScriptError,
) -> Result<Block, ScriptError> {
    let kinds = [
        raw.text.is_some(),
        raw.tool.is_some(),
        raw.thinking.is_some(),
        raw.redacted_thinking.is_some(),
    ];
    match kinds.iter().filter(|k| **k).count() {
        0 => {
            return Err(invalid(
                field.to_string(),
                "a block needs `text: ...` or `tool: Name` (with `input: {...}`)",
            ));
        }
        1 => {}
        _ => {
            return Err(invalid(
                field.to_string(),
                "a block has exactly one of `text`, `tool`, `thinking` or `redacted_thinking` \
                    (split it into several blocks)",
            ));
        }
    }
    let tool_only = raw.input.is_some() || raw.id.is_some();
    if raw.tool.is_none() && tool_only {
        return Err(invalid(
            field.to_string(),
            "`input` and `id` belong to a `tool` block",
        ));
    }
    if raw.thinking.is_none() && raw.signature.is_some() {
        return Err(invalid(
            field.to_string(),
            "`signature` belongs to a `thinking` block",
        ));
    }
    if let Some(text) = raw.text {
        return Ok(Block::Text(text));
    }
    if let Some(thinking) = raw.thinking {
        return Ok(Block::Thinking {
            thinking,
            signature: raw.signature.unwrap_or_default(),
        });
    }
    if let Some(data) = raw.redacted_thinking {
        return Ok(Block::RedactedThinking { data });
    }
    // Invariant: exactly one kind is set and it is `tool`.
    let name = raw.tool.unwrap_or_default();
    if name.trim().is_empty() {
        return Err(invalid(format!("{field}.tool"), "the tool name is empty"));
    }
    let input = raw
        .input
        .unwrap_or_else(|| Value::Object(Default::default()));
    if !input.is_object() {
        return Err(invalid(
            format!("{field}.input"),
            "a tool input must be a mapping (e.g. `input: {command: ls}`)",
        ));
    }
    Ok(Block::ToolUse {
        name,
        input,
        id: raw.id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_tool_usage_and_expect() {
        let script = Script::parse(
            r#"
usage: {input_tokens: 10}
turns:
  - blocks:
      - text: hi
      - tool: Bash
        input: {command: "echo 1"}
        id: toolu_fixed
  - usage: {input_tokens: 5, output_tokens: 7}
    expect: {last_tool_result_contains: "1"}
    blocks: [{text: done}]
"#,
            "s.yaml",
        )
        .unwrap();
        assert_eq!(script.turns.len(), 2);
        assert_eq!(script.turns[0].usage.input_tokens, 10);
        assert_eq!(script.turns[0].usage.output_tokens, 50);
        assert_eq!(script.turns[0].stop_reason(), "tool_use");
        assert_eq!(script.turns[1].stop_reason(), "end_turn");
        assert_eq!(script.turns[1].usage.output_tokens, 7);
        assert_eq!(
            script.turns[1].expect.last_tool_result_contains.as_deref(),
            Some("1")
        );
        match &script.turns[0].blocks[1] {
            Block::ToolUse { name, id, input } => {
                assert_eq!(name, "Bash");
                assert_eq!(id.as_deref(), Some("toolu_fixed"));
                assert_eq!(input["command"], "echo 1");
            }
            other => panic!("expected a tool block, got {other:?}"),
        }
    }

    fn err(yaml: &str) -> String {
        Script::parse(yaml, "bad.yaml").unwrap_err().to_string()
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = err("turns:\n  - blocks:\n      - {text: a, tool: B}\n");
        assert!(
            e.contains("bad.yaml") && e.contains("turns[0].blocks[0]"),
            "{e}"
        );
        let e = err("turns:\n  - blocks:\n      - {}\n");
        assert!(
            e.contains("turns[0].blocks[0]") && e.contains("needs"),
            "{e}"
        );
        let e = err("turns:\n  - blocks:\n      - {tool: Bash, input: [1]}\n");
        assert!(e.contains("turns[0].blocks[0].input"), "{e}");
        let e = err("turns: []\n");
        assert!(e.contains("at least one turn"), "{e}");
        let e = err("turns:\n  - blocks: [{text: a}]\n    expect: {nope: 1}\n");
        assert!(e.contains("bad.yaml") && e.contains("nope"), "{e}");
        let e = err("turn: []\n");
        assert!(e.contains("turn"), "{e}");
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let e = Script::load("/nonexistent/x.yaml").unwrap_err().to_string();
        assert!(e.contains("/nonexistent/x.yaml"), "{e}");
    }

    const VARYING: &str = "turns:\n  - alternatives:\n      - {weight: 3, blocks: [{text: yes}]}\n      - {weight: 1, blocks: [{text: no}], usage: {input_tokens: 7}}\n";

    fn first_text(seed: u64) -> String {
        let s = Script::parse_seeded(VARYING, "v.yaml", seed).unwrap();
        s.turns[0].first_text().unwrap().to_owned()
    }

    #[test]
    fn a_varying_turn_follows_its_weights_and_its_seed() {
        let yes = (0..4000).filter(|&seed| first_text(seed) == "yes").count();
        // 3:1 weights: 3000 expected; 5 standard deviations is ±137.
        assert!((2860..=3140).contains(&yes), "{yes} of 4000 chose `yes`");
        assert_eq!(
            first_text(17),
            first_text(17),
            "a seed reproduces its choice"
        );
        let no_seed = (0..64).find(|&s| first_text(s) == "no").unwrap();
        let s = Script::parse_seeded(VARYING, "v.yaml", no_seed).unwrap();
        assert_eq!(
            s.turns[0].usage.input_tokens, 7,
            "the alternative's usage is kept"
        );
    }

    #[test]
    fn the_draw_is_stable_across_versions() {
        // Pinned values: changing `draw` changes every documented seed.
        assert_eq!(draw(0, "turns", 0), draw(0, "turns", 0));
        let pinned = [
            draw(0, "turns", 0),
            draw(1, "turns", 0),
            draw(1, "turns", 1),
        ];
        let text: Vec<String> = pinned.iter().map(|x| format!("{x:.6}")).collect();
        assert_eq!(text, PINNED_DRAWS);
    }

    const PINNED_DRAWS: [&str; 3] = ["0.568413", "0.703043", "0.953938"];

    #[test]
    fn bad_alternatives_name_their_field() {
        let e = err("turns:\n  - blocks: [{text: a}]\n    alternatives: [{blocks: [{text: b}]}]\n");
        assert!(
            e.contains("turns[0].alternatives") && e.contains("not both"),
            "{e}"
        );
        let e = err("turns:\n  - alternatives: [{weight: 0, blocks: [{text: b}]}]\n");
        assert!(e.contains("turns[0].alternatives[0].weight"), "{e}");
        let e = err("turns:\n  - alternatives: [{blocks: [{text: b}]}, {blocks: [{}]}]\n");
        assert!(e.contains("turns[0].alternatives[1].blocks[0]"), "{e}");
    }
}
