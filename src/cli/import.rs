//! `reel import plugin-eval PLUGIN_DIR [--out DIR]`: a plugin's
//! `claude plugin eval` cases as reel scenarios ([`crate::plugin_eval`]).

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use super::OutputFormat;
use super::flags::OutputFormatArg;
use crate::error::{Error, Result};
use crate::exit::ExitStatus;
use crate::plugin_eval::{ImportReport, import};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "See `reel import plugin-eval --help` and docs/plugin-eval.md.\n\n\
    Exit codes: 0 every case imported; 2 usage, a case refused or unreadable input."
)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub what: ImportWhat,
}

#[derive(Debug, clap::Subcommand)]
pub enum ImportWhat {
    /// A plugin's `claude plugin eval` cases, one reel scenario each.
    PluginEval(PluginEvalImportArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each case under the plugin's eval dir (evals/, or the manifest's \
    experimental.evals) becomes OUT/<case>.yaml (prompt or turns:, answers from allowed_tools, \
    limits, one assertion per grader), OUT/sessions/<case>.yaml (the plugin's skills, the \
    eval's mocks), OUT/mcp/<case>/ (the mocks' stand-in MCP server) and OUT/eval/<case>.json \
    (the `reel eval` plan: runs, the no-plugin arm). A grader with no reel assertion of the \
    same meaning is refused, naming file, field and fix (docs/plugin-eval.md has the table); \
    the case is then not written unless --drop-unmapped. Files whose bytes would not change \
    are left alone, so re-importing an unchanged suite changes nothing. Record the scenarios \
    with `reel record` (a NAME.model.yaml beside each makes it token-free).\n\n\
    Exit codes: 0 every case imported; 2 a case refused or unreadable input (the other cases \
    are still written)."
)]
pub struct PluginEvalImportArgs {
    /// The plugin directory (its evals/ holds the cases).
    #[arg(value_name = "PLUGIN_DIR")]
    pub plugin: PathBuf,
    /// Where the scenarios go (default: scenarios/NAME, NAME the plugin manifest's name).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write a case whose graders are partly refused, without those graders (each listed).
    #[arg(long)]
    pub drop_unmapped: bool,
    #[command(flatten)]
    pub format: OutputFormatArg,
}

pub fn run(args: ImportArgs) -> Result<ExitStatus> {
    let ImportWhat::PluginEval(a) = args.what;
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("scenarios").join(crate::plugin_eval::plugin_name(&a.plugin))
    });
    let report = import(&a.plugin, &out, a.drop_unmapped).map_err(|p| {
        Error::usage(format!(
            "import plugin-eval: {}: {}: {}",
            p.file, p.field, p.message
        ))
        .with_hint(p.fix)
    })?;
    let ok = report.ok();
    let mut stdout = std::io::stdout().lock();
    if a.format == OutputFormat::Json {
        let env = json!({"tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "import plugin-eval", "ok": ok, "results": report, "error": null});
        let _ = writeln!(stdout, "{env}");
    } else {
        let _ = stdout.write_all(render(&report).as_bytes());
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Usage
    })
}

/// The text report: per case its scenario, each grader's assertion or refusal.
pub fn render(r: &ImportReport) -> String {
    let mut s = String::new();
    for c in &r.cases {
        let at = c
            .scenario
            .as_deref()
            .map_or("not written".to_owned(), |p| format!("→ {p}"));
        let changed = if c.scenario.is_some() {
            format!(
                " ({} written, {} unchanged)",
                c.written.len(),
                c.unchanged.len()
            )
        } else {
            String::new()
        };
        s += &format!("case {} {at}{changed}\n", c.case);
        for g in &c.graders {
            let what = match (&g.assertion, &g.note) {
                (Some(a), Some(n)) => format!("{a} — {n}"),
                (Some(a), None) => a.to_string(),
                (None, n) => format!("refused: {}", n.as_deref().unwrap_or("")),
            };
            s += &format!("  {} {} ({}): {what}\n", mark(g.status), g.name, g.kind);
        }
        for p in &c.problems {
            s += &format!("  error: {p}\n");
        }
        for n in &c.notes {
            s += &format!("  note: {n}\n");
        }
    }
    let bad = r.cases.iter().filter(|c| !c.problems.is_empty()).count();
    s += &format!(
        "{} case(s), {} imported, {bad} refused\n",
        r.cases.len(),
        r.cases.len() - bad
    );
    crate::terminal_safe::block(&s).into_owned()
}

fn mark(status: &str) -> &'static str {
    if status == "mapped" { "✓" } else { "✗" }
}
