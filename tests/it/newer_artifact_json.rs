//! `artifact_json` as cowork-harness v15 extends it: a glob `artifact` with
//! `match: each | any` (test/artifact-json-glob.test.ts) and a JSON Schema
//! the value must match (test/artifact-json-schema.test.ts), on cassettes
//! built with the kit's `CassetteDoc`. Each case cites the original case it
//! follows.

use std::path::Path;

use reel::assert::{AssertionOutcome, Context, catalog, check};
use reel::cassette::Cassette;
use reel::evidence::RunRecord;
use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, RunExt};

const GLOB: &str = "outputs/artifacts/runs/*/run_status.json";

fn entry(path: &str, body: &str) -> Value {
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes()));
    json!({"path": path, "bytes": body.len(), "sha256": sha, "body": body})
}

fn status(s: &str) -> String {
    json!({"status": s}).to_string()
}

/// A cassette whose manifest holds `entries`.
fn with_artifacts(entries: Vec<Value>) -> Cassette {
    let doc = CassetteDoc::minimal()
        .set("cassetteVersion", json!(15))
        .set("artifacts", Value::Array(entries));
    Cassette::unchecked("t.cassette.json", doc.into_map(), 15)
}

fn runs(statuses: &[&str]) -> Vec<Value> {
    statuses
        .iter()
        .enumerate()
        .map(|(i, s)| {
            entry(
                &format!("outputs/artifacts/runs/r{}/run_status.json", i + 1),
                &status(s),
            )
        })
        .collect()
}

fn one(c: &Cassette, item: Value) -> AssertionOutcome {
    catalog::validate(&item).unwrap_or_else(|e| panic!("{item}: {e}"));
    let run = RunRecord::from_cassette(c);
    let ctx = Context::new(c, &run, Some(Path::new("/tmp/root")));
    check(item.as_object().unwrap(), &ctx)
}

fn passes(c: &Cassette, item: Value) {
    let o = one(c, item.clone());
    assert!(o.pass, "{item} failed: {}", o.message);
}

fn fails(c: &Cassette, item: Value) -> String {
    let o = one(c, item.clone());
    assert!(!o.pass, "{item} passed: {:?}", o.evidence);
    o.message
}

fn glob(m: &str) -> Value {
    json!({"artifact_json": {"artifact": GLOB, "match": m, "path": "status", "equals": "ok"}})
}

/// "each: passes when every match satisfies", "each: one failing match
/// fails, and the message names the passing and the failing file", "any:
/// one satisfying match passes", "any: no satisfying match fails and lists
/// the files", "matching is case-sensitive".
#[test]
fn a_glob_is_judged_over_each_or_any_match() {
    passes(&with_artifacts(runs(&["ok", "ok"])), glob("each"));
    let m = fails(&with_artifacts(runs(&["ok", "failed"])), glob("each"));
    assert_eq!(
        m,
        "artifact_json: 1 of 2 file(s) matching \"outputs/artifacts/runs/*/run_status.json\" \
         (match: each) failed — outputs/artifacts/runs/r2/run_status.json: artifact_json: \
         \"status\" = \"failed\", expected \"ok\" (passed: outputs/artifacts/runs/r1/run_status.json)"
    );
    passes(&with_artifacts(runs(&["failed", "ok"])), glob("any"));
    let m = fails(&with_artifacts(runs(&["failed", "failed"])), glob("any"));
    assert!(
        m.starts_with("artifact_json: none of the 2 file(s) matching")
            && m.contains("runs/r1/run_status.json")
            && m.contains("runs/r2/run_status.json"),
        "{m}"
    );
    let folded = with_artifacts(vec![entry(
        "outputs/artifacts/runs/r1/Run_Status.json",
        &status("ok"),
    )]);
    assert!(fails(&folded, glob("any")).contains("no file matches"));
}

/// "zero matches fails, naming the glob and what the nearest directory
/// holds", "a file outside the user-visible roots never matches", "more
/// than 200 matches is evidence-unavailable", "exactly 200 matches is
/// evaluated", "an unsafe glob fails as unsafe".
#[test]
fn zero_too_many_and_unsafe_globs() {
    let c = with_artifacts(vec![entry(
        "outputs/artifacts/runs/r1/status.json",
        &status("ok"),
    )]);
    let m = fails(&c, glob("each"));
    assert_eq!(
        m,
        "artifact_json: no file matches \"outputs/artifacts/runs/*/run_status.json\" under the \
         user-visible roots (outputs, .projects); outputs/artifacts/runs/ holds: r1/"
    );
    let outside = with_artifacts(vec![entry(
        "work/artifacts/runs/r1/run_status.json",
        &status("ok"),
    )]);
    let item = json!({"artifact_json": {"artifact": "work/artifacts/runs/*/run_status.json",
        "match": "each", "path": "status", "equals": "ok"}});
    assert!(fails(&outside, item).contains("no file matches"));

    let many = |n: usize| with_artifacts(runs(&vec!["ok"; n]));
    passes(&many(200), glob("each"));
    let m = fails(&many(201), glob("each"));
    assert!(
        m.starts_with("evidence unavailable:") && m.contains("200"),
        "{m}"
    );
    for artifact in [
        "../outputs/*.json",
        "/outputs/*.json",
        "outputs/../../*.json",
    ] {
        let item = json!({"artifact_json": {"artifact": artifact, "match": "each", "path": "x"}});
        assert!(fails(&c, item).contains("unsafe"), "{artifact}");
    }
    // "a walk deeper than the depth bound is evidence-unavailable".
    let deep: Vec<String> = (0..40).map(|i| format!("d{i}")).collect();
    let c = with_artifacts(vec![
        entry("outputs/x/run_status.json", &status("ok")),
        entry(
            &format!("outputs/{}/run_status.json", deep.join("/")),
            &status("ok"),
        ),
    ]);
    let item = json!({"artifact_json": {"artifact": "outputs/**/run_status.json",
        "match": "each", "path": "status", "equals": "ok"}});
    assert!(fails(&c, item).starts_with("evidence unavailable:"));
}

/// "replay parity on a cassette with a link entry and an over-cap entry":
/// each is evidence-unavailable naming both; any passes on the regular
/// match; any without a pass is evidence-unavailable, not a plain fail.
#[test]
fn link_and_body_less_matches_are_unavailable() {
    let link = json!({"path": "outputs/artifacts/runs/r2/run_status.json", "bytes": 0,
        "sha256": "b".repeat(64), "linkKind": "symlink"});
    let big = json!({"path": "outputs/artifacts/runs/r3/run_status.json", "bytes": 10485761,
        "sha256": "c".repeat(64), "truncated": true, "truncationReason": "size"});
    let mut entries = runs(&["ok"]);
    entries.extend([link.clone(), big]);
    let c = with_artifacts(entries);
    let m = fails(&c, glob("each"));
    assert!(
        m.starts_with("evidence unavailable: artifact_json: 2 of 3"),
        "{m}"
    );
    assert!(m.contains("runs/r2/run_status.json") && m.contains("runs/r3/run_status.json"));
    passes(&c, glob("any"));
    let c = with_artifacts(vec![runs(&["failed"]).remove(0), link]);
    let m = fails(&c, glob("any"));
    assert!(m.starts_with("evidence unavailable:"), "{m}");
}

/// test/authorship-artifact-json-messages.test.ts ("body-less on replay:
/// fixture"): an untouched binary `workspace_fixture` file recorded
/// hash-only names that cause, byte for byte.
#[test]
fn a_hash_only_fixture_file_names_its_cause() {
    let deck = json!({"path": "outputs/new.json", "bytes": 3, "sha256": "d".repeat(64),
        "truncated": true, "truncationReason": "fixture"});
    let c = with_artifacts(vec![deck]);
    assert_eq!(
        fails(
            &c,
            json!({"artifact_json": {"artifact": "outputs/new.json"}})
        ),
        "evidence unavailable: artifact_json target \"outputs/new.json\" was captured body-less \
         (an untouched binary workspace_fixture file — recorded hash-only; assert artifact_json on \
         what the step writes) — content is not in the cassette, so it cannot be evaluated on \
         replay"
    );
}

/// test/artifact-json-remote-lane.test.ts: on `lane: remote` every form
/// (a literal path, a glob with `each` or `any`, `authored: true`, an unsafe
/// path) is refused on the lane, with `artifact_text`'s reason; the
/// `lane: local` twin passes.
#[test]
fn artifact_json_reads_nothing_on_a_remote_lane() {
    let ok = status("ok");
    let entries = vec![
        entry("outputs/state.json", &ok),
        entry("outputs/runs/a/run_status.json", &ok),
        entry("outputs/runs/b/run_status.json", &ok),
    ];
    let lane = |lane: &str| {
        let doc = CassetteDoc::minimal()
            .set("cassetteVersion", json!(15))
            .set("scenario.lane", json!(lane))
            .set("artifacts", Value::Array(entries.clone()));
        Cassette::unchecked("t.cassette.json", doc.into_map(), 15)
    };
    let each = |m: &str| json!({"artifact_json": {"artifact": "outputs/runs/*/run_status.json", "match": m, "path": "status", "equals": "ok"}});
    let forms = [
        json!({"artifact_json": {"artifact": "outputs/state.json", "path": "status", "equals": "ok"}}),
        each("each"),
        each("any"),
    ];
    let reason = "cannot be evaluated on `lane: remote` — a remote container's filesystem is \
                  not locally observable, so there is no body to";
    for item in &forms {
        passes(&lane("local"), item.clone());
        let m = fails(&lane("remote"), item.clone());
        assert!(
            m.starts_with(&format!("artifact_json {reason} parse")),
            "{m}"
        );
    }
    for item in [
        json!({"artifact_json": {"artifact": "../x.json", "path": "a", "equals": 1}}),
        json!({"artifact_json": {"artifact": "outputs/state.json", "authored": true}}),
    ] {
        let m = fails(&lane("remote"), item);
        assert!(
            m.starts_with(&format!("artifact_json {reason} parse")),
            "{m}"
        );
    }
    // The same reason as artifact_text's, so the two read alike.
    let text = fails(
        &lane("remote"),
        json!({"artifact_text": {"artifact": "outputs/state.json", "contains": ["ok"]}}),
    );
    let json = fails(&lane("remote"), forms[0].clone());
    assert_eq!(
        text.replacen("artifact_text ", "", 1)
            .replace("no body to scan", "no body to read"),
        json.replacen("artifact_json ", "", 1)
            .replace("no body to parse", "no body to read")
    );
}

/// "artifact_json glob — load rules": a glob without `match`, `match` on a
/// literal path, and a `match` other than each | any are load errors; `[`
/// is literal.
#[test]
fn glob_load_rules() {
    let aj = |v: Value| catalog::validate(&json!({ "artifact_json": v }));
    let e = aj(json!({"artifact": GLOB, "path": "status", "equals": "ok"})).unwrap_err();
    assert!(e.contains("match"), "{e}");
    let e = aj(json!({"artifact": "outputs/a.json", "match": "each", "path": "x"})).unwrap_err();
    assert!(e.contains("match"), "{e}");
    assert!(aj(json!({"artifact": GLOB, "match": "all", "path": "status"})).is_err());
    assert!(aj(json!({"artifact": GLOB, "match": "any", "path": "status"})).is_ok());
    assert!(aj(json!({"artifact": "outputs/[a].json", "path": "x"})).is_ok());
}

fn person() -> Value {
    json!({"type": "object", "required": ["name", "age"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}})
}

fn doc(body: Value) -> Cassette {
    with_artifacts(vec![entry("outputs/p.json", &body.to_string())])
}

fn schema_item(extra: Value) -> Value {
    let mut aj = json!({"artifact": "outputs/p.json"});
    aj.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({ "artifact_json": aj })
}

/// "artifact_json.schema — evaluation": a match passes, a mismatch names
/// where; at most 5 errors then how many more; with `path` the schema
/// applies there and an absent path fails; it composes with the other
/// operators; a malformed schema fails instead of throwing.
#[test]
fn schema_evaluation_follows_the_original() {
    passes(
        &doc(json!({"name": "a", "age": 3})),
        schema_item(json!({"schema": person()})),
    );
    let m = fails(
        &doc(json!({"name": "a", "age": -1})),
        schema_item(json!({"schema": person()})),
    );
    assert_eq!(
        m,
        "artifact_json: \"(root)\" in outputs/p.json does not match the schema: /age must be >= 0 \
         (comparison: \">=\", limit: 0)"
    );
    let props: serde_json::Map<String, Value> = "abcdefg"
        .chars()
        .map(|k| (k.to_string(), json!({"type": "string"})))
        .collect();
    let body: serde_json::Map<String, Value> = "abcdefg"
        .chars()
        .map(|k| (k.to_string(), json!(1)))
        .collect();
    let m = fails(
        &doc(Value::Object(body)),
        schema_item(json!({"schema": {"type": "object", "properties": props}})),
    );
    assert_eq!(m.matches("must be string").count(), 5, "{m}");
    assert!(m.ends_with("(+2 more)"), "{m}");
    passes(
        &doc(json!({"me": {"name": "a", "age": 1}})),
        schema_item(json!({"path": "me", "schema": person()})),
    );
    let m = fails(
        &doc(json!({"other": 1})),
        schema_item(json!({"path": "me", "schema": {"not": {"type": "null"}}})),
    );
    assert!(m.contains("\"me\" is not present"), "{m}");
    let both = |equals: i64| {
        schema_item(json!({"path": "age", "equals": equals, "schema": {"type": "integer"}}))
    };
    passes(&doc(json!({"name": "a", "age": 3})), both(3));
    fails(&doc(json!({"name": "a", "age": 3})), both(4));
    // "glob each: one bad file fails; glob any: one good file passes".
    let c = with_artifacts(vec![
        entry(
            "outputs/runs/a/s.json",
            &json!({"name": "a", "age": 1}).to_string(),
        ),
        entry("outputs/runs/b/s.json", &json!({"name": "b"}).to_string()),
    ]);
    let g = |m: &str| json!({"artifact_json": {"artifact": "outputs/runs/*/s.json", "match": m, "schema": person()}});
    assert!(fails(&c, g("each")).contains("outputs/runs/b/s.json"));
    passes(&c, g("any"));
}

/// "artifact_json.schema — load-time refusals" through the catalog: the
/// refusal names the keyword; absent / exists:false with a schema refused.
#[test]
fn schema_load_refusals() {
    let aj = |v: Value| catalog::validate(&schema_item(v));
    assert!(aj(json!({"schema": person()})).is_ok());
    for (schema, why) in [
        (
            json!({"type": "object", "properties": {"m": {"type": "string", "format": "email"}}}),
            "`format`",
        ),
        (json!({"$ref": "https://example.com/s.json"}), "$ref"),
        (json!({"$id": "https://x/s", "type": "object"}), "$id"),
        (json!({"type": "object", "$dynamicRef": "#"}), "$dynamicRef"),
        (json!({"type": "object", "propertys": {}}), "propertys"),
        (json!({}), "checks nothing"),
        (json!(true), "JSON object"),
    ] {
        let e = aj(json!({ "schema": schema })).unwrap_err();
        assert!(e.contains(why), "{schema}: {e}");
    }
    for extra in [json!({"absent": true}), json!({"exists": false})] {
        let mut v = json!({"schema": person(), "path": "a"});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        assert!(aj(v).is_err());
    }
}

/// "artifact_json.schema — {file:} is inlined at load": the frozen schema
/// is judged by `reel replay` with no file (fail twin and pass twin).
#[test]
fn a_frozen_schema_is_judged_by_replay() {
    let fx = support::Fixture::new();
    for (age, code) in [(-1, 1), (1, 0)] {
        let path = fx.path(&format!("s{code}.cassette.json"));
        let body = json!({"name": "a", "age": age}).to_string();
        CassetteDoc::from_file(&support::compat(
            "examples/replays/example-multiselect-gate.cassette.json",
        ))
        .set("cassetteVersion", json!(15))
        .set("artifacts", json!([entry("outputs/p.json", &body)]))
        .set(
            "scenario.assert",
            json!([{"artifact_json": {"artifact": "outputs/p.json", "schema": person()}}]),
        )
        .write(&path);
        let run = support::reel()
            .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
            .run();
        let v = run.json();
        let a = &v["results"][0]["assertions"][0];
        assert_eq!(a["pass"], json!(code == 0), "{v}");
        if code == 1 {
            assert!(a["message"].as_str().unwrap().contains("/age"), "{a}");
        }
        assert_eq!(run.code, code, "{}", run.streams());
    }
}

/// A scenario at `<fx>/scenarios/s.yaml` whose one assertion names its
/// schema by `file`.
fn scenario_with_schema_file(fx: &support::Fixture, file: &str) -> std::path::PathBuf {
    let path = fx.path("scenarios/s.yaml");
    fx.write(
        "scenarios/s.yaml",
        format!(
            "prompt: hi\nassert:\n  - artifact_json: {{artifact: outputs/p.json, schema: {{file: {file}}}}}\n"
        ),
    );
    path
}

/// test/artifact-json-schema.test.ts ("{file:} is inlined at load"): the
/// loaded (and so the frozen) scenario carries the file's schema inline,
/// which replay judges with no file: a mismatch fails naming where, a match
/// passes.
#[test]
fn a_schema_file_is_inlined_at_load() {
    let fx = support::Fixture::new();
    fx.write("scenarios/schemas/person.json", person().to_string());
    let path = scenario_with_schema_file(&fx, "schemas/person.json");
    let s = reel::scenario::Scenario::load_authored(&path).unwrap();
    let item = &s.frozen["assert"][0];
    assert_eq!(item["artifact_json"]["schema"], person());
    std::fs::remove_dir_all(fx.path("scenarios/schemas")).unwrap();
    let m = fails(&doc(json!({"name": "a", "age": -1})), item.clone());
    assert!(m.contains("/age"), "{m}");
    passes(&doc(json!({"name": "a", "age": 1})), item.clone());
    // A path above the scenario's directory is fine inside its repository
    // (outside one, the tree is the scenario's directory).
    fx.git(".", &["init", "-q"]);
    fx.write("schemas/person.json", person().to_string());
    let up = scenario_with_schema_file(&fx, "../schemas/person.json");
    let s = reel::scenario::Scenario::load_authored(&up).unwrap();
    assert_eq!(s.frozen["assert"][0]["artifact_json"]["schema"], person());
}

/// test/artifact-json-schema.test.ts: a malformed schema file is refused as
/// an inline one is; a missing file, a file that is not JSON and a file
/// outside the scenario's tree are load errors naming the field and file.
#[test]
fn a_bad_schema_file_is_a_load_error() {
    let load = |fx: &support::Fixture, file: &str| {
        let path = scenario_with_schema_file(fx, file);
        reel::scenario::Scenario::load_authored(&path)
            .expect_err(file)
            .to_string()
    };
    let fx = support::Fixture::new();
    fx.write(
        "scenarios/schemas/mail.json",
        json!({"type": "object", "properties": {"m": {"type": "string", "format": "email"}}})
            .to_string(),
    );
    let e = load(&fx, "schemas/mail.json");
    assert!(e.contains("`format`"), "{e}");
    let e = load(&fx, "schemas/person.json");
    assert!(
        e.contains("assert[0].artifact_json.schema.file") && e.contains("schemas/person.json"),
        "{e}"
    );
    fx.write("scenarios/schemas/broken.json", "{not json");
    let e = load(&fx, "schemas/broken.json");
    assert!(e.contains("not valid JSON"), "{e}");
    let outside = support::Fixture::new();
    outside.write("s.json", person().to_string());
    let e = load(&fx, outside.path("s.json").to_str().unwrap());
    assert!(e.contains("outside the scenario's tree"), "{e}");
}

/// test/artifact-json-schema.test.ts "artifact_json.schema — load-time
/// refusals", the cases the catalog decides on the schema's shape: what a
/// name or data is never mistaken for a keyword, local refs, `$schema`,
/// recursion, and the keywords the original refuses wherever they are.
#[test]
fn schema_load_rules_the_original_tests() {
    let aj = |schema: Value| catalog::validate(&schema_item(json!({ "schema": schema })));
    // "a property NAMED format, and `format` inside enum/const/default data, load".
    for ok in [
        json!({"type": "object", "properties": {"format": {"type": "string"}}}),
        json!({"type": "object", "const": {"format": "x"}}),
        json!({"enum": [{"format": "x"}], "default": {"format": "y"}}),
        // "`#/$defs/…` loads"; "a property NAMED $ref is a name".
        json!({"$defs": {"n": {"type": "string"}}, "type": "object",
            "properties": {"a": {"$ref": "#/$defs/n"}}}),
        json!({"type": "object", "properties": {"$ref": {"type": "string"}}}),
        // "`$schema` is allowed only as the 2020-12 meta-schema".
        json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}),
        // "a recursive schema (`$ref: \"#\"`) loads".
        json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}),
        // "ordinary schemas strict mode would refuse load".
        json!({"type": "object", "required": ["a"]}),
        json!({"type": "array", "prefixItems": [{"type": "string"}]}),
    ] {
        assert!(aj(ok.clone()).is_ok(), "{ok}: {:?}", aj(ok.clone()));
    }
    for (bad, why) in [
        // "`format` is refused, naming the keyword and where it is".
        (
            json!({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}}),
            "#/properties/mail",
        ),
        (json!({"$ref": "file:///etc/s.json"}), "$ref"),
        (json!({"$ref": "other.json"}), "$ref"),
        // "`$id` at any depth is refused".
        (
            json!({"type": "object", "properties": {"a": {"$id": "a.json", "type": "string"}}}),
            "$id",
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            "2020-12",
        ),
        // "`format` is refused anywhere, an unreferenced `$defs` entry included".
        (
            json!({"type": "object", "$defs": {"u": {"type": "string", "format": "email"}}}),
            "`format`",
        ),
        // "the draft-07 array form of `items` gets a message naming `prefixItems`".
        (
            json!({"type": "array", "items": [{"type": "string"}]}),
            "prefixItems",
        ),
        // "names the type with the right article".
        (
            json!({"items": {"type": "string"}}),
            "applies only to an array",
        ),
        (
            json!({"type": "object", "$recursiveRef": "#"}),
            "$recursiveRef",
        ),
        (
            json!({"type": "object", "$dynamicAnchor": "#"}),
            "$dynamicAnchor",
        ),
        (
            json!({"type": "object", "$recursiveAnchor": "#"}),
            "$recursiveAnchor",
        ),
        // "annotation-only content keywords are refused".
        (
            json!({"type": "string", "contentSchema": {"type": "object"}}),
            "contentSchema",
        ),
        (
            json!({"type": "string", "contentMediaType": "x"}),
            "contentMediaType",
        ),
        (
            json!({"type": "string", "contentEncoding": "x"}),
            "contentEncoding",
        ),
        // "`required`/`properties` without a type is refused".
        (
            json!({"required": ["x"]}),
            "add `type: object` (or the intended type) at #",
        ),
        // "a malformed schema is a load error: … a bad type".
        (json!({"type": 7}), "type"),
    ] {
        let e = aj(bad.clone()).unwrap_err();
        assert!(e.contains(why), "{bad}: {e}");
        assert!(
            !e.contains("artifact_json.schema: artifact_json.schema"),
            "{e}"
        );
    }
    let e = aj(
        json!({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}}),
    )
    .unwrap_err();
    assert!(e.contains("`format`") && e.contains("pattern"), "{e}");
}

/// test/artifact-json-schema.test.ts "does not echo an enum's allowed
/// values, and caps each error" and "artifact_json.schema — recursion" (a
/// tree schema passes a nested tree and fails on a bad leaf).
#[test]
fn schema_errors_are_short_and_recursion_is_followed() {
    let m = fails(
        &doc(json!("zzz")),
        schema_item(json!({"schema": {"type": "string", "enum": ["alpha-value", "beta-value"]}})),
    );
    assert!(!m.contains("alpha-value"), "{m}");
    let long = format!("^{}$", "a".repeat(600));
    let m = fails(
        &doc(json!("zzz")),
        schema_item(json!({"schema": {"type": "string", "pattern": long}})),
    );
    assert!(m.chars().count() < 600, "{} chars: {m}", m.chars().count());

    let tree = json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}});
    passes(
        &doc(json!({"children": [{"children": [{}]}, {}]})),
        schema_item(json!({"schema": tree.clone()})),
    );
    let m = fails(
        &doc(json!({"children": [{"children": [7]}]})),
        schema_item(json!({"schema": tree})),
    );
    assert!(m.contains("/children/0/children/0"), "{m}");
}

/// A manifest link entry (what the recorder writes for a symlink it does
/// not follow).
fn link(path: &str) -> Value {
    json!({"path": path, "bytes": 0, "sha256": "b".repeat(64), "linkKind": "symlink"})
}

/// test/artifact-json-glob-review.test.ts "a link on the path to a match":
/// a symlinked directory in the literal prefix, or in a wildcard position,
/// is evidence-unavailable naming it; a link that cannot lead to a match is
/// ignored. "load": a glob ending in `/` is refused.
#[test]
fn links_on_the_path_to_a_match() {
    let prefix = with_artifacts(vec![
        entry("outputs/real/runs/r1/run_status.json", &status("ok")),
        link("outputs/artifacts"),
    ]);
    for m in ["each", "any"] {
        let msg = fails(&prefix, glob(m));
        assert!(
            msg.contains("evidence unavailable") && msg.contains("outputs/artifacts"),
            "{m}: {msg}"
        );
    }
    let wildcard = with_artifacts(vec![
        entry("outputs/artifacts/runs/r1/run_status.json", &status("ok")),
        entry("outputs/elsewhere/run_status.json", &status("failed")),
        link("outputs/artifacts/runs/r2"),
    ]);
    let msg = fails(&wildcard, glob("each"));
    assert!(
        msg.contains("evidence unavailable") && msg.contains("outputs/artifacts/runs/r2"),
        "{msg}"
    );
    let unrelated = with_artifacts(vec![
        entry("outputs/artifacts/runs/r1/run_status.json", &status("ok")),
        entry("outputs/elsewhere/x.txt", "x"),
        link("outputs/unrelated"),
    ]);
    passes(&unrelated, glob("each"));
    let e = catalog::validate(
        &json!({"artifact_json": {"artifact": "outputs/*/", "match": "each", "path": "x"}}),
    );
    assert!(e.is_err(), "{e:?}");
}
