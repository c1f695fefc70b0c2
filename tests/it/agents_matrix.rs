//! Claude Code releases as a resource, the release matrix and bisect, on
//! real releases from the npm registry (installed once into the project's
//! `.tools/agents`, which CI caches): 2.1.112 (the last `cli.js` release, run
//! by node), 2.1.126 and 2.1.128 (native binaries). Real changes between
//! releases are used (docs/agent-versions.md):
//! - up to 2.1.119 the agent checks the organisation's metrics opt-out at
//!   api.anthropic.com when it exits; reel seeds the agent's config with the
//!   answer, so these releases run offline (they were red before);
//! - up to 2.1.128 at least, a sub-agent runs synchronously: `delegate-count`,
//!   recorded with 2.1.332's background sub-agent, diverges on the Agent tool
//!   under all three and stays green (the reply that only waited is passed
//!   over), and a 2.1.112 recording reruns green under 2.1.332;
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

/// The release matrix over every bundled cassette, in one run (each
/// release's reruns are what cost: one run, not one per question) —
/// 2.1.112 (the last cli.js release), 2.1.126 and 2.1.128 (the native
/// layout's first releases, where skill-triggered's Write result changed),
/// 2.1.300, and 2.1.332 (the release the bundled cassettes were recorded
/// with, the pinned CLI linked into the cache; issue #39's matrix) — is green
/// on every cell, the multi-turn conversation and the judged note among
/// them, with nothing reaching for the network. Measured
/// (docs/agent-versions.md): divergences only under 2.1.112–2.1.128 (the Write
/// result, the foreground sub-agent) and in doc-report's document bytes.
/// 2.1.112 checks the organisation's metrics opt-out at api.anthropic.com
/// when it exits, whatever the `DISABLE_*` variables say; reel seeds the
/// agent's config with that answer, so its cells rerun offline.
#[test]
fn the_release_matrix_is_green_on_every_bundled_cassette() {
    support::require!(install("2.1.112,2.1.126,2.1.128,2.1.300"));
    let pinned = support::require!(support::link_pinned_release(&agents_dir()));
    assert_eq!(pinned, "2.1.332", "the bundled cassettes' release");
    let releases = ["2.1.112", "2.1.126", "2.1.128", "2.1.300", "2.1.332"];
    let fx = scratch();
    let junit = fx.root().join("matrix.xml");
    let run = reel_in(fx.root())
        .args([
            "rerun",
            "cassettes/",
            "--agent-version",
            &releases.join(","),
        ])
        .args(["--output-format", "json", "--junit"])
        .arg(&junit)
        .run();
    let env = run.json();
    support::assert_schema("rerun-matrix.json", &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(env["releases"], serde_json::json!(releases));
    let cassettes = cassettes_in(&fx.root().join("cassettes"));
    let cells = env["cells"].as_array().unwrap();
    assert_eq!(cells.len(), cassettes * releases.len());
    for cell in cells {
        assert_eq!(cell["reportedAgentVersion"], cell["agentVersion"], "{cell}");
        assert_eq!(cell["recordedAgentVersion"], "2.1.332", "{cell}");
        assert!(
            matches!(cell["outcome"].as_str(), Some("pass" | "pass_diverged")),
            "{cell:#}"
        );
        assert!(
            !cell.to_string().contains("escape"),
            "no release reaches for the network: {cell:#}"
        );
    }
    for name in ["conversation", "judged-note", "delegate-count"] {
        let n = cells_of(&env, &format!("{name}.cassette.json")).len();
        assert_eq!(n, releases.len(), "{name}");
    }
    // skill-triggered's Write result changed at 2.1.128.
    let st = cells_of(&env, "skill-triggered.cassette.json");
    let outcome = |i: usize| st[i]["outcome"].as_str().unwrap();
    assert_eq!(
        (outcome(0), outcome(1), outcome(2)),
        ("pass_diverged", "pass_diverged", "pass")
    );
    assert_eq!(st[0]["firstDivergence"]["tool"], "Write");
    assert_eq!(st[1]["firstDivergence"]["tool"], "Write");
    assert_eq!(st[1]["firstChange"], false);
    assert_eq!(st[2]["firstChange"], true);
    // delegate-count was recorded with a background sub-agent; these run it
    // in the foreground, so the Agent tool's result diverges and the reply
    // that only waited for it is passed over: green, diverged.
    for cell in &cells_of(&env, "delegate-count.cassette.json")[..3] {
        assert_eq!(cell["outcome"], "pass_diverged", "{cell:#}");
        assert_eq!(cell["firstDivergence"]["tool"], "Agent", "{cell:#}");
    }
    // JUnit: one test per cell, none failed.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), cells.len());
    assert_eq!(xml.matches("<failure").count(), 0, "{xml}");
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
    assert_eq!(run.code, 0, "{}", run.stderr);
    let table = run.stdout;
    assert!(table.starts_with("cassette"), "{table}");
    assert!(
        table.contains("skill-triggered.cassette.json  pass~1   pass~1   *pass"),
        "{table}"
    );
    assert!(
        table.contains("changed at 2.1.128 (2.1.126 pass~1 → 2.1.128 pass)"),
        "{table}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| `skill-triggered.cassette.json` | pass~1 | pass~1 | **pass** (changed) |"),
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

/// Across the cli.js → native layout change: under --strict the first
/// release without the Write divergence is 2.1.128, found among the
/// releases published between (2.1.127 never was).
#[test]
fn bisect_names_the_release_that_changed_a_tool_result_across_layouts() {
    support::require!(install(MATRIX));
    let fx = scratch();
    let run = reel_in(fx.root())
        .args([
            "bisect",
            "cassettes/skill-triggered.cassette.json",
            "--strict",
        ])
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
    assert_eq!(found["first_changed"], "2.1.128");
    assert_eq!(found["last_before"], "2.1.126");
    assert_eq!(found["regression"], false);
    // Two endpoints, then at most ceil(log2(12 + 1)) = 4 reruns.
    let steps = found["steps"].as_array().unwrap();
    assert!(steps.len() <= 6, "{steps:?}");
    assert!(
        run.stderr.contains("bisect: 2.1.112: bad (pass_diverged"),
        "{}",
        run.stderr
    );
    // Without --strict 2.1.112 is good now that it runs offline: the
    // endpoints do not behave as stated.
    let loose = reel_in(fx.root())
        .args(["bisect", "cassettes/skill-triggered.cassette.json"])
        .args(["--bad", "2.1.112", "--good", "2.1.128"])
        .run();
    assert_eq!(loose.code, 2, "{}", loose.stderr);
    assert!(
        loose.stderr.contains("the bad release 2.1.112 is good"),
        "{}",
        loose.stderr
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

/// Issue #39 items 3 and 10: a release never published is bad input (exit
/// 2, as `agents --help` says), after the list was asked afresh; the hint
/// names no flag the command lacks.
#[test]
fn a_release_never_published_is_exit_2_and_a_bad_selector_exit_2() {
    support::require!(install("2.1.112"));
    for missing in ["2.1.127", "9.9.9"] {
        let run = reel()
            .env("REEL_AGENTS_DIR", agents_dir())
            .args(["agents", "install", missing])
            .run();
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "agents install: no published release matches `{missing}`"
            )),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("--agent-version"), "{}", run.stderr);
    }
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

/// Each sub-agent style reruns green under the other: a recording made with
/// 2.1.112, whose sub-agent ran in the foreground
/// (tests/data/rerun/foreground-subagent), passes replay and verify, and
/// reruns green under 2.1.112 and under 2.1.332, which runs it in the
/// background and reports it again after the recorded conversation ended
/// (acknowledged, not "replies exhausted").
#[test]
fn a_foreground_subagent_recording_reruns_under_a_background_release() {
    support::require!(install("2.1.112"));
    support::require!(support::claude_bin());
    let fx = scratch();
    let cassette = "cassettes/delegate-count.cassette.json";
    std::fs::copy(
        repo().join("tests/data/rerun/foreground-subagent/delegate-count.cassette.json"),
        fx.root().join(cassette),
    )
    .unwrap();
    fx.commit(".", "a 2.1.112 recording");
    let doc = support::read_json(&fx.root().join(cassette));
    assert!(
        doc["events"]
            .to_string()
            .contains(r#"\"claude_code_version\":\"2.1.112\""#)
    );
    for args in [&["replay", cassette][..], &["verify-cassettes", cassette]] {
        let run = reel_in(fx.root()).args(args).run();
        assert_eq!(run.code, 0, "{args:?}: {}", run.streams());
    }
    let now = reel_in(fx.root())
        .args(["rerun", cassette, "--output-format", "json"])
        .run();
    assert_eq!(now.code, 0, "{}", now.streams());
    let rerun = &now.json()["results"][0]["rerun"];
    assert_eq!(rerun["outcome"], "pass_diverged", "{rerun:#}");
    assert_eq!(rerun["divergences"][0]["tool"], "Agent", "{rerun:#}");
    assert!(
        !rerun.to_string().contains("replies_exhausted"),
        "{rerun:#}"
    );
    let matrix = reel_in(fx.root())
        .args(["rerun", cassette, "--agent-version", "2.1.112"])
        .args(["--output-format", "json"])
        .run();
    assert_eq!(matrix.code, 0, "{}", matrix.streams());
    assert_eq!(
        matrix.json()["cells"][0]["outcome"],
        "pass",
        "{}",
        matrix.stdout
    );
}

/// The reply the bundled 2.1.332 recording made while its sub-agent ran in
/// the background is marked as only waiting for it (`waits_for`), the one
/// turn so marked; `reel model extract` writes the mark.
#[test]
fn the_reply_that_waited_for_a_background_subagent_is_marked() {
    let fx = scratch();
    let out = fx.root().join("dc.model.yaml");
    let run = reel_in(fx.root())
        .args(["model", "extract", "cassettes/delegate-count.cassette.json"])
        .arg("--out")
        .arg(&out)
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.matches("waits_for: toolu_main_dispatch").count(),
        1,
        "{text}"
    );
    // The mark comes before the turn's blocks.
    let marked = text.split("waits_for").nth(1).unwrap_or_default();
    let turn = marked.split("- id:").next().unwrap_or_default();
    assert!(turn.contains("Counting in the background"), "{text}");
}

/// A release whose program reaches for api.anthropic.com through the offline
/// tripwire before doing its work (a phone-home no seed answers): its cells
/// fail for a reason outside the skill, reported as the environment's (`ENV`,
/// outcome `environment`, exit 3), not as the skill failing.
#[test]
fn a_release_that_phones_home_is_the_environments_failure() {
    let claude = support::require!(support::claude_bin());
    let cache = tempfile::tempdir().unwrap();
    let pkg = cache
        .path()
        .join("2.1.999/node_modules/@anthropic-ai/claude-code");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        cache.path().join("2.1.999/.reel-agent.json"),
        r#"{"package":"@anthropic-ai/claude-code","version":"2.1.999"}"#,
    )
    .unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name":"@anthropic-ai/claude-code","version":"2.1.999","bin":{"claude":"cli.js"}}"#,
    )
    .unwrap();
    // CONNECT api.anthropic.com:443 through the proxy, then the real agent.
    let cli = format!(
        "#!/usr/bin/env node\nconst http = require('http');\n\
         const {{ spawnSync }} = require('child_process');\nlet ran = false;\n\
         const run = () => {{ if (ran) return; ran = true;\n\
           const r = spawnSync({claude:?}, process.argv.slice(2), {{ stdio: 'inherit' }});\n\
           process.exit(r.status === null ? 1 : r.status); }};\n\
         const p = new URL(process.env.HTTPS_PROXY);\n\
         const req = http.request({{ host: p.hostname, port: p.port, method: 'CONNECT', \
           path: 'api.anthropic.com:443' }});\n\
         req.on('connect', (res, sock) => {{ sock.destroy(); run(); }});\n\
         req.on('response', run); req.on('error', run); req.end();\n",
        claude = claude.display().to_string()
    );
    std::fs::write(pkg.join("cli.js"), cli).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(pkg.join("cli.js"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let one = "cassettes/write-note.cassette.json";
    let base = || {
        let mut cmd = reel();
        cmd.current_dir(repo())
            .env("REEL_AGENTS_DIR", cache.path())
            .args(["rerun", one, "--agent-version", "2.1.999", "--no-sandbox"]);
        cmd
    };
    let run = base().args(["--output-format", "json"]).run();
    let env = run.json();
    support::assert_schema("rerun-matrix.json", &env);
    let cell = &env["cells"][0];
    assert_eq!(cell["outcome"], "environment", "{cell:#}\n{}", run.stderr);
    assert_eq!(cell["exitCode"], 3, "{cell:#}");
    assert!(
        cell["environment"]
            .as_str()
            .unwrap()
            .contains("the release phones home, the skill is not at fault"),
        "{cell:#}"
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    let text = base().run();
    assert!(
        text.stdout.contains("write-note.cassette.json  ENV"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("write-note.cassette.json @ 2.1.999: ENV: Claude Code 2.1.999 reached"),
        "{}",
        text.stdout
    );
}
