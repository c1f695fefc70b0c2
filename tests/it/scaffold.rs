//! `reel scaffold`: every bundled cassette gives a scenario and a model
//! script that `reel record` records (the real `claude` against the scripted
//! model) and `reel replay` passes, unedited; the scenario lints clean.

use serde_json::Value;

use crate::support;

#[test]
fn every_bundled_cassette_scaffolds_into_a_recordable_passing_test() {
    let claude = support::require!(support::claude_bin());
    let tmp = tempfile::tempdir().unwrap();
    let mut cassettes: Vec<_> = std::fs::read_dir(support::repo().join("cassettes"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".cassette.json"))
        .collect();
    cassettes.sort();
    assert!(cassettes.len() >= 8, "{cassettes:?}");
    for src in cassettes {
        let name = src
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".cassette.json")
            .to_string();
        let scenario = tmp.path().join(format!("scenarios/{name}.yaml"));
        let out = support::reel()
            .arg("scaffold")
            .arg(&src)
            .arg("--out")
            .arg(&scenario)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let model = tmp.path().join(format!("scenarios/{name}.model.yaml"));
        assert!(
            model.is_file(),
            "{name}: no model script beside the scenario"
        );

        let lint = support::reel()
            .args(["lint", "--output-format", "json"])
            .arg(&scenario)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&lint.stdout).unwrap();
        assert_eq!(v["ok"], true, "{name}: the scaffold lints clean: {v}");

        let cassette = tmp.path().join(format!("cassettes/{name}.cassette.json"));
        let rec = support::reel()
            .current_dir(tmp.path())
            .env("REEL_CLAUDE_BIN", &claude)
            .arg("record")
            .arg(&scenario)
            .arg("--out")
            .arg(&cassette)
            .output()
            .unwrap();
        assert_eq!(
            rec.status.code(),
            Some(0),
            "{name}: record\n{}\n--- scenario\n{}",
            String::from_utf8_lossy(&rec.stderr),
            std::fs::read_to_string(&scenario).unwrap()
        );
        let rep = support::reel()
            .current_dir(tmp.path())
            .arg("replay")
            .arg(&cassette)
            .output()
            .unwrap();
        assert_eq!(
            rep.status.code(),
            Some(0),
            "{name}: replay\n{}",
            String::from_utf8_lossy(&rep.stderr)
        );
    }
}

#[test]
fn without_out_the_scenario_goes_to_stdout_and_existing_files_are_kept() {
    let src = support::repo().join("cassettes/pick-format.cassette.json");
    let out = support::reel().arg("scaffold").arg(&src).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["fidelity"], "protocol");
    let asserts = doc["assert"].as_array().unwrap();
    for want in [
        serde_json::json!({"result": "success"}),
        serde_json::json!({"file_exists": "outputs/note.md"}),
        serde_json::json!({"no_unexpected_files": ["outputs/note.md"]}),
        serde_json::json!({"tool_called": "Write"}),
        serde_json::json!({"question_asked": "Which format should the note use\\?"}),
        serde_json::json!({"gate_answers_delivered": true}),
    ] {
        assert!(asserts.contains(&want), "{want} missing: {text}");
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("x.yaml");
    std::fs::write(&f, "mine").unwrap();
    let out = support::reel()
        .arg("scaffold")
        .arg(&src)
        .arg("--out")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "mine");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
}

/// A skill run scaffolds `skill_triggered: NAME` (not `tool_called: Skill`,
/// which any skill would satisfy) and, with uploads, `input_unmodified`.
#[test]
fn a_skill_run_asserts_the_skill_by_name_and_its_uploads_unmodified() {
    let src = support::repo().join("cassettes/csv-stats.cassette.json");
    let out = support::reel().arg("scaffold").arg(&src).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_yaml_ng::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let asserts = doc["assert"].as_array().unwrap();
    for want in [
        serde_json::json!({"skill_triggered": "csv-stats"}),
        serde_json::json!({"input_unmodified": "uploads/**"}),
        serde_json::json!({"tool_called": "Bash"}),
    ] {
        assert!(asserts.contains(&want), "missing {want}: {asserts:?}");
    }
    assert!(
        !asserts.contains(&serde_json::json!({"tool_called": "Skill"})),
        "{asserts:?}"
    );
}
