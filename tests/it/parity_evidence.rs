//! Synthetic cassettes (tests/data/parity-evidence/cassettes) whose re-drive
//! once differed from cowork-harness 2.0.0's: reel's run-result JSON must
//! equal the original's captured output (expected/<name>.json) key for key
//! and in the same order, with the same exit code and the same `::warning::`
//! / `::notice::` stderr lines (expected/<name>.stderr). Regenerate with
//! `scripts/parity-evidence.py OUTDIR --capture NAME` (needs the original).

use serde_json::Value;

use crate::support;

fn annotations(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("::warning::") || l.starts_with("::notice::"))
        .map(str::to_owned)
        .collect()
}

/// Replays `name` and compares it with the original's captured output.
fn same_as_original(name: &str) {
    let dir = support::data("parity-evidence");
    let want: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("expected/{name}.json"))).unwrap())
            .unwrap();
    let want_stderr = std::fs::read_to_string(dir.join(format!("expected/{name}.stderr"))).unwrap();
    let out = support::reel()
        .current_dir(&dir)
        .args([
            "replay",
            &format!("cassettes/{name}.cassette.json"),
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(if want["ok"] == Value::Bool(true) {
            0
        } else {
            1
        }),
        "{name}: exit code"
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    support::assert_same_result_as_original(name, &got, &want);
    assert_eq!(
        annotations(&String::from_utf8_lossy(&out.stderr)),
        annotations(&want_stderr),
        "{name}: stderr annotations"
    );
}

/// `resultErrorKind` is the evidence classifier's (`agent` for an
/// `error_max_turns` result, not omitted).
#[test]
fn max_turns_error_is_an_agent_error() {
    same_as_original("err-max-turns");
}

/// A 429 with "usage limit reached" text but no terminal usage-limit phrase
/// is an `agent` error, not `usage_limit`.
#[test]
fn usage_limit_needs_the_terminal_phrase() {
    same_as_original("err-usage-limit");
}

/// "You've hit your limit" with no status is `usage_limit`, with the
/// original's verdict message.
#[test]
fn terminal_limit_text_without_status_is_usage_limit() {
    same_as_original("err-rate-limit-text");
}

/// A truncated re-drive reports the original's empty record: no
/// `errorSource`, no `models`, no `availableSkills`.
#[test]
fn truncated_redrive_reports_the_empty_record() {
    same_as_original("gates");
}

/// A `can_use_tool` path denial carries `decision: "deny"`.
#[test]
fn path_denial_carries_its_decision() {
    same_as_original("denies");
}

/// `cost.raw` is the `system/api_metrics` line.
#[test]
fn api_metrics_land_in_cost_raw() {
    same_as_original("system-events");
}

/// No `system/init` line: `context` is `{}`.
#[test]
fn missing_init_gives_an_empty_context() {
    same_as_original("no-init");
}

/// Stream events only: no `models` key.
#[test]
fn no_assistant_line_means_no_models_key() {
    same_as_original("stream-only");
}

/// `infra_error` sources narrow to the three known origins; fatal and exec
/// errors make one signal each, listing every message.
#[test]
fn infra_error_sources_and_signals() {
    same_as_original("infra-sources");
    same_as_original("infra-exec-only");
}

/// `webSearches` from main-agent WebSearch results' `Links: [...]`;
/// `evidenceErrors` counts the unparseable and unanswered ones
/// (`webSearchParse`, always present; `protocolMalformed` only once set).
#[test]
fn web_searches_and_evidence_error_counters() {
    same_as_original("web-searches");
    same_as_original("skills-errors");
    same_as_original("present-files");
}

/// `subagents[]` in the original's shape and key order: `toolsUsed` as
/// `[{name, count}]`, `referencesRead`, `dispatchTypeOmitted`,
/// `dispatchModel`, `resolvedModel`, `outputTruncated` only when true; the
/// top-level `referencesRead` of the main agent's skill-reference Reads.
#[test]
fn subagent_dispatch_shape_and_references_read() {
    same_as_original("subagents");
    same_as_original("subagents-refs");
}

/// Non-JSON events lines each print the original's `::warning::`; a user
/// line whose content is a string counts one malformed block per code point
/// (`evidenceErrors.protocolMalformed`), as the original's `for…of` does;
/// `infra_error` with an unknown source is the fatal class.
#[test]
fn malformed_lines_warn_and_string_user_content_counts_per_code_point() {
    same_as_original("infra-malformed");
}

/// A controlOut id repeated with a different body prints the original's
/// warning naming the line. (The result itself differs by the documented
/// departure 2: reel also checks the later, hand-edited answer.)
#[test]
fn differing_duplicate_control_out_warns_with_its_line() {
    let dir = support::data("parity-evidence");
    let want_stderr = std::fs::read_to_string(dir.join("expected/dup-control.stderr")).unwrap();
    for format in ["json", "text"] {
        let out = support::reel()
            .current_dir(&dir)
            .args([
                "replay",
                "cassettes/dup-control.cassette.json",
                "--output-format",
                format,
                // Text mode: the original's layout, whose annotations this compares.
                "--verbose",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{format}: exit code");
        assert_eq!(
            annotations(&String::from_utf8_lossy(&out.stderr)),
            annotations(&want_stderr),
            "{format}: stderr annotations"
        );
    }
}

/// An assistant line whose content is a non-empty string is a malformed
/// control frame (the original's `for…of` meets a string block), failing
/// replay with its warning; a later result overrides an earlier error.
#[test]
fn string_assistant_content_is_a_malformed_frame() {
    same_as_original("odd-content");
}

/// The hostloop path gate's block is a `pretooluse` path denial carrying
/// its `callbackId`; a timeline's dispatch scope lands in
/// `subagents[].attributedSkillId`.
#[test]
fn path_gate_denial_and_timeline_attribution() {
    same_as_original("path-gate");
    same_as_original("timeline-subagents");
}

/// A content that `for…of` cannot iterate (object, number, boolean) is a
/// malformed control frame with V8's TypeError text (numbers in JS
/// `String()` form, `1e+21`); null and "" iterate nothing.
#[test]
fn non_iterable_content_is_a_malformed_frame() {
    same_as_original("content-scalars");
    same_as_original("user-object-content");
}

/// A failed gate delivery, a permission_denied event correlated to a file
/// attempt, and bare / usage-only result lines.
#[test]
fn gate_delivery_and_result_line_shapes() {
    same_as_original("gate-delivery");
    same_as_original("result-usage-only");
    same_as_original("result-bare");
}

/// Guards for cases that already agreed: odd-typed fields (truthy strings,
/// fork dispatch, id-less and duplicate tool_use ids), tasks, hook
/// callbacks, tool-result caps with non-ASCII text, the thinking cap.
#[test]
fn already_agreeing_corners_stay_equal() {
    for name in [
        "odd-types",
        "tasks",
        "hooks",
        "tool-results",
        "thinking-many",
    ] {
        same_as_original(name);
    }
}
