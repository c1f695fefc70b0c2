//! Files the run touched: every path-bearing file-tool call (main agent and
//! sub-agents alike, with its origin) and the files delivered through
//! `mcp__cowork__present_files` (promoted to outputs, or leaked from the
//! scratchpad).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{End, Fold, Step};
use crate::evidence::parse::AgentEvent;
use crate::evidence::run::{FILE_ATTEMPT_TOOLS, FileToolAttempt, PresentedFile, RunRecord};
use crate::evidence::tool_output::present_files_input;

const PRESENT_FILES_TOOL: &str = "mcp__cowork__present_files";

#[derive(Default)]
pub(in crate::evidence) struct Files {
    /// The `system/init` working directory (the last one).
    cwd: Option<String>,
    /// present_files tool_use id → the files it named, until its result.
    pending_present: HashMap<String, Vec<String>>,
}

impl Fold for Files {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::Init { cwd, .. } => self.cwd = cwd.clone(),
            AgentEvent::ToolUse {
                name,
                input,
                parent,
                tool_use_id,
                ..
            } => {
                if FILE_ATTEMPT_TOOLS.contains(&name.as_str()) {
                    let empty = Map::new();
                    let inp = input.as_object().unwrap_or(&empty);
                    let file_path = inp
                        .get("file_path")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let path = inp.get("path").and_then(Value::as_str).map(str::to_owned);
                    let origin = if step.main_flow {
                        "main"
                    } else if rec
                        .subagents
                        .iter()
                        .any(|s| Some(&s.tool_use_id) == parent.as_ref())
                    {
                        "subagent"
                    } else {
                        "unknown"
                    };
                    rec.file_tool_attempts.push(FileToolAttempt {
                        tool: name.clone(),
                        gate_path: file_path.clone().or_else(|| path.clone()),
                        file_path,
                        path,
                        origin,
                        parent_tool_use_id: parent.clone(),
                        tool_use_id: tool_use_id.clone(),
                    });
                }
                if name == PRESENT_FILES_TOOL
                    && let Some(id) = tool_use_id
                {
                    let (files, malformed) = present_files_input(input);
                    self.pending_present.insert(id.clone(), files);
                    rec.evidence_errors.present_files_malformed += malformed;
                }
            }
            AgentEvent::ToolResult { result, .. } => {
                if let Some(id) = &result.tool_use_id {
                    self.note_presented(id, result.text_blocks.as_deref(), rec);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &End<'_>, rec: &mut RunRecord) {
        rec.evidence_errors.present_files_malformed += self.pending_present.len() as u64;
    }
}

impl Files {
    /// Pairs a present_files call's files with the paths its result names.
    fn note_presented(
        &mut self,
        tool_use_id: &str,
        blocks: Option<&[String]>,
        rec: &mut RunRecord,
    ) {
        let Some(froms) = self.pending_present.remove(tool_use_id) else {
            return;
        };
        let tos = blocks.unwrap_or(&[]);
        let cwd = self
            .cwd
            .as_deref()
            .and_then(crate::paths::posix_normalize_abs);
        if cwd.is_none() && !froms.is_empty() {
            rec.evidence_errors.present_files_malformed += froms.len() as u64;
        }
        for (i, from_raw) in froms.iter().enumerate() {
            let Some(to_raw) = tos.get(i) else {
                rec.evidence_errors.present_files_malformed += 1;
                continue;
            };
            let (Some(from), Some(to)) = (
                crate::paths::posix_normalize_abs(from_raw),
                crate::paths::posix_normalize_abs(to_raw),
            ) else {
                rec.evidence_errors.present_files_malformed += 1;
                continue;
            };
            let scratchpad = cwd.as_ref().is_some_and(|r| {
                from.starts_with(&format!("{r}/")) && !from.starts_with(&format!("{r}/mnt/"))
            });
            let promoted = scratchpad
                && cwd
                    .as_ref()
                    .is_some_and(|c| to.starts_with(&format!("{c}/mnt/outputs/")));
            rec.presented_files.push(PresentedFile {
                from,
                to,
                promoted,
                leaked: scratchpad && !promoted,
            });
        }
        if tos.len() > froms.len() {
            rec.evidence_errors.present_files_malformed += (tos.len() - froms.len()) as u64;
        }
    }
}
