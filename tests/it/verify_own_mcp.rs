//! `verify-cassettes` and the session's own MCP servers (README departure):
//! a server name the session's MCP config (or the recorded `reelMcp`
//! traffic) declares is not host inventory, and a money figure such a server
//! returned is its data; both are notes. A server the session does not
//! declare, a figure no server returned, and an email a server returned
//! still fail.

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture};
use crate::verify_published::{findings, verify};

const CONFIG: &str = "skills/price-check/mcp/mcp.json";

/// A fixture laid out as the bundled project: the price-check cassette in
/// `cassettes/`, its session in `sessions/` naming the MCP config `config`
/// (none: no `mcp:` key) with `enabled` servers, and `edit` applied to the
/// cassette.
fn project(
    config: Option<&str>,
    enabled: &[&str],
    edit: impl FnOnce(CassetteDoc) -> CassetteDoc,
) -> (Fixture, std::path::PathBuf) {
    let fx = Fixture::new();
    let mut session = "permission_mode: default\n".to_owned();
    if let Some(config) = config {
        fx.write(CONFIG, config);
        session.push_str("mcp:\n  config: ../skills/price-check/mcp/mcp.json\n");
        if !enabled.is_empty() {
            session.push_str(&format!("  enabled: [{}]\n", enabled.join(", ")));
        }
    }
    fx.write("sessions/price-check.yaml", &session);
    let doc = CassetteDoc::from_file(&support::repo().join("cassettes/price-check.cassette.json"));
    let path = fx.path("cassettes/price-check.cassette.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    edit(doc).write(&path);
    (fx, path)
}

const PRICES: &str =
    r#"{"mcpServers": {"prices": {"command": "python3", "args": ["./prices_server.py"]}}}"#;

fn by<'f>(found: &'f [Value], cls: &str, sample: &str) -> &'f Value {
    found
        .iter()
        .find(|f| f["cls"] == cls && f["sample"].as_str().unwrap().contains(sample))
        .unwrap_or_else(|| panic!("no {cls} {sample} in {found:?}"))
}

#[test]
fn a_declared_server_and_the_figure_it_returned_are_notes() {
    let (_fx, path) = project(Some(PRICES), &[], |d| d);
    let out = verify(&path, true);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    assert_eq!(
        by(&found, "host-inventory", "prices")["ownMcp"],
        json!({"server": "prices", "role": "name",
               "declaredBy": "../skills/price-check/mcp/mcp.json"})
    );
    assert_eq!(
        by(&found, "currency", "12.50 EUR")["ownMcp"],
        json!({"server": "prices", "role": "result",
               "declaredBy": "../skills/price-check/mcp/mcp.json"})
    );
    let text = verify(&path, false);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let notes: Vec<&str> = text
        .stderr
        .lines()
        .filter(|l| l.contains("note:"))
        .map(str::trim)
        .collect();
    insta::assert_snapshot!("verify_own_mcp_notes", notes.join("\n"));
}

#[test]
fn the_recorded_traffic_declares_its_servers_without_a_session() {
    let (fx, path) = project(None, &[], |d| d);
    std::fs::remove_file(fx.path("sessions/price-check.yaml")).unwrap();
    let out = verify(&path, true);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    assert_eq!(
        by(&found, "host-inventory", "prices")["ownMcp"]["declaredBy"],
        "reelMcp"
    );
    assert_eq!(by(&found, "currency", "12.50")["ownMcp"]["role"], "result");
}

#[test]
fn an_undeclared_server_and_its_figure_still_fail() {
    // No traffic, and a session without an MCP config: `prices` is only in
    // the init event, as a server of the host's own configuration would be.
    let (_fx, path) = project(None, &[], |d| d.remove("reelMcp"));
    let out = verify(&path, true);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    for f in [
        by(&found, "host-inventory", "prices"),
        by(&found, "currency", "12.50"),
    ] {
        assert!(f.get("ownMcp").is_none(), "{f}");
    }
}

#[test]
fn mcp_enabled_narrows_the_servers_a_config_declares() {
    let config =
        r#"{"mcpServers": {"prices": {"command": "python3"}, "stock": {"command": "python3"}}}"#;
    let (_fx, path) = project(Some(config), &["stock"], |d| d.remove("reelMcp"));
    let out = verify(&path, true);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    assert!(
        by(&found, "host-inventory", "prices")
            .get("ownMcp")
            .is_none()
    );
}

#[test]
fn only_money_figures_the_server_returned_are_waived() {
    // The server also returned an email, and the run names a figure the
    // server never returned: both still fail.
    let (_fx, path) = project(Some(PRICES), &[], |d| {
        d.set(
            "reelMcp.servers.prices.calls.0.result.content.0.text",
            json!("WIDGET-1: 12.50 EUR, ask jane.doe@acme-corp.com"),
        )
        .edit_lines("events", |line| {
            if line["type"] == "assistant" && line["message"]["content"][0]["type"] == "text" {
                line["reel_note"] = json!("jane.doe@acme-corp.com says 99.00 USD");
            }
        })
    });
    let out = verify(&path, true);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    assert_eq!(by(&found, "currency", "12.50")["ownMcp"]["role"], "result");
    assert!(by(&found, "currency", "99.00").get("ownMcp").is_none());
    assert!(by(&found, "email", "@").get("ownMcp").is_none());
}
