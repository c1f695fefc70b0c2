//! The cassette load pipeline (docs/spec/replay.md §2.3, cowork-harness
//! `readCassette`): read → UTF-8 → JSON → lenient shape → normalise
//! `scenario.assert` → version floor → hash-format invariant → strict
//! assertion validation (tolerant for future versions), in exactly that order.
//!
//! Cassettes are untrusted input. Whatever the bytes, loading returns
//! `Ok` or a [`LoadError`] — never a panic, never a hang:
//!
//! - only regular files are read (`/dev/zero`, FIFOs, directories are refused
//!   before any byte is read; the open is non-blocking so a path swapped for a
//!   FIFO in between cannot hang either);
//! - files over [`MAX_CASSETTE_BYTES`] (2 GiB) are refused unread; anything
//!   smaller, including a single 1 GB line, is read once into memory and parsed
//!   in place (events stay the strings they were recorded as);
//! - invalid UTF-8 is refused with its byte offset (cowork-harness would have
//!   silently substituted U+FFFD and hashed the result);
//! - nesting deeper than 128 levels hits serde_json's recursion limit and is
//!   refused with a message saying so (no cassette nests beyond ~10 levels);
//! - a lone UTF-16 surrogate escape (`"\ud800"`), which JavaScript's
//!   `JSON.parse` accepts, is refused: a Rust string cannot hold one. No
//!   recorder produces one (agent output arrives as UTF-8 bytes);
//! - a duplicate key keeps the **last** value at the **first** key's position,
//!   exactly like JavaScript's `JSON.parse` (so the round trip writes one key);
//! - `cassetteVersion` that is not a non-negative integer (a string, an
//!   object, `12.5`, `-1`) is a shape error. cowork-harness compares it with
//!   JavaScript's loose `<`, which lets `"12"` through; reel does not. An
//!   integral spelling such as `12.0` or `1.2e1` is read as the integer, as
//!   JavaScript would.
//!
//! Known limit: serde_json's `arbitrary_precision` feature reserves the object
//! keys `$serde_json::private::Number` / `$serde_json::private::RawValue`; an
//! object whose first key is one of those is read as a number / embedded JSON
//! (or refused as invalid). No cowork-harness writer produces such a key, so
//! the round-trip guarantee simply does not extend to such a document.
//!
//! This module does not judge a recording and does not compute staleness; it
//! only decides whether the document is a cassette reel can safely hand on.

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::MIN_SUPPORTED_CASSETTE_VERSION;
use super::{CASSETTE_VERSION, Cassette, HASH_FORMAT_EPOCH, HASH_FORMAT_JCS1, KeyCheck};

/// Largest cassette reel reads: 2 GiB. A bigger file is refused before a byte
/// of it is read (parsing needs several times the file size in memory).
pub const MAX_CASSETTE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// serde_json's nesting limit, quoted in the error for over-deep documents.
pub const MAX_NESTING_DEPTH: usize = 128;

/// The prefix cowork-harness puts on every read / parse failure.
const UNREADABLE: &str = "unreadable / invalid cassette JSON";

/// One problem found by the lenient shape check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeIssue {
    /// JSON path of the offending value (`events[3]`, `scenario.prompt`, `<root>`).
    pub json_path: String,
    /// What is wrong, in zod's wording (`Invalid input: expected string, received number`).
    pub message: String,
}

/// One `scenario.assert[i]` item the assertion catalog refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionIssue {
    /// Index in `scenario.assert`.
    pub index: usize,
    /// The offending key, when one key can be blamed.
    pub key: Option<String>,
    /// The catalog's reason.
    pub reason: String,
}

impl AssertionIssue {
    /// `scenario.assert[3].tool_calld` (or `scenario.assert[3]` when no key is to blame).
    pub fn json_path(&self) -> String {
        match &self.key {
            Some(k) => format!("scenario.assert[{}].{k}", self.index),
            None => format!("scenario.assert[{}]", self.index),
        }
    }

    fn detail(&self) -> String {
        format!("{}: {}", self.json_path(), self.reason)
    }
}

/// Why a cassette could not be loaded. `Display` is `<path>: <message>`, where
/// `<message>` ([`LoadError::message`]) keeps cowork-harness's wording, so
/// `replay: {err}` prints what the original prints.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{}: {UNREADABLE}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directory, device, FIFO or socket: refused before reading.
    #[error("{}: {UNREADABLE}: not a regular file ({kind})", path.display())]
    NotAFile { path: PathBuf, kind: &'static str },
    /// Over [`MAX_CASSETTE_BYTES`].
    #[error(
        "{}: {UNREADABLE}: the file is {bytes} bytes, over reel's limit of {MAX_CASSETTE_BYTES} \
            bytes (2 GiB)",
        path.display()
    )]
    TooLarge { path: PathBuf, bytes: u64 },
    /// Not UTF-8 text.
    #[error(
        "{}: {UNREADABLE}: invalid UTF-8 at byte offset {offset} (line {line}, column {column})",
        path.display()
    )]
    InvalidUtf8 {
        path: PathBuf,
        offset: usize,
        line: usize,
        column: usize,
    },
    /// Not JSON (truncated, syntax error, too deep). `detail` is the parser's
    /// reason, worded like JavaScript's where that matters
    /// (`Unexpected end of JSON input`).
    #[error("{}: {UNREADABLE}: {detail}", path.display())]
    InvalidJson {
        path: PathBuf,
        detail: String,
        line: usize,
        column: usize,
    },
    /// Valid JSON, wrong structure (docs/spec/replay.md §2.3 step 2).
    #[error("{}: invalid cassette shape: {}", path.display(), join_shape(issues))]
    Shape {
        path: PathBuf,
        issues: Vec<ShapeIssue>,
    },
    /// `cassetteVersion` absent or below the read floor.
    #[error(
        "{}: cassette recorded at v{version} is older than the minimum supported version \
         v{MIN_SUPPORTED_CASSETTE_VERSION} — re-record this cassette (pre-1.0, no compatibility is \
         maintained for cassette formats below v{MIN_SUPPORTED_CASSETTE_VERSION})",
        path.display()
    )]
    TooOld { path: PathBuf, version: u64 },
    /// A v12 fingerprint without `hashFormat: "jcs1"`.
    #[error(
        "{}: cassette is stamped v{version} but its fingerprint carries hashFormat {} — a \
         v{HASH_FORMAT_EPOCH} cassette must record 'jcs1'. The stamp and the digests disagree, so \
         neither can be trusted; re-record",
        path.display(),
        shown_format(found.as_deref())
    )]
    HashFormatMissing {
        path: PathBuf,
        version: u64,
        found: Option<String>,
    },
    /// A pre-v12 fingerprint carrying `hashFormat`.
    #[error(
        "{}: cassette is stamped v{version} (pre-epoch) but its fingerprint carries hashFormat \
            '{found}' \
         — a pre-v{HASH_FORMAT_EPOCH} cassette predates that field entirely, so the stamp and the \
         digests disagree; re-record",
        path.display()
    )]
    HashFormatPreEpoch {
        path: PathBuf,
        version: u64,
        found: String,
    },
    /// `scenario.assert` items the catalog refuses, on a cassette this build
    /// fully understands (≤ v12).
    #[error(
        "{}: cassette (v{version} ≤ current v{CASSETTE_VERSION}) contains unrecognized \
            assertion(s) \
         — they would silently drop from replay: {}. Fix the assertion, or re-record.",
        path.display(),
        join_assertions(issues)
    )]
    UnrecognizedAssertions {
        path: PathBuf,
        version: u64,
        issues: Vec<AssertionIssue>,
    },
}

fn join_shape(issues: &[ShapeIssue]) -> String {
    let mut out = String::new();
    for (i, issue) in issues.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(out, "{}: {}", issue.json_path, issue.message);
    }
    out
}

fn join_assertions(issues: &[AssertionIssue]) -> String {
    issues
        .iter()
        .map(AssertionIssue::detail)
        .collect::<Vec<_>>()
        .join("; ")
}

fn shown_format(found: Option<&str>) -> String {
    match found {
        None => "(absent)".into(),
        Some(f) => format!("'{f}'"),
    }
}

impl LoadError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            LoadError::Io { path, .. }
            | LoadError::NotAFile { path, .. }
            | LoadError::TooLarge { path, .. }
            | LoadError::InvalidUtf8 { path, .. }
            | LoadError::InvalidJson { path, .. }
            | LoadError::Shape { path, .. }
            | LoadError::TooOld { path, .. }
            | LoadError::HashFormatMissing { path, .. }
            | LoadError::HashFormatPreEpoch { path, .. }
            | LoadError::UnrecognizedAssertions { path, .. } => path,
        }
    }

    /// The message without the leading `<path>: ` — cowork-harness's wording,
    /// for callers that print the path themselves.
    pub fn message(&self) -> String {
        let full = self.to_string();
        let prefix = format!("{}: ", self.path().display());
        match full.strip_prefix(&prefix) {
            Some(rest) => rest.to_owned(),
            None => full,
        }
    }

    /// JSON path of the first offending value, when the problem has one.
    pub fn json_path(&self) -> Option<String> {
        match self {
            LoadError::Shape { issues, .. } => issues.first().map(|i| i.json_path.clone()),
            LoadError::TooOld { .. } => Some("cassetteVersion".into()),
            LoadError::HashFormatMissing { .. } | LoadError::HashFormatPreEpoch { .. } => {
                Some("fingerprint.hashFormat".into())
            }
            LoadError::UnrecognizedAssertions { issues, .. } => {
                issues.first().map(AssertionIssue::json_path)
            }
            _ => None,
        }
    }

    /// What the user should do about it (printed after `hint:`).
    pub fn hint(&self) -> String {
        let file = self.path().display();
        match self {
            LoadError::Io { .. } => format!("check that `{file}` exists and is readable"),
            LoadError::NotAFile { .. } => {
                "pass a `*.cassette.json` file or a directory of them".into()
            }
            LoadError::TooLarge { .. } => {
                "this is not a cassette reel can load; check the path, or re-record with smaller \
                    artifacts (`--max-artifact-bytes`)"
                    .into()
            }
            LoadError::InvalidUtf8 { .. } | LoadError::InvalidJson { .. } => format!(
                "the file is damaged (a truncated or hand-edited write?); restore `{file}` from \
                    version control or re-record it with `reel record`"
            ),
            LoadError::Shape { .. } => format!(
                "fix the named field in `{file}` (events must be an array of strings; scenario \
                    needs string `prompt` and `session`), or re-record it with `reel record`"
            ),
            LoadError::TooOld { .. } => format!(
                "re-record `{file}` with `reel record <scenario>`; formats below \
                    v{MIN_SUPPORTED_CASSETTE_VERSION} cannot be migrated"
            ),
            LoadError::HashFormatMissing { .. } | LoadError::HashFormatPreEpoch { .. } => {
                format!(
                    "re-record `{file}` with `reel record <scenario>` (its version stamp and its \
                        digests disagree, so `reel rehash` cannot vouch for it)"
                )
            }
            LoadError::UnrecognizedAssertions { .. } => format!(
                "fix or remove the named assertion in the scenario YAML and re-record, or edit \
                    `scenario.assert` in `{file}` (see the assertion reference for the valid keys)"
            ),
        }
    }
}

impl From<LoadError> for crate::Error {
    fn from(e: LoadError) -> Self {
        let hint = e.hint();
        crate::Error::usage(e.to_string()).with_hint(hint)
    }
}

/// Opens `path` for reading: regular files only, at most
/// [`MAX_CASSETTE_BYTES`]; returns the file and its length.
fn open_checked(path: &Path) -> Result<(fs::File, u64), LoadError> {
    let io_err = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Checked before opening: opening a FIFO for reading would block.
    let meta = fs::metadata(path).map_err(io_err)?;
    check_regular(path, &meta)?;
    let file = open_nonblocking(path).map_err(io_err)?;
    // Re-checked on the handle: the path may have been swapped in between.
    let meta = file.metadata().map_err(io_err)?;
    check_regular(path, &meta)?;
    let len = meta.len();
    if len > MAX_CASSETTE_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
            bytes: len,
        });
    }
    Ok((file, len))
}

/// Reads `path` (regular files only, at most [`MAX_CASSETTE_BYTES`]) in one go.
pub(super) fn read_cassette_file(path: &Path) -> Result<Vec<u8>, LoadError> {
    let (mut file, len) = open_checked(path)?;
    let io_err = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    // `len` ≤ 2 GiB, so it fits usize on every 64-bit target; on 32-bit the
    // capacity is only a hint and the read below is still bounded.
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    // Bounded even if the file grows while being read.
    (&mut file)
        .take(MAX_CASSETTE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > MAX_CASSETTE_BYTES {
        return Err(LoadError::TooLarge {
            path: path.to_path_buf(),
            bytes: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

fn check_regular(path: &Path, meta: &fs::Metadata) -> Result<(), LoadError> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    Err(LoadError::NotAFile {
        path: path.to_path_buf(),
        kind: file_kind(&ft),
    })
}

#[cfg(unix)]
fn file_kind(ft: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn file_kind(ft: &fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    fs::File::open(path)
}

/// The whole pipeline after reading: bytes → a validated [`Cassette`].
pub(super) fn parse(path: PathBuf, bytes: &[u8], keys: &KeyCheck) -> Result<Cassette, LoadError> {
    if bytes.len() as u64 > MAX_CASSETTE_BYTES {
        return Err(LoadError::TooLarge {
            path,
            bytes: bytes.len() as u64,
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let offset = e.valid_up_to();
            let (line, column) = line_column(&bytes[..offset]);
            return Err(LoadError::InvalidUtf8 {
                path,
                offset,
                line,
                column,
            });
        }
    };

    // JSON allows no byte-order mark (JavaScript's JSON.parse refuses it too);
    // serde_json would only say "expected value at line 1 column 1".
    if text.starts_with('\u{feff}') {
        return Err(LoadError::InvalidJson {
            path,
            detail:
                "the file starts with a UTF-8 byte-order mark (U+FEFF), which JSON does not allow"
                    .into(),
            line: 1,
            column: 1,
        });
    }

    // 1. JSON.parse
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let detail = json_error_detail(&e);
            return Err(LoadError::InvalidJson {
                path,
                detail,
                line: e.line(),
                column: e.column(),
            });
        }
    };

    validate(path, root, keys)
}

/// What a lean load reads and folds while it loads
/// ([`Cassette::load_lean_reading`]).
pub(super) struct Reading<'a, T, R, U> {
    pub read: super::ReadLineWith<'a, T>,
    pub fold: super::FoldReadLines<'a, T, R>,
    pub fold_timeline: Option<super::FoldTimeline<'a, U>>,
}

/// The pipeline with `events` and `timeline` kept as text ([`super::lean`]),
/// reading the `events` lines with `read` as the scan passes them and
/// folding them in order ([`super::lean::split_reading`]); anything the
/// lean scan does not take goes through the full pipeline (and comes back
/// without lines read).
pub(super) fn load_lean<T: Send, R: Send, U: Send>(
    path: &Path,
    reading: Option<Reading<'_, T, R, U>>,
    keys: &KeyCheck,
) -> Result<(Cassette, Option<super::FoldedWhileLoading<R, U>>), LoadError> {
    let (file, len) = open_checked(path)?;
    let io_err = |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    // `len` ≤ 2 GiB (checked), so it fits usize on 64-bit targets.
    let buf = match usize::try_from(len) {
        Ok(len) => super::lean::FileBuffer::read(&file, len).map_err(io_err)?,
        Err(_) => None,
    };
    let full = || Cassette::load_with(path, keys).map(|c| (c, None));
    let Some(buf) = buf.filter(|b| !b.starts_with_bom()) else {
        return full();
    };
    let (doc, raw, lines) = match reading {
        Some(reading) => match super::lean::split_reading(buf, reading) {
            Ok((doc, raw, folded)) => (doc, raw, Some(folded)),
            Err(_) => return full(),
        },
        None => match super::lean::split(buf) {
            Ok((doc, raw)) => (doc, raw, None),
            Err(_) => return full(),
        },
    };
    let mut cassette = validate(path.to_path_buf(), Value::Object(doc), keys)?;
    cassette.attach_raw(raw);
    Ok((cassette, lines))
}

/// Steps 2–6 of the pipeline over an already-parsed document.
pub(super) fn validate(path: PathBuf, root: Value, keys: &KeyCheck) -> Result<Cassette, LoadError> {
    // 2. Lenient shape check.
    let (mut doc, version) = match check_shape(root) {
        Ok(ok) => ok,
        Err(issues) => return Err(LoadError::Shape { path, issues }),
    };

    // 3. Normalise a missing `scenario.assert` to `[]` (appended last, where
    //    JavaScript's assignment puts it).
    if let Some(Value::Object(scenario)) = doc.get_mut("scenario")
        && !scenario.contains_key("assert")
    {
        scenario.insert("assert".into(), Value::Array(Vec::new()));
    }

    // 4. Version floor.
    if version < MIN_SUPPORTED_CASSETTE_VERSION {
        return Err(LoadError::TooOld { path, version });
    }

    // 5. Hash-format invariant.
    let path = check_hash_format(path, &doc, version)?;

    // 6. Strict assertion validation (tolerated with a warning when future).
    let (issues, load_warnings) = check_assertions(&doc, version, keys);
    if !issues.is_empty() {
        return Err(LoadError::UnrecognizedAssertions {
            path,
            version,
            issues,
        });
    }

    let mut cassette = Cassette::unchecked(path, doc, version);
    cassette.load_warnings = load_warnings;
    Ok(cassette)
}

/// Step 5: a cassette at the hash-format epoch says `jcs1`, one before it
/// says nothing (known versions only; a future one is not judged). Hands the
/// path back when it holds.
fn check_hash_format(
    path: PathBuf,
    doc: &Map<String, Value>,
    version: u64,
) -> Result<PathBuf, LoadError> {
    let Some(Value::Object(fp)) = doc.get("fingerprint") else {
        return Ok(path);
    };
    let found = fp.get("hashFormat").and_then(Value::as_str);
    if version == HASH_FORMAT_EPOCH && found != Some(HASH_FORMAT_JCS1) {
        return Err(LoadError::HashFormatMissing {
            path,
            version,
            found: found.map(str::to_owned),
        });
    }
    if version < HASH_FORMAT_EPOCH
        && let Some(found) = found
    {
        return Err(LoadError::HashFormatPreEpoch {
            path,
            version,
            found: found.to_owned(),
        });
    }
    Ok(path)
}

/// Step 6: every `scenario.assert` item the key catalog refuses — an issue,
/// or in a cassette newer than this reel, a warning.
fn check_assertions(
    doc: &Map<String, Value>,
    version: u64,
    keys: &KeyCheck,
) -> (Vec<AssertionIssue>, Vec<String>) {
    let is_future = version > CASSETTE_VERSION;
    let mut issues = Vec::new();
    let mut load_warnings = Vec::new();
    let items = doc
        .get("scenario")
        .and_then(|s| s.get("assert"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (index, item) in items.iter().enumerate() {
        let Err(reason) = (keys.validate)(item) else {
            continue;
        };
        let issue = AssertionIssue {
            index,
            key: blame_key(item, keys),
            reason,
        };
        if is_future {
            load_warnings.push(format!(
                "::warning:: [cassette] unrecognized assertion (tolerated — cassette v{version} is \
                    newer than v{CASSETTE_VERSION}): {}",
                issue.detail()
            ));
        } else {
            issues.push(issue);
        }
    }
    (issues, load_warnings)
}

/// 1-based line and column (in bytes) of the end of `prefix`.
fn line_column(prefix: &[u8]) -> (usize, usize) {
    let line = 1 + prefix.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + prefix.iter().rev().take_while(|&&b| b != b'\n').count();
    (line, column)
}

/// The parser's reason in words a user (and cowork-harness's compat output)
/// expects. serde_json appends ` at line L column C` itself.
fn json_error_detail(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let raw = e.to_string();
    match e.classify() {
        // JavaScript's wording, which cowork-harness prints verbatim.
        Category::Eof => "Unexpected end of JSON input".into(),
        _ if raw.starts_with("recursion limit exceeded") => format!(
            "nesting deeper than {MAX_NESTING_DEPTH} levels at line {} column {} (reel's JSON \
                reader limit; a cassette never nests this deep)",
            e.line(),
            e.column()
        ),
        // serde_json's two codes for an unpaired `\ud800`–`\udfff` escape.
        _ if raw.contains("surrogate") || raw.starts_with("unexpected end of hex escape") => {
            format!(
                "lone surrogate escape (a `\\udxxx` without its pair) at line {} column {} \
                 (JavaScript accepts one; a Rust string cannot hold it)",
                e.line(),
                e.column()
            )
        }
        _ => raw,
    }
}

/// The JavaScript/zod name of a value's type, for `received …`.
fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

fn expected(
    issues: &mut Vec<ShapeIssue>,
    json_path: impl Into<String>,
    want: &str,
    got: Option<&Value>,
) {
    issues.push(ShapeIssue {
        json_path: json_path.into(),
        message: format!(
            "Invalid input: expected {want}, received {}",
            type_name(got)
        ),
    });
}

/// cowork-harness's `CassetteShape` (a loose object: unknown keys are kept),
/// plus reel's check that `cassetteVersion` is a non-negative integer.
/// Issues come in the schema's field order, like zod's.
fn check_shape(root: Value) -> Result<(Map<String, Value>, u64), Vec<ShapeIssue>> {
    let mut issues = Vec::new();
    let doc = match root {
        Value::Object(map) => map,
        other => {
            expected(&mut issues, "<root>", "object", Some(&other));
            return Err(issues);
        }
    };
    check_events(&doc, &mut issues);
    check_fingerprint(&doc, &mut issues);
    check_scenario(&doc, &mut issues);
    optional_string(
        doc.get("sessionFingerprint"),
        "sessionFingerprint",
        &mut issues,
    );
    check_folder_prefix_map(&doc, &mut issues);

    // v16's `onFailure: block` inventory: `{events: [string]}` or
    // `{unknown: true, why: string}` (the original refuses anything else).
    if let Some(v) = doc.get("hookFailureBlocks")
        && !hook_failure_blocks_well_formed(v)
    {
        expected(
            &mut issues,
            "hookFailureBlocks",
            "{events: string[]} or {unknown: true, why: string}",
            Some(v),
        );
    }

    match check_version(&doc, &mut issues) {
        Some(version) if issues.is_empty() => Ok((doc, version)),
        _ => Err(issues),
    }
}

/// An optional field that, when present, is a string.
fn optional_string(v: Option<&Value>, json_path: impl Into<String>, issues: &mut Vec<ShapeIssue>) {
    match v {
        None | Some(Value::String(_)) => {}
        other => expected(issues, json_path, "string", other),
    }
}

/// A required field that is a string.
fn required_string(v: Option<&Value>, json_path: impl Into<String>, issues: &mut Vec<ShapeIssue>) {
    if !matches!(v, Some(Value::String(_))) {
        expected(issues, json_path, "string", v);
    }
}

/// `events`: an array of strings (the recorded lines).
fn check_events(doc: &Map<String, Value>, issues: &mut Vec<ShapeIssue>) {
    match doc.get("events") {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if !item.is_string() {
                    expected(issues, format!("events[{i}]"), "string", Some(item));
                }
            }
        }
        other => expected(issues, "events", "array", other),
    }
}

/// `fingerprint`: optional; an object whose `skillHash` and `hashFormat`,
/// when present, are strings.
fn check_fingerprint(doc: &Map<String, Value>, issues: &mut Vec<ShapeIssue>) {
    match doc.get("fingerprint") {
        None => {}
        Some(Value::Object(fp)) => {
            for key in ["skillHash", "hashFormat"] {
                optional_string(fp.get(key), format!("fingerprint.{key}"), issues);
            }
        }
        other => expected(issues, "fingerprint", "object", other),
    }
}

/// `scenario`: an object with a string `prompt` and `session`, and an
/// optional `assert` array. reel's multi-turn scenario carries `turns` (an
/// array) instead of `prompt` (docs/multi-turn.md: the original refuses it).
fn check_scenario(doc: &Map<String, Value>, issues: &mut Vec<ShapeIssue>) {
    match doc.get("scenario") {
        Some(Value::Object(scn)) => {
            let multi_turn = !scn.contains_key("prompt")
                && matches!(scn.get("turns"), Some(Value::Array(t)) if !t.is_empty());
            for key in ["prompt", "session"] {
                if key == "prompt" && multi_turn {
                    continue;
                }
                required_string(scn.get(key), format!("scenario.{key}"), issues);
            }
            match scn.get("assert") {
                None | Some(Value::Array(_)) => {}
                other => expected(issues, "scenario.assert", "array", other),
            }
        }
        other => expected(issues, "scenario", "object", other),
    }
}

/// `folderPrefixMap`: optional; an array of `{from, mount}` strings.
fn check_folder_prefix_map(doc: &Map<String, Value>, issues: &mut Vec<ShapeIssue>) {
    let items = match doc.get("folderPrefixMap") {
        None => return,
        Some(Value::Array(items)) => items,
        other => return expected(issues, "folderPrefixMap", "array", other),
    };
    for (i, item) in items.iter().enumerate() {
        let Value::Object(entry) = item else {
            expected(
                issues,
                format!("folderPrefixMap[{i}]"),
                "object",
                Some(item),
            );
            continue;
        };
        for key in ["from", "mount"] {
            required_string(
                entry.get(key),
                format!("folderPrefixMap[{i}].{key}"),
                issues,
            );
        }
    }
}

/// `cassetteVersion`: absent is 0; else a non-negative integer (`None`,
/// with an issue naming the number, when it is not).
fn check_version(doc: &Map<String, Value>, issues: &mut Vec<ShapeIssue>) -> Option<u64> {
    let Some(v) = doc.get("cassetteVersion") else {
        return Some(0);
    };
    let parsed = version_number(v);
    if parsed.is_none() {
        expected(issues, "cassetteVersion", "a non-negative integer", Some(v));
        if let Value::Number(n) = v {
            // Say which number: "received number" alone is unhelpful here.
            if let Some(last) = issues.last_mut() {
                let _ = write!(last.message, " ({n})");
            }
        }
    }
    parsed
}

fn hook_failure_blocks_well_formed(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    if o.contains_key("unknown") {
        return o.get("unknown") == Some(&Value::Bool(true))
            && o.get("why").is_some_and(Value::is_string);
    }
    o.get("events")
        .and_then(Value::as_array)
        .is_some_and(|e| e.iter().all(Value::is_string))
}

/// A non-negative integral JSON number as `u64` (`12`, `12.0`, `1.2e1`;
/// beyond `u64::MAX` saturates — such a cassette is simply "future").
fn version_number(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(u);
    }
    let f = n.as_f64()?;
    // `as` saturates for huge values; -0.0 reads as 0 like in JavaScript.
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0).then_some(f as u64)
}

/// The key to name for a refused assertion: the first key the catalog does
/// not know, else the first key whose `{key: param}` alone is refused (a
/// parameter-type error), else none (a rule spanning several keys).
fn blame_key(item: &Value, keys: &KeyCheck) -> Option<String> {
    let map = item.as_object()?;
    if let Some(k) = map.keys().find(|k| !(keys.known)(k)) {
        return Some(k.clone());
    }
    if map.len() == 1 {
        return map.keys().next().cloned();
    }
    map.iter()
        .find(|(k, v)| {
            let mut single = Map::new();
            single.insert((*k).clone(), (*v).clone());
            (keys.validate)(&Value::Object(single)).is_err()
        })
        .map(|(k, _)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Cassette, LoadError> {
        parse(
            PathBuf::from("t.cassette.json"),
            text.as_bytes(),
            &crate::assert::KEY_CHECK,
        )
    }

    const MIN: &str =
        r#"{"cassetteVersion":12,"scenario":{"prompt":"p","session":"s"},"events":[]}"#;

    #[test]
    fn minimal_cassette_loads_and_gains_an_empty_assert() {
        let c = load(MIN).unwrap();
        assert_eq!(c.version, 12);
        assert_eq!(c.scenario().get("assert"), Some(&Value::Array(vec![])));
        assert!(c.load_warnings.is_empty());
    }

    #[test]
    fn shape_issues_are_listed_in_schema_order() {
        let e =
            load(r#"{"events":[1],"scenario":{"prompt":2},"cassetteVersion":"12"}"#).unwrap_err();
        assert_eq!(
            e.message(),
            "invalid cassette shape: events[0]: Invalid input: expected string, received number; \
             scenario.prompt: Invalid input: expected string, received number; \
             scenario.session: Invalid input: expected string, received undefined; \
             cassetteVersion: Invalid input: expected a non-negative integer, received string"
        );
        assert_eq!(e.json_path().as_deref(), Some("events[0]"));
    }

    #[test]
    fn root_must_be_an_object() {
        let e = load("[]").unwrap_err();
        assert_eq!(
            e.message(),
            "invalid cassette shape: <root>: Invalid input: expected object, received array"
        );
    }

    #[test]
    fn integral_version_spellings_are_integers() {
        for (spelling, want) in [("12", 12), ("12.0", 12), ("1.2e1", 12), ("99", 99)] {
            let text = MIN.replace(
                "\"cassetteVersion\":12",
                &format!("\"cassetteVersion\":{spelling}"),
            );
            assert_eq!(load(&text).unwrap().version, want, "{spelling}");
        }
        for bad in ["12.5", "-1", "\"12\"", "{}", "null", "true"] {
            let text = MIN.replace(
                "\"cassetteVersion\":12",
                &format!("\"cassetteVersion\":{bad}"),
            );
            let e = load(&text).unwrap_err();
            assert!(matches!(e, LoadError::Shape { .. }), "{bad}: {e}");
            assert!(
                e.to_string()
                    .contains("cassetteVersion: Invalid input: expected a non-negative integer"),
                "{e}"
            );
        }
    }

    #[test]
    fn negative_zero_is_version_zero() {
        let text = MIN.replace("\"cassetteVersion\":12", "\"cassetteVersion\":-0");
        assert!(matches!(
            load(&text).unwrap_err(),
            LoadError::TooOld { version: 0, .. }
        ));
    }

    #[test]
    fn a_byte_order_mark_is_named() {
        let e = load(&format!("\u{feff}{MIN}")).unwrap_err();
        assert_eq!(
            e.message(),
            "unreadable / invalid cassette JSON: the file starts with a UTF-8 byte-order mark \
                (U+FEFF), which JSON does not allow"
        );
    }

    /// test/cassette-v13-object-form.test.ts, test/cassette-v14.test.ts: a
    /// key unknown to this build is tolerated only above its ceiling.
    #[test]
    fn every_known_version_loads_and_an_unknown_key_at_the_ceiling_is_refused() {
        for v in 9..=16 {
            let text = format!(
                r#"{{"cassetteVersion":{v},"scenario":{{"prompt":"p","session":"s"}},"events":[]}}"#
            );
            assert_eq!(load(&text).unwrap().version, v);
        }
        let text = r#"{"cassetteVersion":16,"scenario":{"prompt":"p","session":"s","assert":[{"tool_calld":"Bash"}]},"events":[]}"#;
        assert!(matches!(
            load(text).unwrap_err(),
            LoadError::UnrecognizedAssertions { version: 16, .. }
        ));
    }

    #[test]
    fn line_column_counts_from_one() {
        assert_eq!(line_column(b""), (1, 1));
        assert_eq!(line_column(b"ab\ncd"), (2, 3));
    }

    #[test]
    fn future_cassette_tolerates_unknown_assertions_with_a_warning() {
        let text = r#"{"cassetteVersion":17,"scenario":{"prompt":"p","session":"s","assert":[{"result":"success"},{"tool_calld":"Bash"}]},"events":[]}"#;
        let c = load(text).unwrap();
        assert_eq!(
            c.load_warnings,
            vec![
                "::warning:: [cassette] unrecognized assertion (tolerated — cassette v17 is newer \
                than v16): \
                  scenario.assert[1].tool_calld: unknown assertion key `tool_calld`"
                    .to_string()
            ]
        );
    }

    #[test]
    fn conversion_to_the_top_level_error_keeps_path_and_hint() {
        let e: crate::Error = load("{").unwrap_err().into();
        assert_eq!(e.kind, crate::error::ErrorKind::Usage);
        assert!(
            e.message
                .starts_with("t.cassette.json: unreadable / invalid cassette JSON")
        );
        assert!(e.hint.unwrap().contains("restore `t.cassette.json`"));
    }
}
