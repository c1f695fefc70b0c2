//! ECMAScript regexes for untrusted patterns: `new RegExp(p, "i")` semantics,
//! bounded so a hostile pattern can never hang replay.
//!
//! Every pattern is first validated by `regress` (an ECMAScript engine), so
//! syntax errors are the ECMAScript ones. Then:
//! - if the pattern is in the ASCII subset whose meaning is identical in the
//!   linear-time `regex` crate (no lookaround, no backreference, no non-ASCII
//!   literal, no Annex-B identity escape of a letter), it is *translated*
//!   (not passed through): `\d`/`\w`/`\s`/`.` get their ECMAScript
//!   (non-Unicode-mode) sets, `\b` is the ASCII word boundary, and case
//!   insensitivity is spelled out as ASCII case pairs (`[aA]`) — ECMAScript's
//!   non-Unicode `i` never folds a non-ASCII character onto an ASCII one
//!   (`ſ` ≠ `s`, `K` ≠ `k`), which Rust's Unicode `(?i)` would;
//! - otherwise the `regress` backtracker runs on a worker thread with a
//!   deadline ([`BACKTRACK_DEADLINE`]); a match that does not finish in time
//!   is an error ("regex evaluation exceeded …"), never a hang.
//!
//! Known approximation: both engines see code points, where ECMAScript
//! without the `u` flag sees UTF-16 code units, so a pattern that counts
//! characters (`^.$`) across an astral character (emoji) can differ.
//!
//! This is the one ECMAScript regex entry point of reel: assertions and the
//! scenario `when_question` decider call [`compile_es`]; `verify-cassettes`
//! allow patterns and `.cowork-redact.json` patterns (which carry their own
//! flags) call [`compile_es_with_flags`]. Without the `i` flag the
//! translation keeps letters case-sensitive; the `m`, `s` and `u` flags
//! always use the backtracker.

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

/// A compiled case-insensitive ECMAScript regex.
#[derive(Debug, Clone)]
pub struct EsRegex {
    source: String,
    engine: Engine,
}

#[derive(Debug, Clone)]
enum Engine {
    /// Linear time, semantics-preserving translation.
    Linear(regex::Regex),
    /// ECMAScript backtracker, run under a deadline.
    Backtracking(Arc<regress::Regex>),
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
    let slow = regress::Regex::with_flags(pattern, flags)
        .map_err(|e| format!("Invalid regular expression: /{pattern}/{flags}: {e}"))?;
    // The translation models exactly two flag sets: none, and `i`.
    let fold = match flags {
        "" => Some(false),
        "i" => Some(true),
        _ => None,
    };
    let engine = match fold
        .and_then(|fold| translate(pattern, fold))
        .and_then(|t| {
            regex::RegexBuilder::new(&t)
                .size_limit(32 * 1024 * 1024)
                .build()
                .ok()
        }) {
        Some(re) => Engine::Linear(re),
        None => Engine::Backtracking(Arc::new(slow)),
    };
    Ok(EsRegex {
        source: pattern.to_owned(),
        engine,
    })
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

    /// `re.test(text)`; `Err` when a backtracking match exceeded the deadline.
    pub fn is_match(&self, text: &str) -> Result<bool, String> {
        match &self.engine {
            Engine::Linear(re) => Ok(re.is_match(text)),
            Engine::Backtracking(re) => bounded(re, text, |re, t| re.find(t).is_some()),
        }
    }

    /// The byte ranges of every match, left to right (`text.matchAll`);
    /// `Err` when a backtracking search exceeded the deadline.
    pub fn find_ranges(&self, text: &str) -> Result<Vec<std::ops::Range<usize>>, String> {
        match &self.engine {
            Engine::Linear(re) => Ok(re.find_iter(text).map(|m| m.range()).collect()),
            Engine::Backtracking(re) => bounded(re, text, |re, t| {
                re.find_iter(t).map(|m| m.range()).collect()
            }),
        }
    }

    /// `is_match`, with a timeout read as "no match" — for callers that have
    /// already reported the timeout or cannot report it.
    pub fn test(&self, text: &str) -> bool {
        self.is_match(text).unwrap_or(false)
    }
}

/// Runs `search` with the backtracker on a worker thread, under
/// [`BACKTRACK_DEADLINE`].
fn bounded<T: Send + 'static>(
    re: &Arc<regress::Regex>,
    text: &str,
    search: fn(&regress::Regex, &str) -> T,
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
    let owned: Arc<str> = Arc::from(text);
    let worker_state = Arc::clone(&state);
    let spawned = std::thread::Builder::new()
        .name("reel-regex".into())
        .spawn(move || {
            let found = search(&re, &owned);
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
    }
}
