//! GitHub Actions output, only when `GITHUB_ACTIONS=true`:
//!
//! - workflow commands for failing cassettes,
//!   `::error file=<cassette>,title=<scenario>::<message>`, one per
//!   `verdict.failures[]` entry (or per load error), on stderr (Actions reads
//!   workflow commands from both streams; stdout stays data-only);
//! - the job summary: a Markdown table of every cassette (verdict, failures,
//!   staleness) and the first failure's message, appended to the file
//!   `$GITHUB_STEP_SUMMARY` names ([`replay_summary`], [`verify_summary`],
//!   [`append_step_summary`]).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use crate::replay::ReplayResult;
use crate::shard::Shard;
use crate::verify::gate::CassetteResult;
use crate::verify::lifecycle::OrphanScenario;

/// True when running under GitHub Actions.
pub fn enabled() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

use crate::terminal_safe::{workflow_data as escape_data, workflow_property as escape_property};

/// The annotation lines for one result (empty when it passed).
pub fn annotations(r: &ReplayResult) -> Vec<String> {
    let file = escape_property(&r.file.display().to_string());
    if let Some(err) = &r.error {
        return vec![format!(
            "::error file={file},title=reel replay::{}",
            escape_data(err)
        )];
    }
    let title = escape_property(&format!("reel replay: {}", r.scenario()));
    r.verdict
        .failures
        .iter()
        .map(|f| {
            let what = f
                .assertion
                .as_deref()
                .map(|k| format!("{k}: "))
                .unwrap_or_default();
            format!(
                "::error file={file},title={title}::{}",
                escape_data(&format!("[{}] {what}{}", f.kind, f.message))
            )
        })
        .collect()
}

/// A table cell: one line of inert Markdown (no image, link, autolink or
/// HTML from a cassette; `|` escaped), so any message keeps the table
/// whole ([`crate::terminal_safe::markdown_text`]).
fn cell(s: &str) -> String {
    crate::terminal_safe::markdown_text(s)
}

/// A path as inline code (nothing in a code span is a link or HTML; only
/// `|` needs its escape in a table), its delimiter longer than any backtick
/// run inside; controls shown visibly.
fn code(s: &str) -> String {
    let s = crate::terminal_safe::inline(s).replace('|', "\\|");
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let tick = "`".repeat(longest + 1);
    let pad = if longest > 0 { " " } else { "" };
    format!("{tick}{pad}{s}{pad}{tick}")
}

/// A fenced block longer than any backtick run inside `text` (a fence's
/// content is never Markdown; its controls are shown visibly).
fn fenced(out: &mut String, text: &str) {
    let text = crate::terminal_safe::block(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{fence}text\n{text}\n{fence}");
}

fn heading(out: &mut String, command: &str, shard: Option<Shard>, counts: &str) {
    let shard = shard.map(|s| format!(" (shard {s})")).unwrap_or_default();
    let _ = writeln!(out, "### reel {command}{shard}: {counts}\n");
}

/// A heading's counts: `lead`, then the files that could not be checked
/// (`could_not`: count and wording) and the stale ones when there are any,
/// then the total.
fn counts(lead: String, could_not: (usize, &str), stale: usize, total: usize) -> String {
    let mut counts = lead;
    if could_not.0 > 0 {
        let _ = write!(counts, ", {} {}", could_not.0, could_not.1);
    }
    if stale > 0 {
        let _ = write!(counts, ", {stale} stale");
    }
    let _ = write!(counts, " of {total} cassette(s)");
    counts
}

/// The parts joined, or a dash for none (an empty cell reads as missing).
fn or_dash(parts: &[String], separator: &str) -> String {
    if parts.is_empty() {
        "—".to_owned()
    } else {
        parts.join(separator)
    }
}

/// The closing block: the first failure's file and message, in full.
fn first_failure(out: &mut String, first: Option<(String, String)>) {
    if let Some((file, message)) = first {
        let _ = writeln!(out, "\n**First failure** — {}:\n", code(&file));
        fenced(out, &message);
    }
}

/// The job summary of a `replay` batch.
pub fn replay_summary(results: &[ReplayResult], shard: Option<Shard>) -> String {
    let mut out = String::new();
    let failed = results
        .iter()
        .filter(|r| r.error.is_none() && !r.verdict.pass)
        .count();
    let errors = results.iter().filter(|r| r.error.is_some()).count();
    let stale = results
        .iter()
        .filter(|r| !r.staleness.findings.is_empty())
        .count();
    let passed = results.len() - failed - errors;
    let counts = counts(
        format!("{passed} passed, {failed} failed"),
        (errors, "could not be replayed"),
        stale,
        results.len(),
    );
    heading(&mut out, "replay", shard, &counts);
    if results.is_empty() {
        out.push_str("No cassette to replay.\n");
        return out;
    }
    out.push_str(
        "| | cassette | scenario | verdict | failures | stale |\n|---|---|---|---|---|---|\n",
    );
    for r in results {
        out.push_str(&replay_row(r));
    }
    first_failure(&mut out, results.iter().find_map(replay_failure));
    out
}

/// One cassette's row of the replay table.
fn replay_row(r: &ReplayResult) -> String {
    let (mark, verdict, failures) = match &r.error {
        Some(_) => ("⚠️", "error", 1),
        None if r.verdict.pass => ("✅", "pass", r.verdict.failures.len()),
        None => ("❌", "FAIL", r.verdict.failures.len()),
    };
    let stale: Vec<String> = r
        .staleness
        .findings
        .iter()
        .map(|f| {
            serde_json::to_value(f.class)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        })
        .collect();
    format!(
        "| {mark} | {} | {} | {verdict} | {failures} | {} |\n",
        code(&r.file.display().to_string()),
        cell(r.scenario()),
        cell(&or_dash(&stale, ", "))
    )
}

/// A cassette's first failure (its load error, else its first failing
/// assertion) with its file; `None` when it passed.
fn replay_failure(r: &ReplayResult) -> Option<(String, String)> {
    let message = match &r.error {
        Some(e) => e.clone(),
        None => {
            let f = r.verdict.failures.first()?;
            let what = f
                .assertion
                .as_deref()
                .map(|k| format!("{k}: "))
                .unwrap_or_default();
            format!("[{}] {what}{}", f.kind, f.message)
        }
    };
    Some((r.file.display().to_string(), message))
}

/// The job summary of a `verify-cassettes` batch.
pub fn verify_summary(
    results: &[CassetteResult],
    orphan_scenarios: &[OrphanScenario],
    shard: Option<Shard>,
) -> String {
    let mut out = String::new();
    let failing = results.iter().filter(|r| r.has_finding()).count();
    let unverified = results
        .iter()
        .filter(|r| !r.has_finding() && r.has_unverifiable())
        .count();
    let stale = results.iter().filter(|r| !r.staleness.is_empty()).count();
    let clean = results.len() - failing - unverified;
    let mut counts = counts(
        format!("{clean} clean, {failing} with findings"),
        (unverified, "could not be verified"),
        stale,
        results.len(),
    );
    if !orphan_scenarios.is_empty() {
        let _ = write!(counts, "; {} orphan scenario(s)", orphan_scenarios.len());
    }
    heading(&mut out, "verify-cassettes", shard, &counts);
    if !results.is_empty() {
        out.push_str("| | cassette | verdict | findings | stale |\n|---|---|---|---|---|\n");
    }
    for r in results {
        out.push_str(&verify_row(r));
    }
    // The first cassette that fails or cannot be verified, at its first
    // class with a message; else the first orphan scenario.
    let mut first = results
        .iter()
        .filter(|r| r.has_finding() || r.has_unverifiable())
        .find_map(|r| {
            let (class, messages) = problem_classes(r)
                .into_iter()
                .find(|(_, messages)| !messages.is_empty())?;
            Some((r.file.clone(), format!("[{class}] {}", messages[0])))
        });
    if !orphan_scenarios.is_empty() {
        out.push_str("\n| | orphan scenario | message |\n|---|---|---|\n");
        for o in orphan_scenarios {
            let _ = writeln!(out, "| ❌ | {} | {} |", code(&o.scenario), cell(&o.message));
        }
        if first.is_none() {
            first = orphan_scenarios
                .first()
                .map(|o| (o.scenario.clone(), format!("[orphan] {}", o.message)));
        }
    }
    first_failure(&mut out, first);
    out
}

/// Each class of problem of one cassette with its messages, in the text
/// report's order.
fn problem_classes(r: &CassetteResult) -> [(&'static str, Vec<String>); 8] {
    [
        ("error", r.error.iter().cloned().collect()),
        (
            "privacy",
            r.findings
                .iter()
                .filter(|f| f.is_real())
                .map(|f| format!("[{}] {} — {}", f.cls.as_str(), f.location, f.sample))
                .collect(),
        ),
        ("stale", r.staleness.clone()),
        ("unverifiable", r.unverifiable.clone()),
        ("scenario-drift", r.scenario_drift.clone()),
        ("version", r.version.clone()),
        ("max-age", r.age.clone()),
        ("orphan", r.orphan.clone()),
    ]
}

/// One cassette's row of the verify-cassettes table: each class with its
/// count.
fn verify_row(r: &CassetteResult) -> String {
    let (mark, verdict) = if r.has_finding() {
        ("❌", "finding")
    } else if r.has_unverifiable() {
        ("⚠️", "could not verify")
    } else {
        ("✅", "clean")
    };
    let parts: Vec<String> = problem_classes(r)
        .iter()
        .filter(|(_, messages)| !messages.is_empty())
        .map(|(class, messages)| format!("{class} {}", messages.len()))
        .collect();
    let stale = if r.staleness.is_empty() { "—" } else { "yes" };
    format!(
        "| {mark} | {} | {verdict} | {} | {stale} |\n",
        code(&r.file),
        cell(&or_dash(&parts, " · "))
    )
}

/// Under `GITHUB_ACTIONS=true`, appends `markdown` to the job summary; the
/// warning to print when that failed (a summary never fails the run).
pub fn write_summary_if_enabled(markdown: impl FnOnce() -> String) -> Option<String> {
    if !enabled() {
        return None;
    }
    match append_step_summary(&markdown()) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "::warning:: [reel] could not append the job summary to $GITHUB_STEP_SUMMARY: {e}"
        )),
    }
}

/// Appends `markdown` to the job summary file `$GITHUB_STEP_SUMMARY` (a
/// blank line first, so summaries of several steps stay apart). `Ok(None)`
/// when the variable is unset or empty.
///
/// An append, not [`crate::atomic::write_atomic`]: the runner owns the file
/// and collects what every step appends; replacing it would drop the other
/// steps' summaries. One `write_all` on an `O_APPEND` handle keeps the block
/// whole.
pub fn append_step_summary(markdown: &str) -> std::io::Result<Option<std::path::PathBuf>> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let path = Path::new(&path).to_path_buf();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    f.write_all(format!("\n{markdown}").as_bytes())?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replayed(files: &[&str]) -> Vec<ReplayResult> {
        let opts = crate::replay::ReplayOptions {
            lean: true,
            ..Default::default()
        };
        files
            .iter()
            .map(|f| crate::replay::replay_file(Path::new(f), &opts))
            .collect()
    }

    #[test]
    fn replay_summary_of_a_mixed_batch() {
        let mut results = replayed(&[
            "cassettes/write-note.cassette.json",
            "cassettes/red/unexpected-file.cassette.json",
            "cassettes/red/wrong-answer.cassette.json",
            "cassettes/missing|odd.cassette.json",
        ]);
        // A stale cassette (drift is what the project's skills decide; pin it).
        results[0]
            .staleness
            .findings
            .push(crate::fingerprint::staleness::Finding {
                class: crate::fingerprint::staleness::FindingClass::Skill,
                message: "skill drift".into(),
            });
        insta::assert_snapshot!(replay_summary(&results, Shard::new(2, 3).ok()));
    }

    #[test]
    fn verify_summary_with_findings_and_orphans() {
        let results = vec![
            CassetteResult {
                file: "cassettes/a.cassette.json".into(),
                privacy_scanned: true,
                ..Default::default()
            },
            CassetteResult {
                file: "cassettes/b.cassette.json".into(),
                staleness: vec!["skill note-style changed since record — re-record".into()],
                age: vec![
                    "recorded 2020-01-01T00:00:00.000Z (2000 days ago), older than --max-age 90d"
                        .into(),
                ],
                privacy_scanned: true,
                ..Default::default()
            },
            CassetteResult {
                file: "cassettes/c.cassette.json".into(),
                unverifiable: vec!["skill dir <gone> | unresolvable".into()],
                ..Default::default()
            },
        ];
        let orphans = vec![OrphanScenario {
            scenario: "scenarios/new.yaml".into(),
            message: "no cassette records this scenario".into(),
        }];
        insta::assert_snapshot!(verify_summary(&results, &orphans, None));
        insta::assert_snapshot!(
            "verify_summary_clean",
            verify_summary(&results[..1], &[], None)
        );
    }

    #[test]
    fn cells_cannot_break_the_table_and_fences_outgrow_the_text() {
        assert_eq!(cell("a|b\nc<d>"), "a\\|b\\\\nc&lt;d&gt;");
        assert_eq!(code("x|y"), "`x\\|y`");
        assert_eq!(code("a`b"), "`` a`b ``");
        let mut out = String::new();
        fenced(&mut out, "has ``` inside");
        assert!(out.starts_with("````text\n"), "{out}");
    }

    #[test]
    fn the_summary_is_appended_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("summary.md");
        std::fs::write(&f, "earlier step\n").unwrap();
        // SAFETY: this is the only test that sets the variable.
        unsafe { std::env::set_var("GITHUB_STEP_SUMMARY", &f) };
        let written = append_step_summary("### reel\n").unwrap();
        // SAFETY: as above.
        unsafe { std::env::remove_var("GITHUB_STEP_SUMMARY") };
        assert_eq!(written.as_deref(), Some(f.as_path()));
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "earlier step\n\n### reel\n"
        );
    }

    #[test]
    fn messages_and_properties_are_escaped() {
        assert_eq!(escape_data("a%b\nc\r"), "a%25b%0Ac\\r");
        assert_eq!(escape_property("x:y,z"), "x%3Ay%2Cz");
    }
}
