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
    // Rebuilt from the rows, the report is the same; `eval report DIR`
    // reads and writes DIR only.
    let again = eval(t.path(), &["report", "out"]);
    assert_eq!(again.code, 1, "{}", again.stderr);
    assert!(!t.path().join("eval-out").exists(), "no ./eval-out appears");
    assert!(
        again.stderr.contains("# reel eval: regression"),
        "{}",
        again.stderr
    );
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
        let o = eval(t.path(), &["report", "out"]);
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
fn a_crashing_agent_is_the_arms_failure_and_a_missing_one_infrastructure() {
    support::require!(claude_bin());
    let t = setup();
    // `/bin/false` as the agent: it runs and exits 1, every trial — the arm
    // is what broke, so it is evidence against it.
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            "broken=runtime:agent=/bin/false",
            "--reps",
            "6",
            "--jobs",
            "2",
            "--out",
            "crash",
        ],
    );
    let out = t.path().join("crash");
    let r = report(&out);
    let s = &r["results"]["scenarios"][0];
    assert_eq!(s["trials"][1]["errored"], 0, "{s}");
    assert_eq!(s["trials"][1]["passed"], 0, "{s}");
    let cause = s["causes"][1][0].as_str().unwrap_or_default();
    assert!(cause.contains("run error") && cause.contains("exit"), "{s}");
    assert!(!cause.contains("Failed {"), "no Debug string: {cause}");
    assert!(
        o.stderr.contains("run error"),
        "the text report quotes it: {}",
        o.stderr
    );
    // A program that cannot start is outside both arms.
    std::fs::write(t.path().join("not-executable"), "").unwrap();
    let o = eval(
        t.path(),
        &[
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            "missing=runtime:agent=./not-executable",
            "--reps",
            "2",
            "--out",
            "missing",
        ],
    );
    let out = t.path().join("missing");
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert_eq!(status(&out), "infrastructure_error");
    let trials = &report(&out)["results"]["scenarios"][0]["trials"];
    assert_eq!(
        trials[1]["attempted"], 2,
        "errored trials stay attempted: {trials}"
    );
    assert_eq!(trials[1]["errored"], 2, "{trials}");
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
        text.contains("8 trials") && text.contains("cannot detect any difference"),
        "{text}"
    );
    assert!(
        text.contains("$0 (scripted"),
        "scripted trials cost nothing: {text}"
    );
    assert!(!t.path().join("eval-out").exists());
    let six = support::reel()
        .current_dir(t.path())
        .args([
            "eval",
            "note.yaml",
            "--arm",
            GOOD,
            "--arm",
            BAD,
            "--reps",
            "6",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&six.stdout);
    assert!(
        text.contains("verdict (primary, tested alone) 100 points"),
        "{text}"
    );
    assert!(text.contains("none when all 2 rows"), "{text}");
}

/// A skill whose script prints `skill-ok`, or (broken) crashes with a
/// traceback; its first entry is a folder (`A-lib/`).
fn write_skill(dir: &Path, broken: bool) {
    let skill = dir.join("skills/report");
    std::fs::create_dir_all(skill.join("A-lib")).unwrap();
    std::fs::write(skill.join("A-lib/helper.txt"), "helper\n").unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: report\ndescription: Prints a report.\n---\nRun `sh run.sh`.\n",
    )
    .unwrap();
    let body = if broken {
        "echo 'Traceback (most recent call last):' >&2\necho 'ValueError: boom in report' >&2\nexit 1\n"
    } else {
        "echo skill-ok\n"
    };
    std::fs::write(skill.join("run.sh"), body).unwrap();
}

const SKILL_SCENARIO: &str = "session: lean.yaml\nfidelity: protocol\ntimeout_ms: 120000\nprompt: Run the report skill.\nanswers:\n  - when_tool: Bash\n    decide: allow\nassert:\n  - tool_called: Bash\n";

/// Runs the staged skill's script, then expects its output.
const RUN_SCRIPT: &str = "usage: {input_tokens: 1000, output_tokens: 50}\nturns:\n  - blocks:\n      - text: Running the skill.\n      - tool: Bash\n        input: {command: \"sh .claude/skills/report/run.sh 2>&1 || sh \\\"$CLAUDE_CONFIG_DIR/skills/report/run.sh\\\" 2>&1\", description: run the skill}\n  - expect: {last_tool_result_contains: skill-ok}\n    blocks:\n      - text: Done.\n";

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_skill_broken_since_the_last_commit_is_a_regression_with_its_traceback_quoted() {
    support::require!(claude_bin());
    let t = setup();
    let p = t.path();
    std::fs::write(p.join("skill.yaml"), SKILL_SCENARIO).unwrap();
    std::fs::write(p.join("skill.model.yaml"), RUN_SCRIPT).unwrap();
    write_skill(p, false);
    git(p, &["init", "-q"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "a working skill"]);
    write_skill(p, true);
    let o = eval(
        p,
        &[
            "skill.yaml",
            "--arm",
            "old=git:HEAD:skills/report",
            "--arm",
            "new=skills/report",
            "--reps",
            "6",
            "--jobs",
            "2",
            "--out",
            "out",
        ],
    );
    assert!(!o.stderr.contains("-7"), "{}", o.stderr);
    assert_eq!(
        o.code, 1,
        "6/6 → 0/6 at 6 reps is a regression: {}",
        o.stderr
    );
    let r = report(&p.join("out"));
    let s = &r["results"]["scenarios"][0];
    assert_eq!(s["status"], "regression", "{s}");
    assert_eq!(s["trials"][0]["passed"], 6, "{s}");
    assert_eq!(s["trials"][1]["passed"], 0, "{s}");
    assert_eq!(
        s["trials"][1]["errored"], 0,
        "the skill's failure, not infrastructure: {s}"
    );
    let reason = s["reason"].as_str().unwrap();
    assert!(
        reason.contains("boom in report"),
        "the traceback is quoted: {reason}"
    );
    assert!(
        reason.contains("expectation failed"),
        "in record's words: {reason}"
    );
    assert_eq!(
        s["rows"][1]["role"], "not_counted",
        "a row without a discordant pair: {s}"
    );
    assert_eq!(s["cost"]["guardrail"], "scripted", "{s}");
    assert_eq!(s["cost"]["arms"][0]["total_usd"], 0.0, "{s}");
    assert!(
        o.stderr.contains("trial 12/12") && o.stderr.contains("ETA"),
        "{}",
        o.stderr
    );
    // `reel report --eval DIR` renders exactly what eval wrote.
    let page = support::reel()
        .current_dir(p)
        .args(["report", "--eval", "out", "--out", "page.html"])
        .output()
        .unwrap();
    assert_eq!(
        page.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&page.stderr)
    );
    let html = std::fs::read_to_string(p.join("page.html")).unwrap();
    assert!(html.contains("boom in report") && html.contains("regression"));
    if std::env::var_os("REEL_UPDATE_EVAL_FIXTURE").is_some() {
        let fixture = support::data("report/eval");
        std::fs::create_dir_all(&fixture).unwrap();
        for f in ["eval.json", "runs.jsonl", "history.jsonl", "report.json"] {
            std::fs::copy(p.join("out").join(f), fixture.join(f)).unwrap();
        }
    }
}

#[test]
fn the_operators_claude_config_reaches_neither_arm_and_history_accrues() {
    support::require!(claude_bin());
    let t = setup();
    let p = t.path();
    // What an operator's ~/.claude holds: instructions, hooks, settings,
    // memory, plugins — each carrying the marker.
    let home = p.join("operator-home");
    let claude = home.join(".claude");
    let hook_ran = p.join("hook-ran");
    for (rel, body) in [
        (
            "CLAUDE.md",
            "REEL-PLANTED-MARKER: always say banana.\n".to_owned(),
        ),
        (
            "settings.json",
            serde_json::json!({
                "env": {"REEL_PLANTED": "REEL-PLANTED-MARKER"},
                "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
                    {"type": "command", "command": format!("touch {}", hook_ran.display())}]}]}
            })
            .to_string(),
        ),
        (
            "projects/x/memory/MEMORY.md",
            "REEL-PLANTED-MARKER memory\n".into(),
        ),
        (
            "plugins/installed_plugins.json",
            "{\"REEL-PLANTED-MARKER\": {}}\n".into(),
        ),
        (
            "agents/planted.md",
            "---\nname: planted\n---\nREEL-PLANTED-MARKER\n".into(),
        ),
    ] {
        let f = claude.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
    std::fs::write(p.join("clean.yaml"), SKILL_SCENARIO).unwrap();
    // The marker is joined in the shell, so the transcript never holds it.
    let scan = "usage: {input_tokens: 1000, output_tokens: 50}\nturns:\n  - blocks:\n      - tool: Bash\n        input: {command: \"M=REEL-PLANT; M=\\\"${M}ED-MARKER\\\"; if grep -rqs \\\"$M\\\" \\\"$HOME\\\" \\\"$CLAUDE_CONFIG_DIR\\\" .claude || env | grep -q \\\"$M\\\"; then echo leaked; else echo scan-clean; fi\", description: scan}\n  - expect: {last_tool_result_contains: scan-clean}\n    blocks:\n      - text: Done.\n";
    std::fs::write(p.join("clean.model.yaml"), scan).unwrap();
    write_skill(p, false);
    let run = |out: &str, format: &str| {
        support::reel()
            .current_dir(p)
            .env("HOME", &home)
            .env("REEL_CLAUDE_BIN", claude_bin().unwrap_or_default())
            .args([
                "eval",
                "clean.yaml",
                "--arm",
                "base=none",
                "--arm",
                "skill=skills/report",
                "--reps",
                "1",
                "--min-pairs",
                "1",
                "--out",
                out,
                "--output-format",
                format,
            ])
            .output()
            .unwrap()
    };
    let first = run("first", "json");
    let envelope: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON on stdout ({e}): {}",
            String::from_utf8_lossy(&first.stderr)
        )
    });
    let s = &envelope["results"]["scenarios"][0];
    assert_eq!(s["trials"][0]["passed"], 1, "arm A ran clean: {s}");
    assert_eq!(s["trials"][1]["passed"], 1, "arm B ran clean: {s}");
    assert!(!hook_ran.exists(), "the operator's hook never ran");
    assert!(
        !String::from_utf8_lossy(&first.stderr).contains("# reel eval"),
        "json: no text report"
    );
    // A second eval of the same arms: the history has the first.
    let second = run("second", "text");
    let text = String::from_utf8_lossy(&second.stderr);
    assert!(second.stdout.is_empty(), "text: nothing on stdout");
    assert!(
        text.contains("History A: stable: 100% over 1 earlier run(s)"),
        "{text}"
    );
    let history = std::fs::read_to_string(p.join("eval-history.jsonl")).unwrap();
    assert_eq!(
        history.lines().count(),
        4,
        "two evals × two arms: {history}"
    );
    for line in history.lines() {
        support::assert_schema("eval-history.json", &serde_json::from_str(line).unwrap());
    }
    let r = report(&p.join("second"));
    support::assert_schema("eval-report.json", &r);
}
