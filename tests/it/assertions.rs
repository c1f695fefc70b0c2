//! `reel assertions`: the catalog on stdout, its JSON schema, and its
//! buckets checked against what replay actually does with each of the 92
//! keys on cassettes with and without controlOut, the manifest and the
//! pre-run baseline.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::assert_schema;
use crate::support::{self, Failures, RunExt};

fn catalog_json(args: &[&str]) -> (i32, Value) {
    let run = support::reel()
        .arg("assertions")
        .args(args)
        .args(["--output-format", "json"])
        .run();
    (run.code, run.json())
}

#[test]
fn lists_all_92_keys_against_the_schema() {
    let (rc, v) = catalog_json(&[]);
    assert_eq!(rc, 0);
    assert_schema("assertions.json", &v);
    let keys: BTreeSet<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 92);
    assert!(keys.contains("no_unexpected_files") && keys.contains("semantic_matches"));
}

/// Every key's example is YAML a user can paste into `assert:`: the text
/// `reel assertions KEY` prints parses back to exactly the catalog's example
/// (numbers stay numbers, not serde's arbitrary-precision wrapper).
#[test]
fn every_keys_example_is_yaml_a_user_can_paste() {
    let (_, v) = catalog_json(&[]);
    let mut failures = Failures::new();
    let entries = v["results"].as_array().unwrap();
    for e in entries {
        let key = e["key"].as_str().unwrap();
        let out = support::reel().args(["assertions", key]).run();
        let text = format!("{}{}", out.stdout, out.stderr);
        let Some(at) = text.find("  example:\n") else {
            failures.push(format!("{key}: no example in\n{text}"));
            continue;
        };
        let yaml: String = text[at + "  example:\n".len()..]
            .lines()
            .take_while(|l| l.starts_with("    "))
            .map(|l| format!("{}\n", &l[4..]))
            .collect();
        let parsed: Result<Value, _> = serde_yaml_ng::from_str(&yaml);
        failures.check(
            parsed
                .as_ref()
                .is_ok_and(|p| p["assert"][0][key] == e["example"]),
            || {
                format!(
                    "{key}: the example does not read back:\n{yaml}\nwant {}",
                    e["example"]
                )
            },
        );
    }
    failures.assert_none(entries.len());
}

#[test]
fn one_key_in_detail_and_an_unknown_key_is_a_usage_error() {
    let out = support::reel()
        .args(["assertions", "input_unmodified"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("input_unmodified\n"), "{text}");
    assert!(
        text.contains("parameter:  path glob | [path glob, …]"),
        "{text}"
    );
    assert!(text.contains("preRunHashes"), "{text}");
    assert!(out.stderr.is_empty());

    let out = support::reel()
        .args(["assertions", "tool_calld"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown assertion key `tool_calld`"), "{err}");
    let (rc, v) = catalog_json(&["nope"]);
    assert_eq!(rc, 2);
    assert_schema("assertions.json", &v);
    assert_eq!(v["ok"], json!(false));
}

/// The keys replay evaluated on `doc` when its `assert:` holds one item per
/// catalog key (each with the catalog's own example), and how many it skipped.
fn evaluated(doc: &Value) -> (BTreeSet<String>, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("all-keys.cassette.json");
    std::fs::write(&file, serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    let out = support::reel()
        .current_dir(tmp.path())
        .args([
            "replay",
            "all-keys.cassette.json",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let r = &v["results"][0];
    assert!(
        r["assertions"].is_array(),
        "replay did not evaluate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keys = r["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("source").is_none())
        .flat_map(|a| a["assertion"].as_object().unwrap().keys().cloned())
        .collect();
    (keys, r["skippedAssertions"]["full"].as_u64().unwrap())
}

#[test]
fn buckets_match_what_replay_does_with_every_key() {
    let (_, catalog) = catalog_json(&[]);
    let entries = catalog["results"].as_array().unwrap().clone();
    let base: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("cassettes/write-note.cassette.json"))
            .unwrap(),
    )
    .unwrap();
    let items: Vec<Value> = entries
        .iter()
        .map(|e| json!({ e["key"].as_str().unwrap(): e["example"].clone() }))
        .collect();
    let with = |drop: &[&str]| {
        let mut d = base.clone();
        d["scenario"]["assert"] = Value::Array(items.clone());
        for k in drop {
            d.as_object_mut().unwrap().shift_remove(*k);
        }
        d
    };
    // What the catalog says replay evaluates, given what the cassette carries.
    let expect = |control_out: bool, manifest: bool, baseline: bool| -> BTreeSet<String> {
        entries
            .iter()
            .filter(|e| e["replayEvaluates"] == json!(true))
            .filter(|e| control_out || e["needsControlOut"] == json!(false))
            .filter(|e| manifest || e["needsManifest"] == json!(false))
            .filter(|e| baseline || e["needsPreRunBaseline"].is_null())
            .map(|e| e["key"].as_str().unwrap().to_string())
            .collect()
    };
    let cases = [
        ("everything", with(&[]), expect(true, true, true)),
        (
            "no controlOut",
            with(&["controlOut"]),
            expect(false, true, true),
        ),
        (
            "no pre-run baseline",
            with(&["preRunPaths", "preRunHashes"]),
            expect(true, true, false),
        ),
        (
            "no manifest",
            with(&["artifacts", "preRunPaths", "preRunHashes"]),
            expect(true, false, false),
        ),
    ];
    let mut failures = Failures::new();
    let mut ran = 0;
    for (name, doc, want) in cases {
        ran += 1;
        failures.case(name, || {
            let (got, skipped) = evaluated(&doc);
            assert_eq!(got, want, "{name}: evaluated keys");
            // Every other item was skipped whole (one key per item).
            assert_eq!(
                skipped as usize,
                entries.len() - want.len(),
                "{name}: skipped items"
            );
        });
    }
    failures.assert_none(ran);
}
