//! The nested Landlock domain of the agent's shell commands: Claude Code
//! puts `CLAUDE_CODE_SHELL_PREFIX` in front of every Bash tool command, hook
//! and stdio MCP server it starts, as `'<prefix>' '<command line>'`; the
//! helper sets the prefix to reel's own binary and [`TOOL_ENV`], so reel
//! started with them and no internal command restricts itself once more,
//! then executes the command line with the shell. A process in a nested domain fails `ptrace_may_access` on every
//! process of its parent domain: it cannot attach to the agent, nor open the
//! agent's `/proc/<pid>/fd/*` (its stdout pipe to reel), `mem` or `environ`.
//! The nested ruleset adds no file restriction of its own (it handles only
//! making block devices, which the outer domain already refuses) and scopes
//! signals, so a tool cannot stop or kill the agent either.
//!
//! It fails closed: a command whose domain cannot be created does not run.
//! The prefix is Claude Code's setting, so the agent's own settings can
//! replace it; `/proc/<agent>/fd` is also closed by the agent's stdio being
//! sockets (`crate::agent::process`), which no setting reaches.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use landlock::{AccessFs, Ruleset, RulesetAttr, RulesetStatus, Scope};

/// Set (to `1`) in the agent's environment: reel started with arguments
/// that are not one of its internal commands (`__…`) is the tool wrapper.
/// (The prefix must be a bare program: Claude Code runs a stdio MCP server
/// as `<prefix> '<command line>'` with the prefix as the program's path.)
pub const TOOL_ENV: &str = "REEL_SANDBOX_TOOL";

/// Whether this process, started with `args`, is the tool wrapper.
pub fn is_tool(args: &[OsString]) -> bool {
    std::env::var_os(TOOL_ENV).is_some_and(|v| v == "1")
        && args
            .get(1)
            .is_some_and(|a| !a.to_string_lossy().starts_with("__"))
}

/// Exit code of a command that was not run (the shell's "cannot execute").
const NOT_RUN: i32 = 126;

/// The `CLAUDE_CODE_SHELL_PREFIX` value for `exe`, when Claude Code reads
/// it back as one program (it splits a prefix at its last ` -`).
pub fn shell_prefix(exe: &std::path::Path) -> Option<String> {
    let exe = exe.to_str()?;
    (!exe.contains(" -") && !exe.is_empty()).then(|| exe.to_owned())
}

/// Runs the wrapper; never returns.
pub fn tool_main(args: &[OsString]) -> ! {
    let rest = &args[1.min(args.len())..];
    if rest.is_empty() {
        eprintln!("reel (sandbox tool wrapper): no command given");
        std::process::exit(NOT_RUN);
    }
    if let Err(why) = nest() {
        eprintln!("reel (sandbox tool wrapper): the command was not run: {why}");
        std::process::exit(NOT_RUN);
    }
    let mut command = if rest.len() == 1 {
        let mut c = std::process::Command::new(shell());
        c.arg("-c").arg(&rest[0]);
        c
    } else {
        let mut c = std::process::Command::new(&rest[0]);
        c.args(&rest[1..]);
        c
    };
    let e = command.exec();
    eprintln!("reel (sandbox tool wrapper): execute the command: {e}");
    std::process::exit(NOT_RUN)
}

/// Enters a nested Landlock domain (and sets `no_new_privs`, which a
/// domain needs).
fn nest() -> Result<(), String> {
    let status = Ruleset::default()
        .handle_access(AccessFs::MakeBlock)
        .and_then(|r| r.scope(Scope::Signal))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced here".into());
    }
    Ok(())
}

/// The shell Claude Code runs commands with: `$SHELL` when absolute, else
/// bash.
fn shell() -> OsString {
    std::env::var_os("SHELL")
        .filter(|s| std::path::Path::new(s).is_absolute())
        .unwrap_or_else(|| {
            if std::path::Path::new("/bin/bash").exists() {
                "/bin/bash".into()
            } else {
                "/bin/sh".into()
            }
        })
}
