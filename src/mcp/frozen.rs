//! The frozen stdio MCP server: `reel __mcp-frozen TAPE SERVER MISSES
//! CAPTURE`, run by the agent in the real server's place. It answers
//! `initialize`, `tools/list` and every other recorded request from the tape
//! (from recorded traffic: the server's own answers, input schemas included;
//! from tool_use/tool_result pairs: the recorded tool names with permissive
//! input schemas), and `tools/call` from the recorded calls; a call the tape
//! does not hold gets an error result naming it and the closest recorded
//! call, and is appended to MISSES (JSON lines) for the rerun to report as a
//! divergence. What it serves is captured like a live server's traffic, so a
//! cassette written from the rerun carries it too.
//!
//! Newline-delimited JSON-RPC over stdin/stdout is the MCP stdio transport;
//! it is a few lines here, where an MCP SDK crate would bring an async
//! runtime for one loop.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::tape::{Miss, Player, ServerTape, Tape};
use super::traffic::{Capture, Side};

/// The argument that selects this server in `main` (before clap).
pub const FROZEN_ARG: &str = "__mcp-frozen";

/// Runs the server until stdin closes; never returns.
pub fn frozen_main(args: &[std::ffi::OsString]) -> ! {
    let code = match args {
        [_, _, tape, server, misses, capture] => match serve(
            Path::new(tape),
            &server.to_string_lossy(),
            Path::new(misses),
            Path::new(capture),
        ) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("reel frozen MCP server: {e}");
                1
            }
        },
        _ => {
            eprintln!("usage: reel {FROZEN_ARG} TAPE SERVER MISSES CAPTURE");
            2
        }
    };
    std::process::exit(code)
}

fn serve(tape: &Path, server: &str, misses: &Path, capture: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(tape).map_err(|e| format!("read `{}`: {e}", tape.display()))?;
    let tape: Tape =
        serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", tape.display()))?;
    let mut responder = Responder::new(server, &tape, misses);
    let capture =
        Capture::open(capture).map_err(|e| format!("open `{}`: {e}", capture.display()))?;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        capture.log(Side::Client, line.as_bytes());
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(reply) = responder.reply(&msg) else {
            continue; // a notification
        };
        let reply = reply.to_string();
        capture.log(Side::Server, reply.as_bytes());
        writeln!(out, "{reply}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One frozen server's answers, whatever carries the messages (the stdio
/// loop above, or the host's `mcp_message` for an SDK server).
#[derive(Debug)]
pub struct Responder {
    server: String,
    recorded: ServerTape,
    player: Player,
    misses: PathBuf,
}

impl Responder {
    /// The server `server` of `tape` (an empty one if the tape lacks it);
    /// unanswerable calls are appended to `misses`.
    pub fn new(server: &str, tape: &Tape, misses: &Path) -> Responder {
        let recorded = tape.servers.get(server).cloned().unwrap_or_default();
        Responder {
            server: server.to_owned(),
            player: Player::new(&recorded),
            recorded,
            misses: misses.to_owned(),
        }
    }

    /// The JSON-RPC reply to `msg` (`None`: a notification).
    pub fn reply(&mut self, msg: &Value) -> Option<Value> {
        let id = msg.get("id").filter(|id| !id.is_null())?.clone();
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = msg.get("params").unwrap_or(&Value::Null);
        Some(
            match respond(
                &self.server,
                &self.recorded,
                &mut self.player,
                method,
                params,
                &self.misses,
            ) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            },
        )
    }
}

fn respond(
    server: &str,
    recorded: &ServerTape,
    player: &mut Player,
    method: &str,
    params: &Value,
    misses: &Path,
) -> Result<Value, Value> {
    match method {
        "initialize" => Ok(recorded.initialize.clone().unwrap_or_else(|| json!({
            "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2024-11-05")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": format!("reel-frozen-{server}"), "version": env!("CARGO_PKG_VERSION")},
        }))),
        "tools/call" => Ok(call(server, player, params, misses)),
        _ => match recorded.request(method, params) {
            Some(e) => match &e.error {
                Some(error) => Err(error.clone()),
                None => Ok(e.result.clone().unwrap_or_else(|| json!({}))),
            },
            None => unrecorded(server, recorded, method),
        },
    }
}

/// A method the tape holds no answer to: `ping` and a pairs tape's
/// `tools/list` (the recorded names, permissive schemas) are answered anyway.
fn unrecorded(server: &str, recorded: &ServerTape, method: &str) -> Result<Value, Value> {
    match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": recorded.tools.iter().map(|t| json!({
            "name": t,
            "description": format!("{t} (frozen by reel from {})", recorded.source),
            "inputSchema": {"type": "object", "additionalProperties": true},
        })).collect::<Vec<_>>()})),
        _ => Err(json!({"code": -32601, "message": format!(
            "method `{method}` is not served by reel's frozen `{server}` server"
        )})),
    }
}

/// A `tools/call` answered from the recorded calls (a recorded result as
/// is), or an error result naming the closest recorded call.
fn call(server: &str, player: &mut Player, params: &Value, misses: &Path) -> Value {
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
    match player.answer(tool, &arguments) {
        Ok(call) => call
            .result
            .clone()
            .unwrap_or_else(|| json!({"content": call.content, "isError": call.is_error})),
        Err(closest) => {
            let miss = Miss {
                server: server.into(),
                tool: tool.into(),
                arguments: arguments.clone(),
                closest: closest.clone(),
            };
            record_miss(misses, &miss);
            json!({"isError": true, "content": [{"type": "text", "text": miss.message()}]})
        }
    }
}

fn record_miss(path: &Path, miss: &Miss) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{}", serde_json::to_string(miss).unwrap_or_default());
    }
}

impl Miss {
    /// What the agent (and the rerun report) is told.
    pub fn message(&self) -> String {
        format!(
            "reel: the frozen MCP server `{}` has no recorded answer to {} {}; closest recorded \
             call: {} (rerun with --mcp-live {} to run the server for real)",
            self.server,
            self.tool,
            super::tape::canonical(&self.arguments),
            self.closest.as_deref().unwrap_or("(none)"),
            self.server
        )
    }
}

/// The calls the frozen servers of a run appended to `path`.
pub fn read_misses(path: &Path) -> Vec<Miss> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::traffic::{Exchange, ServerTraffic, Traffic};

    /// A tape from recorded traffic: one server, its listing and one call.
    fn traffic_tape() -> ServerTape {
        let server = ServerTraffic {
            initialize: Some(json!({"serverInfo": {"name": "prices"}})),
            requests: vec![Exchange {
                method: "tools/list".into(),
                params: Value::Null,
                result: Some(json!({"tools": [{"name": "lookup_price",
                    "inputSchema": {"type": "object", "required": ["sku"]}}]})),
                error: None,
            }],
            calls: vec![Exchange {
                method: "tools/call".into(),
                params: json!({"name": "lookup_price", "arguments": {"sku": "W"}}),
                result: Some(json!({"content": [{"type": "text", "text": "1"}],
                    "structuredContent": {"price": 1}})),
                error: None,
            }],
            notifications: vec![],
            transport: None,
        };
        let mut doc = serde_json::Map::new();
        Traffic {
            version: 1,
            config_digest: None,
            config_files: Default::default(),
            servers: [("prices".to_owned(), server)].into(),
        }
        .insert_into(&mut doc);
        Tape::of_recording(&doc, &[]).servers["prices"].clone()
    }

    #[test]
    fn recorded_traffic_is_served_as_recorded() {
        let tape = traffic_tape();
        let mut player = Player::new(&tape);
        let misses = std::env::temp_dir().join("reel-frozen-unit-misses.jsonl");
        let mut ask = |method: &str, params: Value| {
            respond("prices", &tape, &mut player, method, &params, &misses)
        };
        let init = ask("initialize", json!({"protocolVersion": "x"})).unwrap();
        assert_eq!(init["serverInfo"]["name"], "prices");
        // The real schema, `_meta` in the request notwithstanding.
        let list = ask("tools/list", json!({"_meta": {"progressToken": 1}})).unwrap();
        assert_eq!(list["tools"][0]["inputSchema"]["required"], json!(["sku"]));
        let call = ask(
            "tools/call",
            json!({"name": "lookup_price", "arguments": {"sku": "W"}}),
        )
        .unwrap();
        assert_eq!(call["structuredContent"]["price"], 1);
        let unknown = ask("prompts/get", json!({})).unwrap_err();
        assert_eq!(unknown["code"], -32601);
    }
}
