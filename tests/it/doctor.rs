//! `reel doctor`: a working machine (the real pinned `claude` against the
//! scripted model) and each missing piece, simulated with environment
//! overrides (REEL_CLAUDE_BIN, PATH, the working directory).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::support;

/// `reel doctor --output-format json` with `envs` (and `PATH` replaced when
/// given); returns (exit code, checks by name).
fn doctor(cwd: &Path, envs: &[(&str, &str)], path: Option<&str>) -> (i32, Value) {
    let mut cmd = support::reel();
    cmd.current_dir(cwd)
        .env_remove("REEL_CLAUDE_BIN")
        .args(["doctor", "--output-format", "json"]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    support::assert_schema("doctor.json", &v);
    assert_eq!(v["command"], "doctor");
    let mut by_name = serde_json::Map::new();
    for c in v["results"].as_array().unwrap() {
        by_name.insert(c["name"].as_str().unwrap().into(), c.clone());
    }
    assert_eq!(v["ok"], out.status.code() == Some(0));
    (out.status.code().unwrap_or(-1), Value::Object(by_name))
}

/// A PATH of one temp dir holding only `node` (what the claude script runs):
/// no `claude`, no `git`.
fn node_only_path(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let node = which("node").expect("node (the claude CLI runs on it)");
    std::os::unix::fs::symlink(node, bin.join("node")).unwrap();
    bin.display().to_string()
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[test]
fn a_working_machine_can_record() {
    let claude = support::require!(support::claude_bin());
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let (rc, c) = doctor(
        tmp.path(),
        &[
            ("REEL_CLAUDE_BIN", claude.to_str().unwrap()),
            ("REEL_RUNS_DIR", runs.to_str().unwrap()),
        ],
        None,
    );
    assert_eq!(rc, 0, "{c:#}");
    // The handshake's run leaves nothing behind, not even its empty directory.
    let left: Vec<_> =
        std::fs::read_dir(&runs).map_or(Vec::new(), |d| d.flatten().map(|e| e.path()).collect());
    assert!(left.is_empty(), "left in the runs directory: {left:?}");
    assert_eq!(c["agent"]["ok"], true);
    assert!(
        c["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("Claude Code"),
        "{c:#}"
    );
    assert!(
        c["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("via REEL_CLAUDE_BIN")
    );
    assert_eq!(c["handshake"]["ok"], true, "{c:#}");
    assert!(c["handshake"].get("fix").is_none());
    // The text report: a line per check, then the verdict.
    let out = support::reel()
        .current_dir(tmp.path())
        .env("REEL_CLAUDE_BIN", &claude)
        .arg("doctor")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("ok   agent     "), "{err}");
    assert!(
        err.ends_with("recording can work on this machine\n"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_agent_names_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let (rc, c) = doctor(tmp.path(), &[("REEL_CLAUDE_BIN", "/no/such/claude")], None);
    assert_eq!(rc, 1);
    assert_eq!(c["agent"]["ok"], false);
    assert!(
        c["agent"]["detail"]
            .as_str()
            .unwrap()
            .contains("REEL_CLAUDE_BIN=/no/such/claude")
    );
    // Issue #39 item 10: the fix works from an installed reel, not only a
    // checkout of its sources.
    let fix = c["agent"]["fix"].as_str().unwrap();
    assert!(fix.contains("reel agents install latest"), "{fix}");
    assert!(!fix.contains("scripts/"), "{fix}");
    assert!(!c.to_string().contains("scripts/install-claude.sh"), "{c}");
    assert_eq!(c["handshake"]["ok"], false);
    // Nothing set, nothing on PATH, no .tools/claude under the working directory.
    let path = node_only_path(tmp.path());
    let (rc, c) = doctor(tmp.path(), &[], Some(&path));
    assert_eq!(rc, 1);
    assert!(
        c["agent"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("no agent binary"),
        "{c:#}"
    );
}

#[test]
fn an_agent_that_ignores_the_scripted_model_fails_the_handshake() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("claude");
    std::fs::write(
        &fake,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '0.0.1 (Not Claude)'; exit 0; fi\necho 'hello from nowhere'\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (rc, c) = doctor(
        tmp.path(),
        &[("REEL_CLAUDE_BIN", fake.to_str().unwrap())],
        None,
    );
    assert_eq!(rc, 1);
    assert_eq!(c["agent"]["ok"], true);
    assert!(
        c["agent"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("0.0.1 (Not Claude)")
    );
    assert_eq!(c["handshake"]["ok"], false);
    assert!(
        c["handshake"]["detail"]
            .as_str()
            .unwrap()
            .contains("never called the scripted model"),
        "{c:#}"
    );
    assert!(c["handshake"]["fix"].is_string());
}

#[test]
fn missing_git_is_reported_with_its_fix_but_recording_still_works() {
    let claude = support::require!(support::claude_bin());
    let tmp = tempfile::tempdir().unwrap();
    let path = node_only_path(tmp.path());
    let (rc, c) = doctor(
        tmp.path(),
        &[("REEL_CLAUDE_BIN", claude.to_str().unwrap())],
        Some(&path),
    );
    assert_eq!(c["git"]["ok"], false, "{c:#}");
    assert_eq!(c["git"]["required"], false);
    assert!(c["git"]["fix"].as_str().unwrap().contains("install git"));
    assert_eq!(c["handshake"]["ok"], true, "{c:#}");
    assert_eq!(rc, 0);
}
