//! Text that reaches a terminal or a CI log, made inert: the one escaping
//! of every path, name and recorded string reel prints (a cassette is
//! hostile input, and so is every file name a run leaves).
//!
//! - [`inline`]: one line. Line breaks, carriage returns, tabs, the other C0
//!   controls, ESC, BEL, DEL and the C1 controls are shown as `\n`, `\r`,
//!   `\t`, `\x1b`, `\u{85}`; bidirectional overrides, embeddings, isolates
//!   and marks (U+202A–202E, U+2066–2069, U+200E/F, U+061C) and the line and
//!   paragraph separators (U+2028/9) as `\u{202e}`.
//! - [`block`]: text of several lines (a report, a diff, a message): as
//!   [`inline`] but `\n` and `\t` kept.
//! - [`for_terminal`]: [`block`] for a whole rendered report, keeping reel's
//!   own colours (SGR sequences, `ESC [ … m`, conceal excepted) when
//!   `color` is on — on a terminal only; off a terminal nothing passes.
//!
//! Both also defuse GitHub workflow commands, which the runner reads at the
//! start of any log line (after leading blanks): a line starting `::` gets
//! a backslash before it (`\::error …`), and `##[` (the legacy form, read
//! anywhere in a line) is written `#\#[`.
//!
//! [`workflow_data`] / [`workflow_property`] escape a workflow command's
//! message and property values (`%` `\r` `\n`, plus `:` and `,`), and
//! [`markdown_text`] makes a string inert in Markdown (the job summary): no
//! image, link, autolink or HTML from it.
//!
//! Hand-written: the rules are the point (which classes, shown how), and no
//! crate escapes for terminals, workflow commands and GitHub Markdown at
//! once.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown escaped (`keep_lines`: `\n` and `\t` stay).
fn hostile(c: char, keep_lines: bool) -> bool {
    match c {
        '\n' | '\t' => !keep_lines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// Whether `line` would be read as a workflow command (or holds a legacy
/// one), so [`defuse`] has work to do.
fn commandish(line: &str) -> bool {
    line.trim_start().starts_with("::") || line.contains("##[")
}

/// One line with its workflow-command starts defused.
fn defuse_line(line: &str, out: &mut String) {
    let blanks = line.len() - line.trim_start().len();
    out.push_str(&line[..blanks]);
    let rest = &line[blanks..];
    if rest.starts_with("::") {
        out.push('\\');
    }
    out.push_str(&rest.replace("##[", "#\\#["));
}

fn defuse(text: &str) -> Cow<'_, str> {
    if !text.split('\n').any(commandish) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        defuse_line(line, &mut out);
    }
    Cow::Owned(out)
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let shown = show_controls(s, keep_lines);
    let defused = match defuse(&shown) {
        Cow::Borrowed(_) => None,
        Cow::Owned(d) => Some(d),
    };
    defused.map_or(shown, Cow::Owned)
}

/// `s` with its hostile characters shown (no workflow-command defusing).
fn show_controls(s: &str, keep_lines: bool) -> Cow<'_, str> {
    if s.chars().any(|c| hostile(c, keep_lines)) {
        let mut out = String::with_capacity(s.len() + 16);
        for c in s.chars() {
            if hostile(c, keep_lines) {
                push_escaped(&mut out, c);
            } else {
                out.push(c);
            }
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// `s` as one inert line (see the module docs).
pub fn inline(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// `s` as inert text, its line breaks and tabs kept.
pub fn block(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// A line reel itself writes as a workflow command (`::warning:: …`,
/// `::notice:: …`, `::error file=…::…`): its own command prefix kept, the
/// rest — which names paths and recorded strings — made inert ([`block`]);
/// any other line wholly inert.
pub fn command_line(line: &str) -> Cow<'_, str> {
    let prefix = ["::warning", "::notice", "::error", "::debug"]
        .iter()
        .find(|p| line.starts_with(**p))
        .and_then(|p| {
            let after = &line[p.len()..];
            let end = after.find("::")?;
            // Properties (`file=…,title=…`) are escaped where they are made;
            // a line break in them would already be one here.
            (!after[..end].contains(['\n', '\r'])).then_some(p.len() + end + 2)
        });
    match prefix {
        Some(n) => match block(&line[n..]) {
            Cow::Borrowed(_) => Cow::Borrowed(line),
            Cow::Owned(rest) => Cow::Owned(format!("{}{rest}", &line[..n])),
        },
        None => block(line),
    }
}

/// The length of the SGR sequence (`ESC [ digits ; … m`) at the start of
/// `s`, when it is one and does not conceal (parameter 8).
fn sgr_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("\u{1b}[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    if !body[end..].starts_with('m') || body[..end].split(';').any(|p| p == "8") {
        return None;
    }
    Some(2 + end + 1)
}

/// A whole rendered report made inert for a terminal or a log; with
/// `color`, reel's own colour sequences kept (see the module docs).
pub fn for_terminal(s: &str, color: bool) -> Cow<'_, str> {
    if !color || !s.contains('\u{1b}') {
        return block(s);
    }
    let out = show_keeping_sgr(s, true);
    // Off a terminal the colours are dropped on the way out, so a line is
    // judged without them; one that would then read as a command loses its
    // colours and is defused.
    let mut checked = String::with_capacity(out.len());
    for (i, line) in out.split('\n').enumerate() {
        if i > 0 {
            checked.push('\n');
        }
        let plain = strip_sgr(line);
        if commandish(&plain) {
            defuse_line(&plain, &mut checked);
        } else {
            checked.push_str(line);
        }
    }
    Cow::Owned(checked)
}

/// `s` with its controls shown visibly, each ESC spelled `\\x1b` except
/// where it starts one of reel's own colour sequences and `keep_sgr` holds.
fn show_keeping_sgr(s: &str, keep_sgr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\u{1b}') {
        out.push_str(&show_controls(&rest[..at], true));
        match sgr_len(&rest[at..]).filter(|_| keep_sgr) {
            Some(n) => {
                out.push_str(&rest[at..at + n]);
                rest = &rest[at + n..];
            }
            None => {
                out.push_str("\\x1b");
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(&show_controls(rest, true));
    out
}

/// `s` without its SGR sequences.
fn strip_sgr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\u{1b}') {
        out.push_str(&rest[..at]);
        let n = sgr_len(&rest[at..]).unwrap_or(1);
        rest = &rest[at + n..];
    }
    out.push_str(rest);
    out
}

/// [`for_terminal`] without the workflow-command defusing: for a report
/// that carries reel's own commands (`::warning:: …` lines) and must stay
/// byte-compatible; controls are still shown, line breaks kept as they are.
pub fn for_terminal_keeping_commands(s: &str, color: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| hostile(c, true)) {
        return Cow::Borrowed(s);
    }
    let out = show_keeping_sgr(s, color);
    Cow::Owned(out)
}

/// A workflow command's message (`::error …::MESSAGE`): inert ([`block`]:
/// its line breaks kept for the annotation), then `%`, CR and LF
/// percent-encoded as the runner decodes them, so the command stays one
/// log line.
pub fn workflow_data(s: &str) -> String {
    block(s)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`file=…,title=…`): as
/// [`workflow_data`], plus `:` and `,`.
pub fn workflow_property(s: &str) -> String {
    workflow_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `s` as inert Markdown text for GitHub (one line, a table cell's
/// content): HTML shown as text, `|` escaped, and every character that
/// could start an image, a link or emphasis backslash-escaped; `://`,
/// `www.` and `@` broken with an entity so no autolink forms.
pub fn markdown_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in inline(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' | '[' | ']' | '(' | ')' | '!' | '*' | '_' | '`' | '~' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    // GitHub links bare URLs, `www.` hosts and email addresses; `&#46;` /
    // `&#58;` / `&#64;` render the same characters but start no autolink.
    out.replace("://", "&#58;//")
        .replace("www.", "www&#46;")
        .replace('@', "&#64;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_is_shown_visibly() {
        let s = "a\nb\rc\td\u{1b}]52;c;eA==\u{7}e\u{7f}f\u{85}g\u{202e}h\u{2066}i\u{200f}j";
        assert_eq!(
            inline(s),
            "a\\nb\\rc\\td\\x1b]52;c;eA==\\x07e\\x7ff\\u{85}g\\u{202e}h\\u{2066}i\\u{200f}j"
        );
        assert_eq!(block("a\n\tb\r"), "a\n\tb\\r");
        assert!(matches!(inline("plain café"), Cow::Borrowed(_)));
    }

    #[test]
    fn workflow_commands_are_defused_at_line_starts_and_legacy_anywhere() {
        assert_eq!(block("x\n  ::error ::boom\ny"), "x\n  \\::error ::boom\ny");
        assert_eq!(inline("out\n::add-mask::x"), "out\\n::add-mask::x");
        assert_eq!(inline("::stop-commands::t"), "\\::stop-commands::t");
        assert_eq!(block("a ##[error]b"), "a #\\#[error]b");
        assert_eq!(block("a::b"), "a::b");
    }

    #[test]
    fn colour_is_kept_only_as_sgr_and_never_concealed() {
        let s = "\u{1b}[32mok\u{1b}[0m \u{1b}]0;title\u{7} \u{1b}[8mhidden\u{1b}[2J";
        assert_eq!(
            for_terminal(s, true),
            "\u{1b}[32mok\u{1b}[0m \\x1b]0;title\\x07 \\x1b[8mhidden\\x1b[2J"
        );
        assert_eq!(for_terminal("\u{1b}[32mok", false), "\\x1b[32mok");
        assert_eq!(
            for_terminal("ok\n\u{1b}[1m::error\u{1b}[0m::x", true),
            "ok\n\\::error::x"
        );
    }

    #[test]
    fn reel_s_own_commands_keep_their_prefix_and_nothing_else_does() {
        assert_eq!(
            command_line("::warning:: [rerun] out/a\n::error::x\u{1b}"),
            "::warning:: [rerun] out/a\n\\::error::x\\x1b"
        );
        assert_eq!(
            command_line("::notice file=a%0A::b"),
            "::notice file=a%0A::b"
        );
        assert_eq!(command_line("::add-mask::x"), "\\::add-mask::x");
    }

    #[test]
    fn workflow_values_are_percent_encoded_after_escaping() {
        assert_eq!(workflow_data("a%b\nc\r\u{1b}"), "a%25b%0Ac\\r\\x1b");
        assert_eq!(workflow_property("f\n::error"), "f%0A\\%3A%3Aerror");
        assert_eq!(workflow_property("x:y,z"), "x%3Ay%2Cz");
    }

    #[test]
    fn markdown_has_no_image_link_autolink_or_html() {
        let m = markdown_text("![x](http://evil/p.png) <img src=x> www.evil.com a@b.c |");
        assert!(!m.contains("!["), "{m}");
        assert!(
            !m.contains("://") && !m.contains("www.") && !m.contains('@'),
            "{m}"
        );
        assert!(!m.contains('<') && m.contains("\\|"), "{m}");
    }
}
