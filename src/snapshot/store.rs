//! The content-addressed store: one gzip file per snapshot,
//! `<store>/sha256/<hex>.tar.gz`, named by the SHA-256 of the canonical tar
//! stream it holds (so a change of deflate implementation never changes a
//! ref; the gzip header is fixed too — mtime 0, no name, OS `unknown` — so
//! the same reel writes the same blob bytes, which git LFS deduplicates).
//!
//! Writing: the archive streams into a temp file beside its final name,
//! which is fsynced, then renamed into place without replacing anything, then
//! the directory is fsynced: a blob is durable before [`Store::put`] returns
//! its ref, and only then may a cassette name it. An existing blob is left
//! untouched (the temp file is dropped): writing it again is a no-op.

use std::fs;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};

use super::Ref;
use super::archive::{self, Archived, Limits};

/// The default store's directory name, beside the cassettes.
pub const DEFAULT_DIR: &str = ".reel-snapshots";
/// The blobs' subdirectory (the digest algorithm).
const BLOBS: &str = "sha256";
/// A blob's file name suffix.
const SUFFIX: &str = ".tar.gz";
/// The gzip level: fixed (the blob bytes depend on it), and fast — level 6
/// measured ~20 MB/s on incompressible outputs (images, zips), level 1 is
/// several times faster for a few percent more on text (docs/benchmarks.md).
const LEVEL: u32 = 1;

/// [`Store::write_blob`]'s failures, before they name the store.
enum WriteError {
    Io(io::Error),
    Archive(archive::ArchiveError),
}

impl From<io::Error> for WriteError {
    fn from(e: io::Error) -> WriteError {
        WriteError::Io(e)
    }
}

impl WriteError {
    fn map_archive(self, f: impl FnOnce(archive::ArchiveError) -> PutError) -> PutError {
        match self {
            WriteError::Io(e) => f(archive::ArchiveError::Write(e)),
            WriteError::Archive(a) => f(a),
        }
    }
}

/// A snapshot store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: PathBuf,
}

/// A snapshot written (or found already there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub reference: Ref,
    pub archived: Archived,
    /// The blob's size on disk.
    pub blob_bytes: u64,
    /// `false`: the blob was already in the store (nothing written).
    pub written: bool,
}

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum PutError {
    #[error("snapshot `{}`: {source}", workspace.display())]
    Archive {
        workspace: PathBuf,
        source: archive::ArchiveError,
    },
    #[error("write to the snapshot store `{}`: {source}", store.display())]
    Store { store: PathBuf, source: io::Error },
}

/// Why a stored snapshot does not check out.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("snapshot {reference} is missing: no `{}`", path.display())]
    Missing { reference: Ref, path: PathBuf },
    #[error("snapshot {reference} (`{}`) cannot be read: {source}", path.display())]
    Unreadable {
        reference: Ref,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "snapshot {reference} (`{}`) does not match its digest: it holds v1:sha256:{found} \
         (the blob was changed after it was written)",
        path.display()
    )]
    Mismatch {
        reference: Ref,
        path: PathBuf,
        found: String,
    },
}

/// What a store directory holds.
#[derive(Debug, Default)]
pub struct Listing {
    /// Blobs: ref, path, size.
    pub blobs: Vec<(Ref, PathBuf, u64)>,
    /// Anything else under `sha256/` (temp files, strays): never a blob.
    pub other: Vec<PathBuf>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The store of the cassette at `cassette`: `[snapshots] dir` of the
    /// project's `reel.toml` when set, else `.reel-snapshots/` beside it.
    pub fn for_cassette(cassette: &Path, config: &crate::project::ProjectConfig) -> Store {
        match &config.snapshots.dir {
            Some(dir) => Store::new(dir),
            None => Store::new(crate::scenario::dir_of(cassette).join(DEFAULT_DIR)),
        }
    }

    /// [`Store::for_cassette`] under the `reel.toml` that applies in the
    /// current directory; a `reel.toml` that does not load gives the default
    /// place (the commands that read it for their own settings report it).
    pub fn of_cassette(cassette: &Path) -> Store {
        let config = crate::project::ProjectConfig::discover_cwd().unwrap_or_default();
        Store::for_cassette(cassette, &config)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the blob of `reference` lives (whether or not it exists).
    pub fn blob_path(&self, reference: &Ref) -> PathBuf {
        self.dir
            .join(BLOBS)
            .join(format!("{}{SUFFIX}", reference.hex()))
    }

    /// Archives `roots` of `workspace` into the store, durably, and returns
    /// the ref. A blob already there is not written again: a first pass
    /// only hashes the archive (no compression, nothing written), and the
    /// blob is written only when its name is not in the store.
    pub fn put(
        &self,
        workspace: &Path,
        roots: &[String],
        limits: &Limits,
    ) -> Result<Taken, PutError> {
        let archive_err = |source| match source {
            archive::ArchiveError::Write(e) => PutError::Store {
                store: self.dir.clone(),
                source: e,
            },
            source => PutError::Archive {
                workspace: workspace.to_path_buf(),
                source,
            },
        };
        let (hashed, _) =
            archive::write(workspace, roots, io::sink(), limits).map_err(archive_err)?;
        if let Some(taken) = self.existing(&hashed) {
            return Ok(taken);
        }
        self.write_blob(workspace, roots, limits)
            .map_err(|e| e.map_archive(archive_err))
    }

    /// The blob of `archived` when the store has it.
    fn existing(&self, archived: &Archived) -> Option<Taken> {
        let reference = Ref::of_digest(&archived.digest);
        let meta = fs::metadata(self.blob_path(&reference)).ok()?;
        Some(Taken {
            reference,
            archived: archived.clone(),
            blob_bytes: meta.len(),
            written: false,
        })
    }

    /// The archive streamed through gzip into a temp file, then persisted
    /// under the digest of what was written (the workspace may have changed
    /// since the hashing pass: the blob is named by its own content).
    fn write_blob(
        &self,
        workspace: &Path,
        roots: &[String],
        limits: &Limits,
    ) -> Result<Taken, WriteError> {
        let blobs = self.dir.join(BLOBS);
        create_dirs_durably(&blobs)?;
        let tmp = tempfile::Builder::new()
            .prefix(".reel-tmp-")
            .tempfile_in(&blobs)?;
        let gz = GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(BufWriter::new(tmp), Compression::new(LEVEL));
        let (archived, gz) =
            archive::write(workspace, roots, gz, limits).map_err(WriteError::Archive)?;
        let tmp = gz.finish()?.into_inner().map_err(|e| e.into_error())?;
        if let Some(taken) = self.existing(&archived) {
            return Ok(taken);
        }
        let reference = Ref::of_digest(&archived.digest);
        let target = self.blob_path(&reference);
        self.persist(tmp, &target)?;
        let blob_bytes = fs::metadata(&target)?.len();
        Ok(Taken {
            reference,
            archived,
            blob_bytes,
            written: true,
        })
    }

    /// The temp file fsynced, given a plain file's mode and renamed to
    /// `target` (never over an existing file: another writer's identical
    /// blob wins), then the directory fsynced.
    fn persist(&self, tmp: tempfile::NamedTempFile, target: &Path) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644 & !crate::atomic::umask()))?;
        tmp.as_file().sync_all()?;
        match tmp.persist_noclobber(target) {
            Ok(_) => {}
            Err(e) if target.exists() => drop(e),
            Err(e) => return Err(e.error),
        }
        sync_dir(target.parent().unwrap_or(Path::new(".")))
    }

    /// The tar stream of `reference` (decompressing as it is read).
    pub fn open(&self, reference: &Ref) -> Result<impl Read + use<>, CheckError> {
        let path = self.blob_path(reference);
        match fs::File::open(&path) {
            Ok(f) => Ok(flate2::read::GzDecoder::new(BufReader::new(f))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CheckError::Missing {
                reference: reference.clone(),
                path,
            }),
            Err(source) => Err(CheckError::Unreadable {
                reference: reference.clone(),
                path,
                source,
            }),
        }
    }

    /// Checks that the blob of `reference` exists and holds what its name
    /// says; its size on disk.
    pub fn check(&self, reference: &Ref) -> Result<u64, CheckError> {
        let path = self.blob_path(reference);
        let reader = self.open(reference)?;
        let unreadable = |source| CheckError::Unreadable {
            reference: reference.clone(),
            path: path.clone(),
            source,
        };
        let (digest, _) = archive::digest_of(reader).map_err(unreadable)?;
        let found = Ref::of_digest(&digest);
        if &found != reference {
            return Err(CheckError::Mismatch {
                reference: reference.clone(),
                path,
                found: found.hex().to_owned(),
            });
        }
        Ok(fs::metadata(&path).map_err(unreadable)?.len())
    }

    /// The blobs in the store, by name (their content is not read), and
    /// every other file under `sha256/`. A store that does not exist is
    /// empty.
    pub fn list(&self) -> io::Result<Listing> {
        let mut listing = Listing::default();
        let dir = self.dir.join(BLOBS);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let is_file = entry.file_type()?.is_file();
            let reference = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(SUFFIX))
                .and_then(|hex| Ref::parse(&format!("v1:sha256:{hex}")).ok());
            match reference {
                Some(r) if is_file => listing.blobs.push((r, path, entry.metadata()?.len())),
                _ => listing.other.push(path),
            }
        }
        listing.blobs.sort();
        listing.other.sort();
        Ok(listing)
    }
}

/// `dir` and its missing parents created, each new one fsynced into its
/// parent (so the blob's directory entry survives a crash too).
fn create_dirs_durably(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs_durably(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    sync_dir(
        dir.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new(".")),
    )
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}
