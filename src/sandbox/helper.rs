//! The helper side of a confined start: `reel __sandbox SPEC -- PROGRAM
//! ARGS…`, executed by reel in the agent's place. It enters the namespaces
//! (a PID namespace takes effect for children, so it forks once and the
//! child becomes the namespace's init), brings up loopback and the model
//! relay, starts the agent with every capability dropped and the Landlock
//! ruleset enforced between fork and exec, reports the layers on fd 3, and
//! waits. When the agent exits, everything it started ends: the PID
//! namespace's init exits (the kernel kills the rest), or the subreaper kills
//! the tree.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::launch::{STATUS_FD, Spec, Status};
use super::{reap, relay, rules};

/// The first argument that makes reel the sandbox helper.
pub const HELPER_ARG: &str = "__sandbox";

/// Exit code of a helper that refused (nothing ran).
const REFUSED: i32 = 125;

/// Runs the helper; never returns.
pub fn helper_main(args: &[OsString]) -> ! {
    // SAFETY: fcntl on a descriptor number; a closed one only fails.
    unsafe {
        libc::fcntl(STATUS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let code = match run(args) {
        Ok(code) => code,
        Err(why) => {
            report(&Status::Refused(why));
            REFUSED
        }
    };
    std::process::exit(code)
}

fn run(args: &[OsString]) -> Result<i32, String> {
    let (mut spec, program, rest) = parse(args)?;
    // reel itself runs inside: the tool wrapper, reel's MCP servers.
    let exe = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    spec.policy.read.extend(exe.iter().cloned());
    let network_ns = spec.relay_dir.is_some();
    let (namespaces, reaper, init) = if spec.namespaces {
        let (names, init) = enter_namespaces(network_ns, &spec)?;
        (names, "pid-namespace", init)
    } else {
        reap::become_subreaper().map_err(|e| format!("become the run's subreaper: {e}"))?;
        (Vec::new(), "subreaper", InitFacts::default())
    };
    if init.private_terminals {
        let terminals = super::mounts::PRIVATE_TERMINALS.iter().map(PathBuf::from);
        spec.policy.devices.extend(terminals);
    }
    let listeners = listen_inside(&spec, network_ns)?;
    let prepared = rules::prepare(&spec.policy, spec.landlock_abi)?;
    // An architecture seccompiler does not know runs without the filter,
    // and says so in the layers.
    let filter = super::seccomp::program().ok();
    let prefix = exe.as_deref().and_then(super::tool::shell_prefix);
    on_termination();
    let mut command = std::process::Command::new(&program);
    command.args(&rest);
    if let Some(prefix) = &prefix {
        command.env("CLAUDE_CODE_SHELL_PREFIX", prefix);
        command.env(super::TOOL_ENV, "1");
    }
    last_steps(
        &mut command,
        prepared.ruleset,
        spec.limits.clone(),
        filter.clone(),
    );
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            report(&not_started(&program, e));
            return Ok(REFUSED);
        }
    };
    let mut layers = prepared.layers;
    layers.read_only_outside_run = !namespaces.is_empty();
    layers.namespaces = namespaces;
    layers.reaper = reaper.into();
    layers.capabilities_dropped = true;
    layers.terminal = if init.private_terminals {
        "private"
    } else {
        "none"
    }
    .into();
    layers.seccomp = filter.is_some();
    layers.tool_domain = prefix.is_some();
    layers.limits = spec.limits.labels(init.pid_max);
    report(&Status::Started(layers));
    if let Some(dir) = &spec.relay_dir {
        for (port, listener) in listeners {
            relay::serve_inside(listener, dir.join(relay::socket_name(port)));
        }
    }
    let code = wait_for(child.id() as libc::pid_t, reaper == "pid-namespace");
    if reaper == "subreaper" {
        reap::kill_descendants();
    }
    Ok(code)
}

/// The agent's last steps between fork and exec: a new session (no
/// controlling terminal, whatever reel had), the resource limits, every
/// capability dropped and the Landlock ruleset enforced, then the seccomp
/// filter.
fn last_steps(
    command: &mut std::process::Command,
    ruleset: landlock::RulesetCreated,
    limits: super::limits::Limits,
    filter: Option<seccompiler::BpfProgram>,
) {
    let ruleset = Mutex::new(Some(ruleset));
    // SAFETY: the closure only takes the ruleset out of its mutex (never
    // contended: this process has one thread) and makes system calls.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            limits.apply()?;
            let ruleset = ruleset.lock().ok().and_then(|mut r| r.take());
            rules::enforce(ruleset.ok_or_else(|| std::io::Error::other("no ruleset"))?)?;
            match &filter {
                Some(program) => super::seccomp::install(program),
                None => Ok(()),
            }
        });
    }
}

/// The model's and MCP fronts' ports, listened on inside the network
/// namespace (relayed to the host's).
fn listen_inside(
    spec: &Spec,
    network_ns: bool,
) -> Result<Vec<(u16, std::net::TcpListener)>, String> {
    match (&spec.policy.network, network_ns) {
        (super::Network::Loopback { ports }, true) => ports
            .iter()
            .map(|&port| {
                std::net::TcpListener::bind(("127.0.0.1", port))
                    .map(|l| (port, l))
                    .map_err(|e| format!("listen on port {port} inside the namespace: {e}"))
            })
            .collect(),
        _ => Ok(Vec::new()),
    }
}

/// Why the agent's program did not start.
fn not_started(program: &OsString, e: std::io::Error) -> Status {
    let program = PathBuf::from(program);
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            Status::AgentNotStarted(format!("spawn `{}`: {e}", program.display()))
        }
        // Landlock refuses to execute what the policy does not name.
        std::io::ErrorKind::PermissionDenied => Status::AgentNotStarted(format!(
            "spawn `{}`: {e} (the sandbox allows executing only system, toolchain and \
             agent paths: name its directory in REEL_SANDBOX_READ or reel.toml's \
             `[sandbox] read`)",
            program.display()
        )),
        _ => Status::Refused(format!("start `{}` confined: {e}", program.display())),
    }
}

/// What the namespace's init set up beyond the namespaces themselves.
#[derive(Default)]
struct InitFacts {
    /// A private devpts instance over `/dev/pts` and `/dev/ptmx`.
    private_terminals: bool,
    /// The PID namespace's `pid_max` is capped.
    pid_max: bool,
}

fn parse(args: &[OsString]) -> Result<(Spec, OsString, Vec<OsString>), String> {
    let spec = args
        .get(2)
        .and_then(|s| s.to_str())
        .ok_or("the sandbox helper was started without its policy")?;
    let spec: Spec = serde_json::from_str(spec).map_err(|e| format!("read the policy: {e}"))?;
    if args.get(3).is_none_or(|a| a != "--") || args.len() < 5 {
        return Err("the sandbox helper was started without a program".into());
    }
    Ok((spec, args[4].clone(), args[5..].to_vec()))
}

/// Writes the report and closes the status descriptor.
fn report(status: &Status) {
    // SAFETY: fd 3 is the status pipe reel handed over; owned here alone.
    let mut file = unsafe { std::fs::File::from_raw_fd(STATUS_FD) };
    let line = serde_json::to_string(status).unwrap_or_default();
    let _ = writeln!(file, "{line}");
}

/// Enters user, PID and mount namespaces (and a network namespace with
/// loopback only), mounts a private `/proc`, and returns in the namespace's
/// init. The parent stays outside, waits for it, and exits with its code.
fn enter_namespaces(network: bool, spec: &Spec) -> Result<(Vec<String>, InitFacts), String> {
    // SAFETY: getuid/getgid have no preconditions.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare takes flags; this process has a single thread.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(format!(
            "enter user namespaces: {} (the probe found them allowed)",
            std::io::Error::last_os_error()
        ));
    }
    let write = |file: &str, text: String| std::fs::write(file, text);
    let _ = write("/proc/self/setgroups", "deny".into());
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))
        .and_then(|()| write("/proc/self/gid_map", format!("{gid} {gid} 1")))
        .map_err(|e| format!("map the user namespace's ids: {e}"))?;
    // SAFETY: fork in a single-threaded process.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            let facts = inside_init(network, spec)?;
            let mut names = vec!["user".into(), "pid".into(), "mount".into()];
            if network {
                names.push("network".into());
            }
            Ok((names, facts))
        }
        child => wait_outside(child),
    }
}

/// In the namespace's init: die with the outer helper, private mounts, a
/// `/proc` of this PID namespace only (its `pid_max` capped), a private
/// devpts instance, every mount read-only but the run directory's (Landlock
/// has no right for `chmod`, `chown` or timestamps; a read-only mount
/// refuses them), loopback up.
fn inside_init(network: bool, spec: &Spec) -> Result<InitFacts, String> {
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: prctl and mount take integers and NUL-terminated literals.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(os("make mounts private"));
        }
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(os("mount a private /proc"));
        }
    }
    let facts = InitFacts {
        pid_max: super::limits::cap_pids(),
        private_terminals: super::mounts::private_devpts().is_ok(),
    };
    let mut keep: Vec<PathBuf> = spec.policy.write.clone();
    keep.extend(spec.policy.read.iter().cloned());
    keep.extend(spec.relay_dir.iter().cloned());
    super::mounts::hide_shared_dirs(&keep)?;
    read_only_but(&spec.policy.write)?;
    if network {
        loopback_up().map_err(|e| format!("bring up loopback: {e}"))?;
    }
    Ok(facts)
}

/// Binds each writable directory onto itself (a mount of its own), turns
/// every mount read-only, then the writable ones back read-write.
fn read_only_but(writable: &[PathBuf]) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|e| e.to_string())
    };
    let mut dirs = Vec::new();
    for dir in writable {
        let dir = c(dir)?;
        // SAFETY: mount with NUL-terminated paths and no data.
        if unsafe {
            libc::mount(
                dir.as_ptr(),
                dir.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(format!(
                "bind the run directory: {}",
                std::io::Error::last_os_error()
            ));
        }
        dirs.push(dir);
    }
    set_read_only(c"/", true).map_err(|e| format!("make mounts read-only: {e}"))?;
    for dir in &dirs {
        set_read_only(dir, false).map_err(|e| format!("make the run directory writable: {e}"))?;
    }
    Ok(())
}

/// `mount_setattr(path, AT_RECURSIVE, {RDONLY set or cleared})`.
fn set_read_only(path: &std::ffi::CStr, read_only: bool) -> std::io::Result<()> {
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the kernel reads `size_of::<MountAttr>()` bytes of a local.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr,
            size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The outer helper: waits for the namespace's init and exits with its code
/// (on SIGTERM it kills the init, which ends the whole namespace).
fn wait_outside(init: libc::pid_t) -> ! {
    // The init alone reports; our copy of the status pipe must close.
    // SAFETY: closing a descriptor number.
    unsafe {
        libc::close(STATUS_FD);
    }
    on_termination();
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        let r = unsafe { libc::waitpid(init, &mut status, 0) };
        if r == init {
            std::process::exit(exit_code(status));
        }
        if TERMINATED.load(Ordering::SeqCst) {
            // SAFETY: kill takes integers.
            unsafe {
                libc::kill(init, libc::SIGKILL);
            }
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            std::process::exit(REFUSED);
        }
    }
}

/// Waits for the agent, collecting orphans meanwhile. On SIGTERM (reel's
/// kill ladder) everything of the run is killed at once.
fn wait_for(agent: libc::pid_t, pid_namespace: bool) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r == agent {
            return exit_code(status);
        }
        if TERMINATED.load(Ordering::SeqCst) {
            if pid_namespace {
                // SAFETY: from a namespace's init, kill(-1) reaches every
                // other process of the namespace.
                unsafe {
                    libc::kill(-1, libc::SIGKILL);
                }
            } else {
                reap::kill_descendants();
            }
            return 128 + libc::SIGTERM;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            return REFUSED;
        }
    }
}

fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    }
}

static TERMINATED: AtomicBool = AtomicBool::new(false);

extern "C" fn note_termination(_: libc::c_int) {
    TERMINATED.store(true, Ordering::SeqCst);
}

/// SIGTERM, SIGINT and SIGHUP interrupt the wait (no `SA_RESTART`). A
/// handler, not `SIG_IGN`: handlers reset at exec, so the agent keeps the
/// default actions; and a namespace's init receives only handled signals.
fn on_termination() {
    // SAFETY: a zeroed sigaction with a plain handler that only stores an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = note_termination as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// `ip link set lo up`, by ioctl (no `ip` binary needed).
fn loopback_up() -> std::io::Result<()> {
    #[repr(C)]
    struct IfReq {
        name: [u8; libc::IFNAMSIZ],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: 0,
        _pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    // SAFETY: a socket used only for two ioctls on a local struct, then closed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut r = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        if r == 0 {
            req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            r = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        let e = std::io::Error::last_os_error();
        libc::close(fd);
        if r != 0 {
            return Err(e);
        }
    }
    Ok(())
}
