//! Cassette load pipeline and loss-free writer (issue 2 items 2–4):
//! byte-identical round trips of every compat cassette, the exact load errors
//! of docs/spec/replay.md §2.3, hostile inputs (no panic, no hang), schema
//! validation, and property tests.
//!
//! The `fuzz_*` property tests run proptest's default 256 cases in CI. To run
//! them longer:
//!
//! ```text
//! PROPTEST_CASES=100000 cargo test --test it fuzz_
//! PROPTEST_CASES=1000000 cargo test --release --test it fuzz_   # faster per case
//! ```
//!
//! (5,000 cases of each took about 10 s in a debug build.) A failing case is
//! saved under `proptest-regressions/` and replayed first on the next run.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use reel::cassette::write::{self, WriteStyle};
use reel::cassette::{Cassette, LoadError};
use serde_json::{Map, Value, json};

use crate::support::{self, CassetteDoc, RunExt};

/// Every `*.cassette.json` under tests/compat/examples/replays/, sorted.
fn compat_cassettes() -> Vec<PathBuf> {
    let dir = support::compat("examples/replays");
    let mut out: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".cassette.json"))
        .collect();
    out.sort();
    assert!(
        out.len() >= 3,
        "expected the three cowork-harness example cassettes in {}",
        dir.display()
    );
    out
}

fn fixture(name: &str) -> PathBuf {
    support::data("cassette").join(name)
}

/// Loads a fixture expecting an error; returns `(display, error)`.
fn load_err(path: &Path) -> (String, LoadError) {
    match Cassette::load(path) {
        Ok(_) => panic!("{} loaded, expected an error", path.display()),
        Err(e) => (e.to_string(), e),
    }
}

fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

// ---------------------------------------------------------------- round trip

fn assert_same_text(path: &Path, original: &str, written: &str) {
    if written != original {
        let diff = similar::TextDiff::from_lines(original, written);
        panic!(
            "{} does not round-trip:\n{}",
            path.display(),
            diff.unified_diff().context_radius(2)
        );
    }
}

/// cowork-harness writes `JSON.stringify(doc, null, 2)`; these two committed
/// examples are exactly that. (`example-pdf-skill` was re-dumped upstream by
/// Python: `\uxxxx` escapes and a final newline — see the next test.)
const JS_WRITTEN: [&str; 2] = [
    "example-multiselect-gate.cassette.json",
    "hostloop-computer-links.cassette.json",
];

#[test]
fn js_written_compat_cassettes_round_trip_through_the_default_writer() {
    for name in JS_WRITTEN {
        let path = support::compat("examples/replays").join(name);
        let original = fs::read_to_string(&path).unwrap();
        let c = Cassette::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(WriteStyle::detect(original.as_bytes()), WriteStyle::JS);
        assert_same_text(&path, &original, &c.to_json_pretty());
        assert!(!c.to_json_pretty().ends_with('\n'));
    }
}

#[test]
fn every_compat_cassette_round_trips_byte_for_byte() {
    for path in compat_cassettes() {
        let original = fs::read_to_string(&path).unwrap();
        let c = Cassette::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.load_warnings.is_empty(), "{:?}", c.load_warnings);
        let style = WriteStyle::detect(original.as_bytes());
        let written = write::to_json_pretty_with(&c.doc, style);
        if written != original {
            let diff = similar::TextDiff::from_lines(&original, &written);
            panic!(
                "{} does not round-trip:\n{}",
                path.display(),
                diff.unified_diff().context_radius(2)
            );
        }
    }
}

#[test]
fn save_writes_the_same_bytes_atomically() {
    let tmp = tempfile::tempdir().unwrap();
    for path in compat_cassettes() {
        let c = Cassette::load(&path).unwrap();
        let target = tmp.path().join("out/copy.cassette.json");
        c.save(&target).unwrap();
        let saved = fs::read_to_string(&target).unwrap();
        assert_eq!(saved, c.to_json_pretty());
        if JS_WRITTEN.iter().any(|n| path.ends_with(n)) {
            assert_eq!(saved, fs::read_to_string(&path).unwrap());
        }
    }
    let names: Vec<_> = fs::read_dir(tmp.path().join("out")).unwrap().collect();
    assert_eq!(names.len(), 1, "stray temp files: {names:?}");
}

#[test]
fn synthetic_documents_round_trip_byte_for_byte() {
    // Each written by node's JSON.stringify(doc, null, 2) — the shapes
    // cowork-harness produces, plus awkward strings and numbers.
    let docs = [
        "{\n  \"cassetteVersion\": 12,\n  \"scenario\": {\n    \"prompt\": \"p\",\n    \"session\": \"(inline)\",\n    \"assert\": []\n  },\n  \"events\": []\n}",
        "{\n  \"cassetteVersion\": 12,\n  \"scenario\": {\n    \"prompt\": \"tab\\tnl\\n\\u0001 quote\\\" bs\\\\ é 😀 \u{2028}\",\n    \"session\": \"s\",\n    \"assert\": [\n      {\n        \"max_cost_usd\": 0.25\n      }\n    ]\n  },\n  \"events\": [\n    \"{\\\"type\\\":\\\"result\\\",\\\"total_cost_usd\\\":1e-7}\"\n  ],\n  \"nums\": [\n    0,\n    -0,\n    1.5,\n    1e+21,\n    2e-7,\n    123456789012345680000\n  ],\n  \"empty\": {},\n  \"nested\": [\n    [],\n    [\n      {}\n    ]\n  ]\n}",
    ];
    for (i, text) in docs.iter().enumerate() {
        let c = Cassette::from_bytes(format!("synthetic-{i}.cassette.json"), text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&c.to_json_pretty(), text, "synthetic doc {i}");
    }
}

#[test]
fn unknown_fields_round_trip_in_place() {
    let path = &compat_cassettes()[0];
    let mut doc: Map<String, Value> =
        serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    // Unknown keys at the top, inside scenario, inside fingerprint, and a new
    // key in the middle of the document.
    let mut with_unknown = Map::new();
    for (k, v) in doc.iter() {
        with_unknown.insert(k.clone(), v.clone());
        if k == "generator" {
            with_unknown.insert(
                "futureField".into(),
                json!({"z": 1, "a": [true, null, "x"]}),
            );
        }
    }
    with_unknown.insert("zzTrailing".into(), json!(12.50));
    doc = with_unknown;
    doc["scenario"]
        .as_object_mut()
        .unwrap()
        .insert("unknown_scenario_key".into(), json!({"b": 2, "a": 1}));
    if let Some(fp) = doc.get_mut("fingerprint").and_then(Value::as_object_mut) {
        fp.insert("newDigest".into(), json!("abc"));
    }
    let text = write::to_json_pretty(&doc);
    let c = Cassette::from_bytes("unknown.cassette.json", text.as_bytes()).unwrap();
    assert_eq!(c.to_json_pretty(), text);
    let keys: Vec<&str> = c.doc.keys().map(String::as_str).collect();
    let pos = keys.iter().position(|k| *k == "futureField").unwrap();
    assert_eq!(keys[pos - 1], "generator");
    assert_eq!(keys.last(), Some(&"zzTrailing"));
    assert_eq!(
        c.scenario()["unknown_scenario_key"],
        json!({"b": 2, "a": 1})
    );
}

#[test]
fn missing_assert_is_normalised_to_an_empty_array_at_the_end() {
    let text = r#"{"cassetteVersion":12,"scenario":{"prompt":"p","session":"s"},"events":[]}"#;
    let c = Cassette::from_bytes("a.cassette.json", text.as_bytes()).unwrap();
    let keys: Vec<&String> = c.scenario().keys().collect();
    assert_eq!(keys, ["prompt", "session", "assert"]);
    assert_eq!(c.scenario()["assert"], json!([]));
}

#[test]
fn typed_views_read_the_compat_cassettes() {
    let dir = support::compat("examples/replays");
    let pdf = Cassette::load(&dir.join("example-pdf-skill.cassette.json")).unwrap();
    assert_eq!(pdf.version, 12);
    let fp = pdf.fingerprint().unwrap();
    assert_eq!(fp.hash_format.as_deref(), Some("jcs1"));
    assert!(fp.skill_hash.is_some());
    assert!(pdf.artifacts().unwrap().len() >= 3);
    assert!(pdf.events().count() > 10);
    let gate = Cassette::load(&dir.join("example-multiselect-gate.cassette.json")).unwrap();
    assert!(gate.control_out().unwrap().len() >= 3);
    assert!(gate.fingerprint().unwrap().skill_hash.is_none());
}

// ------------------------------------------------------------- load errors

#[test]
fn truncated_file_gives_the_originals_message() {
    let path = fixture("truncated.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: unreadable / invalid cassette JSON: Unexpected end of JSON input",
            path.display()
        )
    );
    // The compat capture: `replay: <file>: <message>`.
    let expected = fs::read_to_string(support::compat(
        "expected/replay-truncated-json-text.stderr",
    ))
    .unwrap();
    let via_scratch = format!(
        "replay: $SCRATCH/bad/truncated.cassette.json: {}\n",
        e.message()
    );
    assert_eq!(via_scratch, expected);
    let err: reel::Error = e.into();
    assert_eq!(err.status(), reel::exit::ExitStatus::Usage);
    assert!(err.hint.unwrap().contains("restore"));
}

#[test]
fn v8_file_is_refused_by_the_version_floor() {
    let path = fixture("v8.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: cassette recorded at v8 is older than the minimum supported version v9 — re-record \
             this cassette (pre-1.0, no compatibility is maintained for cassette formats below v9)",
            path.display()
        )
    );
    assert_eq!(e.json_path().as_deref(), Some("cassetteVersion"));
    assert!(e.hint().contains("reel record"));
}

#[test]
fn absent_version_reads_as_v0_and_is_refused() {
    let e = Cassette::from_bytes(
        "nov.cassette.json",
        br#"{"scenario":{"prompt":"p","session":"s"},"events":[]}"#,
    )
    .unwrap_err();
    assert!(matches!(e, LoadError::TooOld { version: 0, .. }));
    assert!(e.to_string().contains("recorded at v0 is older"));
}

#[test]
fn v12_without_hash_format_is_refused() {
    let path = fixture("v12-no-hashformat.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: cassette is stamped v12 but its fingerprint carries hashFormat (absent) — a v12 \
             cassette must record 'jcs1'. The stamp and the digests disagree, so neither can be \
             trusted; re-record",
            path.display()
        )
    );
    assert_eq!(e.json_path().as_deref(), Some("fingerprint.hashFormat"));
}

#[test]
fn v12_with_another_hash_format_names_it() {
    let text = CassetteDoc::minimal()
        .set("fingerprint.hashFormat", json!("jcs2"))
        .compact();
    let e = Cassette::from_bytes("x.cassette.json", text.as_bytes()).unwrap_err();
    assert!(
        e.to_string().contains("carries hashFormat 'jcs2' — a v12"),
        "{e}"
    );
}

#[test]
fn v11_with_hash_format_is_refused() {
    let path = fixture("v11-with-hashformat.cassette.json");
    let (msg, _) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: cassette is stamped v11 (pre-epoch) but its fingerprint carries hashFormat 'jcs1' \
             — a pre-v12 cassette predates that field entirely, so the stamp and the digests \
             disagree; re-record",
            path.display()
        )
    );
}

#[test]
fn v11_without_hash_format_loads() {
    let text = CassetteDoc::minimal()
        .set("cassetteVersion", json!(11))
        .remove("fingerprint.hashFormat")
        .set("fingerprint.baseline", json!("1"))
        .compact();
    let c = Cassette::from_bytes("x.cassette.json", text.as_bytes()).unwrap();
    assert_eq!(c.version, 11);
}

#[test]
fn unknown_assertion_key_is_named_with_its_index() {
    let path = fixture("unknown-assertion.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: cassette (v12 ≤ current v16) contains unrecognized assertion(s) — they would \
             silently drop from replay: scenario.assert[3].tool_calld: unknown assertion key \
             `tool_calld`. Fix the assertion, or re-record.",
            path.display()
        )
    );
    assert_eq!(
        e.json_path().as_deref(),
        Some("scenario.assert[3].tool_calld")
    );
    match e {
        LoadError::UnrecognizedAssertions { issues, .. } => {
            assert_eq!(issues.len(), 1);
            assert_eq!(issues[0].index, 3);
            assert_eq!(issues[0].key.as_deref(), Some("tool_calld"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn future_cassette_loads_and_tolerates_unknown_assertions() {
    // Restamped v99 (the compat capture does this to the pdf cassette).
    let src = support::compat("examples/replays/example-multiselect-gate.cassette.json");
    let text = CassetteDoc::from_file(&src)
        .set("cassetteVersion", json!(99))
        .edit(|d| {
            let assert = d["scenario"]["assert"].as_array_mut().unwrap();
            assert.insert(0, json!({"brand_new_key": 1}));
        })
        .pretty();
    let c = Cassette::from_bytes("future.cassette.json", text.as_bytes()).unwrap();
    assert_eq!(c.version, 99);
    assert!(c.is_future());
    assert_eq!(
        c.load_warnings,
        vec![
            "::warning:: [cassette] unrecognized assertion (tolerated — cassette v99 is newer \
             than v16): scenario.assert[0].brand_new_key: unknown assertion key `brand_new_key`"
                .to_string()
        ]
    );
    assert_eq!(c.to_json_pretty(), text);
}

#[test]
fn mistyped_version_is_a_shape_error() {
    let path = fixture("mistyped-version.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: invalid cassette shape: cassetteVersion: Invalid input: expected a non-negative \
             integer, received string",
            path.display()
        )
    );
    assert_eq!(e.json_path().as_deref(), Some("cassetteVersion"));
    for bad in ["{}", "12.5", "-3", "[12]"] {
        let text = CassetteDoc::minimal()
            .set("cassetteVersion", serde_json::from_str(bad).unwrap())
            .compact();
        let e = Cassette::from_bytes("v.cassette.json", text.as_bytes()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("v.cassette.json: invalid cassette shape: cassetteVersion:"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn shape_errors_list_every_problem_with_its_path() {
    let path = fixture("bad-shape.cassette.json");
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: invalid cassette shape: events[1]: Invalid input: expected string, received \
             number; scenario.prompt: Invalid input: expected string, received number; \
             scenario.assert: Invalid input: expected array, received object; \
             folderPrefixMap[0].mount: Invalid input: expected string, received undefined",
            path.display()
        )
    );
    assert!(
        e.hint()
            .contains("scenario needs string `prompt` and `session`")
    );
}

#[test]
fn deeply_nested_file_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let depth = 10_000;
    let nest = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let path = write_temp(
        tmp.path(),
        "deep.cassette.json",
        CassetteDoc::minimal()
            .compact_with_raw(true, "x", &nest)
            .as_bytes(),
    );
    let (msg, _) = load_err(&path);
    assert!(
        msg.starts_with(&format!(
            "{}: unreadable / invalid cassette JSON: nesting deeper than 128 levels at line 1 column",
            path.display()
        )),
        "{msg}"
    );
    // Unclosed, and objects rather than arrays.
    let open = "{\"a\":".repeat(depth);
    let e = Cassette::from_bytes("deep2.cassette.json", open.as_bytes()).unwrap_err();
    assert!(
        e.to_string().contains("nesting deeper than 128 levels"),
        "{e}"
    );
}

#[test]
fn invalid_utf8_names_the_byte_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = b"{\n  \"events\": [\"ok\", \"bad ".to_vec();
    let offset = bytes.len();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"\"]\n}");
    let path = write_temp(tmp.path(), "latin1.cassette.json", &bytes);
    let (msg, e) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: unreadable / invalid cassette JSON: invalid UTF-8 at byte offset {offset} (line 2, \
             column {})",
            path.display(),
            offset - 1
        )
    );
    assert!(matches!(e, LoadError::InvalidUtf8 { .. }));
}

#[test]
fn syntax_errors_keep_the_position() {
    let e = Cassette::from_bytes("s.cassette.json", b"{\"events\": [1,,]}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "s.cassette.json: unreadable / invalid cassette JSON: expected value at line 1 column 15"
    );
    let e = Cassette::from_bytes("e.cassette.json", b"").unwrap_err();
    assert!(
        e.to_string().ends_with("Unexpected end of JSON input"),
        "{e}"
    );
    let e = Cassette::from_bytes("t.cassette.json", b"{} trailing").unwrap_err();
    assert!(e.to_string().contains("trailing characters"), "{e}");
}

#[test]
fn duplicate_keys_keep_the_last_value_at_the_first_position() {
    // Like JavaScript's JSON.parse: one `events` key, where the first one
    // stood, holding the last value.
    let path = fixture("duplicate-keys.cassette.json");
    let c = Cassette::load(&path).unwrap();
    let keys: Vec<&str> = c.doc.keys().map(String::as_str).collect();
    assert_eq!(keys, ["cassetteVersion", "events", "scenario"]);
    assert_eq!(c.events().collect::<Vec<_>>(), ["second"]);
}

#[test]
fn special_files_are_refused_without_reading() {
    let (msg, e) = load_err(Path::new("/dev/zero"));
    assert_eq!(
        msg,
        "/dev/zero: unreadable / invalid cassette JSON: not a regular file (a character device)"
    );
    assert!(matches!(e, LoadError::NotAFile { .. }));

    let tmp = tempfile::tempdir().unwrap();
    let (msg, _) = load_err(tmp.path());
    assert!(msg.ends_with("not a regular file (a directory)"), "{msg}");

    // A FIFO with no writer: opening it for reading would block forever.
    let fifo = tmp.path().join("pipe.cassette.json");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let (msg, _) = load_err(&fifo);
    assert!(msg.ends_with("not a regular file (a FIFO)"), "{msg}");

    // A symlink to a special file is judged by its target.
    let link = tmp.path().join("zero.cassette.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let (msg, _) = load_err(&link);
    assert!(
        msg.ends_with("not a regular file (a character device)"),
        "{msg}"
    );
}

#[test]
fn missing_file_names_it() {
    let (msg, e) = load_err(Path::new("no/such.cassette.json"));
    assert!(
        msg.starts_with("no/such.cassette.json: unreadable / invalid cassette JSON: "),
        "{msg}"
    );
    assert!(e.hint().contains("exists and is readable"));
}

#[test]
fn files_over_two_gib_are_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("huge.cassette.json");
    let f = fs::File::create(&path).unwrap();
    // Sparse: no disk space or memory is used.
    f.set_len(reel::cassette::MAX_CASSETTE_BYTES + 1).unwrap();
    let (msg, _) = load_err(&path);
    assert_eq!(
        msg,
        format!(
            "{}: unreadable / invalid cassette JSON: the file is 2147483649 bytes, over reel's \
             limit of 2147483648 bytes (2 GiB)",
            path.display()
        )
    );
}

#[test]
fn a_very_long_event_line_loads_and_round_trips() {
    // Stands in for a 1 GB line: same code path, affordable in a test.
    let line = format!(
        "{{\"type\":\"assistant\",\"text\":\"{}\"}}",
        "x\\\"y ".repeat(4 << 20)
    );
    let mut doc = Map::new();
    doc.insert("cassetteVersion".into(), json!(12));
    doc.insert(
        "scenario".into(),
        json!({"prompt": "p", "session": "s", "assert": []}),
    );
    doc.insert("events".into(), json!([line]));
    let text = write::to_json_pretty(&doc);
    assert!(text.len() > 20 << 20);
    let tmp = tempfile::tempdir().unwrap();
    let path = write_temp(tmp.path(), "long.cassette.json", text.as_bytes());
    let c = Cassette::load(&path).unwrap();
    assert_eq!(c.events().next().map(|l| l.len()), Some(line.len()));
    assert!(c.to_json_pretty() == text);
}

// ------------------------------------------------------------------ schema

fn schema_validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(support::repo().join("schema/cassette.v12.json")).unwrap(),
    )
    .unwrap();
    jsonschema::draft7::new(&schema).unwrap()
}

fn schema_errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

#[test]
fn compat_and_reel_written_cassettes_match_the_v12_schema() {
    // serde_json's arbitrary_precision numbers work with jsonschema as-is
    // (integer/minimum checks read the stored spelling), so no re-parse is needed.
    let validator = schema_validator();
    for path in compat_cassettes() {
        let c = Cassette::load(&path).unwrap();
        let doc = Value::Object(c.doc.clone());
        let errors = schema_errors(&validator, &doc);
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
        // What reel writes back validates too.
        let rewritten = Cassette::from_bytes(&path, c.to_json_pretty().as_bytes()).unwrap();
        assert!(validator.is_valid(&Value::Object(rewritten.doc)));
    }
}

#[test]
fn the_schema_rejects_what_it_should() {
    // The validation above could not fail if the schema were empty.
    let validator = schema_validator();
    let c = Cassette::load(&compat_cassettes()[0]).unwrap();
    let mut doc = Value::Object(c.doc);
    doc["events"] = json!([1]);
    doc["cassetteVersion"] = json!(-1);
    let errors = schema_errors(&validator, &doc);
    assert!(
        errors.iter().any(|e| e.starts_with("/events/0")),
        "{errors:#?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("/cassetteVersion")),
        "{errors:#?}"
    );
}

// ---------------------------------------------------------------- fuzzing

/// Arbitrary JSON values (small).
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z_\\\\\"\u{0}-\u{1f}é😀]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z_]{1,10}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Replaces the value reached by following `choices` (each picks a child; the
/// walk stops at a leaf or when the choice says "here") with `new`.
fn replace_at(v: &mut Value, choices: &[usize], new: Value) {
    let Some((&first, rest)) = choices.split_first() else {
        *v = new;
        return;
    };
    let stop = first % 5 == 0;
    match v {
        Value::Array(items) if !items.is_empty() && !stop => {
            let i = first % items.len();
            replace_at(&mut items[i], rest, new)
        }
        Value::Object(map) if !map.is_empty() && !stop => {
            let i = first % map.len();
            let key = map.keys().nth(i).cloned().unwrap();
            replace_at(&mut map[&key], rest, new)
        }
        _ => *v = new,
    }
}

fn compat_bytes() -> &'static [Vec<u8>] {
    static BYTES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        compat_cassettes()
            .iter()
            .map(|p| fs::read(p).unwrap())
            .collect()
    })
}

/// Whatever loaded must write out and load back to the same bytes.
fn check_loaded_round_trips(result: Result<Cassette, LoadError>) {
    match result {
        Ok(c) => {
            let text = c.to_json_pretty();
            let again = Cassette::from_bytes("again.cassette.json", text.as_bytes())
                .unwrap_or_else(|e| panic!("reel-written cassette does not load: {e}"));
            assert_eq!(again.to_json_pretty(), text);
        }
        Err(e) => {
            // Every error names the file and says something.
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.cassette.json: "), "{msg}");
            assert!(!e.hint().is_empty());
        }
    }
}

proptest! {
    #[test]
    fn fuzz_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_loaded_round_trips(Cassette::from_bytes("fuzz.cassette.json", &bytes));
    }

    #[test]
    fn fuzz_byte_mutations_of_a_real_cassette(
        which in 0usize..3,
        edits in prop::collection::vec((0usize..4, any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let all = compat_bytes();
        let mut bytes = all[which % all.len()].clone();
        for (op, at, byte) in edits {
            if bytes.is_empty() { break; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                2 => { bytes.remove(i); }
                _ => bytes.truncate(i),
            }
        }
        check_loaded_round_trips(Cassette::from_bytes("fuzz.cassette.json", &bytes));
    }

    #[test]
    fn fuzz_writer_output_parses_back_to_the_same_document(
        members in prop::collection::vec(("[a-zA-Z_$é😀\"\\\n]{0,8}", arb_json()), 0..8),
        escape_non_ascii in any::<bool>(),
        trailing_newline in any::<bool>(),
    ) {
        let doc: Map<String, Value> = members.into_iter().collect();
        let style = WriteStyle { escape_non_ascii, trailing_newline };
        let text = write::to_json_pretty_with(&doc, style);
        let back: Map<String, Value> = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(&back, &doc);
        prop_assert_eq!(WriteStyle::detect(text.as_bytes()).trailing_newline, trailing_newline);
        // And it is serde_json's own pretty layout (2-space indent).
        let mut reference = serde_json::to_string_pretty(&doc).unwrap();
        if escape_non_ascii {
            prop_assert!(text.is_ascii());
        } else {
            if trailing_newline {
                reference.push('\n');
            }
            prop_assert_eq!(text, reference);
        }
    }

    #[test]
    fn fuzz_value_mutations_of_a_real_cassette(
        which in 0usize..3,
        choices in prop::collection::vec(any::<usize>(), 0..6),
        new in arb_json(),
    ) {
        let all = compat_bytes();
        let mut doc: Value = serde_json::from_slice(&all[which % all.len()]).unwrap();
        replace_at(&mut doc, &choices, new);
        let bytes = serde_json::to_vec(&doc).unwrap();
        check_loaded_round_trips(Cassette::from_bytes("fuzz.cassette.json", &bytes));
    }
}

#[test]
fn from_doc_runs_the_same_checks() {
    let doc: Map<String, Value> = serde_json::from_str(
        r#"{"cassetteVersion":12,"scenario":{"prompt":"p","session":"s","assert":[{"nope":1}]},"events":[]}"#,
    )
    .unwrap();
    let e = Cassette::from_doc("mem.cassette.json", doc).unwrap_err();
    assert_eq!(e.json_path().as_deref(), Some("scenario.assert[0].nope"));
    assert!(
        e.to_string()
            .starts_with("mem.cassette.json: cassette (v12 ≤ current v16)")
    );
}

#[test]
fn hostile_corpus_loads_or_fails_cleanly() {
    // tests/data/hostile/ (the lead's corpus): the loader's share of it. Cases
    // not listed here are replay-level problems: they only must not panic.
    let dir = support::data("hostile");
    let must_fail: &[(&str, &str)] = &[
        (
            "array-document",
            "invalid cassette shape: <root>: Invalid input: expected object, received array",
        ),
        (
            "null-document",
            "invalid cassette shape: <root>: Invalid input: expected object, received null",
        ),
        (
            "empty-file",
            "unreadable / invalid cassette JSON: Unexpected end of JSON input",
        ),
        (
            "truncated",
            "unreadable / invalid cassette JSON: Unexpected end of JSON input",
        ),
        (
            "invalid-utf8",
            "unreadable / invalid cassette JSON: invalid UTF-8 at byte offset",
        ),
        (
            "deep-nesting-document",
            "unreadable / invalid cassette JSON: nesting deeper than 128 levels",
        ),
        (
            "lone-surrogate",
            "unreadable / invalid cassette JSON: lone surrogate escape (a `\\udxxx` without its pair) at line 12 column 34",
        ),
        (
            "events-non-strings",
            "invalid cassette shape: events[0]: Invalid input: expected string, received number",
        ),
        (
            "events-not-array",
            "invalid cassette shape: events: Invalid input: expected array, received string",
        ),
        (
            "scenario-missing",
            "invalid cassette shape: scenario: Invalid input: expected object, received undefined",
        ),
        (
            "version-float",
            "invalid cassette shape: cassetteVersion: Invalid input: expected a non-negative integer, received number (12.5)",
        ),
        (
            "version-negative",
            "invalid cassette shape: cassetteVersion: Invalid input: expected a non-negative integer, received number",
        ),
        (
            "version-object",
            "invalid cassette shape: cassetteVersion: Invalid input: expected a non-negative integer, received object",
        ),
        (
            "version-string",
            "invalid cassette shape: cassetteVersion: Invalid input: expected a non-negative integer, received string",
        ),
        // Last value wins: the trailing `"cassetteVersion": 8`.
        (
            "duplicate-keys",
            "cassette recorded at v8 is older than the minimum supported version v9",
        ),
    ];
    let must_load_future = ["version-future", "version-huge"];
    let mut seen = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".cassette.json"))
        else {
            continue;
        };
        seen += 1;
        let result = Cassette::load(&path);
        if let Some((_, want)) = must_fail.iter().find(|(n, _)| *n == name) {
            let e = result.err().unwrap_or_else(|| panic!("{name} loaded"));
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!("{}: {want}", path.display())),
                "{name}: {msg}"
            );
        } else if must_load_future.contains(&name) {
            let c = result.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(c.is_future(), "{name}: v{}", c.version);
        } else if let Err(e) = result {
            assert!(
                e.to_string().starts_with(&path.display().to_string()),
                "{e}"
            );
        }
    }
    assert!(
        seen >= 50,
        "hostile corpus missing: {seen} cases in {}",
        dir.display()
    );
}

// ------------------------------------------------------------ v13–v16

/// A v`version` document carrying each later format's own fields.
fn newer_format(version: u64) -> CassetteDoc {
    let mut doc = CassetteDoc::minimal()
        .set("cassetteVersion", json!(version))
        .set(
            "scenario.assert",
            json!([{"tool_called": {"tool": "Bash", "input": {"command": "ls*"}}}]),
        );
    if version >= 14 {
        doc = doc
            .set("scenario.workspace_fixture", json!("fixtures/ws"))
            .set("fingerprint.workspaceFixtureSig", json!("ab".repeat(32)))
            .set(
                "fingerprint.workspaceFixtureFileSigs",
                json!([["a.bin", format!("{}+x", "cd".repeat(32))]]),
            )
            .set(
                "artifacts",
                json!([{"path": "a.bin", "bytes": 3, "sha256": "ef".repeat(32), "truncated": true,
                        "truncationReason": "fixture"}]),
            );
    }
    if version >= 15 {
        doc = doc.set("answerChannel", json!("none"));
    }
    if version >= 16 {
        doc = doc.set(
            "hookFailureBlocks",
            json!({"events": ["PreToolUse", "Stop"]}),
        );
    }
    doc
}

/// test/cassette-v13-object-form.test.ts … cassette-v16.test.ts: every
/// version up to the ceiling loads, its new fields round-trip byte-exact and
/// match the version's schema.
#[test]
fn v13_to_v16_cassettes_load_round_trip_and_match_their_schemas() {
    for version in 13..=16u64 {
        let text = newer_format(version).pretty();
        let c = Cassette::from_bytes("new.cassette.json", text.as_bytes())
            .unwrap_or_else(|e| panic!("v{version}: {e}"));
        assert_eq!(c.version, version);
        assert!(!c.is_future(), "v{version}");
        assert!(
            c.load_warnings.is_empty(),
            "v{version}: {:?}",
            c.load_warnings
        );
        assert_eq!(c.to_json_pretty(), text, "v{version}");

        let schema: Value = serde_json::from_str(
            &fs::read_to_string(support::repo().join(format!("schema/cassette.v{version}.json")))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            schema["$id"],
            json!(reel::cassette::schema_url(version)),
            "v{version}"
        );
        assert_eq!(
            schema["title"],
            json!(format!("cowork-harness cassette v{version}"))
        );
        let validator = jsonschema::draft7::new(&schema).unwrap();
        let errors = schema_errors(&validator, &Value::Object(c.doc.clone()));
        assert!(errors.is_empty(), "v{version}: {errors:?}");
    }
    // A field a version does not know is refused by its schema's enum.
    let v13: Value = serde_json::from_str(
        &fs::read_to_string(support::repo().join("schema/cassette.v13.json")).unwrap(),
    )
    .unwrap();
    let v13 = jsonschema::draft7::new(&v13).unwrap();
    assert!(!schema_errors(&v13, &newer_format(14).into_value()).is_empty());
}

/// test/cassette-v13-object-form.test.ts "replay refuses a future cassette
/// before evaluating it": exit 1, only the cassette-format refusal, even
/// when an assertion has a shape no build can evaluate.
#[test]
fn a_v17_cassette_is_refused_before_any_assertion_is_evaluated() {
    let fx = support::Fixture::new();
    let path = fx.path("future.cassette.json");
    CassetteDoc::minimal()
        .set("cassetteVersion", json!(17))
        .set(
            "scenario.assert",
            json!([{"tool_called": {"tool": 42, "from_the_future": true}}, {"result": "success"}]),
        )
        .set(
            "events",
            json!([
                json!({"type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "ls"}}]}})
                .to_string(),
                json!({"type": "result", "subtype": "success", "is_error": false}).to_string(),
            ]),
        )
        .write(&path);
    let run = support::reel()
        .args(["replay", path.to_str().unwrap(), "--output-format", "json"])
        .run();
    assert_eq!(run.code, 1, "{}", run.streams());
    let v = run.json();
    let assertions = v["results"][0]["assertions"].as_array().unwrap();
    assert_eq!(assertions.len(), 1, "{v}");
    assert_eq!(assertions[0]["source"], json!("cassette-format"));
    assert!(
        assertions[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("cassette format too new: cassette format v17 is newer than this harness understands (v16)"),
        "{v}"
    );
    // verify-cassettes has no escape hatch: the gate fails.
    let run = support::reel()
        .args(["verify-cassettes", path.to_str().unwrap()])
        .run();
    assert_ne!(run.code, 0, "{}", run.streams());
    assert!(
        run.streams()
            .contains("newer than this harness understands (v16)")
    );
}
