//! A [`Policy`] as a Landlock ruleset, built at the kernel's own ABI with
//! every right of that ABI handled (so nothing the kernel can confine is
//! left open), and the last steps before the agent is executed: drop every
//! capability, then restrict.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::Layers;
use super::policy::{Network, Policy};

/// A ruleset ready to be enforced, and the layers it will give.
pub struct Prepared {
    pub ruleset: RulesetCreated,
    pub layers: Layers,
}

/// Builds the ruleset of `policy` at `abi` (the kernel's, as probed).
/// `HardRequirement`: every right asked for is enforced, or this fails —
/// the layers reported are exactly the layers applied.
pub fn prepare(policy: &Policy, abi: u8) -> Result<Prepared, String> {
    // The kernel's own ABI, not a fixed tested one: reel reports the ABI it
    // confined at, and handling every right of it leaves nothing open.
    let abi_v = ABI::from(i32::from(abi));
    let all = AccessFs::from_all(abi_v);
    let read = AccessFs::from_read(abi_v);
    let file = AccessFs::from_file(abi_v);
    let err = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        .map_err(|e| err("handle file access", &e))?;
    let tcp = abi >= 4;
    if tcp {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| err("handle TCP access", &e))?;
    }
    let scopes = abi >= 6;
    if scopes {
        ruleset = ruleset
            .scope(Scope::from_all(abi_v))
            .map_err(|e| err("scope signals and abstract sockets", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| err("create the ruleset", &e))?;
    for path in &policy.read {
        created = add_path(created, path, read, file)?;
    }
    for path in &policy.write {
        created = add_path(created, path, all, file)?;
    }
    // Read and write, terminal ioctls, and listing `/dev/pts`; never create.
    let device = all
        & (AccessFs::ReadFile
            | AccessFs::WriteFile
            | AccessFs::Truncate
            | AccessFs::IoctlDev
            | AccessFs::ReadDir);
    for path in &policy.devices {
        created = add_path(created, path, device, file)?;
    }
    if tcp {
        for port in connect_ports(&policy.network) {
            created = created
                .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
                .map_err(|e| err("allow a loopback port", &e))?;
        }
    }
    Ok(Prepared {
        ruleset: created,
        layers: Layers {
            enabled: true,
            landlock_abi: Some(abi),
            files: true,
            tcp,
            scopes,
            ..Layers::default()
        },
    })
}

fn connect_ports(network: &Network) -> Vec<u16> {
    match network {
        Network::Loopback { ports } | Network::Ports(ports) => ports.clone(),
    }
}

/// Adds a path rule; a path that does not exist here is skipped (the system
/// list names directories some distributions lack). A single file gets only
/// the file rights of `access`.
fn add_path(
    created: RulesetCreated,
    path: &std::path::Path,
    access: landlock::BitFlags<AccessFs>,
    file: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(created);
    };
    let Ok(fd) = PathFd::new(path) else {
        return Ok(created);
    };
    let access = if meta.is_dir() { access } else { access & file };
    created
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("allow `{}`: {e}", path.display()))
}

/// In the agent's process, just before it is executed: no new privileges,
/// every capability dropped (bounding set included, so a uid-0 agent gains
/// none back at exec), then the ruleset enforced. Only system calls: this
/// runs between fork and exec.
pub fn enforce(ruleset: RulesetCreated) -> std::io::Result<()> {
    drop_capabilities()?;
    let status = ruleset.restrict_self().map_err(std::io::Error::other)?;
    if status.ruleset != RulesetStatus::FullyEnforced {
        return Err(std::io::Error::other(
            "the Landlock ruleset was not fully enforced",
        ));
    }
    Ok(())
}

fn drop_capabilities() -> std::io::Result<()> {
    // SAFETY: prctl and capset take plain integers and a pointer to locals.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        // Up to the highest capability the kernel knows (EINVAL past it).
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                // EPERM: not ours to drop (no CAP_SETPCAP): nothing to keep.
                if e.raw_os_error() != Some(libc::EPERM) {
                    return Err(e);
                }
            }
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
        let mut header = Header {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
