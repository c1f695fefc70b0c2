//! The one atomic file writer. Every command that writes a file the user keeps
//! (cassettes, `--write`, `rehash`, reports) goes through [`write_atomic`].
//!
//! Protocol: write a temp file in the *same directory* (so the rename cannot
//! cross a filesystem), fsync it, rename it over the target, fsync the
//! directory. A crash or `kill -9` at any point leaves either the old file or
//! the complete new one, never a mix; at worst a stray `.reel-tmp-*` file.
//!
//! Modes: a new file gets `0666 & !umask` (what a plain write gives); a rewrite
//! keeps the existing file's mode.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Atomically replaces (or creates) `path` with `bytes`, creating parent
/// directories as needed. Keeps the permissions of an existing target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, None)
}

/// [`write_atomic`] for a file only its owner may read (`0600` whatever the
/// umask or an earlier file's mode): what holds a credential, such as the
/// agent's MCP config with its servers' headers.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_mode(path, bytes, Some(0o600))
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let file_name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "target has no file name"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.reel-tmp-", file_name.to_string_lossy()))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // The temp file is created 0600; give the result the mode a plain write
    // would: an existing target keeps its own, a new one gets 0666 less the
    // umask.
    match (mode, fs::metadata(path)) {
        // The temp file is already 0600 (tempfile's own mode).
        (Some(_), _) => {}
        (None, Ok(meta)) => tmp.as_file().set_permissions(meta.permissions())?,
        (None, Err(_)) => set_new_file_mode(tmp.as_file())?,
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// `0o666 & !umask`, as `open(O_CREAT, 0666)` would create it.
#[cfg(unix)]
fn set_new_file_mode(file: &fs::File) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(0o666 & !umask()))
}

#[cfg(not(unix))]
fn set_new_file_mode(_file: &fs::File) -> io::Result<()> {
    Ok(())
}

/// The process umask. Linux reports it in `/proc/self/status` (read-only, no
/// race); elsewhere it is read by setting and restoring it, serialised here.
#[cfg(unix)]
pub fn umask() -> u32 {
    if let Ok(status) = fs::read_to_string("/proc/self/status")
        && let Some(mask) = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
    {
        return mask;
    }
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK.lock();
    // SAFETY: umask has no memory-safety preconditions; the old mask is
    // restored at once.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub/x.cassette.json");
        write_atomic(&target, b"old").unwrap();
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(target.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "temp file left behind: {names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_gets_the_umask_mode_and_a_rewrite_keeps_the_old_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.json");
        write_atomic(&target, b"one").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&target), 0o666 & !umask());
        if umask() & 0o066 != 0o066 {
            assert_ne!(mode(&target), 0o600, "not the temp file's private mode");
        }
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&target, b"two").unwrap();
        assert_eq!(mode(&target), 0o640);
        assert_eq!(fs::read(&target).unwrap(), b"two");
    }

    #[cfg(unix)]
    #[test]
    fn the_umask_is_the_process_umask() {
        // SAFETY: reading by set-and-restore, as `umask()`'s fallback does.
        let direct = unsafe {
            let old = libc::umask(0o022);
            libc::umask(old);
            old as u32
        };
        assert_eq!(umask(), direct);
    }
}
