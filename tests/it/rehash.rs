//! `reel rehash`: the original's rehash cases (tests/compat/expected),
//! the byte-exact legacy write, idempotence and refusals.

use serde_json::{Value, json};

use crate::support;
use crate::support::compat::{cases, expected, run_case};
use crate::support::fixture::PDF;
use crate::support::{Fixture, assert_schema, js_pretty, read_doc};

/// Text rows (`✓|✗|· file: reason` and the summary) of a text case.
fn rows(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| ["✗ ", "· ", "✓ "].iter().any(|p| l.starts_with(p)))
        .map(str::to_owned)
        .collect()
}

/// `diff old new` in the normal format (what capture.sh stored).
fn normal_diff(old: &str, new: &str) -> String {
    use similar::{DiffOp, TextDiff};
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let range = |start: usize, len: usize| {
        if len <= 1 {
            format!("{}", start + 1)
        } else {
            format!("{},{}", start + 1, start + len)
        }
    };
    let mut out = String::new();
    for op in TextDiff::from_slices(&a, &b).ops() {
        let (tag, o, n) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => ('d', (old_index, old_len), (new_index, 0)),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => ('a', (old_index, 0), (new_index, new_len)),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => ('c', (old_index, old_len), (new_index, new_len)),
        };
        // `a` names the line after which lines are added, `d` the line after
        // which they would have been.
        let left = if tag == 'a' {
            o.0.to_string()
        } else {
            range(o.0, o.1)
        };
        let right = if tag == 'd' {
            n.0.to_string()
        } else {
            range(n.0, n.1)
        };
        out.push_str(&format!("{left}{tag}{right}\n"));
        for l in &a[o.0..o.0 + o.1] {
            out.push_str(&format!("< {l}\n"));
        }
        if o.1 > 0 && n.1 > 0 {
            out.push_str("---\n");
        }
        for l in &b[n.0..n.0 + n.1] {
            out.push_str(&format!("> {l}\n"));
        }
    }
    out
}

fn check(fx: &Fixture, name: &str) {
    let case = cases(name).into_iter().find(|c| c.name == name).unwrap();
    let got = run_case(fx, &case);
    assert_eq!(got.code, case.rc, "{name}: exit code\n{}", got.stderr);
    let exp_out = expected(name, "stdout");
    if exp_out.trim_start().starts_with('{') {
        let mut e: Value = serde_json::from_str(&exp_out).unwrap();
        let g: Value = serde_json::from_str(&got.stdout).unwrap();
        assert_schema("rehash.json", &g);
        e["tool"] = json!("reel");
        e["version"] = g["version"].clone();
        assert_eq!(e, g, "{name}");
    } else if case.rc != 2 {
        assert_eq!(rows(&expected(name, "stderr")), rows(&got.stderr), "{name}");
    }
}

#[test]
fn the_writer_matches_json_stringify_2_space() {
    // What node's `JSON.stringify(d, null, 2)` writes for this document
    // (non-ASCII raw, lowercase \u escapes, empty containers inline, no
    // trailing newline) — the writer capture.sh used for the legacy twin.
    let doc: serde_json::Map<String, Value> = serde_json::from_str(
        r#"{"a":"\u2014\u0001\"\\/","b":[],"c":{},"d":[1,{"x":null,"y":true}],"e":-0.5}"#,
    )
    .unwrap();
    let expected = "{\n  \"a\": \"\u{2014}\\u0001\\\"\\\\/\",\n  \"b\": [],\n  \"c\": {},\n  \"d\": [\n    1,\n    {\n      \"x\": null,\n      \"y\": true\n    }\n  ],\n  \"e\": -0.5\n}";
    assert_eq!(String::from_utf8(js_pretty(&doc)).unwrap(), expected);
    // And a committed cassette is a fixpoint of parse + write.
    let p = support::compat(PDF);
    let once = js_pretty(&read_doc(&p));
    let twice = js_pretty(&serde_json::from_slice(&once).unwrap());
    assert_eq!(once, twice);
}

#[test]
fn compat_cases_independent_of_the_live_tree() {
    let fx = Fixture::capture_layout();
    for name in [
        "rehash-noargs",
        "rehash-current-file-text",
        "rehash-current-dir-json",
        "rehash-legacy-dir-unresolvable",
    ] {
        check(&fx, name);
    }
    // The current (v12) copy is untouched by rehash.
    assert_eq!(
        std::fs::read(fx.scratch().join("current/example-pdf-skill.cassette.json")).unwrap(),
        std::fs::read(fx.peer().join(PDF)).unwrap()
    );
}

#[test]
fn compat_legacy_migration_matches_the_original_byte_for_byte() {
    let fx = Fixture::capture_layout();
    let legacy = fx.scratch().join("legacy/legacy-pdf.cassette.json");
    let before = std::fs::read(&legacy).unwrap();
    check(&fx, "rehash-legacy-dryrun-text");
    check(&fx, "rehash-legacy-dryrun-json");
    assert_eq!(std::fs::read(&legacy).unwrap(), before, "dry-run wrote");
    check(&fx, "rehash-legacy-write-text");
    // Exactly the original's diff: $schema, cassetteVersion, hashFormat appended.
    let after = std::fs::read_to_string(&legacy).unwrap();
    let before = String::from_utf8(before).unwrap();
    assert_eq!(
        normal_diff(&before, &after),
        expected("rehash-legacy-write", "diff")
    );
    check(&fx, "rehash-legacy-again-text");
    // And the migrated cassette verifies clean (with the session it needs).
    let out = support::reel()
        .args([
            "verify-cassettes",
            legacy.to_str().unwrap(),
            "--session",
            "examples/sessions/default.yaml",
        ])
        .current_dir(fx.peer())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn refusals_name_the_reason_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = read_doc(&support::compat(PDF));
    // pre-floor
    let mut old = pdf.clone();
    old.insert("cassetteVersion".into(), json!(8));
    std::fs::write(dir.path().join("a-old.cassette.json"), js_pretty(&old)).unwrap();
    // v11 claiming a hash format: the stamp and digests disagree
    let mut bad = pdf.clone();
    bad.insert("cassetteVersion".into(), json!(11));
    std::fs::write(dir.path().join("b-bad.cassette.json"), js_pretty(&bad)).unwrap();
    // v12: skipped
    std::fs::write(dir.path().join("c-current.cassette.json"), js_pretty(&pdf)).unwrap();
    let before: Vec<Vec<u8>> = ["a-old", "b-bad", "c-current"]
        .iter()
        .map(|n| std::fs::read(dir.path().join(format!("{n}.cassette.json"))).unwrap())
        .collect();
    let out = support::reel()
        .args([
            "rehash",
            dir.path().to_str().unwrap(),
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema("rehash.json", &v);
    assert_eq!(
        (
            v["migrated"].as_u64(),
            v["skipped"].as_u64(),
            v["errors"].as_u64()
        ),
        (Some(0), Some(1), Some(2))
    );
    let reasons: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons[0].contains("older than the minimum supported version v9")
            && reasons[0].contains("re-record")
    );
    assert!(reasons[1].contains("pre-epoch") && reasons[1].contains("re-record"));
    assert_eq!(reasons[2], "already at v12");
    for (n, b) in ["a-old", "b-bad", "c-current"].iter().zip(before) {
        assert_eq!(
            std::fs::read(dir.path().join(format!("{n}.cassette.json"))).unwrap(),
            b,
            "{n} was written"
        );
    }
    // The text summary names every outcome and the fix: a status line per
    // cassette and the tally by default, the original's rows with --verbose.
    let out = support::reel()
        .args(["rehash", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    for n in ["a-old", "b-bad"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with("FAIL ") && l.contains(&format!("{n}.cassette.json"))),
            "{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("SKIP ")
                && l.ends_with("c-current.cassette.json  already at v12")),
        "{text}"
    );
    assert!(text.contains("\n0 passed, 2 failed, 1 skipped\n"), "{text}");
    assert!(text.contains("hint:"), "{text}");
    let out = support::reel()
        .args(["rehash", dir.path().to_str().unwrap(), "--verbose"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("✗ rehash: 0 migrated, 1 skipped, 2 could not migrate"),
        "{text}"
    );
    assert!(text.contains("hint:"), "{text}");
}

#[test]
fn usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| support::reel().args(args).output().unwrap().status.code();
    assert_eq!(run(&["rehash"]), Some(2));
    assert_eq!(run(&["rehash", "/no/such/dir"]), Some(2));
    // --session with a directory
    assert_eq!(
        run(&[
            "rehash",
            dir.path().to_str().unwrap(),
            "--session",
            support::compat("examples/sessions/default.yaml")
                .to_str()
                .unwrap()
        ]),
        Some(2)
    );
    // empty directory: nothing to migrate, exit 0
    let out = support::reel()
        .args(["rehash", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to migrate"));
}
