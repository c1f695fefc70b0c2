//! The agent's process group: spawn in a fresh group, terminate the whole
//! group (SIGTERM, then SIGKILL after a grace), and a `Drop` that SIGKILLs
//! whatever is left so no path (error, panic) leaves an orphan.
//!
//! Limitation: a descendant that calls `setsid()` leaves the group and is out
//! of reach (documented in the record docs).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::AgentCommand;

/// A spawned agent and its process group (pgid = the child's pid).
pub struct ProcessGroup {
    pub child: Child,
    pgid: libc::pid_t,
    status: Option<ExitStatus>,
}

impl ProcessGroup {
    /// Spawns `cmd` with piped stdio in its own process group.
    pub fn spawn(cmd: &AgentCommand) -> std::io::Result<ProcessGroup> {
        let child = Command::new(&cmd.program)
            .args(&cmd.args)
            .env_clear()
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cmd.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        // A pid always fits pid_t on unix.
        let pgid = child.id() as libc::pid_t;
        Ok(ProcessGroup {
            child,
            pgid,
            status: None,
        })
    }

    /// Exit status if the leader has exited (reaps it).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none()
            && let Ok(Some(s)) = self.child.try_wait()
        {
            self.status = Some(s);
        }
        self.status
    }

    /// Waits up to `limit` for the leader to exit.
    pub fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` to every process of the group (ignores "no such group").
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(self.pgid, sig);
        }
    }

    /// SIGTERM the group, SIGKILL it after `grace` if the leader is still up,
    /// and SIGKILL any stragglers either way.
    pub fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        let status = self.wait_for(grace);
        self.signal(libc::SIGKILL);
        status.or_else(|| self.wait_for(Duration::from_secs(5)))
    }

    /// True while any process of the group is alive.
    pub fn group_alive(&self) -> bool {
        // SAFETY: signal 0 only probes.
        unsafe { libc::killpg(self.pgid, 0) == 0 }
    }

    pub fn pgid(&self) -> i32 {
        self.pgid
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        if self.status.is_none() {
            let _ = self.child.wait();
        }
    }
}
