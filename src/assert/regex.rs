//! ECMAScript regexes for untrusted patterns: `new RegExp(p, "i")` semantics,
//! bounded so a hostile pattern can never hang replay.
//!
//! Every pattern is first validated by `regress` (an ECMAScript engine), so
//! syntax errors are the ECMAScript ones. Then:
//! - if the pattern is in the ASCII subset whose meaning is identical in the
//!   linear-time `regex` crate (no lookaround, no backreference, no non-ASCII
//!   literal or `\x`/`\u` escape, no Annex-B identity escape of a letter), it
//!   is *translated* (not passed through): `\d`/`\w`/`\s`/`.` get their
//!   ECMAScript (non-Unicode-mode) sets, `\b` is the ASCII word boundary, and case
//!   insensitivity is spelled out as ASCII case pairs (`[aA]`) — ECMAScript's
//!   non-Unicode `i` never folds a non-ASCII character onto an ASCII one
//!   (`ſ` ≠ `s`, `K` ≠ `k`), which Rust's Unicode `(?i)` would;
//! - otherwise the `regress` backtracker runs on a worker thread with a
//!   deadline ([`BACKTRACK_DEADLINE`]); a match that does not finish in time
//!   is an error ("regex evaluation exceeded …"), never a hang.
//!
//! Strings are UTF-16 in ECMAScript: without the `u` (or `v`) flag a pattern
//! and its input are sequences of code units, so an astral character (an
//! emoji) is two units — `/^.$/` does not match `"😀"`, `/^..$/` does, and
//! `/[😀]/` is a class of two surrogates. Both sides are modelled exactly:
//! - the pattern is parsed as UTF-16 units (an astral literal is two atoms;
//!   a `\uD83D\uDE00` escape pair is two atoms too, which `regress` alone
//!   would fuse into one code point);
//! - a haystack without an astral character (no UTF-8 lead byte
//!   `0xF0..=0xF4`, a fast scan) means the same in code points and units, so
//!   the engines run on it as they are;
//! - a haystack with one runs per unit: the backtracker on its UTF-16 units
//!   (`regress`'s UCS-2 mode), the linear engine on `units_as_chars` — each
//!   unit spelled as one private-use stand-in character. That is exact
//!   because every set a translation emits either contains all surrogate
//!   units and all stand-ins (`.`, `\S`, `\W`, `\D`, negated classes: their
//!   members are ASCII or the ECMAScript space and line-terminator sets) or
//!   none of either (literals and positive classes are ASCII), and
//!   both are non-word characters for `\b`; so hostile patterns stay linear
//!   on emoji-laden text.
//!
//! With `u`/`v` both engines see code points, which is then what ECMAScript
//! does. One thing a Rust string cannot carry: half of a surrogate pair. A
//! match that starts or ends between the two units of an astral character
//! (`/[^a]/g` over `"😀"` finds two one-unit matches) is reported by
//! [`EsRegex::find_ranges`] widened to the whole character, overlapping
//! widened matches merged — JavaScript would leave a lone surrogate behind
//! in `replace`.
//!
//! This is the one ECMAScript regex entry point of reel: assertions and the
//! scenario `when_question` decider call [`compile_es`]; `verify-cassettes`
//! allow patterns and `.cowork-redact.json` patterns (which carry their own
//! flags) call [`compile_es_with_flags`]. Without the `i` flag the
//! translation keeps letters case-sensitive; the `m`, `s` and `u` flags
//! always use the backtracker.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How long a backtracking (`regress`) match may run before it is abandoned.
pub const BACKTRACK_DEADLINE: Duration = Duration::from_secs(2);
/// An abandoned (timed-out) match keeps its worker thread busy until it ends
/// on its own (a thread cannot be killed); while this many are still running,
/// new backtracking matches are refused instead of piling up.
pub const MAX_RUNAWAY_WORKERS: usize = 4;

static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// A compiled ECMAScript regex.
#[derive(Debug, Clone)]
pub struct EsRegex {
    source: String,
    engine: Engine,
}

#[derive(Debug, Clone)]
enum Engine {
    /// Linear time, semantics-preserving translation (never `u`).
    Linear(regex::Regex),
    /// ECMAScript backtracker, run under a deadline.
    Backtracking {
        re: Arc<regress::Regex>,
        input: Input,
    },
}

/// What the backtracker is given.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Input {
    /// Code points (`u`/`v` flag).
    CodePoints,
    /// UTF-16 units; an astral-free haystack is the same as code points.
    UnitsWhenAstral,
    /// UTF-16 units always: the pattern holds surrogate units, which match
    /// nothing a code-point matcher could be asked about.
    Units,
}

/// Compiles `pattern` as `new RegExp(pattern, "i")`. The error is the
/// engine's message (callers prefix `<key>: bad regex "<p>": `).
pub fn compile_es(pattern: &str) -> Result<EsRegex, String> {
    compile_es_with_flags(pattern, "i")
}

/// Compiles `pattern` as `new RegExp(pattern, flags)`. `g` and `y` only
/// change how JavaScript iterates matches, so callers strip them (every
/// occurrence is what [`EsRegex::find_ranges`] returns).
pub fn compile_es_with_flags(pattern: &str, flags: &str) -> Result<EsRegex, String> {
    compile(pattern, flags, true)
}

/// [`compile_es_with_flags`]; `linear: false` keeps the backtracker even
/// for a translatable pattern (tests compare the two engines).
fn compile(pattern: &str, flags: &str, linear: bool) -> Result<EsRegex, String> {
    let code_points = flags.contains('u') || flags.contains('v');
    let (slow, input) = if code_points {
        (
            regress::Regex::with_flags(pattern, flags),
            Input::CodePoints,
        )
    } else {
        let units = pattern_units(pattern);
        let surrogates = units.iter().any(|u| is_surrogate(*u));
        (
            regress::Regex::from_unicode(units.into_iter(), flags),
            if surrogates {
                Input::Units
            } else {
                Input::UnitsWhenAstral
            },
        )
    };
    let slow = match v8_only_rejection(pattern) {
        Some(why) => Err(why.to_string()),
        None => slow.map_err(|e| v8_message(pattern, &e.to_string())),
    }
    .map_err(|e| format!("Invalid regular expression: /{pattern}/{flags}: {e}"))?;
    // The translation models exactly two flag sets: none, and `i`.
    let fold = match flags {
        "" => Some(false),
        "i" => Some(true),
        _ => None,
    };
    let engine = match fold
        .filter(|_| linear)
        .and_then(|fold| translate(pattern, fold))
        .and_then(|t| {
            regex::RegexBuilder::new(&t)
                .size_limit(32 * 1024 * 1024)
                .build()
                .ok()
        }) {
        Some(re) => Engine::Linear(re),
        None => Engine::Backtracking {
            re: Arc::new(slow),
            input,
        },
    };
    Ok(EsRegex {
        source: pattern.to_owned(),
        engine,
    })
}

/// Syntax the original's engine (V8 in Node 22) rejects but `regress`
/// accepts: a group modifier `(?i:…)`/`(?-i:…)` (not shipped in Node 22) and a
/// quantified word-boundary assertion (`\b+`). Scans outside classes only.
fn v8_only_rejection(pattern: &str) -> Option<&'static str> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut in_class = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let next = chars.get(i + 1).copied();
                if !in_class
                    && matches!(next, Some('b' | 'B'))
                    && matches!(chars.get(i + 2), Some('*' | '+' | '?'))
                {
                    return Some("Nothing to repeat");
                }
                i += 2;
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class
                && chars.get(i + 1) == Some(&'?')
                && chars
                    .get(i + 2)
                    .is_some_and(|c| c.is_ascii_alphabetic() || *c == '-') =>
            {
                return Some("Invalid group");
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The V8 wording of a syntax error `regress` reported as `regress_msg`, so a
/// bad-regex failure message reads exactly as the original's does.
fn v8_message(pattern: &str, regress_msg: &str) -> String {
    let v8 = match regress_msg {
        "Unbalanced bracket" => "Unterminated character class",
        "Invalid group modifier" => "Invalid group",
        "Incomplete escape" | "Unterminated escape" => "\\ at end of pattern",
        "Invalid atom character" | "Quantifier not allowed here" | "Invalid braced quantifier" => {
            "Nothing to repeat"
        }
        "Invalid quantifier" => "numbers out of order in {} quantifier",
        "Unbalanced parenthesis" => {
            if unmatched_close_paren(pattern) {
                "Unmatched ')'"
            } else {
                "Unterminated group"
            }
        }
        "Invalid token at named capture group identifier" => {
            if pattern.contains("(?<") {
                "Invalid capture group name"
            } else {
                "Invalid group"
            }
        }
        m if m.starts_with("Range values reversed") => "Range out of order in character class",
        other => other,
    };
    v8.to_string()
}

/// True when a `)` outside a class closes no group (V8: "Unmatched ')'").
fn unmatched_close_paren(pattern: &str) -> bool {
    let mut depth = 0usize;
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => {
                if depth == 0 {
                    return true;
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    false
}

fn is_surrogate(unit: u32) -> bool {
    (0xD800..=0xDFFF).contains(&unit)
}

/// The pattern as ECMAScript reads it without `u`: UTF-16 code units, where
/// an escaped surrogate (`\uD83D`) is passed as the raw unit so that
/// `regress` does not fuse an escaped pair into one code point, and `\u{`
/// is the letter `u` (see below). Group names (`(?<name>`, `\k<name>`) are
/// copied as written: ECMAScript reads them as identifiers in code points
/// even without `u`.
fn pattern_units(pattern: &str) -> Vec<u32> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::with_capacity(chars.len() + 8);
    let push = |out: &mut Vec<u32>, c: char| {
        let mut buf = [0u16; 2];
        out.extend(c.encode_utf16(&mut buf).iter().map(|u| u32::from(*u)));
    };
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let name_start = match (c, chars.get(i + 1), chars.get(i + 2), chars.get(i + 3)) {
            _ if in_class => None,
            ('(', Some('?'), Some('<'), next) if !matches!(next, Some('=' | '!')) => Some(i + 3),
            ('\\', Some('k'), Some('<'), _) => Some(i + 3),
            _ => None,
        };
        if let Some(from) = name_start
            && let Some(len) = chars[from..].iter().position(|c| *c == '>')
        {
            out.extend(chars[i..=from + len].iter().map(|c| u32::from(*c)));
            i = from + len + 1;
            continue;
        }
        if c == '\\' {
            let escaped = chars
                .get(i + 2..i + 6)
                .filter(|hex| hex.iter().all(char::is_ascii_hexdigit))
                .and_then(|hex| u32::from_str_radix(&hex.iter().collect::<String>(), 16).ok());
            match (chars.get(i + 1), escaped) {
                (Some('u'), Some(unit)) if is_surrogate(unit) => {
                    out.push(unit);
                    i += 6;
                }
                // `\u{…}` is a code point escape only with `u`; without it,
                // an identity escape `u` then a quantifier (`/\u{2}/` matches
                // "uu"), which `regress` would read as the code point.
                (Some('u'), _) if chars.get(i + 2) == Some(&'{') => {
                    out.push(u32::from('u'));
                    i += 2;
                }
                (Some(next), _) => {
                    out.push(u32::from('\\'));
                    push(&mut out, *next);
                    i += 2;
                }
                (None, _) => {
                    out.push(u32::from('\\'));
                    i += 1;
                }
            }
            continue;
        }
        match c {
            '[' => in_class = true,
            ']' => in_class = false,
            _ => {}
        }
        push(&mut out, c);
        i += 1;
    }
    out
}

/// True when `text` holds a character outside the Basic Multilingual Plane
/// (two UTF-16 units): in UTF-8 exactly the lead bytes `0xF0..=0xF4`.
pub(crate) fn has_astral(text: &str) -> bool {
    text.bytes().any(|b| b >= 0xF0)
}

/// First of the stand-ins: unit `u` (a surrogate) is spelled U+10_0000 + `u`
/// (plane 16, private use).
const STAND_IN_BASE: u32 = 0x10_0000;

/// `text` as a sequence of UTF-16 code units, each spelled as one `char`:
/// BMP characters as themselves, an astral character as two stand-ins for
/// its surrogate units (U+10D800..=U+10DFFF, private use). Injective — every
/// astral character of `text`, stand-ins included, is replaced — so
/// literal comparisons stay exact, and a matcher that treats stand-ins as it
/// would treat surrogate units (never a literal, never a case pair, never a
/// space, line terminator or word character) matches per code unit.
/// Borrowed when `text` has no astral character.
pub(crate) fn units_as_chars(text: &str) -> Cow<'_, str> {
    if !has_astral(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        let mut buf = [0u16; 2];
        for unit in c.encode_utf16(&mut buf).iter() {
            let unit = u32::from(*unit);
            let spelled = if is_surrogate(unit) {
                STAND_IN_BASE + unit
            } else {
                unit
            };
            // A BMP non-surrogate or a plane-16 code point: always a char.
            out.push(char::from_u32(spelled).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
    }
    Cow::Owned(out)
}

/// Width of a character in UTF-16 units.
fn units_width(c: char) -> usize {
    c.len_utf16()
}

/// Width of a character in the bytes of [`units_as_chars`].
fn stand_in_width(c: char) -> usize {
    if c.len_utf16() == 2 { 8 } else { c.len_utf8() }
}

/// Maps match ranges in another coordinate system of `text` (UTF-16 units,
/// or bytes of [`units_as_chars`]; `width` gives a character's extent in
/// it) to byte ranges of `text`. A boundary inside an astral character is
/// widened to the whole character (an empty match there moves to its start),
/// and ranges that then overlap are merged. `found` is in order and
/// non-overlapping, as a left-to-right search yields it.
fn to_byte_ranges(
    text: &str,
    found: &[Range<usize>],
    width: fn(char) -> usize,
) -> Vec<Range<usize>> {
    let mut chars = text.char_indices().peekable();
    // Coordinate where the character at `chars.peek()` starts.
    let mut at = 0;
    // (byte before, byte after) of coordinate `x`, which must not be before
    // the current character: equal when `x` is a character boundary.
    let mut locate = |x: usize| -> (usize, usize) {
        while let Some(&(byte, c)) = chars.peek() {
            let w = width(c);
            if x == at {
                return (byte, byte);
            }
            if x < at + w {
                return (byte, byte + c.len_utf8());
            }
            at += w;
            chars.next();
        }
        (text.len(), text.len())
    };
    let mut out: Vec<Range<usize>> = Vec::with_capacity(found.len());
    for r in found {
        let (start, _) = locate(r.start);
        let end = if r.is_empty() { start } else { locate(r.end).1 };
        match out.last_mut() {
            Some(last) if start < last.end => last.end = last.end.max(end),
            Some(last) if start == end && *last == (start..end) => {}
            _ => out.push(start..end),
        }
    }
    out
}

impl EsRegex {
    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when the linear-time engine evaluates this pattern.
    pub fn is_linear(&self) -> bool {
        matches!(self.engine, Engine::Linear(_))
    }

    /// Whether a search of `text` must run on its UTF-16 units.
    fn per_unit(input: Input, text: &str) -> bool {
        match input {
            Input::CodePoints => false,
            Input::UnitsWhenAstral => has_astral(text),
            Input::Units => true,
        }
    }

    /// `re.test(text)`; `Err` when a backtracking match exceeded the deadline.
    pub fn is_match(&self, text: &str) -> Result<bool, String> {
        match &self.engine {
            Engine::Linear(re) => Ok(re.is_match(&units_as_chars(text))),
            Engine::Backtracking { re, input } if Self::per_unit(*input, text) => {
                bounded(re, text.encode_utf16().collect(), |re, units: &Vec<u16>| {
                    re.find_from_ucs2(units, 0).next().is_some()
                })
            }
            Engine::Backtracking { re, .. } => {
                bounded(re, Arc::<str>::from(text), |re, t: &Arc<str>| {
                    re.find(t).is_some()
                })
            }
        }
    }

    /// The byte ranges of every match, left to right (`text.matchAll`);
    /// `Err` when a backtracking search exceeded the deadline. A match edge
    /// inside an astral character is widened to the whole character (see
    /// the module doc).
    pub fn find_ranges(&self, text: &str) -> Result<Vec<Range<usize>>, String> {
        match &self.engine {
            Engine::Linear(re) => match units_as_chars(text) {
                Cow::Borrowed(_) => Ok(match_all(re, text)),
                Cow::Owned(spelled) => Ok(to_byte_ranges(
                    text,
                    &match_all(re, &spelled),
                    stand_in_width,
                )),
            },
            Engine::Backtracking { re, input } if Self::per_unit(*input, text) => {
                let found = bounded(re, text.encode_utf16().collect(), |re, units: &Vec<u16>| {
                    re.find_from_ucs2(units, 0)
                        .map(|m| m.range())
                        .collect::<Vec<_>>()
                })?;
                Ok(to_byte_ranges(text, &found, units_width))
            }
            Engine::Backtracking { re, .. } => {
                bounded(re, Arc::<str>::from(text), |re, t: &Arc<str>| {
                    re.find_iter(t).map(|m| m.range()).collect()
                })
            }
        }
    }

    /// `is_match`, with a timeout read as "no match" — for callers that have
    /// already reported the timeout or cannot report it.
    pub fn test(&self, text: &str) -> bool {
        self.is_match(text).unwrap_or(false)
    }
}

/// Every match of `re` in `text` the way `String.prototype.matchAll`
/// iterates: search from where the last match ended, one character (here:
/// one unit) further after an empty match. `regex`'s own `find_iter` differs
/// in one case: it skips an empty match right where a non-empty one ended
/// (`/x*/g` over `"x"` is `x` and then the empty match at 1).
fn match_all(re: &regex::Regex, text: &str) -> Vec<Range<usize>> {
    let mut found = vec![];
    let mut at = 0;
    while at <= text.len() {
        let Some(m) = re.find_at(text, at) else { break };
        found.push(m.range());
        at = if m.is_empty() {
            text[m.end()..]
                .chars()
                .next()
                .map_or(text.len() + 1, |c| m.end() + c.len_utf8())
        } else {
            m.end()
        };
    }
    found
}

/// Runs `search` with the backtracker on a worker thread, under
/// [`BACKTRACK_DEADLINE`].
fn bounded<I: Send + 'static, T: Send + 'static>(
    re: &Arc<regress::Regex>,
    input: I,
    search: fn(&regress::Regex, &I) -> T,
) -> Result<T, String> {
    if ABANDONED.load(Ordering::SeqCst) >= MAX_RUNAWAY_WORKERS {
        return Err(format!(
            "regex evaluation refused: {MAX_RUNAWAY_WORKERS} abandoned backtracking matches are still running (catastrophic patterns?)"
        ));
    }
    // 0 = running, 1 = finished, 2 = abandoned by the caller.
    let state = Arc::new(AtomicU8::new(0));
    let (tx, rx) = mpsc::channel();
    let re = Arc::clone(re);
    let worker_state = Arc::clone(&state);
    let spawned = std::thread::Builder::new()
        .name("reel-regex".into())
        .spawn(move || {
            let found = search(&re, &input);
            if worker_state.swap(1, Ordering::SeqCst) == 2 {
                ABANDONED.fetch_sub(1, Ordering::SeqCst);
            }
            // The receiver may be gone after a timeout; nothing to do then.
            let _ = tx.send(found);
        });
    if spawned.is_err() {
        return Err("regex evaluation could not start a worker thread".into());
    }
    match rx.recv_timeout(BACKTRACK_DEADLINE) {
        Ok(found) => Ok(found),
        Err(_) => {
            if state
                .compare_exchange(0, 2, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                ABANDONED.fetch_add(1, Ordering::SeqCst);
                Err(format!(
                    "regex evaluation exceeded {}s (catastrophic backtracking?) — simplify the pattern",
                    BACKTRACK_DEADLINE.as_secs()
                ))
            } else {
                // Finished just at the deadline: its answer is on the way.
                rx.recv()
                    .map_err(|_| "regex worker ended without an answer".to_owned())
            }
        }
    }
}

const SPACE_SET: &str = r"\t\n\x0B\x0C\r\x20\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const WORD_SET: &str = "0-9A-Za-z_";
const DIGIT_SET: &str = "0-9";

fn hex(c: char) -> String {
    format!("\\x{{{:X}}}", c as u32)
}

/// One literal character; with `fold`, ECMAScript non-Unicode case folding
/// (ASCII).
fn literal(c: char, fold: bool) -> String {
    if fold && c.is_ascii_alphabetic() {
        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
    } else if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        hex(c)
    }
}

/// Class members for a range lo..=hi (ASCII); with `fold`, closed under
/// ASCII case.
fn class_range(lo: char, hi: char, fold: bool) -> String {
    let mut out = format!("{}-{}", hex(lo), hex(hi));
    if !fold {
        return out;
    }
    let (l, h) = (lo as u8, hi as u8);
    let overlap = |a: u8, b: u8| -> Option<(u8, u8)> {
        let s = l.max(a);
        let e = h.min(b);
        (s <= e).then_some((s, e))
    };
    if let Some((s, e)) = overlap(b'a', b'z') {
        out.push_str(&format!(
            "{}-{}",
            hex((s - 32) as char),
            hex((e - 32) as char)
        ));
    }
    if let Some((s, e)) = overlap(b'A', b'Z') {
        out.push_str(&format!(
            "{}-{}",
            hex((s + 32) as char),
            hex((e + 32) as char)
        ));
    }
    out
}

/// A decoded escape: a single character, or a class set (already Rust syntax).
enum Esc {
    Char(char),
    Set(&'static str),
}

/// Decodes the escape after a `\` at `chars[i]`; returns it and the next index.
/// `in_class` switches `\b` to backspace. `None` = outside the safe subset.
fn escape(chars: &[char], i: usize, in_class: bool) -> Option<(Esc, usize)> {
    let c = *chars.get(i)?;
    let hexval = |from: usize, n: usize| -> Option<u32> {
        let s: String = chars.get(from..from + n)?.iter().collect();
        if s.chars().all(|h| h.is_ascii_hexdigit()) {
            u32::from_str_radix(&s, 16).ok()
        } else {
            None
        }
    };
    let ok = |e: Esc| Some((e, i + 1));
    match c {
        'd' => ok(Esc::Set(DIGIT_SET)),
        'w' => ok(Esc::Set(WORD_SET)),
        's' => ok(Esc::Set(SPACE_SET)),
        't' => ok(Esc::Char('\t')),
        'n' => ok(Esc::Char('\n')),
        'r' => ok(Esc::Char('\r')),
        'v' => ok(Esc::Char('\x0B')),
        'f' => ok(Esc::Char('\x0C')),
        'b' if in_class => ok(Esc::Char('\x08')),
        '0' if !chars.get(i + 1).is_some_and(char::is_ascii_digit) => ok(Esc::Char('\0')),
        'x' => {
            let v = hexval(i + 1, 2)?;
            // Latin-1 letters have case pairs under `i` (`/\xff/i` matches
            // `Ÿ`): keep the translation ASCII, fall back.
            if v > 0x7F {
                return None;
            }
            Some((Esc::Char(char::from_u32(v)?), i + 3))
        }
        'u' => {
            let v = hexval(i + 1, 4)?;
            // Surrogates and non-ASCII need UTF-16 / Unicode case rules: fall back.
            if v > 0x7F {
                return None;
            }
            Some((Esc::Char(char::from_u32(v)?), i + 5))
        }
        'c' => {
            let l = *chars.get(i + 1)?;
            if !l.is_ascii_alphabetic() {
                return None;
            }
            Some((Esc::Char(((l as u8) % 32) as char), i + 2))
        }
        c if c.is_ascii() && !c.is_ascii_alphanumeric() && c != '_' => ok(Esc::Char(c)),
        _ => None,
    }
}

/// Translates an ECMAScript pattern to equivalent `regex`-crate syntax, or
/// `None` when it is outside the subset whose semantics are identical.
/// `fold` is the `i` flag.
pub(crate) fn translate(pattern: &str, fold: bool) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    if chars.iter().any(|c| !c.is_ascii()) {
        return None;
    }
    let mut out = String::with_capacity(pattern.len() * 4);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let n = *chars.get(i + 1)?;
                match n {
                    'D' => out.push_str("[^0-9]"),
                    'W' => out.push_str(&format!("[^{WORD_SET}]")),
                    'S' => out.push_str(&format!("[^{SPACE_SET}]")),
                    'b' => out.push_str(r"(?-u:\b)"),
                    'B' => out.push_str(r"(?-u:\B)"),
                    _ => {
                        let (e, next) = escape(&chars, i + 1, false)?;
                        match e {
                            Esc::Char(ch) => out.push_str(&literal(ch, fold)),
                            Esc::Set(s) => out.push_str(&format!("[{s}]")),
                        }
                        i = next;
                        continue;
                    }
                }
                i += 2;
            }
            '.' => {
                out.push_str(r"[^\n\r\x{2028}\x{2029}]");
                i += 1;
            }
            '^' | '$' | '|' | ')' | '*' | '+' | '?' => {
                out.push(c);
                i += 1;
            }
            '(' => {
                if chars.get(i + 1) == Some(&'?') {
                    match chars.get(i + 2) {
                        Some(':') => {
                            out.push_str("(?:");
                            i += 3;
                        }
                        Some('<')
                            if chars.get(i + 3).is_some_and(|c| {
                                c.is_ascii_alphabetic() || *c == '_' || *c == '$'
                            }) =>
                        {
                            let close = chars[i + 3..].iter().position(|c| *c == '>')? + i + 3;
                            let name: String = chars[i + 3..close].iter().collect();
                            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                                return None;
                            }
                            out.push_str(&format!("(?P<{name}>"));
                            i = close + 1;
                        }
                        _ => return None, // lookaround
                    }
                } else {
                    out.push('(');
                    i += 1;
                }
            }
            '{' => {
                // `{n}`, `{n,}`, `{n,m}` is a quantifier; anything else is a literal (Annex B).
                let mut j = i + 1;
                let start = j;
                while chars.get(j).is_some_and(char::is_ascii_digit) {
                    j += 1;
                }
                let mut valid = j > start;
                if valid && chars.get(j) == Some(&',') {
                    j += 1;
                    while chars.get(j).is_some_and(char::is_ascii_digit) {
                        j += 1;
                    }
                }
                valid = valid && chars.get(j) == Some(&'}');
                if valid {
                    let q: String = chars[i..=j].iter().collect();
                    out.push_str(&q);
                    i = j + 1;
                } else {
                    out.push_str(&hex('{'));
                    i += 1;
                }
            }
            '}' | ']' => {
                out.push_str(&hex(c));
                i += 1;
            }
            '[' => {
                let mut j = i + 1;
                let negated = chars.get(j) == Some(&'^');
                if negated {
                    j += 1;
                }
                let mut members = String::new();
                let mut any = false;
                loop {
                    let ch = *chars.get(j)?;
                    if ch == ']' {
                        j += 1;
                        break;
                    }
                    // One atom: a char, or a class escape.
                    let (atom, next) = class_atom(&chars, j)?;
                    j = next;
                    let is_range =
                        chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|c| *c != ']');
                    if let (Esc::Char(lo), true) = (&atom, is_range) {
                        let (hi_atom, after) = class_atom(&chars, j + 1)?;
                        match hi_atom {
                            Esc::Char(hi) => {
                                if hi < *lo {
                                    return None;
                                }
                                members.push_str(&class_range(*lo, hi, fold));
                                j = after;
                            }
                            // `[a-\d]`: Annex B reads `-` literally.
                            Esc::Set(s) => {
                                members.push_str(&class_range(*lo, *lo, fold));
                                members.push_str(&hex('-'));
                                members.push_str(s);
                                j = after;
                            }
                        }
                    } else {
                        match atom {
                            Esc::Char(ch) => members.push_str(&class_range(ch, ch, fold)),
                            Esc::Set(s) => members.push_str(s),
                        }
                    }
                    any = true;
                }
                if !any {
                    return None; // `[]` / `[^]`
                }
                out.push_str(if negated { "[^" } else { "[" });
                out.push_str(&members);
                out.push(']');
                i = j;
            }
            other => {
                out.push_str(&literal(other, fold));
                i += 1;
            }
        }
    }
    Some(out)
}

fn class_atom(chars: &[char], j: usize) -> Option<(Esc, usize)> {
    let ch = *chars.get(j)?;
    if ch == '\\' {
        match chars.get(j + 1)? {
            // Negated class escapes inside a class need set subtraction: fall back.
            'D' | 'W' | 'S' => None,
            _ => escape(chars, j + 1, true),
        }
    } else {
        Some((Esc::Char(ch), j + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        compile_es(p).unwrap().is_match(t).unwrap()
    }

    #[test]
    fn case_insensitive_and_es_classes() {
        assert!(m("hello", "say HeLLo"));
        assert!(m(r"\d+ items", "3 ITEMS"));
        assert!(!m(r"^\d$", "٣")); // Arabic-Indic digit is not \d in ECMAScript
        assert!(m(r"a\sb", "a\u{00A0}b"));
        assert!(!m("s", "ſ")); // no non-ASCII → ASCII folding without the u flag
        assert!(!m("k", "\u{212A}"));
        assert!(m("[a-c]x", "BX"));
        assert!(m("[^a]", "A1"));
        assert!(!m("^[^a]$", "A"));
        assert!(!m("a.b", "a\nb"));
        assert!(m("a{", "A{"));
        assert!(m("x{2}", "XX"));
        assert!(m(r"\bword\b", "a word."));
    }

    #[test]
    fn lookaround_and_backrefs_use_the_ecmascript_engine() {
        let re = compile_es(r"(a)\1(?=b)").unwrap();
        assert!(!re.is_linear());
        assert!(re.is_match("xAAb").unwrap());
        assert!(!re.is_match("xAAc").unwrap());
        assert!(compile_es("hello").unwrap().is_linear());
    }

    #[test]
    fn without_the_i_flag_letters_keep_their_case() {
        let re = compile_es_with_flags("Acme [a-c]x", "").unwrap();
        assert!(re.is_linear());
        assert!(re.is_match("an Acme bx").unwrap());
        assert!(!re.is_match("an ACME bx").unwrap());
        assert!(!re.is_match("an Acme Bx").unwrap());
        assert_eq!(
            re.find_ranges("Acme ax, Acme cx").unwrap(),
            vec![0..7, 9..16]
        );
        // Flags the translation does not model use the backtracker.
        let ml = compile_es_with_flags("^b$", "m").unwrap();
        assert!(!ml.is_linear());
        assert_eq!(ml.find_ranges("a\nb\nc").unwrap(), vec![2..3]);
    }

    #[test]
    fn bad_regex_is_an_error_not_a_panic() {
        let e = compile_es("(unclosed").unwrap_err();
        assert!(
            e.starts_with("Invalid regular expression: /(unclosed/i:"),
            "{e}"
        );
    }

    #[test]
    fn catastrophic_pattern_is_bounded() {
        // Backreference forces the backtracker; the classic blow-up shape.
        let re = compile_es(r"^(a+)+\1$").unwrap();
        let text = format!("{}!", "a".repeat(40));
        let started = std::time::Instant::now();
        let r = re.is_match(&text);
        assert!(started.elapsed() < BACKTRACK_DEADLINE * 3);
        // Either it finished (engine was clever) or it reported the budget.
        if let Err(e) = r {
            assert!(e.contains("exceeded"), "{e}");
        }
        // The same shape without a backreference is linear and instant.
        let lin = compile_es(r"^(a+)+$").unwrap();
        assert!(lin.is_linear());
        assert!(!lin.is_match(&text).unwrap());
        // Emoji in the haystack keep the linear engine (per-unit stand-ins)…
        let lin = compile_es(r"^([^x]+)+$").unwrap();
        assert!(lin.is_linear());
        let emoji = format!("{}x", "😀".repeat(5_000));
        assert!(!lin.is_match(&emoji).unwrap());
        assert!(lin.find_ranges(&emoji).unwrap().is_empty());
        // …and the per-unit backtracker is under the same deadline.
        let started = std::time::Instant::now();
        let r = re.is_match(&format!("😀{text}"));
        assert!(started.elapsed() < BACKTRACK_DEADLINE * 3);
        if let Err(e) = r {
            assert!(e.contains("exceeded"), "{e}");
        }
    }

    fn m_flags(p: &str, flags: &str, t: &str) -> bool {
        compile_es_with_flags(p, flags)
            .unwrap()
            .is_match(t)
            .unwrap()
    }

    /// Both engines (the translation when the pattern has one, and the
    /// backtracker) give `expected` for `re.test(t)`.
    fn both(p: &str, flags: &str, t: &str, expected: bool) {
        let chosen = compile_es_with_flags(p, flags).unwrap();
        assert_eq!(
            chosen.is_match(t).unwrap(),
            expected,
            "/{p}/{flags} on {t:?}"
        );
        let slow = compile(p, flags, false).unwrap();
        assert!(!slow.is_linear());
        assert_eq!(
            slow.is_match(t).unwrap(),
            expected,
            "backtracker /{p}/{flags} on {t:?}"
        );
    }

    #[test]
    fn without_u_an_astral_character_is_two_code_units() {
        for flags in ["", "i"] {
            both("^.$", flags, "😀", false);
            both("^..$", flags, "😀", true);
            both("^.{2}$", flags, "😀", true);
            both(".{2}", flags, "a😀", true);
            both("^.{3}$", flags, "a😀", true);
            both("^[^a]$", flags, "😀", false);
            both("^[^a]{2}$", flags, "😀", true);
            both(r"^\S$", flags, "😀", false);
            both(r"^\S+$", flags, "a😀b", true);
            both(r"^\W\W$", flags, "😀", true);
            both(r"^\D{4}$", flags, "😀😀", true);
            both(r"^\w\b..\b\w$", flags, "a😀b", true);
            both("^.x$", flags, "😀X", false);
            both("^..x$", flags, "😀X", flags == "i");
        }
        // A pattern's astral literal is two units too.
        for flags in ["", "i"] {
            both("^[😀]$", flags, "😀", false);
            both("^[😀]{2}$", flags, "😀", true);
            both("^[😀]+$", flags, "😀😃", false); // 😃 shares 😀's high unit only
            both("^😀{2}$", flags, "😀😀", false); // `{2}` repeats the low unit
            both("^😀+$", flags, "😀", true);
            both("^[^😀]$", flags, "😃", false);
            both(r"^\uD83D\uDE00$", flags, "😀", true);
            both(r"^[\uD83D\uDE00]$", flags, "😀", false);
            both(r"^[\uD83D\uDE00]{2}$", flags, "😀", true);
            both(r"^\uD83D\uDE00{2}$", flags, "😀😀", false);
            both(r"[\uD800-\uDBFF]", flags, "x😀", true);
            both(r"[\uD800-\uDBFF]", flags, "xé", false);
        }
        // Backreferences and lookaround see units as well.
        both(r"^(.)\1$", "", "😀", false);
        both(r"^(.)(.)$", "", "😀", true);
        both(r"(?<=\uD83D)\uDE00", "", "😀", true);
        // An astral range is out of order without `u`, fine with it.
        assert!(compile_es_with_flags("[😀-😂]", "").is_err());
        assert!(m_flags("^[😀-😂]$", "u", "😁"));
    }

    #[test]
    fn with_u_an_astral_character_is_one_code_point() {
        for flags in ["u", "iu"] {
            assert!(m_flags("^.$", flags, "😀"));
            assert!(!m_flags("^..$", flags, "😀"));
            assert!(m_flags("^[^a]$", flags, "😀"));
            assert!(m_flags(r"^\S$", flags, "😀"));
            assert!(m_flags("^[😀]$", flags, "😀"));
            assert!(m_flags("^😀{2}$", flags, "😀😀"));
            assert!(!m_flags(r"^\uD83D$", flags, "😀"));
        }
    }

    #[test]
    fn match_ranges_are_bytes_widened_to_whole_characters() {
        let re = compile_es_with_flags("[^a]", "").unwrap();
        assert!(re.is_linear());
        // Units 1..2, 2..3 (the pair) and 3..4: the pair's halves merge.
        assert_eq!(re.find_ranges("a😀b").unwrap(), vec![1..5, 5..6]);
        let slow = compile("[^a]", "", false).unwrap();
        assert_eq!(slow.find_ranges("a😀b").unwrap(), vec![1..5, 5..6]);
        // A match ending inside the pair takes the whole character.
        let re = compile_es_with_flags(r"a\uD83D", "").unwrap();
        assert_eq!(re.find_ranges("xa😀").unwrap(), vec![1..6]);
        // Whole-unit matches map exactly.
        let re = compile_es_with_flags("b..c", "i").unwrap();
        assert_eq!(re.find_ranges("😀B😀C").unwrap(), vec![4..10]);
        // With `u`, code points.
        let re = compile_es_with_flags(".", "u").unwrap();
        assert_eq!(re.find_ranges("a😀").unwrap(), vec![0..1, 1..5]);
    }

    #[test]
    fn an_empty_match_right_after_a_match_is_reported_as_match_all_does() {
        // `"x".matchAll(/x*/g)`: "x" at 0, then "" at 1.
        for linear in [true, false] {
            let re = compile("x*", "", linear).unwrap();
            assert_eq!(re.is_linear(), linear);
            assert_eq!(re.find_ranges("x").unwrap(), vec![0..1, 1..1]);
            assert_eq!(re.find_ranges("ax").unwrap(), vec![0..0, 1..2, 2..2]);
        }
    }

    #[test]
    fn latin1_escapes_fold_under_i_as_ecmascript_does() {
        // `\xff` is ÿ, whose case pair Ÿ (U+0178) lies outside Latin-1.
        assert!(m(r"\xff", "Ÿ"));
        assert!(m(r"[\xe0-\xff]", "À"));
        assert!(
            !compile_es_with_flags(r"\xff", "")
                .unwrap()
                .is_match("Ÿ")
                .unwrap()
        );
    }

    #[test]
    fn stand_ins_spell_each_unit_once() {
        assert!(matches!(units_as_chars("abé"), Cow::Borrowed("abé")));
        let spelled = units_as_chars("a😀\u{10D83D}");
        let units: Vec<u32> = spelled.chars().map(u32::from).collect();
        // A plane-16 character of the input is itself split into stand-ins.
        assert_eq!(
            units,
            vec![0x61, 0x10_D83D, 0x10_DE00, 0x10_DBF6, 0x10_DC3D]
        );
    }

    /// What JavaScript (node) answered, recorded by
    /// tests/data/astral/gen_es_cases.js.
    #[test]
    fn agrees_with_javascript_around_astral_characters() {
        #[derive(serde::Deserialize)]
        struct Corpus {
            texts: Vec<String>,
            cases: Vec<Case>,
        }
        #[derive(serde::Deserialize)]
        struct Case {
            pattern: String,
            flags: String,
            #[serde(default)]
            error: bool,
            #[serde(default)]
            results: Vec<(bool, Vec<(usize, usize)>)>,
        }
        let corpus: Corpus =
            serde_json::from_str(include_str!("../../tests/data/astral/es_cases.json"))
                .expect("corpus is valid JSON");
        let mut checked = 0;
        for case in &corpus.cases {
            let (p, f) = (&case.pattern, &case.flags);
            for linear in [true, false] {
                let re = compile(p, f, linear);
                if case.error {
                    assert!(re.is_err(), "/{p}/{f} should not compile");
                    continue;
                }
                let re = re.unwrap_or_else(|e| panic!("/{p}/{f}: {e}"));
                for (text, (test, ranges)) in corpus.texts.iter().zip(&case.results) {
                    let want: Vec<Range<usize>> = ranges.iter().map(|(s, e)| *s..*e).collect();
                    let engine = if re.is_linear() {
                        "linear"
                    } else {
                        "backtracker"
                    };
                    assert_eq!(
                        re.is_match(text).unwrap(),
                        *test,
                        "/{p}/{f}.test({text:?}) ({engine})"
                    );
                    assert_eq!(
                        re.find_ranges(text).unwrap(),
                        want,
                        "/{p}/{f} ranges in {text:?} ({engine})"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 5000, "{checked}");
    }

    mod property {
        use super::*;
        use proptest::prelude::*;

        /// Pattern atoms: (ECMAScript spelling, the same atom as UTF-16 units
        /// for the reference — spelled independently of `pattern_units`).
        const ATOMS: &[(&str, &[u32])] = &[
            (".", &[0x2E]),
            ("a", &[0x61]),
            ("B", &[0x42]),
            (" ", &[0x20]),
            ("[^a]", &[0x5B, 0x5E, 0x61, 0x5D]),
            (r"\S", &[0x5C, 0x53]),
            (r"\s", &[0x5C, 0x73]),
            (r"\W", &[0x5C, 0x57]),
            (r"\w", &[0x5C, 0x77]),
            ("😀", &[0xD83D, 0xDE00]),
            ("[😀]", &[0x5B, 0xD83D, 0xDE00, 0x5D]),
            ("[^😀]", &[0x5B, 0x5E, 0xD83D, 0xDE00, 0x5D]),
            (r"\uD83D", &[0xD83D]),
            (r"\uDE00", &[0xDE00]),
            (r"\b", &[0x5C, 0x62]),
            (
                "(?:a|😀)",
                &[0x28, 0x3F, 0x3A, 0x61, 0x7C, 0xD83D, 0xDE00, 0x29],
            ),
        ];
        const QUANTIFIERS: &[&str] = &["", "", "?", "*", "+", "{2}", "{1,3}"];
        const PIECES: &[&str] = &["a", "A", "b", " ", "😀", "😃", "é", "𝒳", "\n"];

        fn pattern() -> impl Strategy<Value = (String, Vec<u32>)> {
            (
                any::<bool>(),
                prop::collection::vec((0..ATOMS.len(), 0..QUANTIFIERS.len()), 1..5),
                any::<bool>(),
            )
                .prop_map(|(start, atoms, end)| {
                    let mut src = String::new();
                    let mut units = vec![];
                    if start {
                        src.push('^');
                        units.push(0x5E);
                    }
                    for (a, q) in atoms {
                        let (spelled, atom_units) = ATOMS[a];
                        src.push_str(spelled);
                        units.extend_from_slice(atom_units);
                        let q = if spelled == r"\b" { "" } else { QUANTIFIERS[q] };
                        src.push_str(q);
                        units.extend(q.chars().map(u32::from));
                    }
                    if end {
                        src.push('$');
                        units.push(0x24);
                    }
                    (src, units)
                })
        }

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(0..PIECES.len(), 0..6)
                .prop_map(|ix| ix.into_iter().map(|i| PIECES[i]).collect())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]
            /// The chosen engine, the backtracker and a reference (regress on
            /// the UTF-16 units of pattern and text) agree; the two engines
            /// report the same ranges.
            #[test]
            fn engines_agree_with_a_utf16_reference(
                (src, units) in pattern(),
                text in text(),
                fold in any::<bool>(),
            ) {
                let flags = if fold { "i" } else { "" };
                let reference = regress::Regex::from_unicode(units.into_iter(), flags)
                    .expect("generated patterns are valid");
                let haystack: Vec<u16> = text.encode_utf16().collect();
                let want = reference.find_from_ucs2(&haystack, 0).next().is_some();
                let chosen = compile_es_with_flags(&src, flags).expect("valid");
                let slow = compile(&src, flags, false).expect("valid");
                let case = format!("/{src}/{flags} on {text:?}");
                prop_assert_eq!(chosen.is_match(&text).unwrap(), want, "chosen {}", case);
                prop_assert_eq!(slow.is_match(&text).unwrap(), want, "backtracker {}", case);
                let (fast, slow) = (chosen.find_ranges(&text), slow.find_ranges(&text));
                prop_assert_eq!(fast.unwrap(), slow.unwrap(), "ranges {}", case);
            }
        }
    }

    /// Bad-regex messages and acceptance as V8 (Node 22, the original's
    /// engine) reports them, captured from cowork-harness 2.0.0 replays
    /// (scripts/parity-assert.py).
    #[test]
    fn syntax_errors_read_as_v8_reports_them() {
        let cases = [
            ("[", "Unterminated character class"),
            ("(?i)x", "Invalid group"),
            ("\\", "\\ at end of pattern"),
            ("[\\", "\\ at end of pattern"),
            ("(abc", "Unterminated group"),
            ("((a)", "Unterminated group"),
            ("(?:", "Unterminated group"),
            ("a)", "Unmatched ')'"),
            ("*a", "Nothing to repeat"),
            ("a**", "Nothing to repeat"),
            ("a|*", "Nothing to repeat"),
            ("^*", "Nothing to repeat"),
            ("x{2}{3}", "Nothing to repeat"),
            ("a{2,1}", "numbers out of order in {} quantifier"),
            ("(?<1>a)", "Invalid capture group name"),
            ("(?<a", "Invalid capture group name"),
            ("(?", "Invalid group"),
            ("[b-a]", "Range out of order in character class"),
            ("(?i:a)", "Invalid group"),
            ("(?-i:a)", "Invalid group"),
            ("\\b+", "Nothing to repeat"),
        ];
        for (pattern, v8) in cases {
            let Err(e) = compile_es(pattern) else {
                panic!("{pattern:?} compiled; V8 rejects it");
            };
            assert_eq!(
                e,
                format!("Invalid regular expression: /{pattern}/i: {v8}"),
                "{pattern:?}"
            );
        }
        // escaped and in-class look-alikes stay valid
        for ok in [
            "\\(?i", "[(?i]", "\\\\b+", "[\\b]+", "(?:a)", "(?=a)", "(?<n>a)",
        ] {
            assert!(compile_es(ok).is_ok(), "{ok:?}");
        }
    }
}
