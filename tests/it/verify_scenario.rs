//! `reel verify-cassettes`' scenario side (docs/spec/fingerprint.md §5 steps 4–5):
//! the sibling scenario found by the shared resolver (the original's slug,
//! non-ASCII kept), read by the shared loader (any failure is a note, never a
//! failure), compared on the recording-shaping fields only as
//! `JSON.stringify` text; and the session-shape downgrade when the recorded
//! `scenarioSource` is gone.
//!
//! Each test writes a small cassette into a temp tree laid out as
//! `cassettes/` beside `scenarios/` and `sessions/`.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::support;

struct Tree {
    _tmp: tempfile::TempDir,
    /// The temp root, canonical (the report shows absolute paths).
    root: PathBuf,
}

/// One `verify-cassettes --output-format json` run over one cassette.
struct Row {
    code: i32,
    row: Value,
}

impl Row {
    fn strs(&self, key: &str) -> Vec<String> {
        self.row[key]
            .as_array()
            .unwrap_or_else(|| panic!("`{key}` in {}", self.row))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }
}

const SESSION: &str = "permission_mode: default\n";

/// The frozen scenario a recorder writes: every key, in the loader's order.
fn frozen(name: &str) -> Map<String, Value> {
    json!({
        "name": name,
        "baseline": "latest",
        "session": "../sessions/s.yaml",
        "fidelity": "protocol",
        "execution": "local",
        "lane": "local",
        "prompt": "Write a note.\n",
        "answers": [{"when_tool": "Write", "decide": "allow"}],
        "expect_denied": [],
        "assert": [
            {"result": "success"},
            {"artifact_text": {"artifact": "outputs/note.md", "contains": ["note"]}}
        ],
        "skills": [],
        "requires_capabilities": []
    })
    .as_object()
    .unwrap()
    .clone()
}

/// The matching scenario YAML, keys authored out of the schema's order.
const SCENARIO_YAML: &str = "\
prompt: |
  Write a note.
fidelity: protocol
session: ../sessions/s.yaml
answers:
  - decide: allow
    when_tool: Write
assert:
  - result: success
  - artifact_text: {contains: [note], artifact: outputs/note.md}
";

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for d in ["cassettes", "scenarios", "sessions"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("sessions/s.yaml"), SESSION).unwrap();
        Tree { _tmp: tmp, root }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.root.join(rel);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Writes `cassettes/c.cassette.json` with `scenario` and, when given,
    /// `scenarioSource` and `sessionFingerprint`.
    fn cassette(
        &self,
        scenario: Map<String, Value>,
        source: Option<&str>,
        session_fingerprint: Option<&str>,
    ) -> PathBuf {
        let mut doc = json!({
            "cassetteVersion": 12,
            "scenario": scenario,
            "events": [],
        });
        if let Some(s) = source {
            doc["scenarioSource"] = json!(s);
        }
        if let Some(f) = session_fingerprint {
            doc["sessionFingerprint"] = json!(f);
        }
        let p = self.root.join("cassettes/c.cassette.json");
        std::fs::write(&p, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        p
    }

    fn verify(&self, cassette: &PathBuf, extra: &[&str]) -> Row {
        let out = support::reel()
            .arg("verify-cassettes")
            .arg(cassette)
            .args(extra)
            .args(["--output-format", "json"])
            .current_dir(&self.root)
            .output()
            .unwrap();
        let stdout: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e})\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        Row {
            code: out.status.code().unwrap_or(-1),
            row: stdout["results"][0].clone(),
        }
    }
}

/// (a) The original's slug keeps non-ASCII characters (only `/`, `\` and
/// dot runs change): `Résumé / 日本語 review` → `Résumé - 日本語 review`. A
/// file under the old ASCII-only rule's name is not the sibling.
#[test]
fn a_non_ascii_name_finds_its_sibling_by_the_originals_slug() {
    let t = Tree::new();
    let name = "Résumé / 日本語 review";
    let sibling = t.write(
        "scenarios/Résumé - 日本語 review.yaml",
        &SCENARIO_YAML.replace("Write a note.", "Write two notes."),
    );
    // What a slug that replaced non-ASCII characters found before: it matches
    // the cassette, so it would have hidden the drift.
    t.write("scenarios/R-sum----------review.yaml", SCENARIO_YAML);
    let c = t.cassette(frozen(name), None, None);

    let r = t.verify(&c, &["--skip-staleness"]);
    assert_eq!(
        r.strs("notes"),
        [format!(
            "scenario-drift: on-disk {} (resolved by name, not a recorded source) has drifted recording-shaping field(s) [prompt] — re-record or `replay --assert-from` to confirm",
            sibling.display()
        )],
        "{}",
        r.row
    );
    // Found by name: a note, never a failure.
    assert!(r.strs("scenarioDrift").is_empty());
    assert_eq!(r.code, 0, "{}", r.row);

    // Recorded as the source, the same drift fails the gate.
    let c = t.cassette(
        frozen(name),
        Some("../scenarios/Résumé - 日本語 review.yaml"),
        None,
    );
    let r = t.verify(&c, &["--skip-staleness"]);
    assert_eq!(r.strs("scenarioDrift").len(), 1, "{}", r.row);
    assert!(
        r.strs("scenarioDrift")[0]
            .starts_with("scenario recording-shaping field(s) [prompt] differ")
    );
    assert_eq!(r.code, 1);
}

/// (b) The original compares only the recording-shaping fields, each as
/// `JSON.stringify` of its loader's output: `assert:` is not one of them (its
/// key order, even its content, is no drift here), and answer rules come out
/// of the loader in schema order, so authored order does not matter — but a
/// frozen copy whose keys were reordered by hand is different text.
#[test]
fn key_order_is_drift_only_where_the_originals_json_text_differs() {
    let t = Tree::new();
    t.write("scenarios/s.yaml", SCENARIO_YAML);
    let c = t.cassette(frozen("s"), Some("../scenarios/s.yaml"), None);
    let r = t.verify(&c, &["--skip-staleness"]);
    assert!(r.strs("scenarioDrift").is_empty(), "{}", r.row);
    assert!(r.strs("notes").is_empty(), "{}", r.row);
    assert_eq!(r.code, 0);

    // A different assert block is not recording-shaping either.
    let mut changed_assert = frozen("s");
    changed_assert.insert("assert".into(), json!([{"result": "error"}]));
    let c = t.cassette(changed_assert, Some("../scenarios/s.yaml"), None);
    let r = t.verify(&c, &["--skip-staleness"]);
    assert!(r.strs("scenarioDrift").is_empty(), "{}", r.row);
    assert_eq!(r.code, 0);

    // The frozen rule's keys hand-reordered: `{"decide":…,"when_tool":…}` is
    // not the loader's `{"when_tool":…,"decide":…}`.
    let mut reordered = frozen("s");
    reordered.insert(
        "answers".into(),
        json!([{"decide": "allow", "when_tool": "Write"}]),
    );
    let c = t.cassette(reordered, Some("../scenarios/s.yaml"), None);
    let r = t.verify(&c, &["--skip-staleness"]);
    assert_eq!(
        r.strs("scenarioDrift"),
        [
            "scenario recording-shaping field(s) [answers] differ from the cassette's frozen copy — the frozen events no longer correspond to this scenario; re-record or `replay --assert-from`"
        ],
        "{}",
        r.row
    );
    assert_eq!(r.code, 1);
}

/// (c) A sibling that breaks the schema — or is not YAML at all — is, as in
/// the original, a non-failing note: the check could not run.
#[test]
fn an_unloadable_sibling_is_a_note_not_a_failure() {
    let t = Tree::new();
    let c = t.cassette(frozen("s"), Some("../scenarios/s.yaml"), None);
    for (what, text, says) in [
        (
            "schema",
            format!("{SCENARIO_YAML}profile: heavy\n"),
            "unknown key `profile`",
        ),
        ("yaml", "prompt: [unclosed\n".to_owned(), ""),
    ] {
        let sibling = t.write("scenarios/s.yaml", &text);
        let r = t.verify(&c, &["--skip-staleness"]);
        let notes = r.strs("notes");
        assert_eq!(notes.len(), 1, "{what}: {}", r.row);
        let lead = format!(
            "scenario-drift: on-disk scenario {} did not parse (",
            sibling.display()
        );
        assert!(notes[0].starts_with(&lead), "{what}: {}", notes[0]);
        assert!(notes[0].contains(says), "{what}: {}", notes[0]);
        assert!(
            notes[0].ends_with(") — prompt drift not checked"),
            "{what}: {}",
            notes[0]
        );
        assert!(r.strs("scenarioDrift").is_empty(), "{what}");
        assert_eq!(r.code, 0, "{what}: {}", r.row);
    }
}

/// A session-shape mismatch is downgraded to a note when the recorded
/// `scenarioSource` is gone — whether or not a scenario is then found by
/// name — and stays a failure with `--session` or an intact source.
#[test]
fn a_gone_recorded_source_downgrades_a_session_shape_mismatch() {
    let t = Tree::new();
    let other = "0".repeat(64);
    let downgraded = "session-fingerprint: differs from the current session file, but this cassette's directory structure could not be confirmed intact (scenario source resolved by name lookup, not its persisted path) — may be an unrelated same-named sibling; re-record, or verify manually before trusting the mismatch";
    let failed = "session-shape fingerprint differs from the current session file (connected folders/plugin/skill/mcp/egress config changed since record) — re-record";

    // Gone, and no scenario by name either.
    let c = t.cassette(frozen("s"), Some("../scenarios/gone.yaml"), Some(&other));
    let r = t.verify(&c, &[]);
    assert!(
        r.strs("notes").contains(&downgraded.to_owned()),
        "{}",
        r.row
    );
    assert!(r.strs("staleness").is_empty(), "{}", r.row);

    // Gone, but the name finds one: still downgraded.
    t.write("scenarios/s.yaml", SCENARIO_YAML);
    let r = t.verify(&c, &[]);
    assert!(
        r.strs("notes").contains(&downgraded.to_owned()),
        "{}",
        r.row
    );
    assert!(r.strs("staleness").is_empty(), "{}", r.row);

    // An explicit session outranks the guess.
    let session = t.root.join("sessions/s.yaml");
    let r = t.verify(&c, &["--session", session.to_str().unwrap()]);
    assert_eq!(r.strs("staleness"), [failed], "{}", r.row);
    assert_eq!(r.code, 1);

    // The recorded source is intact: a real mismatch.
    let c = t.cassette(frozen("s"), Some("../scenarios/s.yaml"), Some(&other));
    let r = t.verify(&c, &[]);
    assert_eq!(r.strs("staleness"), [failed], "{}", r.row);
    assert!(!r.strs("notes").contains(&downgraded.to_owned()));
    assert_eq!(r.code, 1);
}

/// The original's schema takes `prompt: ""` (only `record` refuses a blank
/// prompt), so an empty on-disk prompt is compared, not a "did not parse"
/// note: it drifts from a recorded prompt and matches an empty frozen one.
#[test]
fn an_empty_on_disk_prompt_is_compared_not_a_load_failure() {
    let t = Tree::new();
    t.write(
        "scenarios/s.yaml",
        &SCENARIO_YAML.replace("prompt: |\n  Write a note.\n", "prompt: ''\n"),
    );
    let c = t.cassette(frozen("s"), Some("../scenarios/s.yaml"), None);
    let r = t.verify(&c, &["--skip-staleness"]);
    assert!(r.strs("notes").is_empty(), "{}", r.row);
    assert_eq!(
        r.strs("scenarioDrift"),
        [
            "scenario recording-shaping field(s) [prompt] differ from the cassette's frozen copy — the frozen events no longer correspond to this scenario; re-record or `replay --assert-from`"
        ],
        "{}",
        r.row
    );
    assert_eq!(r.code, 1);

    let mut empty = frozen("s");
    empty.insert("prompt".into(), json!(""));
    let c = t.cassette(empty, Some("../scenarios/s.yaml"), None);
    let r = t.verify(&c, &["--skip-staleness"]);
    assert!(r.strs("scenarioDrift").is_empty(), "{}", r.row);
    assert!(r.strs("notes").is_empty(), "{}", r.row);
    assert_eq!(r.code, 0, "{}", r.row);
}
