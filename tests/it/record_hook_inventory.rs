//! `record` freezes the v16 `hookFailureBlocks` inventory (the hook events
//! on which a hook that blocks when it fails may have run) and stamps v16
//! only when it is non-empty; an agent at or below 2.1.293 has no
//! `onFailure`, so its sources are not read. With the real `claude` binary
//! and the scripted model; follows cowork-harness
//! test/hook-failure-blocks.test.ts ("record freezes the inventory and stamps
//! v16 only when it is non-empty") and test/cassette-v16.test.ts.

use serde_json::{Map, Value, json};

use crate::support::{self, Fixture, RunExt, claude_bin, reel, repo};

const SCENARIO: &str = r#"fidelity: protocol
session: s.yaml
timeout_ms: 120000
prompt: Say hello.
assert:
  - result: success
"#;

const MODEL: &str =
    "usage: {input_tokens: 10, output_tokens: 5}\nturns:\n  - blocks:\n      - text: \"Hello.\"\n";

/// A skill whose frontmatter declares a `PreToolUse` hook that blocks when
/// it fails (never triggered here: the skill is not used).
const SKILL: &str = "---
name: guarded
description: A skill with a guard hook.
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./guard.sh
          onFailure: block
---
Guarded.
";

fn bundle(with_skill: bool) -> Fixture {
    let fx = Fixture::new();
    fx.write("hi.yaml", SCENARIO);
    fx.write("hi.model.yaml", MODEL);
    let mut session = "permission_mode: default\n".to_owned();
    if with_skill {
        fx.write("skills/guarded/SKILL.md", SKILL);
        session.push_str("skills:\n  local:\n    - skills/guarded\n");
    }
    fx.write("s.yaml", session);
    fx
}

fn record(fx: &Fixture, claude: &std::path::Path) -> Map<String, Value> {
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env("COWORK_HARNESS_GITSET", "0")
        .env("REEL_CLAUDE_BIN", claude)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG")
        .args(["record", "hi.yaml", "--out", "hi.cassette.json"])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    serde_json::from_str(&fx.read("hi.cassette.json")).unwrap()
}

#[test]
fn a_run_with_no_blocking_hook_freezes_an_empty_inventory_and_stamps_no_v16() {
    let claude = support::require!(claude_bin());
    let fx = bundle(false);
    let doc = record(&fx, &claude);
    assert_eq!(doc["hookFailureBlocks"], json!({"events": []}));
    assert_eq!(
        doc["cassetteVersion"], 12,
        "an empty inventory stamps no v16"
    );
    // Frozen where the original writes it: after `environment`.
    let keys: Vec<&str> = doc.keys().map(String::as_str).collect();
    let at = keys.iter().position(|k| *k == "hookFailureBlocks").unwrap();
    assert_eq!(keys[at - 1], "environment");
    let replay = reel()
        .current_dir(fx.root())
        .args(["replay", "hi.cassette.json"])
        .run();
    assert_eq!(replay.code, 0, "{}", replay.streams());
}

#[test]
fn a_skill_hook_that_blocks_on_failure_is_frozen_and_stamps_v16() {
    let claude = support::require!(claude_bin());
    let fx = bundle(true);
    let doc = record(&fx, &claude);
    assert_eq!(doc["hookFailureBlocks"], json!({"events": ["PreToolUse"]}));
    assert_eq!(doc["cassetteVersion"], 16);
    assert!(
        doc["$schema"]
            .as_str()
            .unwrap()
            .ends_with("cassette.v16.json")
    );
    support::assert_schema("cassette.v16.json", &Value::Object(doc));
    let replay = reel()
        .current_dir(fx.root())
        .args(["replay", "hi.cassette.json"])
        .run();
    assert_eq!(replay.code, 0, "{}", replay.streams());
}

#[test]
fn an_agent_without_on_failure_freezes_an_empty_inventory_unread() {
    support::require!(claude_bin());
    let old = support::require!(old_agent());
    let fx = bundle(true);
    let doc = record(&fx, &old);
    assert_eq!(doc["hookFailureBlocks"], json!({"events": []}));
    assert_eq!(doc["cassetteVersion"], 12);
}

/// Claude Code 2.1.286 (before `onFailure`), installed once into the
/// project's release cache (which CI caches, like the release matrix's).
fn old_agent() -> Result<std::path::PathBuf, String> {
    let cache = repo().join(".tools/agents");
    let run = reel()
        .env("REEL_AGENTS_DIR", &cache)
        .args(["agents", "install", OLD_AGENT])
        .run();
    if run.code != 0 {
        return Err(format!("reel agents install {OLD_AGENT}: {}", run.stderr));
    }
    let installed = reel::agents::cache::Cache::at(&cache)
        .get(&OLD_AGENT.parse().unwrap())
        .ok_or_else(|| format!("{OLD_AGENT} is not in {}", cache.display()))?;
    Ok(installed.program)
}

const OLD_AGENT: &str = "2.1.286";
