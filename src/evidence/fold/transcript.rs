//! The main agent's words: top-level assistant text, `"\n"`-joined as it
//! arrives (no second copy at the end), the last message's text (any
//! agent's), and every model that spoke.

use super::{Fold, Step, push_unique};
use crate::evidence::parse::AgentEvent;
use crate::evidence::run::RunRecord;

#[derive(Default)]
pub(in crate::evidence) struct Transcript {
    text: String,
    started: bool,
    /// The event line of the last assistant text, and that line's text.
    last: Option<(usize, String)>,
}

impl Transcript {
    /// Room for `bytes` of text at once: a long run's transcript grown by
    /// doubling was copied, and its new pages zeroed, again and again. An
    /// untouched reservation costs no memory, but still counts where the
    /// system refuses to overcommit: past 64 MiB the text grows as it
    /// comes.
    pub(super) fn reserve(&mut self, bytes: usize) {
        self.text.reserve(bytes.min(64 << 20));
    }
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
                // One line is one assistant message: its text blocks join.
                match &mut self.last {
                    Some((line, last)) if *line == step.line => {
                        last.push('\n');
                        last.push_str(text);
                    }
                    _ => self.last = Some((step.line, text.clone())),
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
        // The room left over goes back (a batch keeps every run's record:
        // a thousand reservations made resident held twice the input).
        self.text.shrink_to_fit();
        rec.transcript = std::mem::take(&mut self.text);
        rec.last_message = self.last.take().map(|(_, text)| text);
    }
}
