//! `reel gc`'s text report and JSON envelope (`schema/gc.json`).

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
