//! Text rendering of a [`Diff`]. Colour is ANSI styling the caller's stream
//! strips when it is not a terminal (`anstream`); the words alone carry the
//! meaning (`+`, `-`, `~`, view headers), so the output reads without it.

use std::fmt::Write as _;

use owo_colors::OwoColorize;
use serde_json::Value;

use super::{Change, ChangeKind, Diff, ViewDiff};

/// Longest single value printed inline; longer ones are cut with a count.
const INLINE_MAX: usize = 400;

/// The whole diff as text.
pub fn diff_text(d: &Diff, color: bool) -> String {
    let mut s = String::new();
    let mode = if d.normalized {
        "normalised"
    } else {
        "raw values"
    };
    let _ = writeln!(s, "reel diff {} {} ({mode})", d.a.display(), d.b.display());
    for v in &d.views {
        view_text(&mut s, v, color);
    }
    let _ = writeln!(s, "{}", d.summary());
    // Both cassettes' strings are hostile: shown inert, reel's colours kept.
    crate::terminal_safe::for_terminal(&s, color).into_owned()
}

fn view_text(s: &mut String, v: &ViewDiff, color: bool) {
    let name = v.view.name();
    let head = if v.identical {
        format!("{name}: identical")
    } else {
        format!(
            "{name}: {} change{}{}",
            v.changes.len(),
            if v.changes.len() == 1 { "" } else { "s" },
            if v.advisory { " (advisory)" } else { "" }
        )
    };
    let _ = writeln!(s, "{}", paint(&head, color, Paint::Bold));
    // A multi-turn recording's changes are grouped under the user turn
    // they belong to (in order: a sequence view's items are); what belongs
    // to the whole session is `session`.
    let by_turn = v.changes.iter().any(|c| c.turn.is_some());
    let mut group = None;
    for (i, c) in v.changes.iter().enumerate() {
        if by_turn && (i == 0 || c.turn != group) {
            group = c.turn;
            let label = c.turn.map_or("session".to_owned(), |t| format!("turn {t}"));
            let _ = writeln!(s, " {}", paint(&label, color, Paint::Cyan));
        }
        change_text(s, c, color);
    }
}

fn change_text(s: &mut String, c: &Change, color: bool) {
    let (mark, p) = match c.kind {
        ChangeKind::Added => ("+", Paint::Green),
        ChangeKind::Removed => ("-", Paint::Red),
        ChangeKind::Changed => ("~", Paint::Yellow),
    };
    let what = match &c.path {
        Some(path) => format!("{} {}", c.item, path),
        None => c.item.clone(),
    };
    let what = crate::terminal_safe::inline(&what);
    let _ = writeln!(s, "  {} {what}", paint(mark, color, p));
    if let Some(u) = &c.unified {
        for line in u.lines() {
            let p = if line.starts_with("+++") || line.starts_with("---") {
                Paint::Bold
            } else if line.starts_with('+') {
                Paint::Green
            } else if line.starts_with('-') {
                Paint::Red
            } else if line.starts_with("@@") {
                Paint::Cyan
            } else {
                Paint::Plain
            };
            let _ = writeln!(s, "      {}", paint(line, color, p));
        }
        return;
    }
    if let Some(b) = &c.before {
        let _ = writeln!(
            s,
            "      {}",
            paint(&format!("- {}", inline(b)), color, Paint::Red)
        );
    }
    if let Some(a) = &c.after {
        let _ = writeln!(
            s,
            "      {}",
            paint(&format!("+ {}", inline(a)), color, Paint::Green)
        );
    }
}

/// A value on one line, cut past 400 characters.
pub fn inline(v: &Value) -> String {
    let text = serde_json::to_string(v).unwrap_or_default();
    cut(&text, INLINE_MAX)
}

/// `s` cut to `max` characters with a count of the rest.
pub fn cut(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({} more chars)", n - max)
}

#[derive(Clone, Copy)]
pub(crate) enum Paint {
    Plain,
    Bold,
    Red,
    Green,
    Yellow,
    Cyan,
}

pub(crate) fn paint(s: &str, color: bool, p: Paint) -> String {
    if !color {
        return s.to_owned();
    }
    match p {
        Paint::Plain => s.to_owned(),
        Paint::Bold => s.bold().to_string(),
        Paint::Red => s.red().to_string(),
        Paint::Green => s.green().to_string(),
        Paint::Yellow => s.yellow().to_string(),
        Paint::Cyan => s.cyan().to_string(),
    }
}
