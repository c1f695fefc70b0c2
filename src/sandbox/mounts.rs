//! The shared directories a run never needs, hidden in its mount namespace:
//! an empty tmpfs over `/tmp`, `/var/tmp`, `/run` and `/dev/shm`, with the
//! run's own paths beneath them bound back in place. Landlock (up to ABI 8)
//! does not govern `connect()` on a pathname unix socket; a socket that is
//! not in the namespace cannot be reached (an SSH or GPG agent, a Docker
//! daemon, a session bus, another run's listener).
//!
//! Terminals likewise: a private devpts instance over `/dev/pts`, its own
//! `ptmx` over `/dev/ptmx`, so a run can open new pseudo-terminals but never
//! sees the host's (another terminal of the user, reel's own).

use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Directories covered by an empty tmpfs.
const HIDDEN: &[&str] = &["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// Covers each of [`HIDDEN`] that exists, binding back the paths of `keep`
/// that lie beneath it (opened before the cover, bound through
/// `/proc/self/fd`).
pub fn hide_shared_dirs(keep: &[PathBuf]) -> Result<(), String> {
    for top in HIDDEN.iter().map(Path::new).filter(|t| t.is_dir()) {
        let top = std::fs::canonicalize(top).unwrap_or_else(|_| top.to_owned());
        let mut kept = Vec::new();
        for path in outermost(
            keep.iter()
                .filter(|p| p.starts_with(&top) && p.as_path() != top),
        ) {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            let Ok(file) = std::fs::File::options()
                .read(true)
                .custom_flags(libc::O_PATH)
                .open(path)
            else {
                continue;
            };
            kept.push((path.clone(), meta.is_dir(), file));
        }
        mount_tmpfs(&top).map_err(|e| format!("hide {}: {e}", top.display()))?;
        for (path, is_dir, file) in &kept {
            bind_back(path, *is_dir, file)
                .map_err(|e| format!("bind {} back: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// The devices a run gets with its private devpts instance.
pub const PRIVATE_TERMINALS: &[&str] = &["/dev/ptmx", "/dev/pts"];

/// Mounts a new devpts instance (`newinstance`, `ptmxmode=0666`) over
/// `/dev/pts` and binds its `ptmx` over `/dev/ptmx`. An error leaves the run
/// with no terminal device at all (the helper reports it).
pub fn private_devpts() -> std::io::Result<()> {
    // SAFETY: mount with NUL-terminated strings.
    let r = unsafe {
        libc::mount(
            c"devpts".as_ptr(),
            c"/dev/pts".as_ptr(),
            c"devpts".as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            c"newinstance,ptmxmode=0666,mode=0620".as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above, a bind with no data.
    let r = unsafe {
        libc::mount(
            c"/dev/pts/ptmx".as_ptr(),
            c"/dev/ptmx".as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The paths no other of `paths` encloses: one beneath a kept directory is
/// visible through that directory's bind, and placing it again would create
/// or write through the real tree (a `.bin` symlink to the agent's own
/// binary, say).
fn outermost<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Vec<&'a PathBuf> {
    let mut all: Vec<&PathBuf> = paths.collect();
    all.sort();
    all.dedup();
    let mut out: Vec<&PathBuf> = Vec::new();
    for p in all {
        if !out.iter().any(|o| p.starts_with(o)) {
            out.push(p);
        }
    }
    out
}

fn cstr(p: &Path) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other)
}

fn mount_tmpfs(at: &Path) -> std::io::Result<()> {
    let at = cstr(at)?;
    // SAFETY: mount with NUL-terminated strings.
    let r = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            at.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755,size=16m".as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Places an empty stand-in for `path` in the tmpfs and binds the real one
/// (`file`, opened before the cover) onto it. The stand-in is created new,
/// never opened through what is already there.
fn bind_back(path: &Path, is_dir: bool, file: &std::fs::File) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if is_dir {
        std::fs::create_dir(path)?;
    } else {
        std::fs::File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
    }
    let source = cstr(Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())))?;
    let target = cstr(path)?;
    // SAFETY: mount with NUL-terminated strings and no data.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_outermost_paths_are_placed() {
        let paths: Vec<PathBuf> = [
            "/tmp/x/node_modules/.bin/claude",
            "/tmp/x/node_modules",
            "/tmp/x/node_modules/pkg/bin/claude.exe",
            "/tmp/run",
            "/tmp/runner",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let got: Vec<&PathBuf> = outermost(paths.iter());
        assert_eq!(
            got,
            [
                &PathBuf::from("/tmp/run"),
                &PathBuf::from("/tmp/runner"),
                &PathBuf::from("/tmp/x/node_modules")
            ]
        );
    }
}
