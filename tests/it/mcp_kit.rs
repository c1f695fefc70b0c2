//! The MCP suites' shared setup: the bundled price-check example with its
//! `prices` server declared another way (an SDK server, an HTTP one), recorded
//! with the real Claude Code CLI, and the divergences a rerun reports.

use serde_json::Value;

use crate::rerun::scratch;
use crate::support::{CassetteDoc, Fixture, RunExt, claude_bin, reel};

/// A scratch copy of the examples where `price-<variant>` is price-check with
/// the MCP config `config` (written to `skills/price-check/mcp/<variant>.json`):
/// its session, scenario and model script, committed.
pub(crate) fn price_check_variant(variant: &str, config: &Value) -> Fixture {
    let fx = scratch();
    fx.write(
        &format!("skills/price-check/mcp/{variant}.json"),
        config.to_string(),
    );
    let session = fx.read("sessions/price-check.yaml");
    fx.write(
        &format!("sessions/price-{variant}.yaml"),
        session.replace("mcp/mcp.json", &format!("mcp/{variant}.json")),
    );
    let scenario = fx.read("scenarios/price-check.yaml");
    fx.write(
        &format!("scenarios/price-{variant}.yaml"),
        scenario.replace("price-check.yaml", &format!("price-{variant}.yaml")),
    );
    let script = fx.read("scenarios/price-check.model.yaml");
    fx.write(&format!("scenarios/price-{variant}.model.yaml"), &script);
    fx.commit(".", &format!("the prices server as `{variant}`"));
    fx
}

/// Where [`record`] writes the variant's cassette.
pub(crate) fn cassette_of(variant: &str) -> String {
    format!("cassettes/price-{variant}.cassette.json")
}

/// `reel record` of the variant's scenario (must succeed), committed.
pub(crate) fn record(fx: &Fixture, variant: &str) -> CassetteDoc {
    let out = cassette_of(variant);
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["record", &format!("scenarios/price-{variant}.yaml")])
        .args(["--out", &out])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    fx.commit(".", "recorded");
    CassetteDoc::from_file(&fx.root().join(out))
}

pub(crate) fn edit_and_commit(fx: &Fixture, rel: &str, f: impl FnOnce(&str) -> String) {
    fx.edit(rel, f);
    fx.commit(".", &format!("edit {rel}"));
}

/// A rerun envelope's divergences as (tool, kind).
pub(crate) fn kinds(env: &Value) -> Vec<(String, String)> {
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

/// A rerun envelope's notes, as one string.
pub(crate) fn notes(env: &Value) -> String {
    env["results"][0]["rerun"]["notes"].to_string()
}
