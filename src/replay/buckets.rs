//! Bucket exclusion (docs/spec/replay.md §2.5 steps 9, 11, 12): which assertion
//! keys a cassette can evaluate, stripping the rest, and the loud skip tallies
//! (`skippedAssertions.{full,partial}`) with their warning lines.
//!
//! The key → bucket table is `crate::assert::catalog`; this module only
//! applies it to one cassette. It never evaluates an assertion.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::assert::catalog::{self, Bucket, bucket};

/// `skippedAssertions` of the run result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub full: usize,
    pub partial: usize,
}

/// What evidence the cassette carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence {
    /// `controlOut` present and non-empty.
    pub has_control_out: bool,
    /// `artifacts` present (`Some(len)`).
    pub artifacts: Option<usize>,
    pub has_pre_run_paths: bool,
    pub has_pre_run_hashes: bool,
    /// A live verdict: a present manifest makes every manifest key active,
    /// even an empty one (the run's files are the evidence).
    pub live: bool,
}

impl Evidence {
    /// Reads what `cassette` carries. Manifest-key activity is decided by
    /// `catalog::manifest_key_active` (its one home); this mirrors its inputs.
    pub fn of(cassette: &crate::cassette::Cassette) -> Evidence {
        let present = |k: &str| cassette.doc.get(k).is_some_and(|v| !v.is_null());
        Evidence {
            has_control_out: cassette.control_out().is_some_and(|c| !c.is_empty()),
            artifacts: cassette
                .doc
                .get("artifacts")
                .and_then(Value::as_array)
                .map(Vec::len),
            has_pre_run_paths: present("preRunPaths"),
            has_pre_run_hashes: present("preRunHashes"),
            live: false,
        }
    }

    /// Is `key` evaluated on this cassette?
    pub fn is_active(&self, key: &str) -> bool {
        match bucket(key) {
            Some(Bucket::Always) => true,
            Some(Bucket::NeedsControlOut) => self.has_control_out,
            Some(Bucket::NeedsManifest) => match catalog::needs_pre_run_baseline(key) {
                Some(field) => self.artifacts.is_some() && self.has_baseline(field),
                None => self.artifacts.is_some_and(|n| n > 0 || self.live),
            },
            // A live run has the evidence live-only keys need (or says
            // plainly that it lacks it); a replay never does.
            Some(Bucket::LiveOnly) => self.live,
            _ => false,
        }
    }

    /// Whether the cassette carries the pre-run baseline `field`.
    fn has_baseline(&self, field: &str) -> bool {
        match field {
            "preRunPaths" => self.has_pre_run_paths,
            "preRunHashes" => self.has_pre_run_hashes,
            _ => false,
        }
    }

    /// True when any manifest-bucket key is active (the manifest must be materialised).
    pub fn any_manifest_key_active(&self, items: &[Map<String, Value>]) -> bool {
        items
            .iter()
            .flatten()
            .any(|(k, _)| bucket(k) == Some(Bucket::NeedsManifest) && self.is_active(k))
    }
}

/// The outcome of exclusion.
#[derive(Debug, Clone, Default)]
pub struct Stripped {
    /// Assertions reduced to their active keys (empties dropped), in order.
    pub items: Vec<Map<String, Value>>,
    pub skipped: Skipped,
    /// `::warning::` / `::notice::` lines, in the order cowork-harness prints them.
    pub warnings: Vec<String>,
}

/// Strips `items` to the keys `evidence` supports and tallies what was skipped.
pub fn strip(items: &[Map<String, Value>], expect_denied: usize, evidence: &Evidence) -> Stripped {
    let baseline_warned = baseline_warned_keys(items, evidence);
    let mut warnings: Vec<String> = baseline_warned
        .iter()
        .filter_map(|k| catalog::needs_pre_run_baseline(k).map(baseline_warning))
        .collect();
    let mut out = Vec::new();
    let mut skipped = Skipped {
        full: expect_denied,
        partial: 0,
    };
    for item in items {
        // An item with no key at all is dropped without a tally (the original
        // skips it before counting).
        if item.is_empty() {
            continue;
        }
        let kept = kept_keys(item, evidence);
        if kept.is_empty() {
            skipped.full += 1;
            continue;
        }
        if dropped_outside(item, evidence, &baseline_warned) {
            skipped.partial += 1;
        }
        out.push(kept);
    }
    warnings.extend(skip_warnings(&skipped));
    Stripped {
        items: out,
        skipped,
        warnings,
    }
}

/// The baseline keys used here that the evidence cannot judge (a manifest
/// without the pre-run baseline they need): each gets its dedicated warning,
/// and their drop is not "partial".
fn baseline_warned_keys(items: &[Map<String, Value>], evidence: &Evidence) -> Vec<&'static str> {
    let uses = |key: &str| items.iter().any(|m| m.contains_key(key));
    catalog::names()
        .filter(|k| {
            catalog::needs_pre_run_baseline(k).is_some_and(|field| {
                uses(k) && evidence.artifacts.is_some() && !evidence.has_baseline(field)
            })
        })
        .collect()
}

/// What an assertion keeps: its keys the evidence can judge, rebuilt in the
/// original's strip order (the order the replayed result echoes it in).
fn kept_keys(item: &Map<String, Value>, evidence: &Evidence) -> Map<String, Value> {
    let mut kept: Map<String, Value> = catalog::replay_strip_order()
        .iter()
        .filter(|k| evidence.is_active(k))
        .filter_map(|k| {
            item.get(*k)
                .map(|v| (k.to_string(), crate::js::number::respell(v)))
        })
        .collect();
    // The replay strip order has no live-only key (a replay never keeps
    // one); a live verdict keeps them after the rest, in schema order.
    if evidence.live {
        for k in catalog::schema_order() {
            if bucket(k) == Some(Bucket::LiveOnly)
                && let Some(v) = item.get(*k)
            {
                kept.insert(k.to_string(), crate::js::number::respell(v));
            }
        }
    }
    kept
}

/// Did the assertion lose a key for a reason no other warning names?
fn dropped_outside(
    item: &Map<String, Value>,
    evidence: &Evidence,
    baseline_warned: &[&str],
) -> bool {
    item.keys().any(|k| {
        if evidence.is_active(k) {
            return false;
        }
        match bucket(k) {
            // Gate keys dropped for lack of controlOut are covered by the controlOut warning.
            Some(Bucket::NeedsControlOut) | Some(Bucket::Always) => false,
            Some(Bucket::NeedsManifest) => !baseline_warned.contains(&k.as_str()),
            _ => true,
        }
    })
}

/// The original's `::warning::` lines for what was skipped.
fn skip_warnings(skipped: &Skipped) -> Vec<String> {
    let mut warnings = Vec::new();
    if skipped.full > 0 {
        warnings.push(format!(
            "::warning:: [replay] skipped {} filesystem/egress/expect_denied assertions \
                (live-only) — not evaluated on replay",
            skipped.full
        ));
    }
    if skipped.partial > 0 {
        warnings.push(format!(
            "::warning:: [replay] {} mixed assertion(s) had their filesystem/egress half dropped — \
                only the content half was evaluated on replay",
            skipped.partial
        ));
    }
    warnings
}

/// The warning for a baseline key skipped because the cassette lacks its
/// pre-run baseline `field`.
fn baseline_warning(field: &str) -> String {
    match field {
        "preRunPaths" => {
            "::warning:: [replay] no_unexpected_files: cassette has no pre-run \
            manifest (recorded before the manifest seam) — key skipped on replay; re-record on a \
            current harness"
        }
        _ => {
            "::warning:: [replay] input_unmodified: cassette has no pre-run hash manifest \
            (recorded pre-fingerprinted-manifest or on microvm) — key skipped on replay; re-record \
            on harness with hash-manifest support (container/hostloop)"
        }
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(v: Value) -> Vec<Map<String, Value>> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_object().unwrap().clone())
            .collect()
    }

    /// The 16 extra assertions of spec §9 case a (plus the cassette's own 3).
    fn case_a() -> Vec<Map<String, Value>> {
        items(json!([
            {"result": "success"}, {"transcript_contains": "Auth"}, {"transcript_contains": "Audit"},
            {"question_asked": "features"}, {"question_options": {"contains": ["Auth"]}},
            {"questions_count_max": 1}, {"gate_answers_delivered": true}, {"gate_answer_count_min": 1},
            {"max_tokens": 1000}, {"max_cost_usd": 1}, {"max_turns": 10}, {"skill_triggered": "x"},
            {"no_unexpected_files": []}, {"input_unmodified": "outputs/**"},
            {"result": "success", "egress_denied": "a.com"}, {"file_absent": "outputs/x"},
            {"allow_stall": true}, {"tool_calls_max": 5}, {"skill_available": "x"}
        ]))
    }

    #[test]
    fn case_a_with_control_out_and_empty_manifest() {
        let ev = Evidence {
            has_control_out: true,
            artifacts: Some(0),
            has_pre_run_paths: true,
            has_pre_run_hashes: true,
            live: false,
        };
        let s = strip(&case_a(), 1, &ev);
        assert_eq!(
            s.skipped,
            Skipped {
                full: 2,
                partial: 1
            }
        );
        assert_eq!(s.items.len(), 18);
        assert!(s.items.iter().any(|m| m.contains_key("question_asked")));
        assert_eq!(s.items[14], items(json!([{"result": "success"}]))[0]);
        assert_eq!(s.warnings.len(), 2);
        assert!(s.warnings[0].contains("skipped 2 filesystem/egress/expect_denied"));
        assert!(s.warnings[1].starts_with("::warning:: [replay] 1 mixed assertion(s)"));
    }

    #[test]
    fn case_b_without_control_out_gate_keys_count_as_full_skips() {
        let ev = Evidence {
            has_control_out: false,
            artifacts: Some(0),
            has_pre_run_paths: true,
            has_pre_run_hashes: true,
            live: false,
        };
        let s = strip(&case_a(), 1, &ev);
        assert_eq!(
            s.skipped,
            Skipped {
                full: 7,
                partial: 1
            }
        );
        assert!(!s.items.iter().any(|m| m.contains_key("question_asked")));
    }

    #[test]
    fn baseline_keys_without_baseline_get_their_own_warning_not_partial() {
        let ev = Evidence {
            has_control_out: true,
            artifacts: Some(2),
            has_pre_run_paths: false,
            has_pre_run_hashes: false,
            live: false,
        };
        let s = strip(
            &items(
                json!([{"file_exists": "a", "no_unexpected_files": []}, {"input_unmodified": "x"}]),
            ),
            0,
            &ev,
        );
        assert_eq!(
            s.skipped,
            Skipped {
                full: 1,
                partial: 0
            }
        );
        assert!(s.warnings[0].contains(
            "no_unexpected_files: cassette has no pre-run manifest \
            (recorded before the manifest seam)"
        ));
        assert!(s.warnings[1].contains("input_unmodified: cassette has no pre-run hash manifest"));
    }

    #[test]
    fn manifest_activity_agrees_with_the_catalog() {
        use crate::assert::catalog::manifest_key_active;
        let base = json!({"scenario": {"prompt": "p", "session": "(inline)"}, "events": []});
        let variants = [
            json!({}),
            json!({"artifacts": []}),
            json!({"artifacts": [{"path": "a", "bytes": 0, "sha256": ""}]}),
            json!({"artifacts": [], "preRunPaths": [], "preRunHashes": {}}),
            json!({"artifacts": [{"path": "a", "bytes": 0, "sha256": ""}], "preRunPaths": ["x"]}),
            json!({"preRunPaths": [], "preRunHashes": {}}),
        ];
        for v in variants {
            let mut doc = base.as_object().unwrap().clone();
            doc.extend(v.as_object().unwrap().clone());
            let c = crate::cassette::Cassette::unchecked("x.cassette.json", doc, 12);
            let ev = Evidence::of(&c);
            for k in catalog::names() {
                if let Some(active) = manifest_key_active(k, &c) {
                    assert_eq!(ev.is_active(k), active, "{k} on {v}");
                }
            }
        }
    }

    #[test]
    fn manifest_keys_need_a_non_empty_manifest() {
        let ev = Evidence {
            has_control_out: true,
            artifacts: Some(0),
            has_pre_run_paths: true,
            has_pre_run_hashes: true,
            live: false,
        };
        assert!(!ev.is_active("file_exists"));
        assert!(ev.is_active("no_unexpected_files"));
        let none = Evidence {
            artifacts: None,
            ..ev
        };
        assert!(!none.is_active("no_unexpected_files"));
        assert!(!none.is_active("replay_protocol_fidelity"));
        assert!(!none.is_active("egress_denied"));
    }

    /// Parity with cowork-harness 2.0.0 (scripts/parity-assert.py): a stripped
    /// item is rebuilt in the original's strip order, and an empty item is
    /// dropped without counting as a skip.
    #[test]
    fn strip_reorders_like_the_original_and_ignores_empty_items() {
        let ev = Evidence {
            has_control_out: false,
            artifacts: Some(1),
            has_pre_run_paths: true,
            has_pre_run_hashes: true,
            live: false,
        };
        let s = strip(
            &items(json!([
                {"file_exists": "x", "result": "success"},
                {"result": "success", "tool_called": "W*", "question_asked": "q"},
                {}
            ])),
            0,
            &ev,
        );
        let keys: Vec<Vec<&str>> = s
            .items
            .iter()
            .map(|m| m.keys().map(String::as_str).collect())
            .collect();
        assert_eq!(
            keys,
            vec![vec!["result", "file_exists"], vec!["tool_called", "result"]]
        );
        assert_eq!(s.skipped, Skipped::default());
        assert!(s.warnings.is_empty());
    }
}
