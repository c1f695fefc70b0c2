//! `reel doctor`: prints each check of `crate::doctor` with its fix and
//! exits 0 when recording can work.

use std::io::Write;

use owo_colors::OwoColorize;

use crate::cli::OutputFormat;
use crate::cli::flags::OutputFormatArg;
use crate::doctor::{self, Check};
use crate::error::Result;
use crate::exit::ExitStatus;

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("output_format", |a| a.help("`text` (a line per check on stderr) or `json` (an \
        envelope on stdout)")),
    after_help = "Checks, in order: the agent binary (REEL_CLAUDE_BIN, else `claude` on PATH, else \
                  .tools/claude/node_modules/.bin/claude) and its --version; a handshake (a \
                      one-turn scripted model \
                  on 127.0.0.1 and one `-p` prompt in the offline environment); git on PATH \
                      (advisory).\n\n\
                  Exit codes: 0 recording can work (advisory checks may fail); 1 a required check \
                      failed; 2 usage."
)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub output_format: OutputFormatArg,
}

fn render(c: &Check) -> String {
    // Padded before colouring: escape codes have no width.
    let word = match (c.ok, c.required) {
        (true, _) => format!("{:<4}", "ok").green().to_string(),
        (false, true) => "FAIL".red().bold().to_string(),
        (false, false) => "warn".yellow().to_string(),
    };
    let mut out = format!("{word} {:<9} {}\n", c.name, c.detail);
    if let Some(fix) = &c.fix {
        out.push_str(&format!("     fix: {fix}\n"));
    }
    out
}

pub fn run(args: DoctorArgs) -> Result<ExitStatus> {
    let checks = doctor::run_checks();
    let ok = doctor::can_record(&checks);
    if args.output_format == OutputFormat::Json {
        let env = serde_json::json!({
            "tool": "reel", "version": env!("CARGO_PKG_VERSION"), "command": "doctor",
            "ok": ok, "results": checks, "error": null,
        });
        let _ = writeln!(std::io::stdout().lock(), "{env}");
    } else {
        let mut err = anstream::stderr().lock();
        for c in &checks {
            let _ = err.write_all(render(c).as_bytes());
        }
        let _ = writeln!(
            err,
            "{}",
            if ok {
                "recording can work on this machine"
            } else {
                "recording cannot work yet: fix the FAIL lines above"
            }
        );
    }
    Ok(if ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
