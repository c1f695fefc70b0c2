//! `workspace_fixture` in a live run (cassette v14): `record` and `rerun`
//! stage the fixture into `outputs/` before the pre-run baseline, the
//! cassette's fingerprint carries the signature of what was staged, an
//! untouched binary fixture file is recorded hash-only (`truncationReason:
//! "fixture"`), and the scan's refusals stop a run before anything starts.
//! Follows cowork-harness test/workspace-fixture.test.ts and
//! test/workspace-fixture-record.test.ts, with the real `claude` binary and
//! the scripted model.

use serde_json::{Map, Value};

use crate::support::{self, Fixture, RunExt, claude_bin, reel};

const BIN: &[u8] = &[0, 1, 2, 3, 255, 0, 9];

const SCENARIO: &str = r#"fidelity: protocol
session: lean.yaml
timeout_ms: 120000
prompt: Draft the memo from the scored deck.
workspace_fixture: fixtures/after-scoring
answers:
  - when_tool: Bash
    decide: allow
  - when_tool: Write
    decide: allow
assert:
  - result: success
  - tool_called: Bash
  - file_exists: outputs/memo.md
  - artifact_text: {artifact: outputs/memo.md, contains: ["total 7"]}
"#;

const MODEL: &str = r##"usage: {input_tokens: 1000, output_tokens: 50}
turns:
  - blocks:
      - text: "Reading the step-1 report and redrawing the chart."
      - tool: Bash
        input:
          command: "cat outputs/report.md && printf '\\007\\007\\000\\007' > outputs/chart.bin"
          description: "Read the report, redraw the chart"
  - expect: {last_tool_result_contains: "total: 7"}
    blocks:
      - tool: Write
        input: {file_path: "{{cwd}}/outputs/memo.md", content: "# Memo\n\ntotal 7\n"}
  - expect: {last_tool_result_is_error: false}
    blocks:
      - text: "The memo is in outputs/memo.md."
"##;

/// A scenario bundle: the scenario, its model script, its session and the
/// fixture (a text report, an untouched binary, a binary the step redraws).
fn bundle() -> Fixture {
    let fx = Fixture::new();
    fx.write("step2.yaml", SCENARIO);
    fx.write("step2.model.yaml", MODEL);
    fx.write(
        "lean.yaml",
        "permission_mode: default\npermission_parity: cowork\n",
    );
    fx.write("fixtures/after-scoring/report.md", "# Scores\n\ntotal: 7\n");
    fx.write("fixtures/after-scoring/deck.bin", BIN);
    fx.write("fixtures/after-scoring/chart.bin", BIN);
    fx
}

fn record(fx: &Fixture, envs: &[(&str, &str)]) -> support::Run {
    let mut cmd = reel();
    cmd.current_dir(fx.root())
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env("COWORK_HARNESS_GITSET", "0")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["record", "step2.yaml", "--out", "step2.cassette.json"]);
    if let Ok(bin) = claude_bin() {
        cmd.env("REEL_CLAUDE_BIN", bin);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.run()
}

fn doc(fx: &Fixture) -> Map<String, Value> {
    serde_json::from_str(&fx.read("step2.cassette.json")).unwrap()
}

#[test]
fn record_stages_the_fixture_and_freezes_its_signature() {
    support::require!(claude_bin());
    let fx = bundle();
    let run = record(&fx, &[]);
    assert_eq!(run.code, 0, "{}", run.streams());
    let doc = doc(&fx);
    assert_eq!(doc["cassetteVersion"], 14);
    assert_eq!(
        doc["scenario"]["workspace_fixture"],
        "fixtures/after-scoring"
    );

    // The signature is the scan's, and the last two members of the fingerprint.
    let scan = reel::fingerprint::fixture::scan(
        &fx.path("fixtures/after-scoring"),
        "fixtures/after-scoring",
    )
    .unwrap();
    let fp = doc["fingerprint"].as_object().unwrap();
    assert_eq!(fp["workspaceFixtureSig"], scan.sig.as_str());
    let sigs: Vec<(String, String)> =
        serde_json::from_value(fp["workspaceFixtureFileSigs"].clone()).unwrap();
    assert_eq!(sigs, scan.file_sigs);
    let keys: Vec<&str> = fp.keys().map(String::as_str).collect();
    assert_eq!(
        keys[keys.len() - 2..],
        ["workspaceFixtureSig", "workspaceFixtureFileSigs"]
    );

    // Staged before the pre-run baseline: each fixture file is a pre-run path.
    let pre = doc["preRunHashes"].as_object().unwrap();
    for f in &scan.files {
        assert_eq!(
            pre[&format!("outputs/{}", f.path)],
            f.sha256.as_str(),
            "{}",
            f.path
        );
    }
    let artifacts: Vec<&Value> = doc["artifacts"].as_array().unwrap().iter().collect();
    let by = |p: &str| {
        *artifacts
            .iter()
            .find(|a| a["path"] == p)
            .unwrap_or_else(|| panic!("{p} not in {artifacts:#?}"))
    };
    let deck = by("outputs/deck.bin");
    assert_eq!(deck["truncated"], true);
    assert_eq!(deck["truncationReason"], "fixture");
    assert!(
        deck.get("body").is_none() && deck.get("encoding").is_none(),
        "{deck}"
    );
    assert!(
        by("outputs/chart.bin").get("body").is_some(),
        "rewritten: a deliverable"
    );
    assert!(
        by("outputs/report.md")["body"]
            .as_str()
            .unwrap()
            .contains("total: 7")
    );
    assert!(
        run.stderr
            .contains("1 untouched binary file(s) recorded hash-only"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("1 untouched fixture file(s) (19 bytes) are inlined"),
        "{}",
        run.stderr
    );

    // It replays green, rehash leaves it byte for byte, and a fixture edit
    // stales it.
    let replay = reel()
        .current_dir(fx.root())
        .args(["replay", "step2.cassette.json"])
        .run();
    assert_eq!(replay.code, 0, "{}", replay.streams());
    let before = fx.read("step2.cassette.json");
    let rehash = reel()
        .current_dir(fx.root())
        .env("COWORK_HARNESS_GITSET", "0")
        .args(["rehash", "."])
        .run();
    assert!(rehash.code == 0, "{}", rehash.streams());
    assert_eq!(fx.read("step2.cassette.json"), before);
    fx.write("fixtures/after-scoring/report.md", "# Scores\n\ntotal: 8\n");
    let stale = reel()
        .current_dir(fx.root())
        .env("COWORK_HARNESS_GITSET", "0")
        .args(["verify-cassettes", "step2.cassette.json", "--verbose"])
        .run();
    assert!(
        stale
            .streams()
            .contains("workspace_fixture fixtures/after-scoring changed"),
        "{}",
        stale.streams()
    );
}

#[test]
fn rerun_stages_the_fixture_again() {
    support::require!(claude_bin());
    let fx = bundle();
    let run = record(&fx, &[]);
    assert_eq!(run.code, 0, "{}", run.streams());
    let rerun = reel()
        .current_dir(fx.root())
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("COWORK_HARNESS_GITSET", "0")
        .args(["rerun", "step2.cassette.json", "--output-format", "json"])
        .run();
    let env = rerun.json();
    assert_eq!(rerun.code, 0, "{}\n{env:#}", rerun.stderr);
    let r = &env["results"][0];
    assert_eq!(r["rerun"]["divergences"], serde_json::json!([]), "{env:#}");
    assert_eq!(r["verdict"]["pass"], true, "{env:#}");
}

#[test]
fn the_scan_refuses_before_anything_runs() {
    /// (the file planted, the environment, the refusal expected)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 3] = [
        (
            "CLAUDE.md",
            &[],
            "\"CLAUDE.md\": CLAUDE.md is agent configuration",
        ),
        (
            "big.txt",
            &[("COWORK_HARNESS_PRERUN_HASH_CAP", "4")],
            "over the pre-run hash cap (4; COWORK_HARNESS_PRERUN_HASH_CAP raises it)",
        ),
        (
            "notes.txt",
            &[("COWORK_HARNESS_GITSET", "1")],
            "\"notes.txt\" is not tracked by git",
        ),
    ];
    for (file, envs, want) in cases {
        let fx = bundle();
        fx.write(&format!("fixtures/after-scoring/{file}"), "some text");
        if file == "notes.txt" {
            fx.git(".", &["init", "-q"]);
            fx.git(".", &["add", "fixtures/after-scoring/report.md"]);
        }
        let run = record(&fx, envs);
        assert_eq!(run.code, 2, "{file}: {}", run.streams());
        assert!(run.stderr.contains(want), "{file}: {}", run.stderr);
        assert!(!fx.path("runs").exists(), "{file}: a run started");
        assert!(!fx.path("step2.cassette.json").exists());
    }
}

/// test/workspace-fixture.test.ts, "load-time refusal": an assertion that
/// would pass on the fixture alone is refused before anything runs.
#[test]
fn an_assertion_the_fixture_alone_would_pass_is_refused() {
    let fx = bundle();
    fx.edit("step2.yaml", |t| {
        t.replace(
            "  - file_exists: outputs/memo.md",
            "  - file_exists: outputs/memo.md\n  - file_exists: outputs/Report.md",
        )
    });
    let run = record(&fx, &[]);
    assert_eq!(run.code, 2, "{}", run.streams());
    assert!(
        run.stderr
            .contains("1 assertion(s) name a file (or a directory) the workspace_fixture"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("file_exists outputs/Report.md"),
        "{}",
        run.stderr
    );
    assert!(!fx.path("runs").exists());
}

/// test/cassette-fixture (the fixture ref is relocatable): the cassette
/// stores the fixture relative to itself, as it does the session, so a
/// cassette written elsewhere still finds it.
#[test]
fn the_fixture_ref_is_stored_relative_to_the_cassette() {
    support::require!(claude_bin());
    let fx = bundle();
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("COWORK_HARNESS_GITSET", "0")
        .args([
            "record",
            "step2.yaml",
            "--out",
            "cassettes/step2.cassette.json",
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let doc: Map<String, Value> =
        serde_json::from_str(&fx.read("cassettes/step2.cassette.json")).unwrap();
    assert_eq!(
        doc["scenario"]["workspace_fixture"],
        "../fixtures/after-scoring"
    );
    let verify = reel()
        .current_dir(fx.root())
        .env("COWORK_HARNESS_GITSET", "0")
        .args(["verify-cassettes", "cassettes/"])
        .run();
    assert_eq!(verify.code, 0, "{}", verify.streams());
}

/// test/replay-reassert.test.ts ("RECORDING_SHAPING_FIELDS includes `lane`
/// and `workspace_fixture`"): the fixture a recording was made from shapes
/// it. The same directory, named relative to the cassette on one side and to
/// the scenario on the other, does not drift; another directory does.
#[test]
fn another_fixture_is_recording_shaping_drift() {
    support::require!(claude_bin());
    let fx = bundle();
    let run = reel()
        .current_dir(fx.root())
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env("REEL_CLAUDE_BIN", claude_bin().unwrap())
        .env("COWORK_HARNESS_GITSET", "0")
        .args([
            "record",
            "step2.yaml",
            "--out",
            "cassettes/step2.cassette.json",
        ])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let reassert = |scenario: &str| {
        reel()
            .current_dir(fx.root())
            .env("COWORK_HARNESS_GITSET", "0")
            .args([
                "replay",
                "cassettes/step2.cassette.json",
                "--assert-from",
                scenario,
            ])
            .run()
    };
    let same = reassert("step2.yaml");
    assert_eq!(same.code, 0, "{}", same.streams());
    assert!(
        same.stderr
            .contains("requires_capabilities/workspace_fixture verified unchanged"),
        "{}",
        same.stderr
    );
    fx.copy_in(&fx.path("fixtures/after-scoring"), "fixtures/other");
    fx.write(
        "moved.yaml",
        SCENARIO.replace("fixtures/after-scoring", "fixtures/other"),
    );
    let moved = reassert("moved.yaml");
    assert_eq!(moved.code, 2, "{}", moved.streams());
    assert!(
        moved.stderr.contains("drifted from the recording")
            && moved.stderr.contains("`workspace_fixture`"),
        "{}",
        moved.stderr
    );
}

/// test/fixture-session-tokens.test.ts ("refuses the protocol tier before
/// spend", "a binary fixture file holding a token is refused at scan"): a
/// fixture exported with `--session-paths` names a session root reel's
/// protocol tier does not have, so it is refused before anything runs, and
/// a binary file holding a token is refused by the scan on any tier.
#[test]
fn a_session_path_token_is_refused_before_anything_runs() {
    for (file, body, want) in [
        (
            "artifacts/probe.txt",
            b"__COWORK_HARNESS_VM_SESSION_ROOT__/mnt/outputs".to_vec(),
            "\"artifacts/probe.txt\" hold(s) a session-path token, and the protocol tier has no \
             session layout",
        ),
        (
            "b.bin",
            [&[0u8, 1][..], b"__COWORK_HARNESS_SESSION_ROOT__"].concat(),
            "\"b.bin\" is binary and holds a session-path token",
        ),
    ] {
        let fx = bundle();
        fx.write(&format!("fixtures/after-scoring/{file}"), body);
        let run = record(&fx, &[]);
        assert_eq!(run.code, 2, "{file}: {}", run.streams());
        assert!(run.stderr.contains(want), "{file}: {}", run.stderr);
        assert!(!fx.path("runs").exists(), "{file}: a run started");
    }
}
