//! Rendering of a `reel rehash` run: the status report and the original's
//! rows (stderr) and the JSON envelope (stdout, `schema/rehash.json`).
//! Nothing here decides anything; every figure comes from
//! [`crate::rehash::RehashSummary`].

use crate::rehash::{Action, RehashSummary};

/// The JSON envelope as one line.
pub fn json(summary: &RehashSummary) -> String {
    let mut env = serde_json::json!({
        "tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "rehash",
        "ok": summary.ok(),
    });
    if let (Some(obj), Ok(serde_json::Value::Object(rest))) =
        (env.as_object_mut(), serde_json::to_value(summary))
    {
        obj.extend(rest);
        obj.insert("error".into(), serde_json::Value::Null);
    }
    env.to_string()
}

/// The default text report: a status line per cassette (PASS = migrated,
/// SKIP = nothing to do, FAIL = could not migrate), then the tally.
pub fn status_text(s: &RehashSummary) -> String {
    use crate::report::{outcome, status};
    if s.results.is_empty() {
        return "0 passed, 0 failed — nothing to migrate (no cassettes in directory)\n".into();
    }
    let outcomes = outcome::from_rehash_summary(s);
    let mut out: String = outcomes
        .iter()
        .map(|o| status::render_file(o, true))
        .collect();
    if s.dry_run {
        out.push_str("note: dry-run — nothing written\n");
    }
    if s.errors > 0 {
        out.push_str(REFUSED_HINT);
    }
    // The tally closes the report.
    out.push_str(&status::render_tally(&status::Tally::of(&outcomes), true));
    out
}

const REFUSED_HINT: &str = "hint: a refused cassette cannot be proved unchanged — re-record it \
    (`reel record`), or point a moved one at its session with `reel rehash <file> --session \
    <session.yaml>`\n";

/// The original's text report (`--verbose`, cowork-harness wording).
pub fn text(s: &RehashSummary) -> String {
    let mut out = String::new();
    if s.results.is_empty() {
        out.push_str("✓ rehash: nothing to migrate — no cassettes in directory\n");
        return out;
    }
    for r in &s.results {
        let mark = match r.action {
            Action::Migrated => "✓",
            Action::Skipped => "·",
            Action::Error => "✗",
        };
        out.push_str(&format!("{mark} {}: {}\n", r.file, r.reason));
    }
    let dry = if s.dry_run {
        " (dry-run — nothing written)"
    } else {
        ""
    };
    if s.errors > 0 {
        out.push_str(&format!(
            "✗ rehash: {} migrated, {} skipped, {} could not migrate{}\n",
            s.migrated,
            s.skipped,
            s.errors,
            if s.dry_run { " (dry-run)" } else { "" }
        ));
        out.push_str(REFUSED_HINT);
    } else if s.migrated > 0 {
        out.push_str(&format!(
            "✓ rehash: {} cassette(s) migrated{dry}\n",
            s.migrated
        ));
    } else {
        out.push_str("✓ rehash: nothing to migrate\n");
    }
    out
}
