//! reel on real public skills nobody here wrote (issue 28), fetched from the
//! npm registry at test time (pinned versions; npm checks their integrity),
//! not bundled. (One Apache-2.0 skill is vendored with its licence for the
//! journey suite: tests/data/public-skills.)
//!
//! * `prompt-architect` (`@ckelsoe/claude-skill-prompt-architect`, MIT): the
//!   agent loads its SKILL.md and runs its Python evaluator.
//! * `seo-optimizer` (`ai-labs-claude-skills`, MIT): the agent runs its SEO
//!   analyzer on an uploaded page and saves the JSON report to `outputs/`.
//!
//! Each is recorded token-free with a scripted model and the real Claude Code
//! CLI, rerun unchanged (green, under `--strict`), gated by
//! `verify-cassettes` (clean, no allow file), then broken: replay stays
//! green, rerun goes red naming the cause, and the gate calls it stale.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{self, claude_bin, reel};

/// One public skill and how this test drives and breaks it.
struct PublicSkill {
    /// `name@version` on the npm registry.
    package: &'static str,
    /// The skill's directory inside the unpacked package.
    skill_dir: &'static str,
    name: &'static str,
    /// Extra session lines (uploads).
    session: &'static str,
    scenario: &'static str,
    model: &'static str,
    /// The break: in this skill file, replace `.1` with `.2`.
    break_file: &'static str,
    edit: (&'static str, &'static str),
    /// What the red rerun must say.
    cause: &'static [&'static str],
    /// Text of the skill's own the run echoes: reported by the gate as
    /// published by the skill, never failing it.
    published: &'static [&'static str],
}

const PROMPT_ARCHITECT: PublicSkill = PublicSkill {
    package: "@ckelsoe/claude-skill-prompt-architect@2.1.4",
    skill_dir: "package/prompt-architect",
    name: "prompt-architect",
    session: "",
    scenario: r#"prompt: |
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
"#,
    model: r#"usage: {input_tokens: 1500, output_tokens: 40}
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
"#,
    break_file: "scripts/prompt_evaluator.py",
    edit: (
        "eval_result = evaluate_prompt(prompt)",
        "eval_result = evaluate_prompt(prompt, strict=True)",
    ),
    cause: &[
        "TypeError: evaluate_prompt() got an unexpected keyword argument 'strict'",
        "tool_no_error",
    ],
    published: &[],
};

const SEO_OPTIMIZER: PublicSkill = PublicSkill {
    package: "ai-labs-claude-skills@2.0.1",
    skill_dir: "package/dist/skills/seo-optimizer",
    name: "seo-optimizer",
    session: "uploads:\n  - ../data/index.html\n",
    scenario: r#"prompt: |
  Check the SEO of uploads/index.html and save the report as outputs/seo.json.
answers:
  - when_tool: Bash
    allow_if: "command.includes('seo_analyzer.py')"
    else: deny
assert:
  - result: success
  - skill_triggered: seo-optimizer
  - tool_no_error: Bash
  - artifact_json: {artifact: outputs/seo.json, path: "0.h1_count", equals: 1}
  - tool_result_contains: "1 image(s) missing alt attributes"
"#,
    model: r#"usage: {input_tokens: 1500, output_tokens: 40}
turns:
  - blocks:
      - tool: Skill
        input: {skill: seo-optimizer}
  - expect:
      last_tool_result_contains: "Launching skill: seo-optimizer"
    blocks:
      - tool: Bash
        input:
          command: "python3 {{config}}/skills/seo-optimizer/scripts/seo_analyzer.py uploads/index.html --json > outputs/seo.json; cat outputs/seo.json"
          description: Analyze the page
  - expect: {last_tool_result_contains: "h1_count"}
    blocks:
      - text: "One H1, but an image lacks alt text; the report is in outputs/seo.json."
"#,
    break_file: "scripts/seo_analyzer.py",
    edit: (
        "h1_count = len(parser.headings['h1'])",
        "h1_count = len(parser.headings['h2'])",
    ),
    cause: &["artifact_json", "outputs/seo.json", "\"h1_count\": 0"],
    // Its SKILL.md names schema.org, google.com and yourdomain.com.
    published: &["schema.org", "google.com"],
};

const PAGE: &str = "<!doctype html><html lang=\"en\"><head><title>Widgets</title>\
<meta name=\"description\" content=\"Widgets for every workshop.\"></head><body>\
<h1>Widgets</h1><p>Hand-made widgets.</p><img src=\"a.png\"></body></html>\n";

/// The skill directory of the pinned package, unpacked under `dir`.
fn fetch(skill: &PublicSkill, dir: &Path) -> Result<PathBuf, String> {
    let pack = Command::new("npm")
        .args(["pack", skill.package, "--silent", "--pack-destination"])
        .arg(dir)
        .output()
        .map_err(|e| format!("npm is needed to fetch {}: {e}", skill.package))?;
    if !pack.status.success() {
        return Err(format!(
            "npm pack {} failed: {}",
            skill.package,
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
    let found = dir.join(skill.skill_dir);
    if untar.success() && found.join("SKILL.md").is_file() {
        Ok(found)
    } else {
        Err(format!("{tarball} holds no {}/SKILL.md", skill.skill_dir))
    }
}

/// A project around the fetched skill: `skills/`, `sessions/`, `scenarios/`,
/// `data/`, `cassettes/`.
fn project(skill: &PublicSkill, fetched: &Path, root: &Path) {
    std::fs::create_dir_all(root.join("skills")).unwrap();
    let copied = Command::new("cp")
        .arg("-R")
        .arg(fetched)
        .arg(root.join("skills").join(skill.name))
        .status()
        .unwrap();
    assert!(copied.success(), "cp -R {}", fetched.display());
    let session = format!(
        "permission_mode: default\npermission_parity: strict\n{}skills:\n  local:\n    - ../skills/{}\n",
        skill.session, skill.name
    );
    let scenario = format!(
        "session: ../sessions/s.yaml\nfidelity: protocol\ntimeout_ms: 120000\n{}",
        skill.scenario
    );
    for (rel, text) in [
        ("sessions/s.yaml", session.as_str()),
        ("scenarios/s.yaml", scenario.as_str()),
        ("scenarios/s.model.yaml", skill.model),
        ("data/index.html", PAGE),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(root.join("cassettes")).unwrap();
}

fn reel_in(root: &Path, bin: &Path, args: &[&str]) -> (i32, String) {
    let out = reel()
        .current_dir(root)
        .env("REEL_CLAUDE_BIN", bin)
        .env("REEL_RUNS_DIR", root.join("runs"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn record_rerun_break_and_gate(skill: &PublicSkill) {
    let bin = support::require!(claude_bin());
    let download = tempfile::tempdir().unwrap();
    let fetched = support::require!(fetch(skill, download.path()));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(skill, &fetched, root);
    let cassette = "cassettes/s.cassette.json";
    let name = skill.name;

    let (code, out) = reel_in(
        root,
        &bin,
        &["record", "scenarios/s.yaml", "--out", cassette],
    );
    assert_eq!(code, 0, "{name}: record: {out}");
    let (code, out) = reel_in(root, &bin, &["rerun", cassette, "--strict"]);
    assert_eq!(code, 0, "{name}: unchanged rerun: {out}");
    let (code, out) = reel_in(root, &bin, &["verify-cassettes", "cassettes/"]);
    assert_eq!(code, 0, "{name}: verify-cassettes: {out}");
    for line in out.lines().filter(|l| l.contains("note: [")) {
        assert!(
            line.contains(&format!("published by the skill (../skills/{name}/")),
            "{name}: only the skill's own text is noted: {out}"
        );
    }
    for text in skill.published {
        assert!(
            out.lines()
                .map(str::to_ascii_lowercase)
                .any(|l| l.contains(&format!("— {text}")) && l.contains("published by the skill")),
            "{name}: {text} is noted as published by the skill: {out}"
        );
    }

    let file = root.join("skills").join(name).join(skill.break_file);
    let text = std::fs::read_to_string(&file).unwrap();
    let (from, to) = skill.edit;
    assert!(
        text.contains(from),
        "{name}: the pinned {} has {from}",
        skill.break_file
    );
    std::fs::write(&file, text.replace(from, to)).unwrap();
    let (code, out) = reel_in(root, &bin, &["replay", cassette]);
    assert_eq!(code, 0, "{name}: replay of the recording: {out}");
    let (code, out) = reel_in(root, &bin, &["rerun", cassette]);
    assert_eq!(code, 1, "{name}: broken rerun: {out}");
    for cause in skill.cause {
        assert!(
            out.contains(cause),
            "{name}: the cause `{cause}` is named: {out}"
        );
    }
    let (code, out) = reel_in(root, &bin, &["verify-cassettes", "cassettes/"]);
    assert_eq!(code, 1, "{name}: verify after the break: {out}");
    assert!(
        out.contains(skill.break_file),
        "{name}: names the changed file: {out}"
    );
}

#[test]
fn prompt_architect_records_reruns_breaks_and_passes_the_gate() {
    record_rerun_break_and_gate(&PROMPT_ARCHITECT);
}

#[test]
fn seo_optimizer_records_reruns_breaks_and_passes_the_gate() {
    record_rerun_break_and_gate(&SEO_OPTIMIZER);
}
