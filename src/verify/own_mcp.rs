//! The session's own MCP servers (reel's departure from cowork-harness): a
//! server the session itself declares is part of the scenario under test,
//! not inventory of the host the recording ran on, and a money figure its
//! recorded tool results carry is that server's data, not the machine's.
//!
//! A server counts as the session's own when the MCP config the cassette's
//! session names declares it (narrowed to `mcp.enabled`, as the agent got
//! it), or when the recording's `reelMcp` traffic carries it (reel records
//! traffic only for the servers it handed the agent from that config). The
//! init event's `mcp_servers` and `mcp__NAME__*` tools are where such a name
//! is found, never what declares it: a server the host's own configuration
//! added is still host inventory.
//!
//! Of the text a server returned, only money figures are waived: an email,
//! a domain or a path a live server returns may be a real person's or the
//! host's, and a secret or personal number is never waived.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::detect::Class;
use super::scan::{Finding, plain_text_findings};
use crate::cassette::Cassette;
use crate::mcp::Traffic;

/// Why a finding belongs to one of the session's own MCP servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnMcp {
    /// The server's name.
    pub server: String,
    /// `name`: the finding is the server's name; `result`: the text is in
    /// what the server returned.
    pub role: OwnMcpRole,
    /// What declares the server: its MCP config file (relative to the
    /// session's directory) or `reelMcp` (the recorded traffic).
    pub declared_by: String,
}

/// What of the server a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OwnMcpRole {
    Name,
    Result,
}

/// Where the recorded traffic is named as a declaration.
const TRAFFIC: &str = "reelMcp";

/// Marks each host-inventory finding that names one of the session's own
/// MCP servers, and each money figure one of them returned
/// ([`Finding::own_mcp`]). A session that cannot be resolved declares
/// nothing; the traffic still does.
pub fn mark(findings: &mut [Finding], cassette: &Cassette, session: Option<&Path>) {
    let candidate =
        |f: &Finding| f.is_real() && matches!(f.cls, Class::HostInventory | Class::Currency);
    if !findings.iter().any(candidate) {
        return;
    }
    let traffic = Traffic::from_doc(&cassette.doc);
    let declared = declared_servers(cassette, session, traffic.as_ref());
    let returned = traffic
        .as_ref()
        .map(|t| returned_figures(t, &declared))
        .unwrap_or_default();
    for f in findings.iter_mut().filter(|f| candidate(f)) {
        f.own_mcp = match f.cls {
            Class::HostInventory => declared.get(&f.sample).map(|by| OwnMcp {
                server: f.sample.clone(),
                role: OwnMcpRole::Name,
                declared_by: by.clone(),
            }),
            _ => returned.get(&(f.kind, f.sample.clone())).cloned(),
        };
    }
}

/// Every server the session declares, with what declares it: the session's
/// MCP config first, then the recorded traffic.
fn declared_servers(
    cassette: &Cassette,
    session: Option<&Path>,
    traffic: Option<&Traffic>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some((shown, names)) = session_config_servers(cassette, session) {
        for name in names {
            out.insert(name, shown.clone());
        }
    }
    for name in traffic.into_iter().flat_map(|t| t.servers.keys()) {
        out.entry(name.clone())
            .or_insert_with(|| TRAFFIC.to_owned());
    }
    out
}

/// The servers of the MCP config the cassette's session names (only the
/// `mcp.enabled` ones when it narrows them), and the config's path relative
/// to the session's directory.
fn session_config_servers(
    cassette: &Cassette,
    session: Option<&Path>,
) -> Option<(String, Vec<String>)> {
    let session_file = super::gate::resolve_session(cassette, session)
        .filter(|p| p.as_os_str() != crate::fingerprint::INLINE_SESSION)?;
    let keys = crate::scenario::session_keys::load(Some(&session_file)).ok()?;
    let config = keys.mcp_config?;
    let servers = crate::mcp::read_servers(&config).ok()?;
    let names = servers
        .keys()
        .filter(|n| keys.mcp_enabled.is_empty() || keys.mcp_enabled.contains(n))
        .cloned()
        .collect();
    let base = session_file
        .parent()
        .map(crate::paths::canonical_lenient)
        .unwrap_or_default();
    let shown = crate::fingerprint::relative_path(&base, &crate::paths::canonical_lenient(&config));
    Some((shown, names))
}

/// Every money figure a declared server answered with (its tool calls'
/// and other requests' results), keyed by detector and text.
fn returned_figures(
    traffic: &Traffic,
    declared: &BTreeMap<String, String>,
) -> BTreeMap<(&'static str, String), OwnMcp> {
    let mut out = BTreeMap::new();
    for (name, server) in &traffic.servers {
        let Some(by) = declared.get(name) else {
            continue;
        };
        let results = server
            .calls
            .iter()
            .chain(&server.requests)
            .filter_map(|x| x.result.as_ref());
        let mut texts = Vec::new();
        results.for_each(|r| strings(r, &mut texts));
        for text in texts {
            for f in plain_text_findings(text, TRAFFIC) {
                if f.cls == Class::Currency {
                    out.entry((f.kind, f.sample)).or_insert_with(|| OwnMcp {
                        server: name.clone(),
                        role: OwnMcpRole::Result,
                        declared_by: by.clone(),
                    });
                }
            }
        }
    }
    out
}

/// Every string inside a JSON value.
fn strings<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::traffic::{Exchange, ServerTraffic};
    use serde_json::json;

    fn traffic(result: Value) -> Traffic {
        let call = Exchange {
            method: "tools/call".into(),
            params: json!({"name": "lookup_price"}),
            result: Some(result),
            error: None,
        };
        let server = ServerTraffic {
            calls: vec![call],
            ..ServerTraffic::default()
        };
        Traffic {
            version: 1,
            config_digest: None,
            config_files: BTreeMap::new(),
            servers: BTreeMap::from([("prices".to_owned(), server)]),
        }
    }

    #[test]
    fn only_money_figures_a_declared_server_returned_are_collected() {
        let t = traffic(json!({"content": [{"type": "text",
            "text": "WIDGET-1: 12.50 EUR, ask jane.doe@acme-corp.com"}]}));
        let declared = BTreeMap::from([("prices".to_owned(), TRAFFIC.to_owned())]);
        let found = returned_figures(&t, &declared);
        let samples: Vec<&str> = found.keys().map(|(_, s)| s.as_str()).collect();
        assert_eq!(samples, ["12.50 EUR"]);
        assert!(returned_figures(&t, &BTreeMap::new()).is_empty());
    }
}
