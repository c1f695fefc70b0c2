//! `reel verify-cassettes --margins`: each count-bound assertion's recorded
//! value against its budget, on committed cassettes whose `assert:` block is
//! extended in a temp copy. The recorded values are checked against counts
//! taken here, independently, from the cassette's own events; the margins
//! against the verdicts `reel replay` reaches on the same budgets.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::support::{self, Failures};
use crate::support::{assert_schema, read_doc};

/// The report order (cowork-harness `COUNT_BOUND_MARGIN_KEYS`).
const KEYS: [&str; 10] = [
    "tool_calls_max",
    "max_tokens",
    "max_cost_usd",
    "max_turns",
    "max_tool_errors",
    "max_redundant_tool_calls",
    "dispatch_count_max",
    "task_count_min",
    "gate_answer_count_min",
    "questions_count_max",
];

fn is_min(key: &str) -> bool {
    key.ends_with("_min")
}

fn committed(name: &str) -> PathBuf {
    support::repo().join("cassettes").join(name)
}

/// A copy of `src` in `dir` with `extra` appended to `scenario.assert`.
fn with_asserts(src: &Path, dir: &Path, name: &str, extra: &[Value]) -> PathBuf {
    let mut doc = read_doc(src);
    let asserts = doc["scenario"]["assert"].as_array_mut().unwrap();
    asserts.extend(extra.iter().cloned());
    let to = dir.join(name);
    std::fs::write(&to, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    to
}

/// What the recording shows for each key, counted straight from the
/// cassette's `events` lines (top-level assistant/user messages and the
/// `result` line), without reel's evidence code. `None`: not derivable.
fn shown(doc: &Map<String, Value>) -> Map<String, Value> {
    let events: Vec<Value> = doc["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
        .collect();
    let top = |e: &&Value| e["parent_tool_use_id"].is_null();
    let blocks = |ty: &'static str| {
        events
            .iter()
            .filter(top)
            .filter(move |e| e["type"] == ty)
            .flat_map(|e| {
                e["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
    };
    let tool_uses: Vec<Value> = blocks("assistant")
        .filter(|b| b["type"] == "tool_use")
        .collect();
    let results: Vec<Value> = blocks("user")
        .filter(|b| b["type"] == "tool_result")
        .collect();
    let errored = |id: &Value| {
        results
            .iter()
            .any(|r| &r["tool_use_id"] == id && r["is_error"] == true)
    };
    let answered = |id: &Value| results.iter().any(|r| &r["tool_use_id"] == id);
    let named = |name: &'static str| tool_uses.iter().filter(move |b| b["name"] == name);
    let sub_questions = |b: &Value| b["input"]["questions"].as_array().map_or(0, Vec::len);
    let mut redundant = 0;
    for (i, b) in tool_uses.iter().enumerate() {
        let same = |o: &Value| o["name"] == b["name"] && o["input"] == b["input"];
        if tool_uses[..i].iter().any(same) {
            redundant += 1;
        }
    }
    let result = events.iter().rev().find(|e| e["type"] == "result").unwrap();
    let usage = &result["usage"];
    let has_control_out = doc
        .get("controlOut")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    let mut m = Map::new();
    m.insert("tool_calls_max".into(), json!(tool_uses.len()));
    m.insert(
        "max_tokens".into(),
        json!(usage["input_tokens"].as_f64().unwrap() + usage["output_tokens"].as_f64().unwrap()),
    );
    m.insert("max_cost_usd".into(), result["total_cost_usd"].clone());
    m.insert("max_turns".into(), result["num_turns"].clone());
    m.insert(
        "max_tool_errors".into(),
        json!(tool_uses.iter().filter(|b| errored(&b["id"])).count()),
    );
    m.insert("max_redundant_tool_calls".into(), json!(redundant));
    m.insert(
        "dispatch_count_max".into(),
        json!(named("Task").chain(named("Agent")).count()),
    );
    m.insert("task_count_min".into(), json!(named("TaskCreate").count()));
    m.insert(
        "gate_answer_count_min".into(),
        json!(if has_control_out {
            named("AskUserQuestion")
                .filter(|b| answered(&b["id"]) && !errored(&b["id"]))
                .map(sub_questions)
                .sum::<usize>()
        } else {
            0
        }),
    );
    m.insert(
        "questions_count_max".into(),
        if has_control_out {
            json!(named("AskUserQuestion").map(sub_questions).sum::<usize>())
        } else {
            Value::Null
        },
    );
    m
}

/// `verify-cassettes PATH… --margins --output-format json` (staleness off:
/// the temp copies are moved cassettes); its stdout, schema-checked.
fn margins_json(paths: &[&Path]) -> Value {
    let out = support::reel()
        .arg("verify-cassettes")
        .args(paths)
        .args(["--margins", "--skip-staleness", "--output-format", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_schema("verify-cassettes.json", &v);
    v
}

fn rows_of<'a>(v: &'a Value, file: &Path) -> &'a [Value] {
    let file = file.display().to_string();
    v["margins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["file"] == file.as_str())
        .unwrap_or_else(|| panic!("no margins item for {file}: {v}"))["rows"]
        .as_array()
        .unwrap()
}

/// The headroom the original reports: budget/recorded for a ceiling,
/// recorded/budget for a floor; infinite (JSON null) over a zero.
fn expected_margin(key: &str, budget: f64, recorded: f64) -> Option<f64> {
    let (num, den) = if is_min(key) {
        (recorded, budget)
    } else {
        (budget, recorded)
    };
    (den != 0.0).then(|| num / den)
}

/// A budget per key with some headroom (validation wants min keys ≥ 1).
fn budgets(shown: &Map<String, Value>) -> Vec<Value> {
    KEYS.iter()
        .map(|k| {
            let r = shown[*k].as_f64().unwrap_or(1.0);
            let b = match *k {
                "max_cost_usd" => json!(r * 2.0),
                k if is_min(k) => json!(1),
                _ => json!(r as u64 + 3),
            };
            json!({ *k: b })
        })
        .collect()
}

#[test]
fn recorded_values_are_what_the_cassettes_show() {
    let dir = tempfile::tempdir().unwrap();
    // A question with its gate answer, and a tool error.
    for name in ["pick-format.cassette.json", "bash-policy.cassette.json"] {
        let src = committed(name);
        let truth = shown(&read_doc(&src));
        let copy = with_asserts(&src, dir.path(), name, &budgets(&truth));
        let v = margins_json(&[&copy]);
        let rows = rows_of(&v, &copy);
        let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
        assert_eq!(keys, KEYS, "{name}: every key once, in report order");
        for row in rows {
            let key = row["key"].as_str().unwrap();
            assert_eq!(
                row["kind"],
                if is_min(key) { "min" } else { "max" },
                "{name} {key}"
            );
            assert_eq!(
                row["recorded"].as_f64(),
                truth[key].as_f64(),
                "{name} {key}: recorded"
            );
            let budget = row["budget"].as_f64().unwrap();
            let recorded = row["recorded"].as_f64().unwrap();
            assert_eq!(
                row["margin"].as_f64(),
                expected_margin(key, budget, recorded),
                "{name} {key}: margin"
            );
        }
    }
    // The counts are not all zero: the comparison above can fail.
    let pick = shown(&read_doc(&committed("pick-format.cassette.json")));
    assert_eq!(pick["tool_calls_max"], 2);
    assert_eq!(pick["questions_count_max"], 1);
    assert_eq!(pick["gate_answer_count_min"], 1);
    let bash = shown(&read_doc(&committed("bash-policy.cassette.json")));
    assert_eq!(bash["max_tool_errors"], 1);
}

/// The margin and the assertion read the same count: a budget at the
/// recorded value passes on replay with margin 1.0, one step past it fails
/// with a margin under 1.
#[test]
fn margins_agree_with_the_replay_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let src = committed("pick-format.cassette.json");
    let truth = shown(&read_doc(&src));
    // (key, budget, should pass)
    let mut cases: Vec<(&str, Value, bool)> = vec![];
    for key in KEYS {
        let r = truth[key].as_f64().unwrap();
        if is_min(key) {
            cases.push((key, json!(r as u64 + 1), false));
            if r >= 1.0 {
                cases.push((key, json!(r as u64), true));
            }
        } else if key == "max_cost_usd" {
            cases.push((key, json!(r), true));
            cases.push((key, json!(r / 2.0), false));
        } else {
            cases.push((key, json!(r as u64), true));
            if r >= 1.0 {
                cases.push((key, json!(r as u64 - 1), false));
            }
        }
    }
    let mut failures = Failures::new();
    let mut ran = 0;
    for (i, (key, budget, pass)) in cases.iter().enumerate() {
        ran += 1;
        failures.case(format!("{key}: {budget}"), || {
            let copy = with_asserts(
                &src,
                dir.path(),
                &format!("c{i}.cassette.json"),
                &[json!({ *key: budget })],
            );
            let v = margins_json(&[&copy]);
            let row = &rows_of(&v, &copy)[0];
            assert_eq!(row["key"], *key);
            // null with a recorded value = infinite headroom.
            let margin = row["margin"].as_f64().unwrap_or(f64::INFINITY);
            assert_eq!(margin >= 1.0, *pass, "{key}: {budget} → margin {margin}");

            let out = support::reel()
                .args(["replay", copy.to_str().unwrap(), "--output-format", "json"])
                .output()
                .unwrap();
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            let verdict = r["results"][0]["assertions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["assertion"].get(*key).is_some())
                .unwrap_or_else(|| panic!("{key}: no replay verdict: {r}"));
            assert_eq!(verdict["pass"], *pass, "{key}: {budget}: {verdict}");
        });
    }
    failures.assert_none(ran);
}

#[test]
fn text_report_shows_recorded_budget_and_margin() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = read_doc(&committed("pick-format.cassette.json"));
    let asserts = doc["scenario"]["assert"].as_array_mut().unwrap();
    asserts.extend([
        json!({"tool_calls_max": 5}),
        json!({"max_tokens": 4000}),
        json!({"dispatch_count_max": 2}),
        json!({"tool_calls_max": 99}), // a second entry: the first gives the budget
    ]);
    let with_gate = dir.path().join("a.cassette.json");
    std::fs::write(&with_gate, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    // Without controlOut the re-drive answers no question: not derivable.
    doc.shift_remove("controlOut");
    doc["scenario"]["assert"] = json!([{"questions_count_max": 1}]);
    let legacy = dir.path().join("b.cassette.json");
    std::fs::write(&legacy, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();

    let out = support::reel()
        .args(["verify-cassettes", dir.path().to_str().unwrap()])
        .args(["--margins", "--skip-staleness"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let block = stderr
        .split_once("\ncount-budget margins (recorded vs budget; a SINGLE-SAMPLE estimate — one cassette ≠ variance, use `run --repeat` for a distribution):\n")
        .unwrap_or_else(|| panic!("no margins block:\n{stderr}"))
        .1;
    let expected = format!(
        "  {a}:\n\
         \x20   tool_calls_max: recorded=2, budget=5 → margin 2.5×\n\
         \x20   max_tokens: recorded=3150, budget=4000 → margin 1.3×  ⚠ tight\n\
         \x20   dispatch_count_max: recorded=0, budget=2 → margin ∞\n\
         \x20 {b}:\n\
         \x20   questions_count_max: recorded=unavailable, budget=1 → margin n/a\n\
         2 passed, 0 failed\n",
        a = with_gate.display(),
        b = legacy.display()
    );
    assert_eq!(block, expected, "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "no colour codes: {stderr}");

    let v = margins_json(&[&legacy]);
    assert_eq!(
        rows_of(&v, &legacy),
        [
            json!({"key": "questions_count_max", "kind": "max", "budget": 1, "recorded": null, "margin": null})
        ]
    );
}

#[test]
fn cassettes_without_count_bound_keys_get_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["write-note.cassette.json", "pick-features.cassette.json"] {
        std::fs::copy(committed(name), dir.path().join(name)).unwrap();
    }
    // An unreadable cassette is reported in results[], never in margins[].
    std::fs::write(dir.path().join("bad.cassette.json"), "{").unwrap();
    let v = margins_json(&[dir.path()]);
    assert_eq!(v["margins"], json!([]));
    assert_eq!(v["results"].as_array().unwrap().len(), 3);

    let out = support::reel()
        .args(["verify-cassettes", dir.path().to_str().unwrap()])
        .args(["--margins", "--skip-staleness"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.ends_with("\n2 passed, 0 failed, 1 error\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("use `run --repeat` for a distribution):\n  (no count-bound assertions in the checked cassette(s))\n"),
        "{stderr}"
    );

    // Without the flag there is no margins key at all.
    let out = support::reel()
        .args(["verify-cassettes", dir.path().to_str().unwrap()])
        .args(["--skip-staleness", "--output-format", "json"])
        .output()
        .unwrap();
    let plain: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(plain.get("margins").is_none(), "{plain}");
}

/// `--margins` is diagnostic: a blown budget never changes `ok` or the exit
/// code of the gate.
#[test]
fn margins_never_change_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let copy = with_asserts(
        &committed("bash-policy.cassette.json"),
        dir.path(),
        "a.cassette.json",
        &[json!({"tool_calls_max": 1})],
    );
    let run = |margins: bool| {
        let mut cmd = support::reel();
        cmd.args([
            "verify-cassettes",
            copy.to_str().unwrap(),
            "--skip-staleness",
        ])
        .args(["--output-format", "json"]);
        if margins {
            cmd.arg("--margins");
        }
        let out = cmd.output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), v)
    };
    let (rc_plain, plain) = run(false);
    let (rc_margins, with) = run(true);
    assert_eq!(rc_plain, rc_margins);
    assert_eq!(plain["ok"], with["ok"]);
    assert_eq!(plain["results"], with["results"]);
    let row = &rows_of(&with, &copy)[0];
    assert_eq!(row["recorded"], 2);
    assert_eq!(row["margin"], 0.5);
}
