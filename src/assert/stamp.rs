//! The lowest cassette format a reader needs to read a scenario the way it
//! was meant (cowork-harness `requiredVersionFor`): what `record` and
//! `rehash` stamp. A plain scenario stamps the hash-format epoch (12), so a
//! reader of 2.0.0 keeps replaying it; each later form lifts the stamp to the
//! version that first reads it, so an older reader says "too new, upgrade"
//! rather than "unrecognized assertion, re-record" (test/cassette-v13…v16).
//! Two departures: `semantic_matches.evidence_files` and reel's own
//! `semantic_matches.baseline_transcript` stamp 14 (see FEATURES).
//! reel's own top-level keys (`last_message_matches`, `last_message_not_matches`,
//! `tool_order`) lift nothing: at 12 every cowork-harness reader refuses them as
//! unrecognized (exit 2) rather than dropping them (docs/plugin-eval.md).

use serde_json::{Map, Value};

use crate::cassette::HASH_FORMAT_EPOCH;

/// One assertion-level feature: the version that first reads it, and
/// whether an item uses it.
type Feature = (u64, fn(&Map<String, Value>) -> bool);

fn obj<'a>(item: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    item.get(key).and_then(Value::as_object)
}

fn has_field(item: &Map<String, Value>, key: &str, field: &str) -> bool {
    obj(item, key).is_some_and(|o| o.contains_key(field))
}

/// The assertion forms added after v12, each with the version that reads it.
const FEATURES: &[Feature] = &[
    // v13: the object form of tool_called / tool_not_called (even `{tool}`).
    (13, |a| {
        obj(a, "tool_called").is_some() || obj(a, "tool_not_called").is_some()
    }),
    // v14.
    (14, |a| {
        has_field(a, "semantic_matches", "include_fork_results")
    }),
    // reel's departure: the original keeps `evidence_files` at 12
    // (test/cassette-v14.test.ts), but 2.0.0 reads `semantic_matches`
    // strictly and has no such key, so a v12 stamp earns "unrecognized
    // key, re-record". It came after 2.0.0 and before the v14 release; 14
    // is the lowest stamp every reader that knows it carries.
    (14, |a| has_field(a, "semantic_matches", "evidence_files")),
    // reel's `baseline_transcript` (the `claude plugin eval` baseline grader):
    // 2.0.0's `semantic_matches` would judge the rubric alone, laxer.
    (14, |a| {
        has_field(a, "semantic_matches", "baseline_transcript")
    }),
    (14, |a| a.contains_key("semantic_pairwise")),
    (14, |a| a.contains_key("question_option_count")),
    (14, |a| {
        a.contains_key("hook_output_contains") || a.contains_key("hook_output_not_contains")
    }),
    (14, |a| {
        obj(a, "file_exists").is_some() || obj(a, "user_visible_artifact").is_some()
    }),
    (14, |a| {
        has_field(a, "artifact_text", "authored") || has_field(a, "artifact_json", "authored")
    }),
    // v15.
    (15, |a| a.contains_key("no_hook_event_blocked")),
    (15, |a| obj(a, "hook_event_blocked").is_some()),
    (15, |a| a.contains_key("hook_decision")),
    (15, |a| a.contains_key("gates_all_scripted")),
    (15, |a| {
        obj(a, "artifact_json").is_some_and(|o| {
            o.contains_key("match")
                || o.contains_key("schema")
                || o.get("artifact")
                    .and_then(Value::as_str)
                    .is_some_and(super::glob::is_artifact_glob)
        })
    }),
];

/// The version `scenario` (a frozen or authored scenario, read loosely) and
/// the cassette's top-level fields `doc` need.
pub fn required_version(scenario: &Map<String, Value>, doc: &Map<String, Value>) -> u64 {
    let mut version = HASH_FORMAT_EPOCH;
    if scenario.get("lane").and_then(Value::as_str) == Some("remote") {
        version = version.max(11);
    }
    if scenario
        .get("workspace_fixture")
        .is_some_and(|v| !v.is_null())
    {
        version = version.max(14);
    }
    let remote = scenario.get("lane").and_then(Value::as_str) == Some("remote");
    let items = scenario.get("assert").and_then(Value::as_array);
    for item in items.into_iter().flatten().filter_map(Value::as_object) {
        // A v14 reader grades the local file of a remote lane's artifact_json;
        // v15 fails it.
        if remote && item.contains_key("artifact_json") {
            version = version.max(15);
        }
        for (since, uses) in FEATURES {
            if uses(item) {
                version = version.max(*since);
            }
        }
    }
    if doc.get("answerChannel").and_then(Value::as_str) == Some("none") {
        version = version.max(15);
    }
    if hook_failure_blocks_declared(doc) {
        version = version.max(16);
    }
    version
}

/// A non-empty `hookFailureBlocks` inventory (events listed, or `unknown`).
fn hook_failure_blocks_declared(doc: &Map<String, Value>) -> bool {
    let Some(blocks) = doc.get("hookFailureBlocks").and_then(Value::as_object) else {
        return false;
    };
    blocks.get("unknown").and_then(Value::as_bool) == Some(true)
        || blocks
            .get("events")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn v(scenario: Value) -> u64 {
        v_doc(scenario, json!({}))
    }

    fn v_doc(scenario: Value, doc: Value) -> u64 {
        required_version(scenario.as_object().unwrap(), doc.as_object().unwrap())
    }

    fn a(item: Value) -> u64 {
        v(json!({"prompt": "x", "assert": [item]}))
    }

    /// test/cassette-v13-object-form.test.ts
    #[test]
    fn the_object_form_of_the_tool_keys_stamps_13() {
        assert_eq!(
            a(json!({"tool_called": {"tool": "Bash", "input": {"command": "x"}}})),
            13
        );
        assert_eq!(a(json!({"tool_not_called": {"tool": "Bash"}})), 13);
        assert_eq!(a(json!({"tool_called": "Bash"})), 12);
        assert_eq!(v(json!({"prompt": "x", "assert": []})), 12);
        assert_eq!(v(json!({"prompt": "x", "assert": "not-an-array"})), 12);
    }

    /// test/cassette-v14.test.ts
    #[test]
    fn include_fork_results_stamps_14_whatever_its_value() {
        let sm = |extra: Value| {
            let mut o = json!({"rubric": ["r"]});
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            json!({"semantic_matches": o})
        };
        assert_eq!(a(sm(json!({"include_fork_results": true}))), 14);
        assert_eq!(a(sm(json!({"include_fork_results": false}))), 14);
        // In 2.0.0 already (its `semantic_matches` reads it).
        assert_eq!(a(sm(json!({"include_subagent_text": true}))), 12);
        assert_eq!(a(sm(json!({"include_subagent_text": false}))), 12);
        assert_eq!(
            v(json!({"prompt": "x", "assert": [{"tool_called": {"tool": "Bash"}}, sm(json!({}))]})),
            13
        );
        assert_eq!(
            v(json!({"prompt": "x", "assert": [{"semantic_matches": null}, 5, null]})),
            12
        );
    }

    /// cowork-harness 2.0.0 refuses `semantic_matches.evidence_files` as an
    /// unrecognized key: a scenario using it stamps 14 (reel's departure from
    /// the original's 12), whatever else it holds or its other options.
    #[test]
    fn evidence_files_stamps_14_so_a_2_0_reader_says_too_new() {
        let sm = |o: Value| a(json!({ "semantic_matches": o }));
        assert_eq!(
            sm(json!({"rubric": ["r"], "evidence_files": ["outputs/a.md"]})),
            14
        );
        assert_eq!(
            sm(json!({"rubric": ["r"], "include_subagent_text": true,
                "evidence_files": ["outputs/**/*.md"]})),
            14
        );
        assert_eq!(sm(json!({"rubric": ["r"], "min_pass": 1})), 12);
        // A v15 key in the same scenario still wins.
        assert_eq!(
            v(json!({"prompt": "x", "assert": [
                {"gates_all_scripted": true},
                {"semantic_matches": {"rubric": ["r"], "evidence_files": ["outputs/a.md"]}}]})),
            15
        );
        // `semantic_pairwise` (v14 already) carrying it stays 14.
        assert_eq!(
            a(json!({"semantic_pairwise": {"refs": ["r"], "evidence_files": ["outputs/a.md"]}})),
            14
        );
    }

    /// reel's `baseline_transcript` stamps 14, as a path (authored) or
    /// inlined (frozen), so 2.0.0 says "too new" rather than judging the
    /// rubric alone; a v15 key beside it still wins.
    #[test]
    fn a_baseline_transcript_stamps_14() {
        let sm =
            |b: Value| a(json!({"semantic_matches": {"rubric": ["r"], "baseline_transcript": b}}));
        assert_eq!(sm(json!("baselines/c/b.jsonl")), 14);
        assert_eq!(sm(json!({"file": "b.jsonl", "text": "{}\n"})), 14);
        assert_eq!(
            v(json!({"prompt": "x", "assert": [
                {"gates_all_scripted": true},
                {"semantic_matches": {"rubric": ["r"], "baseline_transcript": "b.jsonl"}}]})),
            15
        );
    }

    /// test/cassette-v15.test.ts
    #[test]
    fn the_v15_forms_stamp_15_and_the_bare_hook_event_blocked_does_not() {
        for item in [
            json!({"no_hook_event_blocked": true}),
            json!({"no_hook_event_blocked": {"event": "Stop"}}),
            json!({"hook_event_blocked": {"event": "Stop", "max": 0}}),
            json!({"hook_decision": {"event": "PreToolUse", "decision": "deny"}}),
            json!({"gates_all_scripted": true}),
            json!({"artifact_json": {"artifact": "outputs/artifacts/runs/*/run_status.json",
                "match": "each", "path": "status", "equals": "complete"}}),
        ] {
            assert_eq!(a(item.clone()), 15, "{item}");
        }
        assert_eq!(a(json!({"hook_event_blocked": "Stop"})), 12);
        let aj = |extra: Value| {
            let mut o = json!({"path": "status", "equals": "ok"});
            o.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            a(json!({"artifact_json": o}))
        };
        assert_eq!(aj(json!({"artifact": "outputs/runs/*/s.json"})), 15);
        assert_eq!(
            aj(json!({"artifact": "outputs/**/s.json", "match": "any"})),
            15
        );
        assert_eq!(
            aj(json!({"artifact": "outputs/s.json", "match": "each"})),
            15
        );
        assert_eq!(
            aj(json!({"artifact": "outputs/runs/?.json", "match": "each", "authored": true})),
            15
        );
        assert_eq!(aj(json!({"artifact": "outputs/s.json"})), 12);
        assert_eq!(
            aj(json!({"artifact": "outputs/s.json", "authored": true})),
            14
        );
        assert_eq!(a(json!({"result": "success"})), 12);
        let remote = json!({"prompt": "x", "lane": "remote",
            "assert": [{"artifact_json": {"artifact": "outputs/s.json", "path": "a"}}]});
        assert_eq!(v(remote), 15);
    }

    /// test/cassette-v16.test.ts
    #[test]
    fn a_non_empty_hook_failure_inventory_stamps_16() {
        let x = json!({"prompt": "x"});
        assert_eq!(
            v_doc(
                x.clone(),
                json!({"hookFailureBlocks": {"events": ["PreToolUse"]}})
            ),
            16
        );
        assert_eq!(
            v_doc(
                x.clone(),
                json!({"hookFailureBlocks": {"unknown": true, "why": "x"}})
            ),
            16
        );
        for scenario in [
            json!({"prompt": "x"}),
            json!({"prompt": "x", "lane": "remote"}),
            json!({"prompt": "x", "workspace_fixture": "f"}),
        ] {
            let before = v(scenario.clone());
            assert_eq!(
                v_doc(
                    scenario.clone(),
                    json!({"hookFailureBlocks": {"events": []}})
                ),
                before
            );
        }
        assert_eq!(
            v_doc(
                x,
                json!({"answerChannel": "none", "hookFailureBlocks": {"events": []}})
            ),
            15
        );
    }
}
