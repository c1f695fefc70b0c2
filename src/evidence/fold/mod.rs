//! The per-concern folds of the re-drive. Each fold sees every event (as a
//! [`Step`]), writes the [`RunRecord`] fields of its concern, keeps its own
//! pending state, and fills its derived fields at the [`End`] — one event
//! stream consumed by several folds, as nextest's reporters consume one
//! event type, and as ripgrep's searcher feeds a `Sink`.
//!
//! Which fold writes which record fields:
//! - [`transcript`] — `transcript`, `last_message`, `models`
//! - [`tools`] — `tools_called`, `tool_counts`, `skills_invoked`,
//!   `references_read`, `tool_errors`, `redundant_tool_calls`, `web_searches`
//! - [`files`] — `file_tool_attempts`, `presented_files`
//! - [`subagents`] — `subagents`, `subagent_tools`
//! - [`tasks`] — `tasks`
//! - [`decisions`] — `questions`, `gate_options`, `decisions`,
//!   `guard_mismatches`, `missing_control_out`, `gate_deliveries`
//! - [`hooks`] — `hook_events`, `path_denials`
//! - [`outcome`] — `result`…`result_error_kind`, `usage`, `turns`, cost,
//!   `infra_errors`, `stalled_on_question`
//!
//! The payloads the record keeps as recorded (init context, tool results,
//! reasoning blocks, system events) are moved in by [`keep`] once every fold
//! has read the event, so no fold copies them. `evidence_errors` counters are
//! shared: each fold bumps its own.

pub(super) mod decisions;
pub(super) mod files;
pub(super) mod hooks;
pub(super) mod outcome;
pub(super) mod subagents;
pub(super) mod tasks;
pub(super) mod tools;
pub(super) mod transcript;

use std::collections::HashSet;

use super::parse::AgentEvent;
use super::run::{ContextEvent, InitContext, RunRecord, THINKING_CAP};

/// One event as the folds see it, with what the driver knows of its place.
pub(super) struct Step<'e> {
    pub event: &'e AgentEvent,
    /// A `ToolUse` of the main agent's own flow (no parent, or a `Skill` /
    /// `fork` scope); `true` for other events.
    pub main_flow: bool,
    /// A `ToolUse`'s input digest (SHA-256 of its canonical JSON).
    pub input_digest: Option<[u8; 32]>,
    /// A `ToolUse`'s input as the record keeps it, when the line's reader
    /// wrote it ([`tools::call_input`]).
    pub call_input: Option<tools::CallInput>,
    /// The index of the event line it came from (one assistant message).
    pub line: usize,
}

/// What the folds read when the events are over.
pub(super) struct End<'a> {
    /// Every `Skill` / `fork` scope the run opened.
    pub fork_scoped: &'a HashSet<String>,
    /// The recorded `control_request` candidates (hook reconstruction).
    pub hook_lines: &'a [String],
}

/// One concern of the re-drive.
pub(super) trait Fold {
    /// Reads one event; `Err(message)` truncates the run there.
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String>;

    /// Fills the fields derived once all events are read.
    fn finish(&mut self, _end: &End<'_>, _rec: &mut RunRecord) {}
}

/// The folds, in the order they read each event.
#[derive(Default)]
pub(super) struct Folds {
    transcript: transcript::Transcript,
    tools: tools::Tools,
    files: files::Files,
    subagents: subagents::Subagents,
    tasks: tasks::Tasks,
    decisions: decisions::Decisions,
    hooks: hooks::Hooks,
    outcome: outcome::Outcome,
}

impl Folds {
    /// Room for `bytes` of transcript ([`super::drive_read`]'s `text_room`).
    pub(super) fn reserve_text(&mut self, bytes: usize) {
        self.transcript.reserve(bytes);
    }

    /// Room for the tool calls of about `lines` event lines (a hint, as
    /// [`Folds::reserve_text`]): a turn's maps grown from empty by doubling,
    /// every key hashed again each time, were a fifth of its tool fold.
    pub(super) fn reserve_lines(&mut self, lines: usize) {
        self.tools.reserve_calls(lines / 2);
    }

    pub(super) fn each(&mut self) -> [&mut dyn Fold; 8] {
        [
            &mut self.transcript,
            &mut self.tools,
            &mut self.files,
            &mut self.subagents,
            &mut self.tasks,
            &mut self.decisions,
            &mut self.hooks,
            &mut self.outcome,
        ]
    }
}

/// Does [`keep`] store anything of `event`? (The others need not be copied
/// for it: a turn's record folds a line the whole run's record owns.)
pub(super) fn kept(event: &AgentEvent) -> bool {
    matches!(
        event,
        AgentEvent::Init { .. }
            | AgentEvent::ToolResult { .. }
            | AgentEvent::Thinking { .. }
            | AgentEvent::SystemEvent { .. }
    )
}

/// Moves the payloads the record keeps as recorded into it (after the folds).
pub(super) fn keep(rec: &mut RunRecord, event: AgentEvent) {
    match event {
        AgentEvent::Init {
            tools,
            mcp_servers,
            skills,
            cwd,
        } => {
            rec.init_tools = tools.clone();
            rec.init = Some(InitContext {
                tools,
                mcp_servers,
                skills: Some(skills),
                cwd,
            });
        }
        AgentEvent::ToolResult { result, .. } => rec.tool_results.push(result),
        // The newest THINKING_CAP blocks (sub-agents' included, as the
        // original does), each one dropped counted.
        AgentEvent::Thinking { block, .. } => {
            rec.thinking.push_back(block);
            if rec.thinking.len() > THINKING_CAP {
                rec.thinking.pop_front();
                rec.thinking_elided += 1;
            }
        }
        AgentEvent::SystemEvent { subtype, data } => {
            rec.context_events.push(ContextEvent { subtype, data })
        }
        _ => {}
    }
}

/// Counts one more `name` in a first-seen-order tally.
pub(super) fn bump(list: &mut Vec<(String, u64)>, name: &str) {
    match list.iter_mut().find(|(n, _)| n == name) {
        Some((_, c)) => *c += 1,
        None => list.push((name.to_owned(), 1)),
    }
}

pub(super) fn push_unique(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|n| n == name) {
        list.push(name.to_owned());
    }
}
