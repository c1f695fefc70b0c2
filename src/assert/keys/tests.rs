//! The catalog over every record: complete, consistent, and in the
//! original's orders (the golden lists below are cowork-harness's, as reel
//! kept them before the orders were derived from ranks).

use serde_json::{Map, Value};

use super::*;
use crate::assert::{Context, catalog};
use crate::cassette::Cassette;

const LISTED: &[&str] = &[
    "result",
    "transcript_contains",
    "transcript_not_contains",
    "transcript_matches",
    "transcript_not_matches",
    "tool_called",
    "tool_not_called",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "subagent_tool_used",
    "subagent_tool_absent",
    "subagent_dispatched",
    "subagent_declared_but_unused",
    "subagent_output_contains",
    "dispatch_count_max",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "no_vm_path_file_op",
    "skill_triggered",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "skill_tool_used",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "max_turns",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "compaction_occurred",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "no_scratchpad_leak",
    "present_files_called",
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "hook_blocked",
    "no_hook_blocked",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "file_exists",
    "user_visible_artifact",
    "artifact_json",
    "artifact_text",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "no_unexpected_files",
    "input_unmodified",
    "file_absent",
    "egress_denied",
    "egress_allowed",
    "no_delete_in_outputs",
    "no_delete_in_mounts",
    "self_heal_ran",
    "transcript_no_host_path",
    "no_mcp_error",
    "max_peak_rss_bytes",
    "semantic_matches",
    "no_lost_write_back",
    "replay_protocol_fidelity",
    // Added after cowork-harness 2.0.0 (v13–v16 and the unbumped keys).
    "question_option_count",
    "question_context",
    "gates_all_scripted",
    "hook_event_fired",
    "hook_event_blocked",
    "no_hook_event_blocked",
    "hook_decision",
    "hook_output_contains",
    "hook_output_not_contains",
    "reference_read",
    "no_observed_reference_access",
    "semantic_pairwise",
    "tool_order",
    "last_message_matches",
    "last_message_not_matches",
];

const CHECK: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "semantic_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "transcript_matches",
    "transcript_not_matches",
    "file_exists",
    "file_absent",
    "user_visible_artifact",
    "no_lost_write_back",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "subagent_dispatched",
    "subagent_output_contains",
    "subagent_declared_but_unused",
    "dispatch_count_max",
    "skill_triggered",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "max_turns",
    "compaction_occurred",
    "no_mcp_error",
    "max_peak_rss_bytes",
    "hook_blocked",
    "no_hook_blocked",
    "no_scratchpad_leak",
    "present_files_called",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "skill_tool_used",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "egress_denied",
    "egress_allowed",
    "no_delete_in_outputs",
    "no_delete_in_mounts",
    "no_unexpected_files",
    "input_unmodified",
    "self_heal_ran",
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
    "transcript_no_host_path",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "artifact_text",
    "artifact_json",
    "no_vm_path_file_op",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "result",
    "replay_protocol_fidelity",
    // Added after cowork-harness 2.0.0 (v13–v16 and the unbumped keys).
    "question_option_count",
    "question_context",
    "gates_all_scripted",
    "hook_event_fired",
    "hook_event_blocked",
    "no_hook_event_blocked",
    "hook_decision",
    "hook_output_contains",
    "hook_output_not_contains",
    "reference_read",
    "no_observed_reference_access",
    "semantic_pairwise",
    "tool_order",
    "last_message_matches",
    "last_message_not_matches",
];

const SCHEMA: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "transcript_matches",
    "transcript_not_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "file_exists",
    "user_visible_artifact",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "no_vm_path_file_op",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "subagent_dispatched",
    "subagent_declared_but_unused",
    "subagent_output_contains",
    "dispatch_count_max",
    "skill_triggered",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "skill_tool_used",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "max_turns",
    "max_peak_rss_bytes",
    "compaction_occurred",
    "no_mcp_error",
    "hook_blocked",
    "no_hook_blocked",
    "no_scratchpad_leak",
    "present_files_called",
    "egress_denied",
    "egress_allowed",
    "no_delete_in_outputs",
    "no_unexpected_files",
    "file_absent",
    "artifact_text",
    "input_unmodified",
    "self_heal_ran",
    "no_lost_write_back",
    "transcript_no_host_path",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "result",
    "allow_permissive_auto_allow",
    "allow_outputs_delete",
    "no_delete_in_mounts",
    "allow_delete_in",
    "allow_l0_plugin_divergence",
    "allow_missing_capability",
    "allow_stall",
    "allow_undelivered_deliverables",
    "replay_protocol_fidelity",
    "artifact_json",
    "semantic_matches",
    // Added after cowork-harness 2.0.0 (v13–v16 and the unbumped keys).
    "question_option_count",
    "question_context",
    "gates_all_scripted",
    "hook_event_fired",
    "hook_event_blocked",
    "no_hook_event_blocked",
    "hook_decision",
    "hook_output_contains",
    "hook_output_not_contains",
    "reference_read",
    "no_observed_reference_access",
    "semantic_pairwise",
    "tool_order",
    "last_message_matches",
    "last_message_not_matches",
];

const STRIP: &[&str] = &[
    "transcript_contains",
    "transcript_not_contains",
    "transcript_matches",
    "transcript_not_matches",
    "tool_result_contains",
    "tool_result_not_contains",
    "tool_result_matches",
    "tool_result_not_matches",
    "tool_called",
    "tool_not_called",
    "subagent_tool_used",
    "subagent_tool_absent",
    "subagent_dispatched",
    "subagent_declared_but_unused",
    "subagent_output_contains",
    "dispatch_count_max",
    "skill_triggered",
    "no_skill_triggered",
    "skill_available",
    "connector_available",
    "tool_available",
    "skill_tool_used",
    "max_cost_usd",
    "max_tokens",
    "tool_calls_max",
    "tool_no_error",
    "tool_no_error_if_called",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "max_turns",
    "compaction_occurred",
    "all_tasks_completed",
    "task_count_min",
    "task_status",
    "result",
    "no_scratchpad_leak",
    "present_files_called",
    "no_vm_path_file_op",
    "subagent_file_write",
    "subagent_dispatch_healthy",
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
    "question_asked",
    "question_options",
    "questions_count_max",
    "gate_answers_delivered",
    "gate_answer_count_min",
    "hook_blocked",
    "no_hook_blocked",
    "vm_path_denied",
    "path_denied",
    "no_path_denied",
    "file_exists",
    "artifact_text",
    "user_visible_artifact",
    "artifact_json",
    "computer_links_resolve",
    "computer_links_resolve_if_present",
    "no_unexpected_files",
    "input_unmodified",
    // Added after cowork-harness 2.0.0 (v13–v16 and the unbumped keys).
    "question_option_count",
    "question_context",
    "gates_all_scripted",
    "hook_event_fired",
    "hook_event_blocked",
    "no_hook_event_blocked",
    "hook_decision",
    "hook_output_contains",
    "hook_output_not_contains",
    "reference_read",
    "no_observed_reference_access",
    "tool_order",
    "last_message_matches",
    "last_message_not_matches",
];

const MODIFIERS: &[&str] = &[
    "allow_permissive_auto_allow",
    "allow_missing_capability",
    "allow_l0_plugin_divergence",
    "allow_stall",
    "allow_undelivered_deliverables",
    "allow_outputs_delete",
    "allow_delete_in",
];

const MARGINS: &[&str] = &[
    "tool_calls_max",
    "max_tokens",
    "max_cost_usd",
    "max_turns",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "dispatch_count_max",
    "task_count_min",
    "gate_answer_count_min",
    "questions_count_max",
];

fn names(keys: &[&Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

#[test]
fn every_key_is_listed_once() {
    assert_eq!(all().len(), 92);
    let mut seen: Vec<&str> = names(all());
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 92);
}

#[test]
fn the_derived_orders_are_the_originals() {
    assert_eq!(names(all()), LISTED);
    assert_eq!(names(check_order()), CHECK);
    assert_eq!(schema_order(), SCHEMA);
    assert_eq!(strip_order(), STRIP);
    assert_eq!(names(count_bound()), MARGINS);
    let modifiers: Vec<&str> = names(all())
        .into_iter()
        .filter(|k| find(k).unwrap().verdict_modifier())
        .collect();
    assert_eq!(modifiers, MODIFIERS);
}

/// Two records sharing a rank would make an order depend on the family
/// list; a strip rank is set exactly for the keys replay evaluates.
#[test]
fn ranks_are_distinct_and_strip_ranks_follow_the_bucket() {
    let ranks: [fn(&Key) -> Option<u8>; 5] = [
        |k| Some(k.ranks.listed),
        |k| Some(k.ranks.check),
        |k| Some(k.ranks.schema),
        |k| k.ranks.strip,
        |k| k.margin.map(|m| m.rank),
    ];
    for rank in ranks {
        let mut seen: Vec<u8> = all().iter().filter_map(|k| rank(k)).collect();
        let n = seen.len();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), n, "a rank is shared");
    }
    for k in all() {
        assert_eq!(
            k.bucket.replay_evaluates(),
            k.ranks.strip.is_some(),
            "{}",
            k.name
        );
    }
}

/// The evaluator is a field of the record, so a key cannot lack one; what a
/// record can still get wrong is claiming a non-evaluating variant.
#[test]
fn every_evaluable_key_has_an_evaluator() {
    for k in all() {
        let ok = match k.eval {
            Eval::One(_) | Eval::Many(_) => k.bucket.replay_evaluates(),
            Eval::Live(_) => k.bucket == Bucket::LiveOnly,
            Eval::VerdictModifier => k.bucket == Bucket::Always,
            Eval::Synthesized => k.bucket == Bucket::Synthesized,
        };
        assert!(ok, "{}: its evaluator does not fit its bucket", k.name);
    }
}

/// Each key evaluated alone on an empty live run reaches its evaluator: the
/// item's outcome is that key's, never the "empty assertion" of a key that
/// `check` skipped.
#[test]
fn check_reaches_every_evaluator() {
    let doc = serde_json::json!({
        "scenario": {"prompt": "p", "session": "(inline)"},
        "events": [],
        "artifacts": [{"path": "outputs/a.md", "bytes": 0, "sha256": ""}],
        "preRunPaths": [],
        "preRunHashes": {},
    });
    let doc = doc.as_object().cloned().unwrap_or_default();
    let cassette = Cassette::unchecked("x.cassette.json", doc, 12);
    let run = RunRecord::from_cassette(&cassette);
    for k in all()
        .iter()
        .filter(|k| !matches!(k.eval, Eval::Synthesized))
    {
        let ctx = Context::new(&cassette, &run, None).for_live_run(true);
        let mut item = Map::new();
        item.insert(k.name.to_owned(), k.example());
        let outcome = crate::assert::check(&item, &ctx);
        assert_ne!(
            outcome.message, "empty assertion",
            "{} was not evaluated",
            k.name
        );
        assert!(
            !outcome.message.contains("live-only"),
            "{}: {}",
            k.name,
            outcome.message
        );
    }
}

#[test]
fn every_example_validates() {
    for k in all() {
        let mut item = Map::new();
        item.insert(k.name.to_owned(), k.example());
        let item = Value::Object(item);
        assert_eq!(
            catalog::validate(&item),
            Ok(()),
            "{}: its example must validate",
            k.name
        );
    }
    assert_eq!(
        catalog::parameter("subagent_file_write").unwrap(),
        "{ path?: non-empty string, path_suffix?: non-empty string, tool?: tool glob (* and ? \
            only) } (path or path_suffix)"
    );
}

/// A cross-key rule names keys of the catalog; an opposite takes the same
/// parameter shape (the two name one value).
#[test]
fn cross_key_rules_name_known_keys() {
    for k in all() {
        if let Some(no) = k.opposite {
            let other = find(no).unwrap_or_else(|| panic!("{}: unknown opposite {no}", k.name));
            assert_eq!(
                k.param.primary().describe(),
                other.param.primary().describe(),
                "{} / {no}",
                k.name
            );
        }
        for (other, _) in k.excludes.iter().flat_map(|r| r.others) {
            assert!(
                find(other).is_some(),
                "{}: unknown excluded key {other}",
                k.name
            );
        }
    }
}
