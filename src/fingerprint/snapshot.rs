//! The ONE walk of the skill roots (docs/spec/fingerprint.md §1.2, §1.7, §1.8):
//! lists every root once, then hashes the selected files in parallel (rayon),
//! and keeps the result as a [`Snapshot`] every digest derives from — no
//! second walk, so `skillHash`, `contentSig`, `fileSigs` and `sharedHash`
//! cannot disagree about a concurrently edited tree.
//!
//! Each entry carries two membership flags: `in_main` (the hashed view:
//! scope ∧ ignore ∧ git) and `in_shared` (the `sharedHash` view: shared
//! scope ∧ ignore, never git-filtered, as upstream). Both predicates are
//! prefix-closed, so filtering entries equals pruning the walk.
//!
//! This module does not resolve sessions (see `roots`) and does not fold
//! digests (see the parent module).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::ignore::IgnoreSet;
use super::manifest::{self, ManifestKind};
use crate::paths;

/// Directory names never descended into, at any depth.
const DENY_DIRS: [&str; 5] = [
    ".git",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
];
/// OS-junk final segments (files and directories).
const OS_JUNK: [&str; 5] = [
    ".DS_Store",
    "Thumbs.db",
    "desktop.ini",
    ".AppleDouble",
    "__MACOSX",
];

/// Env switch of the git-tracked boundary (on unless exactly `"0"`).
pub const ENV_GITSET: &str = "COWORK_HARNESS_GITSET";
/// Env switch of agent scoping (on only when exactly `"skill"`).
pub const ENV_AGENT_SCOPE: &str = "COWORK_HARNESS_AGENT_SCOPE";

/// Which file set to hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModeRequest {
    /// Git-tracked set when every root is in a git work tree, unless
    /// `COWORK_HARNESS_GITSET=0` (what a recording does).
    #[default]
    Auto,
    /// Git-tracked set; a root outside a git work tree is an error.
    Git,
    /// Every file on disk (minus the exclusions).
    Raw,
}

/// Inputs of a walk beyond the roots.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    pub mode: ModeRequest,
    /// `scenario.skills` (empty ⇒ whole tree).
    pub scope: Vec<String>,
    /// The session's `staleness.hash_ignore`.
    pub session_ignore: Vec<String>,
    /// Agent scoping (`COWORK_HARNESS_AGENT_SCOPE=skill`).
    pub agent_scope: bool,
}

impl WalkOptions {
    /// Options as a recording would use them: mode `Auto` and agent scoping
    /// from the environment.
    pub fn from_env(scope: Vec<String>, session_ignore: Vec<String>) -> Self {
        WalkOptions {
            mode: ModeRequest::Auto,
            scope,
            session_ignore,
            agent_scope: std::env::var(ENV_AGENT_SCOPE).is_ok_and(|v| v == "skill"),
        }
    }
}

/// Per-file digests in both formats (equal unless the file is a manifest
/// whose two transforms differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigests {
    pub legacy: String,
    pub jcs1: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory (`D:` marker; empty directories count).
    Dir,
    /// An in-tree symlink, never followed; `target` is root-relative.
    Link { target: String },
    File {
        digests: FileDigests,
        manifest: Option<ManifestKind>,
    },
}

/// One snapshot entry, in walk order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Index into [`Snapshot::roots`].
    pub root: usize,
    /// Root-relative, `/`-separated.
    pub path: String,
    pub kind: EntryKind,
    /// Part of the hashed view.
    pub in_main: bool,
    /// Part of the `sharedHash` view.
    pub in_shared: bool,
}

/// The result of the walk.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Absolute roots in fold order (UTF-16 order of their path strings).
    pub roots: Vec<PathBuf>,
    pub entries: Vec<Entry>,
    /// Read errors of the hashed view (any ⇒ the fingerprint is dropped).
    pub read_errors: Vec<String>,
    /// `scenario.skills` was applied.
    pub scoped: bool,
    /// Requested skills not found (scope fell back to the whole tree).
    pub missed_skills: Vec<String>,
    /// Every root was hashed as its git-tracked set.
    pub git_mode: bool,
    /// Agent scoping on AND scoped.
    pub agent_scoped: bool,
    /// `sharedHash` applies (scope requested and every root a plugin root).
    pub has_shared: bool,
}

/// Errors that stop a walk entirely (per-file problems are read errors).
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("`--mode git`: {0} is not inside a git work tree")]
    NotAGitWorkTree(PathBuf),
    #[error("git work tree at {root} is present but its index could not be read: {msg}")]
    GitIndex { root: PathBuf, msg: String },
}

/// UTF-16 code-unit order (JS default `sort()`).
pub fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn name_str(name: &OsStr) -> String {
    name.to_string_lossy().into_owned()
}

pub(crate) fn is_os_junk(rel: &str) -> bool {
    let last = rel.rsplit('/').next().unwrap_or(rel);
    OS_JUNK.contains(&last)
}

/// Tracked files of one root (relative to it) and their ancestor directories.
struct GitSet {
    files: HashSet<String>,
    dirs: HashSet<String>,
}

impl GitSet {
    fn accepts(&self, rel: &str) -> bool {
        self.files.contains(rel) || self.dirs.contains(rel)
    }
}

/// A tracked set read before, and the state of the index it was read from.
struct GitSetMemo {
    index: PathBuf,
    stamp: IndexStamp,
    set: Arc<GitSet>,
}

/// What changes when git rewrites an index (it always replaces the file).
#[derive(PartialEq, Eq, Clone, Copy)]
struct IndexStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

fn index_stamp(index: &Path) -> Option<IndexStamp> {
    let m = std::fs::metadata(index).ok()?;
    Some(IndexStamp {
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        inode: std::os::unix::fs::MetadataExt::ino(&m),
    })
}

/// Tracked sets by root, reused while their index file is unchanged: a
/// batch of cassettes recorded against one skill tree reads its repository
/// index once, not once per cassette (reading and checksumming the index was
/// a third of a 1,000-cassette replay).
static GIT_SETS: Mutex<Option<HashMap<PathBuf, GitSetMemo>>> = Mutex::new(None);

/// The tracked set of `root` (see [`read_git_set`]), from [`GIT_SETS`] when
/// its index has not changed since it was read.
fn git_set(root: &Path) -> Result<Option<Arc<GitSet>>, WalkError> {
    let lock = || {
        GIT_SETS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(memo) = lock().get_or_insert_with(HashMap::new).get(root)
        && index_stamp(&memo.index) == Some(memo.stamp)
    {
        return Ok(Some(Arc::clone(&memo.set)));
    }
    let Some((set, index, stamp)) = read_git_set(root)? else {
        return Ok(None);
    };
    let set = Arc::new(set);
    if let Some(stamp) = stamp {
        lock().get_or_insert_with(HashMap::new).insert(
            root.to_owned(),
            GitSetMemo {
                index,
                stamp,
                set: Arc::clone(&set),
            },
        );
    }
    Ok(Some(set))
}

/// Whether the git-tracked boundary is on (`COWORK_HARNESS_GITSET` is not
/// exactly `"0"`).
pub fn git_mode_requested() -> bool {
    std::env::var(ENV_GITSET).map_or(true, |v| v != "0")
}

/// The files git tracks under `root` (paths relative to it, POSIX), or
/// `None` when `root` is not in a git work tree.
pub fn tracked_files(root: &Path) -> Result<Option<HashSet<String>>, WalkError> {
    Ok(git_set(root)?.map(|set| set.files.clone()))
}

/// The tracked set of `root` read from its repository's index with git2
/// (`None` when `root` is not in a git work tree), with the index file and
/// its state before it was read. Equivalent to `git ls-files -z -- .` run in
/// `root`; git2 ignores `GIT_DIR` & co., as upstream does by removing them
/// from the child environment.
type GitSetRead = (GitSet, PathBuf, Option<IndexStamp>);

fn read_git_set(root: &Path) -> Result<Option<GitSetRead>, WalkError> {
    let Ok(repo) = git2::Repository::discover(root) else {
        return Ok(None);
    };
    let index_path = repo.path().join("index");
    let stamp = index_stamp(&index_path);
    let Some(workdir) = repo.workdir() else {
        return Ok(None);
    };
    let (Ok(work), Ok(here)) = (workdir.canonicalize(), root.canonicalize()) else {
        return Ok(None);
    };
    let Ok(prefix) = here.strip_prefix(&work) else {
        return Ok(None);
    };
    let prefix = paths::to_posix(prefix);
    let index = repo.index().map_err(|e| WalkError::GitIndex {
        root: root.to_owned(),
        msg: e.message().to_owned(),
    })?;
    let mut set = GitSet {
        files: HashSet::new(),
        dirs: HashSet::new(),
    };
    for entry in index.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let rel = if prefix.is_empty() {
            path
        } else {
            match path.strip_prefix(&format!("{prefix}/")) {
                Some(r) => r.to_owned(),
                None => continue,
            }
        };
        let mut cut = rel.as_str();
        while let Some(i) = cut.rfind('/') {
            cut = &cut[..i];
            if !set.dirs.insert(cut.to_owned()) {
                break;
            }
        }
        set.files.insert(rel);
    }
    Ok(Some((set, index_path, stamp)))
}

/// Names of the subdirectories of `<root>/skills` when it is a plugin root
/// (`skills/` is a directory, following symlinks).
fn plugin_skills(root: &Path) -> Option<HashSet<String>> {
    let dir = root.join("skills");
    if !std::fs::metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let mut names = HashSet::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                names.insert(name_str(&e.file_name()));
            }
        }
    }
    Some(names)
}

/// Skill an `agents/...` path belongs to under agent scoping.
pub(crate) fn agent_skill_name(rel: &str, is_dir: bool) -> Option<&str> {
    let rest = rel.strip_prefix("agents/")?;
    let mut segs = rest.split('/');
    let second = segs.next()?;
    if segs.next().is_none() && !is_dir {
        Some(match second.rfind('.') {
            Some(i) => &second[..i],
            None => second,
        })
    } else {
        Some(second)
    }
}

struct RootCtx {
    ordinal: usize,
    abs: PathBuf,
    ignore: IgnoreSet,
    git: Option<Arc<GitSet>>,
    /// Skill names when this root is a plugin root.
    skills: Option<HashSet<String>>,
    /// The kept skill set when scoping applies.
    keep: Option<HashSet<String>>,
    agent_scope: bool,
    shared: bool,
}

impl RootCtx {
    fn main_accepts(&self, rel: &str, is_dir: bool) -> bool {
        if self.ignore.is_ignored(rel) {
            return false;
        }
        if let Some(g) = &self.git
            && !g.accepts(rel)
        {
            return false;
        }
        match (&self.keep, &self.skills) {
            (Some(keep), Some(skills)) => {
                if rel == "skills" {
                    return true;
                }
                if let Some(rest) = rel.strip_prefix("skills/") {
                    let n = rest.split('/').next().unwrap_or(rest);
                    return keep.contains(n);
                }
                if self.agent_scope
                    && let Some(n) = agent_skill_name(rel, is_dir)
                    && skills.contains(n)
                {
                    return keep.contains(n);
                }
                true
            }
            _ => true,
        }
    }

    fn shared_accepts(&self, rel: &str, is_dir: bool) -> bool {
        if !self.shared || self.ignore.is_ignored(rel) {
            return false;
        }
        if rel.starts_with("skills/") {
            return false;
        }
        if self.agent_scope
            && let (Some(n), Some(skills)) = (agent_skill_name(rel, is_dir), &self.skills)
            && skills.contains(n)
        {
            return false;
        }
        true
    }
}

/// A file found by the listing, hashed afterwards in parallel.
struct PendingFile {
    entry_index: usize,
    abs: PathBuf,
    manifest: Option<ManifestKind>,
}

struct Listing {
    entries: Vec<Entry>,
    pending: Vec<PendingFile>,
    errors: Vec<(bool, String)>,
}

fn list_dir(ctx: &RootCtx, rel: &str, abs: &Path, parent: (bool, bool), out: &mut Listing) {
    let Some(names) = sorted_names(abs, parent.0, out) else {
        return;
    };
    for (name, os, listed_type) in names {
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let child_abs = abs.join(&os);
        let ft = match listed_type.map_or_else(
            || std::fs::symlink_metadata(&child_abs).map(|m| m.file_type()),
            Ok,
        ) {
            Ok(ft) => ft,
            Err(e) => {
                let main = parent.0 && ctx.main_accepts(&child_rel, false);
                out.errors
                    .push((main, format!("cannot stat {}: {e}", child_abs.display())));
                continue;
            }
        };
        if ft.is_symlink() {
            list_link(ctx, abs, child_rel, &child_abs, parent, out);
        } else if ft.is_dir() {
            if DENY_DIRS.contains(&name.as_str()) || is_os_junk(&child_rel) {
                continue;
            }
            let main = parent.0 && ctx.main_accepts(&child_rel, true);
            let shared = parent.1 && ctx.shared_accepts(&child_rel, true);
            if !main && !shared {
                continue;
            }
            out.entries.push(Entry {
                root: ctx.ordinal,
                path: child_rel.clone(),
                kind: EntryKind::Dir,
                in_main: main,
                in_shared: shared,
            });
            list_dir(ctx, &child_rel, &child_abs, (main, shared), out);
        } else if ft.is_file() {
            list_file(ctx, &name, child_rel, child_abs, parent, out);
        }
        // FIFOs, sockets, devices: silently ignored.
    }
}

/// A directory's names, each with its type when the listing gave it
/// (`d_type`: no `lstat` by full path per entry, 9 % of a 2,000-file walk's
/// system-call time under `strace -c`).
type Names = Vec<(String, std::ffi::OsString, Option<std::fs::FileType>)>;

/// A directory's names in UTF-16 order (the original sorts JS strings);
/// `None`, with the error noted, when it cannot be read whole.
fn sorted_names(abs: &Path, in_main: bool, out: &mut Listing) -> Option<Names> {
    let unreadable =
        |e: io::Error| format!("cannot read directory {}: {e} — skipping", abs.display());
    let rd = match std::fs::read_dir(abs) {
        Ok(rd) => rd,
        Err(e) => {
            out.errors.push((in_main, unreadable(e)));
            return None;
        }
    };
    let mut names: Names = Vec::new();
    for item in rd {
        match item {
            Ok(e) => {
                let os = e.file_name();
                names.push((name_str(&os), os, e.file_type().ok()));
            }
            Err(e) => {
                out.errors.push((true, unreadable(e)));
                return None;
            }
        }
    }
    names.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
    Some(names)
}

/// A symlink is listed by its target relative to the root; one that
/// escapes the root is not followed.
fn list_link(
    ctx: &RootCtx,
    abs: &Path,
    child_rel: String,
    child_abs: &Path,
    parent: (bool, bool),
    out: &mut Listing,
) {
    let main = parent.0 && ctx.main_accepts(&child_rel, false);
    let shared = parent.1 && ctx.shared_accepts(&child_rel, false);
    if !main && !shared {
        return;
    }
    let target = match std::fs::read_link(child_abs) {
        Ok(t) => t,
        Err(e) => {
            crate::messages::warn(format!(
                "reel: skill-hash: cannot readlink {}: {e} — skipping",
                child_abs.display()
            ));
            return;
        }
    };
    let resolved = paths::resolve(abs, &target);
    let root_resolved = paths::lexical(&ctx.abs);
    let Ok(inside) = resolved.strip_prefix(&root_resolved) else {
        crate::messages::warn(format!(
            "reel: skill-hash: skipping escaping symlink {} -> {} (not followed)",
            child_abs.display(),
            target.display()
        ));
        return;
    };
    let target = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    out.entries.push(Entry {
        root: ctx.ordinal,
        path: child_rel,
        kind: EntryKind::Link { target },
        in_main: main,
        in_shared: shared,
    });
}

/// A regular file is listed now and hashed later, in parallel.
fn list_file(
    ctx: &RootCtx,
    name: &str,
    child_rel: String,
    child_abs: PathBuf,
    parent: (bool, bool),
    out: &mut Listing,
) {
    if name.ends_with(".cassette.json")
        || child_rel == ".cowork-hashignore"
        || is_os_junk(&child_rel)
    {
        return;
    }
    let main = parent.0 && ctx.main_accepts(&child_rel, false);
    let shared = parent.1 && ctx.shared_accepts(&child_rel, false);
    if !main && !shared {
        return;
    }
    let manifest = manifest::classify(&child_rel);
    out.pending.push(PendingFile {
        entry_index: out.entries.len(),
        abs: child_abs,
        manifest,
    });
    out.entries.push(Entry {
        root: ctx.ordinal,
        path: child_rel,
        kind: EntryKind::File {
            digests: FileDigests {
                legacy: String::new(),
                jcs1: String::new(),
            },
            manifest,
        },
        in_main: main,
        in_shared: shared,
    });
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Bytes read from a file at a time. `io::copy`'s 8 KiB took four to five
/// `read` calls for the average file of a 2,000-file skill tree; most files
/// fit in one of these (a buffer per hashing thread, kept for the process).
const READ_CHUNK: usize = 256 * 1024;

thread_local! {
    static READ_BUFFER: std::cell::RefCell<Option<Vec<u8>>> =
        const { std::cell::RefCell::new(None) };
}

/// Both digests of one file; `Err` is the read-error message.
fn hash_file(f: &PendingFile) -> Result<FileDigests, String> {
    if f.manifest.is_some() {
        let raw = std::fs::read(&f.abs)
            .map_err(|e| format!("cannot read file {}: {e}", f.abs.display()))?;
        let legacy = sha_hex(&manifest::legacy_hashed(&raw));
        let jcs1 = manifest::jcs1_hashed(&raw)
            .map_err(|e| format!("cannot canonicalize {}: {e}", f.abs.display()))?;
        return Ok(FileDigests {
            legacy,
            jcs1: sha_hex(&jcs1),
        });
    }
    let read = || -> io::Result<String> {
        let mut file = std::fs::File::open(&f.abs)?;
        let mut h = Sha256::new();
        READ_BUFFER.with_borrow_mut(|buf| -> io::Result<()> {
            let buf = buf.get_or_insert_with(|| vec![0; READ_CHUNK]);
            loop {
                match io::Read::read(&mut file, buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => h.update(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        })?;
        Ok(hex::encode(h.finalize()))
    };
    let d = read().map_err(|e| format!("cannot read file {}: {e}", f.abs.display()))?;
    Ok(FileDigests {
        legacy: d.clone(),
        jcs1: d,
    })
}

/// Each root's git set when git mode is asked for (`--git` refuses a root
/// without one).
fn git_sets(roots: &[PathBuf], mode: ModeRequest) -> Result<Vec<Option<Arc<GitSet>>>, WalkError> {
    let want_git = match mode {
        ModeRequest::Raw => false,
        ModeRequest::Git => true,
        ModeRequest::Auto => git_mode_requested(),
    };
    let mut gits = Vec::with_capacity(roots.len());
    for r in roots {
        let g = if want_git { git_set(r)? } else { None };
        if g.is_none() && mode == ModeRequest::Git {
            return Err(WalkError::NotAGitWorkTree(r.clone()));
        }
        gits.push(g);
    }
    Ok(gits)
}

/// The skills the hash keeps (`None`: the whole tree) and the scoped names
/// no plugin root has; a scope that misses any falls back to the whole tree.
fn scope_skills(
    scope: &[String],
    skills: &[Option<HashSet<String>>],
) -> (Option<HashSet<String>>, Vec<String>) {
    if scope.is_empty() {
        return (None, Vec::new());
    }
    let union: HashSet<&String> = skills.iter().flatten().flatten().collect();
    let any_plugin = skills.iter().any(Option::is_some);
    let missed: Vec<String> = scope
        .iter()
        .filter(|s| !union.contains(s))
        .cloned()
        .collect();
    if any_plugin && missed.is_empty() {
        return (Some(scope.iter().cloned().collect()), missed);
    }
    crate::messages::warn(format!(
        "reel: skill-hash: scenario.skills {:?} not all found under skills/ — scopeSkills \
            fallback to whole-tree hash",
        missed
    ));
    (None, missed)
}

/// Hashes the listed files in parallel; an unreadable file leaves the
/// snapshot (an error only when the main hash covers it).
fn hash_listed(mut listing: Listing) -> (Vec<Entry>, Vec<String>) {
    let hash_all = || -> Vec<Result<FileDigests, String>> {
        listing.pending.par_iter().map(hash_file).collect()
    };
    let wide = (listing.pending.len() >= HASH_WIDE_FROM)
        .then(wide_pool)
        .flatten();
    let results = match wide {
        Some(pool) => pool.install(hash_all),
        None => hash_all(),
    };
    let mut drop = vec![false; listing.entries.len()];
    let mut read_errors: Vec<String> = listing
        .errors
        .into_iter()
        .filter(|e| e.0)
        .map(|e| e.1)
        .collect();
    for (f, r) in listing.pending.iter().zip(results) {
        match r {
            Ok(d) => {
                if let EntryKind::File { digests, .. } = &mut listing.entries[f.entry_index].kind {
                    *digests = d;
                }
            }
            Err(msg) => {
                drop[f.entry_index] = true;
                if listing.entries[f.entry_index].in_main {
                    crate::messages::warn(format!("reel: skill-hash: {msg}"));
                    read_errors.push(msg);
                }
            }
        }
    }
    let entries = listing
        .entries
        .into_iter()
        .zip(drop)
        .filter_map(|(e, d)| (!d).then_some(e))
        .collect();
    (entries, read_errors)
}

/// Files from which a walk hashes on every core even when the caller's pool
/// has one thread: `reel replay` of one small cassette runs on the calling
/// thread alone (`cli::replay::pool_for`), and a 2,000-file, 46 MB skill tree
/// then hashed on one core (issue 44: the fingerprint row, 246 → 287 ms).
/// Below this, a walk takes about a millisecond, less than starting threads.
const HASH_WIDE_FROM: usize = 64;

/// A pool of a thread per core for [`hash_listed`], when the current pool
/// has one thread and the machine more than one core; started on first use.
fn wide_pool() -> Option<&'static rayon::ThreadPool> {
    static WIDE: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    if rayon::current_num_threads() > 1 {
        return None;
    }
    WIDE.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (cores > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(cores)
                    .build()
                    .ok()
            })
            .flatten()
    })
    .as_ref()
}

/// Walks `roots` (absolute; duplicates allowed) into a [`Snapshot`].
pub fn walk(roots: &[PathBuf], opts: &WalkOptions) -> Result<Snapshot, WalkError> {
    let mut roots: Vec<PathBuf> = roots.to_vec();
    roots.sort_by(|a, b| utf16_cmp(&a.to_string_lossy(), &b.to_string_lossy()));

    let gits = git_sets(&roots, opts.mode)?;
    // Git mode holds only when every root has a git set.
    let git_mode = !roots.is_empty() && gits.iter().all(Option::is_some);
    // Scoping (§1.8).
    let skills: Vec<Option<HashSet<String>>> = roots.iter().map(|r| plugin_skills(r)).collect();
    let (keep, missed) = scope_skills(&opts.scope, &skills);
    let scoped = keep.is_some();
    let has_shared =
        !opts.scope.is_empty() && !roots.is_empty() && skills.iter().all(Option::is_some);

    let mut listing = Listing {
        entries: Vec::new(),
        pending: Vec::new(),
        errors: Vec::new(),
    };
    for (i, (root, (git, skills))) in roots.iter().zip(gits.into_iter().zip(skills)).enumerate() {
        let is_plugin = skills.is_some();
        let ctx = RootCtx {
            ordinal: i,
            abs: root.clone(),
            ignore: IgnoreSet::for_root(root, &opts.session_ignore),
            git,
            keep: if is_plugin { keep.clone() } else { None },
            skills,
            agent_scope: opts.agent_scope,
            shared: has_shared,
        };
        list_dir(&ctx, "", root, (true, has_shared), &mut listing);
    }

    let (entries, read_errors) = hash_listed(listing);
    Ok(Snapshot {
        roots,
        entries,
        read_errors,
        scoped,
        missed_skills: missed,
        git_mode,
        agent_scoped: opts.agent_scope && scoped,
        has_shared,
    })
}
