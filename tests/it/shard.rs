//! `--shard I/N` on replay, verify-cassettes and record: the shards of the
//! bundled cassettes are disjoint and cover them, each shard writes its own
//! JUnit, and a bad value is a usage error (exit 2) naming the flag.

use std::collections::BTreeSet;

use crate::support;

/// The cassette files a `replay --junit` report names (one suite each).
fn junit_suites(path: &std::path::Path) -> Vec<String> {
    let xml = std::fs::read_to_string(path).unwrap();
    xml.split("<testsuite name=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_owned())
        .collect()
}

fn bundled() -> BTreeSet<String> {
    std::fs::read_dir(support::repo().join("cassettes"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cassette.json"))
        .collect()
}

#[test]
fn replay_shards_partition_the_bundled_cassettes_each_with_its_junit() {
    let tmp = tempfile::tempdir().unwrap();
    for total in [1u64, 2, 3, 5, 11] {
        let mut seen = Vec::new();
        for i in 1..=total {
            let junit = tmp.path().join(format!("junit-{i}-of-{total}.xml"));
            support::reel()
                .current_dir(support::repo())
                .args(["replay", "cassettes/", "--shard", &format!("{i}/{total}")])
                .arg("--junit")
                .arg(&junit)
                .assert()
                .success();
            seen.extend(
                junit_suites(&junit)
                    .into_iter()
                    .map(|f| f.strip_prefix("cassettes/").unwrap().to_owned()),
            );
        }
        let unique: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(
            unique.len(),
            seen.len(),
            "a cassette in two shards of {total}: {seen:?}"
        );
        assert_eq!(
            unique,
            bundled(),
            "the shards of {total} do not cover the directory"
        );
    }
}

#[test]
fn an_empty_shard_is_a_notice_and_exit_0() {
    // A handful of bundled cassettes over 40 shards: some shard draws none.
    let empty = (1..=40u64)
        .find(|i| {
            !bundled()
                .iter()
                .any(|n| reel::shard::Shard::new(*i, 40).unwrap().contains_key(n))
        })
        .unwrap();
    let out = support::reel()
        .current_dir(support::repo())
        .args(["replay", "cassettes/", "--output-format", "json", "--shard"])
        .arg(format!("{empty}/40"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "shard {empty}/40 holds none of the {} file(s)",
            bundled().len()
        )),
        "{stderr}"
    );
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["results"], serde_json::json!([]));
    // `ok` means "something replayed and all of it passed" (schema/replay.json).
    assert_eq!(env["ok"], false);
}

#[test]
fn an_empty_rerun_shard_runs_no_agent_and_exits_0() {
    let empty = (1..=40u64)
        .find(|i| {
            !bundled()
                .iter()
                .any(|n| reel::shard::Shard::new(*i, 40).unwrap().contains_key(n))
        })
        .unwrap();
    let out = support::reel()
        .current_dir(support::repo())
        .args(["rerun", "cassettes/", "--output-format", "json", "--shard"])
        .arg(format!("{empty}/40"))
        // Nothing may start an agent.
        .env("REEL_CLAUDE_BIN", "/nonexistent/claude")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(env["results"], serde_json::json!([]));
}

#[test]
fn verify_cassettes_shards_partition_the_bundled_cassettes() {
    let total = 3;
    let mut seen = Vec::new();
    for i in 1..=total {
        let out = support::reel()
            .current_dir(support::repo())
            .args(["verify-cassettes", "cassettes/", "--output-format", "json"])
            .args(["--allow-patterns-file", "cassettes/verify-allow.txt"])
            .arg("--shard")
            .arg(format!("{i}/{total}"))
            .output()
            .unwrap();
        let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for r in env["results"].as_array().unwrap() {
            let f = r["file"].as_str().unwrap();
            seen.push(f.strip_prefix("cassettes/").unwrap().to_owned());
            // The shard is the one the library's partition names.
            assert!(
                reel::shard::Shard::new(i, total)
                    .unwrap()
                    .contains_key(seen.last().unwrap())
            );
        }
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "{seen:?}");
    assert_eq!(unique, bundled());
}

#[test]
fn a_file_named_directly_shards_like_the_same_file_found_in_its_directory() {
    for i in 1..=3u64 {
        let shard = format!("{i}/3");
        let by_dir = support::reel()
            .current_dir(support::repo())
            .args([
                "verify-cassettes",
                "cassettes/",
                "--skip-privacy",
                "--output-format",
                "json",
            ])
            .args(["--shard", &shard])
            .output()
            .unwrap();
        let mut cmd = support::reel();
        cmd.current_dir(support::repo())
            .args([
                "verify-cassettes",
                "--skip-privacy",
                "--output-format",
                "json",
            ])
            .args(["--shard", &shard]);
        for n in bundled() {
            cmd.arg(format!("cassettes/{n}"));
        }
        let by_name = cmd.output().unwrap();
        let files = |o: &std::process::Output| -> Vec<String> {
            let env: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            env["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["file"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(files(&by_dir), files(&by_name), "shard {shard}");
    }
}

#[test]
fn bad_shard_values_are_usage_errors_naming_the_flag() {
    for cmd in ["replay", "verify-cassettes", "record", "rerun"] {
        for (bad, says) in [
            ("0/3", "numbered from 1"),
            ("4/3", "between 1 and 3"),
            ("1/0", "at least 1"),
            ("two/3", "expected I/N"),
            ("3", "expected I/N"),
        ] {
            let target = if cmd == "record" {
                "scenarios/"
            } else {
                "cassettes/"
            };
            let out = support::reel()
                .current_dir(support::repo())
                .args([cmd, target, "--shard", bad])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd} --shard {bad}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("--shard") && stderr.contains(says) && stderr.contains(bad),
                "{cmd} --shard {bad}: {stderr}"
            );
        }
    }
}
