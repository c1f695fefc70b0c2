//! The seccomp filter every process of a confined run inherits: no tool can
//! drive another process of the run or a terminal. Refused with `EPERM`:
//!
//! - `ptrace` (a debugger attached to the agent could make it call
//!   `system()` or write protocol lines), `process_vm_readv` /
//!   `process_vm_writev` (another process's memory), `pidfd_getfd` (another
//!   process's descriptors, such as the agent's stdout);
//! - `ioctl(TIOCSTI)` (typing into a terminal's input) and
//!   `ioctl(TIOCLINUX)` (the Linux console's selection paste).
//!
//! Built with `seccompiler` (rust-vmm, Firecracker's filter compiler) rather
//! than hand-written BPF. Its filter kills a process calling through another
//! architecture's ABI (i386 `int 0x80`); the x32 numbers of the same calls
//! are listed too, for kernels built with x32. `/proc/<pid>/fd` and
//! `/proc/<pid>/mem` are paths, which seccomp cannot see: Landlock covers
//! them (`super::tool`, and no write right beneath `/proc`).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// `ioctl` requests refused (the second argument, compared on its low 32
/// bits as the kernel reads an `unsigned int`).
/// (`libc`'s request type is `c_ulong` on glibc, `c_int` elsewhere.)
#[allow(clippy::unnecessary_cast)]
const IOCTLS: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The compiled filter of this machine's architecture.
pub fn program() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("seccomp on {}: {e}", std::env::consts::ARCH))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in whole_calls() {
        // An empty rule list matches the call whatever its arguments.
        rules.insert(nr, Vec::new());
    }
    for nr in ioctl_numbers() {
        let mut per_request = Vec::new();
        for request in IOCTLS {
            let cond = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .map_err(|e| format!("seccomp ioctl condition: {e}"))?;
            per_request.push(
                SeccompRule::new(vec![cond]).map_err(|e| format!("seccomp ioctl rule: {e}"))?,
            );
        }
        rules.insert(nr, per_request);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("build the seccomp filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("compile the seccomp filter: {e}"))
}

/// Installs `program` on the calling thread (sets `no_new_privs` first).
/// Only system calls: this runs between fork and exec.
pub fn install(program: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(program).map_err(std::io::Error::other)
}

/// The x32 ABI's bit: the same architecture token, other numbers.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;

fn whole_calls() -> Vec<i64> {
    let native = [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
    ];
    #[allow(unused_mut)]
    let mut out: Vec<i64> = native.to_vec();
    // x32's own numbers for ptrace and process_vm_* (pidfd_getfd is shared).
    #[cfg(target_arch = "x86_64")]
    out.extend([X32 | 521, X32 | 539, X32 | 540, X32 | libc::SYS_pidfd_getfd]);
    out
}

fn ioctl_numbers() -> Vec<i64> {
    #[allow(unused_mut)]
    let mut out = vec![libc::SYS_ioctl];
    #[cfg(target_arch = "x86_64")]
    out.push(X32 | 514);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let program = program().unwrap();
        assert!(program.len() > 10, "{} instructions", program.len());
    }

    /// In a forked child (the filter cannot be removed): ptrace and TIOCSTI
    /// are refused with EPERM, an ordinary ioctl still works.
    #[test]
    fn a_filtered_process_cannot_ptrace_or_type_into_a_terminal() {
        let program = program().unwrap();
        // SAFETY: the child only makes system calls and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = unsafe {
                if install(&program).is_err() {
                    libc::_exit(10);
                }
                let ptrace = libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
                let ptrace_errno = *libc::__errno_location();
                let c = b'x';
                let sti = libc::ioctl(0, libc::TIOCSTI, &c);
                let sti_errno = *libc::__errno_location();
                // An unfiltered request on the same call: ENOTTY or success, never EPERM.
                let mut ws: libc::winsize = std::mem::zeroed();
                *libc::__errno_location() = 0;
                libc::ioctl(0, libc::TIOCGWINSZ, &mut ws);
                let other_errno = *libc::__errno_location();
                match (ptrace, ptrace_errno, sti, sti_errno, other_errno) {
                    (-1, libc::EPERM, -1, libc::EPERM, e) if e != libc::EPERM => 0,
                    _ => 11,
                }
            };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waitpid writes into a local.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "status {status}");
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }
}
