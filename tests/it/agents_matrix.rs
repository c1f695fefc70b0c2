//! Claude Code releases as a resource, the release matrix and bisect, on
//! real releases from the npm registry (installed once into the project's
//! `.tools/agents`, which CI caches): 2.1.112 (the last `cli.js` release, run
//! by node), 2.1.126 and 2.1.128 (native binaries). Two real changes between
//! releases are used (docs/agent-versions.md):
//! - up to 2.1.119 the agent reaches for api.anthropic.com at start-up, which
//!   the offline run blocks: every bundled cassette's verdict is red; from
//!   2.1.120 it is green;
//! - from 2.1.128 (2.1.127 was never published) the Write tool's result adds
//!   "(file state is current in your context …)": a cassette recorded with a
//!   newer release diverges under 2.1.126 and not under 2.1.128.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{self, Fixture, RunExt, reel, repo};

const MATRIX: &str = "2.1.112,2.1.126,2.1.128";

/// The project's shared release cache.
fn agents_dir() -> PathBuf {
    repo().join(".tools/agents")
}

/// Installs `selectors` into the shared cache (`Err` when it cannot be had).
fn install(selectors: &str) -> Result<(), String> {
    let run = reel()
        .env("REEL_AGENTS_DIR", agents_dir())
        .args(["agents", "install", selectors])
        .run();
    if run.code == 0 {
        Ok(())
    } else {
        Err(format!("reel agents install {selectors}: {}", run.stderr))
    }
}

/// A scratch git work tree with the bundled examples (skills are staged
/// from git-tracked files).
fn scratch() -> Fixture {
    let fx = Fixture::new();
    for sub in ["cassettes", "scenarios", "sessions", "skills", "data"] {
        fx.copy_in(&repo().join(sub), sub);
    }
    fx.commit(".", "examples");
    fx
}

fn reel_in(dir: &Path) -> assert_cmd::Command {
    let mut cmd = reel();
    cmd.current_dir(dir).env("REEL_AGENTS_DIR", agents_dir());
    cmd
}

fn cells_of<'a>(env: &'a Value, file_suffix: &str) -> Vec<&'a Value> {
    env["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["file"].as_str().unwrap().ends_with(file_suffix))
        .collect()
}

#[test]
fn the_installed_releases_span_both_layouts() {
    support::require!(install(MATRIX));
    let run = reel()
        .env("REEL_AGENTS_DIR", agents_dir())
        .args(["agents", "list"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let layout = |v: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{v}\t")))
            .map(|l| l.split('\t').nth(1).unwrap().to_owned())
    };
    assert_eq!(layout("2.1.112").as_deref(), Some("cli.js"));
    assert_eq!(layout("2.1.126").as_deref(), Some("native"));
    assert_eq!(layout("2.1.128").as_deref(), Some("native"));
}

#[test]
fn a_matrix_reruns_every_cassette_under_every_release() {
    support::require!(install(MATRIX));
    let fx = scratch();
    let junit = fx.root().join("matrix.xml");
    let run = reel_in(fx.root())
        .args([
            "rerun",
            "cassettes/",
            "--agent-version",
            MATRIX,
            "--output-format",
            "json",
        ])
        .arg("--junit")
        .arg(&junit)
        .run();
    let env = run.json();
    support::assert_schema("rerun-matrix.json", &env);
    // 2.1.112 is red for every cassette: exit 1.
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        env["releases"],
        serde_json::json!(["2.1.112", "2.1.126", "2.1.128"])
    );
    let cassettes = cassettes_in(&fx.root().join("cassettes"));
    assert_eq!(env["cells"].as_array().unwrap().len(), cassettes * 3);
    for cell in env["cells"].as_array().unwrap() {
        assert_eq!(cell["reportedAgentVersion"], cell["agentVersion"], "{cell}");
        assert_eq!(cell["recordedAgentVersion"], "2.1.332");
    }
    let st = cells_of(&env, "skill-triggered.cassette.json");
    let outcome = |i: usize| st[i]["outcome"].as_str().unwrap();
    assert_eq!(
        (outcome(0), outcome(1), outcome(2)),
        ("fail", "pass_diverged", "pass")
    );
    assert!(
        st[0]["failures"][0]
            .as_str()
            .unwrap()
            .contains("api.anthropic.com")
    );
    assert_eq!(st[1]["firstDivergence"]["tool"], "Write");
    assert_eq!(st[1]["firstChange"], true);
    assert_eq!(st[2]["firstChange"], false);
    // JUnit: one test per cell, failures where the verdict is red.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), cassettes * 3);
    let red = env["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["exitCode"] == 1)
        .count();
    assert!(red >= cassettes, "every cassette is red under 2.1.112");
    assert_eq!(xml.matches("<failure").count(), red);
    assert!(xml.contains("skill-triggered.cassette.json @ 2.1.126"));
}

#[test]
fn the_text_table_marks_the_first_change_and_shards_split_cells() {
    support::require!(install(MATRIX));
    let fx = scratch();
    let summary = fx.root().join("summary.md");
    let one = "cassettes/skill-triggered.cassette.json";
    let run = reel_in(fx.root())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["rerun", one, "--agent-version", MATRIX])
        .run();
    assert_eq!(run.code, 1, "{}", run.stderr);
    let table = run.stdout;
    assert!(table.starts_with("cassette"), "{table}");
    assert!(
        table.contains("skill-triggered.cassette.json  FAIL     *pass~1  pass"),
        "{table}"
    );
    assert!(
        table.contains("changed at 2.1.126 (2.1.112 FAIL → 2.1.126 pass~1)"),
        "{table}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| `skill-triggered.cassette.json` | FAIL | **pass~1** (changed) | pass |"),
        "{md}"
    );
    // Three shards of the same matrix: disjoint and covering.
    let mut seen = Vec::new();
    for i in 1..=3 {
        let run = reel_in(fx.root())
            .args([
                "rerun",
                one,
                "--agent-version",
                MATRIX,
                "--output-format",
                "json",
            ])
            .args(["--shard", &format!("{i}/3")])
            .run();
        for c in run.json()["cells"].as_array().unwrap() {
            seen.push(c["agentVersion"].as_str().unwrap().to_owned());
        }
    }
    seen.sort();
    assert_eq!(seen, ["2.1.112", "2.1.126", "2.1.128"]);
}

#[test]
fn bisect_names_the_release_that_made_the_verdict_green() {
    support::require!(install(MATRIX));
    let fx = scratch();
    let run = reel_in(fx.root())
        .args(["bisect", "cassettes/skill-triggered.cassette.json"])
        .args([
            "--bad",
            "2.1.112",
            "--good",
            "2.1.128",
            "--output-format",
            "json",
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let env = run.json();
    let found = &env["result"];
    assert_eq!(found["first_changed"], "2.1.120");
    assert_eq!(found["last_before"], "2.1.119");
    assert_eq!(found["regression"], false);
    // Two endpoints, then at most ceil(log2(12 + 1)) = 4 reruns.
    let steps = found["steps"].as_array().unwrap();
    assert!(steps.len() <= 6, "{steps:?}");
    assert!(
        run.stderr.contains("bisect: 2.1.120: good"),
        "{}",
        run.stderr
    );
}

#[test]
fn bisect_strict_names_the_release_that_changed_a_tool_result() {
    support::require!(install(MATRIX));
    let fx = scratch();
    let run = reel_in(fx.root())
        .args([
            "bisect",
            "cassettes/skill-triggered.cassette.json",
            "--strict",
        ])
        .args(["--bad", "2.1.126", "--good", "2.1.128"])
        .run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    // 2.1.127 was never published: the search never asks for it.
    assert_eq!(
        run.stdout.trim(),
        "first good release: 2.1.128 (the release before it, 2.1.126, is bad; 2 rerun(s))"
    );
    assert!(!run.stderr.contains("2.1.127"), "{}", run.stderr);
    // Without --strict a divergence is no failure: the endpoints disagree.
    let loose = reel_in(fx.root())
        .args(["bisect", "cassettes/skill-triggered.cassette.json"])
        .args(["--bad", "2.1.126", "--good", "2.1.128"])
        .run();
    assert_eq!(loose.code, 2, "{}", loose.stderr);
    assert!(
        loose.stderr.contains("the bad release 2.1.126 is good"),
        "{}",
        loose.stderr
    );
}

#[test]
fn an_install_that_cannot_happen_is_exit_3_with_the_fix() {
    let empty = tempfile::tempdir().unwrap();
    // Offline: the registry is a closed loopback port.
    let run = reel()
        .env("REEL_AGENTS_DIR", empty.path())
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .args(["agents", "install", "2.1.112"])
        .run();
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("the npm registry cannot be reached"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: check the network"),
        "{}",
        run.stderr
    );
    // No node on PATH for a cli.js release already in the cache.
    support::require!(install("2.1.112"));
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(which("git"), bin.path().join("git")).unwrap();
    let run = reel()
        .env("REEL_AGENTS_DIR", agents_dir())
        .env("PATH", bin.path())
        .args([
            "rerun",
            "cassettes/write-note.cassette.json",
            "--agent-version",
            "2.1.112",
        ])
        .current_dir(repo())
        .run();
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains("no `node` is on PATH"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("install Node.js"), "{}", run.stderr);
}

#[test]
fn a_release_never_published_is_exit_3_and_a_bad_selector_exit_2() {
    support::require!(install("2.1.112"));
    let run = reel()
        .env("REEL_AGENTS_DIR", agents_dir())
        .args(["agents", "install", "2.1.127"])
        .run();
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("no published release matches `2.1.127`"),
        "{}",
        run.stderr
    );
    let run = reel()
        .env("REEL_AGENTS_DIR", agents_dir())
        .args(["agents", "install", "last:zero"])
        .run();
    assert_eq!(run.code, 2, "{}", run.stderr);
}

fn which(program: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} on PATH"))
}

fn cassettes_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".cassette.json"))
        .count()
}
