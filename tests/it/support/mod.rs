//! The integration tests' one kit: paths into the repo's test data, the
//! `reel` runner ([`run`]), the temp-dir [`Fixture`], the [`CassetteDoc`]
//! builder, the seeded [`Rng`], the [`Failures`] collector and the
//! [`require!`] skip that is visible locally and fails under `CI=true`.
//!
//! Details: `Fixture` is a temp dir and its file/git verbs (`capture_layout()`
//! is the tree capture.sh ran cowork-harness in); `CassetteDoc` builds or edits
//! a cassette as JSON with recorded lines parsed (never `.replace()` on JSON
//! text); `Run` / `RunExt` give the exit code and both streams of a command;
//! `Rng` is the one seeded xorshift64*, shared with the benches; `Failures`
//! lets a corpus loop record every failing case, then assert once; `compat`
//! reads INDEX.txt cases; `require!` prints `SKIPPED <test>: <why>` past
//! libtest's capture and fails under `CI=true`. A suite's own verbs are a local
//! trait on `Fixture`.

#![allow(dead_code)]

pub mod browser;
pub mod cassette;
pub mod compat;
pub mod failures;
pub mod fixture;
pub mod rng;
pub mod run;

pub use cassette::CassetteDoc;
pub use failures::Failures;
pub use fixture::Fixture;
pub use rng::Rng;
pub use run::{Run, RunExt};

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The repository root (where Cargo.toml lives).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/data/<rel>`.
pub fn data(rel: &str) -> PathBuf {
    repo().join("tests/data").join(rel)
}

/// `tests/compat/<rel>`: cowork-harness's own example cassettes and outputs.
pub fn compat(rel: &str) -> PathBuf {
    repo().join("tests/compat").join(rel)
}

/// A `reel` command ready to run, with colour off and the CI env cleared so
/// output does not depend on the caller's terminal.
/// Bundled examples whose every run differs on purpose (a random reference,
/// a zip's timestamps): a byte-level re-record comparison skips them;
/// `rerun::the_zip_writing_example_reruns_green_under_strict_with_its_masks`
/// is their check, through `reel.toml`'s masks.
pub const VOLATILE_BY_DESIGN: &[&str] = &["doc-report"];

pub fn reel() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("reel").unwrap();
    cmd.env("NO_COLOR", "1").env_remove("GITHUB_ACTIONS");
    cmd
}

/// True when running under CI: a missing prerequisite must fail, not skip.
pub fn in_ci() -> bool {
    std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
}

/// Copies a directory tree (files and symlinks) into `dst`.
pub fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let ty = entry.file_type().unwrap();
        let to = dst.join(entry.file_name());
        if ty.is_dir() {
            copy_tree(&entry.path(), &to);
        } else if ty.is_symlink() {
            let target = std::fs::read_link(entry.path()).unwrap();
            std::os::unix::fs::symlink(target, &to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
            let mut perms = std::fs::metadata(&to).unwrap().permissions();
            use std::os::unix::fs::PermissionsExt;
            perms.set_mode(perms.mode() | 0o200);
            std::fs::set_permissions(&to, perms).unwrap();
        }
    }
}

/// Skips the calling test when `prerequisite` is missing: prints `SKIPPED
/// <test>: <why>` straight to stderr (past libtest's capture, so a local run
/// names every skipped test) and returns; under `CI=true` the test fails
/// instead. `require!(result)` takes a `Result<T, impl Display>` and yields
/// the `T`; `require!(condition, why)` takes a bool.
macro_rules! require {
    ($prerequisite:expr) => {
        match $prerequisite {
            Ok(value) => value,
            Err(why) => {
                $crate::support::skip(&why.to_string());
                return;
            }
        }
    };
    ($condition:expr, $why:expr) => {
        if !$condition {
            $crate::support::skip(&$why.to_string());
            return;
        }
    };
}
pub(crate) use require;

/// What [`require!`] does with a missing prerequisite: fail under CI, else
/// say so where a local `cargo test` shows it. The test's name is its
/// thread's (libtest names each test thread after the test).
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("<unnamed test>");
    if in_ci() {
        panic!("{test}: prerequisite missing (CI=true, so this fails rather than skips): {why}");
    }
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// The pinned Claude Code CLI: env `REEL_CLAUDE_BIN`, else
/// `<repo>/.tools/claude/node_modules/.bin/claude`, else installed once with
/// `scripts/install-claude.sh`; `Err(why)` when it cannot be had (for
/// [`require!`], which fails the test under CI).
pub fn claude_bin() -> Result<PathBuf, String> {
    static BIN: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("REEL_CLAUDE_BIN") {
            let bin = PathBuf::from(bin);
            if bin.is_file() {
                return Ok(bin);
            }
            return Err(format!("REEL_CLAUDE_BIN={} is not a file", bin.display()));
        }
        let local = repo().join(".tools/claude/node_modules/.bin/claude");
        if local.is_file() {
            return Ok(local);
        }
        let installed = std::process::Command::new("bash")
            .arg(repo().join("scripts/install-claude.sh"))
            .stdout(std::process::Stdio::null())
            .status();
        if local.is_file() {
            return Ok(local);
        }
        Err(format!(
            "the Claude Code CLI is missing at {} and `bash scripts/install-claude.sh` did not \
             install it ({installed:?}); set REEL_CLAUDE_BIN or run the install script",
            local.display()
        ))
    })
    .clone()
}

/// The original, cowork-harness 2.0.0, built as docs/spec's
/// running-the-original.md says: env `REEL_ORIGINAL_CLI` names its
/// `dist/cli.js`, run by `node` on `PATH` (or env `REEL_ORIGINAL_NODE`).
/// `Err(why)` when it is not there (for [`require!`]).
pub fn original_cli() -> Result<(PathBuf, PathBuf), String> {
    let cli = std::env::var_os("REEL_ORIGINAL_CLI")
        .map(PathBuf::from)
        .ok_or(
            "cowork-harness 2.0.0 is not built here: set REEL_ORIGINAL_CLI to its dist/cli.js \
         (recipe: /work/shared/spec/running-the-original.md)",
        )?;
    if !cli.is_file() {
        return Err(format!("REEL_ORIGINAL_CLI={} is not a file", cli.display()));
    }
    let node = std::env::var_os("REEL_ORIGINAL_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    Ok((node, cli))
}

/// Runs `git` in `dir` with a fixed identity and the caller's repository
/// variables cleared; panics with git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs (install git to run these tests)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The cowork-harness writer's bytes: `JSON.stringify(d, null, 2)`.
pub fn js_pretty(doc: &Map<String, Value>) -> Vec<u8> {
    serde_json::to_vec_pretty(doc).unwrap()
}

/// A JSON object file.
pub fn read_doc(p: &Path) -> Map<String, Value> {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// A JSON file.
pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Every error `schema/<name>` reports on `instance` (empty: valid).
pub fn schema_errors(name: &str, instance: &Value) -> Vec<String> {
    let schema = read_json(&repo().join("schema").join(name));
    let validator = jsonschema::validator_for(&schema).unwrap();
    validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

/// Asserts that `schema/<name>` accepts `instance`.
pub fn assert_schema(name: &str, instance: &Value) {
    let errors = schema_errors(name, instance);
    assert!(errors.is_empty(), "{name}: {errors:?}\n{instance}");
}

/// Replaces the private temp dir an evidence string names (`/tmp/cwh-replay-XXXXXX`
/// in cowork-harness, `/tmp/reel-replay-XXXXXX` in reel) with `<tmp>`.
pub fn without_temp_dirs(v: &Value) -> Value {
    use serde_json::Value;
    let re = regex::Regex::new(r"/[^\s\x22]*?(cwh|reel)-replay-[A-Za-z0-9]+").unwrap();
    match v {
        Value::String(s) => Value::String(re.replace_all(s, "<tmp>").into_owned()),
        Value::Array(a) => Value::Array(a.iter().map(without_temp_dirs).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), without_temp_dirs(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Asserts that reel's replay envelope `got` carries the same run result as
/// cowork-harness's `want`: the same keys in the same order and equal
/// values, apart from the documented departures (README "Differences":
/// `nonReproducibleAnswers`, `provenance`, reel's added `file`) and temp-dir
/// paths, and the same `ok`.
pub fn assert_same_result_as_original(name: &str, got: &Value, want: &Value) {
    let got = &as_the_original_judges(got);
    let (w, g) = (
        want["results"][0].as_object().unwrap(),
        got["results"][0].as_object().unwrap(),
    );
    let skip = ["provenance", "nonReproducibleAnswers", "file"];
    let keys = |m: &Map<String, Value>| -> Vec<String> {
        m.keys()
            .filter(|k| !skip.contains(&k.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(keys(g), keys(w), "{name}: result keys and their order");
    for k in keys(w) {
        assert_eq!(
            without_temp_dirs(&g[&k]),
            without_temp_dirs(&w[&k]),
            "{name}: `{k}`"
        );
    }
    assert_eq!(got["ok"], want["ok"], "{name}: ok");
}

/// reel's replay with its judged assertions (README "Differences": reel
/// replays a frozen `semantic_matches` verdict) taken back out, as the
/// original's live-only skip: each a full skip.
fn as_the_original_judges(got: &Value) -> Value {
    let mut got = got.clone();
    let r = &mut got["results"][0];
    let Some(items) = r["assertions"].as_array_mut() else {
        return got;
    };
    let before = items.len();
    items.retain(|a| a.get("judgeStatus").is_none());
    let judged = (before - items.len()) as u64;
    if judged > 0 {
        let full = r["skippedAssertions"]["full"].as_u64().unwrap_or(0);
        r["skippedAssertions"]["full"] = Value::from(full + judged);
    }
    got
}

/// The bundled example cassettes (`cassettes/*.cassette.json`), sorted.
pub fn bundled_cassettes() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(repo().join("cassettes"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".cassette.json"))
        .collect();
    out.sort();
    assert!(out.len() >= 6, "bundled cassettes missing: {out:?}");
    out
}

/// cowork-harness's example cassettes (tests/compat/examples/replays), sorted.
pub fn compat_cassettes() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(compat("examples/replays"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".cassette.json"))
        .collect();
    out.sort();
    assert!(!out.is_empty());
    out
}

/// Copies the example tree into `dst` and commits it (skills are staged in
/// git file-set mode, as in the repository).
pub fn example_tree(dst: &Path) {
    for dir in ["scenarios", "sessions", "skills", "data"] {
        copy_tree(&repo().join(dir), &dst.join(dir));
    }
    git_commit_all(dst);
}

/// Commits everything under `dir` into a fresh git repository (git2, the
/// same library the walk reads the index with).
pub fn git_commit_all(dir: &Path) {
    let repo = git2::Repository::init(dir).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("reel test", "reel@example.invalid").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "fixture", &tree, &[])
        .unwrap();
}

/// Puts the pinned Claude Code CLI ([`claude_bin`]) into the agent cache
/// `cache` the way `reel agents install` leaves a release
/// (`<cache>/<version>/node_modules/…` and its marker), and returns its
/// version: its npm tree hard-linked (no download, no disk; a symlink where
/// hard links cannot cross file systems). A release already there is kept.
pub fn link_pinned_release(cache: &Path) -> Result<String, String> {
    let bin = std::fs::canonicalize(claude_bin()?).map_err(|e| e.to_string())?;
    let modules = bin
        .ancestors()
        .find(|d| {
            d.file_name().is_some_and(|n| n == "node_modules")
                && d.join("@anthropic-ai/claude-code/package.json").is_file()
        })
        .ok_or_else(|| format!("{} is not inside an npm tree", bin.display()))?
        .to_owned();
    let pkg: Value = serde_json::from_slice(
        &std::fs::read(modules.join("@anthropic-ai/claude-code/package.json"))
            .map_err(|e| format!("the CLI's package.json: {e}"))?,
    )
    .map_err(|e| e.to_string())?;
    let version = pkg["version"].as_str().ok_or("no version")?.to_owned();
    let dir = cache.join(&version);
    let marker = dir.join(".reel-agent.json");
    if marker.is_file() {
        return Ok(version);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let linked = std::process::Command::new("cp")
        .arg("-al")
        .arg(&modules)
        .arg(&dir)
        .status()
        .is_ok_and(|s| s.success());
    if !linked {
        let _ = std::fs::remove_dir_all(dir.join("node_modules"));
        std::os::unix::fs::symlink(&modules, dir.join("node_modules"))
            .map_err(|e| format!("link the CLI's npm tree: {e}"))?;
    }
    let stamp = serde_json::json!({"package": "@anthropic-ai/claude-code", "version": version});
    std::fs::write(&marker, stamp.to_string()).map_err(|e| e.to_string())?;
    Ok(version)
}
