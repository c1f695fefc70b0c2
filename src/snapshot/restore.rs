//! Reading a stored snapshot back: one file's bytes (rerun's diffs of a
//! body the cassette did not keep), every file (the privacy scan), or the
//! whole tree into a work root (`rerun --from-turn`).
//!
//! An archive is untrusted (the store may sit in a pull request): paths are
//! checked plain and relative ([`super::archive::checked_path`]), symlinks
//! are created only after every file and directory (so nothing is ever
//! written through one), and a file is read into memory only under a cap.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::archive::{self, EntryKind, ReadError};
use super::{Ref, Store};

/// Why a snapshot could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(transparent)]
    Check(#[from] super::store::CheckError),
    #[error("snapshot {reference}: {source}")]
    Read { reference: Ref, source: ReadError },
    #[error("restore snapshot {reference} into `{}`: {source}", dir.display())]
    Write {
        reference: Ref,
        dir: PathBuf,
        source: io::Error,
    },
}

/// One archived file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBody {
    /// Work-root-relative, `/`-separated.
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The bytes of `path` (work-root-relative) in snapshot `reference`
/// (`Ok(None)`: not in it, or larger than `cap`).
pub fn file(
    store: &Store,
    reference: &Ref,
    path: &str,
    cap: u64,
) -> Result<Option<Vec<u8>>, RestoreError> {
    let mut found = None;
    let want = Path::new(path);
    read(store, reference, |item| {
        if item.path != want {
            return Ok(true);
        }
        if matches!(item.kind, EntryKind::File { .. }) && item.size <= cap {
            found = Some(body(item.body, item.size)?);
        }
        Ok(false)
    })?;
    Ok(found)
}

/// The files of `cassette`'s final snapshot (its run-end checkpoint), by
/// work-root-relative path, each up to `cap` bytes (`None`: no checkpoint,
/// the blob not in the store, no such file, or larger). The caller checks
/// the bytes against the manifest's sha256.
pub fn final_state_files(
    cassette: &crate::cassette::Cassette,
    cap: u64,
) -> impl Fn(&str) -> Option<Vec<u8>> + use<> {
    let source: Option<(Store, Ref)> = (|| {
        let checkpoints = super::Checkpoints::of(&cassette.doc).ok()??;
        let reference = checkpoints.final_state()?.parsed().ok()?;
        Some((Store::of_cassette(&cassette.path), reference))
    })();
    move |path| {
        let (store, reference) = source.as_ref()?;
        file(store, reference, path, cap).ok().flatten()
    }
}

/// Calls `each` with every regular file of the snapshot up to `cap` bytes
/// (one in memory at a time), in archive order; the paths of the larger
/// ones.
pub fn each_file(
    store: &Store,
    reference: &Ref,
    cap: u64,
    mut each: impl FnMut(FileBody),
) -> Result<Vec<String>, RestoreError> {
    let mut over = Vec::new();
    read(store, reference, |item| {
        if let EntryKind::File { .. } = item.kind {
            let path = item.path.to_string_lossy().into_owned();
            if item.size > cap {
                over.push(path);
            } else {
                let bytes = body(item.body, item.size)?;
                each(FileBody { path, bytes });
            }
        }
        Ok(true)
    })?;
    Ok(over)
}

/// Replaces each of `roots` under `work_root` with its content in the
/// snapshot (a root the snapshot does not hold ends up absent), after
/// checking the blob against its ref; an entry outside `roots` is refused.
pub fn into_work_root(
    store: &Store,
    reference: &Ref,
    work_root: &Path,
    roots: &[String],
) -> Result<(), RestoreError> {
    let write_err = |source| RestoreError::Write {
        reference: reference.clone(),
        dir: work_root.to_path_buf(),
        source,
    };
    for root in roots {
        match fs::remove_dir_all(work_root.join(root)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(write_err(e)),
            _ => {}
        }
    }
    store.check(reference)?;
    let mut links = Vec::new();
    read(store, reference, |item| {
        let top = item.path.components().next().map(|c| c.as_os_str());
        if !roots.iter().any(|r| top == Some(std::ffi::OsStr::new(r))) {
            return Err(ReadError::UnsafePath(format!(
                "{} (outside the snapshot's roots {roots:?})",
                item.path.display()
            )));
        }
        let dest = work_root.join(&item.path);
        let io_err = ReadError::Io;
        match item.kind {
            EntryKind::Dir => fs::create_dir_all(&dest).map_err(io_err)?,
            EntryKind::File { executable } => write_file(&dest, item.body, executable)?,
            EntryKind::Symlink { target } => links.push((dest, target)),
        }
        Ok(true)
    })?;
    for (dest, target) in links {
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(write_err)?;
        }
        std::os::unix::fs::symlink(&target, &dest).map_err(write_err)?;
    }
    Ok(())
}

fn write_file(dest: &Path, body: &mut dyn Read, executable: bool) -> Result<(), ReadError> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = dest.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut file = fs::File::create(dest)?;
    io::copy(body, &mut file)?;
    let mode = if executable { 0o755 } else { 0o644 };
    file.set_permissions(fs::Permissions::from_mode(mode & !crate::atomic::umask()))?;
    Ok(())
}

fn body(reader: &mut dyn Read, size: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(size.min(1 << 24) as usize);
    reader.take(size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Every entry of the stored snapshot, to `each`.
fn read(
    store: &Store,
    reference: &Ref,
    each: impl FnMut(archive::Item<'_>) -> Result<bool, ReadError>,
) -> Result<(), RestoreError> {
    let tar = store.open(reference)?;
    archive::read_each(tar, each).map_err(|source| RestoreError::Read {
        reference: reference.clone(),
        source,
    })
}
