//! Kernel confinement of every agent run.
//!
//! A rerun executes the tool calls a cassette holds, and a cassette is JSON
//! nobody reads in review: the agent and everything it starts (tools, hooks,
//! skill scripts, MCP servers, background processes) are hostile until the
//! kernel says otherwise. reel starts the agent through a small helper, its
//! own binary run as `reel __sandbox` (`helper`), which applies every layer
//! the machine offers and only then executes the agent:
//!
//! - **Landlock** (files, TCP ports, signal and abstract-socket scopes), at
//!   the kernel's own ABI (`rules`): writes only beneath the run directory,
//!   reads only system directories, the agent's installation, the toolchains
//!   on its `PATH` and the run directory ([`Policy`]);
//! - **namespaces** (user, PID, mount, network) when unprivileged user
//!   namespaces are allowed: a private `/proc`, nothing left alive after the
//!   run, and for a scripted model a network with loopback only, the model's
//!   port and reel's HTTP MCP fronts' relayed in from the host (`relay`);
//! - otherwise a **reaper** that kills the whole process tree, sessions
//!   included (`reap`).
//!
//! What was applied is reported back ([`Layers`]) and carried by every
//! result. Where no file confinement is available at all the run is refused
//! ([`Refusal`]); `--no-sandbox` is the only way to run unconfined.
//!
//! Not here: what a run is (`crate::run` builds the [`Policy`]),
//! the agent protocol (`crate::agent`).
//!
//! Files: `probe` (what the kernel offers: Landlock ABI, user namespaces),
//! `policy` (what a run may touch: write and read paths, devices, network),
//! `rules` (the Landlock ruleset and the last steps before exec), `launch`
//! (reel's side of a confined start: helper command, status pipe, host end of
//! the relay), `helper`, `mounts` (the hidden shared directories), `relay` (the
//! loopback ports, model and HTTP MCP fronts, relayed into a network
//! namespace), `reap` (the subreaper's tree kill), `seccomp` (ptrace,
//! `process_vm_*`, `pidfd_getfd`, `TIOCSTI` / `TIOCLINUX` refused), `limits`
//! (rlimits, the PID namespace's `pid_max`) and `tool` (reel under
//! `REEL_SANDBOX_TOOL=1`: the nested Landlock domain of Bash commands, hooks
//! and stdio MCP servers, via `CLAUDE_CODE_SHELL_PREFIX`).
//!
//! The helper sets up namespaces, a private `/proc`, read-only mounts, hidden
//! `/tmp` and `/run`, loopback and the model relay, drops capabilities,
//! enforces the Landlock ruleset between fork and exec, acts as PID-namespace
//! init or subreaper, and reports the `Layers` back on a status pipe. TCP goes
//! only to the scripted model and reel's HTTP MCP fronts, nothing of the run
//! stays alive after it, and reel's own process is unreadable. A rerun's
//! pre-check of visible writes outside the run is an early error, not the
//! guarantee; this is.

mod helper;
mod launch;
pub mod limits;
mod mounts;
pub mod policy;
pub mod probe;
mod reap;
mod relay;
mod rules;
mod seccomp;
mod tool;

pub use helper::{HELPER_ARG, helper_main};
pub use tool::TOOL_ENV;

/// Runs the sandbox helper (`<exe> __sandbox …`) or the tool wrapper (`<exe>
/// COMMAND` under [`TOOL_ENV`]) and exits when this process was started as
/// one; returns otherwise. Every binary that starts agents through the
/// library calls it first: the helper is the running executable,
/// re-executed (`REEL_SANDBOX_HELPER` names another).
pub fn run_if_helper() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == HELPER_ARG) {
        helper_main(&args);
    }
    if tool::is_tool(&args) {
        tool::tool_main(&args);
    }
}
pub use launch::{Guard, Launch, NotStarted, Pending};
pub use policy::{Network, Policy};
pub use probe::{Probe, probe};

use serde::{Deserialize, Serialize};

/// Whether a run is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Every layer the machine offers; refuse when there is no file confinement.
    #[default]
    Enforce,
    /// `--no-sandbox`: unconfined on purpose, and said so on every result.
    Off,
}

/// The layers a run was started under (what every result carries).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Layers {
    /// `false` only under `--no-sandbox`.
    pub enabled: bool,
    /// The Landlock ABI the rules were applied at.
    pub landlock_abi: Option<u8>,
    /// Files confined (Landlock).
    pub files: bool,
    /// TCP connect/bind confined (Landlock ABI 4+).
    pub tcp: bool,
    /// Signals and abstract unix sockets scoped (Landlock ABI 6+).
    pub scopes: bool,
    /// Namespaces entered: any of `user`, `pid`, `mount`, `network`.
    pub namespaces: Vec<String>,
    /// Every mount but the run directory's is read-only (what Landlock does
    /// not cover: `chmod`, `chown`, timestamps outside the run).
    pub read_only_outside_run: bool,
    /// How the run's processes are ended: `pid-namespace` or `subreaper`.
    pub reaper: String,
    /// Linux capabilities dropped before the agent starts.
    pub capabilities_dropped: bool,
    /// The run's terminals: `private` (a new session without a controlling
    /// terminal, a private devpts instance), `none` (a new session without a
    /// controlling terminal and no terminal device: no mount namespace to
    /// give it its own), empty when unconfined.
    #[serde(default)]
    pub terminal: String,
    /// `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd` and the
    /// `TIOCSTI`/`TIOCLINUX` ioctls refused to every process of the run.
    #[serde(default)]
    pub seccomp: bool,
    /// Shell commands and hooks run in a nested Landlock domain (through
    /// `CLAUDE_CODE_SHELL_PREFIX`): no access to the agent's process.
    #[serde(default)]
    pub tool_domain: bool,
    /// The resource limits of the run's processes (`nproc 4096`, `data 4
    /// GiB per process`, …).
    #[serde(default)]
    pub limits: Vec<String>,
}

impl Layers {
    /// What an unconfined (`--no-sandbox`) run reports.
    pub fn off() -> Layers {
        Layers::default()
    }

    /// One line a person reads: `landlock v7 (files, tcp, scopes) · namespaces user, pid, mount, network · reaper pid-namespace`.
    pub fn summary(&self) -> String {
        if !self.enabled {
            return "OFF (--no-sandbox): the agent and everything it started ran unconfined".into();
        }
        let mut parts = Vec::new();
        if let Some(abi) = self.landlock_abi {
            let mut what = Vec::new();
            for (on, name) in [
                (self.files, "files"),
                (self.tcp, "tcp"),
                (self.scopes, "scopes"),
            ] {
                if on {
                    what.push(name);
                }
            }
            parts.push(format!("landlock v{abi} ({})", what.join(", ")));
        }
        if self.namespaces.is_empty() {
            parts.push("no namespaces".into());
        } else {
            parts.push(format!("namespaces {}", self.namespaces.join(", ")));
        }
        if self.read_only_outside_run {
            parts.push("read-only outside the run".into());
        }
        parts.push(format!("reaper {}", self.reaper));
        if self.capabilities_dropped {
            parts.push("capabilities dropped".into());
        }
        parts.push(match self.terminal.as_str() {
            "private" => "no controlling terminal, private devpts".into(),
            _ => "no controlling terminal, no terminal device (no mount namespace)".into(),
        });
        if self.seccomp {
            parts.push("seccomp (no ptrace, process_vm, pidfd_getfd, TIOCSTI)".into());
        }
        if self.tool_domain {
            parts.push("tools in a nested domain".into());
        }
        if !self.limits.is_empty() {
            parts.push(format!("limits {}", self.limits.join(", ")));
        }
        parts.join(" · ")
    }
}

/// Why a confined run could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The machine offers no file confinement at all.
    #[error(
        "no kernel sandbox is available here: {0}; a rerun executes code a cassette names and is \
         refused unconfined"
    )]
    Unavailable(String),
    /// The helper could not apply a layer the probe promised.
    #[error("the sandbox could not be applied: {0}")]
    Failed(String),
}

impl Refusal {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Refusal::Unavailable(_) => "run on a Linux kernel with Landlock enabled (5.13 or newer, \
                `lsm=…,landlock` on the kernel command line; GitHub's ubuntu-24.04 runners have it), \
                or pass --no-sandbox to run unconfined on purpose (never on untrusted cassettes)"
                .into(),
            Refusal::Failed(_) => "run `reel doctor` to see which sandbox layers this machine \
                offers; pass --no-sandbox to run unconfined on purpose (never on untrusted \
                cassettes)"
                .into(),
        }
    }
}

/// Marks reel's own process non-dumpable, so nothing it starts can read its
/// memory or environment through `/proc/<pid>` (in CI that is every token the
/// job holds). The agent is further kept out by Landlock's ptrace scoping and
/// a private `/proc`.
pub fn protect_self() {
    // SAFETY: prctl(PR_SET_DUMPABLE) takes plain integers and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}
