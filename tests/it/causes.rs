//! Failures that name their cause (issue 28): an unanswered permission
//! prompt prints the ready-to-paste `answers:` rule, in record and rerun,
//! and the rule pasted back records green; a record error puts the cause
//! first. Driven through the real Claude Code CLI and the scripted model.

use std::path::Path;

use crate::support::{self, claude_bin, reel};

const SCRIPT: &str = "turns:\n  - blocks:\n      - tool: Bash\n        input:\n          \
    command: \"printf done > outputs/x.txt\"\n          description: write x\n  \
    - blocks: [{text: \"wrote outputs/x.txt\"}]\n";

fn project(answers: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("strict.yaml"), "permission_parity: strict\n").unwrap();
    std::fs::write(
        p.join("s.yaml"),
        format!(
            "session: strict.yaml\nfidelity: protocol\ntimeout_ms: 120000\nprompt: write x\n\
             {answers}assert:\n  - result: success\n  - file_exists: outputs/x.txt\n"
        ),
    )
    .unwrap();
    std::fs::write(p.join("s.model.yaml"), SCRIPT).unwrap();
    dir
}

fn record(dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = reel()
        .current_dir(dir)
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("REEL_RUNS_DIR", dir.join("runs"))
        .args(["record", "s.yaml", "--out", "s.cassette.json"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rule as printed: the lines from `- when_tool:` on, de-indented.
fn pasted_rule(stderr: &str) -> String {
    let start = stderr
        .find("- when_tool:")
        .unwrap_or_else(|| panic!("{stderr}"));
    let indent = stderr[..start].rsplit('\n').next().unwrap().len();
    stderr[start - indent..]
        .lines()
        .take_while(|l| l.len() > indent && l[..indent].trim().is_empty())
        .map(|l| format!("  {}\n", &l[indent..]))
        .collect()
}

#[test]
fn an_unanswered_permission_prompt_prints_a_rule_that_records_green_when_pasted() {
    support::require!(claude_bin());
    let dir = project("");
    let (code, stderr) = record(dir.path(), &[]);
    assert_eq!(code, 1, "{stderr}");
    // The cause (the denied prompt) comes before what failed because of it.
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("unscripted permission prompt for `Bash` denied"),
        "{stderr}"
    );
    assert!(stderr.contains("printf done > outputs/x.txt"), "{stderr}");
    assert!(stderr.contains("also: file_exists"), "{stderr}");
    insta::with_settings!({filters => vec![(r"/tmp/\.tmp[^ )]+", "[tmp]")]}, {
        insta::assert_snapshot!("record_unanswered_permission", stderr);
    });
    let rule = pasted_rule(&stderr);
    assert!(rule.contains("allow_if: \"command.startsWith("), "{rule}");
    // Pasted back, the rule answers the prompt: the run records green.
    let dir = project(&format!("answers:\n{rule}"));
    let (code, stderr) = record(dir.path(), &[]);
    assert_eq!(code, 0, "{rule}\n{stderr}");
    assert!(!stderr.contains("unscripted permission prompt"), "{stderr}");
}

#[test]
fn a_rerun_prints_the_rule_for_a_prompt_no_rule_answers() {
    support::require!(claude_bin());
    let dir = project("");
    let (code, stderr) = record(dir.path(), &["--allow-failing"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("- when_tool: \"Bash\""), "{stderr}");
    let out = reel()
        .current_dir(dir.path())
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("REEL_RUNS_DIR", dir.path().join("runs"))
        .args(["rerun", "s.cassette.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warn: unscripted permission prompt for `Bash` denied"),
        "{stderr}"
    );
    assert!(stderr.contains("- when_tool: \"Bash\""), "{stderr}");
}
