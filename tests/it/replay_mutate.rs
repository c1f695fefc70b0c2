//! `reel replay --mutate`: the mutation-coverage report end to end, on the
//! real `cassettes/write-note` recording with a JSON deliverable added to its
//! manifest (no committed cassette writes JSON). Named `replay_mutate` so
//! `cargo test --test it replay` runs it too.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{self, CassetteDoc, Failures, Fixture, RunExt};

const METRICS: &str = "{\"total\": 42, \"currency\": \"EUR\", \"ok\": true}";

/// A temp dir holding `write-note` with `outputs/metrics.json` (body
/// [`METRICS`]) added to the manifest and to `no_unexpected_files`, then
/// `edit` applied to the document.
fn fixture(edit: impl FnOnce(&mut Value)) -> (Fixture, PathBuf) {
    let fx = Fixture::new();
    let src = support::repo().join("cassettes/write-note.cassette.json");
    let mut d = CassetteDoc::from_file(&src).into_value();
    d["artifacts"].as_array_mut().unwrap().push(json!({
        "path": "outputs/metrics.json",
        "bytes": METRICS.len(),
        "sha256": hex::encode(Sha256::digest(METRICS.as_bytes())),
        "body": METRICS,
    }));
    let asserts = d["scenario"]["assert"].as_array_mut().unwrap();
    for a in asserts.iter_mut() {
        if a.get("no_unexpected_files").is_some() {
            a["no_unexpected_files"] = json!(["outputs/note.md", "outputs/metrics.json"]);
        }
    }
    edit(&mut d);
    let path = fx.write(
        "write-note.cassette.json",
        serde_json::to_string_pretty(&d).unwrap(),
    );
    (fx, path)
}

fn add_asserts(d: &mut Value, items: Value) {
    let asserts = d["scenario"]["assert"].as_array_mut().unwrap();
    asserts.extend(items.as_array().unwrap().iter().cloned());
}

fn json_check(path: &str, equals: Value) -> Value {
    json!({"artifact_json": {"artifact": "outputs/metrics.json", "path": path, "equals": equals}})
}

/// Runs `reel replay <file> <args> --verbose` in `dir` (text mode: the
/// original's layout, whose `[mutate]` lines these tests compare); returns
/// (exit, stdout, stderr).
fn replay(dir: &Path, file: &Path, args: &[&str]) -> (i32, String, String) {
    let run = support::reel()
        .current_dir(dir)
        .arg("replay")
        .arg(file)
        .args(args)
        .arg("--verbose")
        .run();
    (run.code, run.stdout, run.stderr)
}

fn replay_json(dir: &Path, file: &Path, args: &[&str]) -> (i32, Value, String) {
    let mut all = args.to_vec();
    all.extend(["--output-format", "json"]);
    let (rc, stdout, stderr) = replay(dir, file, &all);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{stdout}\n{stderr}"));
    (rc, v, stderr)
}

/// The envelope without `results[0].mutation` (returned), with the random
/// replay temp-dir names (cited in evidence strings) made comparable.
fn split_mutation(v: &Value) -> (Value, Option<Value>) {
    let mut v = v.clone();
    let report = v["results"][0]
        .as_object_mut()
        .and_then(|r| r.remove("mutation"));
    let text = v.to_string();
    let re = regex::Regex::new(r"reel-replay-[A-Za-z0-9]+").unwrap();
    let v = serde_json::from_str(&re.replace_all(&text, "reel-replay-TMP")).unwrap();
    (v, report)
}

/// The `[mutate]` lines of stderr (the warning/notice and its label lines).
fn mutate_lines(stderr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_block = false;
    for l in stderr.lines() {
        if l.contains("[mutate]") {
            out.push(l);
            in_block = l.starts_with("::warning::");
        } else if in_block && l.starts_with("    ") {
            out.push(l);
        } else {
            in_block = false;
        }
    }
    out
}

#[test]
fn weak_assertions_leave_every_perturbation_uncaught() {
    let (tmp, file) = fixture(|_| {});
    let (rc, stdout, stderr) = replay(tmp.root(), &file, &["--mutate"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(stdout.is_empty(), "text mode keeps stdout empty");
    assert_eq!(
        mutate_lines(&stderr),
        [
            "::warning:: [mutate] 3/3 sampled perturbation(s) CAUGHT BY NOTHING — these fields are unguarded:",
            "    outputs/metrics.json  total: 42 → 43",
            "    outputs/metrics.json  currency: \"EUR\" → \"__MUTATED__\"",
            "    outputs/metrics.json  ok: true → false",
        ],
        "{stderr}"
    );
    // The report comes before the footer, like the original's log line.
    let warn_at = stderr.find("[mutate]").unwrap();
    let footer_at = stderr.find("✓ success").unwrap();
    assert!(warn_at < footer_at, "{stderr}");
}

#[test]
fn a_caught_perturbation_is_not_reported() {
    let (tmp, file) = fixture(|d| add_asserts(d, json!([json_check("total", json!(42))])));
    let (rc, _, stderr) = replay(tmp.root(), &file, &["--mutate"]);
    assert_eq!(rc, 0, "{stderr}");
    let lines = mutate_lines(&stderr);
    assert_eq!(
        lines,
        [
            "::warning:: [mutate] 2/3 sampled perturbation(s) CAUGHT BY NOTHING — these fields are unguarded:",
            "    outputs/metrics.json  currency: \"EUR\" → \"__MUTATED__\"",
            "    outputs/metrics.json  ok: true → false",
        ],
        "{stderr}"
    );

    // Every field guarded: the original's all-caught notice.
    let (tmp, file) = fixture(|d| {
        add_asserts(
            d,
            json!([
                json_check("total", json!(42)),
                json_check("currency", json!("EUR")),
                json_check("ok", json!(true)),
            ]),
        )
    });
    let (rc, _, stderr) = replay(tmp.root(), &file, &["--mutate"]);
    assert_eq!(rc, 0, "{stderr}");
    assert_eq!(
        mutate_lines(&stderr),
        [
            "::notice:: [mutate] all 3 sampled perturbation(s) were caught — assertions cover every perturbed field"
        ],
        "{stderr}"
    );
}

#[test]
fn an_already_failing_assertion_cannot_catch_and_the_verdict_is_untouched() {
    // `total` is asserted, but wrongly: the assertion fails on the recorded
    // value, so it cannot be credited with catching the perturbation.
    let (tmp, file) = fixture(|d| add_asserts(d, json!([json_check("total", json!(41))])));
    let (rc_plain, plain, _) = replay_json(tmp.root(), &file, &[]);
    let (rc_mut, mutated, stderr) = replay_json(tmp.root(), &file, &["--mutate"]);
    assert_eq!((rc_plain, rc_mut), (1, 1), "{stderr}");
    let (plain, none) = split_mutation(&plain);
    assert!(none.is_none(), "no `mutation` without --mutate");
    let (mutated, report) = split_mutation(&mutated);
    let report = report.expect("result.mutation under --mutate");
    assert_eq!(report["sampled"], json!(3));
    assert_eq!(
        report["uncaught"][0],
        json!("outputs/metrics.json  total: 42 → 43")
    );
    assert_eq!(
        plain, mutated,
        "--mutate adds `mutation` and changes nothing else"
    );
}

#[test]
fn verdict_exit_and_results_are_the_same_with_and_without_mutate() {
    let (tmp, file) = fixture(|d| add_asserts(d, json!([json_check("ok", json!(true))])));
    let before = std::fs::read(&file).unwrap();
    let (rc_plain, plain, _) = replay_json(tmp.root(), &file, &[]);
    let (rc_mut, mutated, stderr) = replay_json(tmp.root(), &file, &["--mutate"]);
    assert_eq!((rc_plain, rc_mut), (0, 0), "{stderr}");
    let (plain, _) = split_mutation(&plain);
    let (mutated, report) = split_mutation(&mutated);
    let report = report.unwrap();
    assert_eq!(
        report,
        json!({
            "sampled": 3,
            "eligible": 3,
            "truncatedBy": null,
            "caps": {"perFile": 10, "total": 50},
            "uncaught": [
                "outputs/metrics.json  total: 42 → 43",
                "outputs/metrics.json  currency: \"EUR\" → \"__MUTATED__\"",
            ],
        })
    );
    assert_eq!(plain, mutated);
    // Perturbations happen in the private temp dir only: the cassette and
    // the working directory are untouched.
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let entries: Vec<_> = std::fs::read_dir(tmp.root()).unwrap().collect();
    assert_eq!(entries.len(), 1, "nothing written next to the cassette");

    // A red cassette stays red, with the same failures.
    let red = support::repo().join("cassettes/red/wrong-answer.cassette.json");
    let (rc_plain, plain, _) = replay_json(tmp.root(), &red, &[]);
    let (rc_mut, mutated, _) = replay_json(tmp.root(), &red, &["--mutate"]);
    assert_eq!(rc_plain, rc_mut);
    assert_ne!(rc_plain, 0);
    let (plain, _) = split_mutation(&plain);
    let (mutated, report) = split_mutation(&mutated);
    assert!(report.is_some());
    assert_eq!(plain, mutated);
}

#[test]
fn caps_bound_the_sample_and_the_report_names_the_binding_cap() {
    let (tmp, file) = fixture(|_| {});
    let (rc, v, stderr) = replay_json(
        tmp.root(),
        &file,
        &["--mutate", "--mutate-max-per-file", "1"],
    );
    assert_eq!(rc, 0);
    let m = &v["results"][0]["mutation"];
    assert_eq!(
        (&m["sampled"], &m["eligible"], &m["truncatedBy"]),
        (&json!(1), &json!(3), &json!("per-file"))
    );
    assert_eq!(m["caps"], json!({"perFile": 1, "total": 50}));
    assert!(
        stderr.contains("::warning:: [mutate] 1/1 sampled perturbation(s) CAUGHT BY NOTHING — these fields are unguarded (sampled 1 of 3 eligible value(s); per-file cap 1 reached on 1 file(s)):"),
        "{stderr}"
    );
    let (_, v, stderr) = replay_json(tmp.root(), &file, &["--mutate", "--mutate-max-total", "2"]);
    assert_eq!(v["results"][0]["mutation"]["truncatedBy"], json!("total"));
    assert!(
        stderr.contains("(sampled 2 of 3 eligible value(s); total cap 2 reached):"),
        "{stderr}"
    );
}

#[test]
fn include_and_exclude_scope_the_sample() {
    let (tmp, file) = fixture(|_| {});
    let (_, v, stderr) = replay_json(
        tmp.root(),
        &file,
        &["--mutate", "--mutate-exclude", "outputs/**"],
    );
    assert_eq!(v["results"][0]["mutation"]["sampled"], json!(0));
    assert!(
        stderr.contains("::notice:: [mutate] --mutate-include/--mutate-exclude filtered out all 2 inlined JSON artifact(s) — nothing left to perturb"),
        "{stderr}"
    );
    let (_, v, _) = replay_json(
        tmp.root(),
        &file,
        &[
            "--mutate",
            "--mutate-include",
            "nope/*",
            "--mutate-include",
            "outputs/*.json",
        ],
    );
    assert_eq!(v["results"][0]["mutation"]["sampled"], json!(3));
}

#[test]
fn cassettes_without_json_deliverables_get_the_explaining_notice() {
    let note = support::repo().join("cassettes/write-note.cassette.json");
    let (rc, _, stderr) = replay(&support::repo(), &note, &["--mutate"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(
        stderr.contains("::notice:: [mutate] no perturbable values — this cassette records 1 artifact(s), none of them .json."),
        "{stderr}"
    );
    let multi = support::compat("examples/replays/example-multiselect-gate.cassette.json");
    let (rc, _, stderr) = replay(&support::repo(), &multi, &["--mutate"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(
        stderr.contains("[mutate] no perturbable values — this cassette records 0 artifact(s)"),
        "{stderr}"
    );
}

#[test]
fn mutate_flags_without_mutate_or_with_bad_caps_are_usage_errors() {
    let note = support::repo().join("cassettes/write-note.cassette.json");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--mutate-include", "a/**", "--mutate-max-total", "5"],
            "replay: --mutate-include, --mutate-max-total require(s) --mutate (they only shape a mutation pass).",
        ),
        (
            &["--mutate-exclude", "x"],
            "replay: --mutate-exclude require(s) --mutate",
        ),
        (
            &["--mutate", "--mutate-max-per-file", "0"],
            "replay: --mutate-max-per-file must be a positive integer (got \"0\")",
        ),
        (
            &["--mutate", "--mutate-max-total", "ten"],
            "replay: --mutate-max-total must be a positive integer (got \"ten\")",
        ),
        (
            &["--mutate-max-total", "1.5"],
            "replay: --mutate-max-total must be a positive integer (got \"1.5\")",
        ),
    ];
    let mut failures = Failures::new();
    let mut ran = 0;
    for (args, want) in cases {
        ran += 1;
        failures.case(format!("{args:?}"), || {
            let (rc, stdout, stderr) = replay(&support::repo(), &note, args);
            assert_eq!(rc, 2, "{args:?}: {stderr}");
            assert!(stdout.is_empty());
            assert!(stderr.contains(want), "{args:?}: {stderr}");
            let (rc, v, _) = replay_json(&support::repo(), &note, args);
            assert_eq!(rc, 2, "{args:?}");
            assert_eq!(v["ok"], json!(false));
            assert_eq!(v["results"], json!([]));
            assert_eq!(v["error"]["category"], json!("usage"));
            assert!(
                v["error"]["message"].as_str().unwrap().contains(want),
                "{args:?}: {v}"
            );
            validate(&v);
        });
    }
    failures.assert_none(ran);
    let out = support::reel().args(["replay", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--mutate\n",
        "--mutate-include",
        "--mutate-exclude",
        "--mutate-max-per-file",
        "--mutate-max-total",
    ] {
        assert!(help.contains(flag), "{flag} in --help:\n{help}");
    }
    let out = support::reel().arg("replay").output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("[--mutate [--mutate-include/-exclude <glob>]..."),
        "usage line names --mutate"
    );
}

fn validate(v: &Value) {
    support::assert_schema("replay.json", v);
}

#[test]
fn the_json_mutation_object_matches_the_schema() {
    let (tmp, file) = fixture(|d| add_asserts(d, json!([json_check("total", json!(42))])));
    for extra in [
        &["--mutate"][..],
        &["--mutate", "--mutate-max-per-file", "1"],
        &["--mutate", "--mutate-max-total", "2"],
        &["--mutate", "--mutate-exclude", "**"],
    ] {
        let (_, v, _) = replay_json(tmp.root(), &file, extra);
        assert!(v["results"][0]["mutation"].is_object(), "{v}");
        validate(&v);
    }
    // And the schema rejects a malformed `mutation` (it constrains the field).
    let (_, mut v, _) = replay_json(tmp.root(), &file, &["--mutate"]);
    v["results"][0]["mutation"]["truncatedBy"] = json!("sometimes");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("schema/replay.json")).unwrap(),
    )
    .unwrap();
    assert!(!jsonschema::validator_for(&schema).unwrap().is_valid(&v));
}

#[test]
fn the_status_reporter_lists_the_mutation_report_under_its_file() {
    let (tmp, file) = fixture(|_| {});
    let out = support::reel()
        .current_dir(tmp.root())
        .arg("replay")
        .arg(&file)
        .arg("--mutate")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines[0].starts_with("PASS "), "{stderr}");
    assert!(
        lines[1].starts_with(
            "    warn: 3/3 sampled perturbation(s) CAUGHT BY NOTHING — these fields are unguarded:"
        ),
        "{stderr}"
    );
    assert_eq!(
        lines[2], "      outputs/metrics.json  total: 42 → 43",
        "{stderr}"
    );
    assert_eq!(lines.last(), Some(&"1 passed, 0 failed"), "{stderr}");
    // The whole report, as a reviewer reads it (the temp path and the
    // timing masked).
    let root = regex::escape(&tmp.root().display().to_string());
    let report = stderr.to_string();
    insta::with_settings!({filters => vec![
        (root.as_str(), "[tmp]"),
        (r"(?m)  \d+ ms$|  \d+\.\d+ s$", "  [time]"),
    ]}, {
        insta::assert_snapshot!("status_reporter_with_mutations", report);
    });
}
