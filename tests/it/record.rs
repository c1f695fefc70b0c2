//! `reel record`: the recorder against small misbehaving agents
//! (tests/data/agents/), the secret canary, the verdict gate, the decider's
//! re-derivation on genuine cowork-harness cassettes, and the committed
//! examples re-recorded with the real Claude Code and the scripted model.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util;

/// A temp dir to record into, with a pid file the fake agents append to.
struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        Run {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn cassette(&self) -> PathBuf {
        self.dir.path().join("out.cassette.json")
    }

    fn pidfile(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    /// `reel record <scenario> --agent-cmd "python3 fake_agent.py MODE"`.
    fn record(&self, scenario: &str, agent: &str, extra: &[&str]) -> std::process::Output {
        let agent_cmd = if agent.ends_with(".sh") {
            format!("sh {}", util::data(&format!("agents/{agent}")).display())
        } else {
            format!(
                "python3 {} {agent}",
                util::data("agents/fake_agent.py").display()
            )
        };
        let mut cmd = util::reel();
        cmd.arg("record")
            .arg(util::data(&format!("record/{scenario}")))
            .arg("--out")
            .arg(self.cassette())
            .arg("--agent-cmd")
            .arg(agent_cmd)
            .args(extra)
            .env("REEL_TEST_PIDFILE", self.pidfile())
            .env("REEL_RUNS_DIR", self.dir.path().join("runs"))
            .env_remove("ANTHROPIC_API_KEY");
        cmd.output().unwrap()
    }

    fn doc(&self) -> serde_json::Map<String, Value> {
        let text = std::fs::read_to_string(self.cassette()).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Fails if any process a fake agent started is still alive.
    fn assert_no_process_left(&self) {
        let Ok(text) = std::fs::read_to_string(self.pidfile()) else {
            panic!("the agent never started (no pid file)");
        };
        let mut alive = Vec::new();
        for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Field 3 is the state; a zombie (Z) is dead but not yet reaped.
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            if !stat.is_empty() && state != Some("Z") {
                alive.push(pid);
                // SAFETY: cleaning up after a failed test.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        assert!(alive.is_empty(), "processes left running: {alive:?}");
    }
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn strs(doc: &serde_json::Map<String, Value>, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_well_behaved_agent_is_recorded_with_its_frames_and_files() {
    let run = Run::new();
    let out = run.record("agent.yaml", "good", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = run.doc();
    let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "$schema",
            "cassetteVersion",
            "scenario",
            "events",
            "controlOut",
            "effectiveFidelity",
            "artifacts",
            "userVisibleRoots",
            "preRunPaths",
            "preRunOrigin",
            "preRunHashes",
            "scenarioSource",
            "fingerprint",
            "timeline",
            "timelineHeader",
            "folderPrefixMap",
            "environment"
        ]
    );
    assert_eq!(doc["cassetteVersion"], 12);
    let control = strs(&doc, "controlOut");
    assert_eq!(control.len(), 3, "{control:#?}");
    assert!(control[0].contains(r#""request_id":"init-1""#));
    assert!(control[1].starts_with(r#"{"type":"user""#));
    assert!(
        control[2].contains(r#""behavior":"allow""#)
            && control[2].contains(r#""request_id":"r-1""#)
    );
    let artifacts = doc["artifacts"].as_array().unwrap();
    assert_eq!(artifacts[0]["path"], "outputs/out.txt");
    assert_eq!(artifacts[0]["body"], "hi");
    assert_eq!(doc["scenario"]["session"], "(inline)");
    let source = doc["scenarioSource"].as_str().unwrap();
    assert!(
        run.dir.path().join(source).is_file(),
        "scenarioSource {source} does not resolve"
    );
    // The run dir is removed after a clean recording.
    let runs = run.dir.path().join("runs");
    let left: Vec<_> = walk_files(&runs);
    assert!(left.is_empty(), "run dir kept: {left:?}");
    run.assert_no_process_left();
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(walk_files(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn a_multi_select_question_is_answered_with_joined_canonical_labels() {
    let run = Run::new();
    let out = run.record("agent.yaml", "ask", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let control = strs(&run.doc(), "controlOut");
    let answer: Value = serde_json::from_str(&control[2]).unwrap();
    let body = &answer["response"]["response"];
    assert_eq!(body["behavior"], "allow");
    assert_eq!(
        body["updatedInput"]["answers"]["Which features?"],
        "Auth, Audit"
    );
    assert_eq!(body["updatedInput"]["questions"][0]["header"], "Features");
    let events = strs(&run.doc(), "events");
    assert!(events.iter().any(|e| e.contains("Enabled: Auth, Audit.")));
    run.assert_no_process_left();
}

#[test]
fn the_background_task_hook_is_blocked() {
    let run = Run::new();
    let out = run.record("agent.yaml", "hook", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let control = strs(&run.doc(), "controlOut");
    assert!(
        control[2].contains(r#""decision":"block","reason":"Background agents disabled""#),
        "{}",
        control[2]
    );
    run.assert_no_process_left();
}

#[test]
fn an_unknown_request_gets_an_error_response_and_fails_the_run() {
    let run = Run::new();
    let out = run.record("agent.yaml", "unknown", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unsupported control_request subtype"),
        "{}",
        stderr(&out)
    );
    assert!(!run.cassette().exists(), "a failing run was frozen");
    let run = Run::new();
    let out = run.record("agent.yaml", "unknown", &["--allow-failing"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let control = strs(&run.doc(), "controlOut");
    assert!(
        control
            .iter()
            .any(|c| c.contains(r#""subtype":"error","request_id":"x-1""#)),
        "{control:#?}"
    );
    run.assert_no_process_left();
}

#[test]
fn misbehaving_agents_fail_loud_and_leave_no_process() {
    for (agent, extra, want) in [
        ("crash", vec![], "exited with exit status: 3"),
        ("no_result", vec![], "without a `result`"),
        ("never_result", vec!["--timeout-ms", "1500"], "budget"),
        ("flood", vec!["--timeout-ms", "3000"], ""),
        ("forker", vec![], ""),
        ("hang.sh", vec!["--timeout-ms", "1000"], "budget"),
    ] {
        let run = Run::new();
        let started = std::time::Instant::now();
        let out = run.record("agent.yaml", agent, &extra);
        let err = stderr(&out);
        if agent == "forker" {
            assert_eq!(out.status.code(), Some(0), "{agent}: {err}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{agent}: {err}");
            assert!(err.contains(want), "{agent}: {err}");
            assert!(
                !run.cassette().exists(),
                "{agent}: a failing run was frozen"
            );
            assert!(err.contains("hint: "), "{agent}: no hint: {err}");
        }
        // Not a timing assertion: a generous bound that only catches a hang.
        assert!(started.elapsed().as_secs() < 60, "{agent} took too long");
        run.assert_no_process_left();
    }
}

#[test]
fn garbage_lines_are_recorded_verbatim_and_do_not_break_the_run() {
    let run = Run::new();
    let out = run.record("agent.yaml", "garbage", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = strs(&run.doc(), "events");
    assert!(
        events.contains(&"this is not json".to_owned()),
        "{events:#?}"
    );
    assert!(events.contains(&"{broken".to_owned()));
    assert!(
        !events.iter().any(|e| e.trim().is_empty()),
        "blank lines kept"
    );
    run.assert_no_process_left();
}

#[test]
fn an_unscripted_question_writes_nothing_and_prints_a_paste_ready_rule() {
    let run = Run::new();
    let out = run.record("agent-unscripted.yaml", "ask", &["--allow-failing"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("unscripted AskUserQuestion"), "{err}");
    assert!(
        err.contains("- when_question: \"Which features\\\\?\""),
        "{err}"
    );
    assert!(err.contains("choose: \"Auth\""), "{err}");
    assert!(!run.cassette().exists());
    run.assert_no_process_left();
}

#[test]
fn an_unscripted_tool_under_cowork_parity_is_refused_unless_allowed() {
    let run = Run::new();
    let out = run.record("agent-unscripted.yaml", "good", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("permissive_auto_allow") && err.contains("Write"),
        "{err}"
    );
    assert!(!run.cassette().exists());
    let out = run.record("agent-unscripted.yaml", "good", &["--allow-failing"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("FAILING live verdict"));
}

#[test]
fn a_canary_secret_never_reaches_the_cassette() {
    let canary = "sk-ant-api03-reel-canary-5f1e2d3c4b5a69788796a5b4c3d2e1f0";
    let run = Run::new();
    let agent_cmd = format!(
        "python3 {} secret",
        util::data("agents/fake_agent.py").display()
    );
    let out = util::reel()
        .arg("record")
        .arg(util::data("record/agent.yaml"))
        .arg("--out")
        .arg(run.cassette())
        .arg("--agent-cmd")
        .arg(agent_cmd)
        .env("REEL_RUNS_DIR", run.dir.path().join("runs"))
        .env("REEL_TEST_PIDFILE", run.pidfile())
        .env("ANTHROPIC_API_KEY", canary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(run.cassette()).unwrap();
    assert!(
        !text.contains(canary),
        "the canary leaked into the cassette"
    );
    assert!(
        !text.contains("reel-canary"),
        "a fragment of the canary leaked"
    );
    assert!(text.contains("[REDACTED]"));
    let doc = run.doc();
    let leak = doc["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["path"] == "outputs/leak.txt")
        .unwrap();
    assert_eq!(leak["body"], "token=[REDACTED]\n");
    run.assert_no_process_left();
}

#[test]
fn bad_scenarios_are_usage_errors_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "fidelity: protocol\nprompt: x\nanwsers: []\n").unwrap();
    let out = util::reel().arg("record").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown key `anwsers` (did you mean `answers`?)"),
        "{err}"
    );
    assert!(err.contains("bad.yaml"), "{err}");
}

#[test]
fn genuine_cowork_harness_recordings_rederive_their_answers() {
    for name in [
        "example-multiselect-gate",
        "example-pdf-skill",
        "hostloop-computer-links",
    ] {
        let path = util::compat(&format!("examples/replays/{name}.cassette.json"));
        let doc = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let cassette = reel::cassette::Cassette {
            path,
            doc,
            version: 12,
            load_warnings: vec![],
        };
        let problems = reel::scenario::answers::check_recorded_answers(&cassette);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

#[test]
fn a_tampered_recorded_answer_is_reported() {
    let path = util::compat("examples/replays/example-multiselect-gate.cassette.json");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        r#"\"Which features should be enabled?\":\"Auth, Audit\""#,
        r#"\"Which features should be enabled?\":\"Billing\""#,
    );
    let doc: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let cassette = reel::cassette::Cassette {
        path,
        doc,
        version: 12,
        load_warnings: vec![],
    };
    let problems = reel::scenario::answers::check_recorded_answers(&cassette);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("Billing"), "{}", problems[0]);
}
