//! Text as a page shows it: clipped to a size with a note saying what was
//! left out ([`Clip`]), and split into plain and masked runs so a masked
//! value (`<uuid>`, `{{cwd}}`, `<duration>`, …) can be marked ([`Segment`]).
//! Escaping is the templates' job; nothing here writes markup.

use std::sync::OnceLock;

use regex::Regex;

/// A recorded body, cut to a byte cap on a character boundary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Clip {
    pub text: String,
    /// `"… 12,345 more bytes not shown"` when cut.
    pub note: Option<String>,
}

impl Clip {
    /// `text` cut to `cap` bytes (on a character boundary).
    pub fn new(text: &str, cap: usize) -> Clip {
        if text.len() <= cap {
            return Clip {
                text: text.to_owned(),
                note: None,
            };
        }
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Clip {
            text: text[..end].to_owned(),
            note: Some(format!(
                "{} more bytes not shown (of {})",
                thousands((text.len() - end) as u64),
                thousands(text.len() as u64)
            )),
        }
    }

    /// A JSON value pretty-printed, then clipped.
    pub fn json(value: &serde_json::Value, cap: usize) -> Clip {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        Clip::new(&text, cap)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// One run of a masked text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub text: String,
    /// A placeholder the masker put in place of a volatile value.
    pub masked: bool,
}

/// `text` split at the placeholders the maskers write (`rerun::divergence`,
/// `diff::Normalizer`) — exactly their names: `<uuid>`, `<hex>`, `<time>`,
/// `<id>`, `<duration>`, `<date>`, `<session>`, `<tool-N>`-style numbered
/// ids — and the run roots (`{{cwd}}`, `{{config}}`, `{{home}}`, `{{run}}`,
/// `{{cwd-slug}}`). Anything else in angle brackets is the text's own
/// (Python's `<module>`, an HTML tag) and is not marked.
pub fn segments(text: &str) -> Vec<Segment> {
    static MASK: OnceLock<Regex> = OnceLock::new();
    let mask = MASK.get_or_init(|| {
        Regex::new(concat!(
            r"<(?:uuid|hex|time|id|duration|date|session)>",
            r"|<(?:tool|msg|req|agent|uuid)-[0-9]+>",
            r"|\{\{(?:cwd|config|home|run|cwd-slug)\}\}",
            r"|/tmp/claude-<uid>/",
        ))
        .expect("a valid regex")
    });
    let mut out = Vec::new();
    let mut at = 0;
    for m in mask.find_iter(text) {
        if m.start() > at {
            out.push(Segment {
                text: text[at..m.start()].to_owned(),
                masked: false,
            });
        }
        out.push(Segment {
            text: m.as_str().to_owned(),
            masked: true,
        });
        at = m.end();
    }
    if at < text.len() || out.is_empty() {
        out.push(Segment {
            text: text[at..].to_owned(),
            masked: false,
        });
    }
    out
}

/// `12345` → `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte size for people: `812 B`, `4.2 KiB`, `1.3 MiB`.
pub fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_on_a_char_boundary_and_says_how_much() {
        let c = Clip::new("ééé", 3);
        assert_eq!(c.text, "é");
        assert_eq!(c.note.as_deref(), Some("4 more bytes not shown (of 6)"));
        assert_eq!(Clip::new("abc", 3).note, None);
    }

    #[test]
    fn segments_mark_placeholders() {
        let s = segments("at {{cwd}}/a took <duration> id <uuid>!");
        let masked: Vec<_> = s.iter().filter(|s| s.masked).map(|s| &s.text[..]).collect();
        assert_eq!(masked, ["{{cwd}}", "<duration>", "<uuid>"]);
        // The text's own angle brackets are not masks.
        let own = segments("File \"x.py\", line 3, in <module> <tool-2> <div>");
        let marked: Vec<_> = own
            .iter()
            .filter(|s| s.masked)
            .map(|s| &s.text[..])
            .collect();
        assert_eq!(marked, ["<tool-2>"]);
        assert_eq!(
            s.iter().map(|s| &s.text[..]).collect::<String>(),
            "at {{cwd}}/a took <duration> id <uuid>!"
        );
    }

    #[test]
    fn thousands_and_bytes() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
        assert_eq!(bytes(2048), "2.0 KiB");
    }
}
