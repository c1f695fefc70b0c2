//! `reel model`: arguments and the thin glue to [`crate::model`].
//!
//! `reel model serve` prints the URL on the first stdout line (so a caller
//! can start it and read the address), reports problems on stderr as they
//! happen, and exits cleanly on SIGINT/SIGTERM.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Result;
use crate::exit::ExitStatus;
use crate::model::{Script, ServeOptions, Server};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 done (serve: stopped); 2 usage or an unreadable script or \
    cassette."
)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModelCommand {
    /// Serve a model script as an Anthropic Messages API on 127.0.0.1.
    ///
    /// Prints `http://127.0.0.1:<port>` on the first stdout line; point the
    /// agent's ANTHROPIC_BASE_URL at it. Runs until SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// Write a recording's model replies as a model script (token-free re-recording).
    ///
    /// Every assistant turn of the main conversation and of each sub-agent,
    /// with its blocks in order (text, tool calls with their ids and inputs,
    /// thinking as recorded), stop reason and usage. Recorded run paths are
    /// written as `{{cwd}}`, `{{config}}`, `{{home}}` and `{{run}}`, so the
    /// script fits any fresh run: `reel record SCENARIO --model-script FILE`.
    Extract(ExtractArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// The cassette whose replies to extract.
    #[arg(value_name = "CASSETTE")]
    pub cassette: PathBuf,
    /// Write the script here (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The YAML model script (schema: schema/model-script.json).
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Append one JSON line per request to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

pub fn run(args: ModelArgs) -> Result<ExitStatus> {
    match args.command {
        ModelCommand::Serve(args) => serve(args),
        ModelCommand::Extract(args) => extract(args),
    }
}

fn extract(args: ExtractArgs) -> Result<ExitStatus> {
    let cassette = crate::cassette::Cassette::load(&args.cassette)
        .map_err(|e| crate::Error::usage(e.to_string()))?;
    let replies = crate::rerun::replies::from_cassette(&cassette).map_err(|e| {
        crate::Error::usage(format!("model extract: {}: {e}", args.cassette.display()))
            .with_hint("extract from a cassette that recorded at least one model reply")
    })?;
    let mut yaml = format!(
        "# Model replies extracted from {} by `reel model extract`.\n",
        args.cassette.display()
    );
    yaml.push_str(&replies.script.to_yaml());
    let mut err = std::io::stderr().lock();
    for note in &replies.notes {
        let _ = writeln!(err, "::notice:: [model extract] {note}");
    }
    match &args.out {
        Some(path) => {
            crate::atomic::write_atomic(path, yaml.as_bytes()).map_err(|e| {
                crate::Error::usage(format!("model extract: write {}: {e}", path.display()))
            })?;
            let _ = writeln!(
                err,
                "wrote {} ({} turn(s))",
                path.display(),
                replies.turn_count()
            );
        }
        None => {
            let _ = std::io::stdout().lock().write_all(yaml.as_bytes());
        }
    }
    Ok(ExitStatus::Success)
}

fn serve(args: ServeArgs) -> Result<ExitStatus> {
    let script = Script::load(&args.script)?;
    // Block the stop signals before any thread starts, so every thread
    // inherits the mask and only the wait below receives them.
    let signals = StopSignals::block()?;
    let server = Server::start(
        script,
        ServeOptions {
            port: args.port,
            log: args.log,
            vars: Vec::new(),
            upstream: None,
        },
    )?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", server.url())?;
        stdout.flush()?;
    }
    let mut reported = 0;
    let report = |problems: &[crate::model::Problem], from: usize| {
        let mut stderr = std::io::stderr().lock();
        for problem in &problems[from..] {
            let _ = writeln!(stderr, "reel model: {problem}");
        }
    };
    loop {
        let stop = signals.wait(Duration::from_millis(200));
        let problems = server.errors();
        report(&problems, reported);
        reported = problems.len();
        if stop {
            break;
        }
    }
    let problems = server.shutdown();
    report(&problems, reported);
    Ok(ExitStatus::Success)
}

/// SIGINT and SIGTERM, blocked in this thread (and threads it starts) and
/// received synchronously with `sigtimedwait`.
struct StopSignals {
    set: libc::sigset_t,
}

impl StopSignals {
    fn block() -> std::io::Result<StopSignals> {
        // SAFETY: plain libc calls on a zero-initialised, locally owned sigset_t.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            Ok(StopSignals { set })
        }
    }

    /// True when a stop signal arrived within `timeout`.
    fn wait(&self, timeout: Duration) -> bool {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `self.set` is an initialised sigset_t; a null siginfo is allowed.
        let rc = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        rc == libc::SIGINT || rc == libc::SIGTERM
    }
}
