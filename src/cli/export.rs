//! `reel export plugin-eval SCENARIO --out PLUGIN_DIR`: a reel scenario as a
//! `claude plugin eval` case ([`crate::plugin_eval::export`]).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use super::OutputFormat;
use super::flags::OutputFormatArg;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::plugin_eval::export::{ExportReport, export};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "See `reel export plugin-eval --help` and docs/plugin-eval.md.\n\n\
    Exit codes: 0 written; 2 usage, an unreadable scenario or nothing exportable."
)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub what: ExportWhat,
}

#[derive(Debug, clap::Subcommand)]
pub enum ExportWhat {
    /// A scenario as a `claude plugin eval` case of a plugin.
    PluginEval(PluginEvalExportArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes PLUGIN_DIR/evals/<scenario stem>/: prompt.md (max_turns, \
    timeout_seconds, allowed_tools / disallowed_tools from bare allow/deny answers), one \
    graders/<n>-<key>.md per assertion with a grader equivalent (the forms `reel import \
    plugin-eval` writes: docs/plugin-eval.md), mocks/ from an imported stand-in MCP server, \
    history.jsonl + case.yaml for earlier turns, and the session's skills copied into \
    PLUGIN_DIR/skills/ when missing. Every assertion or answer rule with no equivalent is \
    listed, never guessed. Files whose bytes would not change are left alone.\n\n\
    Exit codes: 0 written (the not-exported list may be non-empty); 2 an unreadable \
    scenario, or no assertion with a grader equivalent."
)]
pub struct PluginEvalExportArgs {
    /// The scenario to export.
    #[arg(value_name = "SCENARIO")]
    pub scenario: PathBuf,
    /// The plugin directory the case is written into.
    #[arg(long, value_name = "PLUGIN_DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub format: OutputFormatArg,
}

pub fn run(args: ExportArgs) -> Result<ExitStatus> {
    let ExportWhat::PluginEval(a) = args.what;
    let report = export(&a.scenario, &a.out).map_err(|p| {
        Error::usage(format!(
            "export plugin-eval: {}: {}: {}",
            p.file, p.field, p.message
        ))
        .with_hint(p.fix)
    })?;
    let mut stdout = std::io::stdout().lock();
    if a.format == OutputFormat::Json {
        let env = json!({"tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "export plugin-eval", "ok": true, "results": report, "error": null});
        let _ = writeln!(stdout, "{env}");
    } else {
        let _ = stdout.write_all(render(&report).as_bytes());
    }
    Ok(ExitStatus::Success)
}

/// The text report: the case written, its graders, what was not exported.
pub fn render(r: &ExportReport) -> String {
    let mut s = format!(
        "{} → {} ({} written, {} unchanged)\n",
        r.scenario,
        r.case_dir,
        r.written.len(),
        r.unchanged.len()
    );
    for g in &r.graders {
        s += &format!("  ✓ grader {g}\n");
    }
    for u in &r.not_exported {
        s += &format!("  ✗ not exported: {} — {}\n", u.item, u.reason);
    }
    crate::terminal_safe::block(&s).into_owned()
}
