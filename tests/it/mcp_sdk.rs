//! SDK MCP servers with the real Claude Code CLI: a session's MCP config
//! entry of `"type": "sdk"` is declared to the agent in
//! `initialize.sdkMcpServers`, and the agent reaches it over `mcp_message`
//! control requests that reel, the host, answers — through the entry's
//! `command` when live (record, `--mcp-live`), from the recorded traffic when
//! frozen (rerun). The server is the price-check example's, hosted this way.

use serde_json::json;

use crate::mcp_kit::{cassette_of, edit_and_commit, kinds, notes, price_check_variant, record};
use crate::rerun::rerun_at;
use crate::support::{self, CassetteDoc, Fixture, claude_bin};

const VARIANT: &str = "sdk";

/// The price-check example with its `prices` server as an SDK server.
fn sdk_example() -> Fixture {
    let config = json!({"mcpServers": {"prices": {
        "type": "sdk", "command": "python3", "args": ["./prices_server.py"]}}});
    price_check_variant(VARIANT, &config)
}

#[test]
fn an_sdk_mcp_server_is_recorded_over_mcp_message_and_served_frozen() {
    support::require!(claude_bin());
    let fx = sdk_example();
    let doc = record(&fx, VARIANT);
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
    let (code, env, stderr) = rerun_at(fx.root(), &cassette_of(VARIANT), &["--strict"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kinds(&env), vec![], "{stderr}");
    let notes = notes(&env);
    assert!(
        notes.contains("MCP servers frozen: prices (from the recorded MCP traffic)"),
        "{notes}"
    );

    // Live, on the changed data: red at the MCP call.
    edit_and_commit(&fx, "skills/price-check/mcp/sdk.json", |t| {
        t.replace("\"no-such-python\"", "\"python3\"")
    });
    let (code, env, stderr) = rerun_at(
        fx.root(),
        &cassette_of(VARIANT),
        &["--mcp-live", "prices", "--strict"],
    );
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
    record(&fx, VARIANT);
    CassetteDoc::from_file(&fx.root().join(cassette_of(VARIANT)))
        .set(
            "reelMcp.servers.prices.calls.0.params.arguments.sku",
            "WIDGET-9".into(),
        )
        .write(&fx.root().join(cassette_of(VARIANT)));
    fx.commit(".", "the recorded call asked for another SKU");
    // The frozen reply stays the recorded one, so only --strict fails on
    // the divergence.
    let (code, env, stderr) = rerun_at(fx.root(), &cassette_of(VARIANT), &["--strict"]);
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
    record(&fx, VARIANT);
    // As cowork-harness would keep it: no reel traffic key. The recorded
    // initialize still declares the server, so the rerun hosts it again.
    CassetteDoc::from_file(&fx.root().join(cassette_of(VARIANT)))
        .remove("reelMcp")
        .write(&fx.root().join(cassette_of(VARIANT)));
    edit_and_commit(&fx, "skills/price-check/mcp/sdk.json", |t| {
        t.replace("\"python3\"", "\"no-such-python\"")
    });
    let (code, env, stderr) = rerun_at(fx.root(), &cassette_of(VARIANT), &["--strict"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(kinds(&env), vec![], "{stderr}");
    let notes = notes(&env);
    assert!(
        notes.contains("MCP servers frozen: prices (from the recorded tool_use/tool_result pairs)"),
        "{notes}"
    );
}
