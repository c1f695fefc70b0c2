//! `verify-cassettes --max-age` and `--orphans` over a copy of the bundled
//! project (cassettes, scenarios, sessions, skills): the finding, the clean
//! case, exit codes and the JSON envelope against `schema/verify-cassettes.json`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::assert_schema;
use crate::support::{self, RunExt};

/// A private copy of the bundled project, so a test can age or delete
/// files: a git repository, as the skill-triggered cassettes were recorded
/// in one (git file-set mode).
fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["cassettes", "scenarios", "sessions", "skills"] {
        support::copy_tree(&support::repo().join(d), &tmp.path().join(d));
    }
    let git = |args: &[&str]| {
        let st = std::process::Command::new("git")
            .current_dir(tmp.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .status()
            .unwrap();
        assert!(st.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "fixture"]);
    tmp
}

fn edit_cassette(path: &Path, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let mut doc: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

/// `reel verify-cassettes cassettes/ <extra> --output-format json` in `dir`:
/// (exit code, envelope).
fn verify_json(dir: &Path, extra: &[&str]) -> (i32, Value) {
    let run = support::reel()
        .current_dir(dir)
        .args(["verify-cassettes", "cassettes/", "--output-format", "json"])
        .args(["--allow-patterns-file", "cassettes/verify-allow.txt"])
        .args(extra)
        .run();
    let env = run.json();
    assert_schema("verify-cassettes.json", &env);
    (run.code, env)
}

fn verify_text(dir: &Path, extra: &[&str]) -> (i32, String) {
    let run = support::reel()
        .current_dir(dir)
        .args(["verify-cassettes", "cassettes/"])
        .args(["--allow-patterns-file", "cassettes/verify-allow.txt"])
        .args(extra)
        .run();
    (run.code, run.stderr)
}

fn row<'a>(env: &'a Value, file: &str) -> &'a Value {
    env["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["file"] == format!("cassettes/{file}"))
        .unwrap_or_else(|| panic!("no row for {file}: {env}"))
}

#[test]
fn max_age_is_clean_for_recent_cassettes() {
    let p = project();
    // The bundled cassettes were recorded in 2026; a century is always enough.
    let (code, env) = verify_json(p.path(), &["--max-age", "5200w"]);
    assert_eq!(code, 0, "{env}");
    assert!(
        env["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("age").is_none())
    );
}

#[test]
fn max_age_fails_an_old_cassette_and_says_how_to_refresh_it() {
    let p = project();
    let old = p.path().join("cassettes/write-note.cassette.json");
    edit_cassette(&old, |d| {
        d["timelineHeader"]["startedAtWall"] = "2020-01-01T00:00:00.000Z".into();
    });
    // 2020 is more than 300 weeks before any day this test runs.
    let (code, env) = verify_json(p.path(), &["--max-age", "300w"]);
    assert_eq!(code, 1, "{env}");
    assert_eq!(env["ok"], false);
    let age = row(&env, "write-note.cassette.json")["age"][0]
        .as_str()
        .unwrap();
    assert!(age.contains("recorded 2020-01-01T00:00:00.000Z"), "{age}");
    assert!(age.contains("older than --max-age 300w"), "{age}");
    assert!(
        age.contains("reel rerun --write cassettes/write-note.cassette.json"),
        "{age}"
    );
    assert!(
        age.contains("reel record scenarios/write-note.yaml"),
        "{age}"
    );
    assert!(row(&env, "pick-format.cassette.json").get("age").is_none());

    let (code, text) = verify_text(p.path(), &["--max-age", "300w"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("STALE cassettes/write-note.cassette.json  older than --max-age\n    fail: max-age: recorded 2020-01-01"),
        "{text}"
    );
    assert!(
        text.contains(
            "hint: a cassette older than --max-age: refresh it with `reel rerun --write CASSETTE`"
        ),
        "{text}"
    );
    // The original's layout (--verbose) carries the finding too.
    let (code, text) = verify_text(p.path(), &["--max-age", "300w", "--verbose"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("✗ cassettes/write-note.cassette.json: [max-age] recorded 2020-01-01"),
        "{text}"
    );
    assert!(text.contains("+ cassette(s) over --max-age"), "{text}");
}

#[test]
fn max_age_falls_back_to_the_newest_event_timestamp_and_cannot_age_a_dateless_cassette() {
    let p = project();
    let c = p.path().join("cassettes/write-note.cassette.json");
    edit_cassette(&c, |d| {
        d.shift_remove("timelineHeader");
    });
    // The events carry 2026 timestamps: within a century, not within an hour.
    assert_eq!(verify_json(p.path(), &["--max-age", "5200w"]).0, 0);
    let (code, env) = verify_json(p.path(), &["--max-age", "1h"]);
    assert_eq!(code, 1);
    let age = row(&env, "write-note.cassette.json")["age"][0]
        .as_str()
        .unwrap();
    assert!(age.contains("recorded 2026-"), "{age}");

    // No timestamp anywhere: could not verify (3), never a silent pass.
    edit_cassette(&c, |d| {
        support::cassette::edit_lines(&mut d["events"], |line| {
            support::cassette::rename_keys(line, "timestamp", "ts");
        });
    });
    let (code, env) = verify_json(p.path(), &["--max-age", "5200w"]);
    assert_eq!(code, 3, "{env}");
    let unverifiable = row(&env, "write-note.cassette.json")["unverifiable"].to_string();
    assert!(unverifiable.contains("no recording time"), "{unverifiable}");
}

#[test]
fn a_bad_max_age_is_a_usage_error() {
    for bad in ["90", "0d", "ninety", "9q"] {
        let out = support::reel()
            .current_dir(support::repo())
            .args(["verify-cassettes", "cassettes/", "--max-age", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--max-age") && stderr.contains("90d"),
            "{stderr}"
        );
    }
}

#[test]
fn orphans_clean_on_the_bundled_project() {
    let p = project();
    let (code, env) = verify_json(p.path(), &["--orphans"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["orphanScenarios"], serde_json::json!([]));
    assert!(
        env["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("orphan").is_none())
    );
}

#[test]
fn orphans_finds_a_scenario_without_cassette_and_a_cassette_without_scenario() {
    let p = project();
    std::fs::remove_file(p.path().join("cassettes/write-note.cassette.json")).unwrap();
    std::fs::remove_file(p.path().join("scenarios/pick-format.yaml")).unwrap();
    // Without the flag neither is a finding.
    let (code, env) = verify_json(p.path(), &[]);
    assert!(env.get("orphanScenarios").is_none(), "{env}");
    assert_eq!(code, 0, "{env}");

    let (code, env) = verify_json(p.path(), &["--orphans"]);
    assert_eq!(code, 1, "{env}");
    let scenarios: Vec<&str> = env["orphanScenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(scenarios, ["scenarios/write-note.yaml"]);
    let orphan = row(&env, "pick-format.cassette.json")["orphan"][0]
        .as_str()
        .unwrap();
    assert!(
        orphan.contains("../scenarios/pick-format.yaml") && orphan.contains("is gone"),
        "{orphan}"
    );
    assert!(
        row(&env, "pick-features.cassette.json")
            .get("orphan")
            .is_none()
    );

    let (code, text) = verify_text(p.path(), &["--orphans"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("FAIL scenarios/write-note.yaml  no cassette records it\n    fail: orphan: no cassette records this scenario"),
        "{text}"
    );
    assert!(
        text.contains("FAIL cassettes/pick-format.cassette.json  its scenario is gone\n    fail: orphan: the recorded scenarioSource"),
        "{text}"
    );
    let (code, text) = verify_text(p.path(), &["--orphans", "--verbose"]);
    assert_eq!(code, 1);
    assert!(
        text.contains("✗ scenarios/write-note.yaml: [orphan] no cassette records this scenario"),
        "{text}"
    );
    assert!(
        text.contains("✗ cassettes/pick-format.cassette.json: [orphan]"),
        "{text}"
    );
    assert!(text.contains("+ 2 orphan(s)"), "{text}");
}

#[test]
fn orphan_scenarios_are_judged_on_the_whole_batch_and_reported_by_one_shard() {
    let p = project();
    std::fs::remove_file(p.path().join("cassettes/write-note.cassette.json")).unwrap();
    let mut reported: Vec<PathBuf> = Vec::new();
    for i in 1..=3 {
        let (_, env) = verify_json(p.path(), &["--orphans", "--shard", &format!("{i}/3")]);
        reported.extend(
            env["orphanScenarios"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| PathBuf::from(o["scenario"].as_str().unwrap())),
        );
    }
    assert_eq!(reported, [PathBuf::from("scenarios/write-note.yaml")]);
}
