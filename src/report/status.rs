//! The status reporter: one line per file, its failures and warnings listed
//! under it, and a closing tally — what `replay`, `verify-cassettes`,
//! `rehash` (and `rerun`) print on stderr by default.
//!
//! ```text
//! PASS cassettes/write-note.cassette.json  5/5 assertions  3 ms
//! FAIL cassettes/red/wrong-answer.cassette.json  1/2 assertions  2 ms
//!     fail: transcript_contains: transcript missing "Billing"
//! 1 passed, 1 failed
//! ```
//!
//! Meaning never rides on colour alone: every line carries its word
//! (`PASS`, `fail:`, `warn:`); colour is added only when asked for (the CLI
//! writes through `anstream`, which drops it off a terminal or under
//! `NO_COLOR`).

use std::fmt::Write as _;
use std::time::Duration;

use owo_colors::OwoColorize;

use super::outcome::{FileOutcome, Level, Status};

/// Counts of a finished batch, by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub stale: usize,
    pub errors: usize,
    pub skipped: usize,
}

impl Tally {
    pub fn of(outcomes: &[FileOutcome]) -> Tally {
        let mut t = Tally::default();
        for o in outcomes {
            t.add(o.status);
        }
        t
    }

    pub fn add(&mut self, status: Status) {
        match status {
            Status::Pass => self.passed += 1,
            Status::Fail => self.failed += 1,
            Status::Stale => self.stale += 1,
            Status::Error => self.errors += 1,
            Status::Skip => self.skipped += 1,
        }
    }

    /// `N passed, N failed` then `, N stale`, `, N errors`, `, N skipped`
    /// when non-zero.
    pub fn line(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed, self.failed);
        if self.stale > 0 {
            let _ = write!(s, ", {} stale", self.stale);
        }
        if self.errors > 0 {
            let _ = write!(
                s,
                ", {} {}",
                self.errors,
                if self.errors == 1 { "error" } else { "errors" }
            );
        }
        if self.skipped > 0 {
            let _ = write!(s, ", {} skipped", self.skipped);
        }
        s
    }
}

/// `3 ms`, `1.25 s`.
pub fn format_elapsed(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

fn paint_status(status: Status, color: bool) -> String {
    let label = status.label();
    if !color {
        return label.to_string();
    }
    match status {
        Status::Pass => label.green().bold().to_string(),
        Status::Fail | Status::Error => label.red().bold().to_string(),
        Status::Stale => label.yellow().bold().to_string(),
        Status::Skip => label.dimmed().to_string(),
    }
}

fn paint_level(level: Level, color: bool) -> String {
    let label = format!("{}:", level.label());
    if !color {
        return label;
    }
    match level {
        Level::Fail => label.red().to_string(),
        Level::Warn => label.yellow().to_string(),
        Level::Note => label.dimmed().to_string(),
    }
}

/// Indent of the lines under a file.
const INDENT: &str = "    ";

/// The status line of one file and the items under it (lines end in `\n`).
pub fn render_file(o: &FileOutcome, color: bool) -> String {
    use crate::terminal_safe::{block, inline};
    let mut out = String::new();
    let _ = write!(out, "{} {}", paint_status(o.status, color), inline(&o.file));
    if !o.detail.is_empty() {
        let _ = write!(out, "  {}", inline(&o.detail));
    }
    if let Some(d) = o.elapsed {
        let t = format_elapsed(d);
        if color {
            let _ = write!(out, "  {}", t.dimmed());
        } else {
            let _ = write!(out, "  {t}");
        }
    }
    out.push('\n');
    for item in &o.items {
        // A multi-line message keeps its shape, indented under the file;
        // what it holds is shown inert (controls visible, no line read as
        // a workflow command).
        let text = block(&item.text);
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        let _ = writeln!(out, "{INDENT}{} {first}", paint_level(item.level, color));
        for l in lines {
            let _ = writeln!(out, "{INDENT}  {l}");
        }
    }
    out
}

/// The closing line of a batch.
pub fn render_tally(t: &Tally, color: bool) -> String {
    let line = t.line();
    if !color {
        return format!("{line}\n");
    }
    let painted = if t.failed + t.errors + t.stale > 0 {
        line.red().bold().to_string()
    } else {
        line.green().bold().to_string()
    };
    format!("{painted}\n")
}

/// A whole batch: every file, then the tally.
pub fn render(outcomes: &[FileOutcome], color: bool) -> String {
    let mut out: String = outcomes.iter().map(|o| render_file(o, color)).collect();
    out.push_str(&render_tally(&Tally::of(outcomes), color));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<FileOutcome> {
        let pass = FileOutcome::new("a.cassette.json", Status::Pass, "5/5 assertions")
            .with_elapsed(Duration::from_millis(3));
        let mut fail = FileOutcome::new("b.cassette.json", Status::Fail, "1/2 assertions")
            .with_elapsed(Duration::from_millis(1250));
        fail.push(Level::Fail, "transcript_contains: transcript missing \"x\"");
        fail.push(Level::Warn, "two\nlines");
        let mut err = FileOutcome::new("c.cassette.json", Status::Error, "could not replay");
        err.push(Level::Fail, "unreadable");
        vec![pass, fail, err]
    }

    #[test]
    fn renders_one_line_per_file_and_a_tally() {
        insta::assert_snapshot!(render(&sample(), false), @r#"
        PASS a.cassette.json  5/5 assertions  3 ms
        FAIL b.cassette.json  1/2 assertions  1.25 s
            fail: transcript_contains: transcript missing "x"
            warn: two
              lines
        ERROR c.cassette.json  could not replay
            fail: unreadable
        1 passed, 1 failed, 1 error
        "#);
    }

    #[test]
    fn the_tally_names_only_non_zero_extras() {
        let mut t = Tally::default();
        assert_eq!(t.line(), "0 passed, 0 failed");
        t.add(Status::Pass);
        t.add(Status::Stale);
        t.add(Status::Skip);
        t.add(Status::Error);
        t.add(Status::Error);
        assert_eq!(t.line(), "1 passed, 0 failed, 1 stale, 2 errors, 1 skipped");
    }

    #[test]
    fn colour_is_added_only_when_asked_and_words_stay() {
        let plain = render(&sample(), false);
        assert!(!plain.contains('\x1b'));
        let coloured = render(&sample(), true);
        assert!(coloured.contains('\x1b'));
        assert_eq!(anstream::adapter::strip_str(&coloured).to_string(), plain);
    }
}
