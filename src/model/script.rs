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
//! This file only loads and validates; it does not know about HTTP or SSE.

use std::path::{Path, PathBuf};

use serde::Deserialize;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The last `tool_result` in the request contains this text.
    #[serde(default)]
    pub last_tool_result_contains: Option<String>,
    /// The last `tool_result` in the request is (true) / is not (false) an error.
    #[serde(default)]
    pub last_tool_result_is_error: Option<bool>,
    /// The user text sent since the last assistant message contains this text
    /// (the prompt, or e.g. a skill body the agent injected).
    #[serde(default)]
    pub last_user_text_contains: Option<String>,
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
}

impl Turn {
    /// `tool_use` when the turn calls a tool, else `end_turn`.
    pub fn stop_reason(&self) -> &'static str {
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
}

/// A loaded, validated script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// Where it came from (for messages).
    pub origin: PathBuf,
    /// Model id to report; `None` echoes the request's model.
    pub model: Option<String>,
    pub turns: Vec<Turn>,
}

// The on-disk shape; validated into `Script`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    turns: Vec<RawTurn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    blocks: Vec<RawBlock>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    expect: Option<Expect>,
    #[serde(default)]
    overloaded: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    id: Option<String>,
}

impl Script {
    /// Reads and validates a YAML script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Script, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Script::parse(&text, path)
    }

    /// Validates YAML text; `origin` names it in error messages.
    pub fn parse(yaml: &str, origin: impl Into<PathBuf>) -> Result<Script, ScriptError> {
        let origin = origin.into();
        let raw: RawScript = serde_yaml::from_str(yaml).map_err(|e| ScriptError::Parse {
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
        let mut turns = Vec::with_capacity(raw.turns.len());
        for (t, raw_turn) in raw.turns.into_iter().enumerate() {
            if raw_turn.blocks.is_empty() {
                return Err(invalid(
                    format!("turns[{t}].blocks"),
                    "a turn needs at least one block (`- text: ...` or `- tool: Name`)",
                ));
            }
            let mut blocks = Vec::with_capacity(raw_turn.blocks.len());
            for (b, raw_block) in raw_turn.blocks.into_iter().enumerate() {
                let field = format!("turns[{t}].blocks[{b}]");
                let block = match (raw_block.text, raw_block.tool) {
                    (Some(text), None) => {
                        if raw_block.input.is_some() || raw_block.id.is_some() {
                            return Err(invalid(
                                field,
                                "`input` and `id` belong to a `tool` block, not a `text` block",
                            ));
                        }
                        Block::Text(text)
                    }
                    (None, Some(name)) => {
                        if name.trim().is_empty() {
                            return Err(invalid(format!("{field}.tool"), "the tool name is empty"));
                        }
                        let input = raw_block
                            .input
                            .unwrap_or_else(|| Value::Object(Default::default()));
                        if !input.is_object() {
                            return Err(invalid(
                                format!("{field}.input"),
                                "a tool input must be a mapping (e.g. `input: {command: ls}`)",
                            ));
                        }
                        Block::ToolUse {
                            name,
                            input,
                            id: raw_block.id,
                        }
                    }
                    (Some(_), Some(_)) => {
                        return Err(invalid(
                            field,
                            "a block has either `text` or `tool`, not both (split it into two blocks)",
                        ));
                    }
                    (None, None) => {
                        return Err(invalid(
                            field,
                            "a block needs `text: ...` or `tool: Name` (with `input: {...}`)",
                        ));
                    }
                };
                blocks.push(block);
            }
            turns.push(Turn {
                blocks,
                usage: raw_turn.usage.unwrap_or(default_usage),
                expect: raw_turn.expect.unwrap_or_default(),
                overloaded: raw_turn.overloaded,
            });
        }
        Ok(Script {
            origin,
            model: raw.model,
            turns,
        })
    }
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
}
