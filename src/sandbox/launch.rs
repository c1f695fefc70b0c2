//! reel's side of a confined start: the helper command that wraps the
//! agent's, the host end of the loopback relay, and reading back what the
//! helper applied (one JSON line on a status pipe, before the agent runs).

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::relay::HostRelay;
use super::{Layers, Network, Policy, Probe, Refusal};

/// The file descriptor the helper reports on.
pub(super) const STATUS_FD: libc::c_int = 3;

/// What the helper is told (its argument, as JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Spec {
    pub policy: Policy,
    pub landlock_abi: u8,
    /// Enter user, PID, mount (and for a scripted model, network) namespaces.
    pub namespaces: bool,
    /// The directory of the relay's host sockets, one per port (network
    /// namespace only; [`super::relay::socket_name`]).
    pub relay_dir: Option<PathBuf>,
    /// The resource limits of the agent's tree (decided here: the helper
    /// runs with the agent's environment, not the operator's).
    pub limits: super::limits::Limits,
}

/// What the helper says back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Status {
    Started(Layers),
    /// A layer could not be applied: nothing ran.
    Refused(String),
    /// Confined, but the agent's program could not be executed.
    AgentNotStarted(String),
}

/// Why a confined agent did not start.
#[derive(Debug)]
pub enum NotStarted {
    Refused(Refusal),
    /// The program could not be executed (missing, not executable).
    Agent(String),
}

/// A confined start, ready to wrap an agent command.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    helper: PathBuf,
    policy: Policy,
    landlock_abi: u8,
    namespaces: bool,
}

impl Launch {
    /// The launch of `policy` on a machine that offers `probe`; refused when
    /// it offers no file confinement.
    pub fn new(policy: Policy, probe: &Probe) -> Result<Launch, Refusal> {
        let Some(landlock_abi) = probe.landlock_abi else {
            return Err(Refusal::Unavailable(probe.missing()));
        };
        Ok(Launch {
            helper: helper_program(),
            policy,
            landlock_abi,
            namespaces: probe.user_namespaces,
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The helper command running `program args` confined, and what must
    /// live while it runs. The caller sets stdio, environment, working
    /// directory and process group, spawns it, then calls [`Pending::confirm`].
    pub fn command(&self, program: &Path, args: &[String]) -> std::io::Result<(Command, Pending)> {
        let relay = match (&self.policy.network, self.namespaces) {
            (Network::Loopback { ports }, true) => Some(HostRelay::start(ports)?),
            _ => None,
        };
        let spec = Spec {
            policy: self.policy.clone(),
            landlock_abi: self.landlock_abi,
            namespaces: self.namespaces,
            relay_dir: relay.as_ref().map(|r| r.dir().to_owned()),
            limits: super::limits::Limits::for_run(self.namespaces)
                .map_err(std::io::Error::other)?,
        };
        let spec = serde_json::to_string(&spec).map_err(std::io::Error::other)?;
        let (read, write) = pipe()?;
        let mut command = Command::new(&self.helper);
        command
            .arg(super::HELPER_ARG)
            .arg(spec)
            .arg("--")
            .arg(program)
            .args(args);
        let write_fd = write.as_raw_fd();
        // SAFETY: only dup2/fcntl between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if write_fd == STATUS_FD {
                    if libc::fcntl(STATUS_FD, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(write_fd, STATUS_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok((
            command,
            Pending {
                read,
                write: Some(write),
                relay,
            },
        ))
    }
}

/// The helper: `REEL_SANDBOX_HELPER`, else reel's own binary.
fn helper_program() -> PathBuf {
    std::env::var_os("REEL_SANDBOX_HELPER")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::current_exe().ok())
        .unwrap_or_else(|| PathBuf::from("reel"))
}

/// A spawned helper whose report is not read yet.
pub struct Pending {
    read: OwnedFd,
    write: Option<OwnedFd>,
    relay: Option<HostRelay>,
}

/// What must live as long as the confined agent (the host end of the relay).
pub struct Guard {
    _relay: Option<HostRelay>,
}

impl Pending {
    /// Reads the helper's report: the layers applied, or why it refused.
    /// Blocks until the helper has executed the agent or exited.
    pub fn confirm(mut self) -> Result<(Layers, Guard), NotStarted> {
        // Our copy of the write end must close, or EOF never comes.
        self.write = None;
        let mut text = String::new();
        let mut file = std::fs::File::from(self.read);
        let _ = file.read_to_string(&mut text);
        match serde_json::from_str::<Status>(text.trim()) {
            Ok(Status::Started(layers)) => Ok((layers, Guard { _relay: self.relay })),
            Ok(Status::Refused(why)) => Err(NotStarted::Refused(Refusal::Failed(why))),
            Ok(Status::AgentNotStarted(why)) => Err(NotStarted::Agent(why)),
            Err(_) if text.trim().is_empty() => Err(NotStarted::Refused(Refusal::Failed(
                "the sandbox helper exited before starting the agent".into(),
            ))),
            Err(e) => Err(NotStarted::Refused(Refusal::Failed(format!(
                "unreadable helper report: {e}"
            )))),
        }
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
