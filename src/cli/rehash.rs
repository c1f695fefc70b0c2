//! `reel rehash`: arguments and the thin glue to [`crate::rehash`].

use crate::exit::ExitStatus;
use std::io::Write;
use std::path::PathBuf;

use crate::cli::OutputFormat;
use crate::error::{Error, Result};
use crate::rehash::{Action, RehashOptions, RehashSummary, collect_files, rehash_files};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Migrates v10/v11 (legacy-hash) cassettes to v12 after proving the skill tree is unchanged \
                  (legacy skillHash recomputed and equal, same file-set mode and agent scope, fileSigs aligned). \
                  v12 cassettes are skipped. Text mode prints a status line per cassette (PASS migrated, SKIP \
                  nothing to do, FAIL refused) and `N passed, N failed`; --verbose prints the original's rows. Exit 0 when nothing was refused, 1 when any cassette could not be \
                  migrated (re-record it), 2 usage."
)]
pub struct RehashArgs {
    /// Directories (their `*.cassette.json`, non-recursive) or cassette files.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Report what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Resolve the skill sources of ONE moved cassette from this session file.
    #[arg(long, value_name = "FILE")]
    pub session: Option<PathBuf>,
    /// `text` (rows on stderr) or `json` (envelope on stdout).
    #[arg(long, value_enum, default_value_t)]
    pub output_format: OutputFormat,
    /// Text mode: the original's rows (cowork-harness format) instead of a status line per cassette.
    #[arg(long)]
    pub verbose: bool,
}

const USAGE_HINT: &str = "usage: reel rehash <dir/>... [--dry-run] [--output-format text|json]  |  reel rehash <file.cassette.json> --session <session.yaml> [--dry-run]";

pub fn run(args: RehashArgs) -> Result<ExitStatus> {
    let session = match &args.session {
        Some(s) => {
            if args.paths.len() != 1 || !args.paths[0].is_file() {
                return Err(Error::usage(format!(
                    "rehash --session takes a single cassette FILE, not a directory: {}",
                    args.paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .with_hint(USAGE_HINT));
            }
            if !s.is_file() {
                return Err(Error::usage(format!(
                    "rehash --session: not a session file: {}",
                    s.display()
                )));
            }
            Some(
                std::path::absolute(s)
                    .map_err(|e| Error::usage(format!("rehash --session: {}: {e}", s.display())))?,
            )
        }
        None => None,
    };
    let mut files = vec![];
    for p in &args.paths {
        if !p.exists() {
            return Err(Error::usage(format!(
                "rehash: no such file or directory: {}",
                p.display()
            ))
            .with_hint(USAGE_HINT));
        }
        files.extend(
            collect_files(p)
                .map_err(|e| Error::usage(format!("rehash: cannot list {}: {e}", p.display())))?,
        );
    }
    let opts = RehashOptions {
        dry_run: args.dry_run,
        session,
    };
    let summary = rehash_files(&files, &opts);
    if args.output_format == OutputFormat::Json {
        let mut env = serde_json::json!({"tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "rehash", "ok": summary.ok()});
        if let (Some(obj), Ok(serde_json::Value::Object(rest))) =
            (env.as_object_mut(), serde_json::to_value(&summary))
        {
            obj.extend(rest);
            obj.insert("error".into(), serde_json::Value::Null);
        }
        let _ = writeln!(std::io::stdout().lock(), "{env}");
    } else {
        let text = if args.verbose {
            render_text(&summary)
        } else {
            render_status(&summary)
        };
        let _ = anstream::stderr().lock().write_all(text.as_bytes());
    }
    Ok(summary.status())
}

/// The default text report: a status line per cassette (PASS = migrated,
/// SKIP = nothing to do, FAIL = could not migrate), then the tally.
pub fn render_status(s: &RehashSummary) -> String {
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

const REFUSED_HINT: &str = "hint: a refused cassette cannot be proved unchanged — re-record it (`reel record`), or point a moved one at its session with `reel rehash <file> --session <session.yaml>`\n";

/// The original's text report (`--verbose`, cowork-harness wording).
pub fn render_text(s: &RehashSummary) -> String {
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
