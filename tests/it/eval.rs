//! `reel eval` end to end with the real Claude Code CLI against varying
//! model scripts (seeded alternatives): a good script writes the note 9 times
//! in 10, a bad one 1 time in 10.

use std::path::{Path, PathBuf};

use crate::support::{self, claude_bin};

const SCENARIO: &str = "session: lean.yaml\nfidelity: protocol\ntimeout_ms: 120000\nprompt: |\n  Write a one-line note to outputs/note.md that contains the words \"reel smoke\".\nanswers:\n  - when_tool: Write\n    decide: allow\nassert:\n  - file_exists: outputs/note.md\n  - tool_called: Write\n";

fn script(write: u32, refuse: u32) -> String {
    format!(
        "usage: {{input_tokens: 1000, output_tokens: 50}}\nturns:\n  - alternatives:\n      - weight: {write}\n        blocks:\n          - text: Writing the note.\n          - tool: Write\n            input: {{file_path: \"{{{{cwd}}}}/outputs/note.md\", content: \"reel smoke\\n\"}}\n      - weight: {refuse}\n        blocks:\n          - text: I will not write it.\n  - blocks:\n      - text: Done.\n"
    )
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("lean.yaml"),
        "permission_mode: default\npermission_parity: cowork\n",
    )
    .unwrap();
    std::fs::write(p.join("note.yaml"), SCENARIO).unwrap();
    std::fs::write(p.join("good.model.yaml"), script(9, 1)).unwrap();
    std::fs::write(p.join("bad.model.yaml"), script(1, 9)).unwrap();
    dir
}

struct Out {
    code: i32,
    stderr: String,
}

fn eval(dir: &Path, args: &[&str]) -> Out {
    let out = support::reel()
        .current_dir(dir)
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap_or_default())
        .arg("eval")
        .args(args)
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

fn status(dir: &Path) -> String {
    report(dir)["results"]["scenarios"][0]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

const GOOD: &str = "good=runtime:script=good.model.yaml";
const BAD: &str = "bad=runtime:script=bad.model.yaml";

#[test]
fn a_real_regression_is_detected_and_an_edited_report_is_rejected() {
    support::require!(claude_bin());
    let t = setup();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            BAD,
            "--reps",
            "12",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
    );
    let out = t.path().join("out");
    assert_eq!(o.code, 1, "a regression exits 1: {}", o.stderr);
    assert_eq!(status(&out), "regression");
    let r = report(&out);
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("schema/eval-report.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "report.json against its schema: {errors:?}"
    );
    let verdict = &r["results"]["scenarios"][0]["rows"][0];
    assert!(verdict["p_adjusted"].as_f64().unwrap() < 0.05, "{verdict}");
    assert!(
        verdict["interval"][1].as_f64().unwrap() < 0.0,
        "the interval excludes 0: {verdict}"
    );
    // Rebuilt from the rows, the report is the same.
    let again = eval(t.path(), &["report", "out", "--out", "out"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    // A hand-edited pass rate, and a relabelled status, are both rejected.
    for (pointer, value) in [
        (
            "/results/scenarios/0/rows/0/pass_rate_b",
            serde_json::json!(0.99),
        ),
        (
            "/results/scenarios/0/status",
            serde_json::json!("improvement"),
        ),
    ] {
        let mut edited = r.clone();
        *edited.pointer_mut(pointer).unwrap() = value;
        std::fs::write(out.join("report.json"), edited.to_string()).unwrap();
        let o = eval(t.path(), &["report", "out", "--out", "out"]);
        assert_eq!(o.code, 2, "{pointer}: {}", o.stderr);
        assert!(o.stderr.contains("disagrees"), "{}", o.stderr);
    }
}

#[test]
fn identical_arms_are_not_reported_different() {
    support::require!(claude_bin());
    let t = setup();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            "again=runtime:script=good.model.yaml",
            "--reps",
            "6",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(status(&t.path().join("out")), "no_difference");
}

#[test]
fn one_completed_pair_is_insufficient_evidence_whatever_the_policy() {
    support::require!(claude_bin());
    let t = setup();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            BAD,
            "--reps",
            "1",
            "--min-pairs",
            "1",
            "--out",
            "out",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(status(&t.path().join("out")), "insufficient_evidence");
}

#[test]
fn an_error_heavy_arm_is_an_infrastructure_error() {
    support::require!(claude_bin());
    let t = setup();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            "broken=runtime:agent=/bin/false",
            "--reps",
            "3",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
    );
    let out = t.path().join("out");
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_eq!(status(&out), "infrastructure_error");
    let trials = &report(&out)["results"]["scenarios"][0]["trials"];
    assert_eq!(
        trials[1]["attempted"], 3,
        "errored trials stay attempted: {trials}"
    );
    assert_eq!(trials[1]["errored"], 3, "{trials}");
}

#[test]
fn a_manifest_moving_two_axes_is_refused_before_anything_runs() {
    let t = setup();
    std::fs::create_dir(t.path().join("skill")).unwrap();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            "a=skill",
            "--arm",
            BAD,
            "--reps",
            "2",
            "--out",
            "out",
        ],
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("exactly one"), "{}", o.stderr);
    assert!(!t.path().join("out").exists(), "nothing ran");
}

#[test]
fn shard_rows_merge_into_one_report() {
    support::require!(claude_bin());
    let t = setup();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for shard in ["1/2", "2/2"] {
        let name = format!("shard{}", &shard[..1]);
        let o = eval(
            t.path(),
            &[
                "note.yaml",
                "--arm",
                GOOD,
                "--arm",
                BAD,
                "--reps",
                "4",
                "--jobs",
                "2",
                "--shard",
                shard,
                "--out",
                &name,
            ],
        );
        assert!(o.code != 2, "{}", o.stderr);
        dirs.push(t.path().join(name));
    }
    let o = eval(t.path(), &["report", "shard1", "shard2", "--out", "merged"]);
    assert!(o.code == 0 || o.code == 1, "{}", o.stderr);
    let trials = &report(&t.path().join("merged"))["results"]["scenarios"][0]["trials"];
    assert_eq!(trials[0]["attempted"], 4, "{trials}");
    assert_eq!(trials[1]["attempted"], 4, "{trials}");
    // The same shard twice is two copies of the same trials: refused.
    let o = eval(t.path(), &["report", "shard1", "shard1", "--out", "dup"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
}

#[test]
fn dry_run_prints_the_plan_and_runs_nothing() {
    let t = setup();
    let out = support::reel()
        .current_dir(t.path())
        .args([
            "eval",
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            BAD,
            "--reps",
            "4",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text.contains("8 trials") && text.contains("never be significant"),
        "{text}"
    );
    assert!(!t.path().join("eval-out").exists());
}
