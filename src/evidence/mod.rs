//! Evidence: what a recorded event stream shows.
//!
//! The recorded `events` lines are re-driven through one stream-json parser
//! (`parse`; `line` reads the common lines through borrowed views and
//! falls back to it for the rest) into a [`RunRecord`] (transcript, tool calls and results,
//! sub-agents, skills, init context, tasks, usage, cost, questions and their
//! offered options, gate deliveries, hook events, path denials, stall, infra
//! errors), and `controlOut` is indexed by `request_id` ([`control`]). The
//! driver (`drive`) hands each event to one fold per concern (`fold`:
//! transcript, tools, files, sub-agents, tasks, decisions, hooks, outcome),
//! each writing its own fields of the record (`record`).
//! Assertions read only the run record, never the raw lines. The cassette's
//! `timeline` (the harness's own timed observation log, not `events`) is
//! folded in [`timeline`].
//!
//! The re-drive mirrors cowork-harness `CassetteAgentSession` + `Run.drive`
//! (docs/spec/replay.md §2.5 steps 2–8, §3): the replay decider serves recorded
//! `controlOut` bodies, the serialisation guard (O7) re-serialises each one,
//! and every cassette-format problem (malformed line, differing duplicate id,
//! missing response, malformed control frame, truncated question) becomes a
//! finding in [`RunRecord::format_findings`] instead of an error.
//!
//! This module deliberately does not decide anything: bucket exclusion, the
//! verdict and reports belong to `replay`; evaluation to `assert`.
//! [`RunRecord::from_cassette`] never fails and never panics on untrusted input.
//!
//! Files: `event` (what a line means: `AgentEvent`, decision requests,
//! reasoning blocks, text caps); `line` (borrowed fast views for the common
//! lines, read from the line or straight from its stored token, `line/stored`,
//! falling back to `parse` for every other shape; the JavaScript semantics they
//! follow are `js::coerce`, `js::number`, `js::utf16`); `control` (the
//! `controlOut` index and serialisation guard); `timeline` (the folds
//! `toolDurations` and `skillActivity`, also what `skill_tool_used` reads);
//! `reference_access` (the skill files a run reached and through which channel:
//! Read, Grep, a shell read); `tool_output` (readers of tool inputs and
//! outputs: WebSearch links, TaskCreate ids, skill files read, present_files);
//! `fold/` (one `Fold` per concern, each owning its record fields and pending
//! state and filling its derived fields at the end).
//!
//! `run/` is the run record: `RunRecord`, its data types, accessors and
//! cassette-format messages. `run/context` carries the `system` lines of
//! `contextEvents`: in a large lean cassette (at least 4 MiB) they stay where
//! the mapped file holds them (`cassette::KeptToken`, handed over by
//! `ReadLines::read_stored`'s `StoredToken`) and are written straight from the
//! stored text when the report is, their pages given back per written piece;
//! otherwise a flat one becomes the JSON text the report copies as the line is
//! read.
//!
//! `drive` is the re-drive. Reading a line (`read_line`: its events, each tool
//! call's input digest and written input, each tool result as the record keeps
//! it — made once and shared by every record folding the line — hook line;
//! `read_line_for_verdict` for a text replay, which keeps carried system
//! lines' subtypes only but the hook frames `hook_started` / `hook_response`
//! whole) is pure and runs on any thread; folding is
//! sequential. Lines come either already read, in order, from the lean load, or
//! in chunks read in parallel while the previous chunk is folded (a replay that
//! owns a fully loaded cassette hands over its lines, freed as read). Each
//! event goes to every fold, then the record keeps its recorded payloads.

pub mod control;
mod drive;
mod event;
mod fold;
pub mod line;
pub mod parse;
mod reference_access;
mod run;
pub mod timeline;
mod tool_output;

pub use drive::{
    LineReader, ReadLine, RecordedLine, drive, drive_read, drive_read_by_turn, ranges_in_order,
    read_line, read_line_for_verdict,
};
pub use reference_access::ReferenceAccess;
pub use run::*;

use crate::cassette::Cassette;

impl RunRecord {
    /// Re-drives the cassette's `events` (and indexes `controlOut`).
    pub fn from_cassette(cassette: &Cassette) -> RunRecord {
        let control_out = cassette.control_out();
        drive(cassette.event_lines().collect(), control_out.as_deref())
    }

    /// Re-drives `events` lines taken out of their cassette
    /// ([`Cassette::take_events`]) against its `controlOut`, freeing the lines
    /// as they are read: the memory-lean path of a large replay.
    pub fn from_taken_events(events: Vec<String>, control_out: Option<&[&str]>) -> RunRecord {
        drive(events, control_out)
    }

    /// Re-drives `events` lines already read ([`read_line`], in order; e.g.
    /// by [`Cassette::load_lean_reading`] while it loads) against the
    /// cassette's `controlOut`, folding each line as it comes. `text_room`
    /// bounds the assistant text the lines hold ([`drive_read`]).
    pub fn from_read_lines(
        lines: impl IntoIterator<Item = ReadLine>,
        control_out: Option<&[&str]>,
        text_room: usize,
    ) -> RunRecord {
        drive_read(lines, control_out, text_room)
    }

    /// [`RunRecord::from_read_lines`] that also re-drives each user turn's
    /// slice (`ranges`, in order, as `reelTurns` marks them) in the same
    /// pass: the whole run's record and one per turn ([`drive_read_by_turn`]).
    pub fn from_read_lines_by_turn(
        lines: impl IntoIterator<Item = ReadLine>,
        control_out: Option<&[&str]>,
        text_room: usize,
        ranges: &[(usize, usize)],
    ) -> (RunRecord, Vec<RunRecord>) {
        drive_read_by_turn(lines, control_out, text_room, ranges)
    }
}
