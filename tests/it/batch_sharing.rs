//! What a batch replay shares across its cassettes (issue 44): compiled
//! regexes and sibling scenarios are read once per `reel replay DIR`, and a
//! single small cassette replays on the main thread alone. Sharing must not
//! change a byte of what each cassette's replay says.

use serde_json::Value;

use crate::support::{self, Fixture, RunExt};

const SCENARIO: &str = "scenarios/write-note.yaml";

/// `reel replay --output-format json TARGET` in `fx`: exit code, envelope, stderr.
fn replay_json(fx: &Fixture, target: &str) -> (i32, Value, String) {
    let run = support::reel()
        .current_dir(fx.root())
        .args(["replay", target, "--output-format", "json"])
        .run();
    let envelope = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "{target}: {e}\nstdout: {}\nstderr: {}",
            run.stdout, run.stderr
        )
    });
    (run.code, envelope, run.stderr)
}

#[test]
fn a_directory_of_one_scenarios_recordings_gives_every_cassette_its_sibling_notice() {
    let fx = Fixture::new();
    let cassette = support::repo().join("cassettes/write-note.cassette.json");
    for name in ["a", "b", "c"] {
        fx.copy_in(&cassette, &format!("cassettes/{name}.cassette.json"));
    }
    fx.copy_in(&support::repo().join(SCENARIO), SCENARIO);
    fx.edit(SCENARIO, |t| {
        let edited = t.replace("  - tool_called: Write", "  - tool_not_called: Write");
        assert_ne!(edited, t, "the edit must change the scenario");
        edited
    });
    let (code, envelope, stderr) = replay_json(&fx, "cassettes");
    assert_eq!(code, 0, "{stderr}");
    let sibling = fx.path(SCENARIO);
    for name in ["a", "b", "c"] {
        let want = format!(
            "::notice:: [replay] {} has a different `assert:` block; replay used the assertions \
             frozen in the cassette. Re-record, or `reel replay cassettes/{name}.cassette.json \
             --assert-from {}` to re-check against the on-disk block.",
            sibling.display(),
            sibling.display()
        );
        assert_eq!(
            stderr.lines().filter(|l| *l == want).count(),
            1,
            "{name}: want one\n{want}\nstderr:\n{stderr}"
        );
    }
    assert_eq!(envelope["results"].as_array().map(Vec::len), Some(3));
}

#[test]
fn a_directory_replay_says_what_each_of_its_cassettes_says_alone() {
    let fx = Fixture::new();
    support::example_tree(fx.root());
    let files = support::bundled_cassettes();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        fx.copy_in(f, &format!("cassettes/{name}"));
    }
    let (code, batch, stderr) = replay_json(&fx, "cassettes");
    let batch = batch["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(batch.len(), files.len(), "{stderr}");
    let mut worst = 0;
    for (f, in_batch) in files.iter().zip(&batch) {
        let name = f.file_name().unwrap().to_string_lossy();
        let (alone_code, alone, alone_stderr) = replay_json(&fx, &format!("cassettes/{name}"));
        worst = worst.max(alone_code);
        assert_eq!(
            support::without_temp_dirs(in_batch),
            support::without_temp_dirs(&alone["results"][0]),
            "{name}: the batch's result differs from the file's own\n{alone_stderr}"
        );
    }
    assert_eq!(
        code, worst,
        "the batch's exit code is its worst file's\n{stderr}"
    );
}
