//! The re-drive: reads the recorded `events` lines (in parallel, a chunk at a
//! time) and hands each event to the per-concern folds ([`super::fold`]),
//! which fill the [`RunRecord`]: cowork-harness `CassetteAgentSession.start`,
//! `Run.drive` and the replay hook/path-denial reconstruction (docs/spec/replay.md
//! §2.5 steps 2–8 and §3.3).
//!
//! The driver owns only what every fold shares: which tool calls are the main
//! agent's own ([`Flow`]), the truncation point, and the `control_request`
//! lines hook reconstruction reads at the end. It decides nothing else.

use std::borrow::Cow;
use std::collections::HashSet;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::control;
use super::fold::{self, End, Folds, Step};
use super::line::{self, LineOutcome};
use super::parse::AgentEvent;
use super::run::{ContextData, InitContext, RunRecord};
use crate::cassette::{EventLine, StoredToken};

/// One recorded `events` line as the re-drive gets it: owned (taken out of
/// its cassette, freed once read), borrowed, or still a JSON string token in
/// a lean cassette's file buffer (unescaped on the reading thread).
pub trait RecordedLine: Sync + Send {
    /// The line as stored, for a pre-filter on an ASCII word without `"`
    /// or `\` (escaping never splits one).
    fn stored(&self) -> &str;
    /// The line.
    fn text(&self) -> Cow<'_, str>;
    /// The line, read ([`read_line`]).
    fn read(&self) -> ReadLine {
        read_text(&self.text(), self.stored())
    }
}

impl RecordedLine for String {
    fn stored(&self) -> &str {
        self
    }
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl RecordedLine for &str {
    fn stored(&self) -> &str {
        self
    }
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl RecordedLine for EventLine<'_> {
    fn stored(&self) -> &str {
        EventLine::stored(*self)
    }
    fn text(&self) -> Cow<'_, str> {
        EventLine::text(*self)
    }
    fn read(&self) -> ReadLine {
        read_event_line(*self, true)
    }
}

/// One `events` line read for the re-drive: what it means, the digest and
/// the written input of each of its tool calls, and the line itself when
/// hook reconstruction will want it. Reading is pure, so lines are read in parallel (and, for a large
/// replay, while the loader is still scanning: [`read_line`]); folding the
/// read lines into the record is sequential ([`drive_read`]).
#[derive(Clone)]
pub struct ReadLine {
    outcome: LineOutcome,
    calls: Vec<ReadCall>,
    hook_line: Option<String>,
}

/// A `ToolUse` of a read line: its input's digest ([`input_digest`]) and
/// its input as the record keeps it, written once on the reading thread
/// and shared by every record folding the line.
type ReadCall = ([u8; 32], fold::tools::CallInput);

/// Reads one recorded line (any thread).
pub fn read_line(line: EventLine<'_>) -> ReadLine {
    RecordedLine::read(&line)
}

/// [`read_line`] for a record only judged, never written out (a text
/// replay): the fields of system lines that are only carried into
/// `contextEvents` are not kept ([`super::run::ContextData::Unkept`]).
pub fn read_line_for_verdict(line: EventLine<'_>) -> ReadLine {
    read_event_line(line, false)
}

/// The line reader a lean load reads with ([`crate::cassette::Cassette::load_lean_reading`]):
/// [`read_line`] (or with `carried_lines` false, [`read_line_for_verdict`]),
/// straight from the stored token where the line's view can be read there.
pub struct LineReader {
    pub carried_lines: bool,
}

impl crate::cassette::ReadLines<ReadLine> for LineReader {
    fn read(&self, line: EventLine<'_>) -> ReadLine {
        read_event_line(line, self.carried_lines)
    }

    fn read_stored(&self, token: StoredToken<'_>) -> Option<ReadLine> {
        let text = std::str::from_utf8(token.bytes()).ok()?;
        // A carried line is kept where the file holds it, not copied.
        let keep = || token.keep_text(text).map(ContextData::Stored);
        read_stored_text(text, self.carried_lines, &keep)
    }
}

fn read_event_line(line: EventLine<'_>, carried_lines: bool) -> ReadLine {
    if let EventLine::Token(token) = line
        && let Some(read) = read_stored_text(token, carried_lines, &|| None)
    {
        return read;
    }
    line.with_text(|text| read_text_keeping(text, line.stored(), carried_lines))
}

fn read_text(text: &str, stored: &str) -> ReadLine {
    read_text_keeping(text, stored, true)
}

fn read_text_keeping(text: &str, stored: &str, carried_lines: bool) -> ReadLine {
    let outcome = line::read_keeping(text, carried_lines);
    read_line_of(outcome, stored, || text.to_owned())
}

/// A line read from its stored token's text ([`line::read_stored_keeping`]);
/// `keep`: a carried line's data kept by reference, when it can be.
fn read_stored_text(
    stored: &str,
    carried_lines: bool,
    keep: &dyn Fn() -> Option<ContextData>,
) -> Option<ReadLine> {
    let outcome = line::read_stored_keeping(stored, carried_lines, keep)?;
    // Taken, so a string the lean path takes: its text unescapes.
    Some(read_line_of(outcome, stored, || {
        EventLine::Token(stored).text().into_owned()
    }))
}

fn read_line_of(outcome: LineOutcome, stored: &str, text: impl FnOnce() -> String) -> ReadLine {
    let calls = read_calls(&outcome);
    ReadLine {
        outcome,
        calls,
        hook_line: fold::hooks::is_hook_candidate(stored).then(text),
    }
}

/// Lines read in parallel before their events are folded into the record.
pub(super) const READ_CHUNK_LINES: usize = 4096;

/// Re-drives `events` against the controlOut index (`None` or empty ⇒ legacy mode).
///
/// `events` may own its lines (`Vec<String>` taken out of a cassette): each
/// chunk of lines is then freed as soon as it has been read, so the record
/// grows into the memory the recording gave back.
pub fn drive<S: RecordedLine>(events: Vec<S>, control_out: Option<&[&str]>) -> RunRecord {
    let mut redrive = Redrive::new(control_out);
    let mut rest = events.into_iter();
    loop {
        let chunk: Vec<S> = rest.by_ref().take(READ_CHUNK_LINES).collect();
        if chunk.is_empty() {
            break;
        }
        redrive.feed(chunk);
    }
    redrive.finish()
}

/// Re-drives lines already read ([`read_line`], in order), folding each as
/// it comes. `text_room`: at most how many bytes of assistant text the
/// lines hold (e.g. their file's size; 0 when unknown), room the
/// transcript is given at once rather than grown to.
pub fn drive_read(
    lines: impl IntoIterator<Item = ReadLine>,
    control_out: Option<&[&str]>,
    text_room: usize,
) -> RunRecord {
    let mut redrive = Redrive::new(control_out);
    redrive.d.folds.reserve_text(text_room);
    redrive.truncated = redrive
        .d
        .fold_chunk(0, lines, &mut redrive.hook_lines, None);
    redrive.finish()
}

/// [`drive_read`], folding each line also into the record of the user turn
/// whose `[start, end)` range of `ranges` holds it (a multi-turn session,
/// docs/multi-turn.md): the whole run and every turn's slice in one pass
/// over lines read once. A turn's record is the one [`drive`] makes of its
/// slice alone (its lines indexed from the slice's start). `ranges` must
/// be in order and not overlap ([`ranges_in_order`]); a turn beyond the
/// lines gets the record of what it holds.
///
/// Each line is folded into its turn's record (by reference), then into
/// the whole run's, on this thread. (Folding the whole run on a thread of
/// its own while this one folds the turns cost a 50-turn replay 12–16 ms
/// more CPU than it saved on a 2-core machine: docs/benchmarks.md, issue 41.)
pub fn drive_read_by_turn(
    lines: impl IntoIterator<Item = ReadLine>,
    control_out: Option<&[&str]>,
    text_room: usize,
    ranges: &[(usize, usize)],
) -> (RunRecord, Vec<RunRecord>) {
    debug_assert!(ranges_in_order(ranges));
    let mut whole = Redrive::new(control_out);
    whole.d.folds.reserve_text(text_room);
    // The marks tell how many lines there are: the record's lists are given
    // their room at once (grown by doubling among the turns' allocations,
    // they were copied on each growth rather than extended in place).
    whole.reserve_lines(ranges.last().map_or(0, |r| r.1));
    let mut turns = TurnFolds::new(control_out, text_room, ranges);
    for (i, line) in lines.into_iter().enumerate() {
        turns.fold(i, &line);
        whole.fold_one(i, line);
    }
    (whole.finish(), turns.finish())
}

/// The user turns' records of [`drive_read_by_turn`], folded line by line
/// as the lines come: the turn that holds a line is open while its lines
/// are folded, and closed (its record finished) when a line is past it.
struct TurnFolds<'a> {
    control_out: Option<&'a [&'a str]>,
    text_room: usize,
    ranges: &'a [(usize, usize)],
    /// Each closed turn's record, in order.
    done: Vec<RunRecord>,
    open: Option<Redrive>,
    /// The turn the next line may enter (its index in `ranges`).
    next: usize,
}

impl<'a> TurnFolds<'a> {
    fn new(
        control_out: Option<&'a [&'a str]>,
        text_room: usize,
        ranges: &'a [(usize, usize)],
    ) -> Self {
        TurnFolds {
            control_out,
            text_room,
            ranges,
            done: Vec::with_capacity(ranges.len()),
            open: None,
            next: 0,
        }
    }

    /// Folds `events[i]` (by reference) into the turn that holds it, if any.
    fn fold(&mut self, i: usize, line: &ReadLine) {
        // Close the turns that end here; open the one line `i` enters.
        while let Some(&(start, end)) = self.ranges.get(self.next) {
            if i >= end {
                self.close();
                continue;
            }
            if i >= start && self.open.is_none() {
                let mut turn = Redrive::new(self.control_out);
                // The turn's share of the text, by its share of the lines
                // (a hint: growing each turn's transcript by doubling was
                // a tenth of its fold).
                let lines = self.ranges.last().map_or(0, |r| r.1).max(1);
                turn.d
                    .folds
                    .reserve_text(self.text_room / lines * (end - start));
                turn.reserve_lines(end - start);
                self.open = Some(turn);
            }
            break;
        }
        if let Some(turn) = self.open.as_mut() {
            // Both folds share the call inputs the line's reader wrote
            // (docs/multi-turn.md, replay cost).
            turn.fold_one_ref(i - self.ranges[self.next].0, line);
        }
    }

    /// Finishes the current turn's record (an empty one if it held no line).
    fn close(&mut self) {
        let turn = self
            .open
            .take()
            .unwrap_or_else(|| Redrive::new(self.control_out));
        self.done.push(turn.finish());
        self.next += 1;
    }

    /// Every turn's record: those the lines did not reach are closed too.
    fn finish(mut self) -> Vec<RunRecord> {
        while self.next < self.ranges.len() {
            self.close();
        }
        self.done
    }
}

/// Are `ranges` usable by [`drive_read_by_turn`]: each `start <= end`, in
/// order, none overlapping the one before?
pub fn ranges_in_order(ranges: &[(usize, usize)]) -> bool {
    ranges.iter().all(|(s, e)| s <= e) && ranges.windows(2).all(|w| w[0].1 <= w[1].0)
}

/// The re-drive in steps: [`Redrive::feed`] a chunk of lines at a time (it is
/// read in parallel while the chunk before it is folded), then
/// [`Redrive::finish`].
struct Redrive {
    d: Driver,
    /// Hook reconstruction reads the control_request lines afterwards (all of
    /// them, also past a truncation point), so those few are kept.
    hook_lines: Vec<String>,
    truncated: Option<String>,
    /// Index of the next chunk's first line.
    next_index: usize,
    /// The last chunk read, not folded yet (and its first line's index).
    pending: Option<(usize, ReadChunk)>,
}

impl Redrive {
    fn new(control_out: Option<&[&str]>) -> Redrive {
        let co_lines = control_out.unwrap_or(&[]);
        Redrive {
            d: Driver {
                rec: RunRecord {
                    has_control_out: !co_lines.is_empty(),
                    control_out: control::build_index(co_lines),
                    ..RunRecord::default()
                },
                flow: Flow::default(),
                folds: Folds::default(),
            },
            hook_lines: Vec::new(),
            truncated: None,
            next_index: 0,
            pending: None,
        }
    }

    /// Room for about `lines` event lines' calls, tool results and system
    /// lines (a hint, as [`Folds::reserve_text`]; untouched room costs no
    /// memory).
    fn reserve_lines(&mut self, lines: usize) {
        self.d.folds.reserve_lines(lines);
        let rec = &mut self.d.rec;
        rec.tool_calls.reserve(lines / 2);
        rec.tool_results.reserve(lines / 2);
        rec.context_events.reserve(lines / 4);
    }

    /// Reads `chunk` (in parallel) while folding the chunk before it. Reading
    /// a line (and canonicalising its tool inputs) is pure and most of the
    /// work; folding is sequential. When `chunk` returns, its lines have been
    /// read: the caller may free them.
    fn feed<S: RecordedLine>(&mut self, chunk: Vec<S>) {
        let chunk_len = chunk.len();
        if self.truncated.is_some() {
            // Past the truncation point only the hook lines are wanted.
            if self.d.rec.has_control_out {
                self.hook_lines.extend(
                    chunk
                        .iter()
                        .filter(|l| fold::hooks::is_hook_candidate(l.stored()))
                        .map(|l| l.text().into_owned()),
                );
            }
        } else {
            let pending = self.pending.take();
            let (d, hook_lines) = (&mut self.d, &mut self.hook_lines);
            let (stop, read) = rayon::join(
                || pending.and_then(|(first, lines)| d.fold_chunk(first, lines, hook_lines, None)),
                || read_chunk(chunk),
            );
            self.truncated = stop;
            self.pending = Some((self.next_index, read));
        }
        self.next_index += chunk_len;
    }

    /// Folds one line read already (`events[i]`), in order.
    fn fold_one(&mut self, i: usize, line: ReadLine) {
        let truncated = self.truncated.take();
        self.truncated =
            self.d
                .fold_chunk(i, std::iter::once(line), &mut self.hook_lines, truncated);
    }

    /// [`Redrive::fold_one`] of a line another record keeps: only what
    /// this record keeps of it is copied ([`fold::kept`]), not the line.
    fn fold_one_ref(&mut self, i: usize, line: &ReadLine) {
        if let Some(hook_line) = &line.hook_line
            && self.d.rec.has_control_out
        {
            self.hook_lines.push(hook_line.clone());
        }
        if self.truncated.is_none() {
            self.truncated = self.d.fold_line_ref(i, &line.outcome, &line.calls);
        }
    }

    fn finish(mut self) -> RunRecord {
        if let Some((first, lines)) = self.pending.take() {
            let truncated = self.truncated.take();
            self.truncated = self
                .d
                .fold_chunk(first, lines, &mut self.hook_lines, truncated);
        }
        let Redrive {
            mut d,
            hook_lines,
            truncated,
            ..
        } = self;
        if let Some(t) = truncated {
            return truncated_record(&mut d.rec, t, &hook_lines);
        }
        d.finish(&hook_lines)
    }
}

/// The original replaces a truncated run's record with an empty error record.
fn truncated_record(rec: &mut RunRecord, why: String, hook_lines: &[String]) -> RunRecord {
    let mut out = RunRecord {
        has_control_out: rec.has_control_out,
        control_out: std::mem::take(&mut rec.control_out),
        malformed_event_lines: std::mem::take(&mut rec.malformed_event_lines),
        protocol_error_lines: std::mem::take(&mut rec.protocol_error_lines),
        guard_mismatches: std::mem::take(&mut rec.guard_mismatches),
        missing_control_out: std::mem::take(&mut rec.missing_control_out),
        truncated: Some(why),
        // The original's empty record has `context: {tools: [], mcpServers: []}`
        // and no `errorSource` (its end-of-run `no_result` fill-in is skipped).
        init: Some(InitContext::default()),
        ..RunRecord::default()
    };
    if out.has_control_out {
        fold::hooks::reconstruct_hooks(&mut out, hook_lines);
    }
    out
}

/// A chunk of read lines.
type ReadChunk = Vec<ReadLine>;

/// Reads a chunk of lines in parallel, then frees the lines (when owned).
fn read_chunk<S: RecordedLine>(chunk: Vec<S>) -> ReadChunk {
    chunk.par_iter().map(RecordedLine::read).collect()
}

/// Each `ToolUse` of a read line, in order: the SHA-256 of its canonical
/// input (the redundant-call grouping needs only these digests, so no
/// input `Value` is kept past its own event), its input written as the
/// record keeps it, and the skill files it reaches.
fn read_calls(outcome: &LineOutcome) -> Vec<ReadCall> {
    let LineOutcome::Events(evs) = outcome else {
        return Vec::new();
    };
    evs.iter()
        .filter_map(|ev| match ev {
            AgentEvent::ToolUse { name, input, .. } => {
                Some((input_digest(input), fold::tools::call_input(name, input)))
            }
            _ => None,
        })
        .collect()
}

fn input_digest(input: &serde_json::Value) -> [u8; 32] {
    // One text per thread, reused: a fresh one grew by doubling for every
    // tool input of a 50,000-line replay.
    thread_local! {
        static CANON: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    CANON.with_borrow_mut(|text| {
        text.clear();
        control::canon_into(input, text);
        Sha256::digest(text.as_bytes()).into()
    })
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
    /// the record, in order, unless the run is `truncated` already;
    /// `Some(message)` when the run is truncated (here or before).
    ///
    /// Every line's hook line is kept in `hook_lines` (when there is a
    /// controlOut), also past the truncation point.
    fn fold_chunk(
        &mut self,
        first_index: usize,
        lines: impl IntoIterator<Item = ReadLine>,
        hook_lines: &mut Vec<String>,
        mut truncated: Option<String>,
    ) -> Option<String> {
        for (offset, line) in lines.into_iter().enumerate() {
            if let Some(hook_line) = line.hook_line
                && self.rec.has_control_out
            {
                hook_lines.push(hook_line);
            }
            if truncated.is_none() {
                truncated = self.fold_line(first_index + offset, line.outcome, line.calls);
            }
        }
        truncated
    }

    /// Folds the line `events[i]`; `Some(message)` when the run is truncated there.
    fn fold_line(
        &mut self,
        i: usize,
        outcome: LineOutcome,
        calls: Vec<ReadCall>,
    ) -> Option<String> {
        let LineOutcome::Events(evs) = outcome else {
            self.note_unfolded(i, &outcome);
            return None;
        };
        let mut calls = calls.into_iter();
        for ev in evs {
            let call = match ev {
                AgentEvent::ToolUse { .. } => calls.next(),
                _ => None,
            };
            if matches!(ev, AgentEvent::Decision(_)) && !self.rec.has_control_out {
                continue;
            }
            if let Err(msg) = self.on_event(ev, call, i) {
                return Some(format!("truncated cassette: {msg}"));
            }
        }
        None
    }

    /// A line with no events to fold: a malformed or protocol-error line is
    /// noted on the record (a blank or ignored one is not).
    fn note_unfolded(&mut self, i: usize, outcome: &LineOutcome) {
        match outcome {
            LineOutcome::Malformed => self.rec.malformed_event_lines.push(i),
            LineOutcome::ProtocolError(message) => {
                self.rec.protocol_error_lines.push((i, message.clone()))
            }
            LineOutcome::Blank | LineOutcome::Ignored | LineOutcome::Events(_) => {}
        }
    }

    /// [`Driver::fold_line`] of a line borrowed: an event is copied only
    /// when the record keeps it ([`fold::kept`]).
    fn fold_line_ref(
        &mut self,
        i: usize,
        outcome: &LineOutcome,
        calls: &[ReadCall],
    ) -> Option<String> {
        let LineOutcome::Events(evs) = outcome else {
            self.note_unfolded(i, outcome);
            return None;
        };
        let mut calls = calls.iter();
        for ev in evs {
            let call = match ev {
                AgentEvent::ToolUse { .. } => calls.next().cloned(),
                _ => None,
            };
            if matches!(ev, AgentEvent::Decision(_)) && !self.rec.has_control_out {
                continue;
            }
            if let Err(msg) = self.fold_event(ev, call, i) {
                return Some(format!("truncated cassette: {msg}"));
            }
            if fold::kept(ev) {
                fold::keep(&mut self.rec, ev.clone());
            }
        }
        None
    }

    /// Every fold reads the event, then the record keeps what it keeps as
    /// recorded. `call`: a `ToolUse`'s digest and written input when the
    /// reader made them already (in parallel).
    fn on_event(
        &mut self,
        event: AgentEvent,
        call: Option<ReadCall>,
        line: usize,
    ) -> Result<(), String> {
        self.fold_event(&event, call, line)?;
        fold::keep(&mut self.rec, event);
        Ok(())
    }

    /// Every fold reads `event` (nothing is kept of it yet).
    fn fold_event(
        &mut self,
        event: &AgentEvent,
        call: Option<ReadCall>,
        line: usize,
    ) -> Result<(), String> {
        let (main_flow, input_digest, call_input) = match event {
            AgentEvent::ToolUse { input, parent, .. } => {
                let (digest, written) = call.unzip();
                (
                    self.flow.is_main(parent.as_ref()),
                    Some(digest.unwrap_or_else(|| input_digest(input))),
                    written,
                )
            }
            _ => (true, None, None),
        };
        let step = Step {
            event,
            main_flow,
            input_digest,
            call_input,
            line,
        };
        for f in self.folds.each() {
            f.event(&step, &mut self.rec)?;
        }
        self.flow.follow(&step);
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
