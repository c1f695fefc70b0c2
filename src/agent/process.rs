//! The agent's process group: spawn in a fresh group, terminate the whole
//! group (SIGTERM, then SIGKILL after a grace), and a `Drop` that SIGKILLs
//! whatever is left so no path (error, panic) leaves an orphan.
//!
//! A descendant that calls `setsid()` leaves the group: only a confined
//! start ([`crate::sandbox`]) reaches it, through its PID namespace or its
//! subreaper. Unconfined (`--no-sandbox`) it is out of reach.
//!
//! Confined or not, the child starts in a session of its own (`setsid`, so
//! the group is the session's): reel's controlling terminal is never handed
//! to it, and nothing it starts can type into the operator's shell or read
//! the operator's keys through `/dev/tty`. Its stdin, stdout and stderr are
//! unix socket pairs, not pipes: a pipe can be opened again through
//! `/proc/<pid>/fd/1` by any process that may inspect the agent (a tool
//! forging protocol lines onto reel's side of the wire, or host frames onto
//! the agent's stdin); a socket cannot be opened by path at all (`ENXIO`).

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
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
    /// Spawns `cmd` with socket stdio in its own session (and so process
    /// group), through the sandbox helper when `cmd.sandbox` says so.
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
        let [stdin, stdout, stderr] = [(); 3].map(|()| socket_pair());
        let (stdin, stdout, stderr) = (
            stdin.map_err(spawn_err)?,
            stdout.map_err(spawn_err)?,
            stderr.map_err(spawn_err)?,
        );
        command
            .env_clear()
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cmd.cwd)
            .stdin(Stdio::from(stdin.1))
            .stdout(Stdio::from(stdout.1))
            .stderr(Stdio::from(stderr.1));
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = command.spawn();
        // The child's ends close here, or EOF would never come.
        drop(command);
        let mut child = spawned.map_err(|e| match &cmd.sandbox {
            Some(_) => SpawnError::Sandbox(crate::sandbox::Refusal::Failed(format!(
                "start the sandbox helper: {e}"
            ))),
            None => spawn_err(e),
        })?;
        child.stdin = Some(ChildStdin::from(stdin.0));
        child.stdout = Some(ChildStdout::from(stdout.0));
        child.stderr = Some(ChildStderr::from(stderr.0));
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

/// A connected unix stream pair: (reel's end, the child's end).
fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair writes two descriptors into the array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        if self.status.is_none() {
            let _ = self.child.wait();
        }
    }
}

/// A one-shot command's end ([`run_to_end`]).
pub struct Finished {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    /// The sandbox layers it ran under (`None`: unconfined).
    pub sandbox: Option<crate::sandbox::Layers>,
}

/// Runs `cmd` (e.g. `--version`) in its own process group with stdin
/// closed, for at most `limit` (then kills the group); its whole output.
pub fn run_to_end(cmd: &AgentCommand, limit: Duration) -> Result<Finished, String> {
    use std::io::Read;
    let mut pg = ProcessGroup::spawn(cmd)
        .map_err(|e| format!("cannot start `{}`: {e}", cmd.program.display()))?;
    drop(pg.child.stdin.take());
    // Read on threads so a chatty program cannot fill a socket and stall.
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out_t = reader(pg.child.stdout.take().map(|r| Box::new(r) as _));
    let err_t = reader(pg.child.stderr.take().map(|r| Box::new(r) as _));
    let status = pg.wait_for(limit);
    if status.is_none() {
        pg.terminate(Duration::from_secs(2));
    }
    pg.signal(libc::SIGKILL);
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    match status {
        None => Err(format!(
            "`{}` did not finish within {} s",
            cmd.program.display(),
            limit.as_secs()
        )),
        Some(s) => Ok(Finished {
            success: s.success(),
            stdout,
            stderr,
            sandbox: pg.sandbox.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child's stdio cannot be opened again through `/proc/<pid>/fd`
    /// (sockets: ENXIO), and the child leads a session of its own.
    #[test]
    fn the_childs_stdio_cannot_be_reopened_and_it_has_its_own_session() {
        let cmd = AgentCommand {
            program: "sleep".into(),
            args: vec!["5".into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: std::env::temp_dir(),
            sandbox: None,
        };
        let group = ProcessGroup::spawn(&cmd).unwrap();
        let pid = group.child.id() as libc::pid_t;
        for fd in 0..3 {
            let e = std::fs::OpenOptions::new()
                .write(true)
                .open(format!("/proc/{pid}/fd/{fd}"))
                .unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENXIO), "fd {fd}: {e}");
        }
        // SAFETY: getsid takes a pid.
        assert_eq!(unsafe { libc::getsid(pid) }, pid);
    }
}
