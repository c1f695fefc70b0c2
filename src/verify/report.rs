//! Rendering of a `verify-cassettes` run: the human text report (stderr) and
//! the JSON envelope (stdout, schema `schema/verify-cassettes.json`).
//!
//! Wording follows cowork-harness so logs read the same; nothing here
//! decides a verdict (that is [`super::gate`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::gate::{CassetteResult, exit_code};
use super::margins::{CassetteMargins, js_string, js_to_fixed_1};

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
    pub error: Option<serde_json::Value>,
}

/// The JSON envelope as one line.
pub fn json(
    results: &[CassetteResult],
    coverage: Coverage,
    margins: Option<&[CassetteMargins]>,
) -> String {
    let env = Envelope {
        tool: "reel",
        version: env!("CARGO_PKG_VERSION"),
        command: "verify-cassettes",
        ok: exit_code(results) == crate::exit::SUCCESS,
        coverage,
        results,
        margins,
        error: None,
    };
    // Serialising plain data structures cannot fail.
    serde_json::to_string(&env).expect("serialisable envelope")
}

/// The text report.
pub fn text(
    results: &[CassetteResult],
    coverage: Coverage,
    margins: Option<&[CassetteMargins]>,
) -> String {
    let mut out = String::new();
    let code = exit_code(results);
    if !coverage.staleness {
        out.push_str("⚠ reel: --skip-staleness: staleness check was skipped\n");
    }
    if !coverage.privacy {
        out.push_str("⚠ reel: --skip-privacy: privacy scan was skipped\n");
    }
    if !coverage.scenario_drift {
        out.push_str("⚠ reel: --skip-scenario-drift: scenario prompt-drift check was skipped\n");
    }
    let mut by_class: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results {
        for f in &r.findings {
            *by_class.entry(f.cls.as_str()).or_default() += 1;
        }
    }
    if !by_class.is_empty() {
        let mut counts: Vec<_> = by_class.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let parts: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
        let _ = writeln!(out, "findings by class: {}", parts.join(" · "));
    }
    for r in results {
        let f = &r.file;
        if let Some(e) = &r.error {
            let _ = writeln!(out, "✗ {f}: [error] {e}");
        }
        for x in &r.findings {
            let mark = if x.is_real() { "✗" } else { "·" };
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
            let _ = writeln!(
                out,
                "{mark} {f}: [{}{kind}] {}{field} — {}",
                x.cls.as_str(),
                x.location,
                x.sample
            );
        }
        for s in &r.staleness {
            let _ = writeln!(out, "✗ {f}: [stale] {s}");
        }
        for s in &r.unverifiable {
            let _ = writeln!(out, "✗ {f}: [unverifiable] {s}");
        }
        for s in &r.scenario_drift {
            let _ = writeln!(out, "✗ {f}: [scenario-drift] {s}");
        }
        for s in &r.pending_review {
            let _ = writeln!(out, "✗ {f}: [pending-review] {s}");
        }
        for s in &r.notes {
            let _ = writeln!(out, "· {f}: [note] {s}");
        }
        for s in &r.version {
            let _ = writeln!(out, "✗ {f}: [version] {s}");
        }
    }
    if code == crate::exit::SUCCESS {
        let _ = writeln!(
            out,
            "✓ verify-cassettes: {} cassette(s) clean",
            results.len()
        );
    } else {
        let real: usize = results.iter().map(CassetteResult::real_findings).sum();
        let unverifiable: usize = results.iter().map(|r| r.unverifiable.len()).sum();
        let mut line = format!("✗ verify-cassettes: {real} PII finding(s)");
        if results.iter().any(|r| !r.staleness.is_empty()) {
            line.push_str(" + staleness drift");
        }
        if results.iter().any(|r| !r.scenario_drift.is_empty()) {
            line.push_str(" + scenario prompt drift");
        }
        if results.iter().any(|r| !r.pending_review.is_empty()) {
            line.push_str(" + unreviewed re-recording(s)");
        }
        if unverifiable > 0 {
            let _ = write!(line, " + {unverifiable} unverifiable");
        }
        if results.iter().any(|r| !r.version.is_empty()) {
            line.push_str(" + version mismatch");
        }
        if results.iter().any(|r| r.error.is_some()) {
            line.push_str(" + unreadable cassette(s)");
        }
        let _ = writeln!(
            out,
            "{line} across {} cassette(s) (exit {code})",
            results.len()
        );
        out.push_str("  exit 1 = verified & failed (a real finding); exit 3 = could not verify (unresolvable baseline/skill/tier, an unsupported cassette version, or a per-file read ERROR/CRASH — that's a bug to report, not a signal to re-record). A cassette that fails SHAPE validation is still privacy-scanned; `privacyScanned` in --output-format json says whether the scan ran.\n");
        if results
            .iter()
            .any(|r| r.findings.iter().any(|x| x.is_real()))
        {
            out.push_str("hint: scrub the cassette (re-record; secrets are scrubbed at record time, add a .cowork-redact.json for the rest), or allow a reviewed synthetic value with `--allow REGEX`\n");
        }
    }
    if let Some(margins) = margins {
        out.push_str("\ncount-budget margins (recorded vs budget; a SINGLE-SAMPLE estimate — one cassette ≠ variance, use `run --repeat` for a distribution):\n");
        if margins.is_empty() {
            out.push_str("  (no count-bound assertions in the checked cassette(s))\n");
        }
        for m in margins {
            let _ = writeln!(out, "  {}:", m.file);
            if let Some(e) = &m.error {
                let _ = writeln!(out, "    [margins error] {e}");
            }
            for r in &m.rows {
                let rec = r.recorded.map_or("unavailable".to_owned(), js_string);
                let marg = match r.margin {
                    None => "n/a".to_owned(),
                    Some(v) if v == f64::INFINITY => "∞".to_owned(),
                    Some(v) => format!("{}×", js_to_fixed_1(v)),
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
                    js_string(r.budget)
                );
            }
        }
    }
    out
}
