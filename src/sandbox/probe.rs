//! What confinement this machine offers: the kernel's Landlock ABI and
//! whether unprivileged user namespaces are allowed.
//!
//! `REEL_SANDBOX_FORCE_UNAVAILABLE=1` makes the probe report nothing, so the
//! fail-closed refusal can be tested on any machine. It can only make reel
//! refuse, never run weaker than the machine allows.
//!
//! `REEL_SANDBOX_NAMESPACES=0` leaves namespaces out on purpose (a machine
//! where they are allowed but misbehave, e.g. a container without a usable
//! `/proc` to mount): Landlock and the subreaper still apply, and every result
//! reports the weaker layers.

use std::path::Path;

/// The probe's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The kernel's Landlock ABI (`None`: not built in, or not enabled).
    pub landlock_abi: Option<u8>,
    /// Unprivileged user namespaces can be created (with PID, mount and
    /// network namespaces inside).
    pub user_namespaces: bool,
    /// Why user namespaces are not available, when they are not.
    pub user_namespaces_note: Option<String>,
    /// The probe was forced to report nothing.
    pub forced: bool,
}

/// The environment variable that forces the probe to report nothing.
pub const FORCE_UNAVAILABLE: &str = "REEL_SANDBOX_FORCE_UNAVAILABLE";

/// The environment variable that leaves namespaces out (`=0`).
pub const NO_NAMESPACES: &str = "REEL_SANDBOX_NAMESPACES";

/// Probes the running kernel.
pub fn probe() -> Probe {
    if std::env::var_os(FORCE_UNAVAILABLE).is_some_and(|v| !v.is_empty() && v != "0") {
        return Probe {
            landlock_abi: None,
            user_namespaces: false,
            user_namespaces_note: Some(format!("{FORCE_UNAVAILABLE} is set")),
            forced: true,
        };
    }
    let opted_out = std::env::var_os(NO_NAMESPACES).is_some_and(|v| v == "0");
    let blocker = if opted_out {
        Some(format!("{NO_NAMESPACES}=0 is set"))
    } else {
        userns_blocker()
    };
    let (user_namespaces, user_namespaces_note) = match blocker {
        None => (true, None),
        Some(why) => (false, Some(why)),
    };
    Probe {
        landlock_abi: landlock_abi(),
        user_namespaces,
        user_namespaces_note,
        forced: false,
    }
}

impl Probe {
    /// Whether any file confinement is possible.
    pub fn can_confine_files(&self) -> bool {
        self.landlock_abi.is_some()
    }

    /// What is missing, for a refusal.
    pub fn missing(&self) -> String {
        let mut missing = vec!["Landlock is not enabled in this kernel".to_owned()];
        if !self.user_namespaces {
            missing.push(format!(
                "user namespaces are not available ({})",
                self.user_namespaces_note.as_deref().unwrap_or("unknown")
            ));
        }
        missing.join("; ")
    }
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the
/// ABI version, or an error when Landlock is absent or disabled. (The
/// `landlock` crate keeps its own probe private, on purpose: it wants rules
/// written against a tested ABI. reel reports the ABI and builds its rules at
/// exactly that ABI, so it asks the kernel itself.)
fn landlock_abi() -> Option<u8> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute and size 0 the kernel reads no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then(|| v.min(u8::MAX as libc::c_long) as u8)
}

/// Why unprivileged user namespaces cannot be used, if a sysctl says so.
/// (The helper still tries; a failure there is reported, never hidden.)
fn userns_blocker() -> Option<String> {
    let read = |p: &str| std::fs::read_to_string(Path::new(p)).ok();
    if read("/proc/self/ns/user").is_none() && !Path::new("/proc/self/ns/user").exists() {
        return Some("the kernel has no user namespaces".into());
    }
    if read("/proc/sys/user/max_user_namespaces").is_some_and(|v| v.trim() == "0") {
        return Some("sysctl user.max_user_namespaces = 0".into());
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").is_some_and(|v| v.trim() == "0") {
        return Some("sysctl kernel.unprivileged_userns_clone = 0".into());
    }
    // Ubuntu 23.10+: AppArmor lets the namespace be created but strips it of
    // capabilities, which is as good as none for us.
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").is_some_and(|v| v.trim() == "1")
        // SAFETY: geteuid has no preconditions.
        && unsafe { libc::geteuid() } != 0
    {
        return Some(
            "sysctl kernel.apparmor_restrict_unprivileged_userns = 1 (set it to 0: \
             `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`)"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_probe_reports_nothing_and_says_why() {
        // The variable is read per call; setting it here would race other
        // tests, so the forced branch is exercised through `Probe` directly.
        let p = Probe {
            landlock_abi: None,
            user_namespaces: false,
            user_namespaces_note: Some(format!("{FORCE_UNAVAILABLE} is set")),
            forced: true,
        };
        assert!(!p.can_confine_files());
        assert!(p.missing().contains("Landlock is not enabled"));
        assert!(p.missing().contains(FORCE_UNAVAILABLE));
    }
}
