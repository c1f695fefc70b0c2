//! Ending every process a run started, when there is no PID namespace to
//! end them for us. The helper is the run's child subreaper: whatever a tool
//! started — in its own session (`setsid`), detached (`nohup … &`) — is
//! re-parented to it when its parent dies, never to the system's init. After
//! the agent exits the helper kills its children, collects the orphans they
//! leave, and repeats until it has no child left.

use std::time::{Duration, Instant};

/// Makes the calling process the subreaper of everything it starts.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// SIGKILLs every descendant until none is left (bounded: a tree that keeps
/// forking faster than it is killed is given up after a few seconds).
pub fn kill_descendants() {
    let me = std::process::id();
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let children = children_of(me);
        for pid in &children {
            // SAFETY: kill takes plain integers.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        reap_all();
        if children.is_empty() && !has_children() || Instant::now() >= end {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Collects every exited child without blocking.
pub fn reap_all() {
    // SAFETY: waitpid with a null status pointer writes nothing.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
}

fn has_children() -> bool {
    // SAFETY: as above; WNOHANG|__WALL only probes.
    let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL) };
    !(r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Processes whose parent is `parent`, read from `/proc/<pid>/stat`.
fn children_of(parent: u32) -> Vec<libc::pid_t> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| ppid(*pid) == Some(parent))
        .collect()
}

fn ppid(pid: libc::pid_t) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_reads_past_a_command_name_with_parentheses() {
        let me = std::process::id() as libc::pid_t;
        // SAFETY: getppid has no preconditions.
        let parent = unsafe { libc::getppid() } as u32;
        assert_eq!(ppid(me), Some(parent));
    }
}
