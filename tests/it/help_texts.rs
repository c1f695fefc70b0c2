//! Every help text that documents a parsing rule says what the code does: a
//! test per such flag reads the help and exercises the rule.

use std::os::unix::fs::PermissionsExt;

use crate::support;

fn help(cmd: &str) -> String {
    let out = support::reel().args([cmd, "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Rewrapped to one line so phrases survive clap's wrapping.
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn record_agent_cmd_is_split_by_shell_word_rules_without_a_shell() {
    let h = help("record");
    assert!(h.contains("split into words by POSIX shell rules"), "{h}");
    assert!(
        h.contains("run without a shell (no `$VAR` expansion"),
        "{h}"
    );
    assert!(!h.contains("whitespace-split"), "{h}");
    // The rule itself: a quoted program path with a space, a quoted argument,
    // and an unexpanded `$HOME`, as the agent receives them.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my agent");
    std::fs::create_dir_all(&dir).unwrap();
    let agent = dir.join("agent");
    // The agent runs sandboxed: it can write only beneath its run (kept,
    // as the run fails), in its work root.
    std::fs::write(
        &agent,
        "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done > \"$WORK_ROOT/argv.txt\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    for d in ["scenarios", "sessions"] {
        support::copy_tree(&support::repo().join(d), &tmp.path().join(d));
    }
    let out = support::reel()
        .current_dir(tmp.path())
        .args(["record", "scenarios/write-note.yaml", "--out"])
        .arg(tmp.path().join("out.cassette.json"))
        .arg("--agent-cmd")
        .arg(format!("'{}' --flag 'a b' $HOME", agent.display()))
        .env("REEL_RUNS_DIR", tmp.path().join("runs"))
        .output()
        .unwrap();
    let argv = std::fs::read_dir(tmp.path().join("runs/write-note"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|run| run.path().join("work/argv.txt"))
        .find(|p| p.is_file())
        .unwrap_or_default();
    let got = std::fs::read_to_string(&argv).unwrap_or_else(|_| {
        panic!(
            "the agent did not run: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(got, "[--flag]\n[a b]\n[$HOME]\n");
    assert_ne!(out.status.code(), Some(0), "the fake agent fails the run");
}

#[test]
fn verify_allow_matches_the_whole_sample_case_insensitively() {
    let h = help("verify-cassettes");
    assert!(
        h.contains("must match a finding's WHOLE sample (anchored, case-insensitive"),
        "{h}"
    );
    let run = |allow: &str| {
        support::reel()
            .current_dir(support::repo())
            .args([
                "verify-cassettes",
                "cassettes/binary-output.cassette.json",
                "--allow",
                allow,
            ])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run(r"outputs/blob\.bin"), Some(0));
    assert_eq!(run(r"OUTPUTS/BLOB\.BIN"), Some(0), "case-insensitive");
    assert_eq!(run("blob"), Some(1), "a partial match allows nothing");
}

#[test]
fn verify_allow_patterns_file_skips_comments_and_blank_lines() {
    let h = help("verify-cassettes");
    assert!(
        h.contains("one per line (`#` comments and blank lines ignored)"),
        "{h}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let run = |text: &str| {
        let f = tmp.path().join("allow.txt");
        std::fs::write(&f, text).unwrap();
        support::reel()
            .current_dir(support::repo())
            .args([
                "verify-cassettes",
                "cassettes/binary-output.cassette.json",
                "--allow-patterns-file",
            ])
            .arg(&f)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run("# reviewed\n\n   \noutputs/blob\\.bin\n"), Some(0));
    assert_eq!(
        run("# outputs/blob\\.bin\n\n"),
        Some(1),
        "a comment allows nothing"
    );
}

#[test]
fn rerun_live_model_says_what_answers_live_and_where_the_result_goes() {
    let h = help("rerun");
    assert!(h.contains("--live-model"), "{h}");
    assert!(
        h.contains("From turn N (--from-turn, default 1) on, the real API answers"),
        "{h}"
    );
    assert!(h.contains("staged as NAME.cassette.json.new"), "{h}");
    assert!(
        h.contains("never written over the cassette. One cassette"),
        "{h}"
    );
    assert!(h.contains("no credential for --live-model"), "{h}");
    // The rules: one cassette, and never with --write.
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.cassette.json", "b.cassette.json"] {
        std::fs::write(dir.path().join(name), "{}").unwrap();
    }
    let out = support::reel()
        .current_dir(dir.path())
        .args([
            "rerun",
            "a.cassette.json",
            "b.cassette.json",
            "--live-model",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--live-model applies to one cassette at a time"),
        "{stderr}"
    );
    let out = support::reel()
        .current_dir(dir.path())
        .args(["rerun", "a.cassette.json", "--live-model", "--write"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
