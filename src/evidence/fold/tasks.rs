//! Progress-panel tasks: a main-agent `TaskCreate` becomes a task once its
//! result names the id (`Task #N created successfully`); `TaskUpdate` moves
//! its status. A create whose result names no id is malformed telemetry.

use std::collections::HashMap;

use super::{End, Fold, Step};
use crate::evidence::parse::AgentEvent;
use crate::evidence::run::{RunRecord, Task};
use crate::evidence::tool_output::task_created_id;
use crate::js::coerce::js_string;

struct PendingTask {
    subject: String,
    description: Option<String>,
    active_form: Option<String>,
}

#[derive(Default)]
pub(in crate::evidence) struct Tasks {
    /// TaskCreate tool_use id → what it asked for, until its result.
    pending: HashMap<String, PendingTask>,
}

impl Fold for Tasks {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::ToolUse {
                name,
                input,
                tool_use_id,
                ..
            } if step.main_flow => {
                let opt = |k: &str| input.get(k).filter(|v| !v.is_null()).map(js_string);
                if name == "TaskCreate"
                    && let Some(id) = tool_use_id
                {
                    self.pending.insert(
                        id.clone(),
                        PendingTask {
                            subject: opt("subject").unwrap_or_default(),
                            description: opt("description"),
                            active_form: opt("activeForm"),
                        },
                    );
                }
                if name == "TaskUpdate"
                    && let (Some(tid), Some(status)) = (opt("taskId"), opt("status"))
                    && let Some(t) = rec.tasks.iter_mut().find(|t| t.id == tid)
                    && !status.is_empty()
                {
                    t.status = status;
                }
            }
            AgentEvent::ToolResult { result, .. } => {
                let Some(id) = &result.tool_use_id else {
                    return Ok(());
                };
                let Some(p) = self.pending.remove(id) else {
                    return Ok(());
                };
                match task_created_id(result.text()) {
                    Some(tid) => {
                        let task = Task {
                            id: tid.clone(),
                            subject: p.subject,
                            status: "pending".into(),
                            description: p.description,
                            active_form: p.active_form,
                        };
                        match rec.tasks.iter_mut().find(|t| t.id == tid) {
                            Some(t) => *t = task,
                            None => rec.tasks.push(task),
                        }
                    }
                    None if !result.is_error => rec.evidence_errors.task_tracking += 1,
                    None => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _end: &End<'_>, rec: &mut RunRecord) {
        rec.evidence_errors.task_tracking += self.pending.len() as u64;
    }
}
