//! `reel gc`'s text report and JSON envelope (`schema/gc.json`), and those
//! of `reel gc --snapshots` (`schema/gc-snapshots.json`).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::runs::GcReport;

/// A line per run removed (or that would be), per error and per thing left
/// alone, then the tally.
pub fn text(r: &GcReport) -> String {
    let mut s = String::new();
    let verb = if r.dry_run { "would remove" } else { "removed" };
    for run in r.runs.iter().filter(|e| e.removed) {
        let _ = writeln!(
            s,
            "{verb} {} ({}, {} old)",
            run.path.display(),
            size(run.bytes),
            age(run.age_seconds)
        );
    }
    for e in &r.errors {
        let _ = writeln!(
            s,
            "error: could not remove {}: {}",
            e.path.display(),
            e.reason
        );
    }
    for k in &r.skipped {
        let _ = writeln!(s, "left alone: {} ({})", k.path.display(), k.reason);
    }
    let gone: Vec<_> = r.runs.iter().filter(|e| e.removed).collect();
    let freed: u64 = gone.iter().map(|e| e.bytes).sum();
    let _ = writeln!(
        s,
        "{verb} {} kept run(s), {}; {} kept; runs root {}",
        gone.len(),
        size(freed),
        r.runs.len() - gone.len(),
        r.root.display()
    );
    s
}

/// The `{tool, version, command, ok, results, error}` envelope.
pub fn json(r: &GcReport) -> Value {
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "gc",
        "ok": r.errors.is_empty(),
        "root": r.root,
        "dryRun": r.dry_run,
        "results": r.runs,
        "skipped": r.skipped,
        "errors": r.errors,
        "error": null,
    })
}

/// `reel gc --snapshots`: a line per blob removed (or that would be), per
/// error and per file left alone, then the tally.
pub fn snapshots_text(r: &crate::snapshot::gc::GcReport) -> String {
    let mut s = String::new();
    let verb = if r.dry_run { "would remove" } else { "removed" };
    for b in r.blobs.iter().filter(|b| b.removed) {
        let _ = writeln!(
            s,
            "{verb} {} ({}, no cassette names it)",
            b.path.display(),
            size(b.bytes)
        );
    }
    for (path, why) in &r.errors {
        let _ = writeln!(s, "error: could not remove {}: {why}", path.display());
    }
    for path in &r.left_alone {
        let _ = writeln!(s, "left alone: {} (not a snapshot blob)", path.display());
    }
    let gone: Vec<_> = r.blobs.iter().filter(|b| b.removed).collect();
    let freed: u64 = gone.iter().map(|b| b.bytes).sum();
    let stores: Vec<String> = r.stores.iter().map(|p| p.display().to_string()).collect();
    let _ = writeln!(
        s,
        "{verb} {} snapshot blob(s), {}; {} referenced by {} cassette(s) kept; store(s) {}",
        gone.len(),
        size(freed),
        r.blobs.len() - gone.len(),
        r.cassettes,
        stores.join(", ")
    );
    s
}

/// `reel gc --snapshots`'s envelope (`schema/gc-snapshots.json`).
pub fn snapshots_json(r: &crate::snapshot::gc::GcReport) -> Value {
    let blobs: Vec<Value> = r
        .blobs
        .iter()
        .map(|b| {
            json!({"ref": b.reference.to_string(), "path": b.path, "bytes": b.bytes,
                   "referenced": b.referenced, "removed": b.removed})
        })
        .collect();
    let errors: Vec<Value> = r
        .errors
        .iter()
        .map(|(path, reason)| json!({"path": path, "reason": reason}))
        .collect();
    json!({
        "tool": "reel",
        "version": env!("CARGO_PKG_VERSION"),
        "command": "gc",
        "ok": r.errors.is_empty(),
        "snapshots": true,
        "dryRun": r.dry_run,
        "cassettes": r.cassettes,
        "stores": r.stores,
        "results": blobs,
        "leftAlone": r.left_alone,
        "errors": errors,
        "error": null,
    })
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

fn age(secs: u64) -> String {
    match secs {
        s if s >= 86_400 => format!("{}d", s / 86_400),
        s if s >= 3600 => format!("{}h", s / 3600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}
