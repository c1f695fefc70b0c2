//! JSON text held inside a JSON string, read as it is stored: a cassette's
//! `events` line is a JSON document written into a JSON string, so the
//! quote around every one of its strings is stored as `\"`, its own
//! escapes as `\\n`, `\\\"`. Unescaping the whole line first and then
//! parsing it reads every byte twice and copies all of them; this reader
//! takes the line's tokens straight from the stored text, and only the
//! strings its caller keeps are ever unescaped (both levels in one pass),
//! those without an escape not even copied.
//!
//! Strict like [`super::Cursor`], and in two ways: it takes only stored
//! text that [`super::unescape_into`] takes (so a line it reads whole has
//! been checked as that string), and only inner JSON that serde_json
//! parses the same. It refuses (`None`) everything else, a `\u` escape at
//! either level included, and its caller unescapes the line and reads it
//! the reference way.

use std::borrow::Cow;

use super::Tokens;
use super::block::past_plain;

/// A position in the stored text of a JSON string's inside (checked
/// UTF-8, not yet checked as a string's inside) that holds JSON text.
pub struct NestedCursor<'a> {
    stored: &'a str,
    at: usize,
}

/// One string of the inner JSON, as stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NestedStr<'a> {
    stored: &'a str,
    /// Whether it holds an escape of either level (else its stored bytes
    /// are its text).
    escaped: bool,
}

impl<'a> NestedCursor<'a> {
    /// `stored`: the bytes between the outer string's quotes.
    pub fn new(stored: &'a str) -> Self {
        NestedCursor { stored, at: 0 }
    }

    /// The next token, when it is a string this reader takes: no raw
    /// control character (an escaped one at the outer level is a raw one
    /// in the inner JSON), no `\u` escape at either level.
    pub fn string(&mut self) -> Option<NestedStr<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        let bytes = self.stored.as_bytes();
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at = past_plain(bytes, self.at);
            match *bytes.get(self.at)? {
                b'\\' => match *bytes.get(self.at + 1)? {
                    // `\"`: the inner string's closing quote.
                    b'"' => {
                        let stored = &self.stored[start..self.at];
                        self.at += 2;
                        return Some(NestedStr { stored, escaped });
                    }
                    // `\/`: a plain `/`.
                    b'/' => self.at += 2,
                    // `\\`: an inner escape, whose letter follows (itself
                    // escaped when it is `"`, `\` or `/`).
                    b'\\' => {
                        self.at += match (bytes.get(self.at + 2), bytes.get(self.at + 3)) {
                            (Some(b'/' | b'b' | b'f' | b'n' | b'r' | b't'), _) => 3,
                            (Some(b'\\'), Some(b'"' | b'\\' | b'/')) => 4,
                            _ => return None,
                        };
                    }
                    // A raw control character in the inner string, a `\u`,
                    // or not an escape at all.
                    _ => return None,
                },
                b'"' | 0x00..=0x1f => return None,
                _ => {
                    self.at += 1;
                    continue;
                }
            }
            escaped = true;
        }
    }
}

impl<'a> Tokens<'a> for NestedCursor<'a> {
    fn text(&self) -> &'a str {
        self.stored
    }

    fn offset(&self) -> usize {
        self.at
    }

    fn set_offset(&mut self, at: usize) {
        self.at = at;
    }

    /// Whitespace is a space or an escaped line break, return or tab; a
    /// quote is stored as `\"`. Any other escape, and a byte the stored
    /// string cannot hold as it is (a raw `"`, a control character), reads
    /// as a byte no token starts with (`\`, NUL), which every caller
    /// refuses.
    fn peek_unit(&mut self) -> Option<(u8, usize)> {
        let bytes = self.stored.as_bytes();
        loop {
            match *bytes.get(self.at)? {
                b' ' => self.at += 1,
                b'\\' => match bytes.get(self.at + 1) {
                    Some(b'n' | b'r' | b't') => self.at += 2,
                    Some(b'"') => return Some((b'"', 2)),
                    _ => return Some((b'\\', 1)),
                },
                b'"' | 0x00..=0x1f => return Some((0, 1)),
                b => return Some((b, 1)),
            }
        }
    }

    fn stored_string(&mut self) -> Option<&'a str> {
        self.string().map(NestedStr::stored)
    }
}

impl<'a> NestedStr<'a> {
    /// The string as stored (escapes of both levels still in): equal to
    /// [`NestedStr::text`] when it holds no escape.
    pub fn stored(self) -> &'a str {
        self.stored
    }

    /// The string's text when it holds no escape (its stored bytes).
    pub fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.stored)
    }

    /// Whether the string is empty.
    pub fn is_empty(self) -> bool {
        self.stored.is_empty()
    }

    /// The string's text: borrowed from the stored text when it holds no
    /// escape, else unescaped (both levels at once).
    pub fn text(self) -> Cow<'a, str> {
        if !self.escaped {
            return Cow::Borrowed(self.stored);
        }
        let mut text = String::with_capacity(self.stored.len());
        let mut rest = self.stored;
        // Escapes were checked as read (`NestedCursor::string`): each is
        // one of the forms matched here.
        while let Some(i) = memchr::memchr(b'\\', rest.as_bytes()) {
            text.push_str(&rest[..i]);
            let escape = &rest.as_bytes()[i..];
            let (c, width) = match escape {
                [_, b'/', ..] => ('/', 2),
                [_, _, b'\\', c, ..] => (char::from(*c), 4),
                [_, _, b'b', ..] => ('\u{8}', 3),
                [_, _, b'f', ..] => ('\u{c}', 3),
                [_, _, b'n', ..] => ('\n', 3),
                [_, _, b'r', ..] => ('\r', 3),
                [_, _, b't', ..] => ('\t', 3),
                [_, _, c, ..] => (char::from(*c), 3),
                _ => break,
            };
            text.push(c);
            rest = rest.get(i + width..).unwrap_or_default();
        }
        text.push_str(rest);
        Cow::Owned(text)
    }

    /// Appends the string as JSON text, quotes included, exactly as
    /// serde_json (and `JSON.stringify`) writes its text: straight from
    /// the stored form, one escape level taken off, never unescaped whole.
    /// The inner escapes this reader takes are all written the same but
    /// `\/`, which serde_json writes as `/`.
    pub fn write_json(self, out: &mut Vec<u8>) {
        out.reserve(self.stored.len() + 2);
        out.push(b'"');
        let mut rest = self.stored.as_bytes();
        if self.escaped {
            // Escapes were checked as read (`NestedCursor::string`): each
            // is one of the forms matched here.
            while let Some(i) = memchr::memchr(b'\\', rest) {
                out.extend_from_slice(&rest[..i]);
                let pair: [u8; 2];
                let (written, width): (&[u8], usize) = match &rest[i..] {
                    // `\/` (outer), `\\/`, `\\\/` (inner): a plain `/`.
                    [_, b'/', ..] => (b"/", 2),
                    [_, _, b'/', ..] => (b"/", 3),
                    [_, _, b'\\', b'/', ..] => (b"/", 4),
                    // `\\\"`, `\\\\`: the inner `\"`, `\\`.
                    [_, _, b'\\', escaped, ..] => {
                        pair = [b'\\', *escaped];
                        (&pair, 4)
                    }
                    // `\\n` and the other letters: the inner `\n`.
                    [_, _, letter, ..] => {
                        pair = [b'\\', *letter];
                        (&pair, 3)
                    }
                    _ => break,
                };
                out.extend_from_slice(written);
                rest = &rest[i + width..];
            }
        }
        out.extend_from_slice(rest);
        out.push(b'"');
    }
}

#[cfg(test)]
mod tests {
    use super::{NestedCursor, Tokens};
    /// The inner JSON of `json`, as a line's token stores it.
    fn stored(json: &str) -> String {
        let mut out = Vec::new();
        crate::js::json::escape(json, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// Every string it takes reads as serde_json reads the inner JSON,
    /// and is written as serde_json writes that text.
    #[test]
    fn strings_read_as_serde_json_reads_them() {
        let strings = [
            r#""""#,
            r#""plain text, longer than one block of sixteen""#,
            r#""a\nb\tc\rd\be\ff\/g\\h\"i""#,
            r#""\\\\\"\"""#,
            "\"é€😀 and / slashes /\"",
            r#""ends in an escape\n""#,
        ];
        for json in strings {
            let want: String = serde_json::from_str(json).unwrap();
            let text = stored(json);
            let mut c = NestedCursor::new(&text);
            let s = c.string().unwrap_or_else(|| panic!("{json}"));
            assert!(c.at_end(), "{json}");
            assert_eq!(s.text(), want, "{json}");
            assert_eq!(s.escaped, s.stored() != want, "{json}");
            let mut written = Vec::new();
            s.write_json(&mut written);
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{json}"
            );
        }
        // A `/` written escaped at the outer level is read too, and every
        // spelling of it is written plain.
        for (stored, text) in [
            (r#"\"a\/b\\\/c\\/d\""#, "a/b/c/d"),
            (r#"\"\/\\/\\\/\\n\""#, "///\n"),
        ] {
            let s = NestedCursor::new(stored).string().unwrap();
            assert_eq!(s.text(), text, "{stored}");
            let mut written = Vec::new();
            s.write_json(&mut written);
            assert_eq!(written, serde_json::to_string(text).unwrap().as_bytes());
        }
    }

    #[test]
    fn it_refuses_what_it_leaves_to_the_reference() {
        for text in [
            // A `\u` escape at either level.
            r#"\"\u00e9\""#,
            r#"\"\\u00e9\""#,
            // A raw control character in the inner string.
            r#"\"a\nb\""#,
            r#"\"a\tb\""#,
            // An unescaped quote: not a string's inside at all.
            r#"\"a"b\""#,
            // An inner escape of nothing valid, or cut short.
            r#"\"\\x\""#,
            r#"\"\\\n\""#,
            r#"\"\\"#,
            r#"\"open"#,
            // An outer escape that is not one.
            r#"\"\x\""#,
        ] {
            let mut c = NestedCursor::new(text);
            assert_eq!(c.string(), None, "{text}");
        }
    }

    /// Skipping a value takes exactly what serde_json takes, to the same
    /// end, with whitespace escaped or not.
    #[test]
    fn values_are_skipped_as_serde_json_reads_them() {
        for json in [
            "0",
            "-1.5e+3",
            "true",
            "null",
            r#"{"a": [1, {"b": "c\nd"}], "e": {}}"#,
            "[\n\t1,\r\n 2 ]",
            r#"{"k\"ey": "v\\"}"#,
        ] {
            serde_json::from_str::<serde_json::Value>(json).unwrap();
            let text = stored(json);
            let mut c = NestedCursor::new(&text);
            let got = c.value(100).unwrap_or_else(|| panic!("{json}"));
            assert!(c.at_end(), "{json}");
            let mut unescaped = String::new();
            assert!(crate::js::json::unescape_into(
                got.as_bytes(),
                &mut unescaped
            ));
            assert_eq!(unescaped, json.trim(), "{json}");
        }
        for json in ["[1,]", "{\"a\" 1}", "01", "[\"\\u0041\"]", "\"a\\x\""] {
            let text = stored(json);
            let mut c = NestedCursor::new(&text);
            assert!(c.value(100).is_none() || !c.at_end(), "{json}");
        }
        let deep = stored(&format!("{}{}", "[".repeat(11), "]".repeat(11)));
        assert_eq!(NestedCursor::new(&deep).value(10), None);
        assert!(NestedCursor::new(&deep).value(11).is_some());
    }
}
