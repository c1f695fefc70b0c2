//! Hostile and broken cassettes (tests/data/hostile/, built by its
//! generate.py): every case gets a clear error or a documented failing verdict
//! within seconds, never a panic, never a hang, never a write outside reel's
//! own temp dir.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::support::{self, Failures, Run, RunExt};

/// Hang guard only (not a speed assertion): a debug build answers every case
/// in well under a second; a case that hits this is a hang.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Paths the corpus tries to write to; none may ever exist.
const CANARIES: &[&str] = &[
    "/tmp/reel-hostile-canary-1",
    "/tmp/reel-hostile-canary-2",
    "/tmp/reel-canary.txt",
    "/reel-canary.txt",
];

#[derive(Deserialize)]
struct Case {
    probe: String,
    rc: Vec<i32>,
}

fn corpus() -> BTreeMap<String, Case> {
    let text = std::fs::read_to_string(support::data("hostile/cases.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Runs reel in a fresh working directory with a private TMPDIR, then checks
/// that nothing was left in either and no canary path appeared.
fn run_isolated(args: &[&str], file: &Path) -> Run {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let run = support::reel()
        .args(args)
        .arg(file)
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .timeout(HANG_GUARD)
        .run();
    let leftovers: Vec<PathBuf> = std::fs::read_dir(cwd.path())
        .unwrap()
        .chain(std::fs::read_dir(tmp.path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        leftovers.is_empty(),
        "{}: reel left files behind: {leftovers:?}",
        file.display()
    );
    for canary in CANARIES {
        assert!(
            !Path::new(canary).exists(),
            "{}: wrote outside its sandbox: {canary}",
            file.display()
        );
    }
    run
}

fn assert_no_panic(case: &str, outcome: &Run) {
    assert!(
        outcome.code != -1,
        "{case}: killed (hang guard or signal); stderr:\n{}",
        outcome.stderr
    );
    assert!(
        !outcome.stderr.contains("panicked") && !outcome.stderr.contains("RUST_BACKTRACE"),
        "{case}: panicked:\n{}",
        outcome.stderr
    );
}

#[test]
fn the_corpus_has_at_least_forty_cases() {
    let corpus = corpus();
    assert!(corpus.len() >= 40, "only {} hostile cases", corpus.len());
    for name in corpus.keys() {
        assert!(
            support::data(&format!("hostile/{name}.cassette.json")).is_file(),
            "{name} missing"
        );
    }
}

#[test]
fn replay_answers_every_hostile_cassette_cleanly() {
    let corpus = corpus();
    let mut failures = Failures::new();
    for (name, case) in &corpus {
        let file = support::data(&format!("hostile/{name}.cassette.json"));
        let outcome = run_isolated(&["replay"], &file);
        // A panic or hang fails the case, and the loop goes on.
        failures.case(name, || assert_no_panic(name, &outcome));
        let code = outcome.code;
        failures.check(case.rc.contains(&code), || {
            format!(
                "{name} ({}): exit {code}, expected one of {:?}\n{}",
                case.probe, case.rc, outcome.stderr
            )
        });
        // A refused cassette must say which file and why.
        failures.check(
            code != 2 || outcome.stderr.contains(&format!("{name}.cassette.json")),
            || format!("{name}: error does not name the file:\n{}", outcome.stderr),
        );
    }
    failures.assert_none(corpus.len());
}

#[test]
fn verify_cassettes_answers_every_hostile_cassette_cleanly() {
    let corpus = corpus();
    let mut failures = Failures::new();
    for name in corpus.keys() {
        failures.case(name, || {
            let file = support::data(&format!("hostile/{name}.cassette.json"));
            let outcome = run_isolated(&["verify-cassettes"], &file);
            assert_no_panic(name, &outcome);
            let code = outcome.code;
            assert!(
                [0, 1, 2, 3].contains(&code),
                "{name}: unexpected exit {code}\n{}",
                outcome.stderr
            );
        });
    }
    failures.assert_none(corpus.len());
}

#[test]
fn a_giant_event_line_is_handled() {
    // 64 MiB in one event line: parsed, not choked on.
    let dir = tempfile::tempdir().unwrap();
    let base =
        std::fs::read_to_string(support::data("hostile/events-never-end.cassette.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&base).unwrap();
    let big = format!(
        "{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}}}",
        "a".repeat(64 << 20)
    );
    doc["events"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::Value::String(big));
    let file = dir.path().join("giant.cassette.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let outcome = run_isolated(&["replay"], &file);
    assert_no_panic("giant-line", &outcome);
    assert_eq!(
        outcome.code, 1,
        "a run without a result event fails:\n{}",
        outcome.stderr
    );
}
