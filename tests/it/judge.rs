//! Judged assertions (`semantic_matches`) on the bundled example
//! `judged-note`: the frozen verdict replays green and token-free; a rubric
//! edit is `needs regrade` (a failure under `--strict`); `reel regrade` with
//! the scripted judge brings it back; the scrubber and budget refusals; the
//! v14 stamp of `evidence_files`; `reel eval`'s judged rows; and one check
//! against the real Messages API (skipped without a credential).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Fixture, RunExt, claude_bin, read_doc, reel, repo, require};

const CASSETTE: &str = "cassettes/judged-note.cassette.json";
const SCRIPT: &str = "scenarios/judged-note.model.yaml";

/// A private copy of the example cassette, edited by `edit`.
fn copy_with(dir: &Path, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> PathBuf {
    let mut doc = read_doc(&repo().join(CASSETTE));
    edit(&mut doc);
    let path = dir.join("judged-note.cassette.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    path
}

/// An edit of a cassette document.
type Edit = dyn Fn(&mut serde_json::Map<String, Value>);

const ANSWER: &str = "Done: outputs/note.md tells the team the release is on Friday.";

/// Every recorded string that holds the agent's final answer, with `from`
/// replaced by `to` (each events line parsed and written back, never a
/// text replace on the JSON).
fn edit_answer(doc: &mut serde_json::Map<String, Value>, from: &str, to: &str) {
    fn walk(v: &mut Value, from: &str, to: &str) {
        match v {
            Value::String(s) if s.contains(from) => *s = s.replace(from, to),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, from, to)),
            Value::Object(m) => m.values_mut().for_each(|x| walk(x, from, to)),
            _ => {}
        }
    }
    for line in doc["events"].as_array_mut().unwrap() {
        let mut event: Value = serde_json::from_str(line.as_str().unwrap()).unwrap();
        walk(&mut event, from, to);
        *line = Value::String(event.to_string());
    }
}

fn semantic(doc: &mut serde_json::Map<String, Value>) -> &mut Value {
    &mut doc["scenario"]["assert"][2]["semantic_matches"]
}

fn replay(path: &Path, strict: bool) -> crate::support::Run {
    let mut cmd = reel();
    cmd.arg("replay")
        .arg(path)
        .args(["--output-format", "json"]);
    if strict {
        cmd.arg("--strict");
    }
    cmd.run()
}

fn judged_outcome(run: &crate::support::Run) -> Option<Value> {
    let v = run.json();
    let assertions = v["results"][0]["assertions"].as_array().cloned()?;
    assertions
        .into_iter()
        .find(|a| a["assertion"].get("semantic_matches").is_some())
}

fn regrade(path: &Path, extra: &[&str]) -> crate::support::Run {
    reel()
        .arg("regrade")
        .arg(path)
        .args(["--judge-script"])
        .arg(repo().join(SCRIPT))
        .arg("--accept")
        .args(extra)
        .env_remove("ANTHROPIC_API_KEY")
        .run()
}

#[test]
fn the_frozen_verdict_replays_green_and_says_so() {
    let run = replay(&repo().join(CASSETTE), true);
    assert_eq!(run.code, 0, "{}", run.streams());
    let a = judged_outcome(&run).expect("the judged assertion is reported");
    assert_eq!(a["pass"], true);
    assert_eq!(a["judgeStatus"], "frozen");
    assert_eq!(a["judgeCostUsd"], 0.0);
    assert_eq!(a["votes"], json!({"cast": 3, "valid": 3}));
    assert!((a["agreement"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(a["semanticClaims"][1]["rationale"], "It opens with Team:.");
    assert!(
        a["judgePromptHash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert!(
        a["evidence"].as_str().unwrap().contains("token-free"),
        "{a}"
    );
}

#[test]
fn each_changed_key_needs_regrade_and_fails_under_strict() {
    let cases: Vec<(&str, Box<Edit>)> = vec![
        (
            "the rubric changed",
            Box::new(|d| semantic(d)["rubric"][1] = json!("Signed by the CEO")),
        ),
        (
            "the judge model changed",
            Box::new(|d| semantic(d)["judge_model"] = json!("claude-sonnet-4-5")),
        ),
        (
            "the judge prompt template changed",
            Box::new(|d| {
                d["reelJudgedVerdicts"][0]["judgePromptHash"] = json!("sha256:an-older-template")
            }),
        ),
        (
            "the judged evidence changed",
            Box::new(|d| edit_answer(d, "on Friday", "slipped to Monday")),
        ),
    ];
    for (why, edit) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = copy_with(dir.path(), |d| edit(d));
        let run = replay(&path, false);
        assert!(
            run.stderr.contains("needs regrade") && run.stderr.contains(why),
            "{why}: {}",
            run.streams()
        );
        assert!(
            judged_outcome(&run).is_none(),
            "{why}: not evaluated outside --strict"
        );
        assert_eq!(
            run.json()["results"][0]["skippedAssertions"]["full"],
            1,
            "{why}: a loud skip"
        );
        let strict = replay(&path, true);
        assert_eq!(strict.code, 1, "{why}: {}", strict.streams());
        let a = judged_outcome(&strict).unwrap();
        assert_eq!(
            (a["pass"].clone(), a["judgeStatus"].clone()),
            (json!(false), json!("needs-regrade"))
        );
    }
}

#[test]
fn regrade_with_the_scripted_judge_brings_a_rubric_edit_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_with(dir.path(), |d| {
        semantic(d)["rubric"][1] = json!("Mentions the team")
    });
    assert_eq!(replay(&path, true).code, 1);
    let run = regrade(&path, &[]);
    assert_eq!(run.code, 0, "{}", run.streams());
    let line: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    crate::support::assert_schema("regrade.json", &line);
    assert!(
        run.stderr
            .contains("assertion 3 regraded PASS (the rubric changed)"),
        "{}",
        run.streams()
    );
    assert!(
        run.stderr.contains("judge cost: $0.0000"),
        "{}",
        run.streams()
    );
    let again = replay(&path, true);
    assert_eq!(again.code, 0, "{}", again.streams());
    assert_eq!(
        judged_outcome(&again).unwrap()["semanticClaims"][1]["claim"],
        "Mentions the team"
    );
    // A fresh verdict is left alone unless asked for.
    let idle = regrade(&path, &[]);
    assert!(
        idle.stderr.contains("assertion 3 fresh"),
        "{}",
        idle.streams()
    );
    // Asking for an assertion that is not judged is a usage error.
    let wrong = regrade(&path, &["--assertion", "1"]);
    assert_eq!(wrong.code, 2, "{}", wrong.streams());
    assert!(
        wrong
            .stderr
            .contains("assertion 1 is not a semantic_matches"),
        "{}",
        wrong.streams()
    );
}

#[test]
fn evidence_the_scrubber_cannot_vouch_for_is_never_sent() {
    let dir = tempfile::tempdir().unwrap();
    let key = format!("AKIA{}", "Q7RZ4XKJ2M5N3P6L");
    let path = copy_with(dir.path(), |d| {
        edit_answer(d, ANSWER, &format!("{ANSWER} Deploy key {key}"))
    });
    let run = regrade(&path, &["--all"]);
    assert_eq!(run.code, 1, "{}", run.streams());
    assert!(
        run.stderr.contains("refused") && run.stderr.contains("scrubber"),
        "{}",
        run.streams()
    );
    let a = judged_outcome(&replay(&path, false)).unwrap();
    assert_eq!(a["judgeStatus"], "refused");
    assert_eq!(a["pass"], false);
}

#[test]
fn a_live_judge_over_budget_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_with(dir.path(), |d| {
        semantic(d)["rubric"][1] = json!("Mentions the team")
    });
    // Nothing listens on port 9: a call would fail with exit 3, not 2.
    let run = reel()
        .arg("regrade")
        .arg(&path)
        .args(["--max-budget-usd", "0.0001"])
        .env("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
        .env("REEL_JUDGE_BASE_URL", "http://127.0.0.1:9")
        .run();
    assert_eq!(run.code, 2, "{}", run.streams());
    assert!(run.stderr.contains("--max-budget-usd"), "{}", run.streams());
}

/// The one check against the real Messages API. Never a CI prerequisite:
/// without `ANTHROPIC_API_KEY` it prints SKIPPED (CI included) and checks
/// nothing. Run it with `ANTHROPIC_API_KEY=… cargo test --test it judge::live`.
#[test]
fn live_messages_api_judges_the_example() {
    if std::env::var("ANTHROPIC_API_KEY").map_or(true, |k| k.is_empty()) {
        // Straight to stderr, past libtest's capture; never a failure, even
        // under CI (a credential is not a CI prerequisite here).
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED judge::live_messages_api_judges_the_example: ANTHROPIC_API_KEY is not set \
             (run: ANTHROPIC_API_KEY=… REEL_JUDGE_MODEL=claude-haiku-4-5 cargo test --test it \
             judge::live); it did not run and did not pass"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = copy_with(dir.path(), |d| {
        d.shift_remove("reelJudgedVerdicts");
    });
    let run = reel()
        .arg("regrade")
        .arg(&path)
        .args(["--votes", "1", "--max-budget-usd", "0.5", "--accept"])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    assert!(
        run.stderr.contains("assertion 3 regraded PASS"),
        "{}",
        run.streams()
    );
    let a = judged_outcome(&replay(&path, true)).unwrap();
    assert!(a["judgeCostUsd"].as_f64().unwrap() > 0.0, "{a}");
}

/// A rerun whose answer changed: the recorded reply edited, the fresh run
/// gives the new answer, and the rerun names the judged assertion that now
/// needs regrade (one whose answer did not change keeps its verdict).
#[test]
fn a_rerun_whose_answer_changed_marks_the_judged_assertion_for_regrade() {
    let claude = require!(claude_bin());
    for (edit, want) in [
        (
            false,
            "judged assertion 3 (semantic_matches): the judged answer is unchanged",
        ),
        (
            true,
            "judged assertion 3 (semantic_matches) needs regrade: the judged evidence changed",
        ),
    ] {
        let fx = Fixture::new();
        for sub in ["cassettes", "scenarios", "sessions", "skills", "data"] {
            fx.copy_in(&repo().join(sub), sub);
        }
        if edit {
            let path = fx.root().join(CASSETTE);
            let mut doc = read_doc(&path);
            edit_answer(&mut doc, "release is on Friday", "release moved to Monday");
            edit_answer(&mut doc, "tells the team", "warns the team");
            std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        }
        fx.commit(".", "examples");
        let run = reel()
            .current_dir(fx.root())
            .env("REEL_CLAUDE_BIN", &claude)
            .args(["rerun", CASSETTE])
            .run();
        assert!(
            run.streams().contains(want),
            "edit {edit}: {}",
            run.streams()
        );
    }
}

/// A scripted judge with fewer `judge:` replies than calls is refused at the
/// call past the last one (never a made-up grade): judging stops, exit 3.
#[test]
fn a_script_out_of_judge_replies_stops_judging() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_with(dir.path(), |d| {
        semantic(d)["rubric"][1] = json!("Mentions the team")
    });
    let script = dir.path().join("one.model.yaml");
    let one = r#"{"results": [{"index": 0, "pass": true}, {"index": 1, "pass": true}]}"#;
    std::fs::write(
        &script,
        format!("turns:\n  - blocks: [{{text: x}}]\njudge:\n  - blocks: [{{text: '{one}'}}]\n"),
    )
    .unwrap();
    let run = reel()
        .arg("regrade")
        .arg(&path)
        .arg("--judge-script")
        .arg(&script)
        .run();
    assert_eq!(run.code, 3, "{}", run.streams());
    assert!(run.stderr.contains("`judge:` repl"), "{}", run.streams());
    assert!(!dir.path().join("judged-note.cassette.json.new").exists());
}

/// `evidence_files` (a key cowork-harness 2.0.0 refuses as unrecognized)
/// lifts the recorded cassette to v14, so 2.0.0 says "too new, upgrade"
/// rather than "re-record"; reel replays it green with the judge's verdict
/// over the scoped file.
#[test]
fn a_scenario_scoping_its_evidence_records_a_v14_cassette() {
    let claude = require!(claude_bin());
    let fx = Fixture::new();
    for sub in ["scenarios", "sessions", "skills", "data"] {
        fx.copy_in(&repo().join(sub), sub);
    }
    let scenario = fx.read("scenarios/judged-note.yaml").replace(
        "      rubric:\n",
        "      evidence_files: [\"outputs/note.md\"]\n      rubric:\n",
    );
    assert!(scenario.contains("evidence_files"), "{scenario}");
    fx.write("scenarios/judged-scope.yaml", scenario);
    fx.write("scenarios/judged-scope.model.yaml", fx.read(SCRIPT));
    fx.commit(".", "examples");
    let out = fx.path("scope.cassette.json");
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", &claude)
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .args(["record", "scenarios/judged-scope.yaml", "--out"])
        .arg(&out)
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let doc = read_doc(&out);
    assert_eq!(doc["cassetteVersion"], 14, "{}", run.streams());
    assert!(
        doc["$schema"]
            .as_str()
            .is_some_and(|s| s.ends_with("cassette.v14.json")),
        "{}",
        doc["$schema"]
    );
    let again = replay(&out, true);
    assert_eq!(again.code, 0, "{}", again.streams());
    let a = judged_outcome(&again).unwrap();
    assert_eq!(a["pass"], json!(true), "{a}");
    assert_eq!(
        a["assertion"]["semantic_matches"]["evidence_files"],
        json!(["outputs/note.md"])
    );
}

/// `reel eval` (issue 42 Deliver 6), 2 reps with the real agent: judged in
/// each trial by the script's `judge:` replies, the `semantic_matches` is a
/// row like any other; an arm whose script has no `judge:` replies gets no
/// verdict for it, so its trials are errored with the judge's reason.
#[test]
fn eval_uses_the_judged_row_like_any_other() {
    let claude = require!(claude_bin());
    let fx = Fixture::new();
    for sub in ["scenarios", "sessions", "skills", "data"] {
        fx.copy_in(&repo().join(sub), sub);
    }
    let script = fx.read(SCRIPT);
    let no_judge = &script[..script.find("\njudge:").unwrap()];
    fx.write("nojudge.model.yaml", format!("{no_judge}\n"));
    fx.commit(".", "examples");
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", &claude)
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .args([
            "eval",
            "scenarios/judged-note.yaml",
            "--reps",
            "2",
            "--out",
            "out",
        ])
        .args(["--arm", "nojudge=runtime:script=nojudge.model.yaml"])
        .args(["--arm", &format!("judged=runtime:script={SCRIPT}")])
        .run();
    assert_ne!(run.code, 2, "{}", run.streams());
    let rows: Vec<Value> = (fx.read("out/runs.jsonl").lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 4, "{rows:#?}");
    let label = json!({"semantic_matches": {"rubric": [
        "The note says the release is on Friday", "The note is addressed to the team"]}})
    .to_string();
    for row in &rows {
        if row["arm"] == "judged" {
            assert_eq!(row["outcome"], "passed", "{row}");
            let judged = (row["assertions"].as_array().unwrap().iter())
                .find(|a| a["label"] == label.as_str());
            assert_eq!(
                judged.map(|a| a["pass"].clone()),
                Some(json!(true)),
                "{row}"
            );
        } else {
            assert_eq!(row["outcome"], "errored", "{row}");
            let error = row["error"].as_str().unwrap();
            assert!(
                error.starts_with("1 of 1 semantic_matches assertion(s) not judged: the model script has no `judge:` replies"),
                "{error}"
            );
        }
    }
}
