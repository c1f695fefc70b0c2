//! The recording relay: `reel __mcp-relay CAPTURE -- PROGRAM ARGS…`, run by
//! the agent in a stdio MCP server's place (inside the run's sandbox, like
//! the server itself). It starts the real server with the environment and
//! working directory the agent gave it, passes every line both ways
//! unchanged, and appends each JSON-RPC message to CAPTURE
//! ([`super::traffic::Capture`]). Its exit code is the server's.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::traffic::{Capture, Side};

/// The argument that selects the relay in `main` (before clap).
pub const RELAY_ARG: &str = "__mcp-relay";

/// Runs the relay until the server ends; never returns.
pub fn relay_main(args: &[std::ffi::OsString]) -> ! {
    let code = match args {
        [_, _, capture, sep, program, rest @ ..] if sep == "--" => {
            relay(Path::new(capture), program, rest).unwrap_or_else(|e| {
                eprintln!("reel MCP relay: {e}");
                1
            })
        }
        _ => {
            eprintln!("usage: reel {RELAY_ARG} CAPTURE -- PROGRAM [ARGS…]");
            2
        }
    };
    std::process::exit(code)
}

fn relay(
    capture: &Path,
    program: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
) -> Result<i32, String> {
    let log =
        Arc::new(Capture::open(capture).map_err(|e| format!("open `{}`: {e}", capture.display()))?);
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("start `{}`: {e}", program.to_string_lossy()))?;
    let to_server = child.stdin.take().ok_or("no server stdin")?;
    let from_server = child.stdout.take().ok_or("no server stdout")?;
    let up = Arc::clone(&log);
    // The client's side: when the agent closes our stdin, the server's
    // closes too (the pipe end drops with the thread), and it ends.
    std::thread::spawn(move || pump(std::io::stdin(), to_server, &up, Side::Client));
    pump(from_server, std::io::stdout(), &log, Side::Server);
    let status = child
        .wait()
        .map_err(|e| format!("wait for the server: {e}"))?;
    Ok(status.code().unwrap_or(1))
}

/// Copies `from` to `to` line by line (flushing each), logging each line.
fn pump(from: impl Read, mut to: impl Write, log: &Capture, side: Side) {
    let mut from = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // Logged before it is passed on, so a response is never captured
        // ahead of its request.
        log.log(side, line.trim_ascii_end());
        if to.write_all(&line).and_then(|()| to.flush()).is_err() {
            return;
        }
    }
}
