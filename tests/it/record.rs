//! `reel record`: the recorder against small misbehaving agents
//! (tests/data/agents/), the secret canary, the verdict gate, the decider's
//! re-derivation on genuine cowork-harness cassettes, and the committed
//! examples re-recorded with the real Claude Code and the scripted model.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture};

/// A temp dir to record into ([`Fixture`]), with a pid file the fake agents
/// append to.
trait Recording {
    fn cassette(&self) -> PathBuf;
    fn pidfile(&self) -> PathBuf;
    fn record(&self, scenario: &str, agent: &str, extra: &[&str]) -> std::process::Output;
    fn doc(&self) -> serde_json::Map<String, Value>;
    fn assert_no_process_left(&self);
}

impl Recording for Fixture {
    fn cassette(&self) -> PathBuf {
        self.path("out.cassette.json")
    }

    fn pidfile(&self) -> PathBuf {
        self.path("pids")
    }

    /// `reel record <scenario> --agent-cmd "python3 fake_agent.py MODE"
    /// --no-sandbox`: these fake agents note every pid they start in a file
    /// of the test's (outside any run), to check the unconfined kill ladder;
    /// the sandboxed path is `fake_agents_record_inside_the_sandbox` and
    /// tests/it/sandbox.rs.
    fn record(&self, scenario: &str, agent: &str, extra: &[&str]) -> std::process::Output {
        let agent_cmd = if agent.ends_with(".sh") {
            format!("sh {}", support::data(&format!("agents/{agent}")).display())
        } else {
            format!(
                "python3 {} {agent}",
                support::data("agents/fake_agent.py").display()
            )
        };
        let mut cmd = support::reel();
        cmd.arg("record")
            .arg(support::data(&format!("record/{scenario}")))
            .arg("--out")
            .arg(self.cassette())
            .arg("--agent-cmd")
            .arg(agent_cmd)
            .arg("--no-sandbox")
            .args(extra)
            .env("REEL_TEST_PIDFILE", self.pidfile())
            .env("REEL_RUNS_DIR", self.path("runs"))
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
    let run = Fixture::new();
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
            "environment",
            "hookFailureBlocks",
            // reel's own, last: the workspace snapshots (docs/snapshots.md).
            "reelCheckpoints"
        ]
    );
    assert_eq!(doc["cassetteVersion"], 12);
    // The fake agent reports no version, so its hook sources were read.
    assert_eq!(doc["hookFailureBlocks"], serde_json::json!({"events": []}));
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
        run.root().join(source).is_file(),
        "scenarioSource {source} does not resolve"
    );
    // The run dir is removed after a clean recording.
    let runs = run.root().join("runs");
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
    let run = Fixture::new();
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
    let run = Fixture::new();
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
    let run = Fixture::new();
    let out = run.record("agent.yaml", "unknown", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unsupported control_request subtype"),
        "{}",
        stderr(&out)
    );
    assert!(!run.cassette().exists(), "a failing run was frozen");
    let run = Fixture::new();
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
        let run = Fixture::new();
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
fn fake_agents_record_inside_the_sandbox() {
    // The same agents as above, confined (the default): a well-behaved one
    // records; a forker's children end with the run (its PID namespace).
    for mode in ["good", "forker"] {
        let run = Fixture::new();
        let out = support::reel()
            .arg("record")
            .arg(support::data("record/agent.yaml"))
            .arg("--out")
            .arg(run.cassette())
            .arg("--agent-cmd")
            .arg(format!(
                "python3 {} {mode}",
                support::data("agents/fake_agent.py").display()
            ))
            .env("REEL_RUNS_DIR", run.root().join("runs"))
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("sandbox: landlock v"),
            "{}",
            stderr(&out)
        );
        assert_eq!(run.doc()["environment"]["sandbox"]["enabled"], true);
    }
}

#[test]
fn garbage_lines_are_recorded_verbatim_and_fail_the_live_verdict() {
    // The run itself completes; the replay engine's verdict refuses a
    // cassette with malformed event lines (they could conceal a failure).
    let run = Fixture::new();
    let out = run.record("agent.yaml", "garbage", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not valid JSON"), "{err}");
    assert!(!run.cassette().exists());
    let out = run.record("agent.yaml", "garbage", &["--allow-failing"]);
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
    assert!(events.iter().any(|e| e.contains("fine anyway")));
    run.assert_no_process_left();
}

#[test]
fn an_unscripted_question_writes_nothing_and_prints_a_paste_ready_rule() {
    let run = Fixture::new();
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
    let run = Fixture::new();
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
    let run = Fixture::new();
    let agent_cmd = format!(
        "python3 {} secret",
        support::data("agents/fake_agent.py").display()
    );
    let out = support::reel()
        .arg("record")
        .arg(support::data("record/agent.yaml"))
        .arg("--out")
        .arg(run.cassette())
        .arg("--agent-cmd")
        .arg(agent_cmd)
        .arg("--keep-run-dir")
        .env("REEL_RUNS_DIR", run.root().join("runs"))
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
    let body = leak["body"].as_str().unwrap();
    assert!(
        body.starts_with("token=[REDACTED") && !body.contains("canary"),
        "{body}"
    );
    // The kept run directory's logs are scrubbed too (the work root holds
    // the agent's own files, which are the user's business).
    let logs: Vec<PathBuf> = walk_files(&run.root().join("runs"))
        .into_iter()
        .filter(|p| !p.components().any(|c| c.as_os_str() == "work"))
        .collect();
    assert!(logs.iter().any(|p| p.ends_with("events.jsonl")), "{logs:?}");
    for p in logs {
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert!(!text.contains(canary), "{} holds the canary", p.display());
    }
}

#[test]
fn bad_scenarios_are_usage_errors_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.yaml");
    std::fs::write(&path, "fidelity: protocol\nprompt: x\nanwsers: []\n").unwrap();
    let out = support::reel().arg("record").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown key `anwsers` (did you mean `answers`?)"),
        "{err}"
    );
    assert!(err.contains("bad.yaml"), "{err}");
}

#[test]
fn a_blank_prompt_loads_but_record_refuses_it_before_running_anything() {
    // The original's schema takes `prompt: ""` (replay and verify compare
    // it); reel's recorder has no user turn to send, so it refuses.
    let dir = tempfile::tempdir().unwrap();
    for (file, yaml) in [
        ("empty.yaml", "fidelity: protocol\nprompt: \"\"\n"),
        ("spaces.yaml", "fidelity: protocol\nprompt: \"  \\n\"\n"),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, yaml).unwrap();
        let out_path = dir.path().join("out.cassette.json");
        let out = support::reel()
            .arg("record")
            .arg(&path)
            .arg("--out")
            .arg(&out_path)
            .arg("--agent-cmd")
            .arg("false")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(
            err.contains(&format!(
                "load scenario `{}`: `prompt` is blank: there is no user turn to send to the agent",
                path.display()
            )),
            "{file}: {err}"
        );
        assert!(
            err.contains("hint: write the user turn in `prompt:`"),
            "{file}: {err}"
        );
        assert!(!out_path.exists(), "{file}: a cassette was written");
    }
}

#[test]
fn genuine_cowork_harness_recordings_rederive_their_answers() {
    for name in [
        "example-multiselect-gate",
        "example-pdf-skill",
        "hostloop-computer-links",
    ] {
        let path = support::compat(&format!("examples/replays/{name}.cassette.json"));
        let doc = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let cassette = reel::cassette::Cassette::unchecked(path, doc, 12);
        let problems = reel::scenario::answers::check_recorded_answers(&cassette);
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

#[test]
fn reels_own_example_recordings_rederive_their_answers() {
    let mut checked = 0;
    for dir in ["cassettes", "cassettes/red"] {
        for e in std::fs::read_dir(support::repo().join(dir))
            .unwrap()
            .flatten()
        {
            let path = e.path();
            if !path.to_string_lossy().ends_with(".cassette.json") {
                continue;
            }
            let cassette = reel::cassette::Cassette::load(&path).unwrap();
            let problems = reel::scenario::answers::check_recorded_answers(&cassette);
            assert!(problems.is_empty(), "{}: {problems:#?}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} cassettes checked");
}

#[test]
fn a_tampered_recorded_answer_is_reported() {
    let path = support::compat("examples/replays/example-multiselect-gate.cassette.json");
    let doc = CassetteDoc::from_file(&path)
        .edit_lines("controlOut", |line| {
            let answer =
                "/response/response/updatedInput/answers/Which features should be enabled?";
            if let Some(answer) = line.pointer_mut(answer) {
                *answer = json!("Billing");
            }
        })
        .into_map();
    let cassette = reel::cassette::Cassette::unchecked(path, doc, 12);
    let problems = reel::scenario::answers::check_recorded_answers(&cassette);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("Billing"), "{}", problems[0]);
}

// ---------------------------------------------------------------------------
// The committed examples, re-recorded with the real Claude Code.

/// Keys whose values change on every run (ids, clocks, host paths). Documented
/// in scenarios/README.md.
const VOLATILE_KEYS: &[&str] = &[
    "session_id",
    // reelTurns.sessionId (a multi-turn recording, docs/multi-turn.md).
    "sessionId",
    "uuid",
    "request_id",
    "timestamp",
    "pid",
    "duration_ms",
    "duration_api_ms",
    "ttft_ms",
    "ttft_stream_ms",
    "first_content_frame_ms",
    "time_to_request_ms",
    "messaging_socket_path",
    "memory_paths",
    "partial_json",
];

fn normalize(v: &Value, run_dir: &regex::Regex) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if VOLATILE_KEYS.contains(&k.as_str()) {
                        Value::String("<volatile>".into())
                    } else {
                        normalize(x, run_dir)
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalize(x, run_dir)).collect()),
        // The run's own TMPDIR stands for the system temp dir a recording
        // made before runs were sandboxed shows.
        Value::String(s) => Value::String(
            run_dir
                .replace_all(s, "<run>")
                .replace("<run>/tmp/", "/tmp/"),
        ),
        other => other.clone(),
    }
}

/// The cassette with its volatile fields masked: raw lines are parsed, the
/// timeline loses `ts`, `timelineHeader` is dropped.
pub(crate) fn comparable(path: &Path) -> Value {
    let run_dir = regex::Regex::new(r#"(/[^\s"'/]+)+/local_[0-9a-z]+"#).unwrap();
    let mut doc: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    doc.remove("timelineHeader");
    // How the run was confined is not what it recorded (the committed
    // examples predate the sandbox).
    if let Some(Value::Object(env)) = doc.get_mut("environment") {
        env.remove("sandbox");
    }
    // Nor the MCP server files' per-file hashes (`reelMcp.configFiles`,
    // which the committed examples predate; `configDigest` covers the same
    // files and is compared).
    if let Some(Value::Object(mcp)) = doc.get_mut("reelMcp") {
        mcp.remove("configFiles");
    }
    // Nor the snapshots (docs/snapshots.md), which most committed examples
    // predate: what they hold is the outputs, compared through `artifacts`.
    doc.remove("reelCheckpoints");
    for key in ["events", "controlOut"] {
        let lines: Vec<Value> = doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let s = l.as_str().unwrap();
                serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.into()))
            })
            .collect();
        doc.insert(key.into(), Value::Array(lines));
    }
    if let Some(Value::Array(t)) = doc.get_mut("timeline") {
        for e in t {
            if let Some(m) = e.as_object_mut() {
                m.remove("ts");
            }
        }
    }
    normalize(&Value::Object(doc), &run_dir)
}

pub(crate) fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (p, q) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_difference(p, q, &format!("{at}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!(
            "{at}:\n  committed: {}\n  recorded:  {}",
            truncate(&a.to_string()),
            truncate(&b.to_string())
        )),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Examples whose events interleave two conversations (see below).
const INTERLEAVED: &[&str] = &["scenarios/delegate-count.yaml"];

/// Where a re-recording of `scenario` (`scenarios/<name>.yaml`) departs from
/// the committed cassette, volatile fields aside; `None` when it does not.
///
/// A background sub-agent's events interleave with the main agent's in
/// completion order and carry its random agent and task ids: that
/// re-recording is held to the same replies per conversation, not event for
/// event.
pub(crate) fn same_recording(scenario: &str, committed: &Path, recorded: &Path) -> Option<String> {
    if INTERLEAVED.contains(&scenario) {
        let replies = |p: &Path| {
            let c = reel::cassette::Cassette::load(p).unwrap();
            reel::rerun::replies::from_cassette(&c)
                .unwrap()
                .script
                .to_yaml()
        };
        return (replies(committed) != replies(recorded))
            .then(|| "the replies (per conversation)".to_owned());
    }
    first_difference(&comparable(committed), &comparable(recorded), "")
}

#[test]
fn the_committed_examples_re_record_identically_apart_from_volatile_fields() {
    let claude = support::require!(support::claude_bin());
    let tmp = tempfile::tempdir().unwrap();
    support::example_tree(tmp.path());
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(support::repo().join("scenarios"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && !n.ends_with(".model.yaml"))
        .filter(|n| !support::VOLATILE_BY_DESIGN.contains(&n.trim_end_matches(".yaml")))
        .collect();
    names.sort();
    assert!(
        names.len() >= 6,
        "fewer than six example scenarios: {names:?}"
    );
    for n in names {
        cases.push((format!("scenarios/{n}"), vec![]));
    }
    for n in ["unexpected-file", "wrong-answer"] {
        cases.push((
            format!("scenarios/red/{n}.yaml"),
            vec![
                "--allow-failing".into(),
                "--out".into(),
                format!("cassettes/red/{n}.cassette.json"),
            ],
        ));
    }
    let mut failures = Vec::new();
    for (scenario, extra) in &cases {
        let out = support::reel()
            .current_dir(tmp.path())
            .arg("record")
            .arg(scenario)
            .args(extra)
            .env("REEL_CLAUDE_BIN", &claude)
            .env("REEL_RUNS_DIR", tmp.path().join("runs"))
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            failures.push(format!(
                "{scenario}: exit {:?}\n{}",
                out.status.code(),
                stderr(&out)
            ));
            continue;
        }
        let written = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let committed = support::repo().join(&written);
        let recorded = tmp.path().join(&written);
        if let Some(d) = same_recording(scenario, &committed, &recorded) {
            failures.push(format!("{scenario}: differs from {written} at {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn two_scenarios_with_one_slug_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["a.yaml", "b.yaml"] {
        std::fs::write(
            dir.path().join(f),
            "name: same/name\nfidelity: protocol\nprompt: x\n",
        )
        .unwrap();
    }
    let out = support::reel()
        .current_dir(dir.path())
        .arg("record")
        .arg(".")
        .arg("--agent-cmd")
        .arg("/bin/false")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("would both write `cassettes/same-name.cassette.json`"),
        "{err}"
    );
    assert!(!dir.path().join("cassettes").exists());
}

#[test]
fn a_tampered_permission_answer_is_reported() {
    let path = support::repo().join("cassettes/bash-policy.cassette.json");
    let text = CassetteDoc::from_file(&path)
        .edit_lines("controlOut", |line| {
            let denied = json!({"behavior": "deny", "message": "denied by scenario policy"});
            if let Some(response) = line.pointer_mut("/response/response")
                && *response == denied
            {
                *response = json!({"behavior": "allow", "updatedInput": {}});
            }
        })
        .pretty();
    let cassette = reel::cassette::Cassette::from_bytes(&path, text.as_bytes()).unwrap();
    let problems = reel::scenario::answers::check_recorded_answers(&cassette);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains("(Bash): recorded allow, but the frozen answers give deny"),
        "{}",
        problems[0]
    );
}
