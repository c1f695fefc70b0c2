//! Recorded MCP traffic: what each server of a run said, kept in the
//! cassette under [`CASSETTE_KEY`] (a top-level key cowork-harness's loose
//! cassette shape keeps and never reads). The relay ([`super::relay`]), the
//! HTTP front ([`super::http`]) and the frozen server ([`super::frozen`]) append every JSON-RPC message they pass
//! to a per-server capture file ([`Capture`]); [`Traffic::from_captures`]
//! pairs requests with their responses once the run is over.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The cassette's top-level key for [`Traffic`].
pub const CASSETTE_KEY: &str = "reelMcp";

/// The form of [`Traffic`] this reel writes.
pub const VERSION: u32 = 1;

/// Every server's traffic of one run, and the digest of the MCP
/// configuration it ran with (for staleness).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    pub version: u32,
    /// [`super::digest::config_digest`] of the session's MCP config.
    #[serde(rename = "configDigest", skip_serializing_if = "Option::is_none")]
    pub config_digest: Option<String>,
    /// [`super::digest::config_files`]: each server file's hash, keyed by a
    /// hash of its path, so a drift can name the file (absent in older
    /// recordings).
    #[serde(
        rename = "configFiles",
        default,
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub config_files: BTreeMap<String, String>,
    pub servers: BTreeMap<String, ServerTraffic>,
}

/// One server's traffic.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTraffic {
    /// `sdk` for a server the host ran in-process (declared at
    /// `initialize`, reached over `mcp_message`), `http` for a streamable
    /// HTTP one (reached through reel's loopback front); absent for stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The `initialize` result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialize: Option<Value>,
    /// Every other request of the client (`tools/list`, `prompts/list`,
    /// `resources/list`, …) with its answer, in order.
    #[serde(default)]
    pub requests: Vec<Exchange>,
    /// Every `tools/call`, in order.
    #[serde(default)]
    pub calls: Vec<Exchange>,
    /// Notifications (and requests of the server to the client), in order.
    #[serde(default)]
    pub notifications: Vec<Notification>,
}

/// A request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    pub method: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// A message no answer pairs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// `client` or `server`.
    pub from: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
}

/// Who wrote a captured message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

/// An append-only capture file: one `{"from", "message"}` line per JSON-RPC
/// message, written whole under a lock (the relay's two directions share it).
#[derive(Debug)]
pub struct Capture {
    file: Mutex<std::fs::File>,
}

impl Capture {
    pub fn open(path: &Path) -> std::io::Result<Capture> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Capture {
            file: Mutex::new(file),
        })
    }

    /// Appends `line` if it is a JSON-RPC message (anything else passes
    /// unrecorded: a server's stray output is not traffic).
    pub fn log(&self, from: Side, line: &[u8]) {
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        if !message.is_object() {
            return;
        }
        let mut text = json!({"from": from.name(), "message": message}).to_string();
        text.push('\n');
        if let Ok(mut f) = self.file.lock() {
            // A lost capture line only thins the recording; the relay keeps
            // serving.
            let _ = f.write_all(text.as_bytes());
        }
    }
}

impl Traffic {
    /// The traffic of a run's capture files (server name → file); servers
    /// whose file is missing (never started) are left out.
    pub fn from_captures(captures: &BTreeMap<String, PathBuf>) -> Traffic {
        let servers = captures
            .iter()
            .filter_map(|(name, path)| {
                let text = std::fs::read_to_string(path).ok()?;
                Some((name.clone(), ServerTraffic::from_capture(&text)))
            })
            .collect();
        Traffic {
            version: VERSION,
            config_digest: None,
            config_files: BTreeMap::new(),
            servers,
        }
    }

    /// The traffic a cassette document carries (`None`: none, or a form
    /// this reel does not read).
    pub fn from_doc(doc: &serde_json::Map<String, Value>) -> Option<Traffic> {
        serde_json::from_value(doc.get(CASSETTE_KEY)?.clone()).ok()
    }

    /// Stores this traffic in a cassette document (at its end).
    pub fn insert_into(&self, doc: &mut serde_json::Map<String, Value>) {
        if let Ok(v) = serde_json::to_value(self) {
            doc.insert(CASSETTE_KEY.into(), v);
        }
    }
}

impl ServerTraffic {
    /// Pairs a capture file's messages: a client request with the server's
    /// response of the same id.
    fn from_capture(text: &str) -> ServerTraffic {
        let mut out = ServerTraffic::default();
        let mut pending: BTreeMap<String, (String, Value)> = BTreeMap::new();
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let from = entry["from"].as_str().unwrap_or_default();
            let msg = &entry["message"];
            let method = msg.get("method").and_then(Value::as_str);
            let id = msg.get("id").map(Value::to_string);
            match (from, method, id) {
                ("client", Some(m), Some(id)) => {
                    pending.insert(id, (m.to_owned(), without_meta(&msg["params"])));
                }
                ("server", None, Some(id)) => {
                    if let Some((method, params)) = pending.remove(&id) {
                        out.answered(method, params, msg);
                    }
                }
                (from, Some(m), _) => out.notifications.push(Notification {
                    from: from.to_owned(),
                    method: m.to_owned(),
                    params: msg["params"].clone(),
                }),
                _ => {}
            }
        }
        out
    }

    fn answered(&mut self, method: String, params: Value, response: &Value) {
        let exchange = Exchange {
            method,
            params,
            result: response.get("result").cloned(),
            error: response.get("error").cloned(),
        };
        match exchange.method.as_str() {
            "initialize" => self.initialize = exchange.result,
            "tools/call" => self.calls.push(exchange),
            _ => self.requests.push(exchange),
        }
    }
}

/// Request params without `_meta`: transport bookkeeping (progress tokens,
/// the agent's tool-use ids, client descriptions) that differs run to run
/// and is never matched on.
pub(crate) fn without_meta(params: &Value) -> Value {
    let mut params = params.clone();
    if let Some(obj) = params.as_object_mut() {
        obj.remove("_meta");
        if obj.is_empty() {
            return Value::Null;
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_pairs_requests_with_responses_by_id() {
        let lines = [
            json!({"from":"client","message":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}}),
            json!({"from":"server","message":{"jsonrpc":"2.0","id":0,"result":{"serverInfo":{"name":"p"}}}}),
            json!({"from":"client","message":{"jsonrpc":"2.0","method":"notifications/initialized"}}),
            json!({"from":"client","message":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}),
            json!({"from":"client","message":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}}),
            json!({"from":"server","message":{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}}),
            json!({"from":"server","message":{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let s = ServerTraffic::from_capture(&text);
        assert_eq!(s.initialize, Some(json!({"serverInfo":{"name":"p"}})));
        assert_eq!(s.requests.len(), 1);
        assert_eq!(s.requests[0].method, "tools/list");
        assert_eq!(s.requests[0].result, Some(json!({"tools":[]})));
        assert_eq!(s.calls[0].error, Some(json!({"code":-1,"message":"no"})));
        assert_eq!(s.notifications[0].method, "notifications/initialized");
        assert_eq!(s.notifications[0].from, "client");
    }
}
