//! HTTP MCP servers with the real Claude Code CLI: the price-check example's
//! `prices` server as a streamable HTTP server of our own
//! (`tests/data/mcp/prices_http.py`, stdlib only), behind reel's loopback
//! front. Recording forwards to it (bearer token and session id passed,
//! never recorded) and keeps its traffic; a rerun serves that traffic frozen
//! with the server stopped, and `--mcp-live` reaches the changed server.
//! Inside the sandbox the agent reaches the front and not the real server's
//! own loopback port.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::mcp_kit::{cassette_of, edit_and_commit, kinds, notes, price_check_variant, record};
use crate::rerun::rerun_at;
use crate::support::{self, Fixture, RunExt, claude_bin, data, reel};

const TOKEN: &str = "s3cret-http-token-4417";
const PRICES: &str = "skills/price-check/mcp/prices.json";

/// A running `prices_http.py`; killed when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    /// Serves the fixture's prices on `port` (0: any), as JSON or as SSE.
    fn start(fx: &Fixture, port: u16, sse: bool) -> HttpServer {
        let mut cmd = Command::new("python3");
        cmd.arg(data("mcp/prices_http.py"))
            .arg(fx.path(PRICES))
            .args(["--port", &port.to_string(), "--token", TOKEN])
            .stdout(Stdio::piped());
        if sse {
            cmd.arg("--sse");
        }
        let mut child = cmd.spawn().expect("python3 runs the test server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the test server did not start: {line:?}"));
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `http` variant of price-check against `server`, with a Bash turn
/// that tries, from inside the sandbox, the agent's own `prices` URL (the
/// front) and the real server's port, printing each connect result.
fn http_example(variant: &str, sse: bool) -> (Fixture, HttpServer) {
    let fx = price_check_variant(variant, &json!({}));
    let server = HttpServer::start(&fx, 0, sse);
    let config = json!({"mcpServers": {"prices": {"type": "http",
        "url": format!("http://127.0.0.1:{}/mcp", server.port),
        "headers": {"Authorization": format!("Bearer {TOKEN}")}}}});
    fx.write(
        &format!("skills/price-check/mcp/{variant}.json"),
        config.to_string(),
    );
    let probe = format!(
        "python3 -c \"import json,socket,urllib.parse as u;c=lambda n:socket.socket().connect_ex(('127.0.0.1',n));\
         p=u.urlsplit(json.load(open('{{{{run}}}}/mcp/config.json'))['mcpServers']['prices']['url']).port;\
         print('FRONT=%d REAL=%d'%(c(p),c({})))\"",
        server.port
    );
    fx.edit(&format!("scenarios/price-{variant}.model.yaml"), |t| {
        t.replace(
            "    blocks:\n      - text:",
            &format!(
                "    blocks:\n      - tool: Bash\n        input: {{command: {}}}\n  - blocks:\n      - text:",
                json!(probe)
            ),
        )
    });
    fx.edit(&format!("scenarios/price-{variant}.yaml"), |t| {
        t.replace(
            "answers:\n",
            "answers:\n  - when_tool: Bash\n    decide: allow\n",
        )
    });
    fx.commit(".", "the prices server over HTTP");
    (fx, server)
}

/// The text of every tool result in a recording's events.
fn tool_results(doc: &serde_json::Map<String, Value>) -> String {
    doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e.as_str()?).ok())
        .filter(|e| e["type"] == "user")
        .map(|e| e["message"]["content"].to_string())
        .collect()
}

#[test]
fn an_http_mcp_server_is_recorded_through_the_front_and_served_frozen() {
    support::require!(claude_bin());
    let (fx, server) = http_example("http", false);
    let doc = record(&fx, "http");
    let doc = doc.doc();
    let prices = &doc["reelMcp"]["servers"]["prices"];
    assert_eq!(prices["transport"], "http", "{prices}");
    assert_eq!(prices["initialize"]["serverInfo"]["name"], "prices-http");
    let list = prices["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "tools/list")
        .expect("the tools/list exchange");
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"]["required"],
        json!(["sku"])
    );
    let call = &prices["calls"][0];
    assert_eq!(call["params"]["arguments"]["sku"], "WIDGET-1", "{prices}");
    assert_eq!(call["result"]["content"][0]["text"], "WIDGET-1: 12.50 EUR");
    // The bearer token reached the server (it answers 401 without it) and
    // is nowhere in the cassette.
    let text = std::fs::read_to_string(fx.path(&cassette_of("http"))).unwrap();
    assert!(!text.contains(TOKEN), "the token was recorded");
    // Inside the sandbox: the front answers, the real server's port does not.
    let results = tool_results(doc);
    assert!(results.contains("FRONT=0 REAL="), "{results}");
    assert!(!results.contains("REAL=0"), "{results}");

    // Frozen: green with the server stopped.
    drop(server);
    let (code, env, stderr) = rerun_at(fx.root(), &cassette_of("http"), &["--strict"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kinds(&env), vec![], "{stderr}");
    assert!(
        notes(&env).contains("MCP servers frozen: prices (from the recorded MCP traffic)"),
        "{}",
        notes(&env)
    );

    // Live, on changed data (the server back on its port): red at the call.
    edit_and_commit(&fx, PRICES, |t| t.replace("12.50", "14.00"));
    let port = server_port(&fx, "http");
    let _server = HttpServer::start(&fx, port, false);
    // The session's `url` is never a live target: the operator names it.
    let (code, _, stderr) = rerun_at(fx.root(), &cassette_of("http"), &["--mcp-live", "prices"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--mcp-live prices=https://"), "{stderr}");
    let live = format!("prices=http://127.0.0.1:{port}/mcp");
    let (code, env, stderr) = rerun_at(
        fx.root(),
        &cassette_of("http"),
        &["--mcp-live", &live, "--strict"],
    );
    assert_eq!(code, 1, "{stderr}");
    let at_call = (
        "mcp__prices__lookup_price".to_owned(),
        "tool_result".to_owned(),
    );
    assert!(kinds(&env).contains(&at_call), "{stderr}\n{env}");
    assert!(env.to_string().contains("WIDGET-1: 14.00 EUR"), "{env}");
}

/// The real server's port, from the variant's MCP config.
fn server_port(fx: &Fixture, variant: &str) -> u16 {
    let config: Value =
        serde_json::from_str(&fx.read(&format!("skills/price-check/mcp/{variant}.json"))).unwrap();
    let url = config["mcpServers"]["prices"]["url"].as_str().unwrap();
    url.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .parse()
        .unwrap()
}

#[test]
fn an_http_server_answering_in_sse_is_recorded_event_by_event() {
    support::require!(claude_bin());
    let (fx, _server) = http_example("http-sse", true);
    let doc = record(&fx, "http-sse");
    let prices = &doc.doc()["reelMcp"]["servers"]["prices"];
    assert_eq!(prices["transport"], "http", "{prices}");
    let call = &prices["calls"][0];
    assert_eq!(
        call["result"]["content"][0]["text"], "WIDGET-1: 12.50 EUR",
        "{prices}"
    );
}

#[test]
fn an_unrecorded_call_to_a_frozen_http_server_is_an_mcp_error_and_a_divergence() {
    support::require!(claude_bin());
    let (fx, server) = http_example("http-miss", false);
    let out = cassette_of("http-miss");
    record(&fx, "http-miss")
        .set(
            "reelMcp.servers.prices.calls.0.params.arguments.sku",
            "WIDGET-9".into(),
        )
        .write(&fx.root().join(&out));
    fx.commit(".", "the recorded call asked for another SKU");
    drop(server);
    let (code, env, stderr) = rerun_at(fx.root(), &out, &["--strict"]);
    assert_eq!(code, 1, "{stderr}");
    let miss = (
        "mcp__prices__lookup_price".to_owned(),
        "mcp_call".to_owned(),
    );
    assert!(kinds(&env).contains(&miss), "{stderr}\n{env}");
    let text = env.to_string();
    assert!(
        text.contains(r#"lookup_price {\"sku\":\"WIDGET-9\"}"#),
        "{text}"
    );
}

#[test]
fn a_legacy_sse_server_is_refused_at_record_naming_the_server_and_the_fix() {
    support::require!(claude_bin());
    let config = json!({"mcpServers": {"prices": {"type": "sse",
        "url": "http://127.0.0.1:9/sse"}}});
    let fx = price_check_variant("sse", &config);
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args([
            "record",
            "scenarios/price-sse.yaml",
            "--out",
            &cassette_of("sse"),
        ])
        .run();
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("MCP server `prices`"), "{}", run.stderr);
    assert!(
        run.stderr.contains("legacy SSE transport"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(r#""type": "http""#), "{}", run.stderr);
    assert!(!fx.path(&cassette_of("sse")).exists());
}
