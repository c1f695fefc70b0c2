//! SDK MCP servers with the real Claude Code CLI: a session's MCP config
//! entry of `"type": "sdk"` is declared to the agent in
//! `initialize.sdkMcpServers`, and the agent reaches it over `mcp_message`
//! control requests that reel, the host, answers — through the entry's
//! `command` when live (record, `--mcp-live`), from the recorded traffic when
//! frozen (rerun). The server is the price-check example's, hosted this way.

use serde_json::{Value, json};

use crate::rerun::{rerun_at, scratch};
use crate::support::{self, CassetteDoc, Fixture, RunExt, claude_bin, reel};

const OUT: &str = "cassettes/price-sdk.cassette.json";

/// The price-check example with its `prices` server as an SDK server.
fn sdk_example() -> Fixture {
    let fx = scratch();
    fx.write(
        "skills/price-check/mcp/sdk.json",
        json!({"mcpServers": {"prices": {
            "type": "sdk", "command": "python3", "args": ["./prices_server.py"]}}})
        .to_string(),
    );
    let session = fx.read("sessions/price-check.yaml");
    fx.write(
        "sessions/price-sdk.yaml",
        session.replace("mcp/mcp.json", "mcp/sdk.json"),
    );
    let scenario = fx.read("scenarios/price-check.yaml");
    fx.write(
        "scenarios/price-sdk.yaml",
        scenario.replace("price-check.yaml", "price-sdk.yaml"),
    );
    let script = fx.read("scenarios/price-check.model.yaml");
    fx.write("scenarios/price-sdk.model.yaml", &script);
    fx.commit(".", "the prices server as an SDK server");
    fx
}

fn record(fx: &Fixture) -> CassetteDoc {
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["record", "scenarios/price-sdk.yaml", "--out", OUT])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    fx.commit(".", "recorded");
    CassetteDoc::from_file(&fx.root().join(OUT))
}

fn edit_and_commit(fx: &Fixture, rel: &str, f: impl FnOnce(&str) -> String) {
    fx.edit(rel, f);
    fx.commit(".", &format!("edit {rel}"));
}

fn kinds(env: &Value) -> Vec<(String, String)> {
    env["results"][0]["rerun"]["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let tool = d["tool"].as_str().unwrap_or("-").to_owned();
            (tool, d["kind"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn an_sdk_mcp_server_is_recorded_over_mcp_message_and_served_frozen() {
    support::require!(claude_bin());
    let fx = sdk_example();
    let doc = record(&fx);
    let doc = doc.doc();
    // Declared at initialize, reached over mcp_message, answered by reel.
    let init = doc["controlOut"][0].as_str().unwrap();
    assert!(init.contains(r#""sdkMcpServers":["prices"]"#), "{init}");
    let events = doc["events"].to_string();
    assert!(
        events.contains(r#"\"subtype\":\"mcp_message\""#),
        "{events}"
    );
    let prices = &doc["reelMcp"]["servers"]["prices"];
    assert_eq!(prices["transport"], "sdk", "{prices}");
    assert_eq!(prices["initialize"]["serverInfo"]["name"], "prices");
    let call = &prices["calls"][0];
    assert_eq!(call["params"]["arguments"]["sku"], "WIDGET-1", "{prices}");
    assert_eq!(call["result"]["content"][0]["text"], "WIDGET-1: 12.50 EUR");

    // Frozen: green with the server's command gone and its data changed.
    edit_and_commit(&fx, "skills/price-check/mcp/prices.json", |t| {
        t.replace("12.50", "14.00")
    });
    edit_and_commit(&fx, "skills/price-check/mcp/sdk.json", |t| {
        t.replace("\"python3\"", "\"no-such-python\"")
    });
    let (code, env, stderr) = rerun_at(fx.root(), OUT, &["--strict"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kinds(&env), vec![], "{stderr}");
    let notes = env["results"][0]["rerun"]["notes"].to_string();
    assert!(
        notes.contains("MCP servers frozen: prices (from the recorded MCP traffic)"),
        "{notes}"
    );

    // Live, on the changed data: red at the MCP call.
    edit_and_commit(&fx, "skills/price-check/mcp/sdk.json", |t| {
        t.replace("\"no-such-python\"", "\"python3\"")
    });
    let (code, env, stderr) = rerun_at(fx.root(), OUT, &["--mcp-live", "prices", "--strict"]);
    assert_eq!(code, 1, "{stderr}");
    let tool_result = (
        "mcp__prices__lookup_price".to_owned(),
        "tool_result".to_owned(),
    );
    assert!(kinds(&env).contains(&tool_result), "{stderr}");
    assert!(env.to_string().contains("WIDGET-1: 14.00 EUR"), "{env}");
}

#[test]
fn an_sdk_call_the_recording_lacks_is_an_mcp_error_and_a_divergence() {
    support::require!(claude_bin());
    let fx = sdk_example();
    record(&fx);
    CassetteDoc::from_file(&fx.root().join(OUT))
        .set(
            "reelMcp.servers.prices.calls.0.params.arguments.sku",
            "WIDGET-9".into(),
        )
        .write(&fx.root().join(OUT));
    fx.commit(".", "the recorded call asked for another SKU");
    // The frozen reply stays the recorded one, so only --strict fails on
    // the divergence.
    let (code, env, stderr) = rerun_at(fx.root(), OUT, &["--strict"]);
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
fn an_sdk_recording_without_traffic_reruns_from_its_tool_use_pairs() {
    support::require!(claude_bin());
    let fx = sdk_example();
    record(&fx);
    // As cowork-harness would keep it: no reel traffic key. The recorded
    // initialize still declares the server, so the rerun hosts it again.
    CassetteDoc::from_file(&fx.root().join(OUT))
        .remove("reelMcp")
        .write(&fx.root().join(OUT));
    edit_and_commit(&fx, "skills/price-check/mcp/sdk.json", |t| {
        t.replace("\"python3\"", "\"no-such-python\"")
    });
    let (code, env, stderr) = rerun_at(fx.root(), OUT, &["--strict"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kinds(&env), vec![], "{stderr}");
    let notes = env["results"][0]["rerun"]["notes"].to_string();
    assert!(
        notes.contains("MCP servers frozen: prices (from the recorded tool_use/tool_result pairs)"),
        "{notes}"
    );
}
