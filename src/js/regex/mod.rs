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

mod deadline;
#[cfg(test)]
mod tests;
mod translate;
mod units;
mod wording;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use deadline::bounded;
pub use deadline::{BACKTRACK_DEADLINE, MAX_RUNAWAY_WORKERS};
use translate::translate;
use units::{pattern_units, stand_in_width, to_byte_ranges, units_width};
use wording::{v8_message, v8_only_rejection};

use crate::js::utf16::{has_astral, is_surrogate, units_as_chars};

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
    memo::compiled(pattern, flags, || compile(pattern, flags, true))
}

/// Compiled patterns by `(pattern, flags)`, for the life of the process:
/// compiling is a pure function of the two, and a batch replays the same
/// scenario's answer rules and assertion patterns once per cassette
/// (compiling them was a fifth of a 1,000-cassette replay's instructions).
/// A clone shares the compiled program (`regex::Regex` and the backtracker
/// are reference-counted).
mod memo {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::EsRegex;

    type Memo = HashMap<(String, String), Result<EsRegex, String>>;

    static COMPILED: Mutex<Option<Memo>> = Mutex::new(None);

    pub(super) fn compiled(
        pattern: &str,
        flags: &str,
        compile: impl FnOnce() -> Result<EsRegex, String>,
    ) -> Result<EsRegex, String> {
        let lock = || {
            COMPILED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let key = (pattern.to_owned(), flags.to_owned());
        if let Some(hit) = lock().get_or_insert_with(HashMap::new).get(&key) {
            return hit.clone();
        }
        // Compiled outside the lock: a slow pattern holds up no other thread.
        let result = compile();
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, result.clone());
        result
    }
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

/// Escapes `s` so a regex matches it literally (every syntax character,
/// and `/`, which a regex literal would end at, gets a backslash).
pub fn escape_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
