//! Bounded work inside a confined run: the resource limits the kernel
//! offers without root, set on the agent before it is executed (so every
//! process of the run inherits them, hard limits included: with every
//! capability dropped nothing raises them again).
//!
//! - `RLIMIT_NPROC`: processes and threads. The kernel counts it per user
//!   and per user namespace, so it is set only in the run's own user
//!   namespace (there it counts the run alone; outside, it would count every
//!   process of the user). uid 0 is exempt from it: the PID namespace's own
//!   `pid_max` (Linux 6.14+) bounds a root run's processes instead.
//! - `RLIMIT_DATA`: each process's private writable memory. Not
//!   `RLIMIT_AS`: V8 and JavaScriptCore reserve tens of GiB of address space
//!   they never touch, which `RLIMIT_AS` counts and `RLIMIT_DATA` does not.
//!   It bounds a process, not the tree (only a cgroup, which needs root or
//!   systemd's delegation, bounds the sum).
//! - `RLIMIT_FSIZE` (one file's size), `RLIMIT_NOFILE` (descriptors per
//!   process), `RLIMIT_CORE` = 0 (no core dump of the agent's memory).

use serde::{Deserialize, Serialize};

/// Processes and threads of a run (its user namespace's count).
pub const NPROC: u64 = 4096;
/// The PID namespace's `pid_max`: at most this many processes at once.
pub const PID_MAX: u64 = 4096;
/// The largest file a run may write.
pub const FSIZE: u64 = 1 << 30;
/// Descriptors per process.
pub const NOFILE: u64 = 8192;
/// Private writable memory per process, MiB, unless [`MEMORY_ENV`] says.
pub const DEFAULT_MEMORY_MIB: u64 = 4096;
/// The operator's setting of the per-process memory limit (MiB).
pub const MEMORY_ENV: &str = "REEL_SANDBOX_MEMORY_MIB";

/// The limits of one run, decided on reel's side (the operator's
/// environment does not reach the helper).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// `RLIMIT_NPROC`, when the run has its own user namespace.
    pub nproc: Option<u64>,
    pub data: u64,
    pub fsize: u64,
    pub nofile: u64,
}

impl Limits {
    /// The limits of a run with (or without) its own user namespace; an
    /// unreadable [`MEMORY_ENV`] is an error naming it.
    pub fn for_run(user_namespace: bool) -> Result<Limits, String> {
        Ok(Limits {
            nproc: user_namespace.then_some(NPROC),
            data: memory_mib()? << 20,
            fsize: FSIZE,
            nofile: NOFILE,
        })
    }

    /// Sets every limit, soft and hard, never above the current hard one.
    /// Only system calls: this runs between fork and exec.
    pub fn apply(&self) -> std::io::Result<()> {
        let mut set = vec![
            (libc::RLIMIT_DATA, self.data),
            (libc::RLIMIT_FSIZE, self.fsize),
            (libc::RLIMIT_NOFILE, self.nofile),
            (libc::RLIMIT_CORE, 0),
        ];
        if let Some(n) = self.nproc {
            set.push((libc::RLIMIT_NPROC, n));
        }
        for (resource, value) in set {
            let mut now = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit/setrlimit read and write a local struct.
            unsafe {
                if libc::getrlimit(resource, &mut now) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let v = value.min(now.rlim_max);
                let new = libc::rlimit {
                    rlim_cur: v,
                    rlim_max: v,
                };
                if libc::setrlimit(resource, &new) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }

    /// What the layers line says: `nproc 4096, data 4 GiB, fsize 1 GiB, …`.
    pub fn labels(&self, pid_max: bool) -> Vec<String> {
        let mut out = Vec::new();
        match self.nproc {
            Some(n) => out.push(format!("nproc {n}")),
            None => out.push("nproc unset (no user namespace)".into()),
        }
        if pid_max {
            out.push(format!("pid_max {PID_MAX}"));
        }
        out.push(format!("data {} per process", size(self.data)));
        out.push(format!("fsize {}", size(self.fsize)));
        out.push(format!("nofile {}", self.nofile));
        out.push("core 0".into());
        out
    }
}

/// In the PID namespace's init, with its fresh `/proc`: caps the
/// namespace's `pid_max` (per PID namespace since Linux 6.14; older kernels
/// refuse the write, and the run goes on without it). Whether it holds.
pub fn cap_pids() -> bool {
    std::fs::write("/proc/sys/kernel/pid_max", PID_MAX.to_string()).is_ok()
        && std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .is_ok_and(|v| v.trim() == PID_MAX.to_string())
}

fn memory_mib() -> Result<u64, String> {
    let Some(v) = std::env::var_os(MEMORY_ENV) else {
        return Ok(DEFAULT_MEMORY_MIB);
    };
    v.to_str()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|m| (256..=1 << 30).contains(m))
        .ok_or_else(|| {
            format!(
                "{MEMORY_ENV}={} is not a number of MiB from 256 up (the per-process memory \
                 limit of a run; unset it for {DEFAULT_MEMORY_MIB})",
                v.to_string_lossy()
            )
        })
}

fn size(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_state_each_limit_and_why_nproc_is_missing() {
        let l = Limits {
            nproc: None,
            data: 4 << 30,
            fsize: 1 << 30,
            nofile: 8192,
        };
        assert_eq!(
            l.labels(false),
            [
                "nproc unset (no user namespace)",
                "data 4 GiB per process",
                "fsize 1 GiB",
                "nofile 8192",
                "core 0"
            ]
        );
        let l = Limits::for_run(true).unwrap();
        assert_eq!(l.labels(true)[..2], ["nproc 4096", "pid_max 4096"]);
    }
}
