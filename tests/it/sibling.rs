//! The scenario side of `reel replay` (docs/spec/replay.md §2.4): on a default
//! (frozen) replay, notices about the sibling scenario YAML — it does not load,
//! or its `assert:` / `prompt:` differs from the cassette's frozen copy — that
//! never change the verdict; and `--assert-from` reading through the strict
//! scenario loader.
//!
//! Each test replays a temp copy of the bundled `write-note` cassette with its
//! scenario in the standard layout (`cassettes/` beside `scenarios/`).

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::{self, Fixture, RunExt};

const CASSETTE: &str = "cassettes/write-note.cassette.json";
const SCENARIO: &str = "scenarios/write-note.yaml";

/// One `reel replay --output-format json` run.
struct Replay {
    code: i32,
    envelope: Value,
    stderr: String,
}

impl Replay {
    fn notices(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("::notice::"))
            .collect()
    }

    /// Each evaluated assertion's key and pass flag: the verdict's substance.
    fn verdict(&self) -> Value {
        let r = &self.envelope["results"][0];
        json!({
            "pass": r["verdict"]["pass"],
            "assertions": r["assertions"].as_array().map(|a| a.iter().map(|x| json!([x["assertion"], x["pass"]])).collect::<Vec<_>>()),
        })
    }
}

/// A temp copy of the bundled `write-note` cassette and its scenario, in
/// the standard layout.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    for rel in [CASSETTE, SCENARIO] {
        fx.copy_in(&support::repo().join(rel), rel);
    }
    fx
}

/// What these tests do to the write-note fixture.
trait WriteNote {
    fn scenario_path(&self) -> PathBuf;
    fn edit_scenario(&self, edit: impl Fn(&str) -> String);
    fn edit_cassette(&self, edit: impl FnOnce(&mut Value));
    fn replay(&self, extra: &[&str]) -> Replay;
}

impl WriteNote for Fixture {
    fn scenario_path(&self) -> PathBuf {
        self.path(SCENARIO)
    }

    fn edit_scenario(&self, edit: impl Fn(&str) -> String) {
        self.edit(SCENARIO, |text| {
            let edited = edit(text);
            assert_ne!(edited, text, "the edit must change the scenario");
            edited
        });
    }

    fn edit_cassette(&self, edit: impl FnOnce(&mut Value)) {
        self.edit_json(CASSETTE, edit);
    }

    fn replay(&self, extra: &[&str]) -> Replay {
        let run = support::reel()
            .current_dir(self.root())
            .args(["replay", CASSETTE, "--output-format", "json"])
            .args(extra)
            .run();
        Replay {
            code: run.code,
            envelope: run.json(),
            stderr: run.stderr,
        }
    }
}

fn assert_notice(run: &Replay, want: &str) {
    assert_eq!(run.notices(), vec![want], "stderr:\n{}", run.stderr);
}

#[test]
fn a_matching_sibling_prints_no_notice() {
    let fx = fixture();
    let run = fx.replay(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.notices().is_empty(), "{}", run.stderr);
    assert_eq!(run.verdict()["pass"], json!(true));
}

#[test]
fn authored_key_order_inside_an_assertion_is_not_a_difference() {
    // The loader emits an item's keys (and an object parameter's fields) in
    // the schema's order, which is the order a cassette freezes them in.
    let fx = fixture();
    fx.edit_cassette(|d| {
        let assert = d["scenario"]["assert"].as_array_mut().unwrap();
        assert.push(json!({"transcript_contains": "reel smoke", "tool_called": "Write"}));
    });
    fx.edit_scenario(|t| {
        t.replace(
            "  - artifact_text: {artifact: outputs/note.md, contains: [\"reel smoke\"]}",
            "  - artifact_text: {contains: [\"reel smoke\"], artifact: outputs/note.md}",
        ) + "  - tool_called: Write\n    transcript_contains: \"reel smoke\"\n"
    });
    let run = fx.replay(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.notices().is_empty(), "{}", run.stderr);
}

#[test]
fn a_changed_assert_block_is_a_notice_and_the_verdict_is_the_frozen_one() {
    let fx = fixture();
    let before = fx.replay(&[]).verdict();
    // A failing assertion on disk: the frozen block still decides.
    fx.edit_scenario(|t| t.replace("  - tool_called: Write", "  - tool_not_called: Write"));
    let run = fx.replay(&[]);
    let sibling = fx.scenario_path();
    assert_notice(
        &run,
        &format!(
            "::notice:: [replay] {} has a different `assert:` block; replay used the assertions frozen in the cassette. Re-record, or `reel replay {CASSETTE} --assert-from {}` to re-check against the on-disk block.",
            sibling.display(),
            sibling.display()
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.verdict(), before);
    // Text mode prints the same notice on stderr, before the footer.
    let out = support::reel()
        .current_dir(fx.root())
        .args(["replay", CASSETTE, "--verbose"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty());
    // The original's layout (--verbose): the notice comes before the footer.
    let notice = stderr
        .find("has a different `assert:` block")
        .expect(&stderr);
    let footer = stderr.find("✓ success").expect(&stderr);
    assert!(notice < footer, "{stderr}");
}

#[test]
fn a_changed_prompt_is_a_notice() {
    let fx = fixture();
    fx.edit_scenario(|t| t.replace("one-line note", "two-line note"));
    let run = fx.replay(&[]);
    assert_notice(
        &run,
        &format!(
            "::notice:: [replay] {} has a different `prompt:` than the cassette's frozen prompt; the frozen events reflect the recorded prompt. Re-record to sync (verify-cassettes hard-fails this drift).",
            fx.scenario_path().display()
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn assert_and_prompt_both_changed_give_two_notices_in_that_order() {
    let fx = fixture();
    fx.edit_scenario(|t| {
        t.replace("one-line note", "two-line note")
            .replace("  - tool_called: Write", "  - tool_called: Read")
    });
    let run = fx.replay(&[]);
    let notices = run.notices();
    assert_eq!(notices.len(), 2, "{}", run.stderr);
    assert!(notices[0].contains("different `assert:`"), "{notices:?}");
    assert!(notices[1].contains("different `prompt:`"), "{notices:?}");
}

#[test]
fn a_schema_invalid_sibling_is_a_does_not_load_notice() {
    let fx = fixture();
    fx.edit_scenario(|t| {
        t.replace(
            "  - file_exists: outputs/note.md",
            "  - file_exist: outputs/note.md",
        )
    });
    let run = fx.replay(&[]);
    let sibling = fx.scenario_path();
    assert_notice(
        &run,
        &format!(
            "::notice:: [replay] {} does not load: assert[1]: unknown assertion key `file_exist` (did you mean `file_exists`?) — replay used the scenario frozen in the cassette and is unaffected. Run `reel replay {CASSETTE} --assert-from {}` for the full error.",
            sibling.display(),
            sibling.display()
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.verdict()["pass"], json!(true));
    // A top-level schema problem too (a wrong type).
    std::fs::copy(support::repo().join(SCENARIO), fx.scenario_path()).unwrap();
    fx.edit_scenario(|t| t.replace("timeout_ms: 120000", "timeout_ms: soon"));
    let run = fx.replay(&[]);
    assert_eq!(run.notices().len(), 1, "{}", run.stderr);
    assert!(
        run.notices()[0].contains("does not load: `timeout_ms` must be a positive integer"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unreadable_or_non_yaml_sibling_stays_silent() {
    let fx = fixture();
    std::fs::write(fx.scenario_path(), "prompt: [unclosed\n  x: :\n").unwrap();
    let run = fx.replay(&[]);
    assert!(run.notices().is_empty(), "{}", run.stderr);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // A load-time (non-schema) refusal is silent too, as in the original.
    std::fs::copy(support::repo().join(SCENARIO), fx.scenario_path()).unwrap();
    fx.edit_scenario(|t| {
        t.replace(
            "  - transcript_contains: \"reel smoke\"",
            "  - transcript_matches: \"(\"",
        )
    });
    let run = fx.replay(&[]);
    assert!(run.notices().is_empty(), "{}", run.stderr);
    // A directory where the scenario should be: silent, never an error.
    std::fs::remove_file(fx.scenario_path()).unwrap();
    std::fs::create_dir(fx.scenario_path()).unwrap();
    let run = fx.replay(&[]);
    assert!(run.notices().is_empty(), "{}", run.stderr);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_missing_recorded_source_falls_back_to_the_name_lookup() {
    let fx = fixture();
    // Flat layout: the scenario beside the cassette, recorded source gone.
    let flat = fx.root().join("cassettes/write-note.yaml");
    std::fs::rename(fx.scenario_path(), &flat).unwrap();
    std::fs::write(
        &flat,
        std::fs::read_to_string(&flat)
            .unwrap()
            .replace("one-line", "1-line"),
    )
    .unwrap();
    let run = fx.replay(&[]);
    assert_eq!(run.notices().len(), 1, "{}", run.stderr);
    assert!(
        run.notices()[0].starts_with(&format!(
            "::notice:: [replay] {} has a different `prompt:`",
            flat.display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn reassert_and_assert_from_print_no_sibling_notices() {
    let fx = fixture();
    fx.edit_scenario(|t| t.replace("  - tool_called: Write", "  - tool_called: Read"));
    for extra in [vec!["--reassert"], vec!["--assert-from", SCENARIO]] {
        let run = fx.replay(&extra);
        assert!(
            run.notices()
                .iter()
                .all(|n| n.contains("re-asserting from on-disk")),
            "{extra:?}: {}",
            run.stderr
        );
        // The on-disk block is the one evaluated.
        let evaluated = run.envelope["results"][0]["assertions"].to_string();
        assert!(
            evaluated.contains("\"tool_called\":\"Read\""),
            "{evaluated}"
        );
    }
}

#[test]
fn assert_from_a_schema_invalid_file_is_a_per_file_error_naming_file_and_field() {
    let fx = fixture();
    let bad = fx.root().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(fx.scenario_path())
            .unwrap()
            .replace("  - tool_called: Write", "  - tool_called: 7"),
    )
    .unwrap();
    let run = fx.replay(&["--assert-from", "bad.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.envelope["results"][0]["result"], json!("error"));
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("replay: "))
        .unwrap_or_else(|| panic!("no per-file error line: {}", run.stderr));
    assert_eq!(
        line,
        format!(
            "replay: {CASSETTE}: --assert-from: load scenario `bad.yaml`: assert[3]: `tool_called`: expected a tool glob string, got 7"
        )
    );
    // --reassert reports through the same loader.
    std::fs::copy(&bad, fx.scenario_path()).unwrap();
    let run = fx.replay(&["--reassert"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "--reassert: load scenario `{}`: assert[3]: `tool_called`",
            fx.scenario_path().display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn assert_from_accepts_a_container_tier_scenario() {
    // The original's loader takes every tier; only `record` is protocol-only.
    let fx = fixture();
    fx.edit_cassette(|d| d["scenario"]["fidelity"] = json!("container"));
    fx.edit_scenario(|t| t.replace("fidelity: protocol", "fidelity: container"));
    let run = fx.replay(&["--assert-from", SCENARIO]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = fx.replay(&[]);
    assert!(run.notices().is_empty(), "{}", run.stderr);
}

#[test]
fn the_bundled_examples_print_no_sibling_notice() {
    let out = support::reel()
        .current_dir(support::repo())
        .args(["replay", "cassettes/"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("::notice::"), "{stderr}");
}

#[test]
fn reassert_without_a_sibling_names_where_it_looked() {
    let fx = fixture();
    std::fs::remove_file(fx.scenario_path()).unwrap();
    let run = fx.replay(&["--reassert"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--reassert: no sibling scenario found")
            && run
                .stderr
                .contains("recorded scenarioSource `../scenarios/write-note.yaml` is missing")
            && run.stderr.contains(
                &fx.root()
                    .join("cassettes/write-note.yml")
                    .display()
                    .to_string()
            ),
        "{}",
        run.stderr
    );
    // The default replay just has nothing to say.
    let run = fx.replay(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.notices().is_empty(), "{}", run.stderr);
}

/// The line `reel replay` prints for the cassette's per-file error.
fn per_file_error(run: &Replay) -> &str {
    run.stderr
        .lines()
        .find(|l| l.starts_with("replay: "))
        .unwrap_or_else(|| panic!("no per-file error line: {}", run.stderr))
}

#[test]
fn assert_from_names_every_drifted_field_with_both_values_and_the_fix() {
    let fx = fixture();
    fx.edit_scenario(|t| format!("{t}baseline: v1\nskills: [pdf]\n"));
    let run = fx.replay(&["--assert-from", SCENARIO]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.envelope["results"][0]["result"], json!("error"));
    assert_eq!(
        per_file_error(&run),
        format!(
            "replay: {CASSETTE}: scenario `{SCENARIO}` drifted from the recording: `baseline` differs (on disk \"v1\", recorded \"latest\"), `skills` differs (on disk [\"pdf\"], recorded []) — the assert-only loop cannot change what shaped the recording; re-record the cassette"
        )
    );
}

#[test]
fn an_empty_on_disk_prompt_loads_and_is_compared_like_any_prompt() {
    // The original's schema takes `prompt: ""`; only `record` refuses it.
    let fx = fixture();
    fx.edit_scenario(|t| {
        t.replace(
            "prompt: |\n  Write a one-line note to outputs/note.md that contains the words \"reel smoke\".\n",
            "prompt: \"\"\n",
        )
    });
    // A different prompt, not a scenario that does not load.
    let run = fx.replay(&[]);
    assert_notice(
        &run,
        &format!(
            "::notice:: [replay] {} has a different `prompt:` than the cassette's frozen prompt; the frozen events reflect the recorded prompt. Re-record to sync (verify-cassettes hard-fails this drift).",
            fx.scenario_path().display()
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = fx.replay(&["--assert-from", SCENARIO]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let line = per_file_error(&run);
    assert!(
        line.contains(
            "drifted from the recording: `prompt` differs (on disk \"\", recorded \"Write a one-line note"
        ) && line.ends_with("re-record the cassette"),
        "{line}"
    );
    // A cassette whose frozen prompt is empty too matches it.
    fx.edit_cassette(|d| d["scenario"]["prompt"] = json!(""));
    let run = fx.replay(&[]);
    assert!(run.notices().is_empty(), "{}", run.stderr);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = fx.replay(&["--assert-from", SCENARIO]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.verdict()["pass"], json!(true));
}
