//! Scenario `metrics:` (cowork-harness after 4.3): numbers read from the JSON
//! files a run wrote, reported beside the verdict as `{id, value}` or
//! `{id, unavailable}` and re-measured from the artifact manifest on replay.
//!
//! The cases follow the original's `src/metrics.ts` (its `measure()` gates,
//! one reason each, in its order) and docs/hillclimb.md "Numbers a scenario
//! declares" (never in the verdict; an omitted `min` is 0); the original's
//! metrics test file is not in the reference index, so each case cites the
//! gate it exercises. Cassettes are the bundled `csv-stats` recording
//! (`outputs/stats.json` = `{"rows": 3, "total": 245}`, written by the run;
//! `uploads/sales.csv` an uploaded input) edited with the kit's `CassetteDoc`.

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture, RunExt};

const CASSETTE: &str = "cassettes/csv-stats.cassette.json";
const STATS: &str = "outputs/stats.json";

/// The example tree and the csv-stats cassette, with `edit` applied to it.
fn fixture(edit: impl FnOnce(CassetteDoc) -> CassetteDoc) -> Fixture {
    let fx = Fixture::new();
    support::example_tree(fx.root());
    fx.dirs(&["cassettes"]);
    let doc = CassetteDoc::from_file(&support::repo().join(CASSETTE));
    edit(doc).write(&fx.path(CASSETTE));
    fx
}

fn metric(id: &str, artifact: &str, path: &str) -> Value {
    json!({"id": id, "artifact": artifact, "path": path, "better": "higher", "scale": 1000})
}

/// The cassette with these frozen `metrics:`.
fn with_metrics(metrics: Value) -> impl FnOnce(CassetteDoc) -> CassetteDoc {
    move |doc| doc.set("scenario.metrics", metrics)
}

/// `reel replay --output-format json`: (exit code, the one result, stderr).
fn replay(fx: &Fixture) -> (i32, Value, String) {
    let run = support::reel()
        .current_dir(fx.root())
        .args(["replay", CASSETTE, "--output-format", "json"])
        .run();
    let v = run.json();
    support::assert_schema("replay.json", &v);
    (run.code, v["results"][0].clone(), run.stderr)
}

/// The cassette with `outputs/stats.json` recorded as `body` (its size and
/// hash to match: the loader refuses a body that does not hash to its entry).
fn with_stats_body(body: &str) -> impl FnOnce(CassetteDoc) -> CassetteDoc {
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes()));
    let (len, body) = (body.len(), body.to_owned());
    move |doc| {
        with_metrics(json!([metric("m", STATS, "rows")]))(doc)
            .set("artifacts.0.body", json!(body))
            .set("artifacts.0.bytes", json!(len))
            .set("artifacts.0.sha256", json!(sha))
    }
}

/// The outcome of the only declared metric.
fn only(fx: &Fixture) -> (Value, String) {
    let (_, result, stderr) = replay(fx);
    let metrics = result["metrics"]
        .as_array()
        .expect("a metrics list")
        .clone();
    assert_eq!(metrics.len(), 1, "{metrics:?}");
    (metrics[0].clone(), stderr)
}

fn unavailable(fx: &Fixture) -> String {
    let (m, _) = only(fx);
    assert!(m.get("value").is_none(), "{m}");
    m["unavailable"].as_str().expect("a reason").to_owned()
}

/// measure(): every gate passes → `{id, value}`, in declaration order, an
/// integer written as JavaScript writes it; `unbounded` and `scale` alike.
#[test]
fn a_value_is_read_at_the_dotted_path() {
    let fx = fixture(with_metrics(json!([
        metric("rows", STATS, "rows"),
        {"id": "total", "artifact": STATS, "path": "total", "better": "lower", "unbounded": true},
    ])));
    let (code, result, _) = replay(&fx);
    assert_eq!(code, 0);
    assert_eq!(
        result["metrics"],
        json!([{"id": "rows", "value": 3}, {"id": "total", "value": 245}])
    );
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
    assert_eq!(at("metrics"), at("assertions") + 1, "beside the assertions");
}

/// docs/hillclimb.md: a number is never the verdict — a metric that cannot
/// be measured, or one outside `[min, scale]`, leaves `ok` and the exit code
/// as they were without it.
#[test]
fn metrics_never_change_the_verdict() {
    let (base_code, base, _) = replay(&fixture(|d| d));
    assert!(base.get("metrics").is_none(), "none declared, no key");
    let fx = fixture(with_metrics(json!([
        metric("gone", "outputs/nope.json", "rows"),
        {"id": "tiny", "artifact": STATS, "path": "total", "better": "higher", "scale": 1,
            "min": 0},
    ])));
    let (code, result, _) = replay(&fx);
    assert_eq!(code, base_code);
    assert_eq!(result["verdict"], base["verdict"]);
    assert_eq!(result["outcome"], base["outcome"]);
    assert_eq!(result["metrics"][1], json!({"id": "tiny", "value": 245}));
}

/// metricsFor(): an empty list is the same as none — no `metrics` key.
#[test]
fn an_empty_list_reports_nothing() {
    let (_, result, _) = replay(&fixture(with_metrics(json!([]))));
    assert!(result.get("metrics").is_none(), "{result}");
}

/// gate `not_found` / `unsafe` / not a regular file → `missing_artifact`.
#[test]
fn a_missing_file_a_directory_or_an_escaping_path_is_missing_artifact() {
    for artifact in [
        "outputs/nope.json",
        "outputs",
        "../outside.json",
        "/etc/passwd",
    ] {
        let fx = fixture(with_metrics(json!([metric("m", artifact, "rows")])));
        assert_eq!(unavailable(&fx), "missing_artifact", "{artifact}");
    }
}

/// authorshipOf() → untouched, and body-less `input` / `fixture` entries:
/// the run did not write the file → `pre_run`, with no warning (it states
/// what the run did).
#[test]
fn a_file_the_run_did_not_write_is_pre_run() {
    let fx = fixture(with_metrics(json!([metric("m", "uploads/sales.csv", "x")])));
    let (m, stderr) = only(&fx);
    assert_eq!(m, json!({"id": "m", "unavailable": "pre_run"}));
    assert!(!stderr.contains("metric \"m\""), "{stderr}");

    // The run rewrote the file with the bytes it had before: untouched.
    let sha = "9d8370756df56e400dc3aa980bd740b2ea7fa56ca041011374e0106ad4b92698";
    let fx = fixture(|d| {
        with_metrics(json!([metric("m", STATS, "rows")]))(d).edit(|doc| {
            doc["preRunHashes"]
                .as_object_mut()
                .unwrap()
                .insert(STATS.into(), json!(sha));
        })
    });
    assert_eq!(unavailable(&fx), "pre_run");
}

/// authorshipOf() undecidable: no pre-run hash manifest, or a scrubbed
/// entry → `pre_run`, evidence-limited, so replay warns.
#[test]
fn a_cassette_that_cannot_tell_who_wrote_the_file_is_pre_run_with_a_warning() {
    let no_baseline =
        fixture(|d| with_metrics(json!([metric("m", STATS, "rows")]))(d).remove("preRunHashes"));
    let (m, stderr) = only(&no_baseline);
    assert_eq!(m["unavailable"], "pre_run");
    assert!(
        stderr.contains("::warning:: [replay] metric \"m\" unavailable (pre_run): the cassette has no pre-run hash manifest"),
        "{stderr}"
    );
    let scrubbed = fixture(|d| {
        with_metrics(json!([metric("m", STATS, "rows")]))(d).edit(|doc| {
            doc["preRunHashes"]
                .as_object_mut()
                .unwrap()
                .insert(STATS.into(), Value::Null);
        })
    });
    let (m, stderr) = only(&scrubbed);
    assert_eq!(m["unavailable"], "pre_run");
    assert!(stderr.contains("pre-run hash was scrubbed"), "{stderr}");
}

/// Body-less entries: `readonly` → readonly; `size` → size (warned: raise the
/// cap), unless the file is untouched (then pre_run); `unreadable` →
/// missing_artifact (warned).
#[test]
fn body_less_entries_say_why() {
    let truncated = |reason: &str| {
        let reason = reason.to_owned();
        fixture(move |d| {
            with_metrics(json!([metric("m", STATS, "rows")]))(d).edit(|doc| {
                let e = doc["artifacts"][0].as_object_mut().unwrap();
                e.remove("body");
                e.insert("truncated".into(), json!(true));
                e.insert("truncationReason".into(), json!(reason));
            })
        })
    };
    assert_eq!(unavailable(&truncated("readonly")), "readonly");
    let (m, stderr) = only(&truncated("size"));
    assert_eq!(m["unavailable"], "size");
    assert!(stderr.contains("raise --max-artifact-bytes"), "{stderr}");
    let (m, stderr) = only(&truncated("unreadable"));
    assert_eq!(m["unavailable"], "missing_artifact");
    assert!(stderr.contains("its body was not recorded"), "{stderr}");
}

/// A cassette without an `artifacts` manifest: nothing can be read →
/// missing_artifact, with a warning that the recording is why.
#[test]
fn no_manifest_is_missing_artifact_with_a_warning() {
    let fx = fixture(|d| with_metrics(json!([metric("m", STATS, "rows")]))(d).remove("artifacts"));
    let (m, stderr) = only(&fx);
    assert_eq!(m["unavailable"], "missing_artifact");
    assert!(
        stderr.contains("the cassette has no artifact manifest"),
        "{stderr}"
    );
}

/// JSON.parse fails → `not_json`.
#[test]
fn a_body_that_is_not_json_is_not_json() {
    let fx = fixture(with_stats_body("rows: 3\n"));
    assert_eq!(unavailable(&fx), "not_json");
}

/// resolveDotPath(): the final key absent, or an intermediate that is
/// missing or not an object → `missing_path`.
#[test]
fn a_path_that_does_not_resolve_is_missing_path() {
    for path in ["columns", "rows.count", "a.b"] {
        let fx = fixture(with_metrics(json!([metric("m", STATS, path)])));
        assert_eq!(unavailable(&fx), "missing_path", "{path}");
    }
}

/// typeof value !== "number" or not finite → `not_a_number` (never a
/// coerced string, never 0).
#[test]
fn a_value_that_is_not_a_finite_number_is_not_a_number() {
    for body in [
        r#"{"rows": "3"}"#,
        r#"{"rows": null}"#,
        r#"{"rows": [3]}"#,
        r#"{"rows": 1e999}"#,
    ] {
        let fx = fixture(with_stats_body(body));
        assert_eq!(unavailable(&fx), "not_a_number", "{body}");
    }
}

/// lane remote → `remote`, before any file is looked at.
#[test]
fn a_remote_lane_is_remote() {
    let fx = fixture(|d| {
        with_metrics(json!([metric("m", STATS, "rows")]))(d).set("scenario.lane", json!("remote"))
    });
    assert_eq!(unavailable(&fx), "remote");
}

/// The status line notes the measured numbers; `--verbose`'s footer lists
/// them under the guards.
#[test]
fn the_text_report_lists_the_metrics() {
    let fx = fixture(with_metrics(json!([
        metric("rows", STATS, "rows"),
        metric("cols", STATS, "columns"),
    ])));
    let run = support::reel()
        .current_dir(fx.root())
        .args(["replay", CASSETTE])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let line = "metrics: rows 3 · cols unavailable (missing_path: \"columns\" is absent)\n";
    assert!(
        run.stderr.contains(&format!("    note: {line}")),
        "{}",
        run.streams()
    );
    let run = support::reel()
        .current_dir(fx.root())
        .args(["replay", CASSETTE, "--verbose"])
        .run();
    assert!(
        run.stderr.contains("guards: ") && run.stderr.contains(&format!("\n   {line}")),
        "{}",
        run.streams()
    );
}

/// A frozen block this build cannot read is not measured, with a warning;
/// the assertions still decide the verdict.
#[test]
fn a_malformed_frozen_block_is_warned_about_not_measured() {
    let fx = fixture(with_metrics(
        json!([{"id": "m", "artifact": STATS, "path": "rows"}]),
    ));
    let (code, result, stderr) = replay(&fx);
    assert_eq!(code, 0);
    assert!(result.get("metrics").is_none(), "{result}");
    assert!(
        stderr.contains("frozen scenario metrics are not measured: metrics[0].better: required"),
        "{stderr}"
    );
}

/// `--assert-from` measures the on-disk scenario's metrics (the same
/// scenario the assertions come from); `metrics:` does not shape the
/// recording, so adding one is no drift.
#[test]
fn reasserting_measures_the_on_disk_metrics() {
    let fx = fixture(|d| d);
    let yaml = fx.read("scenarios/csv-stats.yaml")
        + "metrics:\n  - {id: total, artifact: outputs/stats.json, path: total, better: higher, scale: 1000, min: 10}\n";
    fx.write("scenarios/csv-stats.yaml", yaml);
    let run = support::reel()
        .current_dir(fx.root())
        .args([
            "replay",
            CASSETTE,
            "--assert-from",
            "scenarios/csv-stats.yaml",
        ])
        .args(["--output-format", "json"])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    assert_eq!(
        run.json()["results"][0]["metrics"],
        json!([{"id": "total", "value": 245}])
    );
}

/// The loader refuses a bad block with the file, the field and the fix
/// (exit 2), each rule of the declaration.
#[test]
fn a_bad_metrics_block_is_a_load_error_naming_the_field() {
    let cases = [
        (
            "[{id: a, artifact: x.json, path: p, better: up, scale: 1}]",
            "metrics[0].better: \"up\" is not `higher` or `lower`",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: higher}]",
            "metrics[0]: `scale` or `unbounded: true` is required",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: higher, scale: 1, unbounded: true}]",
            "are both set",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: higher, scale: 1, min: 1}]",
            "metrics[0].scale: must be above `min` (1 vs 1)",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: lower, unbounded: true, min: 0}]",
            "metrics[0].min: an unbounded metric has no range",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: lower, unbounded: true}, {id: A, artifact: y.json, path: q, better: lower, unbounded: true}]",
            "metrics[1].id: \"A\" is already declared by metrics[0]",
        ),
        (
            "[{id: a, artifact: x.json, better: higher, scale: 1}]",
            "metrics[0].path: required",
        ),
        (
            "[{id: a, artifact: x.json, path: p, better: higher, scale: 1, weight: 2}]",
            "metrics[0].weight: unknown field",
        ),
        ("{id: a}", "`metrics` must be a list"),
    ];
    let fx = fixture(|d| d);
    let base = fx.read("scenarios/csv-stats.yaml");
    for (block, want) in cases {
        fx.write("scenarios/bad.yaml", format!("{base}metrics: {block}\n"));
        let run = support::reel()
            .current_dir(fx.root())
            .args(["replay", CASSETTE, "--assert-from", "scenarios/bad.yaml"])
            .run();
        assert_eq!(run.code, 2, "{block}\n{}", run.streams());
        assert!(
            run.stderr.contains("scenarios/bad.yaml") && run.stderr.contains(want),
            "{block}: want {want}\n{}",
            run.streams()
        );
    }
}

/// The frozen scenario keeps `metrics:` as authored, its fields in the
/// declaration order (what a cassette freezes and replay re-measures).
#[test]
fn the_frozen_scenario_carries_the_metrics() {
    let fx = Fixture::new();
    let path = fx.write(
        "s.yaml",
        "prompt: p\nmetrics:\n  - {scale: 5, better: higher, path: a.b, artifact: outputs/r.json, id: f1}\n",
    );
    let s = reel::scenario::Scenario::load_authored(&path).unwrap();
    assert_eq!(s.metrics.len(), 1);
    let frozen = &s.frozen["metrics"][0];
    let keys: Vec<&String> = frozen.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "artifact", "path", "better", "scale"]);
    let order: Vec<&String> = s.frozen.keys().collect();
    assert_eq!(order.last().map(|k| k.as_str()), Some("metrics"));
}

/// `reel scaffold` keeps the recording's declared metrics in the starter
/// scenario, which loads (and so re-records) with them.
#[test]
fn a_scaffold_keeps_the_declared_metrics() {
    let fx = fixture(with_metrics(json!([metric("rows", STATS, "rows")])));
    let run = support::reel()
        .current_dir(fx.root())
        .args(["scaffold", CASSETTE, "--out", "scenarios/again.yaml"])
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let s = reel::scenario::Scenario::load_authored(&fx.path("scenarios/again.yaml")).unwrap();
    assert_eq!(s.metrics.len(), 1);
    assert_eq!(s.frozen["metrics"], json!([metric("rows", STATS, "rows")]));
}

/// `reel lint` reports a refused entry at its line (L000), and every
/// refused entry, not only the first.
#[test]
fn lint_points_at_the_refused_entry() {
    let fx = Fixture::new();
    fx.write(
        "s.yaml",
        "prompt: p\nassert:\n  - result: success\nmetrics:\n  - {id: a, artifact: x.json, path: p, better: higher, scale: 1}\n  - {id: b, artifact: x.json, path: p, better: up, scale: 1}\n  - {id: c, artifact: x.json, path: p, better: lower}\n",
    );
    let run = support::reel()
        .current_dir(fx.root())
        .args(["lint", "s.yaml"])
        .run();
    assert_eq!(run.code, 1, "{}", run.streams());
    assert!(
        run.stderr.contains("s.yaml:6: error[L000 does-not-load]: the scenario does not load: metrics[1].better: \"up\" is not `higher` or `lower`"),
        "{}",
        run.streams()
    );
    assert!(
        run.stderr.contains("s.yaml:7: error[L000 does-not-load]: the scenario does not load: metrics[2]: `scale` or `unbounded: true` is required"),
        "{}",
        run.streams()
    );
}

/// End to end with the real agent: `record` freezes the declared metrics in
/// the cassette (a plain scenario still stamps v12: `metrics:` needs no
/// newer reader), and `replay` measures them from what the run wrote.
#[test]
fn a_recording_freezes_the_metrics_and_replay_measures_them() {
    let claude = support::require!(support::claude_bin());
    let fx = Fixture::new();
    support::example_tree(fx.root());
    let yaml = fx.read("scenarios/csv-stats.yaml")
        + "metrics:\n  - {id: rows, artifact: outputs/stats.json, path: rows, better: higher, scale: 100}\n  - {id: input, artifact: uploads/sales.csv, path: x, better: lower, unbounded: true}\n";
    fx.write("scenarios/csv-stats.yaml", yaml);
    let run = support::reel()
        .current_dir(fx.root())
        .args(["record", "scenarios/csv-stats.yaml"])
        .env("REEL_CLAUDE_BIN", &claude)
        .env("REEL_RUNS_DIR", fx.path("runs"))
        .env_remove("ANTHROPIC_API_KEY")
        .run();
    assert_eq!(run.code, 0, "{}", run.streams());
    let doc = support::read_doc(&fx.path(CASSETTE));
    assert_eq!(doc["cassetteVersion"], json!(12));
    assert_eq!(
        doc["scenario"]["metrics"][0],
        json!({"id": "rows", "artifact": STATS, "path": "rows", "better": "higher", "scale": 100})
    );
    let (code, result, _) = replay(&fx);
    assert_eq!(code, 0);
    assert_eq!(
        result["metrics"],
        json!([{"id": "rows", "value": 3}, {"id": "input", "unavailable": "pre_run"}])
    );
}

/// gate `link`: a symlink or hard link at record time is never counted as
/// written by the run → `pre_run`, evidence-limited (warned).
#[test]
fn a_link_is_pre_run_with_a_warning() {
    let fx = fixture(|d| {
        with_metrics(json!([metric("m", STATS, "rows")]))(d).edit(|doc| {
            let e = doc["artifacts"][0].as_object_mut().unwrap();
            e.remove("body");
            e.insert("linkKind".into(), json!("symlink"));
        })
    });
    let (m, stderr) = only(&fx);
    assert_eq!(m["unavailable"], "pre_run");
    assert!(
        stderr.contains("symlink or hard link at record time"),
        "{stderr}"
    );
}
