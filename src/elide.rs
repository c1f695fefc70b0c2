//! Long text shortened for a person by keeping its head and its tail and
//! eliding the middle: the cause of a failure (a traceback's last line, a
//! compiler's summary) is at the end, its context at the start.
//!
//! Also a text's last line (`last_line`), for one-line causes.

/// Share of the budget given to the head; the tail gets the rest.
const HEAD_SHARE: usize = 3;

/// `text` unchanged when it is at most `max` bytes; else its first lines and
/// its last lines (about a third and two thirds of `max`) around one
/// `… N lines elided …` line. A text without line breaks is cut inside
/// lines (`… N bytes elided …`), on character boundaries.
pub fn head_tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let head_budget = max / HEAD_SHARE;
    let tail_budget = max - head_budget;
    let head_end = floor_boundary(text, head_budget);
    let tail_start = ceil_boundary(text, text.len() - tail_budget);
    // Prefer whole lines when the cut falls inside a multi-line text.
    let line_head = text[..head_end].rfind('\n').map(|i| i + 1);
    let line_tail = text[tail_start..].find('\n').map(|i| tail_start + i + 1);
    match (line_head, line_tail) {
        (Some(h), Some(t)) if t < text.len() && h <= t => {
            let elided = text[h..t].lines().count();
            format!("{}… {elided} line(s) elided …\n{}", &text[..h], &text[t..])
        }
        _ => format!(
            "{} … {} bytes elided … {}",
            &text[..head_end],
            tail_start - head_end,
            &text[tail_start..]
        ),
    }
}

/// Whether `line` is the `… N line(s) elided …` line [`head_tail`] or
/// [`head_tail_lines`] puts in place of a text's middle: a note about the
/// shortening, never content (a diff must not show it as a changed line).
pub fn is_marker(line: &str) -> bool {
    line.strip_prefix("… ")
        .and_then(|r| r.strip_suffix(" line(s) elided …"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A list of lines shortened the same way: at most `max` of them, the first
/// third and the last two thirds around one `… N more line(s) …` line.
pub fn head_tail_lines(lines: Vec<String>, max: usize) -> Vec<String> {
    if lines.len() <= max {
        return lines;
    }
    let head = max / HEAD_SHARE;
    let tail = max - head;
    let elided = lines.len() - head - tail;
    let mut out: Vec<String> = lines[..head].to_vec();
    out.push(format!("… {elided} line(s) elided …"));
    out.extend_from_slice(&lines[lines.len() - tail..]);
    out
}

/// The last non-empty line of `text`, trimmed (the line a traceback, a
/// shell error or a compiler ends on).
pub fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(head_tail("abc\ndef", 100), "abc\ndef");
    }

    #[test]
    fn a_traceback_keeps_its_first_and_last_lines() {
        let mut t = String::from("Traceback (most recent call last):\n");
        for i in 0..200 {
            t.push_str(&format!("  File \"fill.py\", line {i}, in step\n"));
        }
        t.push_str("KeyError: 'field_id'");
        let out = head_tail(&t, 400);
        assert!(out.starts_with("Traceback (most recent call last):\n"));
        assert!(out.ends_with("KeyError: 'field_id'"));
        assert!(out.contains("line(s) elided …"));
        assert!(out.len() < 500, "{}", out.len());
    }

    #[test]
    fn one_long_line_is_cut_on_character_boundaries() {
        let t = "é".repeat(500);
        let out = head_tail(&t, 101);
        assert!(out.contains("bytes elided"));
        assert!(out.starts_with('é') && out.ends_with('é'));
    }

    #[test]
    fn lines_keep_head_and_tail() {
        let lines: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let out = head_tail_lines(lines, 9);
        assert_eq!(out.first().unwrap(), "0");
        assert_eq!(out.last().unwrap(), "99");
        assert_eq!(out[3], "… 91 line(s) elided …");
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn last_line_skips_trailing_blanks() {
        assert_eq!(last_line("a\nKeyError: 'x'\n\n  \n"), Some("KeyError: 'x'"));
        assert_eq!(last_line(" \n"), None);
    }
}
