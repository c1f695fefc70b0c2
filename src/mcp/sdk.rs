//! SDK MCP servers: ones the host runs in-process, declared to the agent in
//! `initialize.sdkMcpServers` and reached over `mcp_message` control
//! requests rather than a process the agent starts. A session declares one
//! with an MCP config entry of `"type": "sdk"`; reel, the host, answers for
//! it. Live (record, `--mcp-live`), the entry's `command` stands in for the
//! in-process server: reel starts it behind the recording [`super::relay`],
//! confined like the agent, and passes each message through. Frozen (rerun),
//! a [`Responder`] answers from the tape. Either way the traffic lands in the
//! server's capture file, marked [`TRANSPORT`] in the cassette.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::ChildStdin;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::frozen::Responder;
use super::traffic::{Capture, Side};
use super::{Prepared, Tape};
use crate::agent::{AgentCommand, ProcessGroup, SdkMcp};

/// The `transport` recorded for an SDK server's traffic.
pub const TRANSPORT: &str = "sdk";

/// How long a live SDK server may take to answer one request.
const ANSWER_BUDGET: Duration = Duration::from_secs(60);

/// How the host runs one SDK server.
#[derive(Debug, Clone, PartialEq)]
pub enum Hosted {
    /// Answered from the recording.
    Frozen,
    /// The config entry whose `command` stands in for the server.
    Live(Value),
}

/// Is this MCP config entry an SDK server?
pub fn is_sdk(entry: &Value) -> bool {
    entry.get("type").and_then(Value::as_str) == Some(TRANSPORT)
}

/// The host's SDK servers for one run.
pub struct SdkHost {
    servers: BTreeMap<String, Backend>,
}

enum Backend {
    Frozen(Responder, Capture),
    Live(LiveServer),
}

/// A live server's stand-in process (the relay and the server behind it).
struct LiveServer {
    name: String,
    // Dropped last: kills the relay's group.
    _group: ProcessGroup,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl SdkHost {
    /// The host of `prepared`'s SDK servers (`None`: it has none). A live
    /// one starts now, like `base` (environment, directory, sandbox).
    pub fn start(
        prepared: &Prepared,
        tape: Option<&Tape>,
        base: &AgentCommand,
    ) -> Result<Option<SdkHost>, String> {
        let mut servers = BTreeMap::new();
        for (name, hosted) in &prepared.sdk {
            let capture_path = &prepared.captures[name];
            let backend = match hosted {
                Hosted::Frozen => {
                    let capture = Capture::open(capture_path)
                        .map_err(|e| format!("open `{}`: {e}", capture_path.display()))?;
                    let empty = Tape::default();
                    let tape = tape.unwrap_or(&empty);
                    Backend::Frozen(Responder::new(name, tape, &prepared.misses), capture)
                }
                Hosted::Live(entry) => {
                    Backend::Live(LiveServer::start(name, entry, capture_path, base)?)
                }
            };
            servers.insert(name.clone(), backend);
        }
        Ok((!servers.is_empty()).then_some(SdkHost { servers }))
    }
}

impl SdkMcp for SdkHost {
    fn servers(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    fn handle(&mut self, server: &str, message: &Value) -> Option<Value> {
        match self.servers.get_mut(server)? {
            Backend::Frozen(responder, capture) => {
                capture.log(Side::Client, message.to_string().as_bytes());
                let reply = responder.reply(message)?;
                capture.log(Side::Server, reply.to_string().as_bytes());
                Some(reply)
            }
            Backend::Live(live) => live.exchange(message),
        }
    }
}

impl LiveServer {
    fn start(
        name: &str,
        entry: &Value,
        capture: &std::path::Path,
        base: &AgentCommand,
    ) -> Result<LiveServer, String> {
        let Some(command) = entry.get("command").and_then(Value::as_str) else {
            return Err(format!(
                "MCP server `{name}` is an SDK server (`\"type\": \"sdk\"`) without a `command`: \
                 reel hosts an SDK server by running its `command` as a stdio MCP server; give it \
                 one (or rerun it frozen)"
            ));
        };
        let exe = std::env::current_exe().map_err(|e| format!("locate reel: {e}"))?;
        let mut args = vec![
            super::relay::RELAY_ARG.to_owned(),
            capture.display().to_string(),
            "--".into(),
            command.to_owned(),
        ];
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect()
        };
        args.extend(strings(entry.get("args")));
        let mut env = base.env.clone();
        for (k, v) in entry
            .get("env")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            env.push((k.clone(), v.as_str().unwrap_or_default().to_owned()));
        }
        let cmd = AgentCommand {
            program: exe,
            args,
            env,
            cwd: base.cwd.clone(),
            sandbox: base.sandbox.clone(),
        };
        let mut group = ProcessGroup::spawn(&cmd).map_err(|e| {
            let why = match e {
                crate::agent::SpawnError::Agent(e) => e,
                crate::agent::SpawnError::Sandbox(r) => r.to_string(),
            };
            format!("start the SDK MCP server `{name}`: {why}")
        })?;
        let stdin = group.child.stdin.take().ok_or("no SDK server stdin")?;
        let stdout = group.child.stdout.take().ok_or("no SDK server stdout")?;
        // Its stderr kept beside the capture (a full, unread pipe would
        // stall the server).
        if let Some(mut stderr) = group.child.stderr.take()
            && let Ok(mut log) = std::fs::File::create(capture.with_extension("stderr"))
        {
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut log));
        }
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(LiveServer {
            name: name.to_owned(),
            _group: group,
            stdin,
            lines,
        })
    }

    /// Passes `message` on and waits for the reply of the same id (a
    /// notification waits for nothing); a server that does not answer gets
    /// the agent an internal error rather than a stalled run.
    fn exchange(&mut self, message: &Value) -> Option<Value> {
        let sent = writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush());
        let id = message.get("id").filter(|id| !id.is_null())?;
        if sent.is_ok() {
            let deadline = Instant::now() + ANSWER_BUDGET;
            while let Ok(line) = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                let Ok(reply) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if reply.get("id") == Some(id) && reply.get("method").is_none() {
                    return Some(reply);
                }
            }
        }
        Some(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message":
            format!("reel: the SDK MCP server `{}` did not answer", self.name)}}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tape::{Call, ServerTape};

    /// A frozen SDK server answers over the host and its traffic is kept,
    /// marked `sdk`.
    #[test]
    fn a_frozen_sdk_server_answers_and_its_traffic_is_marked_sdk() {
        let dir = tempfile::tempdir().unwrap();
        let mut tape = Tape::default();
        tape.servers.insert(
            "prices".into(),
            ServerTape {
                source: super::super::tape::TRAFFIC.into(),
                tools: vec!["lookup_price".into()],
                calls: vec![Call {
                    tool: "lookup_price".into(),
                    arguments: json!({"sku": "W"}),
                    content: vec![json!({"type": "text", "text": "W: 1"})],
                    is_error: false,
                    result: None,
                }],
                sdk: true,
                ..ServerTape::default()
            },
        );
        let prepared = Prepared {
            misses: dir.path().join("misses.jsonl"),
            captures: [("prices".to_owned(), dir.path().join("0.jsonl"))].into(),
            sdk: [("prices".to_owned(), Hosted::Frozen)].into(),
            ..Prepared::default()
        };
        let base = AgentCommand {
            program: "claude".into(),
            args: vec![],
            env: vec![],
            cwd: dir.path().to_owned(),
            sandbox: None,
        };
        let mut host = SdkHost::start(&prepared, Some(&tape), &base)
            .unwrap()
            .unwrap();
        assert_eq!(host.servers(), ["prices"]);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
        assert_eq!(host.handle("prices", &init).unwrap()["id"], 0);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(host.handle("prices", &note), None);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "lookup_price", "arguments": {"sku": "W"}}});
        let reply = host.handle("prices", &call).unwrap();
        assert_eq!(reply["result"]["content"][0]["text"], "W: 1", "{reply}");
        let miss = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "lookup_price", "arguments": {"sku": "X"}}});
        assert_eq!(
            host.handle("prices", &miss).unwrap()["result"]["isError"],
            true
        );
        assert_eq!(super::super::frozen::read_misses(&prepared.misses).len(), 1);
        assert_eq!(host.handle("other", &call), None);

        let traffic = prepared.traffic();
        let prices = &traffic.servers["prices"];
        assert_eq!(prices.transport.as_deref(), Some(TRANSPORT));
        assert_eq!(prices.calls.len(), 2);
        assert_eq!(prices.notifications[0].method, "notifications/initialized");
    }
}
