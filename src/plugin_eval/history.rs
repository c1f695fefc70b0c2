//! `context.history_file` (a Claude Code session transcript, JSONL) → the
//! user prompts of the turns before the graded one. The first-party runner
//! resumes the transcript (`--resume`); reel replays its user turns in one
//! session, the model script (or the live model) answering each again.

use std::path::Path;

use serde_json::Value;

use super::Problem;
use super::case::read_text;

/// The transcript's user prompts, in order (tool results, meta and
/// sidechain lines left out).
pub fn user_prompts(file: &Path) -> Result<Vec<String>, Problem> {
    let text = read_text(file)?;
    let mut prompts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            Problem::new(
                file,
                &format!("line {}", i + 1),
                format!("not JSON: {e}"),
                "give a Claude Code session transcript (.jsonl)",
            )
        })?;
        let flagged = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        if v.get("type").and_then(Value::as_str) != Some("user")
            || flagged("isMeta")
            || flagged("isSidechain")
            || flagged("isCompactSummary")
        {
            continue;
        }
        if let Some(p) = prompt_text(v.pointer("/message/content")) {
            prompts.push(p);
        }
    }
    if prompts.is_empty() {
        return Err(Problem::new(
            file,
            "(transcript)",
            "holds no user prompt",
            "point history_file at a transcript with at least one user turn",
        ));
    }
    Ok(prompts)
}

/// A user message's text; `None` for a tool-result message.
fn prompt_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            let text: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            Some(text.join("\n").trim().to_owned()).filter(|s| !s.is_empty())
        }
        _ => None,
    }
}
