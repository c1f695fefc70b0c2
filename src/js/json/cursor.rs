//! A strict JSON token reader over text, for bulk readers that keep a few
//! values of a large document and skip the rest without building anything
//! (a cassette's `timeline`: tens of thousands of small objects).
//!
//! Strict like [`super::unescape_into`]: it takes the JSON that writers
//! write and refuses (`None`) anything else, a `\u` escape included, so its
//! caller's reference path (serde_json) decides every doubtful text. Never
//! more lenient than serde_json: what it takes, serde_json parses the same.

use super::block::past_plain;

/// A strict reader of JSON tokens: what [`Cursor`] (JSON text) and
/// [`super::NestedCursor`] (JSON text held inside a JSON string, read
/// without unescaping it first) share. The required methods find tokens;
/// numbers, literals and skipping a whole value are written once, here.
pub trait Tokens<'a> {
    /// The text read (for a nested cursor, as stored: escapes still in).
    fn text(&self) -> &'a str;
    /// How far into [`Tokens::text`] it is.
    fn offset(&self) -> usize;
    /// Moves to `at` (only past what was just read).
    fn set_offset(&mut self, at: usize);
    /// The next byte of the JSON after whitespace, and how many bytes of
    /// the text it takes (not taken).
    fn peek_unit(&mut self) -> Option<(u8, usize)>;
    /// Takes one string token and returns its inside as stored; `None`
    /// when the next token is not a string this reader takes.
    fn stored_string(&mut self) -> Option<&'a str>;

    /// The next byte after whitespace (not taken).
    fn peek(&mut self) -> Option<u8> {
        self.peek_unit().map(|(b, _)| b)
    }

    /// Takes `b` if it comes next (after whitespace).
    fn eat(&mut self, b: u8) -> bool {
        match self.peek_unit() {
            Some((next, width)) if next == b => {
                self.set_offset(self.offset() + width);
                true
            }
            _ => false,
        }
    }

    /// Whether only whitespace is left.
    fn at_end(&mut self) -> bool {
        self.peek_unit().is_none()
    }

    /// A number token, as written (JSON's grammar: `-`, no leading zero, a
    /// digit on both sides of `.`, an exponent with digits).
    fn number(&mut self) -> Option<&'a str> {
        self.peek()?;
        let text = self.text();
        let bytes = text.as_bytes();
        let start = self.offset();
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start + usize::from(bytes.get(start) == Some(&b'-'));
        match bytes.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => {
                digits(&mut at);
            }
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            if !digits(&mut at) {
                return None;
            }
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if !digits(&mut at) {
                return None;
            }
        }
        self.set_offset(at);
        Some(&text[start..at])
    }

    /// Takes `word` (`true`, `false`, `null`) if it comes next.
    fn literal(&mut self, word: &str) -> bool {
        self.peek();
        let at = self.offset();
        let next = self.text().as_bytes()[at..].starts_with(word.as_bytes());
        if next {
            self.set_offset(at + word.len());
        }
        next
    }

    /// Takes a key and the `:` after it; `None` when the next tokens are
    /// not a string this reader takes and a colon, or the key starts with
    /// `$`: serde_json reads an object whose first key is one of its
    /// reserved `$serde_json::private::…` keys as a number or raw text, so
    /// its reference path decides those.
    fn key(&mut self) -> Option<()> {
        let key = self.stored_string()?;
        (!key.starts_with('$') && self.eat(b':')).then_some(())
    }

    /// Skips one value of any kind and returns its text. `None` when it is
    /// not one this reader takes, or opens more than `max_depth` arrays and
    /// objects inside each other (its caller's nesting limit).
    fn value(&mut self, max_depth: usize) -> Option<&'a str> {
        self.peek()?;
        let start = self.offset();
        // Open containers, innermost last: whether each is an object.
        let mut open: Vec<bool> = Vec::new();
        loop {
            // One value, or the opening of a container.
            match self.peek()? {
                b'"' => {
                    self.stored_string()?;
                }
                b @ (b'{' | b'[') => {
                    let object = b == b'{';
                    self.eat(b);
                    if open.len() == max_depth {
                        return None;
                    }
                    if self.eat(if object { b'}' } else { b']' }) {
                        // Empty: a value like any other.
                    } else {
                        open.push(object);
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                b't' | b'f' | b'n' => {
                    if !(self.literal("true") || self.literal("false") || self.literal("null")) {
                        return None;
                    }
                }
                _ => {
                    self.number()?;
                }
            }
            // After a value: the next member or element, or closings.
            loop {
                let Some(&object) = open.last() else {
                    return Some(&self.text()[start..self.offset()]);
                };
                if self.eat(b',') {
                    if object {
                        self.key()?;
                    }
                    break;
                }
                if !self.eat(if object { b'}' } else { b']' }) {
                    return None;
                }
                open.pop();
            }
        }
    }
}

/// A position in JSON text.
pub struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        Cursor { text, at: 0 }
    }

    /// A string token's inside, as written (escapes still in), and whether
    /// it holds an escape. `None` when the next token is not a string this
    /// reader takes (a raw control character, a malformed or `\u` escape).
    pub fn string(&mut self) -> Option<(&'a str, bool)> {
        if !self.eat(b'"') {
            return None;
        }
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at = past_plain(bytes, self.at);
            match *bytes.get(self.at)? {
                b'"' => {
                    let inner = &self.text[start..self.at];
                    self.at += 1;
                    return Some((inner, escaped));
                }
                b'\\' => {
                    match bytes.get(self.at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                    escaped = true;
                    self.at += 2;
                }
                0x00..=0x1f => return None,
                _ => self.at += 1,
            }
        }
    }
}

impl<'a> Tokens<'a> for Cursor<'a> {
    fn text(&self) -> &'a str {
        self.text
    }

    fn offset(&self) -> usize {
        self.at
    }

    fn set_offset(&mut self, at: usize) {
        self.at = at;
    }

    fn peek_unit(&mut self) -> Option<(u8, usize)> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Some((b, 1));
            }
            self.at += 1;
        }
        None
    }

    fn stored_string(&mut self) -> Option<&'a str> {
        self.string().map(|(inner, _)| inner)
    }
}

#[cfg(test)]
mod tests {
    use super::{Cursor, Tokens};

    /// Every text the cursor takes as one value is one serde_json parses,
    /// to the same end; what it refuses is doubtful or invalid.
    #[test]
    fn it_takes_what_serde_json_takes_and_refuses_the_doubtful() {
        let taken = [
            "0",
            "-0",
            "1.50",
            "-12e+5",
            "1E-3",
            "true",
            "false",
            "null",
            r#""""#,
            r#""a\"b\\c\/\b\f\n\r\t é€😀 a longer run of plain text""#,
            "[]",
            "{}",
            r#"[1, {"a": [true, {"b": null}], "c": "d"}, []]"#,
            " \n\t[ 1 , 2 ] ",
        ];
        for text in taken {
            let mut c = Cursor::new(text);
            let got = c.value(100).unwrap_or_else(|| panic!("{text}"));
            assert!(c.at_end(), "{text}");
            assert_eq!(got, text.trim(), "{text}");
            serde_json::from_str::<serde_json::Value>(text).unwrap();
        }
        let refused = [
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "+1",
            "tru",
            "nul",
            r#""\u0041""#,
            r#""\x""#,
            "\"a\nb\"",
            r#""open"#,
            "[1,]",
            "[1 2]",
            r#"{"a" 1}"#,
            r#"{"a": 1,}"#,
            r#"{1: 2}"#,
            "[",
            "{",
            "]",
            "",
        ];
        for text in refused {
            let mut c = Cursor::new(text);
            assert!(c.value(100).is_none() || !c.at_end(), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert_eq!(Cursor::new(&deep).value(100), None, "deeper than allowed");
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(Cursor::new(&ok).value(100).is_some());
        assert_eq!(Cursor::new("[[1], {}]").value(1), None);
        assert!(Cursor::new("[[1], {}]").value(2).is_some());
        assert!(Cursor::new("1").value(0).is_some());
    }

    #[test]
    fn a_string_says_whether_it_holds_an_escape() {
        let mut c = Cursor::new(r#" "plain" "a\nb" "#);
        assert_eq!(c.string(), Some(("plain", false)));
        assert_eq!(c.string(), Some((r"a\nb", true)));
        assert!(c.at_end());
    }
}
