//! The nested Landlock domain of the agent's shell commands: `reel
//! --sandbox-tool COMMAND`, which Claude Code puts in front of every Bash
//! tool command and hook through `CLAUDE_CODE_SHELL_PREFIX` (the helper sets
//! it). It restricts itself once more, then executes the command with the
//! shell. A process in a nested domain fails `ptrace_may_access` on every
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

/// The argument that makes reel the tool wrapper. Claude Code splits its
/// prefix at the last ` -`: `'<reel>' --sandbox-tool '<command>'`.
pub const TOOL_ARG: &str = "--sandbox-tool";

/// Exit code of a command that was not run (the shell's "cannot execute").
const NOT_RUN: i32 = 126;

/// The `CLAUDE_CODE_SHELL_PREFIX` value for `exe`, when Claude Code can
/// split it back into the program and [`TOOL_ARG`].
pub fn shell_prefix(exe: &std::path::Path) -> Option<String> {
    let exe = exe.to_str()?;
    (!exe.contains(" -") && !exe.is_empty()).then(|| format!("{exe} {TOOL_ARG}"))
}

/// Runs the wrapper; never returns.
pub fn tool_main(args: &[OsString]) -> ! {
    let rest = &args[2.min(args.len())..];
    if rest.is_empty() {
        eprintln!("reel {TOOL_ARG}: no command given");
        std::process::exit(NOT_RUN);
    }
    if let Err(why) = nest() {
        eprintln!("reel {TOOL_ARG}: the command was not run: {why}");
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
    eprintln!("reel {TOOL_ARG}: execute the command: {e}");
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
