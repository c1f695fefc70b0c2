//! The GitHub Action (action.yml + scripts/action.sh), run as a runner runs
//! it — GITHUB_ACTIONS, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, RUNNER_TEMP set —
//! against the bundled cassettes.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{self, Fixture};

/// A runner's temp dir ([`Fixture`]) and the files the action writes there.
trait Runner {
    fn summary(&self) -> PathBuf;
    fn outputs(&self) -> PathBuf;
    fn action(&self, sub: &str, env: &[(&str, &str)]) -> Output;
    fn read_or_empty(&self, p: &Path) -> String;
}

impl Runner for Fixture {
    fn summary(&self) -> PathBuf {
        self.path("step-summary.md")
    }

    fn outputs(&self) -> PathBuf {
        self.path("github-output")
    }

    /// `bash scripts/action.sh <sub>` in the repository with the runner's
    /// environment and `env` (the action's inputs).
    fn action(&self, sub: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(support::repo().join("scripts/action.sh"))
            .arg(sub)
            .current_dir(support::repo())
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_STEP_SUMMARY", self.summary())
            .env("GITHUB_OUTPUT", self.outputs())
            .env("RUNNER_TEMP", self.root())
            .env("NO_COLOR", "1");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    fn read_or_empty(&self, p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_default()
    }
}

const REEL: &str = env!("CARGO_BIN_EXE_reel");
const ALLOW: (&str, &str) = (
    "REEL_ACTION_VERIFY_FLAGS",
    "--allow-patterns-file cassettes/verify-allow.txt",
);

fn bundled() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(support::repo().join("cassettes"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cassette.json"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_action_replays_and_verifies_the_bundled_cassettes() {
    let r = Fixture::new();
    let junit = r.path("junit.xml");
    let out = r.action(
        "run",
        &[
            ("REEL_ACTION_BIN", REEL),
            ALLOW,
            ("REEL_ACTION_JUNIT", junit.to_str().unwrap()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = r.read_or_empty(&r.summary());
    let n = bundled().len();
    assert!(
        summary.contains(&format!(
            "### reel replay: {n} passed, 0 failed of {n} cassette(s)"
        )),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "### reel verify-cassettes: {n} clean, 0 with findings of {n} cassette(s)"
        )),
        "{summary}"
    );
    for c in bundled() {
        // Named in both tables.
        assert_eq!(
            summary.matches(&format!("`cassettes/{c}`")).count(),
            2,
            "{c}\n{summary}"
        );
    }
    let outputs = r.read_or_empty(&r.outputs());
    assert!(
        outputs.contains("replay-exit=0\n") && outputs.contains("verify-exit=0\n"),
        "{outputs}"
    );
    assert!(outputs.contains(&format!("reel={REEL}\n")), "{outputs}");
    assert!(
        r.read_or_empty(&junit)
            .contains("<testsuite name=\"cassettes/write-note.cassette.json\"")
    );
    assert!(
        stderr.contains("::group::reel replay cassettes/"),
        "{stderr}"
    );
}

#[test]
fn a_failing_cassette_fails_the_action_with_annotations_and_the_first_failure() {
    let r = Fixture::new();
    let out = r.action(
        "run",
        &[
            ("REEL_ACTION_BIN", REEL),
            ("REEL_ACTION_PATHS", "cassettes/red/"),
            ("REEL_ACTION_SKIP_VERIFY", "true"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("::error file=cassettes/red/wrong-answer.cassette.json"),
        "{stderr}"
    );
    let summary = r.read_or_empty(&r.summary());
    assert!(
        summary.contains("0 passed, 2 failed of 2 cassette(s)"),
        "{summary}"
    );
    assert!(
        summary.contains("**First failure** — `cassettes/red/unexpected-file.cassette.json`"),
        "{summary}"
    );
    assert!(
        !summary.contains("verify-cassettes"),
        "skip-verify ran verify: {summary}"
    );
    let outputs = r.read_or_empty(&r.outputs());
    assert!(
        outputs.contains("replay-exit=1\n") && !outputs.contains("verify-exit"),
        "{outputs}"
    );
}

#[test]
fn sharded_action_runs_cover_the_cassettes_once() {
    let mut named = Vec::new();
    for i in 1..=2 {
        let r = Fixture::new();
        let shard = format!("{i}/2");
        let out = r.action(
            "run",
            &[
                ("REEL_ACTION_BIN", REEL),
                ALLOW,
                ("REEL_ACTION_SHARD", &shard),
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = r.read_or_empty(&r.summary());
        assert!(
            summary.contains(&format!("### reel replay (shard {shard}): ")),
            "{summary}"
        );
        let replay_table = summary.split("### reel verify-cassettes").next().unwrap();
        named.extend(
            bundled()
                .into_iter()
                .filter(|c| replay_table.contains(&format!("`cassettes/{c}`"))),
        );
    }
    named.sort();
    assert_eq!(named, bundled());
}

#[test]
fn the_action_reuses_a_cached_build_of_the_same_source() {
    let r = Fixture::new();
    let out = r.action("cache-key", &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = text.lines().find_map(|l| l.strip_prefix("dir=")).unwrap();
    let key = text.lines().find_map(|l| l.strip_prefix("key=")).unwrap();
    assert_eq!(Path::new(dir), r.path("reel-action"), "{text}");
    assert!(key.starts_with("reel-") && key.len() > 40, "{key}");
    // What actions/cache restores: the binary and the key it was built for.
    std::fs::create_dir_all(Path::new(dir).join("bin")).unwrap();
    std::os::unix::fs::symlink(REEL, Path::new(dir).join("bin/reel")).unwrap();
    std::fs::write(Path::new(dir).join("key"), format!("{key}\n")).unwrap();
    let out = r.action(
        "run",
        &[
            ALLOW,
            ("REEL_ACTION_PATHS", "cassettes/red/"),
            ("REEL_ACTION_SKIP_VERIFY", "true"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("reusing the cached build"), "{stderr}");
    assert!(!stderr.contains("cargo install"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

#[test]
fn action_yml_wires_every_input_into_the_script() {
    let yml: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(support::repo().join("action.yml")).unwrap(),
    )
    .unwrap();
    assert_eq!(yml["runs"]["using"], "composite");
    let script = std::fs::read_to_string(support::repo().join("scripts/action.sh")).unwrap();
    let steps = yml["runs"]["steps"].as_sequence().unwrap();
    let run = steps.iter().find(|s| s["id"] == "run").unwrap();
    let env = run["env"].as_mapping().unwrap();
    for (k, v) in env {
        let k = k.as_str().unwrap();
        assert!(
            script.contains(&format!("${{{k}")),
            "action.sh never reads {k}"
        );
        let v = v.as_str().unwrap();
        assert!(
            v.starts_with("${{ inputs.") || v.starts_with("${{ steps."),
            "{k}: {v}"
        );
    }
    for (input, _) in yml["inputs"].as_mapping().unwrap() {
        let input = input.as_str().unwrap();
        let used = serde_yaml_ng::to_string(&yml["runs"]).unwrap();
        assert!(
            used.contains(&format!("inputs.{input}")),
            "input {input} is never used"
        );
    }
}

#[test]
fn the_action_reruns_sandboxed_without_the_jobs_secrets_and_refuses_pull_request_target() {
    let bin = crate::support::require!(support::claude_bin());
    let r = Fixture::new();
    let bin = bin.display().to_string();
    let path = "cassettes/write-note.cassette.json";
    let out = r.action(
        "run",
        &[
            ("REEL_ACTION_BIN", REEL),
            ("REEL_ACTION_PATHS", path),
            ("REEL_ACTION_SKIP_VERIFY", "true"),
            ("REEL_ACTION_RERUN", "true"),
            ("REEL_ACTION_CLAUDE_BIN", &bin),
            ("GITHUB_TOKEN", "ghs_must-never-reach-reel"),
            ("GITHUB_EVENT_NAME", "pull_request"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary = r.read_or_empty(&r.summary());
    assert!(summary.contains("### reel rerun"), "{summary}");
    assert!(summary.contains("- sandbox: landlock v"), "{summary}");
    assert!(r.read_or_empty(&r.outputs()).contains("rerun-exit=0\n"));
    let refused = r.action(
        "run",
        &[
            ("REEL_ACTION_BIN", REEL),
            ("REEL_ACTION_PATHS", path),
            ("REEL_ACTION_SKIP_VERIFY", "true"),
            ("REEL_ACTION_RERUN", "true"),
            ("REEL_ACTION_CLAUDE_BIN", "/nonexistent/claude-must-not-run"),
            ("GITHUB_EVENT_NAME", "pull_request_target"),
        ],
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to run it under pull_request_target"),
        "{stderr}"
    );
}

#[test]
fn the_action_writes_a_report_page_per_cassette_and_lists_failing_ones_first() {
    let r = Fixture::new();
    let dir = r.path("reel-report");
    let out = r.action(
        "run",
        &[
            ("REEL_ACTION_BIN", REEL),
            ("REEL_ACTION_PATHS", "cassettes/red/"),
            ("REEL_ACTION_SKIP_VERIFY", "true"),
            ("REEL_ACTION_REPORT_DIR", dir.to_str().unwrap()),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for name in ["wrong-answer", "unexpected-file"] {
        let page = std::fs::read_to_string(dir.join(format!("{name}.html"))).unwrap();
        assert!(page.contains(r#"<meta name="reel-verdict" content="fail">"#));
        assert!(page.contains(r#"id="rec-assertions""#));
    }
    let summary = r.read_or_empty(&r.summary());
    assert!(
        summary.contains("reel report: 2 HTML page(s) in the `reel-report` artifact"),
        "{summary}"
    );
    assert!(
        summary.contains("open `wrong-answer.html#rec-assertions`"),
        "{summary}"
    );
    assert!(r.read_or_empty(&r.outputs()).contains("report-dir="));
}
