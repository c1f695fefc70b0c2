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
    last: Option<(usize, LastText)>,
}

/// The last message's text: where the transcript holds it (a top-level
/// message's), else its own copy. Copying every message's text for the
/// one kept at the end was a fifth of this fold.
enum LastText {
    Transcript(std::ops::Range<usize>),
    Own(String),
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

impl Transcript {
    /// Notes `text`, of the message on event line `line` (`written`: where
    /// the transcript holds it, a top-level message's), as the last
    /// message's; one line is one assistant message: its text blocks join.
    fn note_last(&mut self, line: usize, text: &str, written: Option<std::ops::Range<usize>>) {
        match (&mut self.last, written) {
            // The same message's next block, right after it in the transcript.
            (Some((l, LastText::Transcript(at))), Some(new))
                if *l == line && at.end + 1 == new.start =>
            {
                at.end = new.end;
            }
            (Some((l, last)), _) if *l == line => {
                let mut joined = match std::mem::replace(last, LastText::Own(String::new())) {
                    LastText::Transcript(at) => self.text[at].to_owned(),
                    LastText::Own(own) => own,
                };
                joined.push('\n');
                joined.push_str(text);
                *last = LastText::Own(joined);
            }
            (_, Some(new)) => self.last = Some((line, LastText::Transcript(new))),
            (_, None) => self.last = Some((line, LastText::Own(text.to_owned()))),
        }
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
                let written = parent.is_none().then(|| {
                    if self.started {
                        self.text.push('\n');
                    }
                    self.started = true;
                    let start = self.text.len();
                    self.text.push_str(text);
                    start..self.text.len()
                });
                self.note_last(step.line, text, written);
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
        rec.last_message = self.last.take().map(|(_, last)| match last {
            LastText::Transcript(at) => self.text[at].to_owned(),
            LastText::Own(text) => text,
        });
        // The room left over goes back (a batch keeps every run's record:
        // a thousand reservations made resident held twice the input).
        self.text.shrink_to_fit();
        rec.transcript = std::mem::take(&mut self.text);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    fn assistant(parent: Option<&str>, texts: &[&str]) -> String {
        let content: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        json!({"type": "assistant", "parent_tool_use_id": parent,
               "message": {"role": "assistant", "content": content}})
        .to_string()
    }

    /// The last message kept where the transcript holds it is the text a
    /// copy of each message gave: its blocks joined, a sub-agent's own.
    #[test]
    fn the_last_message_is_the_last_lines_blocks_joined_whoever_spoke() {
        let last = |lines: Vec<String>| crate::evidence::drive(lines, None).last_message;
        let main = |t: &[&str]| assistant(None, t);
        assert_eq!(
            last(vec![main(&["a"]), main(&["b", "c"])]).as_deref(),
            Some("b\nc")
        );
        assert_eq!(
            last(vec![
                main(&["a", "b"]),
                assistant(Some("toolu_1"), &["s", "t"])
            ])
            .as_deref(),
            Some("s\nt")
        );
        assert_eq!(
            last(vec![
                assistant(Some("toolu_1"), &["s"]),
                main(&["x", "", "y"])
            ])
            .as_deref(),
            Some("x\n\ny")
        );
        let run = crate::evidence::drive(vec![main(&["one"]), main(&["two", "three"])], None);
        assert_eq!(run.transcript, "one\ntwo\nthree");
        assert_eq!(last(vec![]), None);
    }
}
