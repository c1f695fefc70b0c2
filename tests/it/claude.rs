//! Real-agent tests: the pinned Claude Code CLI against reel's scripted model,
//! fully offline (empty env, fresh HOME/CLAUDE_CONFIG_DIR, proxy tripwire).
//!
//! The driver here is deliberately minimal (print mode, and the stdio
//! permission channel for `can_use_tool`); the full agent driver is
//! `reel::agent`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reel::model::{Problem, ProblemKind, Script, ServeOptions, Server};
use serde_json::{Value, json};

use crate::support::{self, Fixture};

/// Longest a single agent run may take (a run normally takes 1 to 3 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// A fresh run directory: `work/` (the agent's cwd), `home/`, `config/`.
fn sandbox() -> Fixture {
    let fx = Fixture::new();
    fx.dirs(&["work", "home", "config"]);
    fx
}

/// The offline recipe (spec real-client §1): empty env, loopback model,
/// non-essential traffic off, and a proxy tripwire pointing at the model so
/// any attempt to reach another host is logged as an escape.
fn offline_command(bin: &Path, sandbox: &Fixture, url: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear().envs(reel::model::offline_env(
        url,
        &sandbox.path("home"),
        &sandbox.path("config"),
    ));
    cmd.current_dir(sandbox.path("work"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Own process group, so the agent and its tool subprocesses die together.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd
}

/// Kills the agent's whole process group when dropped (timeout, panic, or
/// normal end), so no test leaves processes behind.
struct GroupGuard(Child);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let pgid = self.0.id() as i32;
        // SAFETY: signalling a process group we created; ESRCH is fine.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// What a finished run left behind.
struct Finished {
    lines: Vec<Value>,
    stderr: String,
    exit_code: Option<i32>,
    problems: Vec<Problem>,
    /// Every `can_use_tool` request the host answered.
    permission_requests: Vec<Value>,
}

impl Finished {
    fn result(&self) -> &Value {
        self.lines
            .iter()
            .rev()
            .find(|l| l["type"] == "result")
            .unwrap_or_else(|| {
                panic!(
                    "no result line; stderr:\n{}\nlines: {:#?}",
                    self.stderr, self.lines
                )
            })
    }

    /// tool_result blocks in the agent's user lines, in order.
    fn tool_results(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "user")
            .filter_map(|l| l["message"]["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    fn assert_clean(&self) {
        assert!(
            self.problems.is_empty(),
            "the scripted model saw problems:\n{}\nstderr:\n{}",
            self.problems
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            self.stderr
        );
        let result = self.result();
        assert_eq!(result["is_error"], false, "result: {result:#}");
        assert_eq!(self.exit_code, Some(0), "stderr:\n{}", self.stderr);
    }
}

/// How the host answers a `can_use_tool` request: the `response` object.
type Answerer<'a> = dyn FnMut(&Value) -> Value + 'a;

/// Starts the scripted model, runs the agent, answers permission requests
/// (SDK mode only), and stops everything. `sdk_prompt: Some` selects the
/// bidirectional stream-json mode with `--permission-prompt-tool stdio`.
fn run_agent(
    script: &str,
    sandbox: &Fixture,
    args: &[&str],
    sdk_prompt: Option<&str>,
    answer: &mut Answerer<'_>,
) -> Option<Finished> {
    // A helper cannot `return` from the test: skip (or fail under CI) here
    // and let the caller return on `None`.
    let bin = match support::claude_bin() {
        Ok(bin) => bin,
        Err(why) => {
            support::skip(&why);
            return None;
        }
    };
    let script = Script::load(support::data(&format!("model/{script}"))).unwrap();
    let server = Server::start(script, ServeOptions::default()).unwrap();
    let url = server.url();

    let mut cmd = offline_command(&bin, sandbox, &url);
    cmd.arg("-p");
    cmd.args(["--output-format", "stream-json", "--verbose"]);
    if sdk_prompt.is_some() {
        cmd.args([
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
        ]);
        cmd.stdin(Stdio::piped());
    } else {
        cmd.stdin(Stdio::null());
    }
    cmd.args(args);
    let mut guard = GroupGuard(cmd.spawn().expect("spawn the claude CLI"));
    let child = &mut guard.0;

    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_thread = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });

    let mut stdin = child.stdin.take();
    if let (Some(prompt), Some(pipe)) = (sdk_prompt, stdin.as_mut()) {
        let user = json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
                          "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}});
        writeln!(pipe, "{user}").unwrap();
        pipe.flush().unwrap();
    }

    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut lines = Vec::new();
    let mut permission_requests = Vec::new();
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if value["type"] == "control_request"
                    && value["request"]["subtype"] == "can_use_tool"
                {
                    let response = answer(&value["request"]);
                    permission_requests.push(value["request"].clone());
                    let reply = json!({"type": "control_response", "response": {
                        "subtype": "success", "request_id": value["request_id"], "response": response}});
                    if let Some(pipe) = stdin.as_mut() {
                        writeln!(pipe, "{reply}").unwrap();
                        pipe.flush().unwrap();
                    }
                } else if value["type"] == "control_request" {
                    let reply = json!({"type": "control_response", "response": {
                        "subtype": "error", "request_id": value["request_id"],
                        "error": "not supported by the reel test driver"}});
                    if let Some(pipe) = stdin.as_mut() {
                        writeln!(pipe, "{reply}").unwrap();
                    }
                }
                let is_result = value["type"] == "result";
                lines.push(value);
                if is_result {
                    // One prompt per run: closing stdin ends an SDK session.
                    stdin = None;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                break;
            }
        }
    }
    drop(stdin);
    let exit_code = loop {
        match guard.0.try_wait() {
            Ok(Some(status)) => break status.code(),
            _ if timed_out || Instant::now() > deadline => {
                timed_out = true;
                break None;
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    drop(guard);
    let stderr = stderr_thread.join().unwrap_or_default();
    assert!(
        !timed_out,
        "the agent did not finish within {RUN_TIMEOUT:?}; stderr:\n{stderr}\nlines: {lines:#?}"
    );
    let problems = server.shutdown();
    Some(Finished {
        lines,
        stderr,
        exit_code,
        problems,
        permission_requests,
    })
}

fn no_answers() -> impl FnMut(&Value) -> Value {
    |request: &Value| panic!("unexpected permission request in print mode: {request}")
}

#[test]
fn write_read_bash_offline() {
    let sandbox = sandbox();
    let Some(run) = run_agent(
        "write_read_bash.model.yaml",
        &sandbox,
        &["--permission-mode", "acceptEdits", "go"],
        None,
        &mut no_answers(),
    ) else {
        return;
    };
    run.assert_clean();
    // Write landed with the scripted content.
    let written = std::fs::read_to_string(sandbox.path("work").join("hello.txt")).unwrap();
    assert_eq!(written, "hello from reel\n");
    let results = run.tool_results();
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        results.iter().all(|r| r["is_error"] != true),
        "{results:#?}"
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("hello from reel")
    );
    assert_eq!(results[2]["content"], "reel-bash-42");
    // Deterministic ids, usage and cost.
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["toolu_reel_0_1", "toolu_reel_1_0", "toolu_reel_2_0"]);
    let result = run.result();
    assert_eq!(result["num_turns"], 4);
    assert_eq!(result["result"], "All done.");
    assert_eq!(result["usage"]["input_tokens"], 4000);
    assert_eq!(result["usage"]["output_tokens"], 200);
}

#[test]
fn skill_tool_loads_a_project_skill() {
    let sandbox = sandbox();
    support::copy_tree(
        &support::data("model/skills/greet-fixture"),
        &sandbox.path("work").join(".claude/skills/greet-fixture"),
    );
    let Some(run) = run_agent(
        "skill.model.yaml",
        &sandbox,
        &["greet me"],
        None,
        &mut no_answers(),
    ) else {
        return;
    };
    run.assert_clean();
    let init = run
        .lines
        .iter()
        .find(|l| l["type"] == "system" && l["subtype"] == "init")
        .unwrap();
    assert!(
        init["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "greet-fixture"),
        "skill not advertised: {}",
        init["skills"]
    );
    assert_eq!(run.result()["result"], "Greeted.");
}

#[test]
fn ask_user_question_over_the_stdio_permission_channel() {
    let sandbox = sandbox();
    let mut answer = |request: &Value| {
        if request["tool_name"] == "AskUserQuestion" {
            let mut input = request["input"].clone();
            input["answers"] = json!({"Which color should the button be?": "Blue"});
            json!({"behavior": "allow", "updatedInput": input})
        } else {
            json!({"behavior": "allow", "updatedInput": request["input"]})
        }
    };
    let Some(run) = run_agent(
        "ask.model.yaml",
        &sandbox,
        &[],
        Some("make a button"),
        &mut answer,
    ) else {
        return;
    };
    run.assert_clean();
    assert!(
        run.permission_requests
            .iter()
            .any(|r| r["tool_name"] == "AskUserQuestion"),
        "no AskUserQuestion permission request: {:#?}",
        run.permission_requests
    );
    let asked: Vec<&Value> = run
        .permission_requests
        .iter()
        .map(|r| &r["tool_name"])
        .collect();
    assert_eq!(asked, ["AskUserQuestion", "Write"]);
    let written = std::fs::read_to_string(sandbox.path("work").join("button.txt")).unwrap();
    assert_eq!(written, "color: blue\n");
    let results = run.tool_results();
    assert_eq!(results.len(), 2, "{results:#?}");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("=\"Blue\""),
        "{:#}",
        results[0]
    );
    assert_eq!(run.result()["result"], "The button will be blue.");
}

#[test]
fn broken_expectation_fails_the_run_loudly() {
    let sandbox = sandbox();
    let Some(run) = run_agent(
        "wrong_expectation.model.yaml",
        &sandbox,
        &["--permission-mode", "acceptEdits", "go"],
        None,
        &mut no_answers(),
    ) else {
        return;
    };
    let result = run.result();
    assert_eq!(result["is_error"], true, "{result:#}");
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("417") && text.contains("expectation failed"),
        "{text}"
    );
    assert_eq!(run.exit_code, Some(1));
    assert_eq!(run.problems.len(), 1, "{:?}", run.problems);
    assert_eq!(run.problems[0].kind, ProblemKind::ExpectationFailed);
    assert_eq!(run.problems[0].turn, Some(1));
    assert!(
        run.problems[0].message.contains("actual-output"),
        "{}",
        run.problems[0]
    );
}

#[test]
fn proxy_tripwire_catches_an_escape() {
    support::require!(
        Path::new("/usr/bin/curl").exists(),
        "/usr/bin/curl is missing (the tripwire test needs it)"
    );
    let sandbox = sandbox();
    let Some(run) = run_agent(
        "escape.model.yaml",
        &sandbox,
        &[
            "--allowedTools",
            "Bash(curl:*)",
            "--permission-mode",
            "acceptEdits",
            "go",
        ],
        None,
        &mut no_answers(),
    ) else {
        return;
    };
    let escapes: Vec<&Problem> = run
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Escape)
        .collect();
    assert!(
        escapes
            .iter()
            .any(|p| p.method == "CONNECT" && p.target.starts_with("example.com:443")),
        "the tripwire did not catch curl's CONNECT: {:?}\nresults: {:#?}",
        run.problems,
        run.tool_results()
    );
}

#[test]
fn two_runs_give_the_same_model_side_stream() {
    // What the model said (ids, content, usage) and what it cost must not
    // depend on the run; only the sandbox path differs, and is normalised.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let sandbox = sandbox();
        let Some(run) = run_agent(
            "write_read_bash.model.yaml",
            &sandbox,
            &["--permission-mode", "acceptEdits", "go"],
            None,
            &mut no_answers(),
        ) else {
            return;
        };
        run.assert_clean();
        let work = sandbox.path("work").to_string_lossy().into_owned();
        let assistant: Vec<String> = run
            .lines
            .iter()
            .filter(|l| l["type"] == "assistant")
            .map(|l| l["message"].to_string().replace(&work, "<work>"))
            .collect();
        let result = run.result();
        runs.push((
            assistant,
            result["total_cost_usd"].clone(),
            result["usage"]["input_tokens"].clone(),
            result["usage"]["output_tokens"].clone(),
        ));
    }
    assert_eq!(runs[0].0.len(), 5, "{:#?}", runs[0].0);
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn overloaded_turns_are_retried_by_the_agent() {
    let sandbox = sandbox();
    let Some(run) = run_agent(
        "overloaded.model.yaml",
        &sandbox,
        &["hi"],
        None,
        &mut no_answers(),
    ) else {
        return;
    };
    run.assert_clean();
    let retries: Vec<&Value> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "system" && l["subtype"] == "api_retry")
        .collect();
    assert_eq!(retries.len(), 2, "{:#?}", run.lines);
    assert!(
        retries.iter().all(|r| r["error_status"] == 529),
        "{retries:#?}"
    );
    assert_eq!(run.result()["result"], "Answered after two retries.");
}
