//! The re-drive: reads the recorded `events` lines (in parallel, a chunk at a
//! time) and hands each event to the per-concern folds ([`super::fold`]),
//! which fill the [`RunRecord`]: cowork-harness `CassetteAgentSession.start`,
//! `Run.drive` and the replay hook/path-denial reconstruction (spec/replay.md
//! §2.5 steps 2–8 and §3.3).
//!
//! The driver owns only what every fold shares: which tool calls are the main
//! agent's own ([`Flow`]), the truncation point, and the `control_request`
//! lines hook reconstruction reads at the end. It decides nothing else.

use std::collections::HashSet;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::control;
use super::fold::{self, End, Folds, Step};
use super::line::{self, LineOutcome};
use super::parse::AgentEvent;
use super::record::{InitContext, RunRecord};

/// Lines read in parallel before their events are folded into the record.
pub(super) const READ_CHUNK_LINES: usize = 4096;

/// Re-drives `events` against the controlOut index (`None` or empty ⇒ legacy mode).
///
/// `events` may own its lines (`Vec<String>` taken out of a cassette): each
/// chunk of lines is then freed as soon as it has been read, so the record
/// grows into the memory the recording gave back instead of beside it.
pub fn drive<S: AsRef<str> + Sync + Send>(
    events: Vec<S>,
    control_out: Option<&[&str]>,
) -> RunRecord {
    let co_lines = control_out.unwrap_or(&[]);
    let mut d = Driver {
        rec: RunRecord {
            has_control_out: !co_lines.is_empty(),
            control_out: control::build_index(co_lines),
            ..RunRecord::default()
        },
        flow: Flow::default(),
        folds: Folds::default(),
    };
    // Hook reconstruction reads the control_request lines afterwards (all of
    // them, also past a truncation point), so those few are kept.
    let mut hook_lines: Vec<String> = Vec::new();
    let mut truncated: Option<String> = None;
    let mut first_index = 0;
    let mut rest = events.into_iter();
    // Reading a line (and canonicalising its tool inputs) is pure and most of
    // the work, so chunks are read in parallel; folding them into the record
    // is sequential, so chunk k is folded while chunk k+1 is being read.
    // Chunking bounds how many read-but-unfolded events exist at once.
    let mut pending: Option<(usize, ReadChunk)> = None;
    loop {
        let chunk: Vec<S> = rest.by_ref().take(READ_CHUNK_LINES).collect();
        if chunk.is_empty() && pending.is_none() {
            break;
        }
        if d.rec.has_control_out {
            hook_lines.extend(
                chunk
                    .iter()
                    .map(AsRef::as_ref)
                    .filter(|l| fold::hooks::is_hook_candidate(l))
                    .map(str::to_owned),
            );
        }
        let chunk_len = chunk.len();
        let read_more = truncated.is_none() && chunk_len > 0;
        let (stop, read) = rayon::join(
            || {
                let (first, outcomes) = pending.take()?;
                d.fold_chunk(first, outcomes)
            },
            || read_more.then(|| read_chunk(chunk)),
        );
        if truncated.is_none() {
            truncated = stop;
        }
        if truncated.is_none() {
            pending = read.map(|outcomes| (first_index, outcomes));
        }
        first_index += chunk_len;
    }
    if let Some(t) = truncated {
        // The original replaces the record with an empty error record.
        let mut rec = RunRecord {
            has_control_out: d.rec.has_control_out,
            control_out: std::mem::take(&mut d.rec.control_out),
            malformed_event_lines: std::mem::take(&mut d.rec.malformed_event_lines),
            protocol_error_lines: std::mem::take(&mut d.rec.protocol_error_lines),
            guard_mismatches: std::mem::take(&mut d.rec.guard_mismatches),
            missing_control_out: std::mem::take(&mut d.rec.missing_control_out),
            truncated: Some(t),
            // The original's empty record has `context: {tools: [], mcpServers: []}`
            // and no `errorSource` (its end-of-run `no_result` fill-in is skipped).
            init: Some(InitContext::default()),
            ..RunRecord::default()
        };
        if rec.has_control_out {
            fold::hooks::reconstruct_hooks(&mut rec, &hook_lines);
        }
        return rec;
    }
    d.finish(&hook_lines)
}

/// A chunk of read lines: each line's outcome and its tool-input digests.
type ReadChunk = Vec<(LineOutcome, Vec<[u8; 32]>)>;

/// Reads a chunk of lines in parallel, then frees the lines (when owned).
fn read_chunk<S: AsRef<str> + Sync>(chunk: Vec<S>) -> ReadChunk {
    chunk
        .par_iter()
        .map(|l| {
            let outcome = line::read(l.as_ref());
            let digests = tool_input_digests(&outcome);
            (outcome, digests)
        })
        .collect()
}

/// SHA-256 of the canonical input of each `ToolUse` of a read line, in
/// order: the redundant-call grouping needs only these digests, so no input
/// is kept past its own event.
fn tool_input_digests(outcome: &LineOutcome) -> Vec<[u8; 32]> {
    let LineOutcome::Events(evs) = outcome else {
        return Vec::new();
    };
    evs.iter()
        .filter_map(|ev| match ev {
            AgentEvent::ToolUse { input, .. } => Some(input_digest(input)),
            _ => None,
        })
        .collect()
}

fn input_digest(input: &serde_json::Value) -> [u8; 32] {
    Sha256::digest(control::canon(input).as_bytes()).into()
}

/// Which tool calls belong to the main agent's own flow: those with no
/// parent, or whose parent is a `Skill` call or a `fork` dispatch (their
/// calls run in the main agent's scope).
#[derive(Default)]
pub(super) struct Flow {
    pub(super) fork_scoped: HashSet<String>,
}

impl Flow {
    fn is_main(&self, parent: Option<&String>) -> bool {
        parent.is_none_or(|p| self.fork_scoped.contains(p))
    }

    /// Notes a scope an event opens, once every fold has seen the event.
    fn follow(&mut self, step: &Step<'_>) {
        match step.event {
            AgentEvent::SubagentDispatch {
                tool_use_id,
                dispatch_agent_type,
                ..
            } if dispatch_agent_type == "fork" => {
                self.fork_scoped.insert(tool_use_id.clone());
            }
            AgentEvent::ToolUse {
                name,
                tool_use_id: Some(id),
                ..
            } if step.main_flow && name == crate::protocol::SKILL_TOOL => {
                self.fork_scoped.insert(id.clone());
            }
            _ => {}
        }
    }
}

/// The re-drive state.
struct Driver {
    rec: RunRecord,
    flow: Flow,
    folds: Folds,
}

impl Driver {
    /// Folds one read chunk (its first line is `events[first_index]`) into
    /// the record, in order; `Some(message)` when the run is truncated there.
    fn fold_chunk(&mut self, first_index: usize, outcomes: ReadChunk) -> Option<String> {
        for (offset, (outcome, digests)) in outcomes.into_iter().enumerate() {
            let i = first_index + offset;
            let evs = match outcome {
                LineOutcome::Blank | LineOutcome::Ignored => continue,
                LineOutcome::Malformed => {
                    self.rec.malformed_event_lines.push(i);
                    continue;
                }
                LineOutcome::ProtocolError(message) => {
                    self.rec.protocol_error_lines.push((i, message));
                    continue;
                }
                LineOutcome::Events(evs) => evs,
            };
            let mut digests = digests.into_iter();
            for ev in evs {
                let digest = match ev {
                    AgentEvent::ToolUse { .. } => digests.next(),
                    _ => None,
                };
                if matches!(ev, AgentEvent::Decision(_)) && !self.rec.has_control_out {
                    continue;
                }
                if let Err(msg) = self.on_event(ev, digest) {
                    return Some(format!("truncated cassette: {msg}"));
                }
            }
        }
        None
    }

    /// Every fold reads the event, then the record keeps what it keeps as
    /// recorded. `input_digest`: [`input_digest`] of a `ToolUse`'s input
    /// when the reader computed it already (in parallel).
    fn on_event(
        &mut self,
        event: AgentEvent,
        input_digest: Option<[u8; 32]>,
    ) -> Result<(), String> {
        let (main_flow, input_digest) = match &event {
            AgentEvent::ToolUse { input, parent, .. } => (
                self.flow.is_main(parent.as_ref()),
                Some(input_digest.unwrap_or_else(|| self::input_digest(input))),
            ),
            _ => (true, None),
        };
        let step = Step {
            event: &event,
            main_flow,
            input_digest,
        };
        for f in self.folds.each() {
            f.event(&step, &mut self.rec)?;
        }
        self.flow.follow(&step);
        fold::keep(&mut self.rec, event);
        Ok(())
    }

    fn finish(mut self, hook_lines: &[String]) -> RunRecord {
        let end = End {
            fork_scoped: &self.flow.fork_scoped,
            hook_lines,
        };
        for f in self.folds.each() {
            f.finish(&end, &mut self.rec);
        }
        self.rec
    }
}
