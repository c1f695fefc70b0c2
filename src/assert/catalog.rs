//! The 77 assertion keys of the cowork-harness v12 scenario schema, their
//! replay buckets and (in `validate`) their parameter types.
//!
//! This is the one list of assertion keys in reel: the cassette loader, the
//! scenario loader, replay's bucket exclusion and the evaluator all read it.

use serde_json::{Map, Value};

/// Which replay class a key belongs to (spec/replay.md §4.1–4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// Evaluated on every replay from the re-driven events.
    Always,
    /// Needs `controlOut`; excluded (with a warning) when it is absent/empty.
    NeedsControlOut,
    /// Needs the artifacts manifest (and for two keys the pre-run baseline).
    NeedsManifest,
    /// Needs live telemetry; always stripped on replay.
    LiveOnly,
    /// `replay_protocol_fidelity`: produced by replay, never evaluated from `assert:`.
    Synthesized,
}

/// Every key, in the order of spec/replay.md §4 (evaluation order is `check`'s).
pub const KEYS: &[(&str, Bucket)] = &[
    ("result", Bucket::Always),
    ("transcript_contains", Bucket::Always),
    ("transcript_not_contains", Bucket::Always),
    ("transcript_matches", Bucket::Always),
    ("transcript_not_matches", Bucket::Always),
    ("tool_called", Bucket::Always),
    ("tool_not_called", Bucket::Always),
    ("tool_result_contains", Bucket::Always),
    ("tool_result_not_contains", Bucket::Always),
    ("tool_result_matches", Bucket::Always),
    ("tool_result_not_matches", Bucket::Always),
    ("subagent_tool_used", Bucket::Always),
    ("subagent_tool_absent", Bucket::Always),
    ("subagent_dispatched", Bucket::Always),
    ("subagent_declared_but_unused", Bucket::Always),
    ("subagent_output_contains", Bucket::Always),
    ("dispatch_count_max", Bucket::Always),
    ("subagent_file_write", Bucket::Always),
    ("subagent_dispatch_healthy", Bucket::Always),
    ("no_vm_path_file_op", Bucket::Always),
    ("skill_triggered", Bucket::Always),
    ("no_skill_triggered", Bucket::Always),
    ("skill_available", Bucket::Always),
    ("connector_available", Bucket::Always),
    ("tool_available", Bucket::Always),
    ("skill_tool_used", Bucket::Always),
    ("max_cost_usd", Bucket::Always),
    ("max_tokens", Bucket::Always),
    ("tool_calls_max", Bucket::Always),
    ("max_turns", Bucket::Always),
    ("tool_no_error", Bucket::Always),
    ("tool_no_error_if_called", Bucket::Always),
    ("max_tool_errors", Bucket::Always),
    ("max_redundant_tool_calls", Bucket::Always),
    ("compaction_occurred", Bucket::Always),
    ("all_tasks_completed", Bucket::Always),
    ("task_count_min", Bucket::Always),
    ("task_status", Bucket::Always),
    ("no_scratchpad_leak", Bucket::Always),
    ("present_files_called", Bucket::Always),
    ("allow_permissive_auto_allow", Bucket::Always),
    ("allow_missing_capability", Bucket::Always),
    ("allow_l0_plugin_divergence", Bucket::Always),
    ("allow_stall", Bucket::Always),
    ("allow_undelivered_deliverables", Bucket::Always),
    ("allow_outputs_delete", Bucket::Always),
    ("allow_delete_in", Bucket::Always),
    ("question_asked", Bucket::NeedsControlOut),
    ("question_options", Bucket::NeedsControlOut),
    ("questions_count_max", Bucket::NeedsControlOut),
    ("gate_answers_delivered", Bucket::NeedsControlOut),
    ("gate_answer_count_min", Bucket::NeedsControlOut),
    ("hook_blocked", Bucket::NeedsControlOut),
    ("no_hook_blocked", Bucket::NeedsControlOut),
    ("vm_path_denied", Bucket::NeedsControlOut),
    ("path_denied", Bucket::NeedsControlOut),
    ("no_path_denied", Bucket::NeedsControlOut),
    ("file_exists", Bucket::NeedsManifest),
    ("user_visible_artifact", Bucket::NeedsManifest),
    ("artifact_json", Bucket::NeedsManifest),
    ("artifact_text", Bucket::NeedsManifest),
    ("computer_links_resolve", Bucket::NeedsManifest),
    ("computer_links_resolve_if_present", Bucket::NeedsManifest),
    ("no_unexpected_files", Bucket::NeedsManifest),
    ("input_unmodified", Bucket::NeedsManifest),
    ("file_absent", Bucket::LiveOnly),
    ("egress_denied", Bucket::LiveOnly),
    ("egress_allowed", Bucket::LiveOnly),
    ("no_delete_in_outputs", Bucket::LiveOnly),
    ("no_delete_in_mounts", Bucket::LiveOnly),
    ("self_heal_ran", Bucket::LiveOnly),
    ("transcript_no_host_path", Bucket::LiveOnly),
    ("no_mcp_error", Bucket::LiveOnly),
    ("max_peak_rss_bytes", Bucket::LiveOnly),
    ("semantic_matches", Bucket::LiveOnly),
    ("no_lost_write_back", Bucket::LiveOnly),
    ("replay_protocol_fidelity", Bucket::Synthesized),
];

/// The bucket of `key`, or `None` for an unknown key.
pub fn bucket(key: &str) -> Option<Bucket> {
    KEYS.iter().find(|(k, _)| *k == key).map(|(_, b)| *b)
}

/// Validates one `assert:` item (strict: unknown keys and wrong parameter
/// types are refused). The error names the offending key and what is wrong.
pub fn validate(item: &Value) -> Result<(), String> {
    let Some(map) = item.as_object() else {
        return Err("an assertion must be an object of `key: parameter`".into());
    };
    validate_map(map)
}

fn validate_map(map: &Map<String, Value>) -> Result<(), String> {
    for key in map.keys() {
        if bucket(key).is_none() {
            return Err(format!("unknown assertion key `{key}`"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_all_77_keys_once() {
        assert_eq!(KEYS.len(), 77);
        let mut names: Vec<_> = KEYS.iter().map(|(k, _)| *k).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 77);
    }
}
