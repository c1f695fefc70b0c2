//! Multi-turn scenarios (docs/multi-turn.md) with the real Claude Code CLI:
//! the bundled three-turn conversation (`scenarios/conversation.yaml`) is
//! recorded as one agent session, replays green with each turn's assertions
//! judged on that turn's events, reruns green, and goes red at turn 3 when
//! the skill's script is broken.

use serde_json::Value;

use crate::rerun::{rerun_at, scratch};
use crate::support::{self, RunExt, claude_bin, reel, repo};

const CASSETTE: &str = "cassettes/conversation.cassette.json";

fn replay_json(cwd: &std::path::Path, cassette: &str) -> (i32, Value) {
    let run = reel()
        .current_dir(cwd)
        .args(["replay", cassette, "--output-format", "json"])
        .run();
    (run.code, run.json())
}

/// (source, pass) of every assertion outcome of the first result.
fn outcomes(env: &Value) -> Vec<(String, bool)> {
    env["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["source"].as_str().unwrap_or("session").to_owned(),
                a["pass"] == true,
            )
        })
        .collect()
}

#[test]
fn recording_the_conversation_is_one_session_with_a_result_per_turn() {
    support::require!(claude_bin());
    let s = scratch();
    let run = reel()
        .current_dir(s.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args([
            "record",
            "scenarios/conversation.yaml",
            "--out",
            "fresh.cassette.json",
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&s.read("fresh.cassette.json")).unwrap();
    let events: Vec<Value> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str(e.as_str().unwrap()).ok())
        .collect();
    let of = |t: &str, sub: Option<&str>| {
        events
            .iter()
            .filter(|e| e["type"] == t && sub.is_none_or(|s| e["subtype"] == s))
            .collect::<Vec<_>>()
    };
    let inits = of("system", Some("init"));
    assert_eq!(inits.len(), 3, "an init per turn");
    assert_eq!(of("result", None).len(), 3, "a result per turn");
    // One process, one conversation: every line carries the same session.
    let sid = &doc["reelTurns"]["sessionId"];
    assert!(sid.is_string(), "{sid}");
    assert!(inits.iter().all(|i| &i["session_id"] == sid));
    assert_eq!(
        doc["reelTurns"]["maxTurns"],
        Value::Null,
        "no maxTurns imposed"
    );
    let marks = doc["reelTurns"]["turns"].as_array().unwrap();
    assert_eq!(marks.len(), 3);
    assert_eq!(marks[1]["eventStart"], marks[0]["eventEnd"]);
    // Three user messages on one stdin.
    let users = doc["controlOut"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.as_str().unwrap().contains(r#""type":"user""#))
        .count();
    assert_eq!(users, 3);
    // cowork-harness refuses it (its shape check needs scenario.prompt).
    assert!(doc["scenario"].get("prompt").is_none());
    assert_eq!(doc["scenario"]["turns"].as_array().unwrap().len(), 3);
}

#[test]
fn the_bundled_conversation_replays_green_turn_by_turn() {
    let (code, env) = replay_json(&repo(), CASSETTE);
    assert_eq!(code, 0, "{env}");
    let got = outcomes(&env);
    let per_turn: Vec<&str> = got.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        per_turn,
        [
            "session", "session", "turn 1", "turn 1", "turn 2", "turn 2", "turn 3", "turn 3",
            "turn 3"
        ]
    );
    assert!(got.iter().all(|(_, pass)| *pass), "{got:?}");
}

#[test]
fn a_turns_assertions_see_only_that_turns_events() {
    let s = scratch();
    // Bash ran in turn 2: asserted in turn 1, it fails, naming turn 1; the
    // same key in the top-level block passes.
    s.edit_json(CASSETTE, |doc| {
        doc["scenario"]["turns"][0]["assert"] = serde_json::json!([{"tool_called": "Bash"}]);
        doc["scenario"]["assert"] = serde_json::json!([{"tool_called": "Bash"}]);
    });
    let (code, env) = replay_json(s.root(), CASSETTE);
    assert_eq!(code, 1, "{env}");
    let failed: Vec<&Value> = env["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["pass"] == false)
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["source"], "turn 1");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("turn 1: "),
        "{}",
        failed[0]["message"]
    );
    let text = reel()
        .current_dir(s.root())
        .args(["replay", CASSETTE])
        .run();
    let said = format!("{}{}", text.stdout, text.stderr);
    assert!(
        said.contains("tool_called: turn 1: tool not called"),
        "{said}"
    );
    insta::with_settings!({filters => vec![
        (r"(?m)  \d+ ms$|  \d+\.\d+ s$", "  [time]"),
        (r"/tmp/\.tmp[A-Za-z0-9]+", "[scratch]"),
    ]}, {
        insta::assert_snapshot!("multi_turn_replay_fails_in_turn_1", said);
    });
}

#[test]
fn the_conversation_reruns_green_and_goes_red_at_turn_3_when_the_script_breaks() {
    support::require!(claude_bin());
    let s = scratch();
    let (code, env, stderr) = rerun_at(s.root(), CASSETTE, &[]);
    assert_eq!(code, 0, "{stderr}\n{env}");
    s.edit("skills/csv-stats/scripts/stats.sh", |t| {
        t.replace("total += $NF", "total += 2 * $NF")
    });
    s.commit(".", "break stats.sh");
    let (code, env, stderr) = rerun_at(s.root(), CASSETTE, &[]);
    assert_eq!(code, 1, "{stderr}\n{env}");
    let failed: Vec<String> = env["results"][0]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["pass"] == false)
        .map(|a| format!("{} {}", a["source"], a["message"]))
        .collect();
    assert!(
        failed
            .iter()
            .any(|f| f.starts_with("\"turn 3\" \"turn 3: no tool result contained")),
        "turn 3 fails, named: {failed:?}"
    );
    assert!(
        !failed
            .iter()
            .any(|f| f.contains("turn 1") || f.contains("turn 2")),
        "{failed:?}"
    );
    // The JSON names the user turn of the first divergence, and each
    // main-conversation divergence its own.
    let rerun = &env["results"][0]["rerun"];
    assert_eq!(rerun["divergenceTurn"], 3, "{rerun}");
    let user_turns: Vec<&Value> = (rerun["divergences"].as_array().unwrap().iter())
        .filter(|d| d["conversation"] == "main")
        .map(|d| &d["userTurn"])
        .collect();
    assert!(
        !user_turns.is_empty() && user_turns.iter().all(|t| **t == 3),
        "{rerun}"
    );
    // The HTML rerun page, from that envelope, says the same.
    std::fs::write(s.path("rerun.json"), env.to_string()).unwrap();
    let run = reel()
        .current_dir(s.root())
        .args(["report", "--rerun", "rerun.json", "--out", "rerun.html"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = s.read("rerun.html");
    for fact in [
        "first divergence</span><span class=\"mono\">user turn 3",
        "assertions per turn</span><span class=\"mono\">session 1/2 · turn 1 2/2 · turn 2 2/2 · turn 3 2/3",
        "<code>main · user turn 3 · turn 5 · Read</code>",
        "<code>tool_result_contains</code> <span class=\"note\">(turn 3)</span>",
    ] {
        assert!(page.contains(fact), "{fact} in {page}");
    }
    // The text report counts the assertions per turn and places each
    // divergence in its user turn.
    let stderr = reel()
        .current_dir(s.root())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .args(["rerun", CASSETTE])
        .run()
        .stderr;
    insta::with_settings!({filters => vec![
        (r"(?m)  \d+ ms$|  \d+\.\d+ s$", "  [time]"),
        (r"/[^\s]*/runs/[^\s]+", "[run dir]"),
        (r"(?m)^sandbox: landlock .*\(every run\)$", "sandbox: [layers] (every run)"),
    ]}, {
        insta::assert_snapshot!("multi_turn_rerun_red_at_turn_3", stderr);
    });
}

/// The real agent killed right after turn 1's `result` (a wrapper kills it
/// before passing that line on, so it never reads turn 2's message;
/// `--resume` runs it untouched): turn 2 reopens the same session with
/// `--resume <session id>`, and its model request carries turn 1 (the model
/// script `expect`s the code given only in turn 1), answered once.
#[test]
fn an_agent_killed_between_turns_resumes_the_same_session_once() {
    support::require!(claude_bin());
    let fx = support::Fixture::new();
    fx.write(
        "scenarios/remember.yaml",
        "fidelity: protocol\ntimeout_ms: 60000\nturns:\n  - prompt: \"My code is KESTREL-42. Just acknowledge.\"\n  - prompt: \"What was my code?\"\n    assert:\n      - transcript_contains: \"code was KESTREL-42\"\n",
    );
    fx.write(
        "scenarios/remember.model.yaml",
        "turns:\n  - blocks: [{text: \"Noted.\"}]\n  - expect: {history_contains: \"KESTREL-42\"}\n    blocks: [{text: \"Your code was KESTREL-42.\"}]\n",
    );
    let real = claude_bin().unwrap();
    let wrapper = fx.write(
        "bin/dies-after-first-turn",
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" --resume \"*) exec '{real}' \"$@\";; esac\n\
             d=$(mktemp -d) && mkfifo \"$d/out\"\nexec 3<&0\n\
             '{real}' \"$@\" <&3 > \"$d/out\" &\npid=$!\n\
             while IFS= read -r l; do\n  \
             case \"$l\" in *'\"type\":\"result\"'*) kill -9 $pid; printf '%s\\n' \"$l\"; exit 0 ;; esac\n  \
             printf '%s\\n' \"$l\"\ndone < \"$d/out\"\n",
            real = real.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_CLAUDE_BIN", &wrapper)
        .args([
            "record",
            "scenarios/remember.yaml",
            "--no-sandbox",
            "--out",
            "r.cassette.json",
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&fx.read("r.cassette.json")).unwrap();
    let turns = &doc["reelTurns"];
    assert_eq!(turns["resumedSession"], turns["sessionId"], "{turns}");
    assert_eq!(turns["turns"][0]["resumed"], false);
    assert_eq!(turns["turns"][1]["resumed"], true);
    let results: Vec<Value> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e.as_str().unwrap()).ok())
        .filter(|e| e["type"] == "result")
        .collect();
    assert_eq!(results.len(), 2, "turn 2 answered once");
    assert_eq!(results[1]["result"], "Your code was KESTREL-42.");
    assert!(
        results
            .iter()
            .all(|r| r["session_id"] == turns["sessionId"])
    );
}

/// cowork-harness 2.0.0 refuses the multi-turn cassette (captured from the
/// original, tests/data/original-replay/refused/): never a pass that drops
/// the per-turn assertions.
#[test]
fn cowork_harness_refuses_the_multi_turn_cassette() {
    let dir = support::data("original-replay").join("refused");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    assert_eq!(read("conversation.exit").trim(), "2");
    assert!(
        read("conversation.stderr.txt").contains(
            "invalid cassette shape: scenario.prompt: Invalid input: expected string, received undefined"
        )
    );
    let stdout: Value = serde_json::from_str(&read("conversation.stdout.json")).unwrap();
    assert_eq!(stdout["ok"], false);
    assert_eq!(stdout["results"][0]["assertions"], serde_json::json!([]));
    // The bundled cassette is still the shape that was refused.
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join(CASSETTE)).unwrap()).unwrap();
    assert!(doc["scenario"].get("prompt").is_none());
}

#[test]
fn junit_names_each_turns_assertions_and_scaffold_writes_turns() {
    let fx = support::Fixture::new();
    let junit = fx.path("replay.xml");
    let run = reel()
        .current_dir(repo())
        .args(["replay", CASSETTE, "--junit"])
        .arg(&junit)
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"name="[8] turn 3: {&quot;transcript_contains&quot;"#),
        "{xml}"
    );
    let out = fx.path("scenarios/c.yaml");
    let run = reel()
        .current_dir(repo())
        .args(["scaffold", CASSETTE, "--out"])
        .arg(&out)
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let yaml: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(yaml.get("prompt").is_none(), "{yaml}");
    let turns = yaml["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(
        turns[2]["assert"][0],
        serde_json::json!({"tool_called": "Read"})
    );
}

#[test]
fn show_lists_the_user_turns() {
    let run = reel().current_dir(repo()).args(["show", CASSETTE]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "user turns: 3 (one agent session)\n  turn 1 events 0..11: My report code is KESTREL-42."
        ),
        "{}",
        run.stdout
    );
    let run = reel()
        .current_dir(repo())
        .args(["show", CASSETTE, "--output-format", "json"])
        .run();
    let env = run.json();
    support::assert_schema("show.json", &env);
    let turns = env["results"][0]["userTurns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[1]["resumed"], false);
    assert_eq!(turns[1]["eventStart"], turns[0]["eventEnd"]);
}

/// `verify-cassettes` reads a multi-turn cassette's turns: a turn's prompt
/// edited on disk is a recording-shaping drift (`turns`); a turn's edited
/// `assert:` is not.
#[test]
fn verify_cassettes_sees_a_turns_prompt_drift_and_not_its_assertions() {
    let s = scratch();
    let verify = || {
        let run = reel()
            .current_dir(s.root())
            .args(["verify-cassettes", CASSETTE, "--output-format", "json"])
            .run();
        let env = run.json();
        support::assert_schema("verify-cassettes.json", &env);
        (run.code, env["results"][0]["scenarioDrift"].clone())
    };
    assert_eq!(verify(), (0, serde_json::json!([])));
    s.edit("scenarios/conversation.yaml", |t| {
        t.replace("- tool_called: Read", "- tool_called: Glob")
    });
    assert_eq!(
        verify(),
        (0, serde_json::json!([])),
        "an assertion shapes nothing"
    );
    s.edit("scenarios/conversation.yaml", |t| {
        t.replace("tell me the total.", "tell me the total and the row count.")
    });
    let (code, drift) = verify();
    assert_eq!(code, 1, "{drift}");
    assert!(
        drift[0]
            .as_str()
            .unwrap()
            .contains("field(s) [turns] differ"),
        "{drift}"
    );
}

/// `reel diff` of two recordings of the conversation groups each view's
/// changes under the user turn they belong to: turn 2's Bash input, turn 3's
/// Read result and the turn 3 assertion it fails.
#[test]
fn diff_groups_changes_by_user_turn() {
    let s = scratch();
    let b = "cassettes/b.cassette.json";
    std::fs::copy(s.path(CASSETTE), s.path(b)).unwrap();
    s.edit_json(b, |doc| {
        let events = doc["events"].as_array_mut().unwrap();
        for e in events.iter_mut() {
            let line = e.as_str().unwrap();
            if line.contains("toolu_reel_4_0") && line.contains("tool_result") {
                *e = Value::String(line.replace("245", "490"));
            } else if line.contains(r#""type":"assistant""#) && line.contains("stats.sh uploa") {
                *e = Value::String(line.replace("uploads/sales.csv", "uploads/other.csv"));
            }
        }
    });
    let run = reel()
        .current_dir(s.root())
        .args(["diff", CASSETTE, b, "--view", "tools,assertions"])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!("multi_turn_diff_by_turn", run.stdout);
    let run = reel()
        .current_dir(s.root())
        .args(["diff", CASSETTE, b, "--output-format", "json"])
        .run();
    let env = run.json();
    support::assert_schema("diff.json", &env);
    let turns: Vec<(String, Value)> = (env["results"][0]["views"].as_array().unwrap().iter())
        .flat_map(|v| {
            let view = v["view"].as_str().unwrap().to_owned();
            (v["changes"].as_array().unwrap().iter())
                .map(move |c| (view.clone(), c["turn"].clone()))
        })
        .filter(|(view, _)| view == "tools" || view == "assertions")
        .collect();
    assert!(turns.contains(&("tools".into(), 2.into())), "{turns:?}");
    assert!(turns.contains(&("tools".into(), 3.into())), "{turns:?}");
    assert!(
        turns.contains(&("assertions".into(), 3.into())),
        "{turns:?}"
    );
}

/// The HTML page of the recording counts its assertions per user turn and
/// names each turn's assertion with its turn.
#[test]
fn the_recording_page_shows_assertions_per_turn() {
    let fx = support::Fixture::new();
    let out = fx.path("conversation.html");
    let run = reel()
        .current_dir(repo())
        .args(["report", CASSETTE, "--out"])
        .arg(&out)
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(
        page.contains(
            "assertions per turn</span><span class=\"mono\">session 2/2 · turn 1 2/2 · turn 2 2/2 · turn 3 3/3"
        ),
        "{page}"
    );
    assert!(
        page.contains("<span class=\"note\">(turn 3)</span>"),
        "{page}"
    );
}
