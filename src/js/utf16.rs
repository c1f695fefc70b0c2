//! JavaScript strings are UTF-16: lengths and slices in code units, and the
//! per-unit spelling that lets a code-point matcher (the linear regex engine,
//! the globs) match per unit.

use std::borrow::Cow;

/// Slices `s` to at most `max` UTF-16 code units (JS `String.prototype.slice`).
pub fn slice(s: &str, max: usize) -> &str {
    // A UTF-8 string never has more UTF-16 units than bytes.
    if s.len() <= max {
        return s;
    }
    // ASCII is one unit per byte (and every byte is a char boundary).
    if s.as_bytes()[..max].is_ascii() {
        return &s[..max];
    }
    let mut units = 0usize;
    for (idx, ch) in s.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &s[..idx];
        }
    }
    s
}

/// Length in UTF-16 code units (JS `s.length`).
pub fn len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// True for a UTF-16 surrogate unit (`0xD800..=0xDFFF`).
pub fn is_surrogate(unit: u32) -> bool {
    (0xD800..=0xDFFF).contains(&unit)
}

/// True when `text` holds a character outside the Basic Multilingual Plane
/// (two UTF-16 units): in UTF-8 exactly the lead bytes `0xF0..=0xF4`.
pub fn has_astral(text: &str) -> bool {
    // 64 bytes at a time without an early exit inside a block, which the
    // compiler vectorises (a byte-wise `any` over an 8 MB transcript did
    // not, and ran after everything else, in the replay's serial tail).
    let (blocks, rest) = text.as_bytes().as_chunks::<64>();
    blocks
        .iter()
        .any(|block| block.iter().fold(false, |seen, &b| seen | (b >= 0xF0)))
        || rest.iter().any(|&b| b >= 0xF0)
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
pub fn units_as_chars(text: &str) -> Cow<'_, str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn astral_characters_are_found_at_every_offset() {
        for len in [0, 1, 63, 64, 65, 130] {
            assert!(!has_astral(&"é".repeat(len)), "{len}");
            for at in 0..=len {
                let text = format!("{}😀{}", "a".repeat(at), "€".repeat(len - at));
                assert!(has_astral(&text), "{len} {at}");
            }
        }
    }

    #[test]
    fn utf16_slicing_counts_code_units() {
        assert_eq!(slice("abc", 2), "ab");
        assert_eq!(slice("a😀b", 2), "a");
        assert_eq!(slice("a😀b", 3), "a😀");
        assert_eq!(len("a😀"), 3);
    }
}
