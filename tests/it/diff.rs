//! `reel diff`: identical recordings (a cassette with itself, two real
//! re-recordings of one scenario), copies with exactly one thing changed
//! (an answer, a tool input, an artifact body, an assertion) named in the
//! right view, normalisation on and off, the JSON envelope against
//! schema/diff.json, and unreadable input.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::support::{self, RunExt, read_doc, schema_errors};

/// Writes `doc` as a cassette beside the bundled ones' relative layout is
/// not needed: diff reads only the recording.
fn write_doc(dir: &Path, name: &str, doc: &Map<String, Value>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    p
}

/// `reel diff A B --output-format json` → (exit code, the one result).
fn diff_json(a: &Path, b: &Path, extra: &[&str]) -> (i32, Value) {
    let run = support::reel()
        .arg("diff")
        .arg(a)
        .arg(b)
        .args(["--output-format", "json"])
        .args(extra)
        .run();
    let env = run.json();
    let errors = schema_errors("diff.json", &env);
    assert!(errors.is_empty(), "schema/diff.json: {errors:?}\n{env}");
    (
        run.code,
        env["results"].get(0).cloned().unwrap_or(Value::Null),
    )
}

/// The changes of one view.
fn changes<'a>(result: &'a Value, view: &str) -> &'a Vec<Value> {
    result["views"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["view"] == view)
        .unwrap_or_else(|| panic!("no view {view}"))["changes"]
        .as_array()
        .unwrap()
}

/// Views other than `allowed` that report changes.
fn other_views_changed(result: &Value, allowed: &[&str]) -> Vec<String> {
    result["views"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| !allowed.contains(&v["view"].as_str().unwrap()))
        .filter(|v| !v["changes"].as_array().unwrap().is_empty())
        .map(|v| v.to_string())
        .collect()
}

/// Applies `f` to each events line (parsed) for which it returns true, keeping
/// the rest verbatim.
fn edit_lines(lines: &mut Value, mut f: impl FnMut(&mut Value) -> bool) -> usize {
    let mut n = 0;
    for l in lines.as_array_mut().unwrap() {
        let mut v: Value = serde_json::from_str(l.as_str().unwrap()).unwrap();
        if f(&mut v) {
            *l = Value::String(serde_json::to_string(&v).unwrap());
            n += 1;
        }
    }
    n
}

#[test]
fn every_cassette_diffed_with_itself_is_identical() {
    for p in support::bundled_cassettes()
        .into_iter()
        .chain(support::compat_cassettes())
    {
        let out = support::reel()
            .arg("diff")
            .arg(&p)
            .arg(&p)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}: {text}", p.display());
        assert_eq!(text.lines().last(), Some("identical"), "{}", p.display());
        for view in [
            "tools",
            "answers",
            "transcript",
            "files",
            "assertions",
            "meta",
        ] {
            assert!(text.contains(&format!("{view}: identical")), "{text}");
        }
        let (code, r) = diff_json(&p, &p, &[]);
        assert_eq!((code, &r["identical"]), (0, &Value::Bool(true)));
    }
}

#[test]
fn one_changed_answer_is_named_in_the_answers_view() {
    let src = support::repo().join("cassettes/pick-features.cassette.json");
    let mut doc = read_doc(&src);
    let n = edit_lines(doc.get_mut("controlOut").unwrap(), |v| {
        let answers = v.pointer_mut("/response/response/updatedInput/answers");
        match answers {
            Some(Value::Object(a)) => {
                a.insert(
                    "Which features should be enabled?".into(),
                    "Auth, Billing".into(),
                );
                true
            }
            _ => false,
        }
    });
    assert_eq!(n, 1);
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&src, &b, &[]);
    assert_eq!(code, 1, "{r}");
    let c = changes(&r, "answers");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["kind"], "changed");
    assert_eq!(c[0]["item"], "#1 question AskUserQuestion");
    assert_eq!(c[0]["path"], "detail.Which features should be enabled?");
    assert_eq!(c[0]["before"], "Auth, Audit");
    assert_eq!(c[0]["after"], "Auth, Billing");
    // The tool call, its result, the files and the metadata are untouched;
    // the assertions view may only report what the changed answer does to
    // the verdict (a recorded answer the scenario's rule would not give).
    assert!(
        other_views_changed(&r, &["answers", "assertions"]).is_empty(),
        "{r}"
    );
    for ch in changes(&r, "assertions") {
        assert!(
            ch.to_string().contains("cassette-format") || ch["item"] == "verdict",
            "unexpected assertion change: {ch}"
        );
    }
}

#[test]
fn one_changed_tool_input_is_named_in_the_tools_view() {
    let src = support::repo().join("cassettes/write-note.cassette.json");
    let mut doc = read_doc(&src);
    let n = edit_lines(doc.get_mut("events").unwrap(), |v| {
        if v["type"] != "assistant" {
            return false;
        }
        let Some(blocks) = v
            .pointer_mut("/message/content")
            .and_then(Value::as_array_mut)
        else {
            return false;
        };
        let mut hit = false;
        for b in blocks {
            if b["type"] == "tool_use" && b["name"] == "Write" {
                b["input"]["content"] = "a different note\n".into();
                hit = true;
            }
        }
        hit
    });
    assert_eq!(n, 1);
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&src, &b, &[]);
    assert_eq!(code, 1, "{r}");
    let c = changes(&r, "tools");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["item"], "#1 Write");
    assert_eq!(c[0]["path"], "input.content");
    assert_eq!(c[0]["after"], "a different note\n");
    assert!(
        c[0]["unified"]
            .as_str()
            .unwrap()
            .contains("+a different note")
    );
    assert!(other_views_changed(&r, &["tools"]).is_empty(), "{r}");
}

#[test]
fn one_changed_artifact_body_is_named_in_the_files_view_with_a_unified_diff() {
    let src = support::repo().join("cassettes/summarize-input.cassette.json");
    let mut doc = read_doc(&src);
    let entry = doc["artifacts"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a["path"] == "outputs/summary.md")
        .unwrap();
    let body = format!("{}one more line\n", entry["body"].as_str().unwrap());
    entry["bytes"] = body.len().into();
    entry["sha256"] = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes())).into();
    entry["body"] = body.into();
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&src, &b, &[]);
    assert_eq!(code, 1, "{r}");
    let c = changes(&r, "files");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0]["item"], "outputs/summary.md");
    assert_eq!(c[0]["path"], "body");
    let unified = c[0]["unified"].as_str().unwrap();
    assert!(unified.contains("--- a/outputs/summary.md"), "{unified}");
    assert!(unified.contains("\n+one more line"), "{unified}");
    assert!(other_views_changed(&r, &["files"]).is_empty(), "{r}");
}

#[test]
fn one_changed_assertion_is_named_in_the_assertions_view() {
    let src = support::repo().join("cassettes/write-note.cassette.json");
    let mut doc = read_doc(&src);
    let item = doc["scenario"]["assert"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a.get("transcript_contains").is_some())
        .unwrap();
    item["transcript_contains"] = "no such words".into();
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&src, &b, &[]);
    assert_eq!(code, 1, "{r}");
    let c = changes(&r, "assertions");
    let named: Vec<(String, String)> = c
        .iter()
        .map(|c| {
            (
                c["item"].as_str().unwrap().to_owned(),
                c["path"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            (
                "transcript_contains".into(),
                "assertion.transcript_contains".into()
            ),
            ("transcript_contains".into(), "pass".into()),
            ("transcript_contains".into(), "message".into()),
            ("verdict".into(), "pass".into()),
        ],
        "{c:?}"
    );
    assert_eq!(c[0]["after"], "no such words");
    assert!(other_views_changed(&r, &["assertions"]).is_empty(), "{r}");
    // The text names it too.
    let out = support::reel()
        .arg("diff")
        .arg(&src)
        .arg(&b)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("~ transcript_contains assertion.transcript_contains"),
        "{text}"
    );
    assert!(text.contains("differs: assertions (4)"), "{text}");
}

/// Replaces `from` with `to` in every string of a JSON value, event lines
/// included.
fn rename_everywhere(v: &mut Value, from: &str, to: &str) {
    support::cassette::map_strings(v, &|s: &str| s.replace(from, to));
}

#[test]
fn a_moved_run_directory_and_new_ids_normalise_away_but_not_with_no_normalize() {
    let src = support::repo().join("cassettes/skill-triggered.cassette.json");
    let doc = read_doc(&src);
    let mut v = Value::Object(doc);
    rename_everywhere(&mut v, "local_dn8cf47zfy526318", "local_zzzzzzzzzzzzzzzz");
    rename_everywhere(
        &mut v,
        "f17089ac-0d94-488f-b869-85c587725621",
        "00000000-1111-2222-3333-444444444444",
    );
    rename_everywhere(&mut v, "toolu_reel_", "toolu_other_");
    rename_everywhere(&mut v, "2026-11-30T06:48", "2027-01-01T00:00");
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", v.as_object().unwrap());
    let (code, r) = diff_json(&src, &b, &[]);
    assert_eq!(code, 0, "{r}");
    let (code, r) = diff_json(&src, &b, &["--no-normalize"]);
    assert_eq!(code, 1);
    assert_eq!(r["normalized"], false);
    let tools = changes(&r, "tools");
    assert!(
        tools
            .iter()
            .any(|c| c["after"].to_string().contains("local_zzzzzzzzzzzzzzzz")),
        "{tools:?}"
    );
    // --view narrows the comparison.
    let (_, r) = diff_json(&src, &b, &["--no-normalize", "--view", "files,meta"]);
    let views: Vec<&str> = r["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["view"].as_str().unwrap())
        .collect();
    assert_eq!(views, ["files", "meta"]);
}

#[test]
fn an_unreadable_cassette_is_a_usage_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.cassette.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let good = support::repo().join("cassettes/write-note.cassette.json");
    let out = support::reel()
        .arg("diff")
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.cassette.json"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    let missing = tmp.path().join("missing.cassette.json");
    let out = support::reel()
        .arg("diff")
        .arg(&missing)
        .arg(&good)
        .args(["--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema_errors("diff.json", &env).is_empty());
    assert_eq!(env["ok"], false);
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing.cassette.json")
    );
}

#[test]
fn the_diff_text_of_two_bundled_cassettes() {
    let a = support::repo().join("cassettes/pick-features.cassette.json");
    let b = support::repo().join("cassettes/pick-format.cassette.json");
    let out = support::reel()
        .current_dir(support::repo())
        .arg("diff")
        .arg("cassettes/pick-features.cassette.json")
        .arg("cassettes/pick-format.cassette.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(a.is_file() && b.is_file());
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}

/// Records `scenario` in a fresh copy of the example tree; returns the cassette.
fn record_fresh(claude: &Path, scenario: &str, root: &Path) -> PathBuf {
    support::example_tree(root);
    let out = support::reel()
        .current_dir(root)
        .arg("record")
        .arg(scenario)
        .env("REEL_CLAUDE_BIN", claude)
        .env("REEL_RUNS_DIR", root.join("runs"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CI")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    root.join(String::from_utf8_lossy(&out.stdout).trim())
}

#[test]
fn two_real_re_recordings_of_each_bundled_scenario_diff_as_identical() {
    let claude = support::require!(support::claude_bin());
    let mut scenarios: Vec<String> = std::fs::read_dir(support::repo().join("scenarios"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && !n.ends_with(".model.yaml"))
        .map(|n| n.trim_end_matches(".yaml").to_owned())
        .filter(|n| !support::VOLATILE_BY_DESIGN.contains(&n.as_str()))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 6, "{scenarios:?}");
    let mut failures = Vec::new();
    for scenario in &scenarios {
        let (t1, t2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let rel = format!("scenarios/{scenario}.yaml");
        let a = record_fresh(&claude, &rel, t1.path());
        let b = record_fresh(&claude, &rel, t2.path());
        let out = support::reel()
            .arg("diff")
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            failures.push(format!(
                "{scenario}: exit {:?}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        // And with the committed recording of the same scenario.
        let committed = support::repo().join(format!("cassettes/{scenario}.cassette.json"));
        let out = support::reel()
            .arg("diff")
            .arg(&committed)
            .arg(&b)
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            failures.push(format!(
                "{scenario} vs committed: exit {:?}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A changed, an added and a removed skill file are named by file in the
/// meta view, never by their position in `fingerprint.fileSigs`.
#[test]
fn changed_skill_files_are_named_by_file_not_by_index() {
    let src = support::repo().join("cassettes/csv-stats.cassette.json");
    let mut doc = read_doc(&src);
    let sigs = doc["fingerprint"]["fileSigs"].as_array_mut().unwrap();
    assert_eq!(sigs[1][0], "scripts/stats.sh");
    sigs[1][1] = "0".repeat(64).into();
    sigs.remove(0);
    sigs.push(serde_json::json!(["scripts/new.py", "1".repeat(64)]));
    let tmp = tempfile::tempdir().unwrap();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&src, &b, &["--view", "meta"]);
    assert_eq!(code, 1, "{r}");
    let paths: Vec<(&str, &str)> = changes(&r, "meta")
        .iter()
        .filter(|c| c["item"] == "fingerprint")
        .map(|c| {
            (
                c["kind"].as_str().unwrap(),
                c["path"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            ("removed", "fileSigs[SKILL.md]"),
            ("changed", "fileSigs[scripts/stats.sh]"),
            ("added", "fileSigs[scripts/new.py]"),
        ]
    );
    let out = support::reel()
        .current_dir(tmp.path())
        .arg("diff")
        .arg(&src)
        .arg("b.cassette.json")
        .args(["--view", "meta"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).replace(&src.display().to_string(), "a.cassette.json");
    assert!(
        text.contains("fingerprint fileSigs[scripts/stats.sh]"),
        "{text}"
    );
    assert!(!text.contains("fileSigs[1]"), "{text}");
    insta::assert_snapshot!(text);
}

/// Every `*.cassette.json` under `dir`, at any depth, sorted.
fn cassettes_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
            } else if p.to_string_lossy().ends_with(".cassette.json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Issue #39 item 5: every cassette the repository holds, bundled or test
/// data at any depth, diffs with itself as identical (exit 0); one that reel
/// refuses to read is a usage error (exit 2), never "changed" (exit 1). The
/// replay work root's random name once made a hostile cassette's assertion
/// message differ from itself.
#[test]
fn reel_diff_c_c_is_identical_for_every_cassette_in_the_repository() {
    let all: Vec<PathBuf> = ["cassettes", "tests"]
        .iter()
        .flat_map(|d| cassettes_under(&support::repo().join(d)))
        .collect();
    assert!(all.len() > 100, "{}", all.len());
    let mut wrong = Vec::new();
    let mut identical = 0;
    for p in &all {
        let run = support::reel().arg("diff").arg(p).arg(p).run();
        match run.code {
            0 => identical += 1,
            2 if run.stderr.contains("error") => {}
            code => wrong.push(format!("{} → {code}: {}", p.display(), run.stdout)),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(identical >= all.len() - 30, "{identical} of {}", all.len());
}

/// Issue #39 item 5: two skill roots each with a `SKILL.md` put the name
/// twice in `fileSigs`; the n-th occurrence pairs with the n-th.
#[test]
fn file_sigs_with_one_name_twice_pair_by_occurrence() {
    let src = support::repo().join("cassettes/csv-stats.cassette.json");
    let mut doc = read_doc(&src);
    let sigs = doc["fingerprint"]["fileSigs"].as_array_mut().unwrap();
    sigs.push(serde_json::json!(["SKILL.md", "2".repeat(64)]));
    let tmp = tempfile::tempdir().unwrap();
    let a = write_doc(tmp.path(), "a.cassette.json", &doc);
    let (code, r) = diff_json(&a, &a, &["--view", "meta"]);
    assert_eq!((code, &r["identical"]), (0, &Value::Bool(true)), "{r}");
    let sigs = doc["fingerprint"]["fileSigs"].as_array_mut().unwrap();
    let last = sigs.len() - 1;
    sigs[last][1] = "3".repeat(64).into();
    let b = write_doc(tmp.path(), "b.cassette.json", &doc);
    let (code, r) = diff_json(&a, &b, &["--view", "meta"]);
    assert_eq!(code, 1, "{r}");
    let paths: Vec<&str> = changes(&r, "meta")
        .iter()
        .map(|c| c["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(paths, ["fileSigs[SKILL.md#2]"]);
}
