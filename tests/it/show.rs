//! `reel show`: every view of every bundled and cowork-harness cassette, in
//! text and JSON (checked against schema/show.json), the JSON-artifact
//! preview, and snapshots pinning the text of each view.

use std::path::Path;

use serde_json::Value;

use crate::support;
use crate::support::schema_errors;

const VIEWS: [&str; 6] = ["tools", "questions", "files", "timeline", "usage", "all"];

fn show(path: &Path, view: &str, json: bool) -> (i32, String) {
    let mut cmd = support::reel();
    cmd.current_dir(support::repo())
        .arg("show")
        .arg(path)
        .args(["--view", view]);
    if json {
        cmd.args(["--output-format", "json"]);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn every_view_of_every_cassette_in_text_and_json() {
    for p in support::bundled_cassettes()
        .into_iter()
        .chain(support::compat_cassettes())
    {
        for view in VIEWS {
            let (code, text) = show(&p, view, false);
            assert_eq!(code, 0, "{} --view {view}", p.display());
            let first = text.lines().next().unwrap_or("");
            assert!(first.starts_with(&p.display().to_string()), "{first}");
            if view != "all" {
                assert!(
                    text.lines().nth(1).unwrap_or("").starts_with(view),
                    "{} --view {view}: {text}",
                    p.display()
                );
            }
            let (code, json) = show(&p, view, true);
            assert_eq!(code, 0);
            let env: Value = serde_json::from_str(&json).unwrap();
            let errors = schema_errors("show.json", &env);
            assert!(
                errors.is_empty(),
                "{} --view {view}: {errors:?}",
                p.display()
            );
            let r = &env["results"][0];
            for v in ["tools", "questions", "files", "timeline", "usage"] {
                assert_eq!(
                    r.get(v).is_some(),
                    view == "all" || view == v,
                    "{} --view {view}: {v}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn show_names_what_the_recording_did() {
    let p = support::repo().join("cassettes/pick-features.cassette.json");
    let (_, json) = show(&p, "all", true);
    let r = &serde_json::from_str::<Value>(&json).unwrap()["results"][0];
    assert_eq!(r["tools"][0]["name"], "AskUserQuestion");
    assert_eq!(r["questions"][0]["decision"], "answered");
    assert_eq!(
        r["questions"][0]["detail"]["Which features should be enabled?"],
        "Auth, Audit"
    );
    assert_eq!(r["questions"][0]["delivery"], "ok");
    assert_eq!(r["usage"]["turns"], 2);
}

#[test]
fn a_json_artifact_gets_a_shallow_preview() {
    let src = support::repo().join("cassettes/write-note.cassette.json");
    let mut doc: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&src).unwrap()).unwrap();
    let body = r#"{"name":"reel","count":3,"tags":["a","b"],"nested":{"x":1}}"#;
    doc["artifacts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "path": "outputs/data.json",
            "bytes": body.len(),
            "sha256": hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes())),
            "body": body,
        }));
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("c.cassette.json");
    std::fs::write(&p, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let (code, text) = show(&p, "files", false);
    assert_eq!(code, 0);
    assert!(
        text.contains(
            r#"json: object {name: string "reel", count: number 3, tags: array (2), nested: object (1 keys)}"#
        ),
        "{text}"
    );
    let (_, json) = show(&p, "files", true);
    let env: Value = serde_json::from_str(&json).unwrap();
    assert!(schema_errors("show.json", &env).is_empty());
    let f = env["results"][0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "outputs/data.json")
        .unwrap()
        .clone();
    assert_eq!(f["jsonPreview"]["keys"], 4);
    assert_eq!(f["jsonPreview"]["fields"]["tags"], "array (2)");
}

#[test]
fn an_unreadable_cassette_is_a_usage_error() {
    let (code, _) = show(Path::new("no/such.cassette.json"), "all", false);
    assert_eq!(code, 2);
}

#[test]
fn snapshots_of_each_view() {
    for name in ["summarize-input", "pick-features", "bash-policy"] {
        let p = Path::new("cassettes").join(format!("{name}.cassette.json"));
        for view in VIEWS {
            let (_, text) = show(&p, view, false);
            insta::assert_snapshot!(format!("show-{name}-{view}"), text);
        }
    }
}

/// A directory is one coherent refusal (what it holds, a file to pass, the
/// commands that take a directory), and `--help` says once where text goes.
#[test]
fn a_directory_is_one_coherent_usage_error_and_help_agrees_on_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("cassettes")).unwrap();
    for name in ["pick-features", "write-note"] {
        let file = format!("{name}.cassette.json");
        std::fs::copy(
            support::repo().join("cassettes").join(&file),
            tmp.path().join("cassettes").join(&file),
        )
        .unwrap();
    }
    let out = support::reel()
        .current_dir(tmp.path())
        .args(["show", "cassettes/"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("not a regular file"), "{err}");
    insta::assert_snapshot!("show-a-directory", err);

    let out = support::reel().args(["show", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(help.contains("the digest on stdout"), "{help}");
    assert!(!help.contains("stdout stays empty"), "{help}");
    insta::assert_snapshot!("show-help", help);
}

/// A scripted (token-free) run says so and shows no cost; a real
/// cowork-harness recording keeps its model and cost.
#[test]
fn a_scripted_run_names_its_model_scripted_and_has_no_cost() {
    let p = support::repo().join("cassettes/pick-features.cassette.json");
    let (_, text) = show(&p, "usage", false);
    assert!(text.contains("model: scripted by reel"), "{text}");
    assert!(text.contains("costUsd: none (scripted model)"), "{text}");
    assert!(!text.contains('$'), "{text}");
    let (_, json) = show(&p, "usage", true);
    let env: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(env["results"][0]["usage"]["scriptedModel"], true);

    let real =
        support::repo().join("tests/compat/examples/replays/example-pdf-skill.cassette.json");
    let (_, text) = show(&real, "usage", false);
    assert!(!text.contains("scripted"), "{text}");
    assert!(text.contains("costUsd: $0.290787"), "{text}");
    let (_, json) = show(&real, "usage", true);
    let env: Value = serde_json::from_str(&json).unwrap();
    assert!(env["results"][0]["usage"].get("scriptedModel").is_none());
}
