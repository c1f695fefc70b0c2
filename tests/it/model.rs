//! Scripted model endpoint tests: the library server over raw loopback HTTP,
//! `reel model serve`, and the script schema.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use reel::model::{ProblemKind, Script, ServeOptions, Server};
use serde_json::{Value, json};

use crate::support::{self, Failures};

/// A minimal HTTP/1.1 response: status, lower-cased headers, body.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// SSE frames as (event name, data).
    fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|f| !f.trim().is_empty())
            .map(|frame| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in frame.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_string();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).unwrap();
                    }
                }
                (name, data)
            })
            .collect()
    }
}

/// Sends one request over a fresh connection and reads the whole answer
/// (`Connection: close`, so the server closes after it).
fn send(url: &str, method: &str, target: &str, body: &str) -> Reply {
    let addr = url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

fn post(url: &str, body: &Value) -> Reply {
    send(url, "POST", "/v1/messages?beta=true", &body.to_string())
}

const SCRIPT: &str = r#"
usage: {input_tokens: 100, output_tokens: 20}
turns:
  - blocks:
      - text: "Let me look."
      - tool: Bash
        input: {command: "ls {{cwd}}"}
  - expect: {last_tool_result_contains: "hello.txt"}
    usage: {input_tokens: 7, output_tokens: 3}
    blocks:
      - tool: Read
        id: toolu_fixed
        input: {file_path: "{{cwd}}/hello.txt"}
  - blocks:
      - text: Done.
"#;

fn server() -> Server {
    Server::start(
        Script::parse(SCRIPT, "inline.yaml").unwrap(),
        ServeOptions::default(),
    )
    .unwrap()
}

/// A request that has had `answered` assistant turns; tool results say `seen`.
fn request(answered: usize, seen: &str, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": "go"}),
        json!({"role": "system", "content": [{"type": "text", "text": " - Primary working directory: /w/proj\n - Platform: linux"}]}),
    ];
    for i in 0..answered {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": seen}]}));
    }
    json!({"model": "claude-test-1", "stream": stream, "max_tokens": 100,
           "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
           "messages": messages})
}

#[test]
fn streams_a_text_and_tool_use_turn() {
    let server = server();
    let reply = post(&server.url(), &request(0, "", true));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(reply.header("request-id"), Some("req_reel_0"));
    let events = reply.events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let start = &events[0].1["message"];
    assert_eq!(start["id"], "msg_reel_0");
    assert_eq!(start["model"], "claude-test-1");
    assert_eq!(start["usage"]["input_tokens"], 100);

    let mut text = String::new();
    let mut partial_json = String::new();
    let mut tool_start = Value::Null;
    for (name, data) in &events {
        match name.as_str() {
            "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                tool_start = data["content_block"].clone();
            }
            "content_block_delta" => match data["delta"]["type"].as_str() {
                Some("text_delta") => text.push_str(data["delta"]["text"].as_str().unwrap()),
                Some("input_json_delta") => {
                    partial_json.push_str(data["delta"]["partial_json"].as_str().unwrap())
                }
                other => panic!("unexpected delta {other:?}"),
            },
            _ => {}
        }
    }
    assert_eq!(text, "Let me look.");
    assert_eq!(tool_start["id"], "toolu_reel_0_1");
    assert_eq!(tool_start["name"], "Bash");
    let input: Value = serde_json::from_str(&partial_json).unwrap();
    assert_eq!(input, json!({"command": "ls /w/proj"}));
    let delta = &events[events.len() - 2].1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 20);
    assert_eq!(server.turns_answered(), 1);
    assert!(server.shutdown().is_empty());
}

#[test]
fn turn_is_the_number_of_assistant_messages_and_retries_repeat() {
    let server = server();
    let url = server.url();
    let first = post(&url, &request(1, "a\nhello.txt\n", false));
    assert_eq!(first.status, 200, "{}", first.body);
    let message = first.json();
    assert_eq!(message["id"], "msg_reel_1");
    assert_eq!(message["content"][0]["id"], "toolu_fixed");
    assert_eq!(
        message["content"][0]["input"]["file_path"],
        "/w/proj/hello.txt"
    );
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["usage"]["output_tokens"], 3);
    // A retry of the same request gets byte-identical bytes.
    let again = post(&url, &request(1, "a\nhello.txt\n", false));
    assert_eq!(again.body, first.body);
    let last = post(&url, &request(2, "hello.txt", false)).json();
    assert_eq!(last["content"], json!([{"type": "text", "text": "Done."}]));
    assert_eq!(last["stop_reason"], "end_turn");
    let streamed_twice = [
        post(&url, &request(2, "x", true)).body,
        post(&url, &request(2, "x", true)).body,
    ];
    assert_eq!(streamed_twice[0], streamed_twice[1]);
    assert!(server.shutdown().is_empty());
}

#[test]
fn concurrent_requests_never_mix_turns() {
    let server = server();
    let url = server.url();
    let handles: Vec<_> = (0..24)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || {
                let turn = i % 3;
                let reply = post(&url, &request(turn, "hello.txt", i % 2 == 0));
                assert_eq!(reply.status, 200, "{}", reply.body);
                let id = if i % 2 == 0 {
                    reply.events()[0].1["message"]["id"].clone()
                } else {
                    reply.json()["id"].clone()
                };
                assert_eq!(id, format!("msg_reel_{turn}"));
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(server.turns_answered(), 3);
    assert!(server.shutdown().is_empty());
}

#[test]
fn broken_expectation_and_out_of_turns_are_loud_errors() {
    let server = server();
    let url = server.url();
    let broken = post(&url, &request(1, "nothing here", true));
    assert_eq!(broken.status, 417);
    let body = broken.json();
    assert_eq!(body["type"], "error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("turn 2 of script")
            && message.contains("hello.txt")
            && message.contains("nothing here"),
        "{message}"
    );
    let beyond = post(&url, &request(3, "x", true));
    assert_eq!(beyond.status, 417);
    let message = beyond.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("asked for turn 4") && message.contains("only 3 turn"),
        "{message}"
    );
    let problems = server.shutdown();
    let kinds: Vec<_> = problems.iter().map(|p| (p.kind, p.turn)).collect();
    assert_eq!(
        kinds,
        [
            (ProblemKind::ExpectationFailed, Some(1)),
            (ProblemKind::OutOfTurns, Some(3))
        ]
    );
}

#[test]
fn side_requests_and_auxiliary_endpoints_leave_the_script_alone() {
    let server = server();
    let url = server.url();
    // No tools: a title/summary side call, answered with a fixed short text.
    let side = post(
        &url,
        &json!({"model": "claude-haiku", "stream": false, "messages": [
            {"role": "user", "content": "title?"},
            {"role": "assistant", "content": "x"}, {"role": "assistant", "content": "y"},
            {"role": "assistant", "content": "z"}, {"role": "assistant", "content": "w"}]}),
    );
    assert_eq!(side.status, 200, "{}", side.body);
    assert_eq!(
        side.json()["content"][0]["text"],
        reel::model::server::SIDE_REPLY_TEXT
    );
    let count = send(
        &url,
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &request(0, "", false).to_string(),
    );
    assert_eq!(count.status, 200);
    assert!(count.json()["input_tokens"].as_u64().unwrap() > 0);
    let models = send(&url, "GET", "/v1/models", "");
    assert_eq!(models.status, 200);
    assert_eq!(models.json()["data"][0]["type"], "model");
    assert_eq!(server.turns_answered(), 0);
    // An agent run without tools (`--tools ""`) still describes its
    // environment: that is a scripted turn, not a side call.
    let mut toolless = request(2, "x", false);
    toolless.as_object_mut().unwrap().remove("tools");
    assert_eq!(post(&url, &toolless).json()["content"][0]["text"], "Done.");
    assert!(server.shutdown().is_empty());
}

#[test]
fn anything_else_gets_a_json_error() {
    let server = server();
    let url = server.url();
    for (method, target, body, status) in [
        ("GET", "/v1/messages", "", 405),
        ("POST", "/v1/complete", "{}", 404),
        ("GET", "/", "", 404),
        ("POST", "/v1/messages", "not json", 400),
        ("POST", "/v1/messages", "{\"model\": \"m\"}", 400),
    ] {
        let reply = send(&url, method, target, body);
        assert_eq!(reply.status, status, "{method} {target}: {}", reply.body);
        let error = reply.json();
        assert_eq!(error["type"], "error", "{method} {target}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("reel scripted model")
        );
    }
    let problems = server.shutdown();
    assert_eq!(problems.len(), 5);
    assert!(
        problems
            .iter()
            .all(|p| p.kind == ProblemKind::UnexpectedRequest)
    );
}

#[test]
fn connect_and_proxied_requests_are_escapes() {
    let server = server();
    let url = server.url();
    let connect = send(&url, "CONNECT", "api.anthropic.com:443", "");
    assert_eq!(connect.status, 403);
    let proxied = send(&url, "GET", "http://example.com/x", "");
    assert_eq!(proxied.status, 403);
    let problems = server.shutdown();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.kind == ProblemKind::Escape));
    assert_eq!(problems[0].target, "api.anthropic.com:443");
}

#[test]
fn request_log_has_one_json_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = Server::start(
        Script::parse(SCRIPT, "inline.yaml").unwrap(),
        ServeOptions {
            port: 0,
            log: Some(log.clone()),
            ..ServeOptions::default()
        },
    )
    .unwrap();
    let url = server.url();
    post(&url, &request(0, "", true));
    post(&url, &request(1, "wrong", true));
    send(&url, "GET", "/nope", "");
    drop(server);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["turn"], 0);
    assert_eq!(lines[0]["path"], "/v1/messages");
    assert_eq!(lines[0]["model"], "claude-test-1");
    assert_eq!(lines[0]["messages"], 2);
    assert_eq!(lines[1]["status"], 417);
    assert_eq!(lines[1]["expect"][0]["check"], "last_tool_result_contains");
    assert_eq!(lines[1]["expect"][0]["ok"], false);
    assert_eq!(lines[2]["problem"], "unexpected_request");
}

#[test]
fn serve_prints_the_url_answers_reports_and_stops_on_signals() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let bin = assert_cmd::cargo::cargo_bin("reel");
        let mut child = Command::new(bin)
            .args(["model", "serve", "--script"])
            .arg(support::data("model/write_read_bash.model.yaml"))
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let url = first.trim().to_string();
        let replies = std::panic::catch_unwind(|| {
            assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
            [
                post(&url, &request(0, "", false)),
                post(&url, &request(9, "", false)),
            ]
        });
        // SAFETY: signalling the child we spawned.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let [turn, beyond] = replies.unwrap();
        assert_eq!(turn.status, 200);
        assert_eq!(turn.json()["content"][1]["name"], "Write");
        assert_eq!(beyond.status, 417);
        assert_eq!(
            status.code(),
            Some(0),
            "serve must exit cleanly on signal {signal}"
        );
        assert!(
            stderr.contains("out_of_turns") && stderr.contains("turn 10"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
    }
}

#[test]
fn serve_rejects_a_bad_script_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.model.yaml");
    std::fs::write(
        &script,
        "turns:\n  - blocks:\n      - {tool: Bash, input: [1]}\n",
    )
    .unwrap();
    let out = support::reel()
        .args(["model", "serve", "--script"])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(i32::from(reel::exit::USAGE)));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.model.yaml") && stderr.contains("turns[0].blocks[0].input"),
        "{stderr}"
    );
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(out.stdout.is_empty());
}

fn schema_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("schema/model-script.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn example_scripts_match_the_schema_and_load() {
    let validator = schema_validator();
    let mut failures = Failures::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(support::data("model")).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".model.yaml") {
            continue;
        }
        failures.case(path.display(), || {
            let text = std::fs::read_to_string(&path).unwrap();
            let yaml: Value = serde_yaml_ng::from_str(&text).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&yaml)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            Script::load(&path).unwrap();
        });
        seen += 1;
    }
    failures.assert_none(seen);
    assert!(seen >= 5, "expected the example scripts, saw {seen}");
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    let validator = schema_validator();
    for bad in [
        "turns: []",
        "turns:\n  - blocks: [{text: a, tool: B}]",
        "turns:\n  - blocks: [{}]",
        "turns:\n  - blocks: [{tool: B, input: [1]}]",
        "turns:\n  - blocks: [{text: a}]\n    expect: {nope: 1}",
        "turn: []",
    ] {
        let yaml: Value = serde_yaml_ng::from_str(bad).unwrap();
        assert!(!validator.is_valid(&yaml), "schema accepted {bad:?}");
        assert!(
            Script::parse(bad, "x.yaml").is_err(),
            "loader accepted {bad:?}"
        );
    }
}

#[test]
fn overloaded_turn_answers_529_then_the_turn() {
    let script = Script::parse(
        "turns:\n  - overloaded: 2\n    blocks: [{text: ok}]\n",
        "o.yaml",
    )
    .unwrap();
    let server = Server::start(script, ServeOptions::default()).unwrap();
    let url = server.url();
    let statuses: Vec<u16> = (0..4)
        .map(|_| post(&url, &request(0, "", false)).status)
        .collect();
    assert_eq!(statuses, [529, 529, 200, 200]);
    let first = post(&url, &request(0, "", false)).json();
    assert_eq!(first["content"][0]["text"], "ok");
    assert!(
        server.shutdown().is_empty(),
        "scripted 529s are not problems"
    );
}
