//! Rendering of a `verify-cassettes` run: the human text report (stderr) and
//! the JSON envelope (stdout, schema `schema/verify-cassettes.json`).
//!
//! Wording follows cowork-harness so logs read the same; nothing here
//! decides a verdict (that is [`crate::verify::gate`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::exit::ExitStatus;
use crate::js::number;
use crate::verify::gate::{CassetteResult, batch_status};
use crate::verify::lifecycle::OrphanScenario;
use crate::verify::margins::CassetteMargins;

/// Which checks ran (`coverage` in JSON).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub privacy: bool,
    pub staleness: bool,
    pub scenario_drift: bool,
}

/// The JSON envelope.
#[derive(Debug, Serialize)]
pub struct Envelope<'a> {
    pub tool: &'static str,
    pub version: &'static str,
    pub command: &'static str,
    pub ok: bool,
    pub coverage: Coverage,
    pub results: &'a [CassetteResult],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub margins: Option<&'a [CassetteMargins]>,
    /// `--orphans` only: scenarios no checked cassette records.
    #[serde(rename = "orphanScenarios", skip_serializing_if = "Option::is_none")]
    pub orphan_scenarios: Option<&'a [OrphanScenario]>,
    pub error: Option<serde_json::Value>,
}

/// The JSON envelope as one line.
pub fn json(
    results: &[CassetteResult],
    coverage: Coverage,
    margins: Option<&[CassetteMargins]>,
    orphan_scenarios: Option<&[OrphanScenario]>,
) -> String {
    let env = Envelope {
        tool: "reel",
        version: env!("CARGO_PKG_VERSION"),
        command: "verify-cassettes",
        ok: batch_status(results, orphan_scenarios).is_success(),
        coverage,
        results,
        margins,
        orphan_scenarios,
        error: None,
    };
    // Serialising plain data structures cannot fail.
    serde_json::to_string(&env).expect("serialisable envelope")
}

/// The default text report: a status line per cassette with its findings
/// under it (`crate::report::status`), the margins when asked, the tally.
pub fn status_text(
    results: &[CassetteResult],
    coverage: Coverage,
    margins: Option<&[CassetteMargins]>,
    orphan_scenarios: Option<&[OrphanScenario]>,
) -> String {
    use crate::report::{outcome, status};
    let mut out = String::new();
    for what in skipped_checks(coverage) {
        let _ = writeln!(out, "warn: {what}");
    }
    let outcomes: Vec<_> = results
        .iter()
        .map(outcome::from_verify)
        .chain(
            orphan_scenarios
                .unwrap_or_default()
                .iter()
                .map(outcome::from_orphan_scenario),
        )
        .collect();
    for o in &outcomes {
        out.push_str(&status::render_file(o, true));
    }
    if let Some(margins) = margins {
        out.push_str(&margins_text(margins));
    }
    if batch_status(results, orphan_scenarios) == ExitStatus::Unverified {
        out.push_str(
            "hint: ERROR = could not verify (unresolvable skill dirs, a newer cassette \
            format, an unreadable file): fix the cause, or point a moved cassette at its session \
            with --session FILE\n",
        );
    }
    if has_real_findings(results) {
        out.push_str(SCRUB_HINT);
    }
    if results.iter().any(|r| !r.staleness.is_empty()) {
        out.push_str(
            "hint: STALE = what the recording was made from changed since (each line names \
            it: the skill's files, the session, an MCP server or its files): re-record it \
            (`reel record SCENARIO.yaml`)\n",
        );
    }
    if results.iter().any(|r| !r.age.is_empty()) {
        out.push_str(
            "hint: a cassette older than --max-age: refresh it with `reel rerun --write \
            CASSETTE`, else re-record it\n",
        );
    }
    // The tally closes the report.
    out.push_str(&status::render_tally(&status::Tally::of(&outcomes), true));
    out
}

/// What to do about a real finding (both text reports end with it).
const SCRUB_HINT: &str = "hint: scrub the cassette (re-record; secrets are scrubbed at record \
    time, add a .cowork-redact.json for the rest), or allow a reviewed synthetic value with \
    `--allow REGEX`\n";

/// Some cassette has a finding that is not a note.
fn has_real_findings(results: &[CassetteResult]) -> bool {
    results
        .iter()
        .any(|r| r.findings.iter().any(|x| x.is_real()))
}

/// The checks a `--skip-*` flag turned off, as both reports word them.
fn skipped_checks(coverage: Coverage) -> impl Iterator<Item = &'static str> {
    [
        (
            coverage.staleness,
            "--skip-staleness: staleness check was skipped",
        ),
        (coverage.privacy, "--skip-privacy: privacy scan was skipped"),
        (
            coverage.scenario_drift,
            "--skip-scenario-drift: scenario prompt-drift check was skipped",
        ),
    ]
    .into_iter()
    .filter(|(ran, _)| !ran)
    .map(|(_, what)| what)
}

/// The original's text report (`--verbose`).
pub fn text(
    results: &[CassetteResult],
    coverage: Coverage,
    margins: Option<&[CassetteMargins]>,
    orphan_scenarios: Option<&[OrphanScenario]>,
) -> String {
    let mut out = String::new();
    let status = batch_status(results, orphan_scenarios);
    let orphan_scenarios = orphan_scenarios.unwrap_or_default();
    for what in skipped_checks(coverage) {
        let _ = writeln!(out, "⚠ reel: {what}");
    }
    if let Some(line) = findings_by_class(results) {
        let _ = writeln!(out, "findings by class: {line}");
    }
    for r in results {
        cassette_lines(&mut out, r);
    }
    for o in orphan_scenarios {
        let _ = writeln!(out, "✗ {}: [orphan] {}", o.scenario, o.message);
    }
    if status.is_success() {
        let _ = writeln!(
            out,
            "✓ verify-cassettes: {} cassette(s) clean",
            results.len()
        );
    } else {
        let _ = writeln!(
            out,
            "{} across {} cassette(s) (exit {status})",
            failure_line(results, orphan_scenarios.len()),
            results.len()
        );
        out.push_str(
            "  exit 1 = verified & failed (a real finding); exit 3 = could not verify \
            (unresolvable baseline/skill/tier, an unsupported cassette version, or a per-file read \
            ERROR/CRASH — that's a bug to report, not a signal to re-record). A cassette that \
            fails SHAPE validation is still privacy-scanned; `privacyScanned` in --output-format \
            json says whether the scan ran.\n",
        );
        if has_real_findings(results) {
            out.push_str(SCRUB_HINT);
        }
    }
    if let Some(margins) = margins {
        out.push_str(&margins_text(margins));
    }
    out
}

/// `class n · class n …` over every finding, most frequent first; `None`
/// without findings.
fn findings_by_class(results: &[CassetteResult]) -> Option<String> {
    let mut by_class: BTreeMap<&str, usize> = BTreeMap::new();
    for f in results.iter().flat_map(|r| &r.findings) {
        *by_class.entry(f.cls.as_str()).or_default() += f.count;
    }
    if by_class.is_empty() {
        return None;
    }
    let mut counts: Vec<_> = by_class.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
    Some(parts.join(" · "))
}

/// One line per problem of one cassette: `✗` fails, `·` informs.
fn cassette_lines(out: &mut String, r: &CassetteResult) {
    let f = &r.file;
    if let Some(e) = &r.error {
        let _ = writeln!(out, "✗ {f}: [error] {e}");
    }
    for x in &r.findings {
        let mark = if x.is_real() { "✗" } else { "·" };
        let _ = writeln!(
            out,
            "{mark} {f}: {}",
            crate::report::outcome::finding_text(x)
        );
    }
    let tagged = [
        ("✗", "stale", &r.staleness),
        ("✗", "unverifiable", &r.unverifiable),
        ("✗", "scenario-drift", &r.scenario_drift),
        ("✗", "pending-review", &r.pending_review),
        ("·", "note", &r.notes),
        ("✗", "version", &r.version),
        ("✗", "max-age", &r.age),
        ("✗", "orphan", &r.orphan),
        ("✗", "snapshot", &r.snapshots),
    ];
    for (mark, tag, lines) in tagged {
        for s in lines {
            let _ = writeln!(out, "{mark} {f}: [{tag}] {s}");
        }
    }
}

/// The failing summary's lead: the PII count, then each other kind of
/// failure present.
fn failure_line(results: &[CassetteResult], orphan_scenarios: usize) -> String {
    let any = |has: fn(&CassetteResult) -> bool| results.iter().any(has);
    let real: usize = results.iter().map(CassetteResult::real_findings).sum();
    let unverifiable: usize = results.iter().map(|r| r.unverifiable.len()).sum();
    let mut line = format!("✗ verify-cassettes: {real} PII finding(s)");
    if any(|r| !r.staleness.is_empty()) {
        line.push_str(" + staleness drift");
    }
    if any(|r| !r.scenario_drift.is_empty()) {
        line.push_str(" + scenario prompt drift");
    }
    if any(|r| !r.pending_review.is_empty()) {
        line.push_str(" + unreviewed re-recording(s)");
    }
    if any(|r| !r.snapshots.is_empty()) {
        line.push_str(" + missing or changed snapshot(s)");
    }
    if unverifiable > 0 {
        let _ = write!(line, " + {unverifiable} unverifiable");
    }
    if any(|r| !r.version.is_empty()) {
        line.push_str(" + version mismatch");
    }
    if any(|r| r.error.is_some()) {
        line.push_str(" + unreadable cassette(s)");
    }
    if any(|r| !r.age.is_empty()) {
        line.push_str(" + cassette(s) over --max-age");
    }
    let orphans = results.iter().filter(|r| !r.orphan.is_empty()).count() + orphan_scenarios;
    if orphans > 0 {
        let _ = write!(line, " + {orphans} orphan(s)");
    }
    line
}

/// The `--margins` block (recorded vs budget per count-bound assertion).
fn margins_text(margins: &[CassetteMargins]) -> String {
    let mut out = String::new();
    out.push_str(
        "\ncount-budget margins (recorded vs budget; a SINGLE-SAMPLE estimate — one \
        cassette ≠ variance, use `run --repeat` for a distribution):\n",
    );
    if margins.is_empty() {
        out.push_str("  (no count-bound assertions in the checked cassette(s))\n");
    }
    for m in margins {
        let _ = writeln!(out, "  {}:", m.file);
        if let Some(e) = &m.error {
            let _ = writeln!(out, "    [margins error] {e}");
        }
        for r in &m.rows {
            let rec = r.recorded.map_or("unavailable".to_owned(), number::string);
            let marg = match r.margin {
                None => "n/a".to_owned(),
                Some(v) if v == f64::INFINITY => "∞".to_owned(),
                Some(v) => format!("{}×", number::to_fixed_1(v)),
            };
            // Under 1.5× headroom one more sample may well cross the budget.
            let tight = if r.margin.is_some_and(|v| v < 1.5) {
                "  ⚠ tight"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    {}: recorded={rec}, budget={} → margin {marg}{tight}",
                r.key,
                number::string(r.budget)
            );
        }
    }
    out
}
