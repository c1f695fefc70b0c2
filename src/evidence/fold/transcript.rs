//! The main agent's words: top-level assistant text, `"\n"`-joined as it
//! arrives (no second copy at the end), and every model that spoke.

use super::{Fold, Step, push_unique};
use crate::evidence::parse::AgentEvent;
use crate::evidence::run::RunRecord;

#[derive(Default)]
pub(in crate::evidence) struct Transcript {
    text: String,
    started: bool,
}

impl Fold for Transcript {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        let model = match step.event {
            AgentEvent::AssistantText {
                text,
                parent,
                model,
            } => {
                if parent.is_none() {
                    if self.started {
                        self.text.push('\n');
                    }
                    self.started = true;
                    self.text.push_str(text);
                }
                model
            }
            AgentEvent::ToolUse { model, .. } | AgentEvent::Thinking { model, .. } => model,
            _ => return Ok(()),
        };
        if let Some(m) = model {
            push_unique(&mut rec.models, m);
        }
        Ok(())
    }

    fn finish(&mut self, _end: &super::End<'_>, rec: &mut RunRecord) {
        rec.transcript = std::mem::take(&mut self.text);
    }
}
