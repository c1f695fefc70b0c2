//! `reel replay` end to end.
//!
//! 1. Compat: every `replay` case of tests/compat/expected/INDEX.txt is re-run
//!    in the equivalent setup (the examples copied into a temp dir and
//!    committed to a git repo — the pdf cassette was recorded in git mode —,
//!    plus the moved / drift / truncated / future variants capture.sh builds)
//!    and compared with the original's exit code, per-assertion keys and
//!    pass/fail, `skippedAssertions`, `failures[].kind` (JSON cases) or its
//!    stderr (text cases, run with `--verbose` — reel's flag for the
//!    original's footer — modulo the README's deliberate differences).
//! 2. Behaviour the original's captures do not cover: the spec §9 mutations,
//!    hostile manifests, per-file isolation, sorted parallel output, JUnit,
//!    GitHub annotations, the JSON schema.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::compat::{cases, expected_raw as expected, run_case};
use crate::support::fixture::PDF;
use crate::support::{self, Failures, Fixture, RunExt, read_json};

/// The comparable core of one run result.
fn core(r: &Value) -> Value {
    let assertions: Vec<Value> = r["assertions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let mut keys: Vec<String> = a["assertion"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
            keys.sort();
            json!({"keys": keys, "pass": a["pass"], "source": a.get("source").cloned().unwrap_or(Value::Null)})
        })
        .collect();
    let kinds: Vec<Value> = r["verdict"]["failures"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            json!([
                f.get("assertion").cloned().unwrap_or(Value::Null),
                f["kind"]
            ])
        })
        .collect();
    json!({
        "scenario": r["scenario"],
        "result": r["result"],
        "pass": r["verdict"]["pass"],
        "assertions": assertions,
        "skippedAssertions": r.get("skippedAssertions").cloned().unwrap_or(Value::Null),
        "failures": kinds,
        "outcome": r["outcome"],
        "staleness": r.get("staleness").map(|s| s.as_array().into_iter().flatten().map(|f| f["class"].clone()).collect::<Vec<_>>()),
        // The run-result fields folded from the reasoning blocks and the
        // timeline, whole (absent stays absent).
        "thinking": r.get("thinking"),
        "thinkingElided": r.get("thinkingElided"),
        "toolDurations": r.get("toolDurations"),
        "skillActivity": r.get("skillActivity"),
        // Every key the original writes, in its order (reel's added `file`,
        // README "Differences", aside).
        "keys": r.as_object().map(|o| o.keys().filter(|k| *k != "file").cloned().collect::<Vec<_>>()),
    })
}

fn envelope_core(v: &Value) -> Value {
    json!({
        "ok": v["ok"],
        "error_category": v["error"].get("category").cloned().unwrap_or(Value::Null),
        "results": v["results"].as_array().into_iter().flatten().map(core).collect::<Vec<_>>(),
    })
}

/// Lines the original prints that reel deliberately does not (README
/// "Differences"), or that name the original's own debugging aids.
fn normalise_stderr(s: &str) -> String {
    let mut out = Vec::new();
    let mut skipping_hints = false;
    for line in s.lines() {
        if line.starts_with("cowork-harness: skill-hash:") || line.starts_with("reel: skill-hash:")
        {
            continue;
        }
        if line.contains("question(s) were auto-answered") {
            skipping_hints = true;
            continue;
        }
        if skipping_hints
            && (line.starts_with("   in answers:") || line.starts_with("   on `skill`:"))
        {
            continue;
        }
        skipping_hints = false;
        out.push(line.replace("upgrade cowork-harness", "upgrade reel"));
    }
    out.join("\n")
}

fn diff(expected: &str, got: &str) -> String {
    similar::TextDiff::from_lines(expected, got)
        .unified_diff()
        .header("original", "reel")
        .to_string()
}

fn check_case(name: &str) {
    let cases = cases("");
    let case = cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} not in INDEX.txt"));
    assert_eq!(case.args.first().map(String::as_str), Some("replay"));
    let fx = Fixture::capture_layout();
    let got = run_case(&fx, case);
    let is_json = case.args.iter().any(|a| a == "json");
    if SUPERSEDED_AFTER_2_0.contains(&name) {
        return check_superseded(name, case.rc, &got, is_json);
    }
    if is_json {
        assert!(
            got.stdout.lines().count() == 1,
            "{name}: json mode must print exactly one line:\n{}",
            got.stdout
        );
        let want = envelope_core(&serde_json::from_str(&expected(name, "stdout")).unwrap());
        let have = envelope_core(
            &serde_json::from_str(&got.stdout)
                .unwrap_or_else(|e| panic!("{name}: stdout is not JSON ({e}):\n{}", got.stdout)),
        );
        let (w, h) = (
            serde_json::to_string_pretty(&want).unwrap(),
            serde_json::to_string_pretty(&have).unwrap(),
        );
        assert!(
            w == h,
            "{name}: JSON differs\n{}\nstderr:\n{}",
            diff(&w, &h),
            got.stderr
        );
    } else if case.rc == 2 {
        // Usage / load errors: reel words them its own way; stdout stays empty.
        assert!(
            got.stdout.is_empty(),
            "{name}: text mode must keep stdout empty"
        );
        assert!(
            !got.stderr.trim().is_empty(),
            "{name}: an error must be explained on stderr"
        );
    } else {
        assert!(
            got.stdout.is_empty(),
            "{name}: text mode must keep stdout empty, got:\n{}",
            got.stdout
        );
        let (w, h) = (
            normalise_stderr(&expected(name, "stderr")),
            normalise_stderr(&got.stderr),
        );
        assert!(w == h, "{name}: stderr differs\n{}", diff(&w, &h));
    }
    assert_eq!(
        got.code, case.rc,
        "{name}: exit code (stderr:\n{})",
        got.stderr
    );
}

/// Cases whose 2.0.0 output the original has since changed on purpose: a
/// cassette above the reader's ceiling is now refused before any assertion
/// is evaluated, so only the cassette-format refusal is reported, and the
/// ceiling is v16 (test/cassette-v13-object-form.test.ts, "replay refuses a
/// future cassette before evaluating it"). Same exit code as 2.0.0.
const SUPERSEDED_AFTER_2_0: &[&str] = &["replay-future-version-json", "replay-future-version-text"];

fn check_superseded(name: &str, rc: i32, got: &support::Run, is_json: bool) {
    assert_eq!(got.code, rc, "{name}: exit code (stderr:\n{})", got.stderr);
    let refusal = "cassette format too new: cassette format v99 is newer than this harness \
        understands (v16)";
    if is_json {
        let v: Value = serde_json::from_str(&got.stdout).unwrap();
        let assertions = v["results"][0]["assertions"].as_array().unwrap();
        assert_eq!(assertions.len(), 1, "{name}: {v}");
        assert_eq!(assertions[0]["source"], json!("cassette-format"), "{name}");
        assert!(
            assertions[0]["message"]
                .as_str()
                .unwrap()
                .starts_with(refusal),
            "{name}: {v}"
        );
    } else {
        assert!(got.stderr.contains(refusal), "{name}: {}", got.stderr);
        assert!(
            !got.stderr.contains("skill staleness could not be verified"),
            "{name}"
        );
    }
}

macro_rules! compat_cases {
    ($($f:ident => $name:literal,)*) => {
        $(#[test] fn $f() { check_case($name); })*

        /// Every `replay` case of INDEX.txt has a test above.
        #[test]
        fn every_replay_case_of_the_index_is_covered() {
            let covered = [$($name),*];
            for c in cases("").iter().filter(|c| c.args.first().map(String::as_str) == Some("replay") && !c.args.iter().any(|a| a == "--help")) {
                assert!(covered.contains(&c.name.as_str()), "INDEX.txt case {} has no test", c.name);
            }
        }
    };
}

compat_cases! {
    compat_multiselect_text => "replay-example-multiselect-gate-text",
    compat_multiselect_json => "replay-example-multiselect-gate-json",
    compat_pdf_text => "replay-example-pdf-skill-text",
    compat_pdf_json => "replay-example-pdf-skill-json",
    compat_hostloop_text => "replay-hostloop-computer-links-text",
    compat_hostloop_json => "replay-hostloop-computer-links-json",
    compat_dir_text => "replay-dir-text",
    compat_dir_json => "replay-dir-json",
    compat_dir_strict => "replay-dir-strict",
    compat_pdf_explain => "replay-pdf-explain",
    compat_pdf_reassert => "replay-pdf-reassert",
    compat_assert_from_failing_text => "replay-pdf-assert-from-failing-text",
    compat_assert_from_failing_json => "replay-pdf-assert-from-failing-json",
    compat_missing_path_text => "replay-missing-path-text",
    compat_missing_path_json => "replay-missing-path-json",
    compat_noargs_text => "replay-noargs-text",
    compat_noargs_json => "replay-noargs-json",
    compat_moved_text => "replay-moved-text",
    compat_moved_json => "replay-moved-json",
    compat_moved_session_text => "replay-moved-session-text",
    compat_moved_session_json => "replay-moved-session-json",
    compat_drift_text => "replay-drift-text",
    compat_drift_json => "replay-drift-json",
    compat_drift_fail_on_skill_drift => "replay-drift-fail-on-skill-drift",
    compat_drift_strict => "replay-drift-strict",
    compat_truncated_text => "replay-truncated-json-text",
    compat_truncated_json => "replay-truncated-json-json",
    compat_future_text => "replay-future-version-text",
    compat_future_json => "replay-future-version-json",
}

// ---------------------------------------------------------------------------
// Spec §9 mutations and reel's own guarantees.

const MULTI: &str = "examples/replays/example-multiselect-gate.cassette.json";

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// Replays `file` (relative to the fixture's peer dir) in json mode.
fn replay_json(fx: &Fixture, args: &[&str]) -> (i32, Value, String) {
    let run = support::reel()
        .current_dir(fx.peer())
        .arg("replay")
        .args(args)
        .args(["--output-format", "json"])
        .run();
    (run.code, run.json(), run.stderr)
}

fn mutated(fx: &Fixture, name: &str, f: impl FnOnce(&mut Value)) -> String {
    let mut d = read_json(&fx.peer().join(MULTI));
    f(&mut d);
    let rel = format!("mut/{name}.cassette.json");
    std::fs::create_dir_all(fx.peer().join("mut")).unwrap();
    write_json(&fx.peer().join(&rel), &d);
    rel
}

#[test]
fn load_errors_exit_2_with_an_error_result_naming_the_file() {
    let fx = Fixture::capture_layout();
    type Mutation = fn(&mut Value);
    let cases: [(&str, Mutation, &str); 3] = [
        (
            "v8",
            |d| d["cassetteVersion"] = json!(8),
            "older than the minimum supported version v9",
        ),
        (
            "nohashformat",
            |d| {
                d["fingerprint"]
                    .as_object_mut()
                    .unwrap()
                    .remove("hashFormat");
            },
            "hashFormat (absent)",
        ),
        (
            "unknownkey",
            |d| {
                d["scenario"]["assert"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"no_such_key": 1}))
            },
            "unrecognized assertion",
        ),
    ];
    let mut failures = Failures::new();
    let mut ran = 0;
    for (name, f, needle) in cases {
        ran += 1;
        failures.case(name, || {
            let rel = mutated(&fx, name, f);
            let (rc, v, stderr) = replay_json(&fx, &[&rel]);
            assert_eq!(rc, 2, "{name}: {stderr}");
            assert!(
                stderr.contains(&format!("replay: {rel}: ")) && stderr.contains(needle),
                "{name}: {stderr}"
            );
            let r = &v["results"][0];
            assert_eq!(r["scenario"], json!(rel));
            assert_eq!(r["fidelity"], json!("replay"));
            assert_eq!(r["result"], json!("error"));
            assert_eq!(r["verdict"]["failures"][0]["kind"], json!("guard"));
            assert_eq!(v["ok"], json!(false));
        });
    }
    failures.assert_none(ran);
}

#[test]
fn an_artifact_with_a_wrong_sha256_refuses_to_replay_with_exit_2() {
    let fx = Fixture::capture_layout();
    let mut d = read_json(&fx.peer().join(PDF));
    let arts = d["artifacts"].as_array_mut().unwrap();
    let e = arts.iter_mut().find(|a| a.get("body").is_some()).unwrap();
    e["body"] = json!("tampered\n");
    write_json(
        &fx.peer().join("examples/replays/tampered.cassette.json"),
        &d,
    );
    let (rc, v, stderr) = replay_json(&fx, &["examples/replays/tampered.cassette.json"]);
    assert_eq!(rc, 2, "{stderr}");
    assert!(
        stderr.contains("does not match its recorded sha256"),
        "{stderr}"
    );
    assert!(stderr.contains("refusing to replay"), "{stderr}");
    assert_eq!(v["results"][0]["result"], json!("error"));
}

#[test]
fn hostile_manifests_never_write_outside_the_temp_dir() {
    let fx = Fixture::capture_layout();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("pwned");
    let hostile = [
        victim.to_string_lossy().into_owned(),
        format!(
            "outputs/../../../../../../../../..{}",
            victim.to_string_lossy()
        ),
        "C:/pwned".into(),
        "\\\\host\\share\\pwned".into(),
        "outputs\\..\\..\\pwned".into(),
        "outputs/\u{0}pwned".into(),
    ];
    for (i, p) in hostile.iter().enumerate() {
        let mut d = read_json(&fx.peer().join(PDF));
        d["artifacts"] = json!([{"path": p, "bytes": 1, "sha256": "", "body": "x"}]);
        let rel = format!("examples/replays/hostile{i}.cassette.json");
        write_json(&fx.peer().join(&rel), &d);
        let (rc, _, stderr) = replay_json(&fx, &[&rel]);
        assert_eq!(rc, 2, "{p:?}: {stderr}");
        assert!(stderr.contains("refusing to replay"), "{p:?}: {stderr}");
    }
    assert!(!victim.exists());
    assert!(
        !fx.peer().join("pwned").exists() && !fx.peer().parent().unwrap().join("pwned").exists()
    );
}

#[test]
fn a_directory_replays_every_cassette_in_sorted_order_and_one_broken_file_does_not_stop_it() {
    let fx = Fixture::capture_layout();
    let dir = fx.peer().join("batch");
    std::fs::create_dir_all(dir.join("nested")).unwrap();
    std::fs::copy(fx.peer().join(MULTI), dir.join("b.cassette.json")).unwrap();
    std::fs::copy(
        fx.peer().join(MULTI),
        dir.join("nested/ignored.cassette.json"),
    )
    .unwrap();
    std::fs::write(dir.join("a.cassette.json"), "{ not json").unwrap();
    std::fs::copy(fx.peer().join(MULTI), dir.join("c.cassette.json")).unwrap();
    std::fs::write(dir.join("notes.json"), "{}").unwrap();
    let (rc, v, stderr) = replay_json(&fx, &["batch"]);
    assert_eq!(rc, 2, "{stderr}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "non-recursive, *.cassette.json only: {v}");
    assert_eq!(results[0]["scenario"], json!("batch/a.cassette.json"));
    assert_eq!(results[0]["result"], json!("error"));
    assert_eq!(results[1]["scenario"], json!("smoke-multiselect"));
    assert_eq!(results[2]["scenario"], json!("smoke-multiselect"));
    assert!(
        stderr.contains("replay: batch/a.cassette.json: unreadable / invalid cassette JSON"),
        "{stderr}"
    );
}

#[test]
fn an_empty_directory_is_a_usage_error() {
    let fx = Fixture::capture_layout();
    std::fs::create_dir_all(fx.peer().join("none")).unwrap();
    let (rc, v, _) = replay_json(&fx, &["none"]);
    assert_eq!(rc, 2);
    assert_eq!(v["error"]["category"], json!("usage"));
    assert_eq!(v["results"], json!([]));
}

#[test]
fn flag_combinations_are_refused_before_any_file() {
    let fx = Fixture::capture_layout();
    for args in [
        vec![PDF, "--write"],
        vec![PDF, "--reassert", "--assert-from", "x.yaml"],
        vec![
            "examples/replays",
            "--session",
            "examples/sessions/default.yaml",
        ],
        vec![PDF, "--session", "examples/sessions"],
        vec![PDF, PDF],
    ] {
        let (rc, v, _) = replay_json(&fx, &args);
        assert_eq!(rc, 2, "{args:?}");
        assert_eq!(v["error"]["category"], json!("usage"), "{args:?}");
    }
}

#[test]
fn reassert_drift_in_a_recording_shaping_field_is_a_per_file_error() {
    let fx = Fixture::capture_layout();
    let yaml = std::fs::read_to_string(
        fx.peer()
            .join("examples/replays/example-pdf-skill-ci-selftest-failing.yaml"),
    )
    .unwrap();
    let drifted = yaml.replace("fidelity: container", "fidelity: protocol");
    std::fs::write(fx.peer().join("drifted.yaml"), drifted).unwrap();
    let (rc, v, stderr) = replay_json(&fx, &[PDF, "--assert-from", "drifted.yaml"]);
    assert_eq!(rc, 2, "{stderr}");
    assert!(
        stderr.contains("drifted from the recording") && stderr.contains("`fidelity`"),
        "{stderr}"
    );
    assert_eq!(v["results"][0]["result"], json!("error"));
}

#[test]
fn write_refuses_keys_the_cassette_cannot_evaluate_and_leaves_it_untouched() {
    let fx = Fixture::capture_layout();
    // The multiselect cassette has no artifacts manifest: `file_exists` would skip forever.
    let scen = "prompt: |\n  Call the AskUserQuestion tool exactly once with a SINGLE multi-select question\n  (allow selecting more than one option) asking which features to enable, with these\n  three options: Auth, Billing, Audit.\n  After I answer, reply with exactly: \"Enabled: <the features I chose, comma-separated>.\"\n  and nothing else.\n";
    let d = read_json(&fx.peer().join(MULTI));
    let answers = serde_yaml_ng::to_string(&json!({"answers": d["scenario"]["answers"], "fidelity": d["scenario"]["fidelity"], "baseline": "latest"})).unwrap();
    std::fs::write(
        fx.peer().join("s.yaml"),
        format!("{scen}{answers}assert:\n  - file_exists: outputs/x.md\n"),
    )
    .unwrap();
    let before = std::fs::read(fx.peer().join(MULTI)).unwrap();
    let out = support::reel()
        .current_dir(fx.peer())
        .args([
            "replay",
            MULTI,
            "--assert-from",
            "s.yaml",
            "--write",
            "--allow-failing",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("replay --write: ") && stderr.contains("file_exists"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(fx.peer().join(MULTI)).unwrap(),
        before,
        "a refused --write must not touch the cassette"
    );
}

#[test]
fn junit_has_a_suite_per_cassette_and_a_case_per_assertion() {
    let fx = Fixture::capture_layout();
    std::fs::write(
        fx.peer().join("examples/replays/zz-broken.cassette.json"),
        "[",
    )
    .unwrap();
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", "examples/replays", "--junit", "out/report.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let xml = std::fs::read_to_string(fx.peer().join("out/report.xml")).unwrap();
    assert_eq!(xml.matches("<testsuite ").count(), 4, "{xml}");
    // 3 + 5 + 4 frozen assertions, at least; the broken file is one errored case.
    assert!(xml.matches("<testcase ").count() >= 13, "{xml}");
    assert!(
        xml.contains("<error message=\"unreadable / invalid cassette JSON"),
        "{xml}"
    );
}

#[test]
fn github_annotations_name_the_failing_cassette() {
    let fx = Fixture::capture_layout();
    std::fs::write(fx.peer().join("bad.cassette.json"), "[").unwrap();
    let out = support::reel()
        .current_dir(fx.peer())
        .env("GITHUB_ACTIONS", "true")
        .args(["replay", "bad.cassette.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "::error file=bad.cassette.json,title=reel replay::unreadable / invalid cassette JSON"
        ),
        "{stderr}"
    );
    let quiet = support::reel()
        .current_dir(fx.peer())
        .args(["replay", "bad.cassette.json"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("::error "),
        "annotations only under GITHUB_ACTIONS=true"
    );
}

fn validate_envelope(v: &Value) {
    support::assert_schema("replay.json", v);
}

#[test]
fn every_json_envelope_matches_the_committed_schema() {
    let fx = Fixture::capture_layout();
    std::fs::write(
        fx.peer().join("examples/replays/zz-broken.cassette.json"),
        "[",
    )
    .unwrap();
    let (_, v, _) = replay_json(&fx, &["examples/replays"]);
    assert_eq!(v["tool"], json!("reel"));
    validate_envelope(&v);
    let (_, v, _) = replay_json(&fx, &["nope.cassette.json"]);
    validate_envelope(&v);
    let (_, v, _) = replay_json(&fx, &[]);
    validate_envelope(&v);
}

#[test]
fn text_mode_keeps_stdout_empty_and_json_mode_prints_one_line() {
    let fx = Fixture::capture_layout();
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", "examples/replays"])
        .output()
        .unwrap();
    assert!(out.stdout.is_empty());
    assert!(!out.stderr.is_empty());
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains('\x1b'),
        "NO_COLOR / not a TTY: no escapes"
    );
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", "examples/replays", "--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

#[test]
fn a_future_cassette_with_best_effort_warns_instead_of_failing_on_format() {
    let fx = Fixture::capture_layout();
    let rel = mutated(&fx, "future", |d| {
        d["cassetteVersion"] = json!(17);
        d["scenario"]["unknown_top"] = json!(1);
    });
    let (_, v, stderr) = replay_json(&fx, &[&rel]);
    assert!(
        stderr.contains("unknown top-level key(s)") && stderr.contains("unknown_top"),
        "{stderr}"
    );
    let kinds: Vec<&Value> = v["results"][0]["verdict"]["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["kind"])
        .collect();
    assert!(kinds.contains(&&json!("cassette-format")), "{v}");
    let (_, v, stderr) = replay_json(&fx, &[&rel, "--best-effort-future-cassette"]);
    assert!(stderr.contains("--best-effort-future-cassette"), "{stderr}");
    let fmt = v["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["source"] == json!("cassette-format"))
        .count();
    assert_eq!(fmt, 0, "{v}");
}

#[test]
fn without_control_out_gate_keys_are_excluded_and_counted() {
    let fx = Fixture::capture_layout();
    let rel = mutated(&fx, "nocontrol", |d| {
        d.as_object_mut().unwrap().remove("controlOut");
        d["scenario"]["assert"] = json!([
            {"result": "success"}, {"question_asked": "features"}, {"gate_answer_count_min": 1},
            {"result": "success", "egress_denied": "a.com"}, {"file_absent": "outputs/x"}
        ]);
        d["scenario"]["expect_denied"] = json!(["a.com"]);
    });
    let (_, v, stderr) = replay_json(&fx, &[&rel]);
    assert!(stderr.contains("cassette has no controlOut"), "{stderr}");
    assert!(
        stderr.contains("skipped 4 filesystem/egress/expect_denied assertions (live-only)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 mixed assertion(s) had their filesystem/egress half dropped"),
        "{stderr}"
    );
    let r = &v["results"][0];
    assert_eq!(r["skippedAssertions"], json!({"full": 4, "partial": 1}));
    let evaluated: Vec<&Value> = r["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["assertion"])
        .collect();
    assert!(
        evaluated
            .iter()
            .all(|a| a.get("question_asked").is_none() && a.get("egress_denied").is_none()),
        "{evaluated:?}"
    );
}

#[test]
fn write_persists_only_the_re_validated_assert_block() {
    let fx = Fixture::capture_layout();
    let scen = fx.peer().join("examples/scenarios/example-pdf-skill.yaml");
    let before = std::fs::read(fx.peer().join(PDF)).unwrap();
    // Unchanged block: the rewrite is byte-identical (loss-free writer).
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", PDF, "--reassert", "--write"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("replay --write: ") && stderr.contains("persisted"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(fx.peer().join(PDF)).unwrap(),
        before,
        "an unchanged block must rewrite identically"
    );
    // A new assertion: only scenario.assert changes.
    let yaml = std::fs::read_to_string(&scen).unwrap();
    std::fs::write(
        &scen,
        yaml.replace(
            "  - tool_called: Write",
            "  - tool_called: Write\n  - tool_called: Read",
        ),
    )
    .unwrap();
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", PDF, "--reassert", "--write"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (old, new) = (
        read_json(&support::compat(
            "examples/replays/example-pdf-skill.cassette.json",
        )),
        read_json(&fx.peer().join(PDF)),
    );
    assert_eq!(new["scenario"]["assert"].as_array().unwrap().len(), 6);
    assert_eq!(new["scenario"]["assert"][4], json!({"tool_called": "Read"}));
    for key in ["events", "controlOut", "fingerprint", "artifacts"] {
        assert_eq!(old[key], new[key], "{key} must be untouched");
    }
    // A failing block is refused without --allow-failing, and the file stays as it was.
    let written = std::fs::read(fx.peer().join(PDF)).unwrap();
    let yaml = std::fs::read_to_string(&scen).unwrap();
    std::fs::write(
        &scen,
        yaml.replace("  - tool_called: Read", "  - tool_not_called: Skill"),
    )
    .unwrap();
    let out = support::reel()
        .current_dir(fx.peer())
        .args(["replay", PDF, "--reassert", "--write"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to persist a failing verdict"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(fx.peer().join(PDF)).unwrap(), written);
}

#[test]
fn the_recorded_answer_check_is_wired_for_scripted_cassettes() {
    // Departure 2 (README "Differences"): an edited answer. cowork-harness
    // replays this green (spec §8.1); reel must not once the decider is wired.
    let fx = Fixture::capture_layout();
    let rel = mutated(&fx, "edited-answer", |d| {
        support::cassette::edit_lines(&mut d["controlOut"], |line| {
            let answer =
                "/response/response/updatedInput/answers/Which features should be enabled?";
            if let Some(answer) = line.pointer_mut(answer) {
                *answer = json!("Billing");
            }
        });
    });
    let (rc, v, stderr) = replay_json(&fx, &[&rel]);
    let fidelity: Vec<&Value> = v["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["assertion"] == json!({"replay_protocol_fidelity": true}))
        .collect();
    assert_eq!(rc, 1, "{stderr}\n{v}");
    assert!(
        !fidelity.is_empty(),
        "an answer the frozen answers: cannot produce must fail: {v}"
    );
}

/// A cassette without a `timeline` has no `toolDurations`/`skillActivity`
/// (undefined, as in the original) and cannot evaluate `skill_tool_used`; an
/// empty one folds to `{}`/`[]` like any other.
#[test]
fn timeline_folds_are_absent_without_a_timeline() {
    let fx = Fixture::capture_layout();
    let none = mutated(&fx, "no-timeline", |d| {
        d.as_object_mut().unwrap().shift_remove("timeline");
        d["scenario"]["assert"] = json!([{"skill_tool_used": {"skill": ".*", "tool": ".*"}}]);
    });
    let empty = mutated(&fx, "empty-timeline", |d| {
        d["timeline"] = json!([]);
        d["scenario"]["assert"] = json!([{"skill_tool_used": {"skill": ".*", "tool": ".*"}}]);
    });
    let (_, v, stderr) = replay_json(&fx, &[&none]);
    let r = &v["results"][0];
    assert_eq!(r["result"], json!("success"), "{stderr}");
    assert!(
        r.get("toolDurations").is_none() && r.get("skillActivity").is_none(),
        "{r}"
    );
    assert_eq!(r["thinkingElided"], json!(0));
    let msg = r["assertions"][0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with("evidence unavailable: skill-activity telemetry absent"),
        "{msg}"
    );
    validate_envelope(&v);

    let (_, v, _) = replay_json(&fx, &[&empty]);
    let r = &v["results"][0];
    assert_eq!(r["toolDurations"], json!({}));
    assert_eq!(r["skillActivity"], json!([]));
    assert_eq!(
        r["assertions"][0]["message"],
        json!("no skill-activation window matched \".*\"")
    );
}

/// Every bundled cassette replays field for field (and key for key, in the
/// same order) as cowork-harness 2.0.0 replays it (tests/data/original-replay),
/// apart from the documented departures: `nonReproducibleAnswers` (departure
/// 1), `provenance` (names the tool), and temp-dir paths in evidence.
#[test]
fn bundled_cassettes_replay_field_for_field_as_the_original() {
    let dir = support::data("original-replay");
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let rel = ["cassettes", "cassettes/red"]
            .iter()
            .map(|d| format!("{d}/{name}.cassette.json"))
            .find(|p| support::repo().join(p).is_file())
            .unwrap_or_else(|| panic!("no bundled cassette for {name}"));
        let want: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let out = support::reel()
            .current_dir(support::repo())
            .args(["replay", &rel, "--output-format", "json"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(if want["ok"] == json!(true) { 0 } else { 1 }),
            "{name}: exit code"
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        support::assert_same_result_as_original(&name, &got, &want);
        compared += 1;
    }
    let bundled = ["cassettes", "cassettes/red"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(support::repo().join(d))
                .unwrap()
                .flatten()
        })
        .filter(|e| e.file_name().to_string_lossy().ends_with(".cassette.json"))
        // A multi-turn cassette is refused by the original, by design
        // (docs/multi-turn.md; its refusal is in original-replay/refused/,
        // checked by tests/it/multi_turn.rs).
        .filter(|e| {
            let name = e.file_name().to_string_lossy().replace(".cassette.json", "");
            !dir.join("refused").join(format!("{name}.exit")).is_file()
        })
        .count();
    assert_eq!(
        compared, bundled,
        "every bundled cassette has the original's output (tests/data/original-replay/README.md)"
    );
}

/// The JSON report's stream (bulk lists made into text on the pool, a
/// window at a time) writes exactly the text of serialising the envelope's
/// value: over a run with thousands of tool results and system lines (many
/// windows, a last one part full), a bundled cassette and an empty batch.
#[test]
fn the_streamed_json_report_is_the_envelope_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut events =
        vec![json!({"type": "system", "subtype": "init", "tools": ["Bash"]}).to_string()];
    for i in 0..2_345 {
        events.push(
            json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("echo {i}")}}
            ]}})
            .to_string(),
        );
        events.push(
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("line \"{i}\"\n\u{1}é😀 {}", "padding ".repeat(80))}
            ]}})
            .to_string(),
        );
        if i % 3 == 0 {
            events.push(
                json!({"type": "system", "subtype": "hook_response", "n": i, "x": [1, {"y": "z"}]})
                    .to_string(),
            );
        }
    }
    events.push(json!({"type": "result", "subtype": "success", "is_error": false}).to_string());
    let big = dir.path().join("big.cassette.json");
    support::cassette::CassetteDoc::minimal()
        .set("events", json!(events))
        .write(&big);
    let opts = reel::replay::ReplayOptions::default();
    let batches: Vec<Vec<reel::replay::ReplayResult>> = vec![
        vec![reel::replay::replay_file(&big, &opts)],
        vec![
            reel::replay::replay_file(Path::new(PDF), &opts),
            reel::replay::replay_file(&big, &opts),
        ],
        Vec::new(),
    ];
    assert_eq!(
        batches[0][0].to_json()["toolResults"]
            .as_array()
            .map(Vec::len),
        Some(2_345),
        "{:?}",
        batches[0][0].error
    );
    // Written from the caller's thread (the pool makes the text), and from
    // a pool thread of a one-thread pool (which writes it all itself).
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for results in &batches {
        let want = serde_json::to_string(&reel::report::json::envelope(results)).unwrap() + "\n";
        let mut streamed = Vec::new();
        reel::report::json::write_envelope(results, &mut streamed).unwrap();
        let mut on_the_pool = Vec::new();
        one_thread
            .install(|| reel::report::json::write_envelope(results, &mut on_the_pool))
            .unwrap();
        for (how, text) in [("streamed", streamed), ("on a pool thread", on_the_pool)] {
            assert!(
                String::from_utf8(text).unwrap() == want,
                "the report written {how} differs from the envelope's text ({} results)",
                results.len()
            );
        }
    }
    // A writer that fails part way stops the stream with its error (the
    // pool's side stops too: this returns), also past the report's first
    // megabyte (the writer's buffer), while windows are still being made.
    struct FailsAfter(usize);
    impl std::io::Write for FailsAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if buf.len() > self.0 {
                return Err(std::io::Error::other("disk full"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let size = serde_json::to_string(&reel::report::json::envelope(&batches[0]))
        .unwrap()
        .len();
    assert!(size > 2 << 20, "{size} bytes: more than the buffer holds");
    for room in [0, 100, size / 2, size - 10] {
        let err = reel::report::json::write_envelope(&batches[0], FailsAfter(room)).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}

/// `replay DIR --output-format json`: every result names its cassette, in
/// the order of the directory listing, as rerun's and verify's do; a
/// cassette that cannot be replayed is named too.
#[test]
fn each_json_result_of_a_directory_names_its_cassette() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cassettes");
    std::fs::create_dir(&dir).unwrap();
    for name in ["pick-features", "write-note"] {
        let file = format!("{name}.cassette.json");
        std::fs::copy(
            support::repo().join("cassettes").join(&file),
            dir.join(&file),
        )
        .unwrap();
    }
    std::fs::write(dir.join("broken.cassette.json"), "{").unwrap();
    let out = support::reel()
        .current_dir(tmp.path())
        .args(["replay", "cassettes", "--output-format", "json"])
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = support::schema_errors("replay.json", &env);
    assert!(errors.is_empty(), "{errors:?}");
    let files: Vec<&str> = env["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "cassettes/broken.cassette.json",
            "cassettes/pick-features.cassette.json",
            "cassettes/write-note.cassette.json",
        ]
    );
}

/// Issue 39: a failure line names its key once (the original's message
/// already starts with `artifact_json:`), and two rows of one key failing
/// with the same message say which row each is (their `path`).
#[test]
fn two_rows_failing_alike_print_their_key_once_and_their_path() {
    let fx = Fixture::new();
    let cassette = fx.path("c.cassette.json");
    support::CassetteDoc::from_file(&support::repo().join("cassettes/csv-stats.cassette.json"))
        .set(
            "scenario.assert",
            json!([
                {"artifact_json": {"artifact": "outputs/missing.json", "path": "rows", "equals": 3}},
                {"artifact_json": {"artifact": "outputs/missing.json", "path": "total", "equals": 245}}
            ]),
        )
        .write(&cassette);
    let run = support::reel().arg("replay").arg(&cassette).run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let fails: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix("fail: "))
        .filter(|l| l.contains("missing.json"))
        .collect();
    assert_eq!(fails.len(), 2, "{}", run.stderr);
    for (line, path) in fails.iter().zip(["rows", "total"]) {
        assert!(line.starts_with("artifact_json: "), "{line}");
        assert!(!line.contains("artifact_json: artifact_json:"), "{line}");
        assert!(line.ends_with(&format!(" (path: {path})")), "{line}");
    }
}
