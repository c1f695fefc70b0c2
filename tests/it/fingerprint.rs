//! Fingerprints against cowork-harness's golden vectors, the bundled example
//! cassette, and the staleness messages.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use reel::fingerprint::{self, EntryKind, HashFormat, ModeRequest, WalkOptions};
use serde_json::Value;

use crate::support::{self, Failures, git_commit_all};

fn expected() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let raw = std::fs::read_to_string(support::data("golden/expected.json")).unwrap();
        serde_json::from_str(&raw).unwrap()
    })
}

fn have_git() -> bool {
    // The git-mode tests `require!` it (a failure under CI=true).
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The fixture trees, rebuilt once per test process with the copied
/// make-fixtures.sh (git-mode fixture included when git exists).
fn fixtures() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        // Physical spelling: fx6's absolute link is only in-tree under it.
        let dir = tmp.path().canonicalize().unwrap().join("fx");
        let mut cmd = Command::new("bash");
        cmd.arg(support::data("golden/make-fixtures.sh")).arg(&dir);
        if have_git() {
            cmd.env("GOLDEN_GIT", "1")
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "make-fixtures.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (tmp, dir)
    })
    .1
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn sigs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn check_case(id: &str) {
    let case = &expected()["cases"][id];
    let dir = fixtures();
    let git = case["env"]["COWORK_HARNESS_GITSET"] == "1";
    let opts = WalkOptions {
        mode: if git {
            ModeRequest::Git
        } else {
            ModeRequest::Raw
        },
        scope: strings(&case["scope"]),
        session_ignore: strings(&case["sessionIgnore"]),
        agent_scope: case["env"]["COWORK_HARNESS_AGENT_SCOPE"] == "skill",
    };
    let roots: Vec<PathBuf> = strings(&case["roots"])
        .iter()
        .map(|r| dir.join(r))
        .collect();
    let snap = fingerprint::snapshot::walk(&roots, &opts).unwrap();

    let fold_order: Vec<PathBuf> = strings(&case["rootsFoldOrder"])
        .iter()
        .map(|r| dir.join(r))
        .collect();
    assert_eq!(snap.roots, fold_order, "{id}: root fold order");
    let r = &case["result"];
    assert_eq!(snap.scoped, r["scoped"].as_bool().unwrap(), "{id}: scoped");
    assert_eq!(
        snap.missed_skills,
        strings(&r["missedSkills"]),
        "{id}: missedSkills"
    );
    assert_eq!(snap.git_mode, r["mode"] == "git", "{id}: mode");
    assert_eq!(
        snap.agent_scoped,
        r["agentScoped"].as_bool().unwrap(),
        "{id}: agentScoped"
    );
    assert_eq!(
        snap.read_errors.len() as u64,
        r["readErrorCount"].as_u64().unwrap(),
        "{id}: read errors"
    );

    // The walk itself, entry by entry.
    let walk: Vec<String> = snap
        .main()
        .map(|e| {
            let root = snap.roots[e.root]
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string();
            match &e.kind {
                EntryKind::Dir => format!("dir {root} {:?}", e.path),
                EntryKind::Link { target } => format!("link {root} {:?} -> {target:?}", e.path),
                EntryKind::File { digests, .. } => {
                    format!(
                        "file {root} {:?} {} {}",
                        e.path, digests.legacy, digests.jcs1
                    )
                }
            }
        })
        .collect();
    let want_walk: Vec<String> = case["entriesWalkOrder"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let (root, path) = (e["root"].as_str().unwrap(), e["path"].as_str().unwrap());
            match e["kind"].as_str().unwrap() {
                "dir" => format!("dir {root} {path:?}"),
                "link" => format!(
                    "link {root} {path:?} -> {:?}",
                    e["target"].as_str().unwrap()
                ),
                _ => format!(
                    "file {root} {path:?} {} {}",
                    e["sha"]["legacy"].as_str().unwrap(),
                    e["sha"]["jcs1"].as_str().unwrap()
                ),
            }
        })
        .collect();
    assert_eq!(walk, want_walk, "{id}: walk");

    assert_eq!(
        snap.skill_hash(HashFormat::Legacy),
        case["skillHash"]["legacy"],
        "{id}: skillHash legacy"
    );
    assert_eq!(
        snap.skill_hash(HashFormat::Jcs1),
        case["skillHash"]["jcs1"],
        "{id}: skillHash jcs1"
    );
    assert_eq!(
        snap.content_sig_v12().unwrap(),
        case["contentSig"]["v12_algo5_jcs1_withDirs"],
        "{id}: contentSig v12"
    );
    let legacy_sigs = snap.file_sigs(HashFormat::Legacy);
    assert_eq!(
        fingerprint::content_sig_pre_epoch(&legacy_sigs).unwrap(),
        case["contentSig"]["preEpoch_algo4_legacy_noDirs"],
        "{id}: contentSig pre-epoch"
    );
    assert_eq!(
        legacy_sigs,
        sigs(&case["fileSigs"]["legacy"]),
        "{id}: fileSigs legacy"
    );
    assert_eq!(
        snap.file_sigs(HashFormat::Jcs1),
        sigs(&case["fileSigs"]["jcs1"]),
        "{id}: fileSigs jcs1"
    );
    match case.get("sharedHash") {
        Some(sh) => {
            assert_eq!(
                snap.shared_hash(HashFormat::Legacy).unwrap(),
                sh["legacy"],
                "{id}: sharedHash legacy"
            );
            assert_eq!(
                snap.shared_hash(HashFormat::Jcs1).unwrap(),
                sh["jcs1"],
                "{id}: sharedHash jcs1"
            );
        }
        None => assert_eq!(
            snap.shared_hash(HashFormat::Jcs1),
            None,
            "{id}: no sharedHash"
        ),
    }

    // buildFingerprint and sessionFingerprint from the case's session file.
    if let Some(bf) = case.get("buildFingerprint") {
        let session = dir.join(bf["session"].as_str().unwrap());
        let live = fingerprint::build(
            session.to_str().unwrap(),
            None,
            None,
            &strings(&bf["scenarioSkills"]),
            Some(bf["baseline"].as_str().unwrap().to_owned()),
            opts.mode,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&live.records.jcs1).unwrap(),
            serde_json::to_string(&bf["fingerprint"]).unwrap(),
            "{id}: buildFingerprint"
        );
        assert_eq!(
            fingerprint::session_fingerprint(&session).unwrap(),
            case["sessionFingerprint"],
            "{id}: sessionFingerprint"
        );
    }
}

macro_rules! golden {
    ($($name:ident => $id:literal),* $(,)?) => {$(
        #[test]
        fn $name() {
            check_case($id);
        }
    )*};
}

golden! {
    golden_fx1_whole => "fx1-whole",
    golden_fx1_scoped_alpha => "fx1-scoped-alpha",
    golden_fx1_scoped_alpha_agentscope => "fx1-scoped-alpha-agentscope",
    golden_fx1_scoped_typo_fallback => "fx1-scoped-typo-fallback",
    golden_fx2_names => "fx2-names",
    golden_fx3_manifests => "fx3-manifests",
    golden_fx3_manifests_session_ignore_esc => "fx3-manifests-session-ignore-esc",
    golden_fx4_nonfinite => "fx4-nonfinite",
    golden_fx5_multiroot => "fx5-multiroot",
    golden_fx6_abslink => "fx6-abslink",
}

#[test]
fn golden_fx7_git() {
    support::require!(have_git(), "no git CLI to build the fixture");
    check_case("fx7-git");
}

#[test]
fn golden_fx7_git_scoped_alpha() {
    support::require!(have_git(), "no git CLI to build the fixture");
    check_case("fx7-git-scoped-alpha");
}

#[test]
fn golden_manifest_transforms_hash_the_recorded_bytes() {
    let mut checked = 0;
    let mut failures = Failures::new();
    let mut ran = 0;
    for (id, case) in expected()["cases"].as_object().unwrap() {
        ran += 1;
        failures.case(id, || {
            for m in case["manifestTransforms"].as_array().unwrap() {
                let raw = hex::decode(m["inputHex"].as_str().unwrap()).unwrap();
                let legacy = fingerprint::manifest::legacy_hashed(&raw).into_owned();
                let jcs1 = fingerprint::manifest::jcs1_hashed(&raw).map(|b| b.into_owned());
                for (key, out) in [("legacy", Ok(legacy)), ("jcs1", jcs1)] {
                    let want = &m[key];
                    match want["hex"].as_str().or(want["utf8Hex"].as_str()) {
                        Some(h) => {
                            assert_eq!(hex::encode(out.unwrap()), h, "{id} {} {key}", m["path"])
                        }
                        None => {
                            assert!(out.is_err(), "{id} {} {key}: expected an error", m["path"])
                        }
                    }
                    checked += 1;
                }
            }
        });
    }
    failures.assert_none(ran);
    assert!(checked > 20, "only {checked} transforms checked");
}

// ---------------------------------------------------------------------------
// The bundled cowork-harness example: `reel fingerprint` reproduces it, and
// staleness judges drift on it.

/// Stages the current state of `dir` (adds, edits and deletions).
fn git_stage_all(dir: &Path) {
    let repo = git2::Repository::open(dir).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
}

fn recorded_example() -> serde_json::Map<String, Value> {
    let raw = std::fs::read_to_string(support::compat(
        "examples/replays/example-pdf-skill.cassette.json",
    ))
    .unwrap();
    serde_json::from_str(&raw).unwrap()
}

/// `<tmp>/{replays,sessions,skills}` with the upstream layout; the whole tree
/// committed to git when `git` (the cassette was recorded in git mode).
fn example_layout(git: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    support::copy_tree(
        &support::compat("examples/skills/my-pdf-skill"),
        &root.join("skills/my-pdf-skill"),
    );
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    std::fs::copy(
        support::compat("examples/sessions/default.yaml"),
        root.join("sessions/default.yaml"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("replays")).unwrap();
    let cassette = root.join("replays/example-pdf-skill.cassette.json");
    std::fs::copy(
        support::compat("examples/replays/example-pdf-skill.cassette.json"),
        &cassette,
    )
    .unwrap();
    if git {
        git_commit_all(&root);
    }
    (tmp, cassette)
}

fn load(path: &Path, doc: serde_json::Map<String, Value>) -> reel::cassette::Cassette {
    let version = doc
        .get("cassetteVersion")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    reel::cassette::Cassette::unchecked(path, doc, version)
}

#[test]
fn reel_fingerprint_reproduces_the_example_pdf_skill_cassette() {
    let (tmp, _) = example_layout(true);
    let out = support::reel()
        .current_dir(tmp.path().join("sessions"))
        .args([
            "fingerprint",
            "../skills/my-pdf-skill",
            "--output-format",
            "json",
        ])
        .env_remove("COWORK_HARNESS_GITSET")
        .env_remove("COWORK_HARNESS_AGENT_SCOPE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want = recorded_example()["fingerprint"].clone();
    // Not skill-derived: the platform baseline of the run.
    let obj = want.as_object_mut().unwrap();
    obj.shift_remove("baseline");
    obj.shift_remove("promptAssetsHash");
    assert_eq!(
        serde_json::to_string(&got["fingerprint"]).unwrap(),
        serde_json::to_string(&want).unwrap()
    );
    assert_eq!(got["readErrors"], serde_json::json!([]));
    assert_matches_schema(&got);
}

fn assert_matches_schema(doc: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::repo().join("schema/fingerprint-output.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
}

#[test]
fn reel_fingerprint_text_files_and_usage_errors() {
    let (tmp, _) = example_layout(false);
    let out = support::reel()
        .current_dir(tmp.path())
        .args([
            "fingerprint",
            "skills/my-pdf-skill",
            "--mode",
            "raw",
            "--files",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "skillHash   b760ea90682777367fbd44d866ea66d316452da1abb18bf8cb61f1cec8e67806"
        ),
        "{text}"
    );
    assert!(text.contains("mode        raw"), "{text}");
    assert!(text.contains("\"skills/my-pdf-skill/SKILL.md\""), "{text}");
    // Not a git work tree: --mode git is refused with the fix.
    let out = support::reel()
        .current_dir(tmp.path())
        .args(["fingerprint", "skills/my-pdf-skill", "--mode", "git"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("is not inside a git work tree") && err.contains("--mode raw"),
        "{err}"
    );
    let out = support::reel()
        .args(["fingerprint", "/nonexistent/skill"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/skill"));
    // --session: roots from the session, skillSources relative to it.
    let out = support::reel()
        .args([
            "fingerprint",
            "--mode",
            "raw",
            "--output-format",
            "json",
            "--session",
        ])
        .arg(tmp.path().join("sessions/default.yaml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        got["fingerprint"]["skillSources"],
        serde_json::json!(["../skills/my-pdf-skill"])
    );
    // --format legacy of an already-sorted manifest: same skillHash, no hashFormat.
    let out = support::reel()
        .current_dir(tmp.path())
        .args([
            "fingerprint",
            "skills/my-pdf-skill",
            "--mode",
            "raw",
            "--format",
            "legacy",
            "--output-format",
            "json",
            "--files",
        ])
        .output()
        .unwrap();
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["fingerprint"]["hashFormat"], Value::Null);
    assert_eq!(got["files"].as_array().unwrap().len(), 5);
    assert_matches_schema(&got);
    assert_eq!(
        got["fingerprint"]["skillHash"],
        "b760ea90682777367fbd44d866ea66d316452da1abb18bf8cb61f1cec8e67806"
    );
}

fn classes_and_messages(s: &fingerprint::staleness::Staleness) -> Vec<(String, String)> {
    s.findings
        .iter()
        .map(|f| (f.class.as_str().to_owned(), f.message.clone()))
        .collect()
}

#[test]
fn staleness_clean_when_the_tree_is_as_recorded() {
    let (_tmp, path) = example_layout(true);
    let c = load(&path, recorded_example());
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(classes_and_messages(&s), Vec::<(String, String)>::new());
    assert_eq!(s.notes, Vec::<String>::new());
}

#[test]
fn staleness_names_the_changed_added_and_removed_files() {
    let (tmp, path) = example_layout(true);
    let skill = tmp.path().join("skills/my-pdf-skill");
    std::fs::write(skill.join("skills/my-pdf-skill/SKILL.md"), "edited\n").unwrap();
    let c = load(&path, recorded_example());
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        vec![(
            "skill".into(),
            "skill files changed since record — 1 changed (skills/my-pdf-skill/SKILL.md) — re-record".into()
        )]
    );
    let hint = s.findings[0].hint(&c).unwrap();
    assert!(
        hint.starts_with("re-record with `reel record ")
            && hint.ends_with("scenarios/example-pdf-skill.yaml`"),
        "{hint}"
    );

    for n in ["a.md", "b.md", "c.md", "d.md"] {
        std::fs::write(skill.join(n), n).unwrap();
    }
    std::fs::remove_file(skill.join(".claude-plugin/plugin.json")).unwrap();
    git_stage_all(tmp.path());
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        vec![(
            "skill".into(),
            "skill files changed since record — 1 changed (skills/my-pdf-skill/SKILL.md); 4 added (a.md, b.md, c.md, +1 more); 1 removed (.claude-plugin/plugin.json) — re-record".into()
        )]
    );
    assert_eq!(
        s.failures(fingerprint::staleness::Gate::Bare),
        Vec::<String>::new(),
        "skill drift alone does not fail a bare replay"
    );
    assert_eq!(
        s.failures(fingerprint::staleness::Gate::FailOnSkillDrift)
            .len(),
        1
    );
}

#[test]
fn staleness_mode_flip_is_a_format_finding() {
    // Same bytes, but not in a git work tree: the recorded `mode: git` cannot
    // be compared with a raw walk.
    let (_tmp, path) = example_layout(false);
    let c = load(&path, recorded_example());
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        vec![(
            "format".into(),
            "recorded in 'git' file-set mode, verifying in 'raw' (COWORK_HARNESS_GITSET) — re-record under the same mode".into()
        )]
    );
}

#[test]
fn staleness_moved_cassette_is_unverifiable_with_the_session_hint() {
    let (tmp, path) = example_layout(true);
    let moved_dir = tmp.path().join("moved/deeper");
    std::fs::create_dir_all(&moved_dir).unwrap();
    let moved = moved_dir.join("example-pdf-skill.cassette.json");
    std::fs::rename(&path, &moved).unwrap();
    let c = load(&moved, recorded_example());
    let s = fingerprint::staleness::compute(&c, None);
    let want = format!(
        "skill dirs not resolvable from the cassette location — no session file at {}/moved/sessions/default.yaml (if the cassette moved, point at its session with --session <file>) — cannot verify skill staleness (can't verify ⇒ not green)",
        tmp.path().canonicalize().unwrap().display()
    );
    assert_eq!(
        classes_and_messages(&s),
        vec![("unverifiable-skill".into(), want.clone())]
    );
    assert_eq!(
        s.failures(fingerprint::staleness::Gate::Bare),
        vec![format!("skill staleness could not be verified: {want}")]
    );
    assert!(
        s.findings[0]
            .hint(&c)
            .unwrap()
            .contains("--session <session.yaml>")
    );
    // The override points at the tree again: clean.
    let session = tmp.path().join("sessions/default.yaml");
    let s = fingerprint::staleness::compute(&c, Some(&session));
    assert_eq!(classes_and_messages(&s), Vec::<(String, String)>::new());
}

#[test]
fn staleness_pre_epoch_cassette_names_reel_rehash() {
    let (_tmp, path) = example_layout(true);
    let mut doc = recorded_example();
    doc.insert("cassetteVersion".into(), serde_json::json!(11));
    doc["fingerprint"]
        .as_object_mut()
        .unwrap()
        .shift_remove("hashFormat");
    let c = load(&path, doc);
    let s = fingerprint::staleness::compute(&c, None);
    let dir = path.parent().unwrap().display().to_string();
    assert_eq!(
        classes_and_messages(&s),
        vec![(
            "unverifiable-skill".into(),
            format!(
                "recorded under hash format v11 (now v12) — digests are not comparable across the change. Run `reel rehash {dir}/` to migrate, or `reel rehash {} --session <session>` if the cassette has moved, or re-record",
                path.display()
            )
        )]
    );
    assert!(s.findings[0].class.gates_bare_replay());
}

#[test]
fn staleness_baseline_prompt_assets_and_multi_root() {
    let (_tmp, path) = example_layout(true);
    let mut doc = recorded_example();
    let fp = doc["fingerprint"].as_object_mut().unwrap();
    fp.insert("baseline".into(), serde_json::json!("1.30096.1"));
    fp.shift_remove("promptAssetsHash");
    fp.insert("skillSources".into(), serde_json::json!(["a", "b"]));
    let c = load(&path, doc);
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        vec![(
            "baseline".into(),
            "baseline moved 1.30096.1 → 1.34493.1 since record — re-record".into()
        )]
    );
    assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
    assert!(s.notes[0].starts_with("prompt-assets: cassette predates prompt-asset fingerprinting"));
    assert!(s.notes[1].starts_with("multi-root: cassette records 2 skill roots"));
    let mut doc = recorded_example();
    doc["fingerprint"]["promptAssetsHash"] = serde_json::json!("0000000000000000");
    let s = fingerprint::staleness::compute(&load(&path, doc), None);
    assert_eq!(classes_and_messages(&s)[0].0, "prompt-assets");
}

#[test]
fn staleness_scoped_drift_is_attributed_per_bucket() {
    // fx1 recorded scoped to `alpha` (buildFingerprint golden), then a shared
    // file and the skill's own file change.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("fx");
    let st = Command::new("bash")
        .arg(support::data("golden/make-fixtures.sh"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(st.status.success());
    let case = &expected()["cases"]["fx1-scoped-alpha"]["buildFingerprint"];
    let mut doc = recorded_example();
    doc.insert("fingerprint".into(), case["fingerprint"].clone());
    doc["fingerprint"]["baseline"] = serde_json::json!("1.34493.1");
    doc["fingerprint"]["promptAssetsHash"] = serde_json::json!("491afe2862dc67ea");
    doc["scenario"]["session"] = serde_json::json!("session-fx1.yaml");
    doc["scenario"]["skills"] = serde_json::json!(["alpha"]);
    let c = load(&dir.join("x.cassette.json"), doc);
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        Vec::<(String, String)>::new(),
        "raw fixture is clean"
    );
    std::fs::write(dir.join("fx1-plugin/README.md"), "changed").unwrap();
    std::fs::write(dir.join("fx1-plugin/skills/alpha/new.md"), "new").unwrap();
    std::fs::remove_file(dir.join("fx1-plugin/agents/helper.md")).unwrap();
    std::fs::write(dir.join("fx1-plugin/skills/beta/SKILL.md"), "out of scope").unwrap();
    let s = fingerprint::staleness::compute(&c, None);
    assert_eq!(
        classes_and_messages(&s),
        vec![
            (
                "shared-root".into(),
                "shared root changed since record (scope: skills/alpha) [1 changed (README.md); 1 removed (agents/helper.md)] — re-record".into()
            ),
            ("skill".into(), "skills/alpha changed since record [1 added (skills/alpha/new.md)] — re-record".into()),
        ]
    );
}

#[test]
fn file_sigs_cap_is_two_thousand_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("big");
    std::fs::create_dir_all(&root).unwrap();
    for i in 0..2000 {
        std::fs::write(root.join(format!("f{i:04}")), i.to_string()).unwrap();
    }
    let opts = WalkOptions {
        mode: ModeRequest::Raw,
        ..WalkOptions::default()
    };
    let snap = fingerprint::snapshot::walk(std::slice::from_ref(&root), &opts).unwrap();
    let fp = snap.record(HashFormat::Jcs1, None, vec![String::new()], &[]);
    assert_eq!(
        fp.file_sigs.as_ref().map(Vec::len),
        Some(2000),
        "exactly 2000 is kept"
    );
    assert_eq!(fp.file_sigs_omitted, None);
    // A symlink counts as an entry too.
    std::os::unix::fs::symlink("f0000", root.join("zz-link")).unwrap();
    let snap = fingerprint::snapshot::walk(std::slice::from_ref(&root), &opts).unwrap();
    let fp = snap.record(HashFormat::Jcs1, None, vec![String::new()], &[]);
    assert_eq!(fp.file_sigs, None);
    assert_eq!(fp.file_sigs_omitted, Some(true));
    assert!(fp.skill_hash.is_some() && fp.content_sig.is_some());
}

/// A batch reuses a root's tracked set while its index is unchanged; staging
/// or committing (which rewrites the index) must be seen by the next walk in
/// the same process.
#[test]
fn the_reused_tracked_set_follows_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("skill");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("SKILL.md"), "one").unwrap();
    git_commit_all(&root);
    let opts = WalkOptions {
        mode: ModeRequest::Git,
        ..WalkOptions::default()
    };
    let paths = |root: &Path| -> Vec<String> {
        let snap = fingerprint::snapshot::walk(&[root.to_path_buf()], &opts).unwrap();
        assert!(snap.git_mode);
        snap.entries.iter().map(|e| e.path.clone()).collect()
    };
    assert_eq!(paths(&root), ["SKILL.md"]);
    std::fs::write(root.join("helper.py"), "print(1)").unwrap();
    assert_eq!(paths(&root), ["SKILL.md"], "untracked: not in the set");
    git_stage_all(&root);
    assert_eq!(
        paths(&root),
        ["SKILL.md", "helper.py"],
        "staged: seen at once"
    );
    std::fs::remove_file(root.join("helper.py")).unwrap();
    git_stage_all(&root);
    assert_eq!(paths(&root), ["SKILL.md"], "unstaged again");
}
