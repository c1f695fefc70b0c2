//! `reel gc --snapshots ROOTS…`: the blobs no cassette under the roots
//! names, removed (or, dry, listed).
//!
//! Every `*.cassette.json` (and pending `*.cassette.json.new`) under the
//! roots is read; each one's store ([`Store::for_cassette`]) is a store to
//! clean and each of its refs is live. Only a file named like a blob
//! (`sha256/<64 hex>.tar.gz`) is ever removed, and never a live one. A
//! cassette that cannot be read stops the collection before anything is
//! removed: its refs are unknown, so every blob might be one of them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{Checkpoints, Ref, Store};

/// One blob looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    pub reference: Ref,
    pub path: PathBuf,
    pub bytes: u64,
    /// Named by a cassette under the roots (kept).
    pub referenced: bool,
    /// Removed (dry run: would be).
    pub removed: bool,
}

/// What a collection found and did.
#[derive(Debug, Default)]
pub struct GcReport {
    pub dry_run: bool,
    /// The cassettes read.
    pub cassettes: usize,
    /// The stores looked at.
    pub stores: Vec<PathBuf>,
    pub blobs: Vec<BlobEntry>,
    /// Files in a store that are not blobs (left alone).
    pub left_alone: Vec<PathBuf>,
    /// Blobs that could not be removed.
    pub errors: Vec<(PathBuf, String)>,
}

/// Why nothing was collected.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("`{}` is not a directory or a cassette", .0.display())]
    NotARoot(PathBuf),
    #[error("no cassette under {roots}: give the directories that hold your cassettes")]
    NoCassette { roots: String },
    #[error("read `{}`: {message}; nothing was removed (its snapshots are unknown)", path.display())]
    Unreadable { path: PathBuf, message: String },
    #[error("list the snapshot store `{}`: {source}", store.display())]
    Store {
        store: PathBuf,
        source: std::io::Error,
    },
}

/// Collects the stores of the cassettes under `roots`.
pub fn collect(
    roots: &[PathBuf],
    config: &crate::project::ProjectConfig,
    dry_run: bool,
) -> Result<GcReport, GcError> {
    let cassettes = cassettes_under(roots)?;
    if cassettes.is_empty() {
        let roots = roots.iter().map(|r| format!("`{}`", r.display()));
        return Err(GcError::NoCassette {
            roots: roots.collect::<Vec<_>>().join(", "),
        });
    }
    let mut live = BTreeSet::new();
    let mut stores = BTreeSet::new();
    for path in &cassettes {
        stores.insert(Store::for_cassette(path, config).dir().to_path_buf());
        live.extend(refs_of(path)?);
    }
    let mut report = GcReport {
        dry_run,
        cassettes: cassettes.len(),
        ..GcReport::default()
    };
    for dir in stores {
        sweep(&Store::new(&dir), &live, &mut report)?;
        report.stores.push(dir);
    }
    Ok(report)
}

/// One store's blobs, the unreferenced ones removed unless dry.
fn sweep(store: &Store, live: &BTreeSet<Ref>, report: &mut GcReport) -> Result<(), GcError> {
    let listing = store.list().map_err(|source| GcError::Store {
        store: store.dir().to_path_buf(),
        source,
    })?;
    report.left_alone.extend(listing.other);
    for (reference, path, bytes) in listing.blobs {
        let referenced = live.contains(&reference);
        let mut removed = !referenced;
        if removed
            && !report.dry_run
            && let Err(e) = std::fs::remove_file(&path)
        {
            report.errors.push((path.clone(), e.to_string()));
            removed = false;
        }
        report.blobs.push(BlobEntry {
            reference,
            path,
            bytes,
            referenced,
            removed,
        });
    }
    Ok(())
}

/// The refs one cassette names (none when it has no checkpoints).
fn refs_of(path: &Path) -> Result<Vec<Ref>, GcError> {
    let unreadable = |message: String| GcError::Unreadable {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let doc: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(format!("not JSON: {e}")))?;
    let Some(checkpoints) = Checkpoints::of(&doc).map_err(unreadable)? else {
        return Ok(Vec::new());
    };
    checkpoints
        .checkpoints
        .iter()
        .map(|c| c.parsed().map_err(|e| unreadable(e.to_string())))
        .collect()
}

/// Every cassette file under the roots (a root may be one cassette),
/// sorted; the stores' own directories are not walked.
fn cassettes_under(roots: &[PathBuf]) -> Result<Vec<PathBuf>, GcError> {
    let mut out = Vec::new();
    for root in roots {
        if root.is_file() {
            out.push(root.clone());
            continue;
        }
        if !root.is_dir() {
            return Err(GcError::NotARoot(root.clone()));
        }
        let walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| e.file_name() != super::store::DEFAULT_DIR);
        for entry in walk.flatten() {
            let name = entry.file_name().to_string_lossy();
            if entry.file_type().is_file()
                && (name.ends_with(".cassette.json") || name.ends_with(".cassette.json.new"))
            {
                out.push(entry.into_path());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}
