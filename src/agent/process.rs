//! The agent's process group: spawn in a fresh group, terminate the whole
//! group (SIGTERM, then SIGKILL after a grace), and a `Drop` that SIGKILLs
//! whatever is left so no path (error, panic) leaves an orphan.
//!
//! A descendant that calls `setsid()` leaves the group: only a confined
//! start ([`crate::sandbox`]) reaches it, through its PID namespace or its
//! subreaper. Unconfined (`--no-sandbox`) it is out of reach.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::AgentCommand;

/// A spawned agent and its process group (pgid = the child's pid).
pub struct ProcessGroup {
    pub child: Child,
    pgid: libc::pid_t,
    status: Option<ExitStatus>,
    /// The sandbox layers the agent runs under (`None`: unconfined).
    pub sandbox: Option<crate::sandbox::Layers>,
    /// What must live as long as a confined agent (the model relay).
    _guard: Option<crate::sandbox::Guard>,
}

/// Why the agent did not start.
#[derive(Debug)]
pub enum SpawnError {
    /// The program could not be executed.
    Agent(String),
    /// The sandbox could not be applied (nothing ran).
    Sandbox(crate::sandbox::Refusal),
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpawnError::Agent(why) => f.write_str(why),
            SpawnError::Sandbox(refusal) => write!(f, "{refusal}"),
        }
    }
}

impl ProcessGroup {
    /// Spawns `cmd` with piped stdio in its own process group, through the
    /// sandbox helper when `cmd.sandbox` says so.
    pub fn spawn(cmd: &AgentCommand) -> Result<ProcessGroup, SpawnError> {
        let spawn_err = |e: std::io::Error| SpawnError::Agent(e.to_string());
        let (mut command, pending) = match &cmd.sandbox {
            Some(launch) => {
                let (c, p) = launch.command(&cmd.program, &cmd.args).map_err(|e| {
                    SpawnError::Sandbox(crate::sandbox::Refusal::Failed(e.to_string()))
                })?;
                (c, Some(p))
            }
            None => {
                let mut c = Command::new(&cmd.program);
                c.args(&cmd.args);
                (c, None)
            }
        };
        let child = command
            .env_clear()
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cmd.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| match &cmd.sandbox {
                Some(_) => SpawnError::Sandbox(crate::sandbox::Refusal::Failed(format!(
                    "start the sandbox helper: {e}"
                ))),
                None => spawn_err(e),
            })?;
        // A pid always fits pid_t on unix.
        let pgid = child.id() as libc::pid_t;
        let mut group = ProcessGroup {
            child,
            pgid,
            status: None,
            sandbox: None,
            _guard: None,
        };
        if let Some(pending) = pending {
            match pending.confirm() {
                Ok((layers, guard)) => {
                    group.sandbox = Some(layers);
                    group._guard = Some(guard);
                }
                // Dropping the group kills whatever the helper left.
                Err(crate::sandbox::NotStarted::Agent(why)) => return Err(SpawnError::Agent(why)),
                Err(crate::sandbox::NotStarted::Refused(r)) => return Err(SpawnError::Sandbox(r)),
            }
        }
        Ok(group)
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
