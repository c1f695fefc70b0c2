//! reel on a real public skill nobody here wrote (issue 28): `prompt-architect`
//! from the npm package `@ckelsoe/claude-skill-prompt-architect` (MIT), whose
//! SKILL.md the agent loads and whose Python evaluator it runs. It is fetched
//! from the npm registry at test time (pinned; npm checks its integrity), not
//! bundled: reel carries no third-party skill code. Recorded token-free with a
//! scripted model and the real Claude Code CLI, rerun unchanged (green),
//! broken (red, the cause named), and gated by `verify-cassettes` (clean, no
//! allow file).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{self, claude_bin, reel};

const PACKAGE: &str = "@ckelsoe/claude-skill-prompt-architect@2.1.4";

/// The skill directory of the pinned package, unpacked under `dir`.
fn fetch_skill(dir: &Path) -> Result<PathBuf, String> {
    let pack = Command::new("npm")
        .args(["pack", PACKAGE, "--silent", "--pack-destination"])
        .arg(dir)
        .output()
        .map_err(|e| format!("npm is needed to fetch {PACKAGE}: {e}"))?;
    if !pack.status.success() {
        return Err(format!(
            "npm pack {PACKAGE} failed: {}",
            String::from_utf8_lossy(&pack.stderr)
        ));
    }
    let tarball = String::from_utf8_lossy(&pack.stdout).trim().to_owned();
    let untar = Command::new("tar")
        .arg("xzf")
        .arg(dir.join(&tarball))
        .arg("-C")
        .arg(dir)
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    let skill = dir.join("package/prompt-architect");
    if untar.success() && skill.join("SKILL.md").is_file() {
        Ok(skill)
    } else {
        Err(format!("{tarball} holds no prompt-architect/SKILL.md"))
    }
}

const SCENARIO: &str = r#"# A public skill: the agent loads prompt-architect and runs its evaluator.
session: ../sessions/pa.yaml
fidelity: protocol
timeout_ms: 120000
prompt: |
  Score the example prompts with the prompt-architect skill's evaluator.
answers:
  - when_tool: Bash
    allow_if: "command.includes('prompt_evaluator.py')"
    else: deny
assert:
  - result: success
  - skill_triggered: prompt-architect
  - tool_no_error: Bash
  - tool_result_contains: "Overall Score: 4.4/10"
"#;

const MODEL: &str = r#"usage: {input_tokens: 1500, output_tokens: 40}
turns:
  - blocks:
      - tool: Skill
        input: {skill: prompt-architect}
  - expect:
      last_tool_result_contains: "Launching skill: prompt-architect"
    blocks:
      - tool: Bash
        input:
          command: "python3 {{config}}/skills/prompt-architect/scripts/prompt_evaluator.py"
          description: Score the example prompts
  - expect: {last_tool_result_contains: "Overall Score"}
    blocks:
      - text: "\"Write about AI\" scores 4.4/10: it needs context and a format."
"#;

/// A project around the fetched skill: `skills/`, `sessions/`, `scenarios/`.
fn project(skill: &Path, root: &Path) {
    std::fs::create_dir_all(root.join("skills")).unwrap();
    let copied = Command::new("cp")
        .arg("-R")
        .arg(skill)
        .arg(root.join("skills/prompt-architect"))
        .status()
        .unwrap();
    assert!(copied.success(), "cp -R {}", skill.display());
    for (rel, text) in [
        (
            "sessions/pa.yaml",
            "permission_mode: default\npermission_parity: strict\nskills:\n  local:\n    \
             - ../skills/prompt-architect\n",
        ),
        ("scenarios/pa.yaml", SCENARIO),
        ("scenarios/pa.model.yaml", MODEL),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(root.join("cassettes")).unwrap();
}

fn reel_in(root: &Path, bin: &Path, args: &[&str]) -> (i32, String, String) {
    let out = reel()
        .current_dir(root)
        .env("REEL_CLAUDE_BIN", bin)
        .env("REEL_RUNS_DIR", root.join("runs"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_public_skill_records_reruns_breaks_and_passes_the_gate() {
    let bin = support::require!(claude_bin());
    let fetched = tempfile::tempdir().unwrap();
    let skill = support::require!(fetch_skill(fetched.path()));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(&skill, root);
    let cassette = "cassettes/pa.cassette.json";

    let (code, _, stderr) = reel_in(
        root,
        &bin,
        &["record", "scenarios/pa.yaml", "--out", cassette],
    );
    assert_eq!(code, 0, "record: {stderr}");

    // Unchanged: green, under --strict too (the evaluator is deterministic).
    let (code, _, stderr) = reel_in(root, &bin, &["rerun", cassette, "--strict"]);
    assert_eq!(code, 0, "unchanged rerun: {stderr}");

    // The gate passes the real cassette clean, with no allow file.
    let (code, _, stderr) = reel_in(root, &bin, &["verify-cassettes", "cassettes/"]);
    assert_eq!(code, 0, "verify-cassettes: {stderr}");
    assert!(!stderr.contains("note: ["), "no finding at all: {stderr}");

    // Broken: the script now calls its evaluator wrongly; replay stays green
    // (the recording did not change), rerun goes red and names the cause.
    let script = root.join("skills/prompt-architect/scripts/prompt_evaluator.py");
    let text = std::fs::read_to_string(&script).unwrap();
    let call = "eval_result = evaluate_prompt(prompt)";
    assert!(text.contains(call), "the pinned script calls {call}");
    std::fs::write(
        &script,
        text.replace(call, "eval_result = evaluate_prompt(prompt, strict=True)"),
    )
    .unwrap();
    let (code, _, stderr) = reel_in(root, &bin, &["replay", cassette]);
    assert_eq!(code, 0, "replay of the recording: {stderr}");
    let (code, stdout, stderr) = reel_in(root, &bin, &["rerun", cassette]);
    assert_eq!(code, 1, "broken rerun: {stdout}\n{stderr}");
    let cause = "TypeError: evaluate_prompt() got an unexpected keyword argument 'strict'";
    assert!(
        stderr.contains(cause),
        "the traceback's last line is named: {stderr}"
    );
    assert!(stderr.contains("tool_no_error"), "{stderr}");
    // And the gate now calls the cassette stale (the skill changed).
    let (code, _, stderr) = reel_in(root, &bin, &["verify-cassettes", "cassettes/"]);
    assert_eq!(code, 1, "verify after the break: {stderr}");
    assert!(stderr.contains("stale"), "{stderr}");
}
