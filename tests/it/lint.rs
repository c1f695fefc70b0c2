//! `reel lint`: one scenario per footgun, each checked for its code and its
//! line; the exit codes (`--strict`, unreadable input); nothing flagged on the
//! bundled scenarios or cowork-harness's compat scenarios.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, Fixture, RunExt};

/// A scenario directory beside a `sessions/` with the sessions the tests name.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    fx.dirs(&["scenarios", "sessions", "data"]);
    fx.write("sessions/lean.yaml", "permission_mode: default\n");
    fx.write("data/brief.txt", "brief\n");
    fx.write(
        "sessions/with-input.yaml",
        "permission_mode: default\nuploads:\n  - ../data/brief.txt\n",
    );
    fx
}

/// Writes `scenarios/<name>.yaml` (and its `.model.yaml` when given).
fn scenario(fx: &Fixture, name: &str, text: &str, model: Option<&str>) -> PathBuf {
    if let Some(m) = model {
        fx.write(&format!("scenarios/{name}.model.yaml"), m);
    }
    fx.write(&format!("scenarios/{name}.yaml"), text)
}

/// `reel lint <path> --output-format json [extra]`: (exit code, findings).
fn lint(path: &Path, extra: &[&str]) -> (i32, Vec<Value>) {
    let run = support::reel()
        .arg("lint")
        .arg(path)
        .args(["--output-format", "json"])
        .args(extra)
        .run();
    let v = run.json();
    support::assert_schema("lint.json", &v);
    let findings = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["findings"].as_array().cloned().unwrap_or_default())
        .collect();
    (run.code, findings)
}

/// The one finding with `code`, asserting its line (and that it is alone).
fn only(findings: &[Value], code: &str, line: u64) -> Value {
    let hits: Vec<&Value> = findings.iter().filter(|f| f["code"] == code).collect();
    assert_eq!(hits.len(), 1, "one {code} expected: {findings:#?}");
    assert_eq!(hits[0]["line"], line, "{code} line: {:#?}", hits[0]);
    assert!(hits[0]["hint"].is_string(), "{code} has a hint");
    hits[0].clone()
}

const WRITE_NOTE: &str = "\
session: ../sessions/lean.yaml
fidelity: protocol
prompt: Write outputs/note.md.
answers:
  - when_tool: Write
    decide: allow
assert:
  - result: success
  - file_exists: outputs/note.md
";

#[test]
fn a_clean_scenario_has_no_finding() {
    let fx = fixture();
    let (rc, f) = lint(&scenario(&fx, "clean", WRITE_NOTE, None), &[]);
    assert_eq!((rc, f.len()), (0, 0), "{f:#?}");
}

#[test]
fn l001_a_live_only_key() {
    let fx = fixture();
    let text = format!("{WRITE_NOTE}  - file_absent: outputs/debug.log\n");
    let (rc, f) = lint(&scenario(&fx, "live", &text, None), &[]);
    let x = only(&f, "L001", 10);
    assert_eq!(x["severity"], "warning");
    assert!(
        x["message"]
            .as_str()
            .unwrap()
            .contains("`file_absent` is live-only")
    );
    // A warning alone passes; --strict fails it.
    assert_eq!(rc, 0);
    let (rc, _) = lint(&scenario(&fx, "live", &text, None), &["--strict"]);
    assert_eq!(rc, 1);
}

/// The LLM-judged keys (cassette v14) are named as judged: the original skips
/// them on replay, loudly, so a protocol recording never evaluates them.
#[test]
fn l001_a_judged_key_is_named_as_judged() {
    let fx = fixture();
    let text = format!("{WRITE_NOTE}  - semantic_pairwise:\n      refs: [\"refs/baseline\"]\n");
    let (_, f) = lint(&scenario(&fx, "judged", &text, None), &[]);
    let x = only(&f, "L001", 10);
    let message = x["message"].as_str().unwrap();
    assert!(
        message.contains("`semantic_pairwise` is LLM-judged"),
        "{message}"
    );
    assert!(message.contains("replay skips it"), "{message}");
    // reel freezes a semantic_matches verdict and replays it: not flagged.
    let text = format!("{WRITE_NOTE}  - semantic_matches:\n      rubric: [\"names the total\"]\n");
    let (_, f) = lint(&scenario(&fx, "frozen", &text, None), &[]);
    assert!(f.iter().all(|x| x["code"] != "L001"), "{f:#?}");
}

#[test]
fn l002_input_unmodified_without_a_pre_run_baseline() {
    let fx = fixture();
    let text = format!("{WRITE_NOTE}  - input_unmodified: \"uploads/**\"\n");
    let (_, f) = lint(&scenario(&fx, "baseline", &text, None), &[]);
    only(&f, "L002", 10);
    // With staged uploads there is a baseline: nothing to say.
    let staged = text.replace("lean.yaml", "with-input.yaml");
    let (_, f) = lint(&scenario(&fx, "staged", &staged, None), &[]);
    assert!(f.iter().all(|x| x["code"] != "L002"), "{f:#?}");
    // The remote lane never has one, for either key.
    let remote = text
        .replace(
            "fidelity: protocol\n",
            "fidelity: container\nlane: remote\n",
        )
        .replace(
            "input_unmodified: \"uploads/**\"",
            "no_unexpected_files: []",
        );
    let (_, f) = lint(&scenario(&fx, "remote", &remote, None), &[]);
    only(&f, "L002", 11);
}

#[test]
fn l003_a_slash_command_after_the_start_of_the_prompt() {
    let fx = fixture();
    let text = WRITE_NOTE.replace(
        "prompt: Write outputs/note.md.\n",
        "prompt: |\n  Write outputs/note.md.\n  Then run /review on it.\n",
    );
    let (_, f) = lint(&scenario(&fx, "slash", &text, None), &[]);
    let x = only(&f, "L003", 5);
    assert!(x["message"].as_str().unwrap().contains("`/review`"));
    // At the very start it is the working form; paths are not commands.
    let first = WRITE_NOTE.replace(
        "prompt: Write outputs/note.md.",
        "prompt: /review outputs/note.md and /tmp/x",
    );
    let (_, f) = lint(&scenario(&fx, "slash-first", &first, None), &[]);
    assert!(f.iter().all(|x| x["code"] != "L003"), "{f:#?}");
}

const ASKS_FORMAT: &str = "\
turns:
  - blocks:
      - tool: AskUserQuestion
        input:
          questions:
            - question: Which format should the note use?
              header: Format
              multiSelect: false
              options:
                - {label: Markdown, description: Headings}
                - {label: Plain text, description: No markup}
  - blocks:
      - text: done
";

#[test]
fn l004_answers_rules_that_can_never_match() {
    let fx = fixture();
    let text = WRITE_NOTE.replace(
        "answers:\n",
        "answers:\n  - when_question: \"colour\"\n    choose: first\n  - when_tool: Wrte\n    decide: allow\n",
    );
    let (_, f) = lint(&scenario(&fx, "never", &text, Some(ASKS_FORMAT)), &[]);
    let hits: Vec<&Value> = f.iter().filter(|x| x["code"] == "L004").collect();
    assert_eq!(hits.len(), 2, "{f:#?}");
    assert_eq!(hits[0]["line"], 5);
    assert!(
        hits[0]["message"]
            .as_str()
            .unwrap()
            .contains("Which format should the note use?")
    );
    assert_eq!(hits[1]["line"], 7);
    assert!(
        hits[1]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `Write`")
    );
}

#[test]
fn l005_a_choose_that_names_no_offered_option() {
    let fx = fixture();
    let text = WRITE_NOTE.replace(
        "answers:\n",
        "answers:\n  - when_question: \"format\"\n    choose: YAML\n",
    );
    let (rc, f) = lint(&scenario(&fx, "choose", &text, Some(ASKS_FORMAT)), &[]);
    let x = only(&f, "L005", 6);
    assert_eq!(x["severity"], "error");
    assert_eq!(rc, 1);
    let ok = text.replace("choose: YAML", "choose: Plain text");
    let (rc, f) = lint(&scenario(&fx, "choose-ok", &ok, Some(ASKS_FORMAT)), &[]);
    assert_eq!((rc, f.len()), (0, 0), "{f:#?}");
}

#[test]
fn l006_an_allow_if_that_is_not_javascript() {
    let fx = fixture();
    let text = WRITE_NOTE.replace(
        "  - when_tool: Write\n    decide: allow\n",
        "  - when_tool: Bash\n    allow_if: \"command.includes('rm' &&\"\n",
    );
    let (rc, f) = lint(&scenario(&fx, "js", &text, None), &[]);
    let x = only(&f, "L006", 6);
    assert_eq!(x["severity"], "error");
    assert_eq!(rc, 1);
    // Said once, not again as "does not load".
    assert!(f.iter().all(|x| x["code"] != "L000"), "{f:#?}");
}

#[test]
fn l007_vacuous_assertions() {
    let fx = fixture();
    let text = format!(
        "{WRITE_NOTE}  - tool_not_called: WebFetchh\n  - file_exists: note.md\n  - file_exists: uploads/brief.txt\n"
    );
    let (_, f) = lint(&scenario(&fx, "vacuous", &text, None), &[]);
    let lines: Vec<&Value> = f
        .iter()
        .filter(|x| x["code"] == "L007")
        .map(|x| &x["line"])
        .collect();
    assert_eq!(lines, [10, 11, 12], "{f:#?}");
}

#[test]
fn l008_nothing_asserted_beyond_result() {
    let fx = fixture();
    let text = WRITE_NOTE.replace(
        "  - file_exists: outputs/note.md\n",
        "  - allow_stall: true\n",
    );
    let (_, f) = lint(&scenario(&fx, "result-only", &text, None), &[]);
    only(&f, "L008", 7);
}

#[test]
fn l009_contradictory_assertions() {
    let fx = fixture();
    let text = format!(
        "{WRITE_NOTE}  - tool_called: Write\n  - questions_count_max: 0\n  - tool_not_called: Write\n  - question_asked: format\n"
    );
    let (rc, f) = lint(&scenario(&fx, "contra", &text, None), &[]);
    let hits: Vec<&Value> = f.iter().filter(|x| x["code"] == "L009").collect();
    assert_eq!(hits.len(), 2, "{f:#?}");
    assert_eq!(hits[0]["line"], 12);
    assert!(
        hits[0]["message"]
            .as_str()
            .unwrap()
            .contains("`tool_not_called` (assert[4]) contradicts `tool_called` (assert[2])")
    );
    assert_eq!(hits[1]["line"], 13);
    assert_eq!(rc, 1);
}

#[test]
fn l010_paths_that_do_not_exist() {
    let fx = fixture();
    let text = WRITE_NOTE.replace("lean.yaml", "missing.yaml");
    let (rc, f) = lint(&scenario(&fx, "no-session", &text, None), &[]);
    only(&f, "L010", 1);
    assert_eq!(rc, 1);
    // A session's upload / folder / skill path, at its line in the session.
    std::fs::write(
        fx.path("sessions/broken.yaml"),
        "permission_mode: default\nuploads:\n  - ../data/brief.txt\n  - ../data/gone.txt\nfolders:\n  - from: ../nowhere\nskills:\n  local:\n    - ../skills/absent\n",
    )
    .unwrap();
    let text = WRITE_NOTE.replace("lean.yaml", "broken.yaml");
    let (_, f) = lint(&scenario(&fx, "broken-session", &text, None), &[]);
    let hits: Vec<(String, u64)> = f
        .iter()
        .filter(|x| x["code"] == "L010")
        .map(|x| {
            (
                Path::new(x["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                x["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hits,
        [
            ("broken.yaml".to_string(), 4),
            ("broken.yaml".to_string(), 6),
            ("broken.yaml".to_string(), 9)
        ],
        "{f:#?}"
    );
}

#[test]
fn a_scenario_the_loader_refuses_is_l000_and_unreadable_input_exits_2() {
    let fx = fixture();
    let text = format!("{WRITE_NOTE}  - tool_caled: Write\n");
    let (rc, f) = lint(&scenario(&fx, "schema", &text, None), &[]);
    assert_eq!(rc, 1);
    let x = &f.iter().find(|x| x["code"] == "L000").expect("L000")["message"];
    assert!(x.as_str().unwrap().contains("tool_caled"), "{x}");
    let bad = scenario(&fx, "not-yaml", "prompt: [unclosed\n", None);
    let out = support::reel().arg("lint").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-yaml.yaml"));
    let out = support::reel()
        .args(["lint", "/no/such/scenario.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_text_report_names_file_and_line() {
    let fx = fixture();
    let text = format!("{WRITE_NOTE}  - file_absent: outputs/debug.log\n");
    let p = scenario(&fx, "live", &text, None);
    let out = support::reel().arg("lint").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty());
    assert!(
        err.starts_with(&format!(
            "{}:10: warning[L001 live-only-key]: ",
            p.display()
        )),
        "{err}"
    );
    assert!(err.contains("\n    hint: "), "{err}");
    assert!(
        err.ends_with("lint: 1 scenario checked, 0 errors, 1 warning\n"),
        "{err}"
    );
}

#[test]
fn nothing_is_flagged_on_the_bundled_and_compat_scenarios() {
    for dir in [
        support::repo().join("scenarios"),
        support::repo().join("scenarios/red"),
        support::compat("examples/scenarios"),
        support::compat("examples/scenarios/trigger-accuracy-sweep"),
    ] {
        let (rc, f) = lint(&dir, &["--strict"]);
        assert_eq!((rc, f.len()), (0, 0), "{}: {f:#?}", dir.display());
    }
}

#[test]
fn record_prints_the_lint_findings_first_and_is_not_stopped_by_them() {
    let fx = fixture();
    // Only `result` asserted (a warning), and a tier reel does not record:
    // the warning is printed, then record's own refusal decides the exit.
    let text = "fidelity: container\nprompt: hi\nassert:\n  - result: success\n";
    let p = scenario(&fx, "record-lint", text, None);
    let out = support::reel().arg("record").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let warn_at = err
        .find(&format!(
            "{}:3: warning[L008 only-result-asserted]",
            p.display()
        ))
        .unwrap_or_else(|| panic!("{err}"));
    let refusal_at = err
        .find("reel records at the protocol tier only")
        .expect(&err);
    assert!(warn_at < refusal_at, "{err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
}

/// Every problem the loader finds in a file is reported, each at its line
/// with the list index of the file (not the first only); L008 names only
/// what the file holds; an unparseable file is counted in the tally.
#[test]
fn every_loader_problem_of_a_file_is_reported_and_only_real_tokens_named() {
    let fx = fixture();
    let text = "name: many\nprompt: hi\nsession: ../sessions/lean.yaml\nanswerz: []\n\
                timeout_ms: \"x\"\nassert:\n  - result: success\n  - tool_caled: Bash\n  \
                - max_turns: -3\n  - file_exists: outputs/a.md\n";
    scenario(&fx, "many", text, None);
    scenario(
        &fx,
        "none",
        "name: none\nprompt: hi\nsession: ../sessions/lean.yaml\n",
        None,
    );
    scenario(&fx, "unparseable", "prompt: [unclosed\n", None);
    let out = support::reel()
        .current_dir(fx.path("."))
        .args([
            "lint",
            "scenarios/many.yaml",
            "scenarios/none.yaml",
            "scenarios/unparseable.yaml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("beyond `result`"), "{err}");
    insta::assert_snapshot!(err);
}

/// A scenario asserting a gate key (`question_option_count`, bucket
/// needs-control-out) and a plain key.
const GATED: &str = "\
session: ../sessions/lean.yaml
fidelity: protocol
prompt: Pick a format.
answers:
  - when_question: Which format?
    choose: [PDF]
assert:
  - result: success
  - question_option_count: {matches: '.', min: 2}
";

#[test]
fn l011_a_control_out_key_on_a_cassette_without_control_out() {
    let fx = fixture();
    let p = scenario(&fx, "gated", GATED, None);
    // No cassette yet: nothing to say.
    let (_, f) = lint(&p, &[]);
    assert!(f.iter().all(|f| f["code"] != "L011"), "{f:#?}");
    // Recorded with its control responses: nothing either.
    let with = |control_out: Value| {
        let doc = serde_json::json!({"cassetteVersion": 14, "scenarioSource": "../scenarios/gated.yaml",
            "scenario": {"prompt": "Pick a format."}, "events": [], "controlOut": control_out});
        fx.write("cassettes/gated.cassette.json", doc.to_string());
    };
    with(serde_json::json!(["{}"]));
    let (_, f) = lint(&p, &[]);
    assert!(f.iter().all(|f| f["code"] != "L011"), "{f:#?}");
    // Without them, the gate key is named at its line; `result` is not.
    with(serde_json::json!([]));
    let (rc, f) = lint(&p, &["--strict"]);
    assert_eq!(rc, 1);
    let hit = only(&f, "L011", 9);
    assert_eq!(hit["name"], "needs-control-out");
    assert_eq!(hit["severity"], "warning");
    // A cassette recorded from another scenario is not this one's.
    fx.edit_json("cassettes/gated.cassette.json", |d| {
        d["scenarioSource"] = "../scenarios/other.yaml".into();
    });
    let (_, f) = lint(&p, &[]);
    assert!(f.iter().all(|f| f["code"] != "L011"), "{f:#?}");

    fx.edit_json("cassettes/gated.cassette.json", |d| {
        d.as_object_mut().unwrap().remove("scenarioSource");
        d.as_object_mut().unwrap().remove("controlOut");
    });
    let out = support::reel()
        .current_dir(fx.root())
        .args(["lint", "scenarios/gated.yaml"])
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "lint_l011_needs_control_out",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scenario whose second `prompt:` and second `decide:` silently replace
/// the first, and a session that gives `permission_mode` twice.
const DUPLICATED: &str = "\
session: ../sessions/twice.yaml
prompt: Summarise the brief.
answers:
  - when_tool: Bash
    decide: deny
    decide: allow
  - when_tool: Write
    decide: allow
assert:
  - result: success
  - tool_called: Write
prompt: Summarise the brief in French.
";

#[test]
fn l012_a_key_given_twice_in_one_mapping() {
    let fx = fixture();
    fx.write(
        "sessions/twice.yaml",
        "permission_mode: default\npermission_mode: bypassPermissions\n",
    );
    let p = scenario(&fx, "duplicated", DUPLICATED, None);
    let (rc, f) = lint(&p, &[]);
    assert_eq!(rc, 1, "{f:#?}");
    let hits: Vec<(&str, u64)> = f
        .iter()
        .filter(|f| f["code"] == "L012")
        .map(|f| (f["file"].as_str().unwrap(), f["line"].as_u64().unwrap()))
        .collect();
    let named = |file: &str, line: u64| hits.iter().any(|h| h.0.ends_with(file) && h.1 == line);
    assert_eq!(hits.len(), 3, "{f:#?}");
    assert!(named("scenarios/duplicated.yaml", 6), "{hits:?}");
    assert!(named("scenarios/duplicated.yaml", 12), "{hits:?}");
    assert!(named("sessions/twice.yaml", 2), "{hits:?}");
    // The same key in two list items is not a duplicate; nor is one given once.
    let once = DUPLICATED
        .replace("    decide: deny\n", "")
        .replace("prompt: Summarise the brief in French.\n", "");
    fx.write("sessions/twice.yaml", "permission_mode: default\n");
    let p = scenario(&fx, "duplicated", &once, None);
    let (_, f) = lint(&p, &[]);
    assert!(f.iter().all(|f| f["code"] != "L012"), "{f:#?}");

    scenario(&fx, "duplicated", DUPLICATED, None);
    let out = support::reel()
        .current_dir(fx.root())
        .args(["lint", "scenarios/duplicated.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(
        "lint_l012_duplicate_key",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue #39 item 6: a skill in a git work tree with no tracked file is
/// refused by `reel record` before anything runs; lint reports the same
/// refusal (L013, from record's own code) instead of passing the scenario.
#[test]
fn l013_a_scenario_record_refuses_at_once_is_an_error() {
    let fx = fixture();
    fx.write("README.md", "a project\n");
    fx.commit(".", "project");
    fx.write("skills/fresh/SKILL.md", "---\nname: fresh\n---\nNew.\n");
    fx.write(
        "sessions/fresh.yaml",
        "permission_mode: default\nskills:\n  local:\n    - ../skills/fresh\n",
    );
    let text = WRITE_NOTE.replace("lean.yaml", "fresh.yaml");
    let p = scenario(&fx, "untracked", &text, Some(ASKS_FORMAT));
    let (rc, f) = lint(&p, &[]);
    let x = only(&f, "L013", 1);
    assert_eq!((rc, &x["severity"]), (1, &Value::from("error")), "{f:#?}");
    let msg = x["message"].as_str().unwrap();
    assert!(msg.contains("has no tracked files"), "{msg}");
    // record refuses with the same words, before any agent starts.
    let out = support::reel()
        .arg("record")
        .arg(&p)
        .env("REEL_CLAUDE_BIN", "/nonexistent/claude")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("has no tracked files"), "{err}");
    assert!(
        !err.contains("L013"),
        "record prints its refusal once: {err}"
    );
    // Committed, the skill stages: lint is clean.
    fx.commit(".", "skill");
    let (rc, f) = lint(&p, &[]);
    assert_eq!((rc, f.len()), (0, 0), "{f:#?}");
}

/// Issue #39 item 8: with no model script, a `question_options: {equals}`
/// assertion states the options; a `choose:` naming none of them is L005.
#[test]
fn l005_a_choose_that_names_no_option_stated_by_question_options() {
    let fx = fixture();
    let text = WRITE_NOTE
        .replace(
            "answers:\n",
            "answers:\n  - when_question: \"format\"\n    choose: YAML\n",
        )
        .replace(
            "  - result: success\n",
            "  - result: success\n  - question_options:\n      when_question: Which format\n      \
             equals: [Markdown, Plain text]\n",
        );
    let (rc, f) = lint(&scenario(&fx, "choose-asserted", &text, None), &[]);
    let x = only(&f, "L005", 6);
    assert!(
        x["message"].as_str().unwrap().contains("question_options"),
        "{x}"
    );
    assert_eq!(rc, 1);
    let ok = text.replace("choose: YAML", "choose: Plain text");
    let (rc, f) = lint(&scenario(&fx, "choose-asserted-ok", &ok, None), &[]);
    assert!(f.iter().all(|x| x["code"] != "L005"), "{f:#?}");
    assert_eq!(rc, 0, "{f:#?}");
}
