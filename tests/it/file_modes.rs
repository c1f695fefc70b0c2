//! Files reel writes get the mode a plain write would give them under the
//! user's umask; a rewrite keeps the existing file's mode (the atomic
//! writer's temp file is private, its result is not).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// `reel replay cassettes/write-note.cassette.json --junit <out>` under `umask`.
fn junit_under_umask(umask: &str, out: &Path) {
    let bin = assert_cmd::cargo::cargo_bin("reel");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask {umask} && exec \"$0\" replay cassettes/write-note.cassette.json --junit \"$1\""
        ))
        .arg(&bin)
        .arg(out)
        .current_dir(support::repo())
        .env("NO_COLOR", "1")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_new_report_follows_the_umask_and_a_rewrite_keeps_its_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("junit.xml");
    junit_under_umask("027", &out);
    assert_eq!(mode(&out), 0o640);
    std::fs::remove_file(&out).unwrap();
    junit_under_umask("022", &out);
    assert_eq!(mode(&out), 0o644);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o604)).unwrap();
    junit_under_umask("077", &out);
    assert_eq!(mode(&out), 0o604, "a rewrite keeps the existing mode");
}

#[test]
fn a_rewritten_cassette_keeps_its_mode() {
    // `replay --assert-from … --write` rewrites the cassette in place.
    let tmp = tempfile::tempdir().unwrap();
    for d in ["cassettes", "scenarios", "sessions"] {
        support::copy_tree(&support::repo().join(d), &tmp.path().join(d));
    }
    let file = tmp.path().join("cassettes/write-note.cassette.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o664)).unwrap();
    let out = support::reel()
        .current_dir(tmp.path())
        .args([
            "replay",
            "cassettes/write-note.cassette.json",
            "--assert-from",
            "scenarios/write-note.yaml",
            "--write",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("persisted"), "{err}");
    assert_eq!(mode(&file), 0o664);
}
