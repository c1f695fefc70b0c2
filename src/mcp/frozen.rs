//! The frozen stdio MCP server: `reel __mcp-frozen TAPE SERVER MISSES`, run by
//! the agent in the real server's place. It answers `initialize`,
//! `tools/list` (the recorded tool names, permissive input schemas) and
//! `tools/call` from the tape; a call the tape does not hold gets an error
//! result naming it and the closest recorded call, and is appended to MISSES
//! (JSON lines) for the rerun to report as a divergence.
//!
//! Newline-delimited JSON-RPC over stdin/stdout is the MCP stdio transport;
//! it is a few lines here, where an MCP SDK crate would bring an async
//! runtime for one loop.

use std::io::{BufRead, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::tape::{Miss, Player, ServerTape, Tape};

/// The argument that selects this server in `main` (before clap).
pub const FROZEN_ARG: &str = "__mcp-frozen";

/// Runs the server until stdin closes; never returns.
pub fn frozen_main(args: &[std::ffi::OsString]) -> ! {
    let code = match args {
        [_, _, tape, server, misses] => match serve(
            Path::new(tape),
            &server.to_string_lossy(),
            Path::new(misses),
        ) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("reel frozen MCP server: {e}");
                1
            }
        },
        _ => {
            eprintln!("usage: reel {FROZEN_ARG} TAPE SERVER MISSES");
            2
        }
    };
    std::process::exit(code)
}

fn serve(tape: &Path, server: &str, misses: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(tape).map_err(|e| format!("read `{}`: {e}", tape.display()))?;
    let tape: Tape =
        serde_json::from_str(&text).map_err(|e| format!("`{}`: {e}", tape.display()))?;
    let recorded = tape.servers.get(server).cloned().unwrap_or_default();
    let mut player = Player::new(&recorded);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reply = match respond(
            server,
            &recorded,
            &mut player,
            method,
            &msg["params"],
            misses,
        ) {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(message) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": message}}),
        };
        writeln!(out, "{reply}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn respond(
    server: &str,
    recorded: &ServerTape,
    player: &mut Player,
    method: &str,
    params: &Value,
    misses: &Path,
) -> Result<Value, String> {
    match method {
        "initialize" => Ok(json!({
            "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2024-11-05")),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": format!("reel-frozen-{server}"), "version": env!("CARGO_PKG_VERSION")},
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": recorded.tools.iter().map(|t| json!({
            "name": t,
            "description": format!("{t} (frozen by reel from {})", recorded.source),
            "inputSchema": {"type": "object", "additionalProperties": true},
        })).collect::<Vec<_>>()})),
        "tools/call" => {
            let tool = params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            Ok(match player.answer(tool, &arguments) {
                Ok(call) => json!({"content": call.content, "isError": call.is_error}),
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
            })
        }
        _ => Err(format!(
            "method `{method}` is not served by reel's frozen `{server}` server"
        )),
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
