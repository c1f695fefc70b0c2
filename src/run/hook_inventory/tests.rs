//! The scan over real files, after test/hook-failure-blocks.test.ts
//! ("scanHookFailureBlocks: what the agent could read", "runHookFailureBlocks
//! reads the plan's sources").

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::*;

fn put(root: &Path, rel: &str, body: Value) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    let text = match body {
        Value::String(s) => s,
        other => other.to_string(),
    };
    fs::write(p, text).unwrap();
}

fn group(hooks: Value) -> Value {
    json!([{"matcher": "*", "hooks": hooks}])
}

fn block() -> Value {
    json!({"type": "command", "command": "x", "onFailure": "block"})
}

fn config(root: &Path) -> Sources {
    Sources {
        config_dirs: vec![root.join("cfg")],
        ..Sources::default()
    }
}

fn events(v: &[&str]) -> Value {
    json!({"events": v})
}

#[test]
fn sync_command_and_http_hooks_with_on_failure_block_are_eligible() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/settings.json",
        json!({"hooks": {
            "PreToolUse": group(json!([block()])),
            "PostToolUse": group(json!([{"type": "http", "url": "https://h", "onFailure": "block"}])),
            "UserPromptSubmit": group(json!([{"type": "command", "command": "x"}])),
        }}),
    );
    assert_eq!(
        scan(&config(t.path())),
        events(&["PostToolUse", "PreToolUse"])
    );
}

#[test]
fn async_prompt_and_other_on_failure_values_are_not_eligible() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/settings.json",
        json!({"hooks": {
            "PreToolUse": group(json!([{"type": "command", "command": "x", "onFailure": "block", "async": true}])),
            "PostToolUse": group(json!([{"type": "command", "command": "x", "onFailure": "block", "asyncRewake": true}])),
            "Stop": group(json!([{"type": "prompt", "prompt": "x", "onFailure": "block"}])),
            "UserPromptSubmit": group(json!([{"type": "command", "command": "x", "onFailure": "ignore"}])),
        }}),
    );
    assert_eq!(scan(&config(t.path())), events(&[]));
}

#[test]
fn skill_agent_and_command_frontmatter_is_read() {
    let t = tempfile::tempdir().unwrap();
    let fm = |event: &str| {
        Value::String(format!(
            "---\nname: s\nhooks:\n  {event}:\n    - hooks:\n        - type: command\n          command: x\n          onFailure: block\n---\nbody\n"
        ))
    };
    put(t.path(), "cfg/skills/s/SKILL.md", fm("PreToolUse"));
    put(t.path(), "cfg/agents/a.md", fm("SubagentStart"));
    put(t.path(), "cfg/commands/deep/c.md", fm("PostToolUse"));
    // A description with a stray colon does not parse, but declares no hooks.
    put(
        t.path(),
        "cfg/skills/t/SKILL.md",
        Value::String("---\ndescription: a: b: c\n---\n".into()),
    );
    assert_eq!(
        scan(&config(t.path())),
        events(&["PostToolUse", "PreToolUse", "SubagentStart"])
    );
}

#[test]
fn a_frontmatter_that_declares_hooks_and_does_not_parse_is_unknown() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/skills/s/SKILL.md",
        Value::String("---\nhooks: [unclosed\n---\n".into()),
    );
    assert_eq!(
        scan(&config(t.path())),
        json!({"unknown": true, "why": "1 hook source(s) could not be read or parsed"})
    );
}

#[test]
fn an_unparseable_settings_file_or_a_bad_events_map_is_unknown() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/settings.json",
        Value::String("{ not json".into()),
    );
    put(
        t.path(),
        "work/.claude/settings.json",
        json!({"hooks": {"PreToolUse": "not a list"}}),
    );
    let sources = Sources {
        project_claude_dirs: vec![t.path().join("work/.claude")],
        ..config(t.path())
    };
    assert_eq!(
        scan(&sources),
        json!({"unknown": true, "why": "2 hook source(s) could not be read or parsed"})
    );
}

#[test]
fn restrict_personal_config_makes_the_users_own_sync_hooks_eligible() {
    let t = tempfile::tempdir().unwrap();
    let plain = json!({"type": "command", "command": "x"});
    put(
        t.path(),
        "cfg/settings.json",
        json!({"hooks": {"PreToolUse": group(json!([plain])), "PostToolUse": group(json!([plain]))}}),
    );
    put(
        t.path(),
        "work/.claude/settings.json",
        json!({"hooks": {"UserPromptSubmit": group(json!([plain]))}}),
    );
    let mut sources = Sources {
        project_claude_dirs: vec![t.path().join("work/.claude")],
        ..config(t.path())
    };
    assert_eq!(scan(&sources), events(&[]));
    // Personal (the config dir's), on a covered event only; never project.
    sources.env = vec![("CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG".into(), "1".into())];
    assert_eq!(scan(&sources), events(&["PreToolUse"]));
    sources.env[0].1 = "off".into();
    assert_eq!(scan(&sources), events(&[]));
    // A settings file's `env` turns it on too.
    put(
        t.path(),
        "work/.claude/settings.local.json",
        json!({"env": {"CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG": true}}),
    );
    assert_eq!(scan(&sources), events(&["PreToolUse"]));
}

#[test]
fn installed_plugins_named_by_the_index_are_read_and_a_broken_checkout_is_not() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/plugins/cache/mp/q/1/hooks/hooks.json",
        json!({"Stop": group(json!([block()]))}),
    );
    put(
        t.path(),
        "cfg/plugins/marketplaces/mp/broken/.claude-plugin/plugin.json",
        Value::String("{ not json".into()),
    );
    let install = t.path().join("cfg/plugins/cache/mp/q/1");
    put(
        t.path(),
        "cfg/plugins/installed_plugins.json",
        json!({"version": 2, "plugins": {"q@mp": [{"installPath": install}]}}),
    );
    assert_eq!(scan(&config(t.path())), events(&["Stop"]));
    // Without the index, the walk finds both, and the broken one is unknown.
    fs::remove_file(t.path().join("cfg/plugins/installed_plugins.json")).unwrap();
    assert_eq!(scan(&config(t.path()))["unknown"], json!(true));
}

#[test]
fn a_plugin_manifest_declares_hooks_inline_by_path_and_in_a_list() {
    let t = tempfile::tempdir().unwrap();
    let on = |e: &str| json!({"hooks": {e: group(json!([block()]))}});
    put(
        t.path(),
        "cfg/plugins/a/.claude-plugin/plugin.json",
        json!({"name": "a", "hooks": on("Stop")["hooks"]}),
    );
    put(
        t.path(),
        "cfg/plugins/b/.claude-plugin/plugin.json",
        json!({"name": "b", "hooks": "./extra/h.json"}),
    );
    put(t.path(), "cfg/plugins/b/extra/h.json", on("PreCompact"));
    put(
        t.path(),
        "cfg/plugins/c/plugin.json",
        json!({"name": "c", "hooks": ["./h.json", on("Notification")["hooks"]]}),
    );
    put(t.path(), "cfg/plugins/c/h.json", on("SessionEnd"));
    assert_eq!(
        scan(&config(t.path())),
        events(&["Notification", "PreCompact", "SessionEnd", "Stop"])
    );
}

#[test]
fn the_work_roots_project_settings_and_the_settings_flag_file_are_read() {
    let t = tempfile::tempdir().unwrap();
    let on = |e: &str| json!({"hooks": {e: group(json!([block()]))}});
    put(
        t.path(),
        "work/.claude/settings.local.json",
        on("PreToolUse"),
    );
    put(t.path(), "flag.json", on("UserPromptSubmit"));
    let sources = Sources::of_run(
        &[("HOME".into(), t.path().join("home").display().to_string())],
        &t.path().join("work"),
        Some(&t.path().join("flag.json")),
    );
    assert_eq!(
        sources.config_dirs,
        vec![t.path().join("home").join(".claude")]
    );
    let sources = Sources {
        managed_settings_dirs: Vec::new(),
        ..sources
    };
    assert_eq!(scan(&sources), events(&["PreToolUse", "UserPromptSubmit"]));
}

#[test]
fn managed_settings_and_their_drop_ins_are_read() {
    let t = tempfile::tempdir().unwrap();
    let on = |e: &str| json!({"hooks": {e: group(json!([block()]))}});
    put(t.path(), "m/managed-settings.json", on("PreToolUse"));
    put(t.path(), "m/managed-settings.d/10.json", on("PostToolUse"));
    put(t.path(), "m/managed-settings.d/notes.txt", on("Stop"));
    let sources = Sources {
        managed_settings_dirs: vec![t.path().join("m")],
        ..Sources::default()
    };
    assert_eq!(scan(&sources), events(&["PostToolUse", "PreToolUse"]));
}

#[test]
fn nothing_staged_nothing_found() {
    let t = tempfile::tempdir().unwrap();
    assert_eq!(scan(&Sources::default()), events(&[]));
    assert_eq!(scan(&config(t.path())), events(&[]));
}

#[test]
fn a_symlink_loop_is_read_once() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/skills/s/SKILL.md",
        Value::String("---\nname: s\n---\n".into()),
    );
    std::os::unix::fs::symlink(
        t.path().join("cfg/skills"),
        t.path().join("cfg/skills/s/loop"),
    )
    .unwrap();
    assert_eq!(scan(&config(t.path())), events(&[]));
}

#[test]
fn an_agent_that_predates_on_failure_is_not_scanned() {
    let t = tempfile::tempdir().unwrap();
    put(
        t.path(),
        "cfg/settings.json",
        Value::String("{ not json".into()),
    );
    let init =
        |v: &str| format!(r#"{{"type":"system","subtype":"init","claude_code_version":"{v}"}}"#);
    let sources = config(t.path());
    assert_eq!(for_run(&[init("2.1.293")], &sources), events(&[]));
    // A newer agent, two agents one of them newer, or none reported: scanned.
    for lines in [
        vec![init("2.1.295")],
        vec![init("2.1.286"), init("2.1.332")],
        vec![r#"{"type":"system","subtype":"init"}"#.to_owned()],
        Vec::new(),
    ] {
        assert_eq!(
            for_run(&lines, &sources)["unknown"],
            json!(true),
            "{lines:?}"
        );
    }
}
