//! `reel gc`: kept run directories removed by age or all, nothing else ever
//! (a directory without reel's marker, a symlink out of the root, a stray
//! file all survive); a bare `gc` (and `gc --dry-run`) is the default age;
//! where the runs root is (never under the home); the JSON envelope's schema.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::support::{self, RunExt};

/// `<root>/demo/local_old` (3 days old), `local_new`, a directory without
/// the marker, a symlink to a marked directory outside, a stray file.
fn plant(root: &Path, outside: &Path) {
    let old = reel::runs::create_in(root, "demo").unwrap();
    let old = {
        let to = old.with_file_name("local_old");
        std::fs::rename(&old, &to).unwrap();
        to
    };
    std::fs::write(old.join("events.jsonl"), "x".repeat(2048)).unwrap();
    let three_days = SystemTime::now() - Duration::from_secs(3 * 86_400 + 60);
    std::fs::File::options()
        .write(true)
        .open(old.join(reel::runs::MARKER))
        .unwrap()
        .set_modified(three_days)
        .unwrap();
    let new = reel::runs::create_in(root, "demo").unwrap();
    std::fs::rename(&new, new.with_file_name("local_new")).unwrap();
    std::fs::create_dir_all(root.join("demo/not-reel")).unwrap();
    std::fs::write(root.join("demo/not-reel/keep.txt"), "mine").unwrap();
    std::fs::create_dir_all(outside).unwrap();
    std::fs::write(outside.join(reel::runs::MARKER), "looks like one").unwrap();
    std::fs::write(outside.join("precious.txt"), "mine").unwrap();
    std::os::unix::fs::symlink(outside, root.join("demo/local_link")).unwrap();
    std::os::unix::fs::symlink(outside, root.join("elsewhere")).unwrap();
    std::fs::write(root.join("stray.txt"), "mine").unwrap();
}

fn gc(root: &Path, args: &[&str]) -> support::Run {
    support::reel()
        .arg("gc")
        .args(args)
        .env("REEL_RUNS_DIR", root)
        .run()
}

#[test]
fn older_than_removes_old_runs_only_and_never_anything_else() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("runs");
    let outside = t.path().join("outside");
    plant(&root, &outside);

    let dry = gc(&root, &["--older-than", "2d", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        root.join("demo/local_old").is_dir(),
        "a dry run removes nothing"
    );

    let r = gc(&root, &["--older-than", "2d"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!root.join("demo/local_old").exists());
    assert!(root.join("demo/local_new").is_dir());
    assert!(root.join("demo/not-reel/keep.txt").is_file());
    assert!(root.join("stray.txt").is_file());
    assert!(outside.join("precious.txt").is_file());
    assert!(std::fs::symlink_metadata(root.join("demo/local_link")).is_ok());
    let root_text = root.display().to_string();
    insta::with_settings!({filters => vec![(root_text.as_str(), "[ROOT]")]}, {
        insta::assert_snapshot!("gc_older_than_dry_run", dry.stderr);
        insta::assert_snapshot!("gc_older_than", r.stderr);
    });

    let all = gc(&root, &["--all"]);
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert!(!root.join("demo/local_new").exists());
    assert!(root.join("demo/not-reel/keep.txt").is_file());
    assert!(outside.join("precious.txt").is_file());
    assert!(outside.join(reel::runs::MARKER).is_file());
}

#[test]
fn json_follows_the_schema_and_names_the_root() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("runs");
    plant(&root, &t.path().join("outside"));
    let out = gc(&root, &["--all", "--dry-run", "--output-format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let schema: Value =
        serde_json::from_slice(&std::fs::read(support::repo().join("schema/gc.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{v}");
    assert_eq!(v["root"], root.display().to_string());
    let removed: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["removed"] == true)
        .map(|r| r["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(removed, ["local_new", "local_old"]);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 4, "{v}");
    assert!(root.join("demo/local_old").is_dir(), "--dry-run");
}

/// `reel gc --dry-run` alone lists what a bare `reel gc` removes: runs a
/// week old or more (it was a usage error).
#[test]
fn a_bare_dry_run_shows_the_default_gc() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("runs");
    plant(&root, &t.path().join("outside"));
    let week_old = SystemTime::now() - Duration::from_secs(8 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(root.join("demo/local_old").join(reel::runs::MARKER))
        .unwrap()
        .set_modified(week_old)
        .unwrap();
    let dry = gc(&root, &["--dry-run", "--output-format", "json"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let v: Value = serde_json::from_str(&dry.stdout).unwrap();
    let removed: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["removed"] == true)
        .map(|r| r["path"].as_str().unwrap().rsplit('/').next().unwrap())
        .collect();
    assert_eq!(removed, ["local_old"], "{v}");
    assert!(root.join("demo/local_old").is_dir(), "--dry-run");
    let r = gc(&root, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!root.join("demo/local_old").exists());
    assert!(root.join("demo/local_new").is_dir());
}

/// Without `REEL_RUNS_DIR` the root is `<tmp>/reel-<uid>/runs`: the system
/// temp dir, or `/tmp` when that is under the home (a recorded run path
/// must not carry the home or the login name). Listed by a dry run only.
#[test]
fn the_default_root_is_under_the_temp_dir_never_the_home() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home/alice");
    let root_of = |tmpdir: &Path| -> String {
        std::fs::create_dir_all(tmpdir).unwrap();
        let out = support::reel()
            .args(["gc", "--dry-run", "--output-format", "json"])
            .env_remove("REEL_RUNS_DIR")
            .env_remove("XDG_CACHE_HOME")
            .env("HOME", &home)
            .env("TMPDIR", tmpdir)
            .run();
        assert_eq!(out.code, 0, "{}", out.stderr);
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["root"].as_str().unwrap().to_owned()
    };
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let neutral = t.path().join("tmp");
    assert_eq!(
        root_of(&neutral),
        neutral
            .join(format!("reel-{uid}/runs"))
            .display()
            .to_string()
    );
    assert_eq!(root_of(&home.join("tmp")), format!("/tmp/reel-{uid}/runs"));
}

#[test]
fn gc_needs_a_valid_age() {
    let t = tempfile::tempdir().unwrap();
    let r = gc(t.path(), &["--older-than", "soon"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("expected a duration"), "{}", r.stderr);
}
