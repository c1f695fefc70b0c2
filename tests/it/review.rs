//! The pending-review loop: `reel record` over a committed cassette with the
//! real Claude Code (identical → nothing written; differing → `.new` beside
//! it; `accept` → bytes equal the `.new`; `reject` → the old one byte for
//! byte; `CI=true` → failure with the diff and no file), `reel pending`
//! (text and JSON against schema/pending.json), and `reel review` driven by
//! key presses in a real pseudo-terminal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use expectrl::{Eof, Expect};
use serde_json::{Map, Value};

use crate::support;
use crate::support::{read_doc, schema_errors};

/// Writes `doc` at `path` with the body of its first artifact changed — a
/// committed cassette a fresh recording will differ from in one file.
fn write_edited(doc: &Map<String, Value>, path: &Path, body: &str) {
    let mut doc = doc.clone();
    let a = &mut doc["artifacts"][0];
    a["body"] = body.into();
    a["bytes"] = body.len().into();
    a["sha256"] = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes())).into();
    std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

fn record(root: &Path, claude: &Path, ci: bool, extra: &[&str]) -> std::process::Output {
    let mut cmd = support::reel();
    cmd.current_dir(root)
        .arg("record")
        .arg("scenarios/write-note.yaml")
        .args(extra)
        .env("REEL_CLAUDE_BIN", claude)
        .env("REEL_RUNS_DIR", root.join("runs"))
        .env_remove("ANTHROPIC_API_KEY");
    if ci {
        cmd.env("CI", "true");
    } else {
        cmd.env_remove("CI");
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn record_over_a_committed_cassette_round_trips_through_pending_accept_and_reject() {
    let claude = support::require!(support::claude_bin());
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    support::example_tree(root);
    let committed = root.join("cassettes/write-note.cassette.json");
    let pending = root.join("cassettes/write-note.cassette.json.new");
    std::fs::create_dir_all(committed.parent().unwrap()).unwrap();
    let original = read_doc(&support::repo().join("cassettes/write-note.cassette.json"));

    // 1. Identical re-recording: the committed bytes stay, nothing is added.
    std::fs::copy(
        support::repo().join("cassettes/write-note.cassette.json"),
        &committed,
    )
    .unwrap();
    let before = std::fs::read(&committed).unwrap();
    let out = record(root, &claude, false, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("identical to the committed cassette, nothing written"),
        "{err}"
    );
    // One honest line: not also "recorded …" as if it had been written.
    assert!(!err.lines().any(|l| l.starts_with("recorded ")), "{err}");
    assert_eq!(std::fs::read(&committed).unwrap(), before);
    assert!(!pending.exists());

    // 2. Differing: `.new` beside it, the old one untouched, a review hint.
    write_edited(&original, &committed, "an older note\n");
    let old = std::fs::read(&committed).unwrap();
    let out = record(root, &claude, false, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "cassettes/write-note.cassette.json.new"
    );
    let err = text(&out.stderr);
    assert!(err.contains("differs: files (1)"), "{err}");
    assert!(
        err.contains("reel review cassettes/write-note.cassette.json"),
        "{err}"
    );
    assert_eq!(std::fs::read(&committed).unwrap(), old);
    let new_bytes = std::fs::read(&pending).unwrap();

    // `reel pending` names it (exit 1: something to review).
    let out = support::reel()
        .current_dir(root)
        .arg("pending")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout)
            .starts_with("./cassettes/write-note.cassette.json.new\tdiffers: files (1)"),
        "{}",
        text(&out.stdout)
    );
    let out = support::reel()
        .current_dir(root)
        .args(["pending", "--output-format", "json"])
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema_errors("pending.json", &env).is_empty(), "{env}");
    assert_eq!(env["results"].as_array().unwrap().len(), 1);
    assert_eq!(env["results"][0]["cassetteExists"], true);

    // 3. Reject: the old cassette byte for byte, no `.new`.
    let out = support::reel()
        .current_dir(root)
        .args(["reject", "cassettes/write-note.cassette.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&committed).unwrap(), old);
    assert!(!pending.exists());

    // 4. Record again and accept: the cassette's bytes are the `.new`'s.
    let out = record(root, &claude, false, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let new_bytes_2 = std::fs::read(&pending).unwrap();
    let out = support::reel()
        .current_dir(root)
        .args(["accept", "cassettes/write-note.cassette.json.new"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&committed).unwrap(), new_bytes_2);
    assert!(!pending.exists());
    // Two recordings of one run differ only in masked values.
    let d = support::reel()
        .arg("diff")
        .arg(&committed)
        .arg(support::repo().join("cassettes/write-note.cassette.json"))
        .output()
        .unwrap();
    assert_eq!(d.status.code(), Some(0), "{}", text(&d.stdout));
    drop(new_bytes);

    // 5. CI=true over a differing cassette: fails with the diff, writes nothing.
    write_edited(&original, &committed, "an older note\n");
    let old = std::fs::read(&committed).unwrap();
    let out = record(root, &claude, true, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("CI=true forbids writing a pending `.new`"),
        "{err}"
    );
    assert!(err.contains("~ outputs/note.md body"), "{err}");
    assert!(err.contains("-an older note"), "{err}");
    assert_eq!(std::fs::read(&committed).unwrap(), old);
    assert!(!pending.exists());
    let leftovers: Vec<_> = std::fs::read_dir(committed.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "write-note.cassette.json")
        // The run's snapshot store: its blob is durable before any cassette
        // could name it, so a refused recording leaves it for `gc --snapshots`
        // (docs/snapshots.md).
        .filter(|n| n != ".reel-snapshots")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // 6. --accept writes in place, even under CI.
    let out = record(root, &claude, true, &["--accept"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_ne!(std::fs::read(&committed).unwrap(), old);
    assert!(!pending.exists());
}

/// `dir/NAME.cassette.json` (a bundled cassette) and a `.new` of another.
fn pending_pair(dir: &Path, name: &str, newer: &str) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let c = dir.join(format!("{name}.cassette.json"));
    std::fs::copy(
        support::repo().join(format!("cassettes/{name}.cassette.json")),
        &c,
    )
    .unwrap();
    std::fs::copy(
        support::repo().join(format!("cassettes/{newer}.cassette.json")),
        dir.join(format!("{name}.cassette.json.new")),
    )
    .unwrap();
    let old = std::fs::read(&c).unwrap();
    let new = std::fs::read(dir.join(format!("{name}.cassette.json.new"))).unwrap();
    (c, old, new)
}

fn review_session(dir: &Path) -> expectrl::session::OsSession {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("reel"));
    cmd.arg("review")
        .arg(dir)
        .env("NO_COLOR", "1")
        .env_remove("CI");
    let mut s = expectrl::Session::spawn(cmd).unwrap();
    s.set_expect_timeout(Some(Duration::from_secs(60)));
    s
}

#[test]
fn review_in_a_terminal_accepts_rejects_and_skips_by_key_press() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (a, _, a_new) = pending_pair(dir, "pick-features", "pick-format");
    let (b, b_old, _) = pending_pair(dir, "write-note", "summarize-input");
    let (c, c_old, c_new) = pending_pair(dir, "skill-triggered", "skill-not-triggered");

    let mut s = review_session(dir);
    // Sorted by path: pick-features, skill-triggered, write-note.
    s.expect("[1/3]").unwrap();
    s.expect("differs: ").unwrap();
    s.expect("accept (a), reject (r), skip (s), quit (q)? ")
        .unwrap();
    s.send("x").unwrap(); // not a choice: asked again
    s.expect("accept (a), reject (r), skip (s), quit (q)? ")
        .unwrap();
    s.send("a").unwrap();
    s.expect("accepted: ").unwrap();
    s.expect("[2/3]").unwrap();
    s.expect("? ").unwrap();
    s.send("s").unwrap();
    s.expect("skipped").unwrap();
    s.expect("[3/3]").unwrap();
    s.expect("? ").unwrap();
    s.send("r").unwrap();
    s.expect("rejected: ").unwrap();
    s.expect("review: 1 accepted, 1 rejected, 1 skipped, 1 still pending")
        .unwrap();
    s.expect(Eof).unwrap();

    assert_eq!(
        std::fs::read(&a).unwrap(),
        a_new,
        "accept: bytes of the .new"
    );
    assert_eq!(std::fs::read(&b).unwrap(), b_old, "reject: the old bytes");
    assert!(!dir.join("write-note.cassette.json.new").exists());
    assert_eq!(std::fs::read(&c).unwrap(), c_old, "skip: untouched");
    assert_eq!(
        std::fs::read(dir.join("skill-triggered.cassette.json.new")).unwrap(),
        c_new
    );

    // Quit leaves the rest pending.
    let mut s = review_session(dir);
    s.expect("[1/1]").unwrap();
    s.expect("? ").unwrap();
    s.send("q").unwrap();
    s.expect("0 accepted, 0 rejected, 0 skipped, 1 still pending")
        .unwrap();
    s.expect(Eof).unwrap();
    assert!(dir.join("skill-triggered.cassette.json.new").exists());
}

#[test]
fn review_without_a_terminal_is_a_usage_error_pointing_at_the_script_commands() {
    let tmp = tempfile::tempdir().unwrap();
    pending_pair(tmp.path(), "write-note", "pick-format");
    let out = support::reel()
        .arg("review")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("reel accept"), "{err}");
}

#[test]
fn accept_and_reject_of_nothing_pending_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join("x.cassette.json");
    std::fs::copy(
        support::repo().join("cassettes/write-note.cassette.json"),
        &c,
    )
    .unwrap();
    for cmd in ["accept", "reject"] {
        let out = support::reel().arg(cmd).arg(&c).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(
            text(&out.stderr).contains("x.cassette.json"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = support::reel()
        .arg("pending")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn verify_cassettes_reports_a_forgotten_pending_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (c, _, _) = pending_pair(tmp.path(), "write-note", "pick-format");
    let out = support::reel()
        .arg("verify-cassettes")
        .arg(tmp.path())
        .args(["--skip-staleness", "--skip-scenario-drift"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("write-note.cassette.json.new"), "{err}");
    assert!(err.contains("reel review"), "{err}");
    // A cassette path names its own `.new` too, and JSON carries the class.
    let out = support::reel()
        .arg("verify-cassettes")
        .arg(&c)
        .args([
            "--skip-staleness",
            "--skip-scenario-drift",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        schema_errors("verify-cassettes.json", &env).is_empty(),
        "{env}"
    );
    let msgs = env["results"][0]["pendingReview"].as_array().unwrap();
    assert_eq!(msgs.len(), 1, "{env}");
    assert!(msgs[0].as_str().unwrap().contains("reel accept"));
    // Resolved, the gate is clean again.
    support::reel().arg("reject").arg(&c).assert().success();
    let out = support::reel()
        .arg("verify-cassettes")
        .arg(tmp.path())
        .args(["--skip-staleness", "--skip-scenario-drift"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
