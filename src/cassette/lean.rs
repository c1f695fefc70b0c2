//! The lean load: the same pipeline as [`super::load`], except that the two
//! bulky arrays a replay reads once, `events` and `timeline`, are not turned
//! into JSON values. The file is mapped, not copied ([`FileBuffer`]);
//! `events` items stay JSON string tokens (quotes and escapes included) in
//! it, unescaped where they are read ([`EventLine::text`],
//! [`EventLine::with_text`]); `timeline` stays its array text, parsed on
//! first use.
//!
//! The scan walks the top-level object itself and has serde_json read each
//! member, except an `events` array laid out as `JSON.stringify(…, null, 2)`
//! lays it out (cowork-harness and reel both do): its items are found line
//! by line with `memchr`, and each is checked as a JSON string by the
//! reader that reads it: straight from the stored token where it can
//! ([`super::ReadLines::read_stored`]), else the one that unescapes it
//! ([`with_token_text`]), so no byte of the 50 MB of escaped lines is
//! parsed twice.
//!
//! A replay loads with [`split_reading`]: as the scan passes each batch of
//! lines, the batch is queued for the pool to read, and a fold task folds
//! the lines read, in order, as they come (on the `controlOut` guessed from
//! the end of the file, checked against the scan's). Scanning, reading and
//! folding overlap; no line is ever kept unescaped; pages go back to the
//! system once read (they fault back in from the file if read again), and
//! the scan stays a few batches ahead of the reading.
//!
//! A lean cassette is for reading: [`super::Cassette::to_json_pretty`]
//! turns the kept text back into values first, so its bytes are still the
//! exact document, and every writer (rehash, `--reassert --write`, record)
//! loads through the full pipeline anyway.
//!
//! Anything out of the ordinary falls back to the full pipeline, so every
//! error (and every edge the full loader settles: a lone surrogate, a
//! duplicate `events` key, a non-string item, serde_json's reserved keys) is
//! reported exactly as [`super::Cassette::load`] reports it.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, LazyLock, OnceLock};

use serde::de::{Deserializer, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The fields kept as text.
const EVENTS: &str = "events";
const TIMELINE: &str = "timeline";

/// A cassette file's bytes, as the lean scan reads them: on unix a private,
/// read-only mapping of the file (no copy, no fresh memory: a 50 MB read
/// into new pages spent more time having the kernel zero them than reading),
/// elsewhere the bytes read into memory. Not yet UTF-8-checked: the scan
/// checks every string it keeps ([`FileBuffer::text`]).
///
/// A mapping reads the file as it is now, so a file rewritten in place
/// (truncated, then written) while reel replays it can read inconsistently
/// or, if it shrinks, stop the process (SIGBUS). reel and cowork-harness
/// write cassettes by atomic rename, which leaves a mapped file untouched.
///
/// Shared, not copied, by a clone: the bytes never change.
#[derive(Debug, Clone)]
pub(crate) struct FileBuffer {
    #[cfg(unix)]
    map: Arc<memmap2::Mmap>,
    #[cfg(not(unix))]
    map: Arc<Vec<u8>>,
}

impl FileBuffer {
    /// Maps (or reads) the `len` bytes of `file`; `None` when it is empty
    /// or does not hold exactly that many (it changed: the full reader
    /// decides).
    #[cfg(unix)]
    pub(crate) fn read(file: &std::fs::File, len: usize) -> std::io::Result<Option<FileBuffer>> {
        if len == 0 {
            return Ok(None);
        }
        // SAFETY: a private read-only mapping of a regular file (checked by
        // the caller); see the type's docs for a file rewritten in place.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(len)
                .map_copy_read_only(file)?
        };
        let mut probe = [0u8; 1];
        if map.len() != len
            || std::os::unix::fs::FileExt::read_at(file, &mut probe, len as u64)? != 0
        {
            return Ok(None);
        }
        Ok(Some(FileBuffer { map: Arc::new(map) }))
    }

    #[cfg(not(unix))]
    pub(crate) fn read(file: &std::fs::File, len: usize) -> std::io::Result<Option<FileBuffer>> {
        use std::io::Read;
        let mut map = Vec::with_capacity(len);
        file.take(len as u64 + 1).read_to_end(&mut map)?;
        if len == 0 || map.len() != len {
            return Ok(None);
        }
        Ok(Some(FileBuffer { map: Arc::new(map) }))
    }

    fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// JSON allows no byte-order mark; the full loader words the error.
    pub(crate) fn starts_with_bom(&self) -> bool {
        self.bytes().starts_with("\u{feff}".as_bytes())
    }

    /// The text at `range`. Only ever called on ranges checked as UTF-8:
    /// the `events` tokens (each checked whole by [`with_token_text`], or
    /// when kept, [`StoredToken::keep`]) and the `timeline` array (in the
    /// scan).
    fn text(&self, range: Range<usize>) -> &str {
        // SAFETY: every range asked for was checked as UTF-8 (see above),
        // and the bytes do not change afterwards (`release` only unmaps
        // pages that fault back in from the file).
        unsafe { std::str::from_utf8_unchecked(&self.map[range]) }
    }

    /// Gives the whole pages inside `range` back to the system: a large
    /// replay's resident memory is then the lines being read, not the file.
    /// The bytes still read the same: the pages fault back in from the file.
    fn release(&self, range: Range<usize>) {
        #[cfg(unix)]
        {
            let page = page_size();
            let start = range.start.div_ceil(page) * page;
            let end = range.end / page * page;
            if end > start {
                // SAFETY: the mapping is private, read-only and never written,
                // so dropping its pages changes no byte any borrow sees: the
                // next read maps the file's page again. A failure only means
                // the pages stay.
                let _ = unsafe {
                    self.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        start,
                        end - start,
                    )
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }

    /// Where `part` (a slice of this buffer) is in it.
    fn span_of(&self, part: &[u8]) -> Range<usize> {
        bytes_span(self.bytes(), part)
    }
}

#[cfg(unix)]
fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    })
}

/// An `events` token where the mapped file holds it, as the lean load
/// hands it to [`super::ReadLines::read_stored`]: its bytes, and a way to
/// keep it ([`StoredToken::keep`]) without copying it.
#[derive(Clone, Copy)]
pub struct StoredToken<'a> {
    bytes: &'a [u8],
    buf: &'a FileBuffer,
}

impl<'a> StoredToken<'a> {
    /// The token's bytes (quotes included, not yet checked).
    pub fn bytes(self) -> &'a [u8] {
        self.bytes
    }

    /// The token, kept where the file holds it (the mapping stays while it
    /// is kept); `None` when its bytes are not UTF-8, or the file is under
    /// [`KEPT_FILE_MIN`]: a kept token pins its file's mapping, one per
    /// cassette of a batch (a system allows some 65,000), and copying a
    /// small file's lines costs nothing worth saving.
    pub fn keep(self) -> Option<KeptToken> {
        self.keep_text(std::str::from_utf8(self.bytes).ok()?)
    }

    /// [`StoredToken::keep`] of a token already read as `text` (the same
    /// bytes, which are then not checked again); `None` for other text.
    pub fn keep_text(self, text: &str) -> Option<KeptToken> {
        if self.buf.bytes().len() < KEPT_FILE_MIN || !std::ptr::eq(text.as_bytes(), self.bytes) {
            return None;
        }
        Some(KeptToken {
            buf: self.buf.clone(),
            span: self.buf.span_of(self.bytes),
        })
    }
}

/// The smallest file whose tokens [`StoredToken::keep`] keeps.
pub const KEPT_FILE_MIN: usize = 4 << 20;

/// An `events` token kept where the mapped file holds it, not copied: a
/// JSON replay's carried `system` lines are megabytes, read once more when
/// the report is written. Its pages were given back once the line was read
/// and fault back in from the file when it is read again;
/// [`KeptToken::release_between`] gives them back once more.
#[derive(Clone)]
pub struct KeptToken {
    buf: FileBuffer,
    span: Range<usize>,
}

impl KeptToken {
    /// The token's text (quotes included).
    pub fn text(&self) -> &str {
        // Checked as UTF-8 when kept ([`StoredToken::keep`]).
        self.buf.text(self.span.clone())
    }

    /// Gives back the pages wholly between the start of `first` and the
    /// end of `last` (tokens of one file, in its order) once they are read.
    pub fn release_between(first: &KeptToken, last: &KeptToken) {
        if Arc::ptr_eq(&first.buf.map, &last.buf.map) && first.span.start <= last.span.end {
            first.buf.release(first.span.start..last.span.end);
        }
    }
}

impl fmt::Debug for KeptToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeptToken({:?})", self.span)
    }
}

/// A lean cassette's `events`: the file buffer and each line's token in it.
#[derive(Debug, Clone)]
pub(crate) struct LeanEvents {
    buf: FileBuffer,
    spans: Vec<Range<usize>>,
}

impl LeanEvents {
    /// How many lines.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Lines `range` (indices), in order.
    pub fn lines(&self, range: Range<usize>) -> impl ExactSizeIterator<Item = EventLine<'_>> {
        self.spans[range]
            .iter()
            .map(|r| EventLine::Token(self.buf.text(r.clone())))
    }
}

/// The kept text of a lean cassette.
#[derive(Debug, Clone)]
pub(crate) struct RawParts {
    events: LeanEvents,
    /// Where the `timeline` array's text is in the file, when it is an
    /// array (read from the mapping: a 37,000-entry timeline is megabytes).
    timeline: Option<Range<usize>>,
    /// `timeline` parsed on first use (most replays never read it).
    timeline_values: OnceLock<Option<Vec<Value>>>,
    /// `timeline` read for its folds on first use: only the keys they read.
    timeline_entries: OnceLock<Option<Vec<super::TimelineEntry>>>,
}

impl RawParts {
    /// The `events` lines, in order.
    pub(crate) fn events(&self) -> Box<dyn ExactSizeIterator<Item = EventLine<'_>> + '_> {
        Box::new(self.events.lines(0..self.events.len()))
    }

    pub(crate) fn has_timeline(&self) -> bool {
        self.timeline.is_some()
    }

    /// The `timeline` array's text (checked UTF-8 by the scan).
    fn timeline_text(&self) -> Option<&str> {
        let range = self.timeline.clone()?;
        Some(self.events.buf.text(range))
    }

    /// Gives back the pages a parse of the timeline text faulted in.
    fn release_timeline_text(&self) {
        if let Some(range) = self.timeline.clone() {
            self.events.buf.release(range);
        }
    }

    /// The `timeline` entries, parsed once.
    pub(crate) fn timeline(&self) -> Option<&Vec<Value>> {
        let text = self.timeline_text()?;
        self.timeline_values
            .get_or_init(|| {
                let items = match serde_json::from_str(text) {
                    Ok(Value::Array(items)) => Some(items),
                    _ => None,
                };
                self.release_timeline_text();
                items
            })
            .as_ref()
    }

    /// The `timeline` entries as the folds read them, parsed once, straight
    /// from the text (never as a `Value` tree). A text with a surrogate
    /// escape goes through the `Value` parse, which alone decides whether
    /// the timeline reads at all.
    pub(crate) fn timeline_entries(&self) -> Option<&[super::TimelineEntry]> {
        let text = self.timeline_text()?;
        self.timeline_entries
            .get_or_init(|| {
                if may_hold_lone_surrogate(text) {
                    let values = self.timeline()?;
                    return Some(values.iter().filter_map(super::TimelineEntry::of).collect());
                }
                let entries = super::TimelineEntry::parse_all(text);
                self.release_timeline_text();
                entries
            })
            .as_deref()
    }

    /// Puts the kept text back into `doc` as values (for a writer).
    pub(crate) fn restore(&self, doc: &mut Map<String, Value>) {
        if let Some(slot) = doc.get_mut(EVENTS) {
            *slot = Value::Array(
                self.events()
                    .map(|l| Value::String(l.text().into_owned()))
                    .collect(),
            );
        }
        if let (Some(slot), Some(items)) = (doc.get_mut(TIMELINE), self.timeline()) {
            *slot = Value::Array(items.clone());
        }
    }
}

/// One recorded `events` line as its cassette holds it.
#[derive(Debug, Clone, Copy)]
pub enum EventLine<'a> {
    /// The line itself (a fully loaded cassette).
    Text(&'a str),
    /// The line's JSON string token, quotes included (a lean cassette); the
    /// loader has checked it (`with_token_text`).
    Token(&'a str),
}

impl<'a> EventLine<'a> {
    /// The line.
    pub fn text(self) -> Cow<'a, str> {
        match self {
            EventLine::Text(t) => Cow::Borrowed(t),
            EventLine::Token(tok) => unescape(tok),
        }
    }

    /// Calls `f` with the line, unescaped (when it must be) into a buffer
    /// this thread reuses: reading 50,000 lines then allocates nothing.
    pub fn with_text<R>(self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            // A checked token always unescapes (`Err` is for form's sake).
            EventLine::Token(tok) if tok.contains('\\') => {
                with_token_text(tok.as_bytes(), f).unwrap_or_else(|f| f(&self.text()))
            }
            _ => f(&self.text()),
        }
    }

    /// The line as stored: for a cheap pre-filter on an ASCII word that holds
    /// no `"` or `\` (escaping never splits such a word).
    pub fn stored(self) -> &'a str {
        match self {
            EventLine::Text(t) | EventLine::Token(t) => t,
        }
    }
}

/// A string token without its quotes.
fn token_inner(token: &str) -> &str {
    token
        .get(1..token.len().saturating_sub(1))
        .unwrap_or_default()
}

fn unescape(token: &str) -> Cow<'_, str> {
    let inner = token_inner(token);
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    let mut out = String::with_capacity(inner.len());
    crate::js::json::unescape_into(inner.as_bytes(), &mut out);
    Cow::Owned(out)
}

/// Calls `f` with the text of `token` when it is a JSON string token the
/// lean path takes: quoted, and a string inside
/// ([`crate::js::json::unescape_into`] checks it, UTF-8 included, while
/// unescaping, so no line is read twice). The text is unescaped into a
/// buffer this thread reuses. `Err(f)`: the full loader judges the file.
fn with_token_text<R, F: FnOnce(&str) -> R>(token: &[u8], f: F) -> Result<R, F> {
    thread_local! {
        static LINE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    let inner = match token {
        [b'"', inner @ .., b'"'] => inner,
        _ => return Err(f),
    };
    let apply = |buf: &mut String, f: F| {
        if crate::js::json::unescape_into(inner, buf) {
            Ok(f(buf))
        } else {
            Err(f)
        }
    };
    LINE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            apply(&mut buf, f)
        }
        // `f` reads another token itself: it gets its own buffer.
        Err(_) => apply(&mut String::new(), f),
    })
}

/// Splits the buffer into the document without its kept fields and the
/// kept text; `Err(buf)` when the full pipeline must decide (it then also
/// produces the error, if there is one).
pub(super) fn split(buf: FileBuffer) -> Result<(Map<String, Value>, RawParts), FileBuffer> {
    let (doc, spans, timeline) = {
        let Some(found) =
            scan(buf.bytes(), None, &|_| None).filter(|found| !too_deep(found.timeline))
        else {
            return Err(buf);
        };
        // The check a replay's readers make as they read ([`batch_reader`]).
        let checked = {
            use rayon::prelude::*;
            found
                .events
                .par_iter()
                .all(|token| with_token_text(token, |_| ()).is_ok())
        };
        if !checked {
            return Err(buf);
        }
        let (spans, timeline) = found.kept_spans(&buf);
        (found.doc, spans, timeline)
    };
    Ok((doc, raw_parts(buf, spans, timeline)))
}

/// [`split`], reading every `events` line with `read` while the scan goes
/// on (a batch of lines goes to the pool as soon as the scan has passed it)
/// and folding the lines read, in order, as they come: the scan, the reading
/// and the fold overlap, and no line outlives its reading.
///
/// The fold needs the `controlOut`, which cassettes hold after `events`. So
/// it starts on a guess read near the end of the file
/// ([`control_out_guess`]) and its result counts only if the guess equals
/// what the scan then finds; without a guess, the fold waits for the scan
/// (the lines read meanwhile wait with it). A wrong guess sends the file to
/// the full loader.
///
/// With `fold_timeline`, the `timeline` entries are read and folded on the
/// pool too: from the start, at the array [`timeline_guess`] finds near the
/// end of the file (kept only if the scan finds the timeline at the same
/// bytes), else once the scan has found it. Only the fold is kept: held
/// through the re-drive, a 37,000-entry timeline's entries raised a JSON
/// replay's peak memory by a fifth of the file (a later reader reads them
/// again, [`RawParts::timeline_entries`]).
pub(super) fn split_reading<T: Send, R: Send, U: Send>(
    buf: FileBuffer,
    reading: super::load::Reading<'_, T, R, U>,
) -> Result<SplitRead<R, U>, FileBuffer> {
    let guess_at = reading
        .fold_timeline
        .and_then(|_| timeline_guess(buf.bytes()));
    let mut left = LeftByTasks {
        folded: None,
        guessed: None,
        scanned: None,
        deep: std::sync::atomic::AtomicBool::new(false),
        guessed_end: OnceLock::new(),
    };
    let Some((doc, spans, timeline)) = scan_reading(&buf, reading, guess_at, &mut left) else {
        return Err(buf);
    };
    let read_timeline = match &timeline {
        Some(span) if guess_at == Some(span.start) => match left.guessed {
            Some(g) if g.span == *span => Some(g),
            _ if nests_deeper_than(buf.text(span.clone()), SHALLOW_ENOUGH) => return Err(buf),
            _ => left.scanned,
        },
        _ => left.scanned,
    };
    if left.deep.into_inner() {
        return Err(buf);
    }
    let Some((lines, true)) = left.folded else {
        return Err(buf);
    };
    let folded = super::FoldedWhileLoading {
        lines,
        timeline: read_timeline.and_then(|t| t.folded),
    };
    Ok((doc, raw_parts(buf, spans, timeline), folded))
}

/// What [`scan_reading`]'s tasks leave for [`split_reading`] to settle.
struct LeftByTasks<R, U> {
    /// The lines' fold, and whether it holds (every line came, the
    /// `controlOut` guess held).
    folded: Option<(R, bool)>,
    /// The guessed timeline's span and fold; then the scan's.
    guessed: Option<ReadTimeline<U>>,
    scanned: Option<ReadTimeline<U>>,
    /// The scanned timeline nests deeper than the lean path takes.
    deep: std::sync::atomic::AtomicBool,
    /// Where the guessed timeline ends, once its task has read it whole:
    /// the scan, arriving there later, steps over it.
    guessed_end: OnceLock<usize>,
}

/// The document without its kept fields, each `events` token's span, the
/// `timeline`'s span.
type KeptSpans = (Map<String, Value>, Vec<Range<usize>>, Option<Range<usize>>);

/// [`split_reading`]'s scope: the scan on this thread; on the pool, the
/// guessed timeline's reading, the lines' fold, the batches' reading and,
/// once the scan has found it elsewhere, the timeline's reading. `None`:
/// the scan did not take the file.
fn scan_reading<T: Send, R: Send, U: Send>(
    buf: &FileBuffer,
    reading: super::load::Reading<'_, T, R, U>,
    guess_at: Option<usize>,
    left: &mut LeftByTasks<R, U>,
) -> Option<KeptSpans> {
    let super::load::Reading {
        read,
        fold,
        fold_timeline,
    } = reading;
    let (tx, rx) = std::sync::mpsc::channel::<Message<T>>();
    let (unread, backlog) = (Unread::default(), Backlog::default());
    let LeftByTasks {
        folded,
        guessed,
        scanned,
        deep,
        guessed_end,
    } = left;
    let (deep, guessed_end) = (&*deep, &*guessed_end);
    let (tx, unread, backlog) = (&tx, &unread, &backlog);
    rayon::scope(move |s| {
        if let (Some(at), Some(fold_timeline)) = (guess_at, fold_timeline) {
            s.spawn(move |_| {
                *guessed = read_guessed_timeline(buf.bytes(), at, fold_timeline);
                if let Some(read) = guessed {
                    let _ = guessed_end.set(read.span.end);
                }
                buf.release(at..buf.bytes().len());
            });
        }
        s.spawn(move |_| *folded = Some(fold_in_order(buf.bytes(), &rx, backlog, fold)));
        let on_batch = batch_reader(s, buf, (unread, backlog), tx, read);
        let timeline_read = |at| {
            (guess_at == Some(at))
                .then(|| guessed_end.get().copied())
                .flatten()
        };
        let found = scan(buf.bytes(), Some(&on_batch), &timeline_read);
        // Everything kept is read again on demand (pages fault back in).
        buf.release(0..buf.bytes().len());
        let _ = tx.send(Message::End(found.as_ref().map(|found| {
            End {
                batches: found.events.len().div_ceil(READ_BATCH),
                control_out: super::control_out_of(&found.doc)
                    .map(|c| c.into_iter().map(str::to_owned).collect()),
            }
        })));
        let found = found?;
        if let Some(text) = found.timeline {
            let span = buf.span_of(text.as_bytes());
            // Where the guess was, its task read it (and checked its
            // nesting as it read); what its reading refused is settled
            // after the scope. Elsewhere it is read on the pool while the
            // last lines are read and folded, not after them
            // (`RawParts::timeline_entries` decides the rest).
            if guess_at != Some(span.start) {
                s.spawn(move |_| {
                    let (too_deep, read) = read_scanned_timeline(text, span.clone(), fold_timeline);
                    if too_deep {
                        deep.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    *scanned = Some(read);
                    buf.release(span);
                });
            }
        }
        let (spans, timeline) = found.kept_spans(buf);
        Some((found.doc, spans, timeline))
    })
}

/// The timeline at the guessed offset `at`, read and folded whole within the
/// nesting the lean path takes; `None` when no array ends there.
fn read_guessed_timeline<U>(
    bytes: &[u8],
    at: usize,
    fold_timeline: super::FoldTimeline<'_, U>,
) -> Option<ReadTimeline<U>> {
    let text = std::str::from_utf8(&bytes[at..]).ok()?;
    let mut entries = super::TimelineReader::new(text, SHALLOW_ENOUGH)?;
    let folded = fold_timeline(&mut entries);
    let len = entries.end()?;
    Some(ReadTimeline {
        span: at..at + len,
        folded: Some(folded),
    })
}

/// Folds the lines in file order as the batches arrive, with the
/// `controlOut` guessed from the end of the file (or, failing that, the one
/// the scan finds); valid only if every line came and the guess held.
fn fold_in_order<T, R>(
    bytes: &[u8],
    rx: &std::sync::mpsc::Receiver<Message<T>>,
    backlog: &Backlog,
    fold: super::FoldReadLines<'_, T, R>,
) -> (R, bool) {
    let mut lines = InOrder::new(rx, backlog);
    let control_out = match control_out_guess(bytes) {
        Some(guess) => guess,
        None => lines.control_out_found(),
    };
    // From here on the fold takes batches as they come: the scan may wait
    // for it (not before: without a guess it waits for the scan's end).
    let _folding = backlog.folding();
    let co: Option<Vec<&str>> = control_out
        .as_ref()
        .map(|c| c.iter().map(String::as_str).collect());
    let result = fold(co.as_deref(), &mut lines);
    let valid = lines.complete() && lines.control_out_found() == control_out;
    (result, valid)
}

/// What [`split_reading`] gives: the document without its kept text, the
/// kept text, and the folds made while loading.
type SplitRead<R, U> = (
    Map<String, Value>,
    RawParts,
    super::FoldedWhileLoading<R, U>,
);

/// A `timeline` read on the pool while the lines were: where it is in the
/// file, and its entries' fold (`None` when they were not read there).
struct ReadTimeline<U> {
    span: Range<usize>,
    folded: Option<U>,
}

/// Whether the timeline the scan found nests deeper than the lean path
/// takes, and (with `fold_timeline`) its entries, read and folded, unless it
/// may hold a lone surrogate (`RawParts::timeline_entries` reads those the
/// full way).
fn read_scanned_timeline<U>(
    text: &str,
    span: Range<usize>,
    fold_timeline: Option<super::FoldTimeline<'_, U>>,
) -> (bool, ReadTimeline<U>) {
    let fold_timeline = fold_timeline.filter(|_| !may_hold_lone_surrogate(text));
    // A reading within the nesting the lean path takes also answers that.
    let shallow = fold_timeline.and_then(|fold| {
        let mut entries = super::TimelineReader::new(text, SHALLOW_ENOUGH)?;
        let folded = fold(&mut entries);
        (entries.end() == Some(text.len())).then_some(folded)
    });
    let (too_deep, folded) = match (shallow, fold_timeline) {
        (Some(folded), _) => (false, Some(folded)),
        _ if nests_deeper_than(text, SHALLOW_ENOUGH) => (true, None),
        // The cursor refused it: straight to the reference reading.
        (None, Some(fold)) => (
            false,
            super::TimelineEntry::parse_all_serde(text)
                .map(|entries| fold(&mut entries.into_iter())),
        ),
        (None, None) => (false, None),
    };
    (too_deep, ReadTimeline { span, folded })
}

/// Where the top-level `timeline` array starts when `JSON.stringify(…, null,
/// 2)` wrote it (a line of its own, two spaces in, after `controlOut`),
/// found from the end of the file. Only a guess, like
/// [`control_out_guess`]: [`split_reading`] keeps what it read there only
/// if the scan finds the timeline at the same bytes.
fn timeline_guess(bytes: &[u8]) -> Option<usize> {
    const CONTROL_OUT: &[u8] = b"\n  \"controlOut\": ";
    const KEY: &[u8] = b"\n  \"timeline\": [";
    let after = rfind(bytes, CONTROL_OUT)?;
    let at = after + rfind(&bytes[after..], KEY)?;
    Some(at + KEY.len() - 1)
}

/// Where `needle` last occurs in `haystack`: a forward search of one piece
/// at a time, from the end. memchr's own `rfind` has no vector prefilter
/// and took ~8 ms over the megabytes of a large timeline, before a replay's
/// scan could start.
fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    const PIECE: usize = 1 << 16;
    let finder = memchr::memmem::Finder::new(needle);
    let mut end = haystack.len();
    while end > 0 {
        let start = end.saturating_sub(PIECE);
        // The piece runs on past `end` by the needle's length less one, so
        // an occurrence across two pieces is found in the earlier one.
        let piece = &haystack[start..(end + needle.len().saturating_sub(1)).min(haystack.len())];
        // Every occurrence, overlapping ones too (`find_iter` skips those).
        let (mut last, mut from) = (None, 0);
        while let Some(at) = piece.get(from..).and_then(|rest| finder.find(rest)) {
            last = Some(from + at);
            from += at + 1;
        }
        if let Some(at) = last {
            return Some(start + at);
        }
        end = start;
    }
    None
}

/// What the scan tells the fold: a batch of lines read (`None`: it held a
/// token the lean path does not take), then how it ended.
enum Message<T> {
    Batch(usize, Option<Vec<T>>),
    /// `None`: the scan failed (the full loader decides).
    End(Option<End>),
}

struct End {
    batches: usize,
    control_out: Option<Vec<String>>,
}

/// The top-level `controlOut` where `JSON.stringify(…, null, 2)` writes it
/// (a line of its own, two spaces in, after `events`), found from the end
/// of the file; `None` when there is no such line. Only a guess (an
/// `events` line never holds a raw newline, but a hand-made file can hold
/// anything): [`split_reading`] checks it against the scan.
fn control_out_guess(bytes: &[u8]) -> Option<Option<Vec<String>>> {
    const KEY: &[u8] = b"\n  \"controlOut\": ";
    let at = rfind(bytes, KEY)? + KEY.len();
    let value = serde_json::Deserializer::from_slice(&bytes[at..])
        .into_iter::<Value>()
        .next()?
        .ok()?;
    let doc = Map::from_iter([("controlOut".to_owned(), value)]);
    let lines = super::control_out_of(&doc)?;
    Some(Some(lines.into_iter().map(str::to_owned).collect()))
}

/// The lines read, in order, as their batches arrive (in any order).
struct InOrder<'r, T> {
    rx: &'r std::sync::mpsc::Receiver<Message<T>>,
    backlog: &'r Backlog,
    next: usize,
    early: std::collections::BTreeMap<usize, Vec<T>>,
    current: std::vec::IntoIter<T>,
    /// How the scan ended, once it has (`Some(None)`: it failed).
    end: Option<Option<End>>,
    /// A batch held a token the lean path does not take.
    unusual: bool,
}

impl<'r, T> InOrder<'r, T> {
    fn new(rx: &'r std::sync::mpsc::Receiver<Message<T>>, backlog: &'r Backlog) -> Self {
        InOrder {
            rx,
            backlog,
            next: 0,
            early: std::collections::BTreeMap::new(),
            current: Vec::new().into_iter(),
            end: None,
            unusual: false,
        }
    }

    /// Every line was read and handed out.
    fn complete(&self) -> bool {
        matches!(&self.end, Some(Some(end)) if end.batches == self.next)
            && !self.unusual
            && self.current.len() == 0
    }

    /// The `controlOut` the scan found, waiting for the scan to end.
    fn control_out_found(&mut self) -> Option<Vec<String>> {
        while self.end.is_none() {
            self.receive();
        }
        match &self.end {
            Some(Some(end)) => end.control_out.clone(),
            _ => None,
        }
    }

    /// Takes one message, waiting for it. The wait runs other pool work
    /// meanwhile (this runs on a pool worker, and the reading tasks may be
    /// queued behind it: a replay inside the pool must not hold a worker
    /// its own batches need).
    fn receive(&mut self) {
        use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
        let message = match self.rx.try_recv() {
            Ok(message) => message,
            Err(TryRecvError::Disconnected) => Message::End(None),
            Err(TryRecvError::Empty) => {
                if rayon::yield_now() == Some(rayon::Yield::Executed) {
                    return;
                }
                match self.rx.recv_timeout(std::time::Duration::from_millis(1)) {
                    Ok(message) => message,
                    Err(RecvTimeoutError::Timeout) => return,
                    Err(RecvTimeoutError::Disconnected) => Message::End(None),
                }
            }
        };
        match message {
            Message::Batch(index, Some(batch)) => {
                self.early.insert(index, batch);
            }
            Message::Batch(_, None) => self.unusual = true,
            Message::End(end) => self.end = Some(end),
        }
    }
}

impl<T> Iterator for InOrder<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        loop {
            if let Some(line) = self.current.next() {
                return Some(line);
            }
            if self.unusual {
                return None;
            }
            if let Some(batch) = self.early.remove(&self.next) {
                self.backlog.taken();
                self.current = batch.into_iter();
                self.next += 1;
                continue;
            }
            match &self.end {
                Some(Some(end)) if end.batches == self.next => return None,
                Some(None) => return None,
                _ => self.receive(),
            }
        }
    }
}

/// Batches the scan has passed and no task has taken yet, oldest first.
type Unread<'de> = std::sync::Mutex<std::collections::VecDeque<(usize, Vec<&'de [u8]>)>>;

/// The scan's [`OnBatch`] for [`split_reading`]: queues each batch and
/// spawns a task that reads the oldest queued batch (not necessarily its
/// own: a worker runs its newest task first, and reading the newest batch
/// first left every batch between it and the fold waiting in memory), then
/// gives its pages back. Each token is checked as it is read: straight
/// from the stored text where the reader can ([`super::ReadLines::read_stored`],
/// which takes only a token the lean path takes), else unescaped
/// ([`with_token_text`]); a batch with a token the lean path does not take
/// is sent as `None`.
///
/// The scan (a `memchr` for line breaks) runs far faster than reading, so
/// when [`MAX_UNREAD`] batches wait, it reads the oldest one itself rather
/// than race on: the pages it passed stay mapped until read, each faulted
/// in once, and no more than a few megabytes of them. (It never waits on
/// other work: waiting inside the pool could run the fold, which waits on
/// the scan.)
fn batch_reader<'a, 'scope, 'de: 'scope, T: Send + 'scope>(
    s: &'a rayon::Scope<'scope>,
    buf: &'de FileBuffer,
    (unread, backlog): (&'scope Unread<'de>, &'scope Backlog),
    tx: &'a std::sync::mpsc::Sender<Message<T>>,
    read: &'scope dyn super::ReadLines<T>,
) -> impl Fn(usize, Vec<&'de [u8]>) + 'a {
    let queue = move || unread.lock().unwrap_or_else(|e| e.into_inner());
    let read_oldest = move |tx: &std::sync::mpsc::Sender<Message<T>>| {
        let Some((index, tokens)) = queue().pop_front() else {
            return;
        };
        // Sized once (a collect into `Option<Vec>` cannot know the size).
        let mut lines = Vec::with_capacity(tokens.len());
        let complete = tokens.iter().all(|tok| {
            let line = match read.read_stored(StoredToken { bytes: tok, buf }) {
                Some(line) => Some(line),
                None => with_token_text(tok, |text| read.read(EventLine::Text(text))).ok(),
            };
            line.map(|line| lines.push(line)).is_some()
        });
        let lines = complete.then_some(lines);
        if let (Some(first), Some(last)) = (tokens.first(), tokens.last()) {
            buf.release(buf.span_of(first).start..buf.span_of(last).end);
        }
        backlog.sent();
        // The receiver outlives every sender: this cannot fail.
        let _ = tx.send(Message::Batch(index, lines));
    };
    move |index, tokens| {
        let waiting = {
            let mut queue = queue();
            queue.push_back((index, tokens));
            queue.len()
        };
        let task_tx = tx.clone();
        // One task per batch, so every batch is taken by some reader.
        s.spawn(move |_| read_oldest(&task_tx));
        if waiting > MAX_UNREAD {
            read_oldest(tx);
        }
        // The fold is behind (descheduled, on a loaded machine): wait for it
        // rather than read on. What it needs next is read or being read (the
        // readers take the oldest batch first).
        while backlog.fold_is_behind() {
            backlog.wait_for_fold();
        }
    }
}

/// Batches read and not yet taken by the fold, and whether the fold is
/// taking them as they come. Unbounded, the lines the pool's readers read
/// ahead while the folding task was descheduled raised a 50,000-event
/// replay's peak memory from 1.2x the file to up to 1.6x, about one run in
/// ten under load (docs/benchmarks.md, issue 44).
#[derive(Default)]
struct Backlog {
    unfolded: std::sync::Mutex<usize>,
    taken: std::sync::Condvar,
    folding: std::sync::atomic::AtomicBool,
}

/// Sets [`Backlog::folding`] while it lives (cleared however the fold ends).
struct Folding<'a>(&'a Backlog);

impl Drop for Folding<'_> {
    fn drop(&mut self) {
        self.0
            .folding
            .store(false, std::sync::atomic::Ordering::Release);
        self.0.taken.notify_all();
    }
}

impl Backlog {
    fn count(&self) -> std::sync::MutexGuard<'_, usize> {
        self.unfolded.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn folding(&self) -> Folding<'_> {
        self.folding
            .store(true, std::sync::atomic::Ordering::Release);
        Folding(self)
    }

    fn sent(&self) {
        *self.count() += 1;
    }

    fn taken(&self) {
        let mut count = self.count();
        *count = count.saturating_sub(1);
        self.taken.notify_all();
    }

    /// More than [`MAX_UNFOLDED`] batches wait for a fold that is running
    /// (a fold not started, or waiting for the scan's end, is never waited
    /// for: that could wait forever).
    fn fold_is_behind(&self) -> bool {
        self.folding.load(std::sync::atomic::Ordering::Acquire) && *self.count() > MAX_UNFOLDED
    }

    /// Waits until the fold takes a batch or ends, or a millisecond passes.
    /// The fold needs nothing from the waiting scan: it is running (on
    /// another thread) and has batches to take. (Running other pool work
    /// here instead would run this file's own queued reading tasks, the
    /// read-ahead this wait is for.)
    fn wait_for_fold(&self) {
        let count = self.count();
        if *count > MAX_UNFOLDED && self.folding.load(std::sync::atomic::Ordering::Acquire) {
            let _ = self
                .taken
                .wait_timeout(count, std::time::Duration::from_millis(1));
        }
    }
}

/// Batches read ahead of the fold before the scan waits for it.
const MAX_UNFOLDED: usize = 4;

/// Batches the scan lets wait before it reads one itself.
const MAX_UNREAD: usize = 8;

/// Lines handed to one reading task: big enough that a task's overhead
/// vanishes, small enough that both cores start while the scan is young.
const READ_BATCH: usize = 512;

fn raw_parts(
    buf: FileBuffer,
    spans: Vec<Range<usize>>,
    timeline: Option<Range<usize>>,
) -> RawParts {
    RawParts {
        events: LeanEvents { buf, spans },
        timeline,
        timeline_values: OnceLock::new(),
        timeline_entries: OnceLock::new(),
    }
}

/// What one pass over the document found.
struct Scanned<'a> {
    doc: Map<String, Value>,
    /// Each `events` item's token, quotes included, not yet checked as a
    /// JSON string: the readers check each as they read it.
    events: Vec<&'a [u8]>,
    /// The `timeline` array's text (its syntax checked).
    timeline: Option<&'a str>,
}

impl Scanned<'_> {
    /// Where the kept text is in `buf`: each `events` token, the `timeline`.
    fn kept_spans(&self, buf: &FileBuffer) -> (Vec<Range<usize>>, Option<Range<usize>>) {
        let events = self.events.iter().map(|token| buf.span_of(token)).collect();
        let timeline = self.timeline.map(|text| buf.span_of(text.as_bytes()));
        (events, timeline)
    }
}

/// Called with each batch of `events` tokens (and its index) as the scan
/// passes it.
type OnBatch<'s, 'de> = &'s (dyn Fn(usize, Vec<&'de [u8]>) + 's);

/// One pass over the document. The top-level object is walked here and each
/// member is read by serde_json (which checks its syntax and UTF-8), except
/// `events` written as `JSON.stringify(…, null, 2)` writes it
/// ([`indented_events`]): its items are found by line and checked by the
/// readers, so the scan no longer parses 50 MB of escaped text before a
/// single line can be read. `None`: the full loader judges the file.
/// `timeline_read`: where a `timeline` array at a given offset ends, when
/// it has been read whole already (by the timeline's own reader, which
/// takes only JSON serde_json takes, within the lean path's nesting): the
/// scan then steps over it instead of reading it again.
fn scan<'de>(
    bytes: &'de [u8],
    on_batch: Option<OnBatch<'_, 'de>>,
    timeline_read: &dyn Fn(usize) -> Option<usize>,
) -> Option<Scanned<'de>> {
    let mut members = Members::default();
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key, end) = value_at::<String>(bytes, at)?;
            at = skip_ws(bytes, end);
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at = skip_ws(bytes, at + 1);
            at = members.read(key, bytes, at, on_batch, timeline_read)?;
            at = skip_ws(bytes, at);
            match bytes.get(at) {
                Some(b',') => at = skip_ws(bytes, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    if skip_ws(bytes, at) != bytes.len() {
        return None;
    }
    // No `events`: the shape check's error, from the full loader.
    Some(Scanned {
        doc: members.doc,
        events: members.events?,
        timeline: members.timeline,
    })
}

/// The top-level members [`scan`] has read so far.
#[derive(Default)]
struct Members<'de> {
    doc: Map<String, Value>,
    events: Option<Vec<&'de [u8]>>,
    timeline: Option<&'de str>,
}

impl<'de> Members<'de> {
    /// Reads member `key`'s value at `at`; where it ends. `None`: the full
    /// loader judges the file.
    fn read(
        &mut self,
        key: String,
        bytes: &'de [u8],
        at: usize,
        on_batch: Option<OnBatch<'_, 'de>>,
        timeline_read: &dyn Fn(usize) -> Option<usize>,
    ) -> Option<usize> {
        // serde_json's reserved keys and repeated kept fields: the full
        // loader's rules apply.
        if key.starts_with("$serde_json::private::")
            || (key == EVENTS && self.events.is_some())
            || (key == TIMELINE && self.timeline.is_some())
        {
            return None;
        }
        if key == EVENTS {
            let (tokens, end) = match indented_events(bytes, at, on_batch).ok()? {
                Some(found) => found,
                None => parsed_events(bytes, at, on_batch)?,
            };
            self.events = Some(tokens);
            self.doc.insert(key, Value::Array(Vec::new()));
            return Some(end);
        }
        if key == TIMELINE {
            return self.read_timeline(key, bytes, at, timeline_read);
        }
        let (value, end) = value_at::<Value>(bytes, at)?;
        self.doc.insert(key, within_nesting_limit(value)?);
        Some(end)
    }

    /// The `timeline` member: stepped over where its own reader read it
    /// whole already, else its text found (an array kept as text, any
    /// other value as the value it is).
    fn read_timeline(
        &mut self,
        key: String,
        bytes: &'de [u8],
        at: usize,
        timeline_read: &dyn Fn(usize) -> Option<usize>,
    ) -> Option<usize> {
        if let Some(end) = timeline_read(at)
            && let Ok(text) = std::str::from_utf8(&bytes[at..end])
        {
            self.timeline = Some(text);
            self.doc.insert(key, Value::Array(Vec::new()));
            return Some(end);
        }
        let (raw, end) = value_at::<&RawValue>(bytes, at)?;
        if raw.get().starts_with('[') {
            // Its nesting is checked by the caller ([`too_deep`]).
            self.timeline = Some(raw.get());
            self.doc.insert(key, Value::Array(Vec::new()));
        } else {
            // Not an array: kept as the value it is (rare, small).
            self.doc.insert(key, member_value(raw.get())?);
        }
        Some(end)
    }
}

/// Past JSON whitespace from `at`.
fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The JSON value at `at` (after any whitespace) and where it ends.
fn value_at<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8], at: usize) -> Option<(T, usize)> {
    let mut values = serde_json::Deserializer::from_slice(bytes.get(at..)?).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, at + values.byte_offset()))
}

/// A top-level member's value read on its own.
fn member_value(text: &str) -> Option<Value> {
    within_nesting_limit(serde_json::from_str(text).ok()?)
}

/// `value` when the whole document's parse would have taken it: serde_json
/// allows 127 nested arrays/objects in a document, the top-level object
/// being one of them, while a member read on its own may nest one deeper.
fn within_nesting_limit(value: Value) -> Option<Value> {
    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
            Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    (depth(&value) < super::load::MAX_NESTING_DEPTH - 1).then_some(value)
}

/// The `events` tokens found, and where the array ends.
type FoundEvents<'de> = (Vec<&'de [u8]>, usize);

/// How [`indented_events`] ends when it does not find the array.
struct NotIndented;

/// `events` at `at` as `JSON.stringify(…, null, 2)` (cowork-harness, reel)
/// writes it: `[`, a line break, one item per line (indentation, the
/// token, a `,` unless it is the last), then the `]` after a line's
/// indentation. A JSON string never holds a raw line break, so the items
/// are found with `memchr`, without reading their text; each token is
/// checked whole as it is read ([`with_token_text`]: one string, nothing
/// else), which makes every layout taken here valid JSON holding exactly
/// these items. Also takes `\r\n` line ends (a checkout that converts them).
///
/// `Ok(None)`: the array does not start this way (serde_json reads it).
/// `Err`: it starts this way, then breaks the layout; batches may already
/// be queued, so the full loader judges the file.
fn indented_events<'de>(
    bytes: &'de [u8],
    at: usize,
    on_batch: Option<OnBatch<'_, 'de>>,
) -> Result<Option<FoundEvents<'de>>, NotIndented> {
    let mut line_start = match bytes.get(at..at + 3) {
        Some([b'[', b'\n', _]) => at + 2,
        Some(b"[\r\n") => at + 3,
        _ => return Ok(None),
    };
    let mut tokens = Batches::new(on_batch);
    let mut comma_before = false;
    loop {
        let rest = &bytes[line_start..];
        let line_len = memchr::memchr(b'\n', rest);
        let line = &rest[..line_len.unwrap_or(rest.len())];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let item = &line[indent..];
        if item.first() == Some(&b']') {
            // A `,` before the `]` is a syntax error.
            if comma_before {
                return Err(NotIndented);
            }
            return Ok(Some((tokens.finish(), line_start + indent + 1)));
        }
        if !tokens.all.is_empty() && !comma_before {
            return Err(NotIndented);
        }
        let (token, comma) = match item.strip_suffix(b",") {
            Some(token) => (token, true),
            None => (item, false),
        };
        if token.len() < 2 || token[0] != b'"' || token[token.len() - 1] != b'"' {
            return Err(NotIndented);
        }
        tokens.push(token);
        comma_before = comma;
        line_start += line_len.ok_or(NotIndented)? + 1;
    }
}

/// The `events` tokens as a scan finds them, handed to `on_batch` in
/// batches of [`READ_BATCH`] as it goes.
struct Batches<'s, 'de> {
    on_batch: Option<OnBatch<'s, 'de>>,
    all: Vec<&'de [u8]>,
    batch: Vec<&'de [u8]>,
    sent: usize,
}

impl<'s, 'de> Batches<'s, 'de> {
    fn new(on_batch: Option<OnBatch<'s, 'de>>) -> Self {
        Batches {
            on_batch,
            all: Vec::new(),
            batch: Vec::new(),
            sent: 0,
        }
    }

    fn push(&mut self, token: &'de [u8]) {
        self.all.push(token);
        if let Some(on_batch) = self.on_batch {
            self.batch.push(token);
            if self.batch.len() == READ_BATCH {
                on_batch(self.sent, std::mem::take(&mut self.batch));
                self.sent += 1;
            }
        }
    }

    /// Sends the last, partial batch; every token, in order.
    fn finish(self) -> Vec<&'de [u8]> {
        if let Some(on_batch) = self.on_batch
            && !self.batch.is_empty()
        {
            on_batch(self.sent, self.batch);
        }
        self.all
    }
}

/// `events` at `at` in any other layout, read by serde_json (each item's
/// syntax and UTF-8 checked, a token of another type refused later by the
/// readers' check), and where the array ends.
fn parsed_events<'de>(
    bytes: &'de [u8],
    at: usize,
    on_batch: Option<OnBatch<'_, 'de>>,
) -> Option<FoundEvents<'de>> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes.get(at..)?);
    let tokens = EventTokens { on_batch }.deserialize(&mut de).ok()?;
    // serde_json checked the array, so its `]` is the first byte after the
    // last item (or the `[`) and whitespace.
    let after = tokens
        .last()
        .map_or(skip_ws(bytes, at) + 1, |token| bytes_span(bytes, token).end);
    let close = skip_ws(bytes, after);
    (bytes.get(close) == Some(&b']')).then_some((tokens, close + 1))
}

/// Where `part` (a slice of `bytes`) is in it.
fn bytes_span(bytes: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - bytes.as_ptr() as usize;
    start..start + part.len()
}

/// Whether the `timeline` text nests deeper than the lean path takes:
/// skipping a value checked its syntax but not serde_json's nesting limit,
/// which the full loader enforces (so it decides such a file).
fn too_deep(timeline: Option<&str>) -> bool {
    timeline.is_some_and(|text| nests_deeper_than(text, SHALLOW_ENOUGH))
}

/// Nesting the lean path takes without asking the full loader (whose limit
/// is [`super::load::MAX_NESTING_DEPTH`] for the whole document).
const SHALLOW_ENOUGH: usize = 64;

/// True when `json` (syntax already checked) opens more than `limit`
/// arrays/objects inside each other.
fn nests_deeper_than(json: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut bytes = json.bytes();
    while let Some(b) = bytes.next() {
        match (in_string, b) {
            (true, b'\\') => {
                bytes.next();
            }
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A `\uD800`–`\uDFFF` escape: the full loader decides whether it is paired
/// (JSON.stringify writes a lone one as such an escape). Conservative: an
/// escaped backslash followed by `ud8…` also sends the file there.
fn may_hold_lone_surrogate(token: &str) -> bool {
    static UNICODE_ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    UNICODE_ESCAPE.find_iter(token.as_bytes()).any(|i| {
        let hex = &token.as_bytes()[i + 2..];
        hex.len() >= 2
            && hex[0].eq_ignore_ascii_case(&b'd')
            && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

/// The `events` array as its items' raw tokens, handed to `on_batch` in
/// batches of [`READ_BATCH`] as the scan passes them.
struct EventTokens<'s, 'de> {
    on_batch: Option<OnBatch<'s, 'de>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for EventTokens<'_, 'de> {
    type Value = Vec<&'de [u8]>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventTokens<'_, 'de> {
    type Value = Vec<&'de [u8]>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut tokens = Batches::new(self.on_batch);
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            tokens.push(raw.get().as_bytes());
        }
        Ok(tokens.finish())
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::Cassette;

    /// Every `*.cassette.json` under `dir`, recursively.
    fn cassettes_under(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                cassettes_under(&p, out);
            } else if p.to_string_lossy().ends_with(".cassette.json") {
                out.push(p);
            }
        }
    }

    /// The lean load must be indistinguishable from the full one: the same
    /// error (message and JSON path), or the same document, lines, timeline
    /// and written bytes.
    fn assert_same(path: &Path) -> Result<(), String> {
        let full = Cassette::load(path);
        let lean = Cassette::load_lean(path);
        match (full, lean) {
            (Err(a), Err(b)) => {
                if a.to_string() != b.to_string() || a.json_path() != b.json_path() {
                    return Err(format!("errors differ: {a} | {b}"));
                }
            }
            (Ok(a), Ok(b)) => {
                let la: Vec<_> = a.events().collect();
                let lb: Vec<_> = b.events().collect();
                if la != lb {
                    return Err("events differ".into());
                }
                if a.timeline() != b.timeline() {
                    return Err("timeline differs".into());
                }
                if a.to_json_pretty() != b.to_json_pretty() {
                    return Err("written bytes differ".into());
                }
                if a.load_warnings != b.load_warnings || a.version != b.version {
                    return Err("warnings or version differ".into());
                }
            }
            (a, b) => {
                return Err(format!(
                    "one loads, one does not: {:?} | {:?}",
                    a.err(),
                    b.err()
                ));
            }
        }
        Ok(())
    }

    #[test]
    fn lean_load_matches_the_full_load_on_every_cassette_in_the_repo() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for dir in ["tests", "examples"] {
            cassettes_under(&root.join(dir), &mut files);
        }
        assert!(files.len() > 50, "found only {} cassettes", files.len());
        let failures: Vec<String> = files
            .iter()
            .filter_map(|p| {
                assert_same(p)
                    .err()
                    .map(|e| format!("{}: {e}", p.display()))
            })
            .collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn lean_load_matches_the_full_load_on_edge_documents() {
        let dir = tempfile::tempdir().unwrap();
        let scn = r#""scenario":{"prompt":"p","session":"s"},"cassetteVersion":11"#;
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let cases = [
            (
                "plain",
                format!(r#"{{{scn},"events":["{{\"a\":1}}","x"],"timeline":[{{"t":1}}]}}"#),
            ),
            (
                "duplicate events",
                format!(r#"{{"events":["a"],{scn},"events":["b"]}}"#),
            ),
            (
                "duplicate timeline",
                format!(r#"{{"timeline":[1],{scn},"events":[],"timeline":[2]}}"#),
            ),
            (
                "lone surrogate",
                format!(r#"{{{scn},"events":["\ud800"]}}"#),
            ),
            (
                "paired surrogate",
                format!(r#"{{{scn},"events":["\ud83d\ude00"]}}"#),
            ),
            (
                "escaped backslash then ud8",
                format!(r#"{{{scn},"events":["\\ud800"]}}"#),
            ),
            ("non-string event", format!(r#"{{{scn},"events":["a",1]}}"#)),
            ("events not array", format!(r#"{{{scn},"events":"a"}}"#)),
            ("no events", format!(r#"{{{scn}}}"#)),
            (
                "timeline null",
                format!(r#"{{{scn},"events":[],"timeline":null}}"#),
            ),
            (
                "timeline deep",
                format!(r#"{{{scn},"events":[],"timeline":{deep}}}"#),
            ),
            // Where a cassette writer puts it (read from the start), deep
            // there, and a decoy there with the member that counts later.
            (
                "timeline indented",
                format!(
                    "{{{scn},\"events\":[],\n  \"timeline\": [\n    {{\"type\": \"tool_use\", \"toolUseId\": \"a\", \"ts\": 1}}\n  ]\n}}"
                ),
            ),
            (
                "timeline indented deep",
                format!("{{{scn},\"events\":[],\n  \"timeline\": {deep}\n}}"),
            ),
            (
                "timeline indented decoy",
                format!(
                    "{{{scn},\"events\":[],\n  \"timeline\": [{{\"type\": \"a\"}}], \"timeline\": [{{\"type\": \"b\"}}]\n}}"
                ),
            ),
            (
                "timeline indented not json",
                format!("{{{scn},\"events\":[],\n  \"timeline\": [1,]\n}}"),
            ),
            ("truncated", format!(r#"{{{scn},"events":["a""#)),
            ("trailing garbage", format!(r#"{{{scn},"events":[]}} x"#)),
            ("bom", format!("\u{feff}{{{scn},\"events\":[]}}")),
            ("empty", String::new()),
            ("array root", "[]".into()),
            (
                "reserved key",
                format!(r#"{{"$serde_json::private::Number":"1",{scn},"events":[]}}"#),
            ),
            (
                "control char escape",
                format!(r#"{{{scn},"events":["a\u0001b\n"]}}"#),
            ),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|(name, text)| {
                let p = write(dir.path(), "c.cassette.json", text);
                // Read while loading: the full loader's lines, or its verdict.
                read_while_loading(&p);
                assert_same(&p).err().map(|e| format!("{name}: {e}"))
            })
            .collect();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn the_line_unescaper_agrees_with_serde_json() {
        let samples = [
            r#""plain""#,
            r#""{\"type\":\"assistant\",\"t\":\"a\\nb\"}""#,
            r#""tab\there\r\n\/ \b\f \\ end\\""#,
            r#""\u0001\u001f\u00e9\u20ac\uFFFD é€ 😀""#,
            r#""\\ud800 is text, not an escape""#,
            r#""""#,
        ];
        // (The unescaper itself is tested in `js::json::unescape`.)
        for token in samples {
            let want: String = serde_json::from_str(token).unwrap();
            assert_eq!(super::unescape(token), want, "{token}");
            assert!(
                super::EventLine::Token(token).with_text(|t| t == want),
                "{token}"
            );
        }
    }

    /// Reads each line as a replay does: straight from the stored token
    /// where the replay's reader takes it (which must then be a token the
    /// lean path takes), else from its text.
    struct StoredFirst;

    impl super::super::ReadLines<String> for StoredFirst {
        fn read(&self, line: super::EventLine<'_>) -> String {
            line.with_text(str::to_owned)
        }

        fn read_stored(&self, token: super::StoredToken<'_>) -> Option<String> {
            crate::evidence::LineReader {
                carried_lines: true,
            }
            .read_stored(token)?;
            let text = serde_json::from_slice::<String>(token.bytes());
            Some(text.expect("a token the stored reader takes is a JSON string"))
        }
    }

    /// `bytes` mapped from a file of their own (padded with spaces to
    /// `len`), for a [`super::StoredToken`].
    fn mapped(dir: &Path, bytes: &[u8], len: usize) -> super::FileBuffer {
        let p = dir.join("token");
        let mut padded = bytes.to_vec();
        padded.resize(len.max(bytes.len()), b' ');
        std::fs::write(&p, &padded).unwrap();
        let file = std::fs::File::open(&p).unwrap();
        super::FileBuffer::read(&file, padded.len())
            .unwrap()
            .expect("mapped")
    }

    /// A carried line kept where the file holds it reads, writes and
    /// equals what the line's own text makes, whatever its shape; its
    /// pages given back, it still reads the same.
    #[test]
    fn a_kept_carried_line_reads_as_its_text() {
        use crate::evidence::ContextData;
        let dir = tempfile::tempdir().unwrap();
        for line in [
            r#"{"type":"system","subtype":"thinking_tokens","n":7,"pad":"a\nb \"q\" \\ \/ é"}"#,
            r#"{"type":"system","subtype":"s","x":{"b":[1,"\u00e9"]},"n":1E5}"#,
            r#"{"type":"system","subtype":"s","k":1,"k":2}"#,
            r#"{ "type" : "system", "subtype" : "s" }"#,
        ] {
            let mut token = Vec::new();
            crate::js::json::quote(line, &mut token);
            let small = mapped(dir.path(), &token, 0);
            let stored = super::StoredToken {
                bytes: small.bytes(),
                buf: &small,
            };
            assert!(stored.keep().is_none(), "a small file's lines are copied");
            let buf = mapped(dir.path(), &token, super::KEPT_FILE_MIN);
            let stored = super::StoredToken {
                bytes: &buf.bytes()[..token.len()],
                buf: &buf,
            };
            let copy = String::from_utf8(token.clone()).unwrap();
            assert!(stored.keep_text(&copy).is_none(), "only its own text");
            let kept = stored.keep().expect("UTF-8");
            let inner = &kept.text()[1..kept.text().len() - 1];
            let want = ContextData::of_stored(inner);
            let kept = ContextData::Stored(kept.clone());
            let json = |d: &ContextData| serde_json::to_string(d).unwrap();
            assert_eq!(json(&kept), json(&want), "{line}");
            assert_eq!(kept, want, "{line}");
            let mut by_hand = Vec::new();
            kept.write_json(&mut by_hand).unwrap();
            assert_eq!(String::from_utf8(by_hand).unwrap(), json(&want), "{line}");
            buf.release(0..buf.bytes().len());
            assert_eq!(
                json(&kept),
                json(&want),
                "{line}: after its pages went back"
            );
        }
    }

    /// Reads a lean cassette's lines the way a replay does, returning the
    /// lines `fold` saw (`None`: the file went through the full loader or
    /// does not load).
    fn read_while_loading(p: &Path) -> Option<Vec<String>> {
        let read = StoredFirst;
        let fold_timeline = |entries: &mut dyn Iterator<Item = super::super::TimelineEntry>| {
            entries.collect::<Vec<_>>()
        };
        let loaded = Cassette::load_lean_reading(
            p,
            &read,
            &mut |_, lines| lines.collect::<Vec<_>>(),
            Some(&fold_timeline),
        );
        let (c, folded) = loaded.ok()?;
        let want: Vec<String> = c.events().map(|l| l.into_owned()).collect();
        if let Some(super::super::FoldedWhileLoading {
            lines,
            timeline: folded_timeline,
        }) = &folded
        {
            assert_eq!(
                lines, &want,
                "lines read while loading = the cassette's lines"
            );
            let full = Cassette::load(p).expect("the full loader takes what the lean one took");
            assert_eq!(
                c.timeline_entries(),
                full.timeline_entries(),
                "timeline read while loading = the full loader's"
            );
            if let Some(folded_timeline) = folded_timeline {
                assert_eq!(
                    Some(folded_timeline.as_slice()),
                    full.timeline_entries().as_deref(),
                    "timeline folded while loading = the full loader's"
                );
            }
            let full: Vec<String> = full.events().map(|l| l.into_owned()).collect();
            assert_eq!(
                lines, &full,
                "lines read while loading = the full loader's lines"
            );
        }
        folded.map(|f| f.lines)
    }

    #[test]
    fn lines_read_while_loading_come_in_order_and_released_pages_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        // Enough lines for many batches, each line spanning pages.
        let n = 5 * super::READ_BATCH + 7;
        let events: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "\"{{\\\"i\\\":{i},\\\"pad\\\":\\\"{}\\\"}}\"",
                    "x".repeat(i % 9000)
                )
            })
            .collect();
        let text = format!(
            r#"{{"scenario":{{"prompt":"p","session":"s"}},"cassetteVersion":11,"events":[{}]}}"#,
            events.join(",\n")
        );
        let p = write(dir.path(), "c.cassette.json", &text);
        let lines = read_while_loading(&p).expect("lean");
        assert_eq!(lines.len(), n);
        assert!(lines[n - 1].starts_with(&format!("{{\"i\":{}", n - 1)));
        assert_same(&p).unwrap();
        // The same lines laid out one per line (found by line, not parsed).
        let items: Vec<String> = events.iter().map(|e| format!("    {e}")).collect();
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        let text = indented(&items, "").replace("\"\n    \"", "\",\n    \"");
        let p = write(dir.path(), "c.cassette.json", &text);
        assert_eq!(read_while_loading(&p).expect("lean"), lines);
        assert_same(&p).unwrap();
    }

    #[test]
    fn a_token_the_lean_path_refuses_in_a_late_batch_sends_the_file_to_the_full_loader() {
        let dir = tempfile::tempdir().unwrap();
        let mut events: Vec<String> = (0..3 * super::READ_BATCH)
            .map(|i| format!("\"{i}\""))
            .collect();
        let last = events.len() - 1;
        events[last] = "\"\\ud83d\\ude00\"".into();
        let text = format!(
            r#"{{"scenario":{{"prompt":"p","session":"s"}},"cassetteVersion":11,"events":[{}]}}"#,
            events.join(",")
        );
        let p = write(dir.path(), "c.cassette.json", &text);
        assert!(read_while_loading(&p).is_none());
        assert_same(&p).unwrap();
    }

    /// The fold gets the cassette's own `controlOut`: from the guess when it
    /// is right, from the scan when there is no guess, and a wrong guess
    /// (here a nested key laid out like the top-level one) sends the file
    /// to the full loader rather than fold on the wrong lines.
    #[test]
    fn the_fold_gets_the_cassettes_control_out_or_the_file_goes_to_the_full_loader() {
        let dir = tempfile::tempdir().unwrap();
        let head =
            r#"{"scenario":{"prompt":"p","session":"s"},"cassetteVersion":11,"events":["a","b"]"#;
        let cases = [
            // As JSON.stringify(…, 2) writes it: the guess is right.
            (
                "pretty",
                format!("{head},\n  \"controlOut\": [\n    \"x\",\n    \"y\"\n  ]\n}}"),
                Some(Some(vec!["x", "y"])),
            ),
            // No such line: the fold waits for the scan.
            (
                "compact",
                format!(r#"{head},"controlOut":["z"]}}"#),
                Some(Some(vec!["z"])),
            ),
            ("absent", format!("{head}}}"), Some(None)),
            // A nested look-alike after the real one: a wrong guess.
            (
                "look-alike",
                format!(
                    "{head},\"controlOut\":[\"real\"],\"other\":{{\n  \"controlOut\": [\"fake\"]}}}}"
                ),
                None,
            ),
        ];
        for (name, text, want) in cases {
            let p = write(dir.path(), "c.cassette.json", &text);
            let read = |l: super::EventLine<'_>| l.with_text(str::to_owned);
            let fold = &mut |co: Option<&[&str]>, lines: &mut dyn Iterator<Item = String>| {
                let lines: Vec<String> = lines.collect();
                assert_eq!(lines, ["a", "b"], "{name}");
                co.map(|co| co.iter().map(|l| l.to_string()).collect::<Vec<_>>())
            };
            let (c, got) = Cassette::load_lean_reading::<_, _, ()>(&p, &read, fold, None).unwrap();
            let got = got.map(|f| f.lines);
            let want =
                want.map(|w| w.map(|w| w.into_iter().map(str::to_owned).collect::<Vec<_>>()));
            assert_eq!(got, want, "{name}");
            assert_eq!(c.is_lean(), got.is_some(), "{name}");
            assert_same(&p).unwrap();
        }
    }

    /// A fold that falls behind (as when its thread is descheduled on a
    /// loaded machine) holds the pool's readers back: the lines read and not
    /// yet folded stay within the batches the scan lets wait
    /// ([`super::MAX_UNREAD`], [`super::MAX_UNFOLDED`]) and the few being
    /// read, where before the readers read the whole file ahead of it.
    #[test]
    fn lines_read_ahead_of_a_slow_fold_stay_bounded() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let batches = 60;
        let items: Vec<String> = (0..batches * super::READ_BATCH)
            .map(|i| format!("    \"{i}\","))
            .collect();
        let mut items: Vec<&str> = items.iter().map(String::as_str).collect();
        let last = items.len() - 1;
        items[last] = items[last].trim_end_matches(',');
        let text = indented(&items, ",\n  \"controlOut\": [\n    \"x\"\n  ]");
        let p = write(dir.path(), "c.cassette.json", &text);
        let read_count = AtomicUsize::new(0);
        // Reading takes a millisecond a batch, folding four.
        let read = |l: super::EventLine<'_>| {
            if read_count
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(super::READ_BATCH)
            {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            l.with_text(str::to_owned)
        };
        // Counted from the second half on: before the fold has started (a
        // thread of the pool picks it up) the scan cannot know it will be
        // behind, and what it read then is folded by the second half.
        let fold = &mut |_: Option<&[&str]>, lines: &mut dyn Iterator<Item = String>| {
            let mut ahead = 0;
            for (folded, _) in lines.enumerate() {
                if folded.is_multiple_of(super::READ_BATCH) {
                    std::thread::sleep(std::time::Duration::from_millis(4));
                }
                if folded >= batches / 2 * super::READ_BATCH {
                    ahead = ahead.max(read_count.load(Ordering::Relaxed) - folded);
                }
            }
            ahead
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (_, folded) = pool
            .install(|| Cassette::load_lean_reading::<_, _, ()>(&p, &read, fold, None))
            .unwrap();
        let ahead = folded.expect("lean").lines;
        let bound = (super::MAX_UNREAD + super::MAX_UNFOLDED + 4) * super::READ_BATCH;
        assert!(
            ahead <= bound,
            "{ahead} lines read ahead of the fold (bound {bound}, file {})",
            batches * super::READ_BATCH
        );
    }

    /// Invalid UTF-8 anywhere is judged as the full loader judges it (the
    /// lean scan checks the strings it keeps, serde_json the rest).
    #[test]
    fn invalid_utf8_anywhere_is_judged_as_the_full_load_judges_it() {
        let dir = tempfile::tempdir().unwrap();
        let template = r#"{"scenario":{"prompt":"P","session":"s"},"cassetteVersion":11,"events":["E","{}"],"timeline":[{"t":"T"}],"other":"O"}"#;
        let mut failures = Vec::new();
        for (slot, bad) in [
            ("P", &b"\xff"[..]),
            ("E", b"\xc3"),
            ("E", b"a\xe2\x82"),
            ("T", b"\x80"),
            ("O", b"\xf0\x9f"),
        ] {
            let at = template.find(slot).unwrap();
            let mut bytes = template.as_bytes()[..at].to_vec();
            bytes.extend_from_slice(bad);
            bytes.extend_from_slice(&template.as_bytes()[at + 1..]);
            let p = dir.path().join("c.cassette.json");
            std::fs::write(&p, &bytes).unwrap();
            if let Err(e) = assert_same(&p) {
                failures.push(format!("{slot} {bad:?}: {e}"));
            }
            read_while_loading(&p);
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// A file that is not the length its metadata gave (it changed while
    /// mapped) is left to the full reader.
    #[cfg(unix)]
    #[test]
    fn a_file_of_another_length_is_left_to_the_full_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![b'a'; 10_000]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert!(super::FileBuffer::read(&file, 9_999).unwrap().is_none());
        assert!(super::FileBuffer::read(&file, 10_000).unwrap().is_some());
        assert!(super::FileBuffer::read(&file, 0).unwrap().is_none());
    }

    /// A cassette laid out as `JSON.stringify(…, null, 2)` lays it out, with
    /// `item_lines` (each a whole line, indentation and comma included) as
    /// the `events` array's lines and `after` after its `]`.
    fn indented(item_lines: &[&str], after: &str) -> String {
        let mut lines = vec![
            "{".to_owned(),
            r#"  "scenario": {"#.to_owned(),
            r#"    "prompt": "p","#.to_owned(),
            r#"    "session": "s""#.to_owned(),
            "  },".to_owned(),
            r#"  "cassetteVersion": 11,"#.to_owned(),
            r#"  "events": ["#.to_owned(),
        ];
        lines.extend(item_lines.iter().map(|l| (*l).to_owned()));
        lines.push(format!("  ]{after}"));
        lines.push("}".to_owned());
        lines.join("\n")
    }

    /// The `events` items found by line (not parsed) are judged exactly as
    /// the full loader judges them, whatever a hand-edited file holds.
    #[test]
    fn events_found_by_line_are_judged_as_the_full_load_judges_them() {
        let dir = tempfile::tempdir().unwrap();
        let control_out = ",\n  \"controlOut\": [\n    \"{\\\"a\\\":1}\"\n  ]";
        let cases: Vec<(&str, String)> = vec![
            (
                "plain",
                indented(&[r#"    "{\"a\":1}","#, r#"    "x""#], ""),
            ),
            ("empty", indented(&[], "")),
            ("one", indented(&[r#"    "x""#], "")),
            ("empty string", indented(&[r#"    "","#, r#"    """#], "")),
            ("then controlOut", indented(&[r#"    "x""#], control_out)),
            ("comma before ]", indented(&[r#"    "a","#], "")),
            ("missing comma", indented(&[r#"    "a""#, r#"    "b""#], "")),
            ("two on a line", indented(&[r#"    "a", "b""#], "")),
            ("two, no space", indented(&[r#"    "a","b""#], "")),
            ("unescaped quote", indented(&[r#"    "a"b""#], "")),
            ("escaped end quote", indented(&[r#"    "a\""#], "")),
            ("escaped backslash end", indented(&[r#"    "a\\""#], "")),
            ("raw control", indented(&["    \"a\u{1}b\""], "")),
            ("raw tab", indented(&["    \"a\tb\""], "")),
            ("signed hex", indented(&[r#"    "\u+123""#], "")),
            ("short hex", indented(&[r#"    "\u12""#], "")),
            ("bad escape", indented(&[r#"    "\x41""#], "")),
            ("escape at end", indented(&[r#"    "\"#], "")),
            ("lone surrogate", indented(&[r#"    "\ud800""#], "")),
            ("paired surrogate", indented(&[r#"    "\ud83d\ude00""#], "")),
            ("non-string item", indented(&["    1,", r#"    "a""#], "")),
            ("null item", indented(&["    null"], "")),
            ("tab indent", indented(&["\t\"a\""], "")),
            (
                "space before comma",
                indented(&[r#"    "a" ,"#, r#"    "b""#], ""),
            ),
            (
                "space after comma",
                indented(&[r#"    "a", "#, r#"    "b""#], ""),
            ),
            (
                "blank line",
                indented(&[r#"    "a","#, "", r#"    "b""#], ""),
            ),
            ("lone quote", indented(&[r#"    ","#, r#"    "b""#], "")),
            ("non-ascii", indented(&[r#"    "é€😀 \u00e9""#], "")),
            (
                "crlf",
                indented(&[r#"    "a","#, r#"    "b""#], "").replace('\n', "\r\n"),
            ),
            (
                "no end",
                indented(&[r#"    "a","#], "").replace("\n  ]\n}", ""),
            ),
            ("garbage after ]", indented(&[r#"    "a""#], " x")),
            (
                "nested events key",
                indented(&[r#"    "a""#], "").replace(
                    r#""session": "s""#,
                    "\"session\": \"s\",\n  \"events\": [\n    \"x\"\n  ]",
                ),
            ),
            (
                "repeated events",
                indented(&[r#"    "a""#], ",\n  \"events\": [\n    \"b\"\n  ]"),
            ),
        ];
        let mut failures = Vec::new();
        for (name, text) in &cases {
            let p = write(dir.path(), "c.cassette.json", text);
            if let Err(e) = assert_same(&p) {
                failures.push(format!("{name}: {e}"));
            }
            // Read while loading: the same lines as the full loader, or the
            // full loader's verdict.
            read_while_loading(&p);
        }
        assert!(failures.is_empty(), "{failures:#?}");
        // The layout is taken (not sent to the full loader) when it is right.
        for name in ["plain", "empty", "then controlOut", "crlf", "non-ascii"] {
            let text = &cases.iter().find(|(n, _)| *n == name).unwrap().1;
            let p = write(dir.path(), "c.cassette.json", text);
            assert!(Cassette::load_lean(&p).unwrap().is_lean(), "{name}");
            assert!(read_while_loading(&p).is_some(), "{name}");
        }
    }

    /// Every one-byte change of an indented cassette is judged as the full
    /// loader judges it, by both lean paths.
    #[test]
    fn every_one_byte_change_of_an_indented_cassette_is_judged_as_the_full_load_judges_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = indented(
            &[
                // A line the replay's reader reads from its stored token.
                r#"    "{\"type\":\"system\",\"subtype\":\"s\",\"t\":\"a\\nb\"}","#,
                r#"    "é\u00e9\/x","#,
                r#"    """#,
            ],
            ",\n  \"controlOut\": [],\n  \"timeline\": [\n    {\n      \"t\": 1,\n      \"type\": \"a\\nb\",\n      \"ts\": -1.5,\n      \"seq\": [0]\n    },\n    7\n  ]",
        );
        let first = mapped(
            dir.path(),
            br#""{\"type\":\"system\",\"subtype\":\"s\",\"t\":\"a\\nb\"}""#,
            0,
        );
        let token = super::StoredToken {
            bytes: first.bytes(),
            buf: &first,
        };
        assert!(
            super::super::ReadLines::read_stored(&StoredFirst, token).is_some(),
            "the first line is read from its stored token"
        );
        let mut failures = Vec::new();
        for at in 0..text.len() {
            for b in [b'"', b'\\', b',', b'\n', b' ', b']', b'[', b'u', 0x01, 0xff] {
                let mut bytes = text.as_bytes().to_vec();
                if bytes[at] == b {
                    continue;
                }
                bytes[at] = b;
                let p = dir.path().join("c.cassette.json");
                std::fs::write(&p, &bytes).unwrap();
                if let Err(e) = assert_same(&p) {
                    failures.push(format!("byte {at} → {b:#04x}: {e}"));
                }
                read_while_loading(&p);
            }
        }
        assert!(
            failures.is_empty(),
            "{} failures: {:#?}",
            failures.len(),
            &failures[..failures.len().min(20)]
        );
    }

    /// A scan that steps over a timeline its own reader has read whole
    /// finds what the scan that reads it with serde_json finds, for every
    /// one-byte change of a cassette's timeline and the text around it.
    #[test]
    fn a_scan_stepping_over_a_read_timeline_finds_what_reading_it_finds() {
        let text = indented(
            &[r#"    "{\"type\":\"system\"}""#],
            ",\n  \"controlOut\": [],\n  \"timeline\": [\n    {\n      \"t\": 1,\n      \"type\": \"a\\nb\",\n      \"ts\": -1.5,\n      \"seq\": [0, {\"k\": null}]\n    },\n    7, \"é\"\n  ]",
        );
        let from = text.find("\"timeline\"").unwrap();
        // Where the timeline's reader says the array at `at` ends.
        let read_whole = |bytes: &[u8], at: usize| {
            let text = std::str::from_utf8(&bytes[at..]).ok()?;
            let mut entries = super::super::TimelineReader::new(text, super::SHALLOW_ENOUGH)?;
            entries.by_ref().for_each(drop);
            entries.end().map(|len| at + len)
        };
        type Found<'a> = (
            serde_json::Map<String, serde_json::Value>,
            Vec<&'a [u8]>,
            Option<&'a str>,
        );
        fn found<'a>(bytes: &'a [u8], read: &dyn Fn(usize) -> Option<usize>) -> Option<Found<'a>> {
            super::scan(bytes, None, read).map(|s| (s.doc, s.events, s.timeline))
        }
        let mut stepped = 0;
        for at in from..text.len() {
            for b in [
                b'"', b'\\', b',', b'\n', b' ', b']', b'[', b'{', b'}', b'u', b'1', 0x01, 0xff,
            ] {
                let mut bytes = text.as_bytes().to_vec();
                bytes[at] = b;
                let read = |at| read_whole(&bytes, at);
                stepped += usize::from(found(&bytes, &read).is_some());
                assert_eq!(
                    found(&bytes, &read),
                    found(&bytes, &|_| None),
                    "byte {at} → {b:#04x}"
                );
            }
        }
        assert!(stepped > 100, "{stepped} scans stepped over the timeline");
    }

    #[test]
    fn rfind_finds_the_last_occurrence_across_pieces() {
        let piece = 1 << 16;
        for len in [0, 1, 5, piece - 3, piece, piece + 7, 3 * piece + 11] {
            let mut hay = vec![b'x'; len];
            let needle = b"ab\nc";
            assert_eq!(super::rfind(&hay, needle), None);
            for at in [0, piece.saturating_sub(2), piece, len.saturating_sub(4)] {
                if at + needle.len() > len {
                    continue;
                }
                hay[at..at + needle.len()].copy_from_slice(needle);
                let want = memchr::memmem::rfind(&hay, needle);
                assert_eq!(super::rfind(&hay, needle), want, "{len} {at}");
            }
        }
        assert_eq!(super::rfind(b"aaaa", b"aa"), Some(2));
        assert_eq!(super::rfind(b"ababa", b"aba"), Some(2));
        assert_eq!(
            super::rfind(b"abc", b""),
            memchr::memmem::rfind(b"abc", b"")
        );
    }

    /// A timeline read where it was guessed to be is held to the nesting
    /// limit the scan's reading is held to: deeper, the file goes to the
    /// full loader either way; within it, the entries read are the full
    /// loader's.
    #[test]
    fn a_deep_timeline_where_it_was_guessed_is_judged_as_the_scans() {
        let dir = tempfile::tempdir().unwrap();
        for depth in [60, 61, 62, 63, 64, 65] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            for (layout, after) in [
                (
                    "guessed",
                    format!(
                        ",\n  \"controlOut\": [],\n  \"timeline\": [\n    {{\"seq\": {deep}}}\n  ]"
                    ),
                ),
                (
                    "scanned",
                    format!(",\n  \"controlOut\": [],\n  \"timeline\": [{{\"seq\": {deep}}}]"),
                ),
            ] {
                let text = indented(&[r#"    "a""#], &after);
                let p = write(dir.path(), "c.cassette.json", &text);
                assert_same(&p).unwrap_or_else(|e| panic!("{layout} {depth}: {e}"));
                let lean = Cassette::load_lean(&p).unwrap().is_lean();
                assert_eq!(
                    read_while_loading(&p).is_some(),
                    lean,
                    "{layout} {depth}: both lean paths judge the file alike"
                );
                // Taken, its timeline was folded while it loaded.
                let (_, folded) = Cassette::load_lean_reading(
                    &p,
                    &|_: super::EventLine<'_>| (),
                    &mut |_, lines| lines.count(),
                    Some(
                        &|entries: &mut dyn Iterator<Item = super::super::TimelineEntry>| {
                            entries.count()
                        },
                    ),
                )
                .unwrap();
                assert_eq!(
                    folded.map(|f| f.timeline),
                    lean.then_some(Some(1)),
                    "{layout} {depth}"
                );
                // The timeline's own `[` and the entry's `{` count.
                assert_eq!(lean, depth + 2 <= super::SHALLOW_ENOUGH, "{layout} {depth}");
            }
        }
    }

    /// serde_json's nesting limit counts the top-level object: a member
    /// read on its own is held to the whole document's limit.
    #[test]
    fn a_member_at_the_nesting_limit_is_judged_as_the_full_load_judges_it() {
        let dir = tempfile::tempdir().unwrap();
        for depth in [125, 126, 127, 128] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let text = indented(&[r#"    "a""#], &format!(",\n  \"deep\": {deep}"));
            let p = write(dir.path(), "c.cassette.json", &text);
            assert_same(&p).unwrap_or_else(|e| panic!("depth {depth}: {e}"));
        }
    }
}
