//! What a frozen MCP server serves: per server, the tool list and the
//! recorded calls, built from the recorded MCP traffic where the cassette
//! carries it ([`super::traffic`]: the real `initialize` result, listings
//! with their input schemas, every call's whole result), else from the
//! recording's `tool_use` / `tool_result` pairs of each
//! `mcp__<server>__<tool>` tool (any cassette, cowork-harness's too).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::traffic::{Exchange, ServerTraffic, Traffic};
use crate::protocol::{Block, Line};

/// Every frozen server of a run, by server name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tape {
    pub servers: BTreeMap<String, ServerTape>,
}

/// One server: what it lists and what it answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTape {
    /// Where this came from ([`PAIRS`] or [`TRAFFIC`]), said on output.
    pub source: String,
    /// Tool names, in first-seen order.
    pub tools: Vec<String>,
    /// Calls in recorded order.
    pub calls: Vec<Call>,
    /// The recorded `initialize` result (traffic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialize: Option<Value>,
    /// Other recorded requests (`tools/list`, …; traffic only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<Exchange>,
    /// An SDK server the host answers for ([`super::sdk`]; traffic only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sdk: bool,
}

/// One recorded `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub tool: String,
    pub arguments: Value,
    /// MCP `content` blocks.
    pub content: Vec<Value>,
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// The whole recorded result, served as is (traffic only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// `mcp__<server>__<tool>` → (server, tool).
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Canonical text of call arguments (jcs1: sorted keys, JavaScript numbers),
/// the key a call is matched on.
pub fn canonical(arguments: &Value) -> String {
    crate::js::json::jcs1_serde(arguments).unwrap_or_else(|_| arguments.to_string())
}

impl Tape {
    /// The tape of a recording's parsed `events`: tools from the `system/init`
    /// tool list and the calls, calls from each `mcp__…` tool_use matched to
    /// its tool_result. Servers the agent provides itself (`skills`,
    /// `plugins`, `cowork`, `workspace`) are not MCP-config servers and are
    /// left out.
    pub fn from_pairs(events: &[Value]) -> Tape {
        let mut tape = Tape::default();
        let mut pending: BTreeMap<String, (String, String, Value)> = BTreeMap::new();
        for v in events {
            match Line::of(v) {
                Line::System {
                    subtype: "init",
                    body,
                } => {
                    for name in body
                        .get("tools")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                    {
                        if let Some((server, tool)) = split_tool_name(name) {
                            tape.server(server).add_tool(tool);
                        }
                    }
                }
                Line::Assistant(m) => {
                    for b in m.blocks() {
                        if let Block::ToolUse {
                            id: Some(id),
                            name,
                            input,
                        } = b
                            && let Some((server, tool)) = split_tool_name(name)
                        {
                            tape.server(server).add_tool(tool);
                            let args = input.cloned().unwrap_or(Value::Object(Default::default()));
                            pending.insert(id.to_owned(), (server.into(), tool.into(), args));
                        }
                    }
                }
                Line::User(m) => {
                    for b in m.blocks() {
                        if let Block::ToolResult {
                            tool_use_id: Some(id),
                            content,
                            is_error,
                        } = b
                            && let Some((server, tool, arguments)) = pending.remove(id)
                        {
                            tape.server(&server).calls.push(Call {
                                tool,
                                arguments,
                                content: content_blocks(content),
                                is_error,
                                result: None,
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        tape.servers
            .retain(|name, _| !AGENT_SERVERS.contains(&name.as_str()));
        tape
    }

    fn server(&mut self, name: &str) -> &mut ServerTape {
        self.servers
            .entry(name.to_owned())
            .or_insert_with(|| ServerTape {
                source: PAIRS.into(),
                ..ServerTape::default()
            })
    }
}

/// How a tape built from the transcript is described.
pub const PAIRS: &str = "the recorded tool_use/tool_result pairs";

/// How a tape built from recorded traffic is described.
pub const TRAFFIC: &str = "the recorded MCP traffic";

impl Tape {
    /// The tape of a recording: each server from its recorded traffic where
    /// the cassette `doc` carries it, else from the pairs of its `events`.
    pub fn of_recording(doc: &serde_json::Map<String, Value>, events: &[Value]) -> Tape {
        let mut tape = Tape::from_pairs(events);
        // A server the recording's host declared at `initialize` was an SDK
        // server: a rerun hosts it the same way.
        for name in declared_sdk_servers(doc) {
            if let Some(server) = tape.servers.get_mut(&name) {
                server.sdk = true;
            }
        }
        for (name, server) in Traffic::from_doc(doc).unwrap_or_default().servers {
            tape.servers.insert(name, ServerTape::from_traffic(&server));
        }
        tape
    }
}

/// The `sdkMcpServers` of the recording's `initialize` frame (its first
/// `controlOut` line).
fn declared_sdk_servers(doc: &serde_json::Map<String, Value>) -> Vec<String> {
    let Some(first) = crate::cassette::control_out_of(doc).and_then(|c| c.first().copied()) else {
        return Vec::new();
    };
    let frame: Value = serde_json::from_str(first).unwrap_or_default();
    frame
        .pointer("/request/sdkMcpServers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

/// SDK servers the agent host serves itself (not from an MCP config).
const AGENT_SERVERS: [&str; 4] = ["skills", "plugins", "cowork", "workspace"];

impl ServerTape {
    fn from_traffic(traffic: &ServerTraffic) -> ServerTape {
        let listed = traffic
            .requests
            .iter()
            .filter(|e| e.method == "tools/list")
            .filter_map(|e| e.result.as_ref()?.get("tools")?.as_array())
            .flatten()
            .filter_map(|t| t.get("name")?.as_str());
        let mut tape = ServerTape {
            source: TRAFFIC.into(),
            sdk: traffic.transport.as_deref() == Some(super::sdk::TRANSPORT),
            initialize: traffic.initialize.clone(),
            requests: traffic.requests.clone(),
            calls: traffic.calls.iter().map(Call::from_exchange).collect(),
            ..ServerTape::default()
        };
        for tool in listed {
            tape.add_tool(tool);
        }
        tape
    }

    /// The recorded answer to a request other than `tools/call`: the one
    /// with the same method and canonical params, else the first of the
    /// method (a listing's cursor-free params may differ in spelling).
    pub fn request(&self, method: &str, params: &Value) -> Option<&Exchange> {
        let key = canonical(&super::traffic::without_meta(params));
        let same = |e: &&Exchange| e.method == method;
        self.requests
            .iter()
            .filter(same)
            .find(|e| canonical(&e.params) == key)
            .or_else(|| self.requests.iter().find(same))
    }

    fn add_tool(&mut self, tool: &str) {
        if !self.tools.iter().any(|t| t == tool) {
            self.tools.push(tool.to_owned());
        }
    }
}

impl Call {
    fn from_exchange(e: &Exchange) -> Call {
        let result = e.result.clone().unwrap_or_default();
        let error_text = e.error.as_ref().map(|err| {
            let message = err.get("message").and_then(Value::as_str);
            serde_json::json!({"type": "text", "text": message.unwrap_or("MCP error")})
        });
        Call {
            tool: e.params["name"].as_str().unwrap_or_default().to_owned(),
            arguments: e
                .params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({})),
            content: match error_text {
                Some(t) => vec![t],
                None => content_blocks(result.get("content")),
            },
            is_error: e.error.is_some() || result["isError"] == true,
            result: e.result.clone(),
        }
    }
}

/// A recorded tool_result's content as MCP content blocks.
fn content_blocks(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// Serves a server's recorded calls: each `(tool, canonical arguments)` key
/// answers its recorded calls in order, then repeats the last one.
#[derive(Debug)]
pub struct Player {
    calls: Vec<Call>,
    used: Vec<bool>,
}

/// A call the recording does not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Miss {
    pub server: String,
    pub tool: String,
    pub arguments: Value,
    /// The closest recorded call (`tool {args}`), if any.
    pub closest: Option<String>,
}

impl Player {
    pub fn new(server: &ServerTape) -> Player {
        Player {
            used: vec![false; server.calls.len()],
            calls: server.calls.clone(),
        }
    }

    /// The recorded answer to `tool(arguments)`, or the closest recorded call.
    pub fn answer(&mut self, tool: &str, arguments: &Value) -> Result<&Call, Option<String>> {
        let key = canonical(arguments);
        let matching: Vec<usize> = (0..self.calls.len())
            .filter(|&i| self.calls[i].tool == tool && canonical(&self.calls[i].arguments) == key)
            .collect();
        if let Some(&i) = matching
            .iter()
            .find(|&&i| !self.used[i])
            .or(matching.last())
        {
            self.used[i] = true;
            return Ok(&self.calls[i]);
        }
        let wanted = format!("{tool} {key}");
        Err(self
            .calls
            .iter()
            .map(|c| format!("{} {}", c.tool, canonical(&c.arguments)))
            .min_by_key(|c| strsim::levenshtein(c, &wanted)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events() -> Vec<Value> {
        vec![
            json!({"type":"system","subtype":"init","tools":["Bash","mcp__prices__lookup_price","mcp__skills__x"],"mcp_servers":[]}),
            json!({"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"mcp__prices__lookup_price","input":{"sku":"A","n":1}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"12.50"}]}}),
            json!({"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"mcp__prices__lookup_price","input":{"n":1,"sku":"A"}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"13.00"}],"is_error":false}]}}),
        ]
    }

    #[test]
    fn pairs_become_a_tape_without_agent_servers() {
        let tape = Tape::from_pairs(&events());
        assert_eq!(tape.servers.keys().collect::<Vec<_>>(), ["prices"]);
        let s = &tape.servers["prices"];
        assert_eq!(s.tools, ["lookup_price"]);
        assert_eq!(s.calls.len(), 2);
        assert_eq!(s.calls[0].content, [json!({"type":"text","text":"12.50"})]);
    }

    #[test]
    fn a_server_the_recorded_initialize_declared_is_hosted_as_sdk() {
        let init = json!({"type": "control_request", "request_id": "init-1", "request":
            {"subtype": "initialize", "hooks": {}, "sdkMcpServers": ["prices"]}});
        let mut doc = serde_json::Map::new();
        doc.insert("controlOut".into(), json!([init.to_string()]));
        let tape = Tape::of_recording(&doc, &events());
        assert!(tape.servers["prices"].sdk);
        assert!(!Tape::from_pairs(&events()).servers["prices"].sdk);
    }

    #[test]
    fn identical_calls_answer_in_recorded_order_then_repeat_the_last() {
        let tape = Tape::from_pairs(&events());
        let mut p = Player::new(&tape.servers["prices"]);
        let text = |c: &Call| c.content[0]["text"].clone();
        let args = json!({"sku":"A","n":1});
        assert_eq!(text(p.answer("lookup_price", &args).unwrap()), "12.50");
        assert_eq!(text(p.answer("lookup_price", &args).unwrap()), "13.00");
        assert_eq!(text(p.answer("lookup_price", &args).unwrap()), "13.00");
    }

    #[test]
    fn an_unrecorded_call_names_the_closest_recorded_one() {
        let tape = Tape::from_pairs(&events());
        let mut p = Player::new(&tape.servers["prices"]);
        let miss = p
            .answer("lookup_price", &json!({"sku":"B","n":1}))
            .unwrap_err();
        assert_eq!(miss.as_deref(), Some(r#"lookup_price {"n":1,"sku":"A"}"#));
    }
}
