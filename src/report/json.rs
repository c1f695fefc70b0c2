//! The `--output-format json` envelope: one compact line on stdout,
//! `{tool, version, command, ok, results[], error}` (schema: `schema/replay.json`).
//! `ok` is true only when there is at least one result and every verdict passes.

use serde_json::{Value, json};

use crate::replay::ReplayResult;

/// The envelope of a finished batch.
pub fn envelope(results: &[ReplayResult]) -> Value {
    let ok = !results.is_empty() && results.iter().all(|r| r.verdict.pass && r.error.is_none());
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "replay",
        "ok": ok,
        "results": results.iter().map(ReplayResult::to_json).collect::<Vec<_>>(),
        "error": null,
    })
}

/// The envelope of a run that failed before any result existed.
pub fn usage_error(message: &str, hint: Option<&str>) -> Value {
    let mut error = json!({"category": "usage", "message": message});
    if let Some(h) = hint {
        error["hint"] = json!(h);
    }
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "replay",
        "ok": false,
        "results": [],
        "error": error,
    })
}
