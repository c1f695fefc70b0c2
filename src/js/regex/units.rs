//! The UTF-16 side of a non-`u` regex: the pattern as code units, and match
//! ranges found in code units (or stand-in bytes) mapped back to byte ranges
//! of the Rust string.

use std::ops::Range;

use crate::js::utf16::is_surrogate;

/// The pattern as ECMAScript reads it without `u`: UTF-16 code units, where
/// an escaped surrogate (`\uD83D`) is passed as the raw unit so that
/// `regress` does not fuse an escaped pair into one code point, and `\u{`
/// is the letter `u` (see below). Group names (`(?<name>`, `\k<name>`) are
/// copied as written: ECMAScript reads them as identifiers in code points
/// even without `u`.
pub(super) fn pattern_units(pattern: &str) -> Vec<u32> {
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

/// Width of a character in UTF-16 units.
pub(super) fn units_width(c: char) -> usize {
    c.len_utf16()
}

/// Width of a character in the bytes of [`crate::js::utf16::units_as_chars`].
pub(super) fn stand_in_width(c: char) -> usize {
    if c.len_utf16() == 2 { 8 } else { c.len_utf8() }
}

/// Maps match ranges in another coordinate system of `text` (UTF-16 units,
/// or bytes of [`crate::js::utf16::units_as_chars`]; `width` gives a character's extent in
/// it) to byte ranges of `text`. A boundary inside an astral character is
/// widened to the whole character (an empty match there moves to its start),
/// and ranges that then overlap are merged. `found` is in order and
/// non-overlapping, as a left-to-right search yields it.
pub(super) fn to_byte_ranges(
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
