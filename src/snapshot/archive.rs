//! The canonical tar stream of a workspace, and reading one back.
//!
//! Canonical means the same content gives the same bytes on any machine:
//! entries sorted by path bytes, GNU headers with mtime 0, uid/gid 0 and no
//! owner names, modes normalised (`0755` for directories and executable
//! files, `0644` for other files, `0777` for symlinks). A regular file is
//! archived by content (a hard link is just another file); FIFOs, sockets
//! and devices are left out. Nothing here reads the clock, the umask or the
//! owner. The `tar` crate writes the format (GNU long names included); only
//! the choice of headers is ours.
//!
//! Reading is for untrusted archives: every path must be relative with plain
//! components, and an entry that is not a file, directory or symlink is an
//! error.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// Bounds on one snapshot: the agent shapes the tree, reel pays for it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Content bytes in all (regular files' sizes summed).
    pub max_bytes: u64,
    /// Entries in all.
    pub max_entries: usize,
    /// Directory levels below the workspace.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bytes: 1 << 30,
            max_entries: 100_000,
            max_depth: 128,
        }
    }
}

/// What was archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// SHA-256 of the tar stream.
    pub digest: [u8; 32],
    /// The tar stream's length.
    pub tar_bytes: u64,
    /// Regular files archived.
    pub files: u64,
    /// Their content bytes.
    pub content_bytes: u64,
    /// A file changed size while it was read (the snapshot is fuzzy).
    pub changed: bool,
}

/// Why a workspace could not be archived.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("walk `{path}`: {source}")]
    Walk { path: PathBuf, source: io::Error },
    #[error(
        "the workspace holds {found} {what}, over the snapshot limit of {limit}; no snapshot taken"
    )]
    TooLarge {
        what: &'static str,
        found: u64,
        limit: u64,
    },
    #[error("write the archive: {0}")]
    Write(#[from] io::Error),
}

/// One entry of the canonical stream, before it is written.
#[derive(Debug)]
enum Kind {
    Dir,
    File { size: u64, executable: bool },
    Symlink { target: PathBuf },
}

#[derive(Debug)]
struct Entry {
    /// Relative to the workspace, `/`-separated.
    rel: PathBuf,
    kind: Kind,
}

/// Writes the canonical tar stream of `roots` (top-level names under
/// `workspace`; a missing one is left out) to `out`, hashing as it goes.
pub fn write<W: Write>(
    workspace: &Path,
    roots: &[String],
    out: W,
    limits: &Limits,
) -> Result<(Archived, W), ArchiveError> {
    let entries = collect(workspace, roots, limits)?;
    let mut builder = tar::Builder::new(Hashing::new(out));
    let mut archived = Archived {
        digest: [0; 32],
        tar_bytes: 0,
        files: 0,
        content_bytes: 0,
        changed: false,
    };
    for entry in &entries {
        append(&mut builder, workspace, entry, &mut archived)?;
    }
    let hashing = builder.into_inner()?;
    archived.tar_bytes = hashing.bytes;
    archived.digest = hashing.hasher.finalize().into();
    Ok((archived, hashing.inner))
}

/// Every entry under the roots, sorted by path bytes, within the limits.
fn collect(
    workspace: &Path,
    roots: &[String],
    limits: &Limits,
) -> Result<Vec<Entry>, ArchiveError> {
    let mut entries = Vec::new();
    let mut bytes = 0u64;
    for root in roots {
        let top = workspace.join(root);
        if fs::symlink_metadata(&top).is_err() {
            continue;
        }
        let walk = walkdir::WalkDir::new(&top)
            .follow_links(false)
            .max_depth(limits.max_depth);
        for item in walk {
            let item = item.map_err(|e| ArchiveError::Walk {
                path: e.path().unwrap_or(&top).to_path_buf(),
                source: e.into(),
            })?;
            let Some(entry) = entry_of(workspace, item.path())? else {
                continue;
            };
            if let Kind::File { size, .. } = entry.kind {
                bytes += size;
            }
            entries.push(entry);
            over(entries.len() as u64, limits.max_entries as u64, "entries")?;
            over(bytes, limits.max_bytes, "content bytes")?;
        }
    }
    entries.sort_by(|a, b| a.rel.as_os_str().cmp(b.rel.as_os_str()));
    entries.dedup_by(|a, b| a.rel == b.rel);
    Ok(entries)
}

fn over(found: u64, limit: u64, what: &'static str) -> Result<(), ArchiveError> {
    if found > limit {
        return Err(ArchiveError::TooLarge { what, found, limit });
    }
    Ok(())
}

/// The entry of `path` (`None`: a FIFO, socket or device, left out).
fn entry_of(workspace: &Path, path: &Path) -> Result<Option<Entry>, ArchiveError> {
    let walk_err = |source| ArchiveError::Walk {
        path: path.to_path_buf(),
        source,
    };
    let meta = fs::symlink_metadata(path).map_err(walk_err)?;
    let rel = path.strip_prefix(workspace).unwrap_or(path).to_path_buf();
    let kind = if meta.is_dir() {
        Kind::Dir
    } else if meta.is_file() {
        Kind::File {
            size: meta.len(),
            executable: meta.permissions().mode() & 0o111 != 0,
        }
    } else if meta.file_type().is_symlink() {
        Kind::Symlink {
            target: fs::read_link(path).map_err(walk_err)?,
        }
    } else {
        return Ok(None);
    };
    Ok(Some(Entry { rel, kind }))
}

/// One entry with its canonical header.
fn append<W: Write>(
    builder: &mut tar::Builder<W>,
    workspace: &Path,
    entry: &Entry,
    archived: &mut Archived,
) -> io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    match &entry.kind {
        Kind::Dir => {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            builder.append_data(&mut header, &entry.rel, io::empty())
        }
        Kind::Symlink { target } => {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            builder.append_link(&mut header, &entry.rel, target)
        }
        Kind::File { size, executable } => {
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if *executable { 0o755 } else { 0o644 });
            header.set_size(*size);
            let file = fs::File::open(workspace.join(&entry.rel))?;
            let mut body = Exact::new(file, *size);
            builder.append_data(&mut header, &entry.rel, &mut body)?;
            archived.files += 1;
            archived.content_bytes += size;
            archived.changed |= body.changed;
            Ok(())
        }
    }
}

/// Exactly `size` bytes of a file that may change while it is read: cut
/// when it grew, zero-padded when it shrank (the header already promised
/// `size`), and either way `changed`.
struct Exact<R> {
    inner: R,
    left: u64,
    changed: bool,
}

impl<R: Read> Exact<R> {
    fn new(inner: R, size: u64) -> Exact<R> {
        Exact {
            inner,
            left: size,
            changed: false,
        }
    }
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            let mut probe = [0u8; 1];
            if !self.changed && self.inner.read(&mut probe)? > 0 {
                self.changed = true;
            }
            return Ok(0);
        }
        let want = buf.len().min(self.left as usize);
        let mut n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            self.changed = true;
            buf[..want].fill(0);
            n = want;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W> Hashing<W> {
    fn new(inner: W) -> Hashing<W> {
        Hashing {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// SHA-256 and length of a stream read to its end.
pub fn digest_of<R: Read>(mut reader: R) -> io::Result<([u8; 32], u64)> {
    let mut hashing = Hashing::new(io::sink());
    let bytes = io::copy(&mut reader, &mut hashing)?;
    Ok((hashing.hasher.finalize().into(), bytes))
}

/// What one archived entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File { executable: bool },
    Symlink { target: PathBuf },
}

/// An archived entry as a reader sees it.
pub struct Item<'e> {
    /// Relative, plain components only (checked).
    pub path: PathBuf,
    pub kind: EntryKind,
    /// The content length (files).
    pub size: u64,
    /// The content (files; empty otherwise).
    pub body: &'e mut dyn Read,
}

/// Why an archive could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("read the archive: {0}")]
    Io(#[from] io::Error),
    #[error("archive entry `{0}` is not a plain relative path; the snapshot is refused")]
    UnsafePath(String),
    #[error(
        "archive entry `{path}` is a {kind:?} entry; a snapshot holds files, directories and symlinks only"
    )]
    UnexpectedKind { path: String, kind: tar::EntryType },
}

/// Calls `each` with every entry of the tar stream `tar`, in order, until
/// it answers `false`.
pub fn read_each<R: Read>(
    tar: R,
    mut each: impl FnMut(Item<'_>) -> Result<bool, ReadError>,
) -> Result<(), ReadError> {
    let mut archive = tar::Archive::new(tar);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = checked_path(&entry.path_bytes())?;
        let size = entry.size();
        let kind = match entry.header().entry_type() {
            tar::EntryType::Directory => EntryKind::Dir,
            tar::EntryType::Regular | tar::EntryType::Continuous => EntryKind::File {
                executable: entry.header().mode().unwrap_or(0) & 0o111 != 0,
            },
            tar::EntryType::Symlink => EntryKind::Symlink {
                target: entry
                    .link_name()?
                    .map(|t| t.into_owned())
                    .unwrap_or_default(),
            },
            other => {
                return Err(ReadError::UnexpectedKind {
                    path: path.display().to_string(),
                    kind: other,
                });
            }
        };
        let go_on = each(Item {
            path,
            kind,
            size,
            body: &mut entry,
        })?;
        if !go_on {
            break;
        }
    }
    Ok(())
}

/// A path from an archive: relative, every component a plain name.
pub fn checked_path(bytes: &[u8]) -> Result<PathBuf, ReadError> {
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
    let plain = !bytes.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain || bytes.contains(&0) {
        return Err(ReadError::UnsafePath(
            String::from_utf8_lossy(bytes).chars().take(200).collect(),
        ));
    }
    Ok(path.components().collect())
}
