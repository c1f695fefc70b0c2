//! Benchmark: time for the scripted model to answer one turn, measured from a
//! loopback client (raw HTTP over `TcpStream`, a new connection per request,
//! as Claude Code does). Target: under 5 ms per turn.
//!
//! Run: `cargo bench --bench model_turn` (prints median / p99 / mean, and a
//! `BENCH` line per turn against the floor: parsing the request body).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use reel::model::{Script, ServeOptions, Server};
use serde_json::{Value, json};

mod support;

const SCRIPT: &str = r#"
turns:
  - blocks:
      - text: "I'll write the file now, then read it back to check it."
      - tool: Write
        input: {file_path: "{{cwd}}/hello.txt", content: "hello from reel\n"}
  - expect: {last_tool_result_contains: "File created"}
    blocks:
      - tool: Bash
        input: {command: "echo done", description: "Print"}
  - blocks:
      - text: All done.
"#;

/// A request shaped like Claude Code's: ~7 KB system prompt, ~20 tool
/// schemas (~80 KB), `turn` assistant messages with tool results.
fn request(turn: usize) -> String {
    let tools: Vec<Value> = (0..20)
        .map(|i| {
            json!({"name": format!("Tool{i}"), "description": "x".repeat(3000),
                   "input_schema": {"type": "object", "properties": {"a": {"type": "string", "description": "y".repeat(800)}}}})
        })
        .collect();
    let mut messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "go"}]}),
        json!({"role": "system", "content": [{"type": "text", "text": " - Primary working directory: /tmp/work\n"}]}),
    ];
    for i in 0..turn {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Write", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "File created successfully at: /tmp/work/hello.txt"}]}));
    }
    json!({"model": "claude-opus-5-5", "stream": true, "max_tokens": 128000,
           "system": [{"type": "text", "text": "s".repeat(7000)}],
           "tools": tools, "messages": messages})
    .to_string()
}

fn roundtrip(addr: &str, raw: &[u8]) -> usize {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).ok();
    stream.write_all(raw).expect("write");
    let mut out = Vec::with_capacity(8192);
    stream.read_to_end(&mut out).expect("read");
    assert!(
        out.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&out[..out.len().min(300)])
    );
    out.len()
}

fn main() {
    let server = Server::start(
        Script::parse(SCRIPT, "bench.yaml").expect("script"),
        ServeOptions::default(),
    )
    .expect("start");
    let addr = server.url().trim_start_matches("http://").to_string();
    let iterations: usize = std::env::var("REEL_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if support::smoke() { 20 } else { 2000 });
    for turn in [0usize, 2] {
        let body = request(turn);
        let raw = format!(
            "POST /v1/messages?beta=true HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        for _ in 0..50 {
            roundtrip(&addr, &raw);
        }
        let mut times: Vec<Duration> = (0..iterations)
            .map(|_| {
                let start = Instant::now();
                roundtrip(&addr, &raw);
                start.elapsed()
            })
            .collect();
        times.sort();
        let mean = times.iter().sum::<Duration>() / iterations as u32;
        let median = times[iterations / 2];
        let p99 = times[(iterations * 99 / 100).min(iterations - 1)];
        println!(
            "model_turn: turn {turn}, request {} KB, {iterations} iterations: median {:.3} ms, p99 {:.3} ms, mean {:.3} ms (target < 5 ms)",
            body.len() / 1024,
            median.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            mean.as_secs_f64() * 1e3,
        );
        // The floor: the least a server must do with the request, parse it.
        let (_, parse) = support::time_runs(iterations.min(200), || {
            std::hint::black_box(serde_json::from_str::<Value>(&body).expect("parse"));
        });
        support::Bench {
            name: &format!("model_turn_{turn}"),
            seconds: median.as_secs_f64(),
            floor_seconds: Some(parse.as_secs_f64()),
            peak_rss_bytes: None,
            input_bytes: Some(body.len() as u64),
            stat: "median",
            runs: iterations,
        }
        .emit();
    }
    assert!(server.shutdown().is_empty());
}
