//! `reel assertions [KEY]`: the assertion catalog (`crate::assert::catalog`,
//! its one definition) as data on stdout — every key with its parameter
//! shape, when replay evaluates it and what it checks; one key in detail.

use std::io::Write;

use crate::assert::catalog::{self, KeyEntry};
use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (a listing on stdout) or `json` (an envelope on \
        stdout, schema/assertions.json)")),
    after_help = "Buckets: `always` (every replay), `needs-control-out` (replay evaluates it when \
        the cassette \
                  has controlOut), `needs-manifest` (when it has an artifacts manifest; \
                      no_unexpected_files and \
                  input_unmodified also need the pre-run baseline), `live-only` (a live run only; \
                      replay skips \
                  it), `synthesized` (produced by replay, never authored).\n\n\
                  Exit codes: 0 listed; 2 unknown key."
)]
pub struct AssertionsArgs {
    /// Show only this key, in detail.
    #[arg(value_name = "KEY")]
    pub key: Option<String>,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

/// What replay does with a key, in words.
fn replay_words(e: &KeyEntry) -> String {
    match e.bucket {
        "always" => "evaluated on every replay".into(),
        "needs-control-out" => {
            "evaluated when the cassette has controlOut (skipped otherwise)".into()
        }
        "needs-manifest" => match e.needs_pre_run_baseline {
            Some(field) => format!(
                "evaluated when the cassette has an artifacts manifest and the pre-run baseline \
                    ({field}); skipped otherwise"
            ),
            None => {
                "evaluated when the cassette has a non-empty artifacts manifest (skipped otherwise)"
                    .into()
            }
        },
        "live-only" => {
            "never evaluated on replay (a live run only); replay skips it with a warning".into()
        }
        _ => "produced by replay itself; not an authored assertion".into(),
    }
}

/// Whether the key can go in a turn's `assert:` (docs/multi-turn.md).
fn per_turn_words(e: &KeyEntry) -> String {
    match e.session_only {
        None => "yes: in a turn's `assert:` it judges that turn's events only".into(),
        Some(why) => format!("no, top-level `assert:` only: {why}"),
    }
}

fn example_yaml(e: &KeyEntry) -> String {
    let mut item = serde_json::Map::new();
    item.insert(e.key.to_string(), e.example.clone());
    let doc = serde_json::json!({ "assert": [item] });
    serde_yaml_ng::to_string(&crate::scenario::yaml_value(&doc)).unwrap_or_default()
}

fn detail(e: &KeyEntry) -> String {
    let mut out = format!("{}\n", e.key);
    out.push_str(&format!("  checks:     {}\n", e.description));
    out.push_str(&format!("  parameter:  {}\n", e.parameter));
    out.push_str(&format!("  bucket:     {}\n", e.bucket));
    out.push_str(&format!("  replay:     {}\n", replay_words(e)));
    if e.verdict_modifier {
        out.push_str("  note:       a verdict modifier: always passes, relaxes the verdict\n");
    }
    out.push_str(&format!("  per turn:   {}\n", per_turn_words(e)));
    out.push_str("  example:\n");
    for l in example_yaml(e).lines() {
        out.push_str(&format!("    {l}\n"));
    }
    out
}

fn listing(entries: &[KeyEntry]) -> String {
    let groups = [
        ("always", "Evaluated on every replay"),
        (
            "needs-control-out",
            "Evaluated when the cassette has controlOut",
        ),
        (
            "needs-manifest",
            "Evaluated when the cassette has an artifacts manifest",
        ),
        ("live-only", "Live-only: replay never evaluates these"),
        ("synthesized", "Produced by replay (never authored)"),
    ];
    let mut out = String::new();
    for (bucket, title) in groups {
        let keys: Vec<&KeyEntry> = entries.iter().filter(|e| e.bucket == bucket).collect();
        if keys.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{title} ({bucket}, {}):\n", keys.len()));
        for e in keys {
            out.push_str(&format!("  {}: {}\n", e.key, e.parameter));
            let mut line = e.description.to_string();
            if let Some(field) = e.needs_pre_run_baseline {
                line.push_str(&format!(" [also needs the pre-run baseline: {field}]"));
            }
            if e.session_only.is_some() {
                line.push_str(" [whole session only: not in a turn's assert:]");
            }
            out.push_str(&format!("      {line}\n"));
        }
    }
    out.push_str(&format!(
        "\n{} keys; `reel assertions KEY` for one in detail\n",
        entries.len()
    ));
    out.push_str(
        "In a multi-turn scenario (`turns:`), a turn's `assert:` takes every key not marked \
         [whole session only]\n",
    );
    out
}

pub fn run(args: AssertionsArgs) -> Result<ExitStatus> {
    let entries = match &args.key {
        None => catalog::entries(),
        Some(k) => match catalog::entry(k) {
            Some(e) => vec![e],
            None => {
                let near: Vec<&str> = catalog::names()
                    .filter(|name| name.contains(k.as_str()) || k.contains(*name))
                    .collect();
                let message = format!("assertions: unknown assertion key `{k}`");
                let hint = if near.is_empty() {
                    "run `reel assertions` for the list of keys".to_string()
                } else {
                    format!("did you mean: {}", near.join(", "))
                };
                if args.output_format == OutputFormat::Json {
                    let env = serde_json::json!({
                        "tool": "reel", "version": env!("CARGO_PKG_VERSION"),
                        "command": "assertions", "ok": false, "results": [],
                        "error": {"category": "usage", "message": message, "hint": hint},
                    });
                    let _ = writeln!(std::io::stdout().lock(), "{env}");
                    return Ok(ExitStatus::Usage);
                }
                return Err(Error::usage(message).with_hint(hint));
            }
        },
    };
    let text = match args.output_format.format {
        OutputFormat::Json => {
            let env = serde_json::json!({
                "tool": "reel", "version": env!("CARGO_PKG_VERSION"),
                "command": "assertions", "ok": true, "results": entries, "error": null,
            });
            format!("{env}\n")
        }
        OutputFormat::Text if args.key.is_some() => detail(&entries[0]),
        OutputFormat::Text => listing(&entries),
    };
    // A closed stdout (`| head`) is not an error.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitStatus::Success)
}
