//! `reel lint SCENARIO|DIR`: arguments, the report on stderr (or the JSON
//! envelope on stdout) and the exit code; the checks are `crate::lint`.

use std::io::Write;
use std::path::{Path, PathBuf};

use owo_colors::OwoColorize;

use crate::cli::OutputFormat;
use crate::cli::flags::{OutputFormatArg, StrictArg};
use crate::error::Result;
use crate::exit::ExitStatus;
use crate::lint::{self, Finding, Severity};

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (findings on stderr) or `json` (an envelope on \
        stdout)")),
    mut_arg("strict", |a| a.help("Warnings fail too (exit 1)")),
    after_help = "Each finding is `FILE:LINE: warning|error[CODE name]: message` with a `hint:` \
        line. Codes: \
                  L000 does-not-load, L001 live-only-key, L002 no-pre-run-baseline, L003 \
                      slash-command-not-first, \
                  L004 answer-never-matches, L005 choose-names-no-option, L006 allow-if-syntax, \
                  L007 vacuous-assertion, L008 only-result-asserted, L009 \
                      contradictory-assertions, \
                  L010 path-not-found, L011 needs-control-out, L012 duplicate-key, L013 \
                      record-refuses, L014 prompt-and-turns, L015 empty-turn, L016 \
                      session-key-in-turn.\n\n\
                  Exit codes: 0 clean (warnings allowed unless --strict); 1 an error, or a warning \
                      under --strict; \
                  2 usage or an unreadable file (not found, not YAML)."
)]
pub struct LintArgs {
    /// A scenario YAML, or a directory whose scenarios (`*.yaml` with a top-level `prompt:`,
    /// non-recursive) are linted.
    #[arg(required = true, value_name = "SCENARIO|DIR")]
    pub targets: Vec<PathBuf>,
    #[command(flatten)]
    pub strict: StrictArg,
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

/// One finding as text: `file:line: severity[CODE name]: message` + hint.
pub fn render_finding(f: &Finding, color: bool) -> String {
    let loc = match f.line {
        Some(l) => format!("{}:{l}", f.file.display()),
        None => f.file.display().to_string(),
    };
    let sev = match f.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let head = format!("{sev}[{} {}]", f.code, f.name);
    let head = match (color, f.severity) {
        (false, _) => head,
        (true, Severity::Error) => head.red().bold().to_string(),
        (true, Severity::Warning) => head.yellow().bold().to_string(),
    };
    let mut out = format!("{loc}: {head}: {}\n", f.message);
    if let Some(h) = &f.hint {
        out.push_str(&format!("    hint: {h}\n"));
    }
    out
}

/// Lints `scenario` for `reel record`: its findings as text lines, never a
/// failure (an unreadable scenario is left to the loader's own error).
pub fn findings_for_record(scenario: &Path) -> Vec<String> {
    // Record reports its own refusals (L013) as its error, not as a lint line.
    let refusal = lint::Code::RecordRefuses.id();
    lint::lint_file(scenario)
        .map(|fs| {
            fs.iter()
                .filter(|f| f.code != refusal)
                .map(|f| render_finding(f, false))
                .collect()
        })
        .unwrap_or_default()
}

pub fn run(args: LintArgs) -> Result<ExitStatus> {
    if let Some(c) = args
        .targets
        .iter()
        .find(|t| crate::discover::is_cassette(t))
    {
        return Err(crate::Error::usage(
            crate::discover::cassette_given_for_scenario("lint", c),
        ));
    }
    let mut stderr = anstream::stderr().lock();
    let (files, mut code) = scenarios_of(&args.targets, &mut stderr);
    let mut tally = Tally::default();
    let mut results = Vec::new();
    for file in &files {
        match lint::lint_file(file) {
            Ok(findings) => {
                for f in &findings {
                    tally.count(f.severity);
                    if args.output_format == OutputFormat::Text {
                        let _ = stderr.write_all(render_finding(f, true).as_bytes());
                    }
                }
                results.push(serde_json::json!({"file": file, "findings": findings}));
            }
            Err(e) => {
                let _ = writeln!(stderr, "lint: {e}");
                code = code.worst(ExitStatus::Usage);
                tally.unreadable += 1;
                results.push(serde_json::json!({"file": file, "error": e.to_string()}));
            }
        }
    }
    if tally.errors > 0 || (args.strict.on && tally.warnings > 0) {
        code = code.worst(ExitStatus::Failure);
    }
    if args.output_format == OutputFormat::Json {
        let env = serde_json::json!({
            "tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "lint",
            "ok": code == ExitStatus::Success, "strict": args.strict.on, "results": results,
            "error": null,
        });
        let _ = writeln!(std::io::stdout().lock(), "{env}");
    } else {
        let _ = writeln!(stderr, "{}", tally.summary(files.len(), args.strict.on));
    }
    Ok(code)
}

/// The scenarios the targets name; a target naming none, or unreadable, is
/// reported and makes the run a usage error (exit 2).
fn scenarios_of(targets: &[PathBuf], stderr: &mut impl Write) -> (Vec<PathBuf>, ExitStatus) {
    let mut files = Vec::new();
    let mut code = ExitStatus::Success;
    for t in targets {
        match lint::collect_targets(t) {
            Ok(f) if f.is_empty() => {
                let _ = writeln!(
                    stderr,
                    "lint: {}: no scenario (a *.yaml with a top-level `prompt:`)",
                    t.display()
                );
                code = code.worst(ExitStatus::Usage);
            }
            Ok(f) => files.extend(f),
            Err(e) => {
                let _ = writeln!(stderr, "lint: {e}");
                code = code.worst(ExitStatus::Usage);
            }
        }
    }
    (files, code)
}

/// Findings counted over every linted scenario.
#[derive(Default)]
struct Tally {
    errors: usize,
    warnings: usize,
    unreadable: usize,
}

impl Tally {
    fn count(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.errors += 1,
            Severity::Warning => self.warnings += 1,
        }
    }

    /// The closing line: `lint: 3 scenarios checked, 1 error, 0 warnings`.
    fn summary(&self, scenarios: usize, strict: bool) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!(
            "lint: {} checked, {}, {}{}{}",
            plural(scenarios, "scenario"),
            plural(self.errors, "error"),
            plural(self.warnings, "warning"),
            if self.unreadable > 0 {
                format!(", {} unreadable (not linted)", self.unreadable)
            } else {
                String::new()
            },
            if strict && self.warnings > 0 {
                " (--strict: warnings fail)"
            } else {
                ""
            }
        )
    }
}
