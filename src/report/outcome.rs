//! The per-file outcome every batch command reports through the status
//! reporter ([`super::status`]): what happened to one file, in words a user
//! would say (`PASS`, `FAIL`, `STALE`, `ERROR`, `SKIP`), a short detail
//! (`5/5 assertions`), how long it took, and the failures / warnings / notes
//! that belong to it.
//!
//! Each command builds its outcomes from its own results (the `from_*`
//! functions below; `rerun` builds its own); nothing here judges anything —
//! the status is read off a verdict the command already formed.

use std::time::Duration;

use crate::rehash::{Action, RehashRow, RehashSummary};
use crate::replay::ReplayResult;
use crate::verify::gate::CassetteResult;

/// What happened to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Checked and green.
    Pass,
    /// Checked and red: an assertion, a privacy finding, a refused proof.
    Fail,
    /// Red only because the recording no longer matches its sources.
    Stale,
    /// Could not be checked at all (unreadable, unverifiable).
    Error,
    /// Nothing to do for this file.
    Skip,
}

impl Status {
    /// The word on the status line.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Stale => "STALE",
            Status::Error => "ERROR",
            Status::Skip => "SKIP",
        }
    }
}

/// How much a line under a file matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Why the file is red.
    Fail,
    /// Worth reading; did not change the status.
    Warn,
    /// Informational.
    Note,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Fail => "fail",
            Level::Warn => "warn",
            Level::Note => "note",
        }
    }
}

/// One line listed under its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub level: Level,
    pub text: String,
}

impl Item {
    pub fn new(level: Level, text: impl Into<String>) -> Item {
        Item {
            level,
            text: text.into(),
        }
    }
}

/// The outcome of one file of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOutcome {
    /// The file as the user named it (or as listed from their directory).
    pub file: String,
    pub status: Status,
    /// A short summary after the file name (`5/5 assertions`, `clean`).
    pub detail: String,
    /// Wall time spent on this file, when measured.
    pub elapsed: Option<Duration>,
    /// Failures, warnings and notes, in the order they should be read.
    pub items: Vec<Item>,
}

impl FileOutcome {
    pub fn new(file: impl Into<String>, status: Status, detail: impl Into<String>) -> FileOutcome {
        FileOutcome {
            file: file.into(),
            status,
            detail: detail.into(),
            elapsed: None,
            items: Vec::new(),
        }
    }

    pub fn with_elapsed(mut self, elapsed: Duration) -> FileOutcome {
        self.elapsed = Some(elapsed);
        self
    }

    pub fn push(&mut self, level: Level, text: impl Into<String>) {
        self.items.push(Item::new(level, text));
    }
}

/// Splits a GitHub-style `::warning:: [replay] text` line into its level and
/// text (`::error`/`::warning`/`::notice`; anything else is a note).
pub fn annotation_item(line: &str) -> Item {
    let (level, rest) = if let Some(r) = line.strip_prefix("::warning::") {
        (Level::Warn, r)
    } else if let Some(r) = line.strip_prefix("::notice::") {
        (Level::Note, r)
    } else if let Some(r) = line.strip_prefix("::error") {
        // `::error file=...::text` or `::error::text`.
        (Level::Fail, r.split_once("::").map_or(r, |(_, t)| t))
    } else {
        (Level::Note, line)
    };
    let rest = rest.trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(r) => r.split_once("] ").map_or(rest, |(_, t)| t),
        None => rest,
    };
    Item::new(level, rest)
}

/// Appends annotation lines as items; an indented line continues the item
/// before it (a multi-line report such as `--mutate`'s).
fn push_annotations<'a>(out: &mut FileOutcome, lines: impl IntoIterator<Item = &'a String>) {
    for line in lines {
        match out.items.last_mut() {
            Some(last) if line.starts_with(' ') => {
                last.text.push('\n');
                last.text.push_str(line.trim_start());
            }
            _ => out.items.push(annotation_item(line)),
        }
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The outcome of one replayed cassette.
pub fn from_replay(r: &ReplayResult, elapsed: Option<Duration>) -> FileOutcome {
    let file = r.file.display().to_string();
    let mut out = match &r.error {
        Some(e) => {
            let mut o = FileOutcome::new(file, Status::Error, "could not replay");
            push_annotations(&mut o, &r.notices);
            o.push(Level::Fail, e.clone());
            o.elapsed = elapsed;
            return o;
        }
        None => {
            let authored: Vec<_> = (r.assertions.iter())
                .filter(|a| crate::replay::turns::is_authored(a))
                .collect();
            let passed = authored.iter().filter(|a| a.pass).count();
            let mut detail = format!(
                "{passed}/{}",
                plural(authored.len(), "assertion", "assertions")
            );
            let skipped = r.skipped.full + r.skipped.partial;
            if skipped > 0 {
                detail.push_str(&format!(", {skipped} skipped"));
            }
            if let Some(per_turn) = crate::replay::turns::tally_line(&r.assertions) {
                detail.push_str(&format!(" ({per_turn})"));
            }
            let status = if r.verdict.pass {
                Status::Pass
            } else if !r.verdict.failures.is_empty()
                && r.verdict.failures.iter().all(|f| f.kind == "staleness")
            {
                Status::Stale
            } else {
                Status::Fail
            };
            FileOutcome::new(file, status, detail)
        }
    };
    out.elapsed = elapsed;
    for text in r.failure_lines() {
        out.push(Level::Fail, text);
    }
    if !r.verdict.pass && r.verdict.failures.is_empty() {
        // A red verdict with no failing item: the fail signals say why.
        for s in &r.verdict.signals {
            if s.severity == crate::replay::verdict::Severity::Fail {
                out.push(Level::Fail, s.message.clone());
            }
        }
    }
    // A warning that only restates a failure (`cassette stale: X` beside
    // `cassette stale (--strict): X`) is said once, as the failure.
    let fails: Vec<String> = out
        .items
        .iter()
        .map(|i| i.text.replace(" (--strict)", ""))
        .collect();
    let notices: Vec<&String> = r
        .notices
        .iter()
        .filter(|n| !fails.contains(&annotation_item(n).text))
        .collect();
    push_annotations(&mut out, notices);
    push_annotations(&mut out, &r.after);
    // The scenario's numbers, beside the verdict.
    if let Some(line) = super::text::metrics_line(r) {
        out.push(Level::Note, line);
    }
    out
}

/// The outcome of one verified cassette.
pub fn from_verify(r: &CassetteResult) -> FileOutcome {
    let status = verify_status(r);
    let detail = match status {
        Status::Pass => "clean".to_string(),
        Status::Error => "could not verify".to_string(),
        _ => verify_problems(r).join(", "),
    };
    let mut out = FileOutcome::new(r.file.clone(), status, detail);
    if let Some(e) = &r.error {
        out.push(Level::Fail, e.clone());
    }
    for v in &r.version {
        out.push(Level::Fail, v.clone());
    }
    for u in &r.unverifiable {
        out.push(Level::Fail, format!("unverifiable: {u}"));
    }
    for x in r.findings.iter().filter(|x| x.is_real()) {
        out.push(Level::Fail, finding_text(x));
    }
    let labelled: [(&str, &[String]); 6] = [
        ("stale", &r.staleness),
        ("scenario drift", &r.scenario_drift),
        ("max-age", &r.age),
        ("orphan", &r.orphan),
        ("snapshot", &r.snapshots),
        ("pending review", &r.pending_review),
    ];
    for (label, lines) in labelled {
        for s in lines {
            out.push(Level::Fail, format!("{label}: {s}"));
        }
    }
    for x in r.findings.iter().filter(|x| !x.is_real()) {
        out.push(Level::Note, finding_text(x));
    }
    for n in &r.notes {
        out.push(Level::Note, n.clone());
    }
    out
}

/// A verified cassette's status: unverifiable is an error; a privacy
/// finding, an orphan, a pending review or a snapshot problem fails; drift
/// alone is stale.
fn verify_status(r: &CassetteResult) -> Status {
    if r.has_unverifiable() {
        Status::Error
    } else if r.real_findings() > 0
        || !r.orphan.is_empty()
        || !r.pending_review.is_empty()
        || !r.snapshots.is_empty()
    {
        Status::Fail
    } else if r.has_finding() {
        Status::Stale
    } else {
        Status::Pass
    }
}

/// The kinds of problem a verified cassette has, for its one-line detail.
fn verify_problems(r: &CassetteResult) -> Vec<String> {
    let mut parts = Vec::new();
    if r.real_findings() > 0 {
        parts.push(plural(
            r.real_findings(),
            "privacy finding",
            "privacy findings",
        ));
    }
    let kinds: [(&[String], &str); 6] = [
        (&r.staleness, "recording out of date"),
        (&r.scenario_drift, "scenario drift"),
        (&r.age, "older than --max-age"),
        (&r.orphan, "its scenario is gone"),
        (&r.pending_review, "an unreviewed re-recording is pending"),
        (&r.snapshots, "a snapshot is missing or changed"),
    ];
    parts.extend(
        kinds
            .iter()
            .filter(|(lines, _)| !lines.is_empty())
            .map(|(_, kind)| (*kind).to_string()),
    );
    parts
}

/// A `--orphans` scenario that no cassette records.
pub fn from_orphan_scenario(o: &crate::verify::lifecycle::OrphanScenario) -> FileOutcome {
    let mut out = FileOutcome::new(o.scenario.clone(), Status::Fail, "no cassette records it");
    out.push(Level::Fail, format!("orphan: {}", o.message));
    out
}

/// A finding as the reports write it: `[class kind] location field — sample`.
pub(crate) fn finding_text(x: &crate::verify::scan::Finding) -> String {
    let kind = if x.kind != x.cls.as_str() {
        format!(" {}", x.kind)
    } else {
        String::new()
    };
    let field = x
        .field
        .as_deref()
        .map(|p| format!(" {p}"))
        .unwrap_or_default();
    format!(
        "[{}{kind}] {}{field} — {}{}{}",
        x.cls.as_str(),
        x.location,
        x.sample,
        repeats(x),
        waived(x)
    )
}

/// Why an informational finding is not counted: ` — published by the skill
/// (skills/acme/SKILL.md), not counted` for text the skill tree itself
/// holds, ` — the session's own MCP server (declared by mcp.json), not
/// counted` for a server's name, ` — returned by the session's MCP server
/// `prices`, not counted` for its figure; empty otherwise.
pub fn waived(x: &crate::verify::scan::Finding) -> String {
    use crate::verify::own_mcp::OwnMcpRole;
    if let Some(p) = &x.published_by {
        return format!(" — published by the skill ({p}), not counted");
    }
    match &x.own_mcp {
        Some(m) if m.role == OwnMcpRole::Name => format!(
            " — the session's own MCP server (declared by {}), not counted",
            m.declared_by
        ),
        Some(m) => format!(
            " — returned by the session's MCP server `{}`, not counted",
            m.server
        ),
        None => String::new(),
    }
}

/// ` (found 8 times: events[3], events[5], … and 3 more)` for a finding
/// [`crate::verify::scan::dedup`] merged; empty for a single one.
pub fn repeats(x: &crate::verify::scan::Finding) -> String {
    const SHOWN: usize = 4;
    if x.count < 2 {
        return String::new();
    }
    let places = x.locations.len();
    let mut s = if places < x.count {
        format!(
            " (found {} times in {}: ",
            x.count,
            plural(places, "place", "places")
        )
    } else {
        format!(" (found {} times: ", x.count)
    };
    s.push_str(&x.locations[..x.locations.len().min(SHOWN)].join(", "));
    if x.locations.len() > SHOWN {
        s.push_str(&format!(" and {} more", x.locations.len() - SHOWN));
    }
    s.push(')');
    s
}

/// The outcome of one cassette of a rehash run.
pub fn from_rehash(row: &RehashRow, dry_run: bool) -> FileOutcome {
    let (status, detail) = match row.action {
        Action::Migrated if dry_run => (Status::Pass, format!("would migrate: {}", row.reason)),
        Action::Migrated => (Status::Pass, format!("migrated: {}", row.reason)),
        Action::Skipped => (Status::Skip, row.reason.clone()),
        Action::Error => (Status::Fail, "could not migrate".to_string()),
    };
    let mut out = FileOutcome::new(row.file.clone(), status, detail);
    if row.action == Action::Error {
        out.push(Level::Fail, row.reason.clone());
    }
    out
}

/// Every row of a rehash run.
pub fn from_rehash_summary(s: &RehashSummary) -> Vec<FileOutcome> {
    s.results
        .iter()
        .map(|r| from_rehash(r, s.dry_run))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotation_lines_become_items() {
        assert_eq!(
            annotation_item("::warning:: [replay] cassette has no controlOut"),
            Item::new(Level::Warn, "cassette has no controlOut")
        );
        assert_eq!(
            annotation_item("::notice:: [replay] 2/8 cassette(s) — x [kind]"),
            Item::new(Level::Note, "2/8 cassette(s) — x [kind]")
        );
        assert_eq!(
            annotation_item("::error file=a.json::boom"),
            Item::new(Level::Fail, "boom")
        );
        assert_eq!(
            annotation_item("replay --write: persisted"),
            Item::new(Level::Note, "replay --write: persisted")
        );
    }
}
