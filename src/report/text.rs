//! The human report on stderr (cowork-harness `renderFooter`, replay lane):
//! one footer per cassette, preceded by its notices and warnings, plus the
//! `--explain` evidence list. Readable without colour; coloured only when the
//! caller says so (a TTY without `NO_COLOR`).
//!
//! Deliberately omitted (README "Differences"): the "N question(s) were
//! auto-answered" hint — a replay-served answer is not auto-answered.

use std::fmt::Write as _;

use owo_colors::OwoColorize as _;

use crate::replay::ReplayResult;
use crate::replay::verdict::{GuardStatus, Severity};

const TRUNC_LINES: usize = 24;
const TRUNC_CHARS: usize = 2000;

/// Rendering options.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextStyle {
    pub color: bool,
    /// No transcript truncation.
    pub verbose: bool,
}

impl TextStyle {
    /// Colour when stderr is a terminal and `NO_COLOR` is unset (or empty).
    pub fn for_stderr(verbose: bool) -> Self {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        TextStyle {
            color: std::io::stderr().is_terminal() && !no_color,
            verbose,
        }
    }

    fn paint(&self, style: owo_colors::Style, s: &str) -> String {
        if self.color {
            s.style(style).to_string()
        } else {
            s.to_string()
        }
    }
    fn green(&self, s: &str) -> String {
        self.paint(owo_colors::Style::new().green(), s)
    }
    fn red(&self, s: &str) -> String {
        self.paint(owo_colors::Style::new().red(), s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint(owo_colors::Style::new().dimmed(), s)
    }
}

/// Everything printed for one cassette, as one string (lines end in `\n`).
pub fn render(r: &ReplayResult, style: TextStyle, explain: bool) -> String {
    use crate::terminal_safe::{block, command_line};
    let mut out = String::new();
    for n in &r.notices {
        let _ = writeln!(out, "{}", command_line(n));
    }
    if let Some(err) = &r.error {
        let what = format!("{}: {err}", r.file.display());
        let _ = writeln!(out, "replay: {}", block(&what));
        return out;
    }
    out.push_str(&footer(r, style));
    for a in &r.after {
        let _ = writeln!(out, "{}", command_line(a));
    }
    if explain {
        out.push_str(&explain_block(r));
    }
    out
}

/// The verdict footer.
pub fn footer(r: &ReplayResult, style: TextStyle) -> String {
    let mut out = String::new();
    let f = &r.facts;
    let sub = if f.subagent_count > 0 {
        format!(" · {} sub-agents", f.subagent_count)
    } else {
        String::new()
    };
    let meta = format!("[{}] · {} tools{sub}", r.fidelity(), f.tool_count);
    let prov = r.provenance();
    let prov_line = format!(
        "   {}",
        style.dim(&format!(
            "[provenance] model={}  skill={}  ablated=false",
            crate::terminal_safe::inline(prov["model"].as_str().unwrap_or("unknown")),
            crate::terminal_safe::inline(prov["skill"].as_str().unwrap_or("unknown"))
        ))
    );
    let sym = |s: GuardStatus| match s {
        GuardStatus::Ok => "✓",
        GuardStatus::Fired => "✗",
        GuardStatus::Unverified => "?",
        GuardStatus::Na => "—",
    };
    let guards = r
        .verdict
        .guards
        .iter()
        .map(|g| format!("{} {}", g.name, sym(g.status)))
        .collect::<Vec<_>>()
        .join("  ");
    let mut guard_line = format!("   {}", style.dim(&format!("guards: {guards}")));
    if let Some(metrics) = metrics_line(r) {
        guard_line = format!("{guard_line}\n   {metrics}");
    }
    if r.verdict.pass {
        let _ = writeln!(out, "{} {meta}", style.green(&format!("✓ {}", r.result())));
        let _ = writeln!(out, "{prov_line}");
        let _ = writeln!(out, "{guard_line}");
        return out;
    }
    let label = if r.result() != "success" {
        match f.result_error_kind.as_deref() {
            Some("transport") => "transport-error".to_string(),
            Some("usage_limit") => "usage-limit".to_string(),
            _ => match f.error_source.as_deref().or(f.result_subtype.as_deref()) {
                Some(src) => format!("error ({src})"),
                None => "error".to_string(),
            },
        }
    } else {
        "FAIL".to_string()
    };
    let _ = writeln!(out, "{} {meta}", style.red(&format!("✗ {label}")));
    for s in r
        .verdict
        .signals
        .iter()
        .filter(|s| s.severity == Severity::Fail)
    {
        // Recorded strings in the message: shown inert.
        let message = crate::terminal_safe::block(&s.message);
        let _ = writeln!(out, "   {}", style.red(&format!("✗ {message}")));
    }
    let _ = writeln!(out, "{prov_line}");
    let _ = writeln!(out, "{guard_line}");
    let t = f.transcript.trim();
    if !t.is_empty() {
        let _ = writeln!(out, "   {}", style.dim("── transcript ──"));
        for line in truncate(t, style.verbose).split('\n') {
            let _ = writeln!(out, "   {}", crate::terminal_safe::block(line));
        }
        let _ = writeln!(
            out,
            "   {}",
            style.dim("→ full run: (replay)/turns/1/run.jsonl")
        );
    }
    out
}

/// `metrics: f1 0.82 · rows unavailable (missing_path: "rows" is absent)`:
/// the scenario's measured numbers, beside the verdict (none declared, no
/// line).
pub fn metrics_line(r: &ReplayResult) -> Option<String> {
    if r.metrics.is_empty() {
        return None;
    }
    let each = r.metrics.iter().map(|m| match &m.value {
        Ok(v) => format!("{} {}", m.id, crate::assert::json::stringify(Some(v))),
        Err(u) => format!("{} unavailable ({}: {})", m.id, u.reason.as_str(), u.why),
    });
    Some(format!("metrics: {}", each.collect::<Vec<_>>().join(" · ")))
}

fn truncate(text: &str, verbose: bool) -> String {
    if verbose {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut t = if lines.len() > TRUNC_LINES {
        format!("{}\n… (truncated)", lines[..TRUNC_LINES].join("\n"))
    } else {
        text.to_string()
    };
    if t.chars().count() > TRUNC_CHARS {
        t = format!(
            "{} … (truncated)",
            t.chars().take(TRUNC_CHARS).collect::<String>()
        );
    }
    t
}

/// `--explain`: the evidence of each passing (authored) assertion.
pub fn explain_block(r: &ReplayResult) -> String {
    let lines = explain_lines(r);
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "[explain] {} — evidence for {} passing assert(s):",
        r.file.display(),
        lines.len()
    );
    for l in lines {
        let _ = writeln!(out, "  {l}");
    }
    out
}

/// One `✓ <keys> — <evidence>` line per passing (authored) assertion.
pub fn explain_lines(r: &ReplayResult) -> Vec<String> {
    r.assertions
        .iter()
        .filter(|a| a.pass && crate::replay::turns::is_authored(a))
        .map(|a| {
            let keys = a
                .assertion
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let ev = a
                .evidence
                .clone()
                .unwrap_or_else(|| "(no evidence trail for this key)".into());
            match crate::replay::turns::turn_of(a) {
                Some(turn) => format!("✓ {turn}: {keys} — {ev}"),
                None => format!("✓ {keys} — {ev}"),
            }
        })
        .collect()
}

/// Batch notices for staleness notes (`<kind>: <text>`), one per kind:
/// `::notice:: [replay] <count>/<total> cassette(s) — <note> [<kind>]`.
pub fn batch_notes(results: &[ReplayResult]) -> Vec<String> {
    let mut kinds: Vec<(String, String, usize)> = Vec::new();
    for r in results {
        let mut seen = Vec::new();
        for note in &r.staleness.notes {
            let (kind, text) = note
                .split_once(':')
                .map(|(k, t)| (k.trim(), t.trim()))
                .unwrap_or(("note", note));
            if seen.contains(&kind) {
                continue;
            }
            seen.push(kind);
            match kinds.iter_mut().find(|(k, _, _)| k == kind) {
                Some(entry) => entry.2 += 1,
                None => kinds.push((kind.to_string(), text.to_string(), 1)),
            }
        }
    }
    kinds
        .into_iter()
        .map(|(kind, text, n)| {
            format!(
                "::notice:: [replay] {n}/{} cassette(s) — {text} [{kind}]",
                results.len()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert::AssertionOutcome;
    use crate::replay::run_result::RecordFacts;
    use crate::replay::verdict::{self, Lane, VerdictInput};
    use crate::replay::{ReplayResult, Skipped};
    use serde_json::json;

    fn result(assertions: Vec<AssertionOutcome>, transcript: &str) -> ReplayResult {
        let facts = RecordFacts {
            result: Some("success".into()),
            transcript: transcript.into(),
            tool_count: 4,
            models: vec!["claude-opus-4-8".into()],
            skill_offered: true,
            skill_invoked: true,
            ..Default::default()
        };
        let v = verdict::compute(
            &VerdictInput {
                result: "success",
                assertions: &assertions,
                ..Default::default()
            },
            Lane::Replay,
        );
        let outcome = verdict::outcome("success", &v);
        let mut run = serde_json::Map::new();
        run.insert("scenario".into(), json!("example-pdf-skill"));
        run.insert("fidelity".into(), json!("replay:container"));
        run.insert("result".into(), json!("success"));
        ReplayResult {
            file: "examples/replays/example-pdf-skill.cassette.json".into(),
            notices: vec![
                "::warning:: [replay] cassette stale: baseline moved 1 → 2 since record \
                — re-record"
                    .into(),
            ],
            error: None,
            run,
            assertions,
            skipped: Skipped::default(),
            staleness: Default::default(),
            exit_code: v.exit_code,
            verdict: v,
            outcome,
            facts,
            metrics: Vec::new(),
            after: Vec::new(),
        }
    }

    fn pass(a: serde_json::Value, evidence: Option<&str>) -> AssertionOutcome {
        AssertionOutcome {
            assertion: a,
            pass: true,
            message: String::new(),
            evidence: evidence.map(str::to_owned),
            source: None,
            judge: None,
        }
    }

    #[test]
    fn passing_footer_with_explain() {
        let r = result(
            vec![
                pass(json!({"result": "success"}), Some("result: success")),
                pass(json!({"tool_not_called": "WebFetch"}), None),
            ],
            "done",
        );
        insta::assert_snapshot!(render(&r, TextStyle::default(), true));
    }

    #[test]
    fn failing_footer_lists_fail_signals_and_the_transcript() {
        let fail = AssertionOutcome {
            assertion: json!({"tool_not_called": "Skill"}),
            pass: false,
            message: "tool unexpectedly called: \"Skill\" matched Skill".into(),
            evidence: None,
            source: None,
            judge: None,
        };
        let staleness = AssertionOutcome {
            assertion: json!({}),
            pass: false,
            message: "cassette stale (--strict): baseline moved 1 → 2 since record — re-record"
                .into(),
            evidence: None,
            source: Some("staleness".into()),
            judge: None,
        };
        let r = result(
            vec![pass(json!({"result": "success"}), None), fail, staleness],
            "first line\n\nlast line",
        );
        insta::assert_snapshot!(render(&r, TextStyle::default(), false));
    }

    #[test]
    fn metrics_are_listed_under_the_guards() {
        use crate::assert::metrics::{Measurement, Reason, Unavailable};
        let mut r = result(vec![pass(json!({"result": "success"}), None)], "");
        r.metrics = vec![
            Measurement {
                id: "f1".into(),
                value: Ok(json!(0.82)),
            },
            Measurement {
                id: "rows".into(),
                value: Err(Unavailable {
                    reason: Reason::MissingPath,
                    why: "\"totals.rows\" is absent".into(),
                    evidence_limited: false,
                }),
            },
        ];
        insta::assert_snapshot!(render(&r, TextStyle::default(), false));
    }

    #[test]
    fn long_transcripts_are_truncated_unless_verbose() {
        let long: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        let t = long.join("\n");
        assert!(truncate(&t, false).ends_with("… (truncated)"));
        assert_eq!(truncate(&t, false).lines().count(), TRUNC_LINES + 1);
        assert_eq!(truncate(&t, true), t);
    }

    #[test]
    fn colour_only_when_asked() {
        let r = result(vec![pass(json!({"result": "success"}), None)], "");
        assert!(
            !render(
                &r,
                TextStyle {
                    color: false,
                    verbose: false
                },
                false
            )
            .contains('\x1b')
        );
        assert!(
            render(
                &r,
                TextStyle {
                    color: true,
                    verbose: false
                },
                false
            )
            .contains("\x1b[32m✓ success")
        );
    }

    #[test]
    fn an_error_result_prints_one_line_naming_the_file() {
        let r = crate::replay::error_result(
            std::path::Path::new("bad.cassette.json"),
            Vec::new(),
            "unreadable / invalid cassette JSON: EOF".into(),
        );
        assert_eq!(
            render(&r, TextStyle::default(), true),
            "replay: bad.cassette.json: unreadable / invalid cassette JSON: EOF\n"
        );
    }

    #[test]
    fn colours_are_plain_sgr_codes_reset_in_full() {
        let on = TextStyle {
            color: true,
            verbose: false,
        };
        assert_eq!(on.green("a"), "\x1b[32ma\x1b[0m");
        assert_eq!(on.red("a"), "\x1b[31ma\x1b[0m");
        assert_eq!(on.dim("a"), "\x1b[2ma\x1b[0m");
        assert_eq!(TextStyle::default().green("a"), "a");
    }
}
