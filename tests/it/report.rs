//! The status reporter (`src/report/status.rs`) end to end: `replay`,
//! `verify-cassettes` and `rehash` print one status line per file naming it,
//! the file's failures and warnings under it, and close with
//! `N passed, N failed…`. Pinned with insta snapshots (times masked) on the
//! bundled cassettes, the red ones and a mixed directory.

use std::path::Path;

use crate::support::{self, RunExt};

/// Runs reel in `dir`; returns (exit code, stdout, stderr).
fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let run = support::reel().current_dir(dir).args(args).run();
    (run.code, run.stdout, run.stderr)
}

/// Snapshots `text` with per-file times and temp paths masked.
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({filters => vec![
            (r"(?m)  \d+ ms$|  \d+\.\d+ s$", "  [time]"),
            (r"/tmp/reel-replay-[A-Za-z0-9]+", "[tmp]"),
        ]}, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

/// Every status line names a file; the last line is the tally.
fn assert_shape(stderr: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    let statuses = ["PASS ", "FAIL ", "STALE ", "ERROR ", "SKIP "];
    for l in &lines {
        if let Some(s) = statuses.iter().find(|s| l.starts_with(**s)) {
            let file = l[s.len()..].split("  ").next().unwrap();
            assert!(file.ends_with(".cassette.json"), "{l}");
        }
    }
    let last = lines.last().expect("some output");
    let re = regex::Regex::new(
        r"^\d+ passed, \d+ failed(, \d+ stale)?(, \d+ errors?)?(, \d+ skipped)?$",
    )
    .unwrap();
    assert!(re.is_match(last), "last line is the tally: {last:?}");
}

#[test]
fn replay_of_the_bundled_cassettes() {
    let (rc, stdout, stderr) = run(&support::repo(), &["replay", "cassettes/"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(stdout.is_empty());
    assert_shape(&stderr);
    snapshot!("replay_bundled", stderr);
}

#[test]
fn replay_of_the_red_cassettes() {
    let (rc, stdout, stderr) = run(&support::repo(), &["replay", "cassettes/red"]);
    assert_eq!(rc, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert_shape(&stderr);
    snapshot!("replay_red", stderr);
}

/// `mixed/cassettes`: green, red, unreadable and (the skill edited since
/// the recording) stale cassettes, beside the sessions and skills they name.
fn mixed() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in ["sessions", "skills"] {
        support::copy_tree(&support::repo().join(d), &root.join(d));
    }
    let cassettes = root.join("cassettes");
    std::fs::create_dir_all(&cassettes).unwrap();
    for f in [
        "cassettes/write-note.cassette.json",
        "cassettes/skill-triggered.cassette.json",
        "cassettes/red/wrong-answer.cassette.json",
    ] {
        let from = support::repo().join(f);
        std::fs::copy(&from, cassettes.join(from.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        cassettes.join("truncated.cassette.json"),
        "{ \"cassetteVersion\": 12, \"events\": [",
    )
    .unwrap();
    // Committed (the bundled cassettes were recorded in git file-set mode),
    // then one skill file edited.
    let repo = git2::Repository::init(root).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("reel tests", "tests@reel.invalid").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "fixture", &tree, &[])
        .unwrap();
    let skill = root.join("skills/note-style/SKILL.md");
    let mut text = std::fs::read_to_string(&skill).unwrap();
    text.push_str("\nedited after the recording\n");
    std::fs::write(&skill, text).unwrap();
    tmp
}

#[test]
fn replay_of_a_mixed_directory() {
    let tmp = mixed();
    let (rc, stdout, stderr) = run(tmp.path(), &["replay", "cassettes"]);
    assert_eq!(rc, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert_shape(&stderr);
    snapshot!("replay_mixed", stderr);
    // --strict turns the skill drift into a STALE cassette.
    let (rc, _, stderr) = run(tmp.path(), &["replay", "cassettes", "--strict"]);
    assert_eq!(rc, 2, "{stderr}");
    assert_shape(&stderr);
    snapshot!("replay_mixed_strict", stderr);
}

#[test]
fn verify_cassettes_of_a_mixed_directory() {
    let tmp = mixed();
    let (rc, stdout, stderr) = run(tmp.path(), &["verify-cassettes", "cassettes"]);
    // A verified finding (the stale cassette) outranks could-not-verify.
    assert_eq!(rc, 1, "{stderr}");
    assert!(stdout.is_empty());
    assert_shape(&stderr);
    snapshot!("verify_mixed", stderr);
}

#[test]
fn rehash_of_the_bundled_cassettes_skips_each_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    support::copy_tree(
        &support::repo().join("cassettes"),
        &tmp.path().join("cassettes"),
    );
    let (rc, stdout, stderr) = run(tmp.path(), &["rehash", "cassettes", "--dry-run"]);
    assert_eq!(rc, 0, "{stderr}");
    assert!(stdout.is_empty());
    assert_shape(&stderr);
    snapshot!("rehash_bundled", stderr);
}

#[test]
fn verbose_keeps_the_original_footer_per_file() {
    let (rc, _, stderr) = run(
        &support::repo(),
        &[
            "replay",
            "cassettes/red/wrong-answer.cassette.json",
            "--verbose",
        ],
    );
    assert_eq!(rc, 1);
    assert!(stderr.starts_with("✗ FAIL [replay:protocol]"), "{stderr}");
    assert!(stderr.contains("   guards: "), "{stderr}");
    assert!(!stderr.contains("passed,"), "{stderr}");
}

#[test]
fn colour_on_a_terminal_only() {
    // Off a terminal (the test's pipe) anstream drops colour, with or without NO_COLOR.
    let out = assert_cmd::Command::cargo_bin("reel")
        .unwrap()
        .current_dir(support::repo())
        .env_remove("NO_COLOR")
        .env_remove("GITHUB_ACTIONS")
        .args(["replay", "cassettes/red"])
        .output()
        .unwrap();
    assert!(
        !out.stderr.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Forced colour (CLICOLOR_FORCE, honoured by anstream) paints the words, which stay.
    let out = assert_cmd::Command::cargo_bin("reel")
        .unwrap()
        .current_dir(support::repo())
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1")
        .args(["replay", "cassettes/red"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains('\x1b'), "{text}");
    assert!(text.contains("FAIL"), "{text}");
}
