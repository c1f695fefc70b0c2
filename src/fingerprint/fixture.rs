//! `workspace_fixture` (cassette v14): a saved outputs tree a scenario stages
//! into a fresh run before turn 1, and the signature a cassette records of it
//! so staleness notices when the test input changed.
//!
//! One walk decides the file set; the signature, the per-file list and the
//! staging copy are all read from it, so what is hashed is what is staged.
//! The rules are cowork-harness's (src/fixture/workspace.ts): regular files
//! only, no links, no agent-configuration paths, OS metadata skipped, a size
//! cap; `workspaceFixtureSig` is sha256 over `F:<path>\0<sha256>\0<x|->\0` per
//! file in code-point order of path, and only the owner-executable bit is
//! signed (a umask difference between checkouts is not drift).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::snapshot::is_os_junk;

/// Overrides the fixture size cap (bytes, a whole number ≥ 1).
pub const MAX_BYTES_ENV: &str = "COWORK_HARNESS_WORKSPACE_FIXTURE_MAX_BYTES";
const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Overrides the pre-run hash cap (bytes).
pub const PRERUN_HASH_CAP_ENV: &str = "COWORK_HARNESS_PRERUN_HASH_CAP";
/// The pre-run hash cap's default: 50 MiB (docs/spec/record.md).
pub const DEFAULT_PRERUN_HASH_CAP: u64 = 50 * 1024 * 1024;

/// The pre-run hash cap: a file larger than this gets a `null` pre-run hash
/// (`run::collect`), so its authorship can never be decided. Here because
/// a fixture file over it is refused at scan time, and the scan sits below
/// `record`. A value that is not a positive number falls back to the default.
pub fn prerun_hash_cap() -> u64 {
    std::env::var(PRERUN_HASH_CAP_ENV)
        .ok()
        .and_then(|raw| raw.trim().parse::<f64>().ok())
        .filter(|n| n.is_finite() && *n > 0.0)
        .map_or(DEFAULT_PRERUN_HASH_CAP, |n| n.floor() as u64)
}

/// One fixture file; `path` is fixture-relative POSIX, staged at `outputs/<path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureFile {
    pub path: String,
    pub sha256: String,
    /// The owner-executable bit, the only permission bit signed.
    pub exec: bool,
    /// `mode & 0o777`, what the staged copy is created with.
    pub mode: u32,
    pub bytes: u64,
    /// A text file holding a session-path token (`fixture export
    /// --session-paths` in cowork-harness), which staging would rewrite.
    pub tokens: bool,
}

impl FixtureFile {
    /// The per-file signature: the digest, `+x` when owner-executable.
    pub fn sig(&self) -> String {
        if self.exec {
            format!("{}+x", self.sha256)
        } else {
            self.sha256.clone()
        }
    }
}

/// A scanned fixture: its files sorted by path, and their signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedFixture {
    pub dir: PathBuf,
    pub files: Vec<FixtureFile>,
    /// `fingerprint.workspaceFixtureSig`.
    pub sig: String,
    /// `fingerprint.workspaceFixtureFileSigs`.
    pub file_sigs: Vec<(String, String)>,
}

/// Why a fixture cannot be used; the text starts `workspace_fixture <ref>: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FixtureError(pub String);

/// The aggregate signature over `(path, sha256, exec)` triples, independent of
/// their order. NUL-framed, so no two file lists share a byte stream.
pub fn signature<'a>(files: impl IntoIterator<Item = (&'a str, &'a str, bool)>) -> String {
    let mut files: Vec<_> = files.into_iter().collect();
    // Code-point order of path (UTF-8 byte order is code-point order).
    files.sort_by(|a, b| a.0.cmp(b.0));
    let mut h = Sha256::new();
    for (path, sha, exec) in files {
        h.update(b"F:");
        h.update(path.as_bytes());
        h.update(b"\0");
        h.update(sha.as_bytes());
        h.update(if exec { b"\0x\0" } else { b"\0-\0" });
    }
    hex::encode(h.finalize())
}

/// The size cap, from [`MAX_BYTES_ENV`] or 64 MiB; a malformed value is
/// refused rather than silently defaulted.
pub fn max_bytes() -> Result<u64, FixtureError> {
    match std::env::var(MAX_BYTES_ENV) {
        Err(_) => Ok(DEFAULT_MAX_BYTES),
        Ok(raw) if raw.trim().is_empty() => Ok(DEFAULT_MAX_BYTES),
        Ok(raw) => raw
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                FixtureError(format!(
                    "{MAX_BYTES_ENV} must be a whole number of bytes >= 1 (got {raw:?})"
                ))
            }),
    }
}

/// Agent configuration rather than a deliverable: staged into the agent's
/// tree, these would configure the agent itself.
fn control_reason(rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if let Some(seg) = parts
        .iter()
        .find(|p| matches!(p.to_lowercase().as_str(), ".claude" | ".git"))
    {
        return Some(format!("{seg} is agent configuration, not a deliverable"));
    }
    let leaf = parts.last().copied().unwrap_or(rel);
    matches!(
        leaf.to_lowercase().as_str(),
        ".mcp.json" | "claude.md" | "claude.local.md"
    )
    .then(|| format!("{leaf} is agent configuration, not a deliverable"))
}

struct Walk {
    root: PathBuf,
    cap: u64,
    hash_cap: u64,
    /// The git-tracked files (git mode in a work tree), else `None`.
    tracked: Option<std::collections::HashSet<String>>,
    total: u64,
    over_cap: bool,
    problems: Vec<String>,
    found: Vec<(String, PathBuf, fs::Metadata)>,
}

impl Walk {
    fn dir(&mut self, abs: &Path, rel: &str) {
        let entries = match fs::read_dir(abs) {
            Ok(rd) => rd.filter_map(Result::ok).collect::<Vec<_>>(),
            Err(e) => {
                let shown = if rel.is_empty() { "." } else { rel };
                self.problems
                    .push(format!("{shown:?}: cannot be listed ({e})"));
                return;
            }
        };
        let mut entries: Vec<(String, PathBuf)> = entries
            .into_iter()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        entries.sort();
        for (name, path) in entries {
            if self.over_cap {
                return;
            }
            let rel = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            self.entry(&path, rel);
        }
    }

    fn entry(&mut self, abs: &Path, rel: String) {
        if is_os_junk(&rel) {
            return;
        }
        let meta = match fs::symlink_metadata(abs) {
            Ok(m) => m,
            Err(e) => return self.problems.push(format!("{rel:?}: cannot be read ({e})")),
        };
        if meta.file_type().is_symlink() {
            return self.problems.push(format!(
                "{rel:?} is a symlink (a fixture holds regular files only)"
            ));
        }
        if let Some(why) = control_reason(&rel) {
            return self.problems.push(format!("{rel:?}: {why}"));
        }
        if meta.is_dir() {
            return self.dir(abs, &rel);
        }
        if !meta.is_file() {
            return self.problems.push(format!("{rel:?} is not a regular file"));
        }
        if meta.nlink() > 1 {
            return self.problems.push(format!(
                "{rel:?} has a second hard link (another name for the same file) — replace it \
                 with a plain copy"
            ));
        }
        if self.tracked.as_ref().is_some_and(|t| !t.contains(&rel)) {
            return self.problems.push(format!(
                "{rel:?} is not tracked by git — only tracked files are staged and hashed ('git \
                 add' it, or {}=0 to include untracked files)",
                super::snapshot::ENV_GITSET
            ));
        }
        // A file the pre-run baseline cannot hash has no decidable authorship.
        if meta.len() > self.hash_cap {
            return self.problems.push(format!(
                "{rel:?} is {} bytes, over the pre-run hash cap ({}; {PRERUN_HASH_CAP_ENV} raises \
                 it) — its authorship could never be decided",
                meta.len(),
                self.hash_cap
            ));
        }
        self.total += meta.len();
        if self.total > self.cap {
            self.over_cap = true;
            return self.problems.push(format!(
                "the fixture is larger than {} bytes (the cap; {MAX_BYTES_ENV} raises it) — is \
                 workspace_fixture pointed at the right directory?",
                self.cap
            ));
        }
        self.found.push((rel, abs.to_path_buf(), meta));
    }
}

/// Walks and checks a fixture directory, reading nothing outside it. `label`
/// is how the scenario wrote it (error texts name it). Every problem found is
/// named in one error.
pub fn scan(dir: &Path, label: &str) -> Result<ScannedFixture, FixtureError> {
    let what = format!("workspace_fixture {label}");
    let meta = fs::symlink_metadata(dir)
        .map_err(|_| FixtureError(format!("{what}: no such directory")))?;
    if meta.file_type().is_symlink() {
        return Err(FixtureError(format!(
            "{what}: is a symlink — point workspace_fixture at the directory itself"
        )));
    }
    if !meta.is_dir() {
        return Err(FixtureError(format!("{what}: not a directory")));
    }
    let tracked = if super::snapshot::git_mode_requested() {
        super::snapshot::tracked_files(dir).map_err(|e| FixtureError(format!("{what}: {e}")))?
    } else {
        None
    };
    let mut walk = Walk {
        root: dir.to_path_buf(),
        cap: max_bytes().map_err(|e| FixtureError(format!("{what}: {e}")))?,
        hash_cap: prerun_hash_cap(),
        tracked,
        total: 0,
        over_cap: false,
        problems: Vec::new(),
        found: Vec::new(),
    };
    let root = walk.root.clone();
    walk.dir(&root, "");
    if !walk.problems.is_empty() {
        return Err(FixtureError(format!(
            "{what}: refused — {} problem(s): {}",
            walk.problems.len(),
            walk.problems.join("; ")
        )));
    }
    if walk.found.is_empty() {
        return Err(FixtureError(format!(
            "{what}: holds no file to stage — an empty fixture tests nothing (OS metadata files \
             are skipped)"
        )));
    }
    let mut files = Vec::with_capacity(walk.found.len());
    for (rel, abs, meta) in walk.found {
        files.push(
            read_file(rel, &abs, &meta).map_err(|why| FixtureError(format!("{what}: {why}")))?,
        );
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let sig = signature(
        files
            .iter()
            .map(|f| (f.path.as_str(), f.sha256.as_str(), f.exec)),
    );
    let file_sigs = files.iter().map(|f| (f.path.clone(), f.sig())).collect();
    Ok(ScannedFixture {
        dir: dir.to_path_buf(),
        files,
        sig,
        file_sigs,
    })
}

/// The session-path tokens cowork-harness's `fixture export
/// --session-paths` writes in place of a session root (its
/// src/fixture/session-tokens.ts): staging writes the new session's root back.
pub const SESSION_TOKENS: [&str; 2] = [
    "__COWORK_HARNESS_SESSION_ROOT__",
    "__COWORK_HARNESS_VM_SESSION_ROOT__",
];

/// One found file, read and digested; a binary file holding a session-path
/// token is refused (a substitution would corrupt it).
fn read_file(rel: String, abs: &Path, meta: &fs::Metadata) -> Result<FixtureFile, String> {
    let body = fs::read(abs).map_err(|e| format!("{rel:?} cannot be read ({e})"))?;
    let has_token = SESSION_TOKENS
        .iter()
        .any(|t| memchr::memmem::find(&body, t.as_bytes()).is_some());
    // Text when no NUL is in the first 8 KiB, as the original sniffs it.
    let text = !body[..body.len().min(8192)].contains(&0);
    if has_token && !text {
        return Err(format!(
            "{rel:?} is binary and holds a session-path token — only a text file's token can be \
             replaced"
        ));
    }
    let mode = meta.permissions().mode();
    Ok(FixtureFile {
        sha256: hex::encode(Sha256::digest(&body)),
        exec: mode & 0o100 != 0,
        mode: mode & 0o777,
        bytes: body.len() as u64,
        tokens: has_token,
        path: rel,
    })
}

/// Why a fixture cannot be staged at the protocol tier, the only one reel
/// runs: a session-path token names a session root, and this tier has no
/// session layout to write in its place (the original refuses it before
/// spend, test/fixture-session-tokens.test.ts). The agent is never handed a
/// raw token.
pub fn protocol_token_refusal(scan: &ScannedFixture, label: &str) -> Option<String> {
    let tokenised: Vec<String> = scan
        .files
        .iter()
        .filter(|f| f.tokens)
        .map(|f| format!("{:?}", f.path))
        .collect();
    (!tokenised.is_empty()).then(|| {
        format!(
            "workspace_fixture {label}: {} hold(s) a session-path token, and the protocol tier \
             has no session layout to write in its place",
            tokenised.join(", ")
        )
    })
}

/// Copies a scanned fixture into a fresh run's `outputs` directory: regular
/// files only, permission bits kept, fresh mtimes. Refuses an `outputs` that
/// already holds anything (the fixture would merge over a stale tree), and
/// re-checks each file's digest against the scan, so what is staged is
/// exactly what the recorded signature describes.
pub fn stage(scan: &ScannedFixture, outputs: &Path) -> Result<(), FixtureError> {
    let dir = scan.dir.display();
    let fail = |what: String| FixtureError(format!("workspace_fixture {dir}: {what}"));
    fs::create_dir_all(outputs).map_err(|e| fail(format!("create {}: {e}", outputs.display())))?;
    let mut present: Vec<String> = fs::read_dir(outputs)
        .map_err(|e| fail(format!("list {}: {e}", outputs.display())))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !present.is_empty() {
        present.sort();
        let more = if present.len() > 5 { ", …" } else { "" };
        present.truncate(5);
        return Err(fail(format!(
            "the session's outputs dir {} is not empty ({}{more}) — a fixture is staged only \
             into a fresh session",
            outputs.display(),
            present.join(", ")
        )));
    }
    for f in &scan.files {
        let body = read_no_follow(&scan.dir, &f.path)
            .map_err(|e| fail(format!("{:?} cannot be read ({e})", f.path)))?;
        if hex::encode(Sha256::digest(&body)) != f.sha256 {
            return Err(fail(format!(
                "{:?} changed between the scan and staging — re-run once the fixture is stable",
                f.path
            )));
        }
        let target = outputs.join(&f.path);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| fail(format!("create {}: {e}", parent.display())))?;
        }
        write_new(&target, &body, f.mode).map_err(|e| fail(format!("stage {:?}: {e}", f.path)))?;
    }
    Ok(())
}

/// Reads `rel` under `root`, refusing a symlink at the leaf (the scan
/// refused them; one planted since is not followed).
fn read_no_follow(root: &Path, rel: &str) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(root.join(rel))?;
    let mut body = Vec::new();
    file.read_to_end(&mut body)?;
    Ok(body)
}

/// Creates `path` (never overwriting) with `mode`, whatever the umask.
fn write_new(path: &Path, body: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    file.write_all(body)?;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// The keys whose pass proves a file is there (or its body), not that the
/// run wrote it.
const PRESENCE_KEYS: [&str; 4] = [
    "file_exists",
    "user_visible_artifact",
    "artifact_text",
    "artifact_json",
];

/// Refuses, before anything runs, a presence or body assertion naming a file
/// the fixture provides (or a directory holding one) without `authored:`:
/// it would pass on the fixture alone, before the step under test does
/// anything. Paths compare normalised and case-folded (a case-insensitive
/// filesystem resolves `REPORT.md` to `report.md`). `None`: nothing refused.
pub fn presence_refusal(
    scenario: &str,
    assert: &[serde_json::Value],
    files: &[FixtureFile],
) -> Option<String> {
    let mut targets = std::collections::HashSet::new();
    for f in files {
        let full = format!("outputs/{}", f.path).to_lowercase();
        let mut at = 0;
        while let Some(i) = full[at..].find('/') {
            targets.insert(full[..at + i].to_owned());
            at += i + 1;
        }
        targets.insert(full);
    }
    let mut hits = Vec::new();
    for item in assert {
        for key in PRESENCE_KEYS {
            let Some(v) = item.get(key) else { continue };
            let path = match v {
                serde_json::Value::String(p) => Some(p.as_str()),
                serde_json::Value::Object(o)
                    if o.get("authored").is_some_and(|a| a.is_boolean()) =>
                {
                    None
                }
                serde_json::Value::Object(o) => {
                    let field = if key.starts_with("artifact_") {
                        "artifact"
                    } else {
                        "path"
                    };
                    o.get(field).and_then(serde_json::Value::as_str)
                }
                _ => None,
            };
            if let Some(p) = path.filter(|p| targets.contains(&normalised(p))) {
                hits.push(format!("{key} {p}"));
            }
        }
    }
    let first = hits
        .first()?
        .split_once(' ')
        .map_or("", |(_, p)| p)
        .to_owned();
    Some(format!(
        "scenario {scenario:?}: {} assertion(s) name a file (or a directory) the \
         workspace_fixture already provides, so they pass on the fixture alone before the step \
         under test does anything: {}. State what you mean: `authored: true` (this run must \
         write it — e.g. `file_exists: {{path: {first}, authored: true}}`; it applies to a file, \
         not a directory), `authored: false` (inheriting it is fine), or assert on a file the \
         step writes.",
        hits.len(),
        hits.join(", ")
    ))
}

/// A work-root-relative path as compared with `outputs/<fixture path>`:
/// separators, `./`, `a/../`, a trailing `/`, and case.
fn normalised(p: &str) -> String {
    let posix = crate::paths::forward_slashes(p);
    crate::paths::to_posix(&crate::paths::lexical(Path::new(posix.as_ref())))
        .trim_end_matches('/')
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_paths_are_named() {
        assert!(control_reason("a/.claude/settings.json").is_some());
        assert!(control_reason("CLAUDE.md").is_some());
        assert!(control_reason("sub/.MCP.json").is_some());
        assert!(control_reason("docs/claude-notes.md").is_none());
    }

    #[test]
    fn signature_ignores_list_order() {
        let a = signature([("b", "2", false), ("a", "1", true)]);
        let b = signature([("a", "1", true), ("b", "2", false)]);
        assert_eq!(a, b);
        assert_ne!(a, signature([("a", "1", false), ("b", "2", false)]));
    }

    /// test/workspace-fixture.test.ts, "staging — copied into outputs/".
    #[test]
    fn staging_keeps_modes_refuses_a_non_empty_outputs_and_a_changed_file() {
        let t = tempfile::tempdir().unwrap();
        let fx = t.path().join("fx");
        fs::create_dir_all(fx.join("scores")).unwrap();
        fs::write(fx.join("scores/deck.json"), "{\"score\":7}\n").unwrap();
        fs::write(fx.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(fx.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        let scan = scan(&fx, "fx").unwrap();
        let out = t.path().join("outputs");
        stage(&scan, &out).unwrap();
        assert_eq!(
            fs::read_to_string(out.join("scores/deck.json")).unwrap(),
            "{\"score\":7}\n"
        );
        let mode = fs::metadata(out.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        let again = stage(&scan, &out).unwrap_err().0;
        assert!(
            again.contains("outputs dir") && again.contains("is not empty"),
            "{again}"
        );

        fs::write(fx.join("run.sh"), "changed after the scan").unwrap();
        let fresh = t.path().join("fresh");
        let changed = stage(&scan, &fresh).unwrap_err().0;
        assert!(
            changed.contains("changed between the scan and staging"),
            "{changed}"
        );
    }

    /// test/workspace-fixture.test.ts, "load-time refusal".
    #[test]
    fn presence_assertions_on_fixture_files_must_state_authored() {
        let file = |p: &str| FixtureFile {
            tokens: false,
            path: p.into(),
            sha256: String::new(),
            exec: false,
            mode: 0o644,
            bytes: 0,
        };
        let files = [file("report.md"), file("scores/deck.json")];
        let refused = presence_refusal(
            "step2",
            &[
                serde_json::json!({"file_exists": "outputs/report.md"}),
                serde_json::json!({"user_visible_artifact": "outputs/scores/deck.json"}),
                serde_json::json!({"artifact_text": {"artifact": "outputs/REPORT.md", "contains": ["x"]}}),
                serde_json::json!({"artifact_json": {"artifact": "./outputs/scores/deck.json", "path": "score"}}),
                serde_json::json!({"file_exists": "outputs/scores/"}),
            ],
            &files,
        )
        .unwrap();
        assert!(refused.contains("5 assertion(s)"), "{refused}");
        assert!(
            refused.contains("file_exists outputs/report.md"),
            "{refused}"
        );
        assert!(refused.contains("authored: true"), "{refused}");
        assert_eq!(
            presence_refusal(
                "step2",
                &[
                    serde_json::json!({"file_exists": {"path": "outputs/report.md", "authored": true}}),
                    serde_json::json!({"artifact_text": {"artifact": "outputs/report.md", "authored": false}}),
                    serde_json::json!({"file_exists": "outputs/step2.md"}),
                ],
                &files,
            ),
            None
        );
    }
}
