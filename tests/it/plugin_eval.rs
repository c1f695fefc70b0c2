//! `reel import plugin-eval` / `reel export plugin-eval` on the bundled
//! plugin (examples/plugin-eval/release-notes): the import reproduces the
//! committed scenarios byte for byte and re-importing changes nothing; bad
//! input is refused naming file, field and fix; the committed cassettes
//! replay and rerun green and a broken plugin script reruns red; export then
//! import gives the same scenario; and Claude Code's own `claude plugin eval`,
//! pointed at reel's scripted model, grades each case as reel does, grader by
//! grader (the agreement check: under `CI=true` a missing prerequisite fails).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::support::{self, Fixture, RunExt, claude_bin, reel, repo};

const PLUGIN: &str = "examples/plugin-eval/release-notes";
const OUT: &str = "scenarios/plugin-eval";
const CASES: &[&str] = &[
    "follow-up",
    "from-tracker",
    "order-and-baseline",
    "write-note",
];

/// A git work tree holding the bundled plugin, its imported scenarios and
/// their cassettes (skills are staged from git-tracked files).
fn scratch() -> Fixture {
    let fx = Fixture::new();
    for rel in [PLUGIN, OUT, "cassettes/plugin-eval"] {
        fx.copy_in(&repo().join(rel), rel);
    }
    fx.commit(".", "plugin-eval example");
    fx
}

fn import(cwd: &Path, extra: &[&str]) -> support::Run {
    reel()
        .current_dir(cwd)
        .args(["import", "plugin-eval", PLUGIN, "--out", OUT])
        .args(extra)
        .run()
}

/// Every file below `dir` with its modification time.
fn mtimes(dir: &Path) -> BTreeMap<PathBuf, SystemTime> {
    let mut out = BTreeMap::new();
    for e in walkdir(dir) {
        out.insert(
            e.clone(),
            std::fs::metadata(&e).unwrap().modified().unwrap(),
        );
    }
    out
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walkdir(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

#[test]
fn the_bundled_plugin_imports_to_the_committed_scenarios_and_reimporting_changes_nothing() {
    let fx = scratch();
    let before = mtimes(&fx.path(OUT));
    let run = import(fx.root(), &["--drop-unmapped"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Byte-identical to the committed import: every file left alone.
    assert_eq!(mtimes(&fx.path(OUT)), before);
    let cases = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("case "))
        .count();
    // Six files a case, and order-and-baseline's copied baseline transcript.
    let untouched = run.stdout.matches("(0 written, 6 unchanged)").count()
        + run.stdout.matches("(0 written, 7 unchanged)").count();
    assert_eq!(
        (cases, untouched),
        (CASES.len(), CASES.len()),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!("import_report", run.stdout);
    // From scratch, the same bytes.
    std::fs::remove_dir_all(fx.path(&format!("{OUT}/sessions"))).unwrap();
    std::fs::remove_dir_all(fx.path(&format!("{OUT}/mcp"))).unwrap();
    std::fs::remove_dir_all(fx.path(&format!("{OUT}/eval"))).unwrap();
    std::fs::remove_dir_all(fx.path(&format!("{OUT}/baselines"))).unwrap();
    for c in CASES {
        std::fs::remove_file(fx.path(&format!("{OUT}/{c}.yaml"))).unwrap();
    }
    assert_eq!(import(fx.root(), &["--drop-unmapped"]).code, 0);
    for f in walkdir(&repo().join(OUT)) {
        let rel = f.strip_prefix(repo()).unwrap();
        assert_eq!(
            std::fs::read(fx.root().join(rel)).unwrap(),
            std::fs::read(&f).unwrap(),
            "{}",
            rel.display()
        );
    }
}

#[test]
fn graders_without_a_same_meaning_assertion_are_refused_naming_file_field_and_fix() {
    let fx = scratch();
    // Every bundled grader is imported; a regex over the whole trace is not
    // (no reel assertion reads the raw stream-json lines).
    fx.write(
        &format!("{PLUGIN}/evals/order-and-baseline/graders/trace-names-skill.md"),
        "---\ntype: regex\ntarget: trace\n---\nrelease-note\n",
    );
    std::fs::remove_file(fx.path(&format!("{OUT}/order-and-baseline.yaml"))).unwrap();
    let run = import(fx.root(), &["--output-format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let env = run.json();
    support::assert_schema("plugin-eval-import.json", &env);
    assert_eq!(env["ok"], false);
    let cases = env["results"]["cases"].as_array().unwrap();
    let refused = cases
        .iter()
        .find(|c| c["case"] == "order-and-baseline")
        .unwrap();
    assert!(refused["scenario"].is_null());
    assert!(!fx.path(&format!("{OUT}/order-and-baseline.yaml")).exists());
    let problems: Vec<(String, String)> = refused["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let file = p["file"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            assert!(!p["fix"].as_str().unwrap().is_empty());
            (file, p["field"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(
        problems,
        [(
            "trace-names-skill.md".into(),
            "target (grader trace-names-skill, type regex)".into()
        )]
    );
    // The other cases are still imported.
    assert_eq!(
        cases
            .iter()
            .filter(|c| c["problems"].as_array().unwrap().is_empty())
            .count(),
        3
    );
}

/// A one-case plugin whose files are `files` (path below the plugin, text).
fn plugin_with(files: &[(&str, &str)]) -> Fixture {
    let fx = Fixture::new();
    fx.write(
        "p/skills/s/SKILL.md",
        "---\nname: s\ndescription: d\n---\nbody\n",
    );
    for (rel, text) in files {
        fx.write(&format!("p/{rel}"), text);
    }
    fx
}

#[test]
fn bad_input_is_refused_with_file_field_and_fix_never_a_panic() {
    let ok_prompt = ("evals/c/prompt.md", "Do it.\n");
    let ok_grader = (
        "evals/c/graders/g.md",
        "---\ntype: file_exists\npath: outputs/a.md\n---\n",
    );
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![
                ("evals/c/prompt.md", "---\nturns: 3\n---\nDo it.\n"),
                ok_grader,
            ],
            "turns: unknown front-matter key",
        ),
        (
            vec![ok_prompt, ("evals/c/graders/g.md", "---\npath: x\n---\n")],
            "g.md: type: front matter must include `type:`",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: regex\npattern: [\n---\n",
                ),
            ],
            "g.md: (front matter): invalid YAML",
        ),
        (
            vec![
                ok_prompt,
                ("evals/c/graders/g.md", "---\ntype: regex\n---\n"),
            ],
            "invalid case",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: file_exists\npath: outputs/*.md\n---\n",
                ),
            ],
            "is a glob",
        ),
        (
            vec![
                ok_prompt,
                ok_grader,
                ("evals/mocks/srv/t.md", "---\ntype: agent\n---\nplay it\n"),
            ],
            "t.md: type: an agent responder",
        ),
        (
            vec![
                ("evals/c/prompt.md", "---\nenv: {A: b}\n---\nDo it.\n"),
                ok_grader,
            ],
            "execution.env.A: reel passes no free-form environment",
        ),
        (
            vec![
                (
                    "evals/c/prompt.md",
                    "---\nallowed_tools: [\"Bash(git:*)\"]\n---\nDo it.\n",
                ),
                ok_grader,
            ],
            "is a pattern",
        ),
        (
            vec![(
                "evals/c/case.yaml",
                "schema_version: \"9.0\"\nname: c\nexecution: {prompt: hi}\ngraders: []\n",
            )],
            "schema_version",
        ),
        (vec![ok_grader], "the case has no prompt"),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: regex\nflags: y\n---\ndone\n",
                ),
            ],
            "g.md: flags (grader g, type regex): flag `y` anchors the match",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: regex\nflags: ''\n---\n(\n",
                ),
            ],
            "g.md: pattern (grader g, type regex): the pattern or its flags do not compile",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: tool_order\nbefore: mcp__*\nafter: Bash\n---\n",
                ),
            ],
            "g.md: before (grader g, type tool_order): \"mcp__*\" is not one tool name",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: tool_used\ntool: Bash\ninput_match: '['\n---\n",
                ),
            ],
            "g.md: input_match (grader g, type tool_used): the input regex does not compile",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: baseline\nbaseline_file: ../b.jsonl\n---\nAs well.\n",
                ),
                ("evals/b.jsonl", "{}\n"),
            ],
            "b.jsonl: baseline_file: the baseline file is outside the case directory",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: baseline\nbaseline_file: b.jsonl\n---\nAs well.\n",
                ),
                ("evals/c/b.jsonl", "{}\nnot json\n"),
            ],
            "b.jsonl: baseline_file: the baseline transcript is not JSON lines (line 2: not JSON",
        ),
        (
            vec![
                ok_prompt,
                (
                    "evals/c/graders/g.md",
                    "---\ntype: baseline\nbaseline_file: none.jsonl\n---\nAs well.\n",
                ),
            ],
            "none.jsonl: (file): cannot read the baseline file",
        ),
    ];
    for (files, want) in cases {
        let fx = plugin_with(&files);
        let run = reel()
            .current_dir(fx.root())
            .args(["import", "plugin-eval", "p", "--out", "o"])
            .run();
        assert_eq!(run.code, 2, "{files:?}\n{}{}", run.stdout, run.stderr);
        assert!(
            run.stdout.contains(want),
            "{files:?}: want {want:?} in\n{}",
            run.stdout
        );
        assert!(run.stdout.contains("(fix: "), "{}", run.stdout);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    let fx = Fixture::new();
    let run = reel()
        .current_dir(fx.root())
        .args(["import", "plugin-eval", "nowhere"])
        .run();
    assert_eq!(run.code, 2);
    insta::assert_snapshot!("no_eval_dir", run.stderr);
}

#[test]
fn the_imported_cassettes_replay_and_rerun_green() {
    support::require!(claude_bin());
    let fx = scratch();
    let replay = reel()
        .current_dir(fx.root())
        .args(["replay", "cassettes/plugin-eval/"])
        .run();
    assert_eq!(replay.code, 0, "{}{}", replay.stdout, replay.stderr);
    let rerun = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["rerun", "cassettes/plugin-eval/", "--output-format", "json"])
        .run();
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    let env = rerun.json();
    support::assert_schema("rerun.json", &env);
    assert_eq!(env["ok"], true);
}

#[test]
fn a_broken_plugin_script_reruns_red() {
    support::require!(claude_bin());
    let fx = scratch();
    // Same output line (the model script still matches), the wrong note.
    fx.edit(
        &format!("{PLUGIN}/skills/release-note/scripts/note.sh"),
        |t| {
            t.replace(
                "release is on %s.\\n' \"$day\"",
                "release is on %s.\\n' Monday",
            )
        },
    );
    fx.commit(".", "break the script");
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args([
            "rerun",
            "cassettes/plugin-eval/write-note.cassette.json",
            "--output-format",
            "json",
        ])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let env = run.json();
    let failed: Vec<String> = env["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["pass"] == false)
        .map(|a| a["assertion"].to_string())
        .collect();
    assert_eq!(
        failed,
        [r#"{"artifact_text":{"artifact":"outputs/note.md","contains":["Friday"]}}"#]
    );
}

const BASELINE_CASSETTE: &str = "cassettes/plugin-eval/order-and-baseline.cassette.json";

/// `reel rerun --output-format json` of the bundled order-and-baseline in `fx`.
fn rerun_baseline(fx: &Fixture) -> support::Run {
    reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["rerun", BASELINE_CASSETTE, "--output-format", "json"])
        .run()
}

/// The rerun verdict's `semantic_matches` outcome (`None`: not judged).
fn baseline_outcome(result: &Value) -> Option<Value> {
    (result["assertions"].as_array().unwrap().iter())
        .find(|a| a["assertion"]["semantic_matches"].is_object())
        .cloned()
}

/// The key a reel that did not mask the trace froze the baseline verdict
/// of `cassette` by: the digest over the judge's prompt as sent.
fn unmasked_key(cassette: &Path) -> String {
    use reel::judge::{Spec, evidence, freeze};
    let c = reel::cassette::Cassette::load(cassette).unwrap();
    let items = freeze::assert_items(&c);
    let spec = Spec::from_value(&items[4]["semantic_matches"]).unwrap();
    let trace = evidence::graded_turn_trace(&c);
    let ev = evidence::derive_baseline(&spec.rubric[0], spec.baseline.as_ref().unwrap(), &trace)
        .unwrap();
    ev.unmasked_digest.unwrap()
}

/// Issue 45: the baseline verdict is keyed by the graded trace with the
/// run's own session, ids, times, durations and run directory masked, so
/// `reel rerun` carries it over and the rerun's verdict judges it (frozen,
/// pass) — no `needs regrade`. So it does for a cassette frozen by a reel
/// that keyed the unmasked trace (its key still names the same bytes).
#[test]
fn a_rerun_carries_the_baseline_verdict_over() {
    support::require!(claude_bin());
    let fx = scratch();
    let path = fx.path(BASELINE_CASSETTE);
    let frozen = |p: &Path| {
        support::CassetteDoc::from_file(p).doc()["reelJudgedVerdicts"][0]["evidenceDigest"].clone()
    };
    let legacy = unmasked_key(&path);
    assert_ne!(frozen(&path), legacy.as_str(), "the bundled key is masked");
    for round in ["masked key", "unmasked key"] {
        if round == "unmasked key" {
            support::CassetteDoc::from_file(&path)
                .set(
                    "reelJudgedVerdicts.0.evidenceDigest",
                    Value::from(legacy.clone()),
                )
                .write(&path);
            fx.commit(".", "a verdict frozen before the trace was masked");
        }
        let run = rerun_baseline(&fx);
        assert_eq!(run.code, 0, "{round}: {}", run.streams());
        assert!(
            !run.streams().contains("needs regrade"),
            "{round}: {}",
            run.streams()
        );
        let env = run.json();
        let result = &env["results"][0];
        let judged = baseline_outcome(result)
            .unwrap_or_else(|| panic!("{round}: the baseline assertion is not judged: {result}"));
        assert_eq!(judged["pass"], true, "{round}: {judged}");
        assert_eq!(judged["judgeStatus"], "frozen", "{round}: {judged}");
        assert_eq!(result["skippedAssertions"]["full"], 0, "{round}");
        let notes = result["rerun"]["notes"].to_string();
        assert!(
            notes.contains("judged assertion 5 (semantic_matches): the judged answer is unchanged"),
            "{round}: {notes}"
        );
    }
}

/// The mask hides only what is the run's own: a graded turn that differs
/// (the skill's script now prints another line, so a tool result changed)
/// still needs regrade, and the rerun's verdict leaves the assertion out.
#[test]
fn a_rerun_whose_graded_trace_changed_needs_baseline_regrade() {
    support::require!(claude_bin());
    let fx = scratch();
    fx.edit(
        &format!("{PLUGIN}/skills/release-note/scripts/note.sh"),
        |t| {
            t.replace(
                "echo \"wrote outputs/note.md for $day\"",
                "echo \"wrote outputs/note.md, for $day\"",
            )
        },
    );
    fx.commit(".", "the script's output reworded");
    let run = rerun_baseline(&fx);
    assert_eq!(run.code, 0, "{}", run.streams());
    let env = run.json();
    let result = &env["results"][0];
    let notes = result["rerun"]["notes"].to_string();
    assert!(
        notes.contains(
            "judged assertion 5 (semantic_matches) needs regrade: the judged evidence changed"
        ),
        "{notes}"
    );
    assert_eq!(baseline_outcome(result), None, "{result}");
    assert_eq!(result["skippedAssertions"]["full"], 1, "{result}");
}

/// The scenario keys an import derives from a case (not its header or paths).
fn meaning(scenario: &Path) -> Value {
    let v: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(scenario).unwrap()).unwrap();
    let keys = ["name", "timeout_ms", "prompt", "answers", "assert", "turns"];
    keys.iter()
        .map(|k| (k.to_string(), v.get(*k).cloned().unwrap_or(Value::Null)))
        .collect()
}

#[test]
fn export_then_import_gives_the_same_scenario() {
    let fx = scratch();
    for c in CASES {
        let run = reel()
            .current_dir(fx.root())
            .args([
                "export",
                "plugin-eval",
                &format!("{OUT}/{c}.yaml"),
                "--out",
                "exported",
                "--output-format",
                "json",
            ])
            .run();
        assert_eq!(run.code, 0, "{c}: {}", run.stderr);
        support::assert_schema("plugin-eval-export.json", &run.json());
    }
    let copied = fx.path("exported/skills/release-note/scripts/note.sh");
    assert!(
        copied.is_file(),
        "the session's skill is copied into the plugin"
    );
    assert_eq!(
        support::read_json(&fx.path("exported/.claude-plugin/plugin.json"))["name"],
        "exported"
    );
    fx.write(
        "exported/.claude-plugin/plugin.json",
        r#"{"name": "release-notes"}"#,
    );
    let run = reel()
        .current_dir(fx.root())
        .args(["import", "plugin-eval", "exported", "--out", "again"])
        .run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for c in CASES {
        assert_eq!(
            meaning(&fx.path(&format!("again/{c}.yaml"))),
            meaning(&fx.path(&format!("{OUT}/{c}.yaml"))),
            "{c}"
        );
    }
    // The mocks came back as the same stand-in.
    assert_eq!(
        fx.read("again/mcp/from-tracker/tracker.json"),
        fx.read(&format!("{OUT}/mcp/from-tracker/tracker.json"))
    );
    let text = reel()
        .current_dir(fx.root())
        .args([
            "export",
            "plugin-eval",
            &format!("{OUT}/write-note.yaml"),
            "--out",
            "exported",
        ])
        .run();
    assert_eq!(text.code, 0);
    insta::assert_snapshot!("export_report_unchanged", text.stdout);
}

/// Why the first-party runner cannot run here, if it cannot.
fn first_party_ready() -> Result<PathBuf, String> {
    let bin = claude_bin()?;
    for tool in ["bwrap", "socat"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output();
        if !found.is_ok_and(|o| o.status.success()) {
            return Err(format!(
                "`claude plugin eval`'s Bash sandbox needs {tool} (apt-get install -y bubblewrap socat)"
            ));
        }
    }
    let help = std::process::Command::new(&bin)
        .args(["plugin", "eval", "--help"])
        .output();
    match help {
        Ok(o) if o.status.success() => Ok(bin),
        _ => Err(format!(
            "{} has no `plugin eval` (Claude Code 2.1.269 or later)",
            bin.display()
        )),
    }
}

/// The bundled model script made to drive the first-party runner: the
/// plugin's skill is namespaced there (`release-notes:release-note`) and read
/// from the plugin directory rather than reel's config dir.
fn first_party_script(case: &str, plugin: &Path, scenarios: &Path) -> reel::model::Script {
    let text = std::fs::read_to_string(scenarios.join(format!("{case}.model.yaml"))).unwrap();
    let skill = plugin.join("skills/release-note");
    let text = text
        .replace(
            "{{config}}/skills/release-note",
            &skill.display().to_string(),
        )
        .replace(
            "skill: release-note}",
            "skill: \"release-notes:release-note\"}",
        );
    reel::model::Script::parse(&text, format!("{case}.model.yaml")).unwrap()
}

/// Per grader, whether `claude plugin eval` passed it on one run of `case`
/// (its model script read from `scenarios`).
fn first_party_grades(
    bin: &Path,
    work: &Path,
    plugin: &Path,
    scenarios: &Path,
    case: &str,
) -> BTreeMap<String, bool> {
    let plugin = plugin.to_path_buf();
    let script = first_party_script(case, &plugin, scenarios);
    let log = model_log(work, case);
    let _ = std::fs::remove_file(&log);
    let opts = reel::model::ServeOptions {
        log: Some(log),
        ..Default::default()
    };
    let server = reel::model::Server::start(script, opts).unwrap();
    let result = work.join(format!(
        "{}-{case}.json",
        plugin.file_name().unwrap().to_string_lossy()
    ));
    let out = std::process::Command::new(bin)
        .current_dir(&plugin)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", work.join("home"))
        .env("TMPDIR", work.join("tmp")) // its Bash sandbox refuses writes under /tmp
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "sk-reel-dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["plugin", "eval", ".", "--case", case, "--runs", "1", "--ablation", "none"])
        .args(["--trust-plugin", "--no-publish", "--allow-tools", "Bash", "mcp__tracker__next_release"])
        .arg("--json")
        .arg(&result)
        .arg("--output-dir")
        .arg(work.join("results"))
        .output()
        .unwrap();
    let problems = server.shutdown();
    let doc = support::read_json(&result);
    let run = &doc["cases"][0]["arms"]["with"][0];
    assert!(
        run["error"].is_null(),
        "{case}: first-party run error {}\nmodel problems {problems:?}\n{}",
        run["error"],
        String::from_utf8_lossy(&out.stderr)
    );
    run["graders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap().to_owned(), g["passed"] == true))
        .collect()
}

/// Per grader (by the import's mapping), whether reel passed its assertion
/// on a fresh recording of `case` against the same script.
fn reel_grades(
    fx: &Fixture,
    mapping: &Value,
    case: &str,
    round: &str,
) -> BTreeMap<String, Option<bool>> {
    // A fresh path per round: re-recording over a cassette writes a pending `.new`.
    let cassette = fx.path(&format!("agree-{round}-{case}.cassette.json"));
    let rec = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args([
            "record",
            &format!("{OUT}/{case}.yaml"),
            "--allow-failing",
            "--out",
        ])
        .arg(&cassette)
        .run();
    assert_eq!(rec.code, 0, "{case}: {}", rec.stderr);
    let replay = reel()
        .current_dir(fx.root())
        .arg("replay")
        .arg(&cassette)
        .args(["--output-format", "json"])
        .run();
    let asserted = replay.json()["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .clone();
    let graders = mapping["results"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == case)
        .unwrap()["graders"]
        .as_array()
        .unwrap()
        .clone();
    graders
        .iter()
        .map(|g| {
            let pass = asserted
                .iter()
                .find(|a| as_imported(&a["assertion"]) == g["assertion"])
                .map(|a| a["pass"] == true);
            (g["name"].as_str().unwrap().to_owned(), pass)
        })
        .collect()
}

/// An assertion as the import wrote it: a frozen scenario carries a
/// `baseline_transcript`'s text inlined (`{file, text}`), the import its path.
fn as_imported(assertion: &Value) -> Value {
    let mut a = assertion.clone();
    if let Some(b) = a.pointer_mut("/semantic_matches/baseline_transcript")
        && let Some(file) = b.get("file").cloned()
    {
        *b = file;
    }
    a
}

/// The log of the scripted model serving `case` to the first-party runner.
fn model_log(work: &Path, case: &str) -> PathBuf {
    work.join(format!("model-{case}.jsonl"))
}

/// The baseline grader's judge request in a model log: its `system` and
/// its prompt (the first with the grader's opening).
fn baseline_question(log: &Path) -> (Value, String) {
    let text = std::fs::read_to_string(log).unwrap();
    let line = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| {
            l["kind"] == "side"
                && (l["prompt"].as_str()).is_some_and(|p| p.starts_with(BASELINE_OPENING))
        })
        .unwrap_or_else(|| panic!("no baseline judge request in {}", log.display()));
    (
        line["system"].clone(),
        line["prompt"].as_str().unwrap().to_owned(),
    )
}

const BASELINE_OPENING: &str = "You are comparing a NEW coding-agent trajectory";

/// reel's baseline judge request over `cassette`: `reel regrade --all` with
/// the judge pointed at a scripted model that logs it.
fn reel_baseline_question(fx: &Fixture, cassette: &Path, work: &Path) -> (Value, String) {
    let plugin = work.join("plugin");
    let script = first_party_script("order-and-baseline", &plugin, &fx.path(OUT));
    let log = work.join("model-reel-regrade.jsonl");
    let opts = reel::model::ServeOptions {
        log: Some(log.clone()),
        ..Default::default()
    };
    let server = reel::model::Server::start(script, opts).unwrap();
    let run = reel()
        .current_dir(fx.root())
        .env("ANTHROPIC_API_KEY", "sk-reel-dummy")
        .env("REEL_JUDGE_BASE_URL", server.url())
        // A scratch copy: `--accept` writes it in place where CI=true would
        // refuse a pending `.new` (only the judge request is looked at).
        .args(["regrade", "--all", "--accept"])
        .arg(cassette)
        .run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(server.shutdown().is_empty());
    baseline_question(&log)
}

/// A stream-json line's shape: its type and subtype, and for a message its
/// blocks' kinds and tool names (ids, paths and times differ between runs).
fn shape(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
    let blocks = v["message"]["content"].as_array().map(|bs| {
        bs.iter()
            .map(|b| {
                format!(
                    "{}{}",
                    b["type"].as_str().unwrap_or("?"),
                    b["name"]
                        .as_str()
                        .map(|n| format!(":{n}"))
                        .unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join(",")
    });
    format!(
        "{}/{}[{}]",
        v["type"],
        v["subtype"],
        blocks.unwrap_or_default()
    )
}

/// The two baseline judge questions agree: the same system prompt (the
/// first-party one sends Claude Code's own identity blocks before it), the
/// same prompt byte for byte outside the NEW trajectory, and that trajectory
/// the same lines in the same shape.
fn same_baseline_question(theirs: &(Value, String), ours: &(Value, String)) {
    let system = theirs
        .0
        .as_array()
        .and_then(|b| b.last())
        .map(|b| b["text"].clone());
    assert_eq!(
        system.as_ref(),
        Some(&ours.0),
        "system: {} vs {}",
        theirs.0,
        ours.0
    );
    let split = |p: &str| -> (String, Vec<String>, String) {
        let (head, rest) = p
            .split_once("\nNEW trajectory:\n")
            .expect("a NEW trajectory");
        let (new, tail) = rest.split_once("\n\n\nDoes the NEW").expect("the question");
        (
            head.to_owned(),
            new.lines().map(shape).collect(),
            tail.to_owned(),
        )
    };
    let (their_head, their_lines, their_tail) = split(&theirs.1);
    let (our_head, our_lines, our_tail) = split(&ours.1);
    assert_eq!(our_head, their_head, "the prompt before the NEW trajectory");
    assert_eq!(our_tail, their_tail, "the prompt after the NEW trajectory");
    assert_eq!(our_lines, their_lines, "the NEW trajectory's lines");
}

/// Where the agreement check works. The first-party Bash sandbox refuses
/// writes under /tmp and /var/tmp (where a CI clone of this repository may
/// live), and fails to start when the socket paths it makes under TMPDIR
/// grow past ~50 bytes: the target dir when it is neither, else
/// `$HOME/.reel-agree`.
fn agreement_base() -> PathBuf {
    let target = repo().join("target");
    if !target.starts_with("/tmp") && !target.starts_with("/var/tmp") {
        return target;
    }
    let base = PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".reel-agree");
    std::fs::create_dir_all(&base).unwrap();
    base
}

#[test]
fn claude_plugin_eval_and_reel_grade_every_mapped_grader_alike() {
    let bin = support::require!(first_party_ready());
    let work = tempfile::Builder::new()
        .prefix("agree-")
        .tempdir_in(agreement_base())
        .unwrap();
    support::copy_tree(&repo().join(PLUGIN), &work.path().join("plugin"));
    std::fs::create_dir_all(work.path().join("home")).unwrap();
    std::fs::create_dir_all(work.path().join("tmp")).unwrap();
    let fx = scratch();
    let mapping = import(fx.root(), &["--drop-unmapped", "--output-format", "json"]).json();
    // Import then export: the first-party runner loads and runs the exported
    // cases (the baseline grader and its transcript included).
    let exported = work.path().join("release-notes");
    for case in ["write-note", "follow-up", "order-and-baseline"] {
        let run = reel()
            .current_dir(fx.root())
            .args([
                "export",
                "plugin-eval",
                &format!("{OUT}/{case}.yaml"),
                "--out",
            ])
            .arg(&exported)
            .run();
        assert_eq!(run.code, 0, "{}", run.stderr);
        let graded = first_party_grades(&bin, work.path(), &exported, &fx.path(OUT), case);
        assert!(
            !graded.is_empty() && graded.values().all(|p| *p),
            "exported {case}: {graded:?}"
        );
    }
    let mut table = String::from("case | grader | claude plugin eval | reel\n");
    let mut disagreements = Vec::new();
    let mut unimported = Vec::new();
    for case in CASES {
        let theirs = first_party_grades(
            &bin,
            work.path(),
            &work.path().join("plugin"),
            &fx.path(OUT),
            case,
        );
        let ours = reel_grades(&fx, &mapping, case, "green");
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{case}"
        );
        for (grader, passed) in &theirs {
            let reel_says = ours[grader].map_or("not imported", word);
            table += &format!("{case} | {grader} | {} | {reel_says}\n", word(*passed));
            if ours[grader].is_some_and(|p| p != *passed) {
                disagreements.push(format!("{case}/{grader}"));
            }
            if ours[grader].is_none() {
                unimported.push(format!("{case}/{grader}"));
            }
        }
    }
    // Every grader is imported and compared: each of the six kinds
    // (tool_order, last-message regexes with case and count, tool_used
    // input_match and the baseline grader included).
    assert!(unimported.is_empty(), "not imported: {unimported:?}");
    let kinds: std::collections::BTreeSet<&str> = (mapping["results"]["cases"].as_array())
        .unwrap()
        .iter()
        .flat_map(|c| c["graders"].as_array().unwrap())
        .map(|g| g["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "baseline",
            "file_exists",
            "llm",
            "regex",
            "tool_order",
            "tool_used"
        ]
    );
    // The baseline grader asked the same question in both: reel's judge
    // request (its frozen verdict re-asked) against the first-party one.
    let theirs = baseline_question(&model_log(work.path(), "order-and-baseline"));
    let ours = reel_baseline_question(
        &fx,
        &fx.path("agree-green-order-and-baseline.cassette.json"),
        work.path(),
    );
    same_baseline_question(&theirs, &ours);
    table += &format!(
        "order-and-baseline | as-good-as-baseline: judge question | {} trajectory lines | the same prompt and shape\n",
        theirs
            .1
            .split_once("\nNEW trajectory:\n")
            .unwrap()
            .1
            .split("\n\n\nDoes")
            .next()
            .unwrap()
            .lines()
            .count()
    );
    // Red in both: the plugin's script writes the wrong day.
    let break_script = |t: &str| {
        t.replace(
            "release is on %s.\\n' \"$day\"",
            "release is on %s.\\n' Monday",
        )
    };
    let note = work
        .path()
        .join("plugin/skills/release-note/scripts/note.sh");
    std::fs::write(
        &note,
        break_script(&std::fs::read_to_string(&note).unwrap()),
    )
    .unwrap();
    fx.edit(
        &format!("{PLUGIN}/skills/release-note/scripts/note.sh"),
        break_script,
    );
    fx.commit(".", "break the script");
    let theirs = first_party_grades(
        &bin,
        work.path(),
        &work.path().join("plugin"),
        &fx.path(OUT),
        "write-note",
    );
    let ours = reel_grades(&fx, &mapping, "write-note", "broken");
    assert!(
        !theirs["names-friday"],
        "the broken script fails the first-party grader"
    );
    for (grader, passed) in &theirs {
        let p = ours[grader].expect("every write-note grader is imported");
        table += &format!(
            "write-note (broken script) | {grader} | {} | {}\n",
            word(*passed),
            word(p)
        );
        if p != *passed {
            disagreements.push(format!("broken write-note/{grader}"));
        }
    }
    // Red in both on the new keys: the last reply says "Written" (the grader
    // is case-sensitive) and names the file twice (count:1); the script is
    // run as `scripts/./note.sh` (tool_order's input_match no longer finds
    // the `after` call) and with two spaces before the day (input_match;
    // the script is still the broken one, so names-friday stays red).
    let rounds: [RedRound; 3] = [
        (
            "order-and-baseline",
            "reworded reply",
            |t| {
                t.replace(
                    "is written to outputs/note.md.",
                    "is Written to outputs/note.md (outputs/note.md).",
                )
                .replace("scripts/note.sh Friday", "scripts/./note.sh Friday")
            },
            &["says-written", "names-the-file-once", "skill-before-script"],
        ),
        (
            "write-note",
            "spaced command",
            |t| t.replace("note.sh Friday", "note.sh  Friday"),
            &["one-script-run"],
        ),
        // The judge votes FAIL on the baseline question (in both runners).
        (
            "order-and-baseline",
            "baseline votes FAIL",
            |t| t.replace("    text: PASS", "    text: FAIL"),
            &["as-good-as-baseline"],
        ),
    ];
    for (case, round, edit, red) in rounds {
        fx.edit(&format!("{OUT}/{case}.model.yaml"), edit);
        fx.commit(".", round);
        let theirs = first_party_grades(
            &bin,
            work.path(),
            &work.path().join("plugin"),
            &fx.path(OUT),
            case,
        );
        let ours = reel_grades(&fx, &mapping, case, &round.replace(' ', "-"));
        for grader in red {
            assert!(!theirs[*grader], "{case} ({round}): {grader} {theirs:?}");
        }
        for (grader, passed) in &theirs {
            let reel_says = ours[grader].map_or("not imported", word);
            table += &format!(
                "{case} ({round}) | {grader} | {} | {reel_says}\n",
                word(*passed)
            );
            if ours[grader].is_some_and(|p| p != *passed) {
                disagreements.push(format!("{round} {case}/{grader}"));
            }
        }
    }
    eprintln!("{table}");
    assert!(
        disagreements.is_empty(),
        "disagree: {disagreements:?}\n{table}"
    );
    insta::assert_snapshot!("agreement", table);
}

/// A red round of the agreement check: the case, the round's name, the edit
/// of its model script, and the graders that must fail in both runners.
type RedRound = (
    &'static str,
    &'static str,
    fn(&str) -> String,
    &'static [&'static str],
);

fn word(pass: bool) -> &'static str {
    if pass { "pass" } else { "FAIL" }
}

/// One non-streamed Messages request without tools or an agent environment
/// (a side request), its reply's text.
fn side_request(url: &str, text: &str) -> String {
    use std::io::{Read, Write};
    let body = serde_json::json!({"model": "m", "max_tokens": 10, "stream": false,
        "messages": [{"role": "user", "content": text}]})
    .to_string();
    let addr = url.strip_prefix("http://").unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v1/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let json: Value = serde_json::from_str(raw.split_once("\r\n\r\n").unwrap().1).unwrap();
    json["content"][0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn a_model_script_answers_another_harness_judge_from_its_side_replies() {
    let script = reel::model::Script::parse(
        "turns:\n  - blocks: [{text: hi}]\nside:\n  - when_contains: \"Criterion:\\nThe note names Friday\"\n    text: PASS\n",
        "side.yaml",
    )
    .unwrap();
    let server = reel::model::Server::start(script, reel::model::ServeOptions::default()).unwrap();
    let judge = "You are grading the output of a coding agent against a criterion.\n\nCriterion:\nThe note names Friday.";
    // Every vote gets the scripted answer; any other side request the neutral text.
    for _ in 0..3 {
        assert_eq!(side_request(&server.url(), judge), "PASS");
    }
    assert_eq!(
        side_request(&server.url(), "Write a title"),
        "reel scripted session"
    );
    assert!(server.shutdown().is_empty());
}

#[test]
fn each_eval_plan_is_a_reel_eval_command_that_plans_runs_times_two_trials() {
    let fx = scratch();
    for case in ["write-note", "from-tracker", "order-and-baseline"] {
        let plan = support::read_json(&fx.path(&format!("{OUT}/eval/{case}.json")));
        let argv: Vec<&str> = plan["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[..2], ["reel", "eval"]);
        // The plan runs from the import's output directory.
        let run = reel()
            .current_dir(fx.path(OUT))
            .args(&argv[1..])
            .arg("--dry-run")
            .run();
        assert_eq!(run.code, 0, "{case}: {}", run.stderr);
        let trials = 2 * plan["reps"].as_u64().unwrap();
        let shown = format!("{}{}", run.stdout, run.stderr);
        assert!(
            shown.contains(&format!("eval plan: {trials} trials")),
            "{case}: {shown}"
        );
    }
    // A resumed case runs no no-plugin arm, as the first-party runner does.
    assert!(
        support::read_json(&fx.path(&format!("{OUT}/eval/follow-up.json")))["command"].is_null()
    );
}

#[test]
fn env_a_session_can_set_becomes_its_agent_env() {
    let fx = plugin_with(&[
        (
            "evals/c/prompt.md",
            "---\nenv: {ENABLE_TOOL_SEARCH: \"false\", CLAUDE_CODE_SUBAGENT_MODEL: m-1}\n---\nDo it.\n",
        ),
        (
            "evals/c/graders/g.md",
            "---\ntype: file_exists\npath: outputs/a.md\n---\n",
        ),
    ]);
    let run = reel()
        .current_dir(fx.root())
        .args(["import", "plugin-eval", "p", "--out", "o"])
        .run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let session: Value = serde_yaml_ng::from_str(&fx.read("o/sessions/c.yaml")).unwrap();
    assert_eq!(
        session["agent_env"],
        serde_json::json!({"subagent_model": "m-1", "tool_search": "off"})
    );
    let lint = reel()
        .current_dir(fx.root())
        .args(["lint", "o/c.yaml"])
        .run();
    assert_eq!(lint.code, 0, "{}{}", lint.stdout, lint.stderr);
}

/// cowork-harness 2.0.0 refuses the bundled cassettes that carry the keys
/// reel added for the first-party graders (captured from the original,
/// tests/data/original-replay/refused/plugin-eval-*): never a pass that
/// drops `tool_order`, `last_message_matches` / `_not_matches`,
/// `tool_called.input_json` or a `semantic_matches.baseline_transcript`.
/// write-note (v13) is refused outright: exit 2, no assertion evaluated.
/// order-and-baseline is stamped v14 for its baseline transcript: 2.0.0 fails
/// it as a format too new (exit 1) and evaluates none of those keys; only its
/// explicit `--best-effort-future-cassette` ("results may be unreliable")
/// replays it, without them (docs/plugin-eval.md).
#[test]
fn cowork_harness_refuses_the_cassettes_with_the_plugin_eval_keys() {
    let dir = support::data("original-replay").join("refused");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let json = |f: &str| -> Value { serde_json::from_str(&read(f)).unwrap() };
    let bundled = |case: &str| {
        std::fs::read_to_string(repo().join(format!("cassettes/plugin-eval/{case}.cassette.json")))
            .unwrap()
    };
    // write-note: refused as a whole.
    assert_eq!(read("plugin-eval-write-note.exit").trim(), "2");
    let stderr = read("plugin-eval-write-note.stderr.txt");
    assert!(
        stderr.contains("Unrecognized key: \"last_message_not_matches\""),
        "{stderr}"
    );
    let stdout = json("plugin-eval-write-note.stdout.json");
    assert_eq!(stdout["ok"], false);
    assert_eq!(stdout["results"][0]["assertions"], serde_json::json!([]));
    for key in ["last_message_not_matches", "input_json"] {
        assert!(
            bundled("write-note").contains(&format!("\"{key}\"")),
            "{key}"
        );
    }

    // order-and-baseline: a failed verdict on the format, none of the keys evaluated.
    let cassette = bundled("order-and-baseline");
    assert!(cassette.contains("\"cassetteVersion\": 14"));
    for key in ["last_message_matches", "tool_order", "baseline_transcript"] {
        assert!(cassette.contains(&format!("\"{key}\"")), "{key}");
    }
    let evaluated = |v: &Value| -> Vec<String> {
        (v["results"][0]["assertions"].as_array().unwrap().iter())
            .filter(|a| a["source"].is_null())
            .map(|a| {
                a["assertion"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .next()
                    .unwrap()
                    .clone()
            })
            .collect()
    };
    assert_eq!(read("plugin-eval-order-and-baseline.exit").trim(), "1");
    let stderr = read("plugin-eval-order-and-baseline.stderr.txt");
    for key in ["last_message_matches", "tool_order"] {
        assert!(
            stderr.contains(&format!("Unrecognized key: \"{key}\"")),
            "{stderr}"
        );
    }
    let stdout = json("plugin-eval-order-and-baseline.stdout.json");
    assert_eq!(stdout["ok"], false);
    let verdict = &stdout["results"][0]["verdict"];
    assert_eq!(verdict["pass"], false);
    assert_eq!(verdict["failures"][0]["kind"], "cassette-format");
    assert_eq!(evaluated(&stdout), ["max_turns", "file_exists"]);
    // Under its explicit opt-in it passes without them: the documented departure.
    assert_eq!(
        read("plugin-eval-order-and-baseline.best-effort.exit").trim(),
        "0"
    );
    let best = json("plugin-eval-order-and-baseline.best-effort.stdout.json");
    assert!(
        read("plugin-eval-order-and-baseline.best-effort.stderr.txt")
            .contains("results may be unreliable")
    );
    assert_eq!(evaluated(&best), ["max_turns", "file_exists"]);
}
