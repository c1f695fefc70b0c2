//! The `--output-format json` envelope: one compact line on stdout,
//! `{tool, version, command, ok, results[], error}` (schema: `schema/replay.json`).
//! `ok` is true only when there is at least one result and every verdict passes.

use std::io::Write;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Value, json};

use crate::replay::{ReplayResult, RunResultMember};

/// The envelope of a finished batch.
pub fn envelope(results: &[ReplayResult]) -> Value {
    serde_json::to_value(Envelope(results)).unwrap_or(Value::Null)
}

/// Writes the envelope of a finished batch as one line, streamed: the run
/// results are written straight from each [`ReplayResult`], never copied
/// into an intermediate `Value` or `String` (on a large cassette each would be
/// the size of the recording), their bulk lists made into text on the pool
/// ([`crate::replay::run_result::BulkField::write_json`]). The same text as
/// serialising [`envelope`]'s value.
pub fn write_envelope(results: &[ReplayResult], out: impl Write) -> std::io::Result<()> {
    // A large run's report is tens of megabytes: written a megabyte per
    // call, not 8 KiB.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    let ok = all_pass(results);
    write!(
        out,
        r#"{{"tool":"reel","version":{},"command":"replay","ok":{ok},"results":["#,
        Value::from(env!("CARGO_PKG_VERSION"))
    )?;
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{")?;
        let mut first = true;
        r.run_result_members(|key, member| {
            if !std::mem::take(&mut first) {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut out, key)?;
            out.write_all(b":")?;
            match member {
                RunResultMember::Value(v) => serde_json::to_writer(&mut out, v)?,
                RunResultMember::Bulk(bulk) => bulk.write_json(&mut out)?,
            }
            Ok::<(), std::io::Error>(())
        })?;
        out.write_all(b"}")?;
    }
    out.write_all(b"],\"error\":null}\n")?;
    out.flush()
}

/// `ok`: at least one result, and every verdict passes.
fn all_pass(results: &[ReplayResult]) -> bool {
    !results.is_empty() && results.iter().all(|r| r.verdict.pass && r.error.is_none())
}

/// `{tool, version, command, ok, results[], error}`, in that key order.
struct Envelope<'a>(&'a [ReplayResult]);

impl Serialize for Envelope<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Results<'a>(&'a [ReplayResult]);
        impl Serialize for Results<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(ReplayResult::run_result_json))
            }
        }
        let results = self.0;
        let mut map = s.serialize_map(Some(6))?;
        map.serialize_entry("tool", "reel")?;
        map.serialize_entry("version", env!("CARGO_PKG_VERSION"))?;
        map.serialize_entry("command", "replay")?;
        map.serialize_entry("ok", &all_pass(results))?;
        map.serialize_entry("results", &Results(results))?;
        map.serialize_entry("error", &Value::Null)?;
        map.end()
    }
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
