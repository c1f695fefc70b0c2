//! `reel rerun` with the real Claude Code CLI: the recorded replies served to
//! a fresh agent run of the current skill files. Each example is copied into
//! a scratch git repository (skills are staged from git-tracked files), the
//! skill is changed on purpose, and the rerun's exit code, divergences and
//! JSON (against schema/rerun.json) are checked.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, CassetteDoc, Fixture, RunExt, claude_bin, reel, repo};

/// A scratch git work tree holding copies of `src`'s example directories
/// (skills are staged from git-tracked files), committed as `message`.
fn scratch_of(src: &Path, message: &str) -> Fixture {
    let fx = Fixture::new();
    for sub in ["cassettes", "scenarios", "sessions", "skills", "data"] {
        fx.copy_in(&src.join(sub), sub);
    }
    if src.join("reel.toml").is_file() {
        fx.copy_in(&src.join("reel.toml"), "reel.toml");
    }
    fx.commit(".", message);
    fx
}

/// A scratch copy of the repository's examples in a git work tree.
pub(crate) fn scratch() -> Fixture {
    scratch_of(&repo(), "examples")
}

/// What these tests do in a scratch work tree.
trait Scratch {
    /// Edits a file of the copy and commits it.
    fn edit_and_commit(&self, rel: &str, f: impl FnOnce(&str) -> String);
    fn rerun(&self, cassette: &str, extra: &[&str]) -> (i32, Value, String);
}

impl Scratch for Fixture {
    fn edit_and_commit(&self, rel: &str, f: impl FnOnce(&str) -> String) {
        self.edit(rel, f);
        self.commit(".", &format!("edit {rel}"));
    }

    fn rerun(&self, cassette: &str, extra: &[&str]) -> (i32, Value, String) {
        rerun_at(self.root(), cassette, extra)
    }
}

pub(crate) fn rerun_at(cwd: &Path, cassette: &str, extra: &[&str]) -> (i32, Value, String) {
    let bin = claude_bin().expect("the real claude binary");
    let run = reel()
        .current_dir(cwd)
        .env("REEL_CLAUDE_BIN", bin)
        .arg("rerun")
        .arg(cassette)
        .args(["--output-format", "json"])
        .args(extra)
        .run();
    let env = run.json();
    check_schema(&env);
    (run.code, env, run.stderr)
}

fn check_schema(env: &Value) {
    support::assert_schema("rerun.json", env);
}

/// A divergence as [`divergences`] lists it.
fn at(
    conversation: &str,
    turn: Option<u64>,
    tool: Option<&str>,
    kind: &str,
) -> (String, Option<u64>, Option<String>, String) {
    (
        conversation.into(),
        turn,
        tool.map(str::to_owned),
        kind.into(),
    )
}

/// (conversation, turn, tool, kind) of every divergence of the first result.
fn divergences(env: &Value) -> Vec<(String, Option<u64>, Option<String>, String)> {
    env["results"][0]["rerun"]["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["conversation"].as_str().unwrap().to_owned(),
                d["turn"].as_u64(),
                d["tool"].as_str().map(str::to_owned),
                d["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn failing(env: &Value) -> Vec<String> {
    env["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["pass"] == false)
        .map(|a| a["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn every_bundled_example_reruns_green_with_no_divergence() {
    support::require!(claude_bin());
    let s = scratch();
    let (code, env, stderr) = s.rerun("cassettes", &[]);
    assert_eq!(code, 0, "{stderr}\n{env}");
    let results = env["results"].as_array().unwrap();
    assert!(results.len() >= 10, "{env}");
    let mut problems = Vec::new();
    for r in results {
        let file = r["file"].as_str().unwrap();
        if r["rerun"]["divergences"]
            .as_array()
            .is_none_or(|d| !d.is_empty())
        {
            problems.push(format!("{file}: {}", r["rerun"]["divergences"]));
        }
        if r["rerun"]["replies"]["served"] != r["rerun"]["replies"]["recorded"] {
            problems.push(format!("{file}: replies {}", r["rerun"]["replies"]));
        }
        if r["verdict"]["pass"] != true {
            problems.push(format!("{file}: verdict {}", r["verdict"]));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(env["ok"], true);
}

#[test]
fn a_broken_skill_script_fails_the_assertion_that_guards_it() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        t.replace("rows += 1", "rows += 2")
    });
    // A replay of the same cassette is still green: it executes nothing.
    let replay = reel()
        .current_dir(s.path("."))
        .args(["replay", "cassettes/csv-stats.cassette.json"])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0));
    let (code, env, stderr) = s.rerun("cassettes/csv-stats.cassette.json", &[]);
    assert_eq!(code, 1, "{stderr}");
    let failed = failing(&env);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("\"rows\" = 6, expected 3"), "{failed:?}");
    let d = divergences(&env);
    assert!(
        d.contains(&at("main", Some(1), Some("Bash"), "tool_result")),
        "{d:?}"
    );
    assert_eq!(env["ok"], false);
}

#[test]
fn a_refactored_script_with_identical_output_stays_green_without_divergence() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |_| {
        "#!/usr/bin/env bash\n# Same output, another way: count and sum in two passes.\nset -euo pipefail\n\
         rows=$(tail -n +2 \"$1\" | grep -c .)\n\
         total=$(tail -n +2 \"$1\" | awk -F, '{ s += $NF } END { print s }')\n\
         printf '{\"rows\": %d, \"total\": %d}\\n' \"$rows\" \"$total\"\n"
            .into()
    });
    let (code, env, stderr) = s.rerun("cassettes/csv-stats.cassette.json", &["--strict"]);
    assert_eq!(code, 0, "{stderr}\n{env}");
    assert_eq!(divergences(&env), vec![]);
}

#[test]
fn an_extra_line_of_output_stays_green_and_diverges_at_that_turn() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        format!("{t}echo 'computed by stats.sh' >&2\n")
    });
    let (code, env, stderr) = s.rerun("cassettes/csv-stats.cassette.json", &[]);
    assert_eq!(code, 0, "{stderr}");
    let d = divergences(&env);
    assert!(
        d.contains(&at("main", Some(1), Some("Bash"), "tool_result")),
        "{d:?}"
    );
    assert_eq!(env["results"][0]["rerun"]["outcome"], "pass_diverged");
    // The same divergence fails under --strict.
    let (code, _, _) = s.rerun("cassettes/csv-stats.cassette.json", &["--strict"]);
    assert_eq!(code, 1);
}

#[test]
fn a_changed_skill_md_diverges_at_the_skill_turn() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/weekly-report/SKILL.md", |t| {
        t.replace(
            "Keep the template's headings.",
            "Keep the template's headings and dates.",
        )
    });
    let (code, env, stderr) = s.rerun("cassettes/weekly-report.cassette.json", &[]);
    assert_eq!(code, 0, "{stderr}");
    let d = divergences(&env);
    assert_eq!(d, vec![at("main", Some(0), Some("Skill"), "user_content")]);
    let now = env["results"][0]["rerun"]["divergences"][0]["now"]
        .as_str()
        .unwrap();
    assert!(now.contains("headings and dates"), "{now}");
}

#[test]
fn a_changed_template_diverges_at_the_read_turn_while_the_frozen_file_still_passes() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/weekly-report/templates/report.md", |t| {
        t.replace("## Next", "## Next up")
    });
    let (code, env, stderr) = s.rerun("cassettes/weekly-report.cassette.json", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        divergences(&env),
        vec![at("main", Some(1), Some("Read"), "tool_result")]
    );
    assert!(failing(&env).is_empty(), "{env}");
    // The report says why the model-written file still passes.
    let notes = env["results"][0]["rerun"]["notes"].to_string();
    assert!(notes.contains("replies are frozen"), "{notes}");
}

#[test]
fn write_refreshes_a_cassette_that_then_replays_green() {
    support::require!(claude_bin());
    let s = scratch();
    let before = std::fs::read(s.path("cassettes/csv-stats.cassette.json")).unwrap();
    // Diverged: --write alone leaves the cassette as it is.
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        format!("{t}echo note >&2\n")
    });
    let (code, env, _) = s.rerun("cassettes/csv-stats.cassette.json", &["--write"]);
    assert_eq!(code, 0);
    assert!(env["results"][0]["rerun"]["written"].is_null());
    assert_eq!(
        std::fs::read(s.path("cassettes/csv-stats.cassette.json")).unwrap(),
        before
    );
    // --accept-divergence writes it, marked.
    let (code, env, _) = s.rerun(
        "cassettes/csv-stats.cassette.json",
        &["--write", "--accept-divergence", "--accept"],
    );
    assert_eq!(code, 0);
    assert!(env["results"][0]["rerun"]["written"].is_string());
    let doc: Value = serde_json::from_slice(
        &std::fs::read(s.path("cassettes/csv-stats.cassette.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        doc["environment"]["reelRerun"]["divergedFromRecording"],
        true
    );
    // The refreshed cassette replays green and reruns without divergence.
    let replay = reel()
        .current_dir(s.path("."))
        .args(["replay", "cassettes/csv-stats.cassette.json", "--strict"])
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let (code, env, _) = s.rerun("cassettes/csv-stats.cassette.json", &["--strict"]);
    assert_eq!(code, 0, "{env}");
}

#[test]
fn the_protocol_tier_cowork_harness_cassette_reruns_with_its_recorded_verdict() {
    support::require!(claude_bin());
    let cassette =
        repo().join("tests/compat/examples/replays/example-multiselect-gate.cassette.json");
    // Its recorded session lives in cowork-harness's tree; pass ours (no staging).
    let session = repo().join("tests/data/rerun/empty-session.yaml");
    let (code, env, stderr) = rerun_at(
        &repo(),
        cassette.to_str().unwrap(),
        &["--session", session.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env["results"][0]["verdict"]["pass"], true);
    assert_eq!(env["results"][0]["rerun"]["replies"]["served"], 2);
    // Without the session it is a clear usage error naming the fix.
    let (code, env, _) = rerun_at(&repo(), cassette.to_str().unwrap(), &[]);
    assert_eq!(code, 2);
    assert!(
        env["results"][0]["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--session")
    );
}

#[test]
fn container_and_hostloop_recordings_are_refused_with_exit_3() {
    // Refused before any agent runs: no binary needed.
    for name in ["example-pdf-skill", "hostloop-computer-links"] {
        let cassette = repo().join(format!(
            "tests/compat/examples/replays/{name}.cassette.json"
        ));
        let out = reel()
            .arg("rerun")
            .arg(&cassette)
            .args(["--output-format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{name}");
        let env: Value = serde_json::from_slice(&out.stdout).unwrap();
        check_schema(&env);
        let e = &env["results"][0]["error"];
        assert_eq!(e["category"], "could_not_rerun");
        assert!(e["message"].as_str().unwrap().contains("tier"), "{e}");
    }
}

/// A bundled cassette with its JSON changed by `f`, in a scratch dir.
fn hostile(f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> (Fixture, PathBuf) {
    let fx = Fixture::new();
    for sub in ["scenarios", "sessions", "skills", "data"] {
        fx.copy_in(&repo().join(sub), sub);
    }
    let doc = CassetteDoc::from_file(&repo().join("cassettes/write-note.cassette.json")).edit(f);
    let path = fx.write("cassettes/write-note.cassette.json", doc.compact());
    (fx, path)
}

fn map_events(doc: &mut serde_json::Map<String, Value>, f: impl Fn(Value) -> Option<Value>) {
    let events = doc["events"].as_array().unwrap().clone();
    doc["events"] = Value::Array(
        events
            .into_iter()
            .filter_map(|e| {
                let v: Value = serde_json::from_str(e.as_str().unwrap()).unwrap();
                f(v).map(|v| Value::String(v.to_string()))
            })
            .collect(),
    );
}

/// Applies `f` to the recorded `Write` call (the first block of its assistant line).
fn edit_write_call(d: &mut serde_json::Map<String, Value>, f: impl Fn(&mut Value)) {
    map_events(d, |mut v| {
        if v["type"] == "assistant" && v["message"]["content"][0]["name"] == "Write" {
            f(&mut v["message"]["content"][0]);
        }
        Some(v)
    })
}

#[test]
fn bad_cassettes_get_clear_errors_and_run_nothing() {
    type Edit = Box<dyn Fn(&mut serde_json::Map<String, Value>)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "no events",
            Box::new(|d| d["events"] = Value::Array(vec![])),
            "no model reply",
        ),
        (
            "no main conversation",
            Box::new(|d| map_events(d, |v| (v["type"] != "assistant").then_some(v))),
            "no main conversation",
        ),
        (
            "malformed assistant line",
            Box::new(|d| {
                map_events(d, |mut v| {
                    if v["type"] == "assistant" {
                        v["message"]["content"] = Value::String("not blocks".into());
                    }
                    Some(v)
                })
            }),
            "not an array of blocks",
        ),
        (
            "a write outside the run",
            Box::new(|d| {
                edit_write_call(d, |call| {
                    call["input"]["file_path"] = "/etc/reel-rerun-must-not-write".into()
                })
            }),
            "outside the run directory",
        ),
        (
            "a shell command that deletes outside the run",
            Box::new(|d| {
                edit_write_call(d, |call| {
                    call["name"] = "Bash".into();
                    call["input"] =
                        serde_json::json!({"command": "rm -rf /work/reel-must-not-delete"});
                })
            }),
            "writes /work/reel-must-not-delete",
        ),
        (
            "a relative write that climbs out",
            Box::new(|d| {
                edit_write_call(d, |call| {
                    call["input"]["file_path"] = "../../../reel-escape.txt".into()
                })
            }),
            "outside the run directory",
        ),
    ];
    let mut problems = Vec::new();
    for (name, f, want) in cases {
        let (fx, path) = hostile(f);
        let out = reel()
            .current_dir(fx.root())
            .env("REEL_CLAUDE_BIN", "/nonexistent/claude-must-not-run")
            .arg("rerun")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) || !stderr.contains(want) || stderr.contains("panicked") {
            problems.push(format!("{name}: exit {:?}: {stderr}", out.status.code()));
        }
    }
    assert!(!Path::new("/etc/reel-rerun-must-not-write").exists());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn no_agent_binary_is_exit_3_naming_the_fix() {
    let out = reel()
        .env("REEL_CLAUDE_BIN", "/nonexistent/claude")
        .arg("rerun")
        .arg(repo().join("cassettes/write-note.cassette.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("reel agents install") || stderr.contains("REEL_CLAUDE_BIN"),
        "{stderr}"
    );
}

#[test]
fn model_extract_writes_a_script_that_records_the_same_run() {
    support::require!(claude_bin());
    let s = scratch();
    let script = s.path("csv.model.yaml");
    let out = reel()
        .current_dir(s.path("."))
        .args([
            "model",
            "extract",
            "cassettes/csv-stats.cassette.json",
            "--out",
        ])
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("{{config}}/skills/csv-stats/scripts/stats.sh"),
        "{text}"
    );
    let recorded = s.path("fresh.cassette.json");
    let out = reel()
        .current_dir(s.path("."))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["record", "scenarios/csv-stats.yaml", "--model-script"])
        .arg(&script)
        .arg("--out")
        .arg(&recorded)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = reel().arg("replay").arg(&recorded).output().unwrap();
    assert_eq!(replay.status.code(), Some(0));
}

#[test]
fn extracted_scripts_match_the_schema_and_parse_back_to_the_same_replies() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("schema/model-script.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut cassettes: Vec<PathBuf> = std::fs::read_dir(repo().join("cassettes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".cassette.json"))
        .collect();
    cassettes.extend(
        std::fs::read_dir(repo().join("tests/compat/examples/replays"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".cassette.json")),
    );
    let mut problems = Vec::new();
    for path in &cassettes {
        let cassette = reel::cassette::Cassette::load(path).unwrap();
        let replies = reel::rerun::replies::from_cassette(&cassette).unwrap();
        let yaml = replies.script.to_yaml();
        let doc: Value = serde_yaml_ng::from_str(&yaml).unwrap();
        for e in validator.iter_errors(&doc) {
            problems.push(format!("{}: {e} at {}", path.display(), e.instance_path));
        }
        let back = reel::model::Script::parse(&yaml, &cassette.path).unwrap();
        if back != replies.script {
            problems.push(format!(
                "{}: the script does not round-trip",
                path.display()
            ));
        }
        // Every recorded assistant message is one turn.
        let messages: std::collections::BTreeSet<(String, String)> = cassette
            .events()
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .filter(|v| v["type"] == "assistant" && v["message"]["model"] != "<synthetic>")
            .filter_map(|v| {
                let id = v["message"]["id"].as_str()?.to_owned();
                Some((v["parent_tool_use_id"].to_string(), id))
            })
            .collect();
        if messages.len() != replies.turn_count() {
            problems.push(format!(
                "{}: {} messages, {} turns",
                path.display(),
                messages.len(),
                replies.turn_count()
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Records `assert` (YAML lines) under a one-turn, text-only model script.
fn record_text_only(assert: &str) -> (tempfile::TempDir, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        format!("fidelity: protocol\ntimeout_ms: 120000\nprompt: say hi\nassert:\n{assert}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.model.yaml"),
        "turns:\n  - blocks: [{text: \"hi from /nowhere\"}]\n",
    )
    .unwrap();
    let out = reel()
        .current_dir(dir.path())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("REEL_RUNS_DIR", dir.path().join("runs"))
        .args(["record", "s.yaml", "--out", "s.cassette.json"])
        .output()
        .unwrap();
    (dir, out)
}

#[test]
fn the_live_verdict_judges_the_runs_files_even_when_there_are_none() {
    support::require!(claude_bin());
    // The run writes no file: `file_exists` fails live, as in the original's
    // live check, where a replay of such a cassette would exclude it.
    let (dir, out) = record_text_only("  - result: success\n  - file_exists: outputs/report.md\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("file not found: outputs/report.md"),
        "{stderr}"
    );
    // The failure names where the run's files really are: the kept run
    // directory's work root, which exists.
    let under = stderr
        .split("file not found: outputs/report.md (under ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(Path::new(under).is_dir(), "{under}\n{stderr}");
    assert!(
        Path::new(under).starts_with(dir.path().join("runs")),
        "{under}"
    );
    assert!(!dir.path().join("s.cassette.json").exists());
}

#[test]
fn live_only_keys_are_evaluated_on_a_live_run_and_stripped_on_replay() {
    support::require!(claude_bin());
    let (dir, out) = record_text_only(
        "  - result: success\n  - file_absent: outputs/never.md\n  - no_delete_in_outputs: true\n  - transcript_no_host_path: true\n",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replay = reel()
        .current_dir(dir.path())
        .args(["replay", "s.cassette.json", "--output-format", "json"])
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(env["results"][0]["skippedAssertions"]["full"], 3, "{env}");
    // A rerun judges them live again.
    let (code, env, stderr) = rerun_at(dir.path(), "s.cassette.json", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        env["results"][0]["assertions"].as_array().unwrap().len(),
        4,
        "{env}"
    );
    // A key whose evidence a protocol run lacks fails instead of passing vacuously.
    let (_, out) = record_text_only("  - result: success\n  - max_peak_rss_bytes: 1000000000\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("evidence unavailable"), "{stderr}");
}

#[test]
fn a_turn_the_recording_lacks_is_reported_as_replies_exhausted() {
    support::require!(claude_bin());
    let s = scratch();
    // Drop the recording's last reply: the agent will ask for turn 2 of 0..1.
    let path = s.path("cassettes/csv-stats.cassette.json");
    let mut doc: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    map_events(&mut doc, |v| {
        (v["message"]["id"] != "msg_reel_2").then_some(v)
    });
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (code, env, stderr) = s.rerun("cassettes/csv-stats.cassette.json", &[]);
    let d = divergences(&env);
    assert!(
        d.contains(&at("main", Some(2), None, "replies_exhausted")),
        "{d:?}\n{stderr}"
    );
    assert_eq!(env["results"][0]["rerun"]["replies"]["recorded"], 2);
    // The agent surfaced the error: the run's result is an error, so the verdict fails.
    assert_eq!(code, 1, "{stderr}");
}

#[test]
fn the_text_report_names_each_file_and_closes_with_the_tally() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        t.replace("rows += 1", "rows += 2")
    });
    s.edit_and_commit("skills/weekly-report/templates/report.md", |t| {
        t.replace("## Next", "## Next up")
    });
    let out = reel()
        .current_dir(s.path("."))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("REEL_RUNS_DIR", s.path("runs"))
        .args([
            "rerun",
            "cassettes/csv-stats.cassette.json",
            "cassettes/weekly-report.cassette.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "text mode keeps stdout empty");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().last(),
        Some("1 passed, 1 failed"),
        "{stderr}"
    );
    // A failing rerun never suggests `--write` (it would freeze the failure);
    // a diverged one suggests re-recording.
    assert!(!stderr.contains("rerun --write` refreshes"), "{stderr}");
    assert!(
        stderr.contains("the change broke the run: fix the skill files"),
        "{stderr}"
    );
    assert!(
        stderr.contains("re-record (`reel record`) to see what the model makes"),
        "{stderr}"
    );
    insta::with_settings!({filters => vec![
        (r"(?m)  \d+ ms$|  \d+\.\d+ s$", "  [time]"),
        (r"/[^\s]*/runs/[^\s]+", "[run dir]"),
        (r"sha256 [0-9a-f]{64}", "sha256 [hash]"),
        // The layers this machine's kernel gives (tests/it/sandbox.rs checks them).
        (r"(?m)^sandbox: landlock .*\(every run\)$", "sandbox: [layers] (every run)"),
    ]}, {
        insta::assert_snapshot!("rerun_broken_script_and_changed_template", stderr);
    });
}

/// A scratch git copy of the cowork-harness recordings in tests/data/rerun/cowork.
fn cowork_scratch() -> Fixture {
    scratch_of(
        &repo().join("tests/data/rerun/cowork"),
        "cowork-harness recordings",
    )
}

#[test]
fn cowork_harness_recordings_rerun_green_with_no_divergence() {
    support::require!(claude_bin());
    let s = cowork_scratch();
    let (code, env, stderr) = s.rerun("cassettes", &["--strict"]);
    assert_eq!(code, 0, "{stderr}\n{env}");
    let results = env["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for r in results {
        assert_eq!(
            r["rerun"]["divergences"],
            serde_json::json!([]),
            "{}",
            r["file"]
        );
        assert_eq!(
            r["rerun"]["replies"]["served"], r["rerun"]["replies"]["recorded"],
            "{}",
            r["file"]
        );
    }
}

#[test]
fn cowork_harness_recordings_catch_a_changed_skill_tree() {
    support::require!(claude_bin());
    let s = cowork_scratch();
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        t.replace("total += $NF", "total += 1")
    });
    let (code, env, stderr) = s.rerun("cassettes/csv-stats.cassette.json", &[]);
    assert_eq!(code, 1, "{stderr}");
    let failed = failing(&env);
    assert!(
        failed
            .iter()
            .any(|m| m.contains("\"total\" = 3, expected 245")),
        "{failed:?}"
    );
    assert!(divergences(&env).contains(&at("main", Some(1), Some("Bash"), "tool_result")));

    s.edit_and_commit("skills/weekly-report/templates/report.md", |t| {
        t.replace("## Done", "## Shipped")
    });
    let (code, env, stderr) = s.rerun("cassettes/weekly-report.cassette.json", &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        divergences(&env),
        vec![at("main", Some(1), Some("Read"), "tool_result")]
    );
}

/// `reel rerun --write` of csv-stats in `s` with `CI` set to `ci`.
fn rerun_write(s: &Fixture, ci: &str) -> (i32, Value) {
    let out = reel()
        .current_dir(s.path("."))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("CI", ci)
        .args([
            "rerun",
            "cassettes/csv-stats.cassette.json",
            "--write",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    (out.status.code().unwrap_or(-1), env)
}

#[test]
fn write_goes_through_review_identical_writes_nothing_a_difference_waits_or_fails_in_ci() {
    support::require!(claude_bin());
    let s = scratch();
    let cassette = s.path("cassettes/csv-stats.cassette.json");
    let new = s.path("cassettes/csv-stats.cassette.json.new");
    let before = std::fs::read(&cassette).unwrap();
    // Nothing changed: the fresh recording is identical, nothing is written.
    let (code, env) = rerun_write(&s, "false");
    assert_eq!(code, 0, "{env}");
    assert!(env["results"][0]["rerun"]["written"].is_null(), "{env}");
    assert_eq!(std::fs::read(&cassette).unwrap(), before);
    assert!(!new.exists());
    // A refactor with identical output: same behaviour, a new fingerprint.
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        format!("{t}# refactored\n")
    });
    let (code, env) = rerun_write(&s, "true");
    assert_eq!(code, 1, "CI refuses a differing re-recording: {env}");
    assert!(!new.exists(), "no pending file under CI");
    assert_eq!(std::fs::read(&cassette).unwrap(), before);
    let (code, env) = rerun_write(&s, "false");
    assert_eq!(code, 0, "{env}");
    assert_eq!(
        env["results"][0]["rerun"]["written"],
        "cassettes/csv-stats.cassette.json.new"
    );
    assert_eq!(
        std::fs::read(&cassette).unwrap(),
        before,
        "the committed cassette waits for review"
    );
    let accepted = reel()
        .current_dir(s.path("."))
        .args(["accept", "cassettes/csv-stats.cassette.json"])
        .output()
        .unwrap();
    assert_eq!(
        accepted.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&accepted.stderr)
    );
    assert!(!new.exists());
    let replay = reel()
        .current_dir(s.path("."))
        .args(["replay", "cassettes/csv-stats.cassette.json", "--strict"])
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "the refreshed cassette is fresh again"
    );
}

/// The bundled MCP example (price-check): its `prices` server frozen from the
/// recording's tool_use/tool_result pairs unless `--mcp-live prices`.
mod mcp {
    use super::*;

    fn notes(env: &Value) -> String {
        env["results"][0]["rerun"]["notes"].to_string()
    }

    #[test]
    fn frozen_unchanged_missing_and_changed_are_green_live_changed_is_red() {
        support::require!(claude_bin());
        let fx = scratch();
        let cassette = "cassettes/price-check.cassette.json";
        let (code, env, stderr) = fx.rerun(cassette, &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(divergences(&env), vec![], "{stderr}");
        assert!(
            notes(&env).contains("MCP servers frozen: prices (from the recorded MCP traffic)"),
            "{}",
            notes(&env)
        );

        // The server's command missing: the frozen server stands in for it.
        fx.edit_and_commit("skills/price-check/mcp/mcp.json", |t| {
            t.replace("\"python3\"", "\"no-such-python\"")
        });
        let (code, env, stderr) = fx.rerun(cassette, &["--strict"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(divergences(&env), vec![], "{stderr}");

        // Live, the missing command fails the server: red.
        let (code, _, stderr) = fx.rerun(cassette, &["--mcp-live", "prices"]);
        assert_eq!(code, 1, "{stderr}");
        fx.edit_and_commit("skills/price-check/mcp/mcp.json", |t| {
            t.replace("\"no-such-python\"", "\"python3\"")
        });

        // The service's data changed: frozen stays green ...
        fx.edit_and_commit("skills/price-check/mcp/prices.json", |t| {
            t.replace("12.50", "14.00")
        });
        let (code, env, stderr) = fx.rerun(cassette, &["--strict"]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(divergences(&env), vec![], "{stderr}");
        // ... live, the divergence is at the MCP call.
        let (code, env, stderr) = fx.rerun(cassette, &["--mcp-live", "prices", "--strict"]);
        assert_eq!(code, 1, "{stderr}");
        assert!(
            divergences(&env).contains(&at(
                "main",
                Some(1),
                Some("mcp__prices__lookup_price"),
                "tool_result"
            )),
            "{stderr}"
        );
        // The live server ran (inside the sandbox) and answered from the
        // changed data.
        let d = &env["results"][0]["rerun"]["divergences"][0];
        assert!(
            d["recorded"].to_string().contains("WIDGET-1: 12.50 EUR"),
            "{d}"
        );
        assert!(d["now"].to_string().contains("WIDGET-1: 14.00 EUR"), "{d}");
        assert!(
            notes(&env).contains("live (--mcp-live): prices"),
            "{}",
            notes(&env)
        );
    }

    /// What cowork-harness would have written for the same run: no reel
    /// traffic key, its own generator stamp.
    fn as_written_by_cowork_harness(fx: &Fixture, cassette: &str) {
        CassetteDoc::from_file(&fx.root().join(cassette))
            .remove("reelMcp")
            .remove("environment.sandbox")
            .set("generator", "cowork-harness".into())
            .set("environment.harnessVersion", "2.0.0".into())
            .write(&fx.root().join(cassette));
        fx.commit(".", "as cowork-harness writes it");
    }

    #[test]
    fn a_cassette_without_traffic_reruns_from_its_tool_use_pairs() {
        support::require!(claude_bin());
        let fx = scratch();
        let cassette = "cassettes/price-check.cassette.json";
        as_written_by_cowork_harness(&fx, cassette);
        // The server's command missing: only the pairs can answer.
        fx.edit_and_commit("skills/price-check/mcp/mcp.json", |t| {
            t.replace("\"python3\"", "\"no-such-python\"")
        });
        let (code, env, stderr) = fx.rerun(cassette, &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(divergences(&env), vec![], "{stderr}");
        assert!(
            notes(&env).contains(
                "MCP servers frozen: prices (from the recorded tool_use/tool_result pairs)"
            ),
            "{}",
            notes(&env)
        );
    }

    /// The MCP traffic of a fresh `reel record`, per server.
    fn recorded_traffic(fx: &Fixture, out: &str) -> Value {
        let bin = claude_bin().expect("the real claude binary");
        let run = reel()
            .current_dir(fx.root())
            .env("REEL_CLAUDE_BIN", bin)
            .args(["record", "scenarios/price-check.yaml", "--out", out])
            .run();
        assert_eq!(run.code, 0, "{}", run.stderr);
        let doc = CassetteDoc::from_file(&fx.root().join(out));
        doc.doc()["reelMcp"].clone()
    }

    #[test]
    fn record_keeps_each_servers_traffic_and_a_rerun_serves_it() {
        support::require!(claude_bin());
        let fx = scratch();
        let out = "cassettes/fresh.cassette.json";
        let traffic = recorded_traffic(&fx, out);
        let prices = &traffic["servers"]["prices"];
        assert_eq!(
            prices["initialize"]["serverInfo"]["name"], "prices",
            "{traffic}"
        );
        let list = prices["requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["method"] == "tools/list")
            .expect("the tools/list exchange");
        // The real input schema, not a permissive stand-in.
        assert_eq!(
            list["result"]["tools"][0]["inputSchema"]["required"],
            serde_json::json!(["sku"])
        );
        let call = &prices["calls"][0];
        assert_eq!(call["params"]["name"], "lookup_price");
        assert_eq!(call["params"]["arguments"]["sku"], "WIDGET-1");
        assert_eq!(
            call["result"]["content"][0]["text"], "WIDGET-1: 12.50 EUR",
            "{call}"
        );
        assert!(
            traffic["configDigest"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")),
            "{traffic}"
        );
        fx.commit(".", "recorded");

        // Served from that traffic with the server gone and its data changed.
        fx.edit_and_commit("skills/price-check/mcp/prices.json", |t| {
            t.replace("12.50", "99.00")
        });
        fx.edit_and_commit("skills/price-check/mcp/mcp.json", |t| {
            t.replace("\"python3\"", "\"no-such-python\"")
        });
        let (code, env, stderr) = fx.rerun(out, &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(divergences(&env), vec![], "{stderr}");
        assert!(
            notes(&env).contains("MCP servers frozen: prices (from the recorded MCP traffic)"),
            "{}",
            notes(&env)
        );
    }

    /// Run by hand where the original is built (CI cannot build it: it is
    /// not on any registry). What CI checks instead is its captured replay
    /// of the bundled cassette with traffic, field for field
    /// (`replay::bundled_cassettes_replay_field_for_field_as_the_original`).
    #[test]
    #[ignore = "needs cowork-harness 2.0.0 built here: REEL_ORIGINAL_CLI (spec/running-the-original.md)"]
    fn cowork_harness_replays_a_cassette_carrying_mcp_traffic() {
        let (node, cli) = support::require!(support::original_cli());
        let fx = scratch();
        let cassette = "cassettes/price-check.cassette.json";
        let doc = CassetteDoc::from_file(&fx.root().join(cassette));
        assert!(doc.doc()["reelMcp"]["servers"]["prices"].is_object());
        let out = std::process::Command::new(node)
            .arg(cli)
            .args(["replay", cassette, "--output-format", "json"])
            .current_dir(fx.root())
            .output()
            .expect("run cowork-harness");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let env: Value = serde_json::from_slice(&out.stdout).expect("its JSON envelope");
        assert_eq!(env["version"], "2.0.0", "{env}");
        assert_eq!(env["ok"], true, "{env}");
        let theirs = &env["results"][0];
        assert_eq!(theirs["verdict"]["pass"], true, "{theirs}");
        // The same assertions, judged the same, as reel's own replay.
        let ours = reel()
            .current_dir(fx.root())
            .args(["replay", cassette, "--output-format", "json"])
            .run()
            .json();
        let outcomes = |r: &Value| -> Vec<(String, bool)> {
            r["assertions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| (a["assertion"].to_string(), a["pass"] == true))
                .collect()
        };
        assert_eq!(outcomes(theirs), outcomes(&ours["results"][0]));
        assert_eq!(outcomes(theirs).len(), 4, "{theirs}");
    }

    /// verify-cassettes of one cassette: exit code and its staleness lines.
    fn verify_staleness(fx: &Fixture, cassette: &str) -> (i32, Vec<String>) {
        let run = reel()
            .current_dir(fx.root())
            .args(["verify-cassettes", cassette, "--skip-privacy"])
            .args(["--output-format", "json"])
            .run();
        let env = run.json();
        let lines = env["results"][0]["staleness"]
            .as_array()
            .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        (run.code, lines)
    }

    #[test]
    fn a_changed_server_outside_the_skill_tree_makes_the_cassette_stale() {
        support::require!(claude_bin());
        let fx = scratch();
        // The server beside the session, outside every skill root: only the
        // MCP digest can notice a change to it.
        fx.copy_in(&fx.root().join("skills/price-check/mcp"), "mcp-outside");
        fx.edit("sessions/price-check.yaml", |t| {
            t.replace(
                "../skills/price-check/mcp/mcp.json",
                "../mcp-outside/mcp.json",
            )
        });
        fx.commit(".", "server outside the skill");
        let out = "cassettes/fresh.cassette.json";
        recorded_traffic(&fx, out);
        fx.commit(".", "recorded");
        assert_eq!(verify_staleness(&fx, out), (0, vec![]));

        fx.edit_and_commit("mcp-outside/prices.json", |t| t.replace("12.50", "14.00"));
        let (code, stale) = verify_staleness(&fx, out);
        assert_eq!(code, 1, "{stale:?}");
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert!(
            stale[0].starts_with("MCP configuration differs from the recording"),
            "{stale:?}"
        );
    }

    #[test]
    fn mcp_live_naming_no_server_is_refused() {
        support::require!(claude_bin());
        let fx = scratch();
        let (code, _, stderr) = fx.rerun(
            "cassettes/price-check.cassette.json",
            &["--mcp-live", "nope"],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("--mcp-live `nope`"), "{stderr}");
        assert!(stderr.contains("it has: prices"), "{stderr}");
    }
}

const DOC_REPORT: &str = "cassettes/doc-report.cassette.json";
const MAKE_REPORT: &str = "skills/doc-report/scripts/make_report.py";

/// The rerun's text report (stderr) of `cassette`.
fn rerun_text(s: &Fixture, cassette: &str, extra: &[&str]) -> (i32, String) {
    let out = reel()
        .current_dir(s.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .arg("rerun")
        .arg(cassette)
        .args(extra)
        .run();
    (out.code, out.stderr)
}

#[test]
fn the_zip_writing_example_reruns_green_under_strict_with_its_masks() {
    support::require!(claude_bin());
    let s = scratch();
    let (code, env, stderr) = s.rerun(DOC_REPORT, &["--strict"]);
    assert_eq!(code, 0, "{stderr}\n{env}");
    assert_eq!(divergences(&env), vec![]);
    // Without the project's masks the random reference diverges.
    std::fs::remove_file(s.path("reel.toml")).unwrap();
    let (code, env, _) = s.rerun(DOC_REPORT, &["--strict"]);
    assert_eq!(code, 1, "{env}");
    let d = divergences(&env);
    assert!(
        d.contains(&at("main", Some(1), Some("Bash"), "tool_result")),
        "{d:?}"
    );
    assert!(
        d.contains(&at("-", None, Some("outputs/report.docx"), "file")),
        "{d:?}"
    );
}

#[test]
fn a_python_exception_in_the_example_names_its_last_line() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit(MAKE_REPORT, |t| {
        // A deep traceback: its last line is past any head-only cut.
        let deep = "def step(n):\n    if n == 0:\n        raise KeyError('field_id')\n    \
                    step(n - 1)\n\nstep(60)\n";
        t.replace(
            "src, out = sys.argv[1], sys.argv[2]",
            &format!("{deep}src, out = sys.argv[1], sys.argv[2]"),
        )
    });
    let (code, env, _) = s.rerun(DOC_REPORT, &[]);
    assert_eq!(code, 1, "{env}");
    let json = env.to_string();
    assert!(json.contains("KeyError: 'field_id'"), "{json}");
    let failed = failing(&env);
    assert!(
        failed
            .iter()
            .any(|f| f.contains("Bash: KeyError: 'field_id'")),
        "{failed:?}"
    );
    let (code, text) = rerun_text(&s, DOC_REPORT, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("  Bash: KeyError: 'field_id'"), "{text}");
    assert!(
        text.contains("+ [error] Traceback") || text.contains("KeyError: 'field_id'"),
        "{text}"
    );
}

#[test]
fn a_changed_field_and_changed_document_text_show_as_text_not_a_hash() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_and_commit(MAKE_REPORT, |t| {
        t.replace("f\"Rows: {len(rows)}\"", "f\"Row count: {len(rows)}\"")
    });
    let (code, text) = rerun_text(&s, DOC_REPORT, &["--strict"]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("output changed: outputs/report.docx"),
        "{text}"
    );
    assert!(text.contains("- word/document.xml: Rows: 3"), "{text}");
    assert!(text.contains("+ word/document.xml: Row count: 3"), "{text}");
    assert!(!text.contains("sha256"), "{text}");
    // Only the output changed: the model saw the same inputs.
    assert!(!text.contains("made from other inputs"), "{text}");
    insta::with_settings!({filters => vec![
        (r"(?m)  \d+(\.\d+)? (ms|s)$", "  [time]"),
        (r"run directory kept: .*", "run directory kept: [run dir]"),
        // The layers this machine's kernel gives (tests/it/sandbox.rs checks them).
        (r"(?m)^sandbox: landlock .*\(every run\)$", "sandbox: [layers] (every run)"),
    ]}, {
        insta::assert_snapshot!("rerun_doc_report_changed_text", text);
    });
    // A changed field: the total the script prints and writes.
    s.edit_and_commit(MAKE_REPORT, |t| {
        t.replace("total = sum(", "total = 1 + sum(")
    });
    let (code, env, _) = s.rerun(DOC_REPORT, &[]);
    assert_eq!(code, 0, "{env}");
    let d = &env["results"][0]["rerun"]["divergences"];
    let text = d.to_string();
    assert!(text.contains("+ word/document.xml: Total: 246"), "{text}");
    assert!(text.contains("+ rows=3 total=246"), "{text}");
}

/// Issue #39 item 10: a cassette stamped newer than reel reads (v17) is
/// refused as replay and verify-cassettes refuse it, before any agent starts
/// (exit 3; it once reran and passed with exit 0).
#[test]
fn a_too_new_cassette_is_refused_before_any_agent_starts() {
    let s = scratch();
    s.edit_json("cassettes/write-note.cassette.json", |d| {
        d["cassetteVersion"] = 17.into();
    });
    let run = reel()
        .current_dir(s.root())
        .env("REEL_CLAUDE_BIN", "/no/such/claude")
        .args(["rerun", "cassettes/write-note.cassette.json"])
        .run();
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "cassette format too new: cassette format v17 is newer than this reel understands \
             (v16)"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("/no/such/claude"), "{}", run.stderr);
    let replay = reel()
        .current_dir(s.root())
        .args(["replay", "cassettes/write-note.cassette.json"])
        .run();
    assert_ne!(replay.code, 0, "{}", replay.stderr);
}

/// Issue #39 item 10: `rerun --write` never stamps a lower version than the
/// cassette it replaces (a v16 cassette once came back as a v12 `.new`).
#[test]
fn write_never_stamps_a_lower_version_than_it_read() {
    support::require!(claude_bin());
    let s = scratch();
    s.edit_json("cassettes/csv-stats.cassette.json", |d| {
        d["cassetteVersion"] = 16.into();
        d["$schema"] = d["$schema"]
            .as_str()
            .unwrap()
            .replace("v12.json", "v16.json")
            .into();
    });
    s.edit_and_commit("skills/csv-stats/scripts/stats.sh", |t| {
        format!("{t}# refactored\n")
    });
    let (code, env) = rerun_write(&s, "false");
    assert_eq!(code, 0, "{env}");
    let new = s.path("cassettes/csv-stats.cassette.json.new");
    let doc: Value = serde_json::from_slice(&std::fs::read(&new).unwrap()).unwrap();
    assert_eq!(doc["cassetteVersion"], 16, "{}", doc["$schema"]);
    assert!(
        doc["$schema"]
            .as_str()
            .unwrap()
            .ends_with("cassette.v16.json"),
        "{}",
        doc["$schema"]
    );
    let replay = reel()
        .current_dir(s.root())
        .args(["replay", "cassettes/csv-stats.cassette.json.new"])
        .run();
    assert_eq!(replay.code, 0, "{}", replay.stderr);
}
