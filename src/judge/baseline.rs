//! The first-party `baseline` grader's question, reproduced exactly: the
//! prompt `claude plugin eval` sends its judge to compare a NEW trajectory with
//! a BASELINE transcript under one criterion, the trace rendering it uses, and
//! how it reads a vote. Matching it byte for byte is what lets an imported
//! `baseline` grader ask the judge the same question over the same evidence.
//!
//! Read from Claude Code 2.1.332's bundled grader: the baseline file is split
//! on `"\n"`, blank lines dropped, each line `JSON.parse`d; both traces are
//! shown as `JSON.stringify` lines, the first and last 12 with a marker
//! between when longer than 24; a reply is PASS when it has the word PASS and
//! not the word FAIL (ASCII, any case); 3 votes, more than half PASS decides.
//!
//! Wired as `semantic_matches.baseline_transcript` (docs/judged-assertions.md).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::assert::json::stringify;

/// Lines shown from each end of a long trace (the grader's 12 + 12 of > 24).
const KEEP: usize = 12;

/// Votes the first-party grader asks for.
pub const VOTES: usize = 3;

/// The baseline transcript's lines, parsed: `Err` names the 1-based line that
/// is not JSON (the grader fails the check on it).
pub fn read_transcript(text: &str) -> Result<Vec<Value>, String> {
    text.split('\n')
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| format!("line {}: not JSON ({e})", i + 1))
        })
        .collect()
}

/// A trace as the judge sees it: one `JSON.stringify` line per message, the
/// middle elided when there are more than 24.
pub fn render_trace(trace: &[Value]) -> String {
    let line = |v: &Value| stringify(Some(v));
    if trace.len() <= 2 * KEEP {
        return trace.iter().map(line).collect::<Vec<_>>().join("\n");
    }
    let mut out: Vec<String> = trace[..KEEP].iter().map(line).collect();
    out.push(format!(
        "[\u{2026}{} messages elided\u{2026}]",
        trace.len() - 2 * KEEP
    ));
    out.extend(trace[trace.len() - KEEP..].iter().map(line));
    out.join("\n")
}

/// The user prompt of one judge call.
pub fn prompt(criteria: &str, baseline: &[Value], new: &[Value]) -> String {
    fill(criteria, &render_trace(baseline), &render_trace(new))
}

fn fill(criteria: &str, baseline: &str, new: &str) -> String {
    [
        "You are comparing a NEW coding-agent trajectory against a BASELINE.".to_string(),
        format!("Criterion:\n{criteria}"),
        format!("\nBASELINE trajectory:\n{baseline}"),
        format!("\nNEW trajectory:\n{new}"),
        "\nDoes the NEW trajectory satisfy the criterion at least as well as the BASELINE?"
            .to_string(),
        "Respond with exactly one word: PASS or FAIL.".to_string(),
    ]
    .join("\n\n")
}

/// The hash of the question's template (system prompt and user prompt with
/// placeholders): a frozen baseline verdict's `judgePromptHash`.
pub fn prompt_hash() -> String {
    let template = fill("{criterion}", "{baseline}", "{new}");
    super::prompt::hash_template(&format!("{SYSTEM}\n\n{template}"))
}

/// The grader's system prompt for every judge call.
pub const SYSTEM: &str = "You are a strict, terse evaluation judge for coding-agent traces.";

/// One reply read as a vote: `/\bPASS\b/i` and not `/\bFAIL\b/i` (ASCII word
/// boundaries and case folding, as a JavaScript regex without the `u` flag).
pub fn vote(reply: &str) -> bool {
    static PASS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i-u)\bPASS\b").expect("valid regex"));
    static FAIL: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i-u)\bFAIL\b").expect("valid regex"));
    PASS.is_match(reply) && !FAIL.is_match(reply)
}

/// The verdict of the votes: more than half PASS.
pub fn majority(votes: &[bool]) -> bool {
    2 * votes.iter().filter(|v| **v).count() > votes.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn transcript_lines_are_parsed_and_blank_lines_dropped() {
        let t = read_transcript("{\"a\":1}\n\n  \n{\"b\":2.0}\n").unwrap();
        assert_eq!(t, vec![json!({"a":1}), json!({"b":2.0})]);
        let e = read_transcript("{\"a\":1}\nnope\n").unwrap_err();
        assert!(e.starts_with("line 2: not JSON"), "{e}");
    }

    #[test]
    fn a_short_trace_is_shown_whole_in_javascript_spelling() {
        let t: Vec<Value> = serde_json::from_str(r#"[{"n":1.0,"s":"x\ny"},{"b":2}]"#).unwrap();
        assert_eq!(render_trace(&t), "{\"n\":1,\"s\":\"x\\ny\"}\n{\"b\":2}");
        let exactly24: Vec<Value> = (0..24).map(|i| json!(i)).collect();
        assert!(!render_trace(&exactly24).contains("elided"));
    }

    #[test]
    fn a_long_trace_keeps_twelve_from_each_end() {
        let t: Vec<Value> = (0..30).map(|i| json!(i)).collect();
        let shown = render_trace(&t);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 25);
        assert_eq!(lines[11], "11");
        assert_eq!(lines[12], "[\u{2026}6 messages elided\u{2026}]");
        assert_eq!(lines[13], "18");
        assert_eq!(lines[24], "29");
    }

    #[test]
    fn the_prompt_is_the_first_party_graders() {
        let p = prompt("Writes the note.", &[json!({"a":1})], &[json!({"b":2})]);
        assert_eq!(
            p,
            "You are comparing a NEW coding-agent trajectory against a BASELINE.\n\n\
             Criterion:\nWrites the note.\n\n\
             \nBASELINE trajectory:\n{\"a\":1}\n\n\
             \nNEW trajectory:\n{\"b\":2}\n\n\
             \nDoes the NEW trajectory satisfy the criterion at least as well as the BASELINE?\n\n\
             Respond with exactly one word: PASS or FAIL."
        );
    }

    #[test]
    fn votes_read_pass_without_fail_and_the_majority_decides() {
        assert!(vote("PASS"));
        assert!(vote("pass."));
        assert!(!vote("PASS or FAIL"));
        assert!(!vote("PASSED"));
        assert!(!vote("FAIL"));
        assert!(!vote(""));
        assert!(majority(&[true, true, false]));
        assert!(!majority(&[true, false, false]));
        assert!(!majority(&[]));
    }
}
