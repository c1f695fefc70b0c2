//! Shared helpers for integration tests: paths into the repo's test data and a
//! runner for the `reel` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

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

/// The pinned Claude Code CLI: env `REEL_CLAUDE_BIN`, else
/// `<repo>/.tools/claude/node_modules/.bin/claude`, else installed once with
/// `scripts/install-claude.sh`. `None` (after a loud message) when it cannot
/// be had outside CI; under CI a missing binary panics so the test fails.
pub fn claude_bin() -> Option<PathBuf> {
    static BIN: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("REEL_CLAUDE_BIN") {
            let bin = PathBuf::from(bin);
            if bin.is_file() {
                return Some(bin);
            }
            let msg = format!("REEL_CLAUDE_BIN={} is not a file", bin.display());
            if in_ci() {
                panic!("{msg}");
            }
            eprintln!("SKIPPING real-agent test: {msg}");
            return None;
        }
        let local = repo().join(".tools/claude/node_modules/.bin/claude");
        if local.is_file() {
            return Some(local);
        }
        let installed = std::process::Command::new("bash")
            .arg(repo().join("scripts/install-claude.sh"))
            .stdout(std::process::Stdio::null())
            .status();
        if local.is_file() {
            return Some(local);
        }
        let msg = format!(
            "the Claude Code CLI is missing at {} and `bash scripts/install-claude.sh` did not \
             install it ({installed:?}); set REEL_CLAUDE_BIN or run the install script",
            local.display()
        );
        if in_ci() {
            panic!("{msg}");
        }
        eprintln!("SKIPPING real-agent test: {msg}");
        None
    })
    .clone()
}

/// Replaces the private temp dir an evidence string names (`/tmp/cwh-replay-XXXXXX`
/// in cowork-harness, `/tmp/reel-replay-XXXXXX` in reel) with `<tmp>`.
pub fn without_temp_dirs(v: &serde_json::Value) -> serde_json::Value {
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
/// `nonReproducibleAnswers`, `provenance`) and temp-dir paths, and the same `ok`.
pub fn assert_same_result_as_original(
    name: &str,
    got: &serde_json::Value,
    want: &serde_json::Value,
) {
    let (w, g) = (
        want["results"][0].as_object().unwrap(),
        got["results"][0].as_object().unwrap(),
    );
    let skip = ["provenance", "nonReproducibleAnswers"];
    let keys = |m: &serde_json::Map<String, serde_json::Value>| -> Vec<String> {
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
