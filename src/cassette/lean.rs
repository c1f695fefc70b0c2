//! The lean load: the same pipeline as [`super::load`], except that the two
//! bulky arrays a replay reads once, `events` and `timeline`, are not turned
//! into JSON values. `events` items stay JSON string tokens (quotes and
//! escapes included) in the file buffer, and the re-drive unescapes and
//! parses each line on its worker thread ([`EventLine::text`]); `timeline`
//! stays its array text, parsed on first use. Loading a 50 MB cassette is
//! then one scan of its bytes, and its lines never exist twice: the buffer
//! pages of lines already read are handed back to the system as the
//! re-drive goes ([`LeanEvents::release`]), so the run record grows into
//! memory the recording gives back.
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
use std::sync::OnceLock;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The fields kept as text.
const EVENTS: &str = "events";
const TIMELINE: &str = "timeline";

/// A file's bytes, UTF-8-checked, in memory reel maps itself (so it can
/// give pages back before the whole buffer is dropped).
#[derive(Debug)]
pub(crate) struct FileBuffer {
    len: usize,
    #[cfg(unix)]
    map: memmap2::MmapMut,
    #[cfg(not(unix))]
    map: Vec<u8>,
}

impl FileBuffer {
    /// Reads `len` bytes of `file`; `None` when it does not hold exactly
    /// that many (it changed while read: the full reader decides), or when
    /// they are not UTF-8.
    #[cfg(unix)]
    pub(crate) fn read(file: &std::fs::File, len: usize) -> std::io::Result<Option<FileBuffer>> {
        let mut map = memmap2::MmapOptions::new().len(len.max(1)).map_anon()?;
        // Huge pages where the kernel has them: populating 50 MB is then a
        // few dozen faults, not twelve thousand (a failure changes nothing).
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        // Two halves at once, each populated up front (one bulk fault per
        // half instead of one per 4 KiB page as `read` fills it), read and
        // checked as UTF-8 on its own core: zeroing, copying and checking
        // 50 MB was a third of a large replay's load.
        let mid = (len / 2).div_ceil(page_size()) * page_size();
        let mid = mid.min(len);
        let (lo, hi) = map[..len].split_at_mut(mid);
        let (lo, hi) = rayon::join(|| fill(file, lo, 0), || fill(file, hi, mid as u64));
        let (Some(lo), Some(hi)) = (lo?, hi?) else {
            return Ok(None);
        };
        // Nothing precedes the first half or follows the second; a character
        // the split cut in two is checked whole.
        let cut = &map[mid - lo.tail..mid + hi.head];
        if lo.head != 0 || hi.tail != 0 || std::str::from_utf8(cut).is_err() {
            return Ok(None);
        }
        let mut probe = [0u8; 1];
        if std::os::unix::fs::FileExt::read_at(file, &mut probe, len as u64)? != 0 {
            return Ok(None);
        }
        Ok(Some(FileBuffer { len, map }))
    }

    #[cfg(not(unix))]
    pub(crate) fn read(file: &std::fs::File, len: usize) -> std::io::Result<Option<FileBuffer>> {
        use std::io::Read;
        let mut map = Vec::with_capacity(len);
        file.take(len as u64 + 1).read_to_end(&mut map)?;
        if map.len() != len || std::str::from_utf8(&map).is_err() {
            return Ok(None);
        }
        Ok(Some(FileBuffer { len, map }))
    }

    fn bytes(&self) -> &[u8] {
        &self.map[..self.len]
    }

    /// JSON allows no byte-order mark; the full loader words the error.
    pub(crate) fn starts_with_bom(&self) -> bool {
        self.bytes().starts_with("\u{feff}".as_bytes())
    }

    /// The text at `range`. Only ever called on ranges that were checked
    /// UTF-8 (the whole buffer, at read) and not released since.
    fn text(&self, range: Range<usize>) -> &str {
        // SAFETY: the whole buffer was checked to be UTF-8 when read; a
        // range's bytes change only through `release`, which takes
        // `&mut self` (so no `&str` of the buffer is alive) and is only
        // given ranges no later `text` call covers.
        unsafe { std::str::from_utf8_unchecked(&self.map[range]) }
    }

    /// Gives the whole pages inside `range` back to the system.
    fn release(&mut self, range: Range<usize>) {
        #[cfg(unix)]
        {
            let page = page_size();
            let start = range.start.div_ceil(page) * page;
            let end = range.end / page * page;
            if end > start {
                // SAFETY: `&mut self` proves no borrow of the mapping is
                // alive; the pages are private and anonymous, so they read
                // as zeros if touched again, and nothing reads them again
                // (see `text`). A failure only means the pages stay.
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
}

/// What [`fill`] could not check in a part on its own: continuation bytes
/// at its start (`head`, a character begun before it) and an incomplete
/// character at its end (`tail` bytes, finished after it).
#[cfg(unix)]
struct Edges {
    head: usize,
    tail: usize,
}

/// Reads `part` from `file` at `offset` and checks it as UTF-8 but for its
/// [`Edges`]; `None` when the file was shorter or the bytes are not UTF-8.
#[cfg(unix)]
fn fill(file: &std::fs::File, part: &mut [u8], offset: u64) -> std::io::Result<Option<Edges>> {
    use std::os::unix::fs::FileExt;
    if part.is_empty() {
        return Ok(Some(Edges { head: 0, tail: 0 }));
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `part` is a live, writable range of an anonymous private
    // mapping; populating it changes no byte (a failure, e.g. on a kernel
    // before 5.14, leaves the pages to be faulted in as they are written).
    let _ = unsafe {
        libc::madvise(
            part.as_mut_ptr().cast(),
            part.len(),
            libc::MADV_POPULATE_WRITE,
        )
    };
    match file.read_exact_at(part, offset) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let head = part
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count();
    Ok(match std::str::from_utf8(&part[head..]) {
        Ok(_) => Some(Edges { head, tail: 0 }),
        // An incomplete character at the very end: the next part decides.
        Err(e) if e.error_len().is_none() => Some(Edges {
            head,
            tail: part.len() - head - e.valid_up_to(),
        }),
        Err(_) => None,
    })
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

/// A lean cassette's `events`: the file buffer and each line's token in it.
#[derive(Debug)]
pub struct LeanEvents {
    buf: FileBuffer,
    spans: Vec<Range<usize>>,
}

impl LeanEvents {
    /// How many lines.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Lines `range` (indices), in order.
    pub fn lines(&self, range: Range<usize>) -> impl ExactSizeIterator<Item = EventLine<'_>> {
        self.spans[range]
            .iter()
            .map(|r| EventLine::Token(self.buf.text(r.clone())))
    }

    /// Hands back the memory of lines `range` (indices), which are never
    /// read again: a later [`LeanEvents::lines`] of them is refused.
    pub fn release(&mut self, range: Range<usize>) {
        let Some(first) = self.spans.get(range.start) else {
            return;
        };
        let start = first.start;
        let end = self.spans[range.end - 1].end;
        self.buf.release(start..end);
        for span in &mut self.spans[range] {
            // An empty token: never read (see `lines`' callers), and
            // harmless if it were: `EventLine::text` of it is "".
            *span = span.start..span.start;
        }
    }
}

/// The kept text of a lean cassette.
#[derive(Debug)]
pub(crate) struct RawParts {
    /// `None` once taken by the re-drive.
    pub(crate) events: Option<LeanEvents>,
    /// The `timeline` array's text, when it is an array.
    timeline: Option<String>,
    /// `timeline` parsed on first use (most replays never read it).
    timeline_values: OnceLock<Option<Vec<Value>>>,
    /// `timeline` read for its folds on first use: only the keys they read.
    timeline_entries: OnceLock<Option<Vec<super::TimelineEntry>>>,
}

impl Clone for RawParts {
    /// Copies the buffer (a lean cassette is not cloned on any hot path).
    fn clone(&self) -> RawParts {
        RawParts {
            events: self.events.as_ref().and_then(|e| {
                Some(LeanEvents {
                    buf: FileBuffer {
                        len: e.buf.len,
                        map: memmap_copy(e.buf.bytes())?,
                    },
                    spans: e.spans.clone(),
                })
            }),
            timeline: self.timeline.clone(),
            timeline_values: self.timeline_values.clone(),
            timeline_entries: self.timeline_entries.clone(),
        }
    }
}

#[cfg(unix)]
fn memmap_copy(bytes: &[u8]) -> Option<memmap2::MmapMut> {
    let mut map = memmap2::MmapOptions::new()
        .len(bytes.len().max(1))
        .map_anon()
        .ok()?;
    map[..bytes.len()].copy_from_slice(bytes);
    Some(map)
}

#[cfg(not(unix))]
fn memmap_copy(bytes: &[u8]) -> Option<Vec<u8>> {
    Some(bytes.to_vec())
}

impl RawParts {
    /// The `events` lines not yet taken, in order.
    pub(crate) fn events(&self) -> Box<dyn ExactSizeIterator<Item = EventLine<'_>> + '_> {
        match &self.events {
            Some(e) => Box::new(e.lines(0..e.len())),
            None => Box::new(std::iter::empty()),
        }
    }

    pub(crate) fn has_timeline(&self) -> bool {
        self.timeline.is_some()
    }

    /// The `timeline` entries, parsed once.
    pub(crate) fn timeline(&self) -> Option<&Vec<Value>> {
        let text = self.timeline.as_deref()?;
        self.timeline_values
            .get_or_init(|| match serde_json::from_str(text) {
                Ok(Value::Array(items)) => Some(items),
                _ => None,
            })
            .as_ref()
    }

    /// The `timeline` entries as the folds read them, parsed once, straight
    /// from the text (never as a `Value` tree). A text with a surrogate
    /// escape goes through the `Value` parse, which alone decides whether
    /// the timeline reads at all.
    pub(crate) fn timeline_entries(&self) -> Option<&[super::TimelineEntry]> {
        let text = self.timeline.as_deref()?;
        self.timeline_entries
            .get_or_init(|| {
                if may_hold_lone_surrogate(text) {
                    let values = self.timeline()?;
                    return Some(values.iter().filter_map(super::TimelineEntry::of).collect());
                }
                super::TimelineEntry::parse_all(text)
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
    /// loader has checked that it unescapes.
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

    /// The line as stored: for a cheap pre-filter on an ASCII word that holds
    /// no `"` or `\` (escaping never splits such a word).
    pub fn stored(self) -> &'a str {
        match self {
            EventLine::Text(t) | EventLine::Token(t) => t,
        }
    }
}

fn unescape(token: &str) -> Cow<'_, str> {
    let Some(inner) = token.get(1..token.len().saturating_sub(1)) else {
        return Cow::Borrowed("");
    };
    if !inner.contains('\\') {
        return Cow::Borrowed(inner);
    }
    Cow::Owned(unescape_checked(inner).unwrap_or_default())
}

/// The text of a JSON string's inside whose syntax the loader has checked
/// and that holds no surrogate escape (the loader sends those to the full
/// pipeline). Written here rather than taken from serde_json because its
/// string reader grows its buffer from empty for every line, and those
/// reallocations were a sixth of a large replay; the output here is sized
/// once. `None` (never, for a checked token) on anything unexpected.
fn unescape_checked(inner: &str) -> Option<String> {
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'\\', &bytes[at..]) {
        let esc = at + i;
        out.push_str(&inner[at..esc]);
        let c = match *bytes.get(esc + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = inner.get(esc + 2..esc + 6)?;
                at = esc + 6;
                out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                continue;
            }
            _ => return None,
        };
        out.push(c);
        at = esc + 2;
    }
    out.push_str(&inner[at..]);
    Some(out)
}

/// Splits the buffer into the document without its kept fields and the
/// kept text; `Err(buf)` when the full pipeline must decide (it then also
/// produces the error, if there is one).
pub(super) fn split(buf: FileBuffer) -> Result<(Map<String, Value>, RawParts), FileBuffer> {
    let whole = 0..buf.bytes().len();
    let (doc, spans, timeline) = {
        let text = buf.text(whole);
        let Some(found) = scan(text) else {
            return Err(buf);
        };
        let base = text.as_ptr() as usize;
        let span = |raw: &RawValue| {
            let s = raw.get();
            let start = s.as_ptr() as usize - base;
            start..start + s.len()
        };
        let spans: Vec<Range<usize>> = found.events.iter().map(|r| span(r)).collect();
        let timeline = found.timeline.map(|raw| raw.get().to_owned());
        (found.doc, spans, timeline)
    };
    Ok((
        doc,
        RawParts {
            events: Some(LeanEvents { buf, spans }),
            timeline,
            timeline_values: OnceLock::new(),
            timeline_entries: OnceLock::new(),
        },
    ))
}

/// What one pass over the document found.
struct Scanned<'a> {
    doc: Map<String, Value>,
    events: Vec<&'a RawValue>,
    timeline: Option<&'a RawValue>,
}

fn scan(text: &str) -> Option<Scanned<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let found = LeanDoc::deserialize(&mut de).ok()?.0?;
    de.end().ok()?;
    let tokens_ok = found
        .events
        .iter()
        .all(|raw| raw.get().starts_with('"') && !may_hold_lone_surrogate(raw.get()));
    // Skipping a value checks its syntax but not serde_json's nesting
    // limit, which the full loader enforces.
    let shallow = found
        .timeline
        .is_none_or(|raw| !nests_deeper_than(raw.get(), SHALLOW_ENOUGH));
    (tokens_ok && shallow).then_some(found)
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
    memchr::memmem::find_iter(token.as_bytes(), b"\\u").any(|i| {
        let hex = &token.as_bytes()[i + 2..];
        hex.len() >= 2
            && hex[0].eq_ignore_ascii_case(&b'd')
            && matches!(hex[1], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

/// The top-level object, read with `events` and `timeline` left as text.
/// `None` inside: a shape the full pipeline must judge.
struct LeanDoc<'a>(Option<Scanned<'a>>);

impl<'de> Deserialize<'de> for LeanDoc<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(LeanVisitor)
    }
}

struct LeanVisitor;

impl<'de> Visitor<'de> for LeanVisitor {
    type Value = LeanDoc<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a cassette object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LeanDoc<'de>, A::Error> {
        let mut doc = Map::new();
        let mut events = None;
        let mut timeline = None;
        let mut ordinary = true;
        while let Some(key) = map.next_key::<String>()? {
            // serde_json's reserved keys and repeated kept fields: the full
            // loader's rules apply.
            if key.starts_with("$serde_json::private::")
                || (key == EVENTS && events.is_some())
                || (key == TIMELINE && timeline.is_some())
            {
                ordinary = false;
            }
            if key == EVENTS {
                events = Some(map.next_value::<Vec<&'de RawValue>>()?);
                doc.insert(key, Value::Array(Vec::new()));
            } else if key == TIMELINE {
                let raw = map.next_value::<&'de RawValue>()?;
                if raw.get().starts_with('[') {
                    timeline = Some(raw);
                    doc.insert(key, Value::Array(Vec::new()));
                } else {
                    // Not an array: kept as the value it is (rare, small).
                    let v: Value =
                        serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?;
                    doc.insert(key, v);
                }
            } else {
                let v: Value = map.next_value()?;
                doc.insert(key, v);
            }
        }
        let scanned = match (ordinary, events) {
            (true, Some(events)) => Some(Scanned {
                doc,
                events,
                timeline,
            }),
            // No `events`: the shape check's error, from the full loader.
            _ => None,
        };
        Ok(LeanDoc(scanned))
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
        for token in samples {
            let want: String = serde_json::from_str(token).unwrap();
            assert_eq!(super::unescape(token), want, "{token}");
        }
    }

    #[test]
    fn released_lines_give_their_pages_back_and_read_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let line = format!("\"{}\"", "x".repeat(10_000));
        let events = vec![line; 100].join(",");
        let text = format!(
            r#"{{"scenario":{{"prompt":"p","session":"s"}},"cassetteVersion":11,"events":[{events}]}}"#
        );
        let p = write(dir.path(), "c.cassette.json", &text);
        let mut c = Cassette::load_lean(&p).unwrap();
        let mut ev = c.take_lean_events().expect("lean");
        assert_eq!(c.event_lines().count(), 0, "taken");
        assert_eq!(ev.len(), 100);
        ev.release(0..50);
        assert!(ev.lines(0..50).all(|l| l.text().is_empty()));
        assert!(ev.lines(50..100).all(|l| l.text().len() == 10_000));
    }

    /// The file is read in two halves split at a page boundary: a character
    /// cut by the split, a stray continuation byte on either side of it, a
    /// character cut off at the end, and invalid bytes in either half are
    /// judged exactly as one UTF-8 check of the whole file judges them.
    #[cfg(unix)]
    #[test]
    fn reading_in_halves_judges_utf8_as_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let page = super::page_size();
        let pieces: [&[u8]; 10] = [
            "é".as_bytes(),
            "€".as_bytes(),
            "😀".as_bytes(),
            b"\x80",
            b"\xC3",
            b"\xE2\x82",
            b"\xF0\x9F\x98",
            b"\x80\x80\x80\x80",
            b"\xFF",
            b"",
        ];
        let mut failures = Vec::new();
        for piece in pieces {
            for total in [2 * page - 2, 2 * page, 2 * page + 3, 3 * page + 1] {
                // The split lands on a page boundary near the middle.
                let mid = (total / 2).div_ceil(page) * page;
                for at in mid.saturating_sub(4)..(mid + 4).min(total) {
                    for end in [false, true] {
                        let mut bytes = vec![b'a'; total];
                        let at = if end {
                            total.saturating_sub(piece.len())
                        } else {
                            at
                        };
                        let stop = (at + piece.len()).min(total);
                        bytes[at..stop].copy_from_slice(&piece[..stop - at]);
                        let path = dir.path().join("f");
                        std::fs::write(&path, &bytes).unwrap();
                        let file = std::fs::File::open(&path).unwrap();
                        let read = super::FileBuffer::read(&file, bytes.len()).unwrap();
                        let want = std::str::from_utf8(&bytes).is_ok();
                        if read.is_some() != want {
                            failures.push(format!("{piece:?} at {at} of {total}: want {want}"));
                        }
                        if let Some(b) = read {
                            assert_eq!(b.bytes(), &bytes[..]);
                        }
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// A file that is not the length its metadata gave (it changed while
    /// read) is left to the full reader.
    #[cfg(unix)]
    #[test]
    fn a_file_of_another_length_is_left_to_the_full_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![b'a'; 10_000]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        assert!(super::FileBuffer::read(&file, 9_999).unwrap().is_none());
        assert!(super::FileBuffer::read(&file, 10_001).unwrap().is_none());
        assert!(super::FileBuffer::read(&file, 10_000).unwrap().is_some());
    }
}
