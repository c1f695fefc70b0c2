//! The command line: argument definitions and dispatch, nothing else.
//!
//! Each subcommand's arguments and its `run` live in `src/cli/<command>.rs`;
//! `run` calls into the library and returns the command's outcome, an
//! [`crate::exit::ExitStatus`]. This file owns the one place where an outcome
//! becomes a process exit code.
//!
//! Each command's cross-flag checks are one validated plan
//! (`ReplayPlan::from_args`, `RerunPlan::from_args`, `VerifyPlan::from_args`,
//! `RehashPlan::from_args`); a refusal is exit 2. Flags shared by several
//! commands are defined once and flattened into each: `cli::shard::ShardArgs`
//! (`--shard`) and `cli::flags` (`--output-format`, `--session`, `--strict`,
//! `--write`, `--junit`; a command's own help wording through `mut_arg`).
//! `cli::main` installs the stderr `messages` sink. The interactive review
//! screen is `cli::review` (tested in a real pty). Before any argument parsing,
//! `src/main.rs` hands `reel __sandbox` to the sandbox helper and `reel
//! __mcp-frozen` / `reel __mcp-relay` to reel's own MCP servers.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod agents;
pub mod assertions;
pub mod diff;
pub mod doctor;
pub mod eval;
pub mod export;
pub mod fingerprint;
pub mod flags;
pub mod gc;
pub mod import;
pub mod lint;
pub mod matrix;
pub mod model;
pub mod record;
pub mod regrade;
pub mod rehash;
pub mod replay;
pub mod report;
pub mod rerun;
pub mod review;
pub mod scaffold;
pub mod shard;
pub mod show;
pub mod verify;

/// Output format shared by every command that reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text (the flag's help says where it goes).
    #[default]
    Text,
    /// One JSON envelope on stdout (schema in `schema/`).
    Json,
}

#[derive(Debug, Parser)]
#[command(
    name = "reel",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("REEL_BUILD_COMMIT"), ")"),
    about = "Record/replay test harness for AI-agent skill runs",
    long_about = "Record an agent's run of a scenario into a cassette, then replay the \
                  cassette's assertions token-free in CI, or rerun it: the current skill files \
                  run for real against the model replies the cassette holds, still token-free. \
                  Cassettes are cowork-harness v9–v16 (reel writes the lowest version a scenario \
                  needs: v12 for most)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a real agent on a scenario and write a cassette.
    Record(record::RecordArgs),
    /// Re-evaluate a cassette's assertions against the frozen recording.
    Replay(replay::ReplayArgs),
    /// Re-execute a recording with the real agent against its recorded model replies.
    Rerun(rerun::RerunArgs),
    /// Gate committed cassettes: privacy scan plus staleness.
    VerifyCassettes(Box<verify::VerifyArgs>),
    /// Migrate legacy-hash (v10/v11) cassettes to v12, with proof.
    Rehash(rehash::RehashArgs),
    /// Re-judge stale semantic_matches verdicts from the recorded evidence (never runs the agent).
    Regrade(regrade::RegradeArgs),
    /// Print the staleness fingerprint a recording of these skill roots would store.
    Fingerprint(fingerprint::FingerprintArgs),
    /// The scripted model endpoint (token-free recording).
    Model(model::ModelArgs),
    /// Check that recording can work here: agent binary, a scripted-model handshake, git.
    Doctor(doctor::DoctorArgs),
    /// A starter scenario and model script from a recording (a token-free test in one command).
    Scaffold(scaffold::ScaffoldArgs),
    /// Check scenarios for footguns (file:line, stable codes) before recording.
    Lint(lint::LintArgs),
    /// List the assertion keys: parameter shape, when replay evaluates each, what it checks.
    Assertions(assertions::AssertionsArgs),
    /// Compare two recordings view by view (tools, answers, files, assertions, ...).
    Diff(diff::DiffArgs),
    /// A readable digest of one recording (tools, questions, files, timeline, usage).
    Show(show::ShowArgs),
    /// One self-contained HTML page: a recording, a rerun, a diff, a version matrix or an eval.
    Report(report::ReportArgs),
    /// Review pending re-recordings on a terminal: diff, then accept / reject / skip.
    Review(review::ReviewArgs),
    /// Accept pending re-recordings (rename NAME.cassette.json.new over the cassette).
    Accept(review::ResolveArgs),
    /// Reject pending re-recordings (delete the .new, keep the cassette).
    Reject(review::ResolveArgs),
    /// List pending re-recordings (NAME.cassette.json.new files).
    Pending(review::PendingArgs),
    /// Claude Code releases in the agent cache: list, install, prune.
    Agents(agents::AgentsArgs),
    /// Find the Claude Code release that changed a cassette's rerun (log2 reruns).
    Bisect(agents::BisectArgs),
    /// Is a skill edit (or runtime change) an improvement? Paired live trials of two arms.
    Eval(Box<eval::EvalArgs>),
    /// Remove kept run directories (older than a given age, or all); never anything else.
    Gc(gc::GcArgs),
    /// Bring test suites of other tools in as reel scenarios (`import plugin-eval`).
    Import(import::ImportArgs),
    /// Write reel scenarios out as other tools' test cases (`export plugin-eval`).
    Export(export::ExportArgs),
}

/// A flag combination a command refuses (exit 2), found while building its
/// plan (`ReplayPlan::from_args`, `RerunPlan::from_args`), with an optional
/// `hint:` and the notices already due before the refusal.
#[derive(Debug)]
pub struct PlanError {
    pub message: String,
    pub hint: Option<&'static str>,
    /// stderr lines printed before the error (e.g. an empty shard's notice).
    pub notices: Vec<String>,
}

impl PlanError {
    pub fn new(message: String, hint: Option<&'static str>) -> Self {
        PlanError {
            message,
            hint,
            notices: Vec::new(),
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    // Nothing reel starts may read its memory or environment.
    crate::sandbox::protect_self();
    // Warnings from inside the library reach stderr as they happen.
    crate::messages::install(crate::messages::Stderr);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                crate::exit::USAGE
            } else {
                crate::exit::SUCCESS
            });
        }
    };
    let outcome = match cli.command {
        Command::Record(args) => record::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Rerun(args) => rerun::run(args),
        Command::VerifyCassettes(args) => verify::run(*args),
        Command::Rehash(args) => rehash::run(args),
        Command::Regrade(args) => regrade::run(args),
        Command::Fingerprint(args) => fingerprint::run(args),
        Command::Model(args) => model::run(args),
        Command::Assertions(args) => assertions::run(args),
        Command::Lint(args) => lint::run(args),
        Command::Scaffold(args) => scaffold::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Show(args) => show::run(args),
        Command::Report(args) => report::run(args),
        Command::Review(args) => review::run_review(args),
        Command::Accept(args) => review::run_accept(args),
        Command::Reject(args) => review::run_reject(args),
        Command::Pending(args) => review::run_pending(args),
        Command::Agents(args) => agents::run(args),
        Command::Bisect(args) => agents::bisect(args),
        Command::Eval(args) => eval::run(&args),
        Command::Gc(args) => gc::run(args),
        Command::Import(args) => import::run(args),
        Command::Export(args) => export::run(args),
    };
    match outcome {
        Ok(status) => ExitCode::from(status.code()),
        Err(err) => {
            print_error(&err);
            ExitCode::from(err.status().code())
        }
    }
}

/// Prints `error: ...` and an optional `hint: ...` to stderr.
pub fn print_error(err: &crate::Error) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error: {}", err.message);
    if let Some(hint) = &err.hint {
        let _ = writeln!(stderr, "hint: {hint}");
    }
}
