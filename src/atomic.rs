//! The one atomic file writer. Every command that writes a file the user keeps
//! (cassettes, `--write`, `rehash`, reports) goes through [`write_atomic`].
//!
//! Protocol: write a temp file in the *same directory* (so the rename cannot
//! cross a filesystem), fsync it, rename it over the target, fsync the
//! directory. A crash or `kill -9` at any point leaves either the old file or
//! the complete new one, never a mix; at worst a stray `.reel-tmp-*` file.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Atomically replaces (or creates) `path` with `bytes`, creating parent
/// directories as needed. Keeps the permissions of an existing target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
    if let Ok(meta) = fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
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
}
