//! Fingerprints against cowork-harness's golden vectors, the bundled example
//! cassette, and the staleness messages.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use reel::fingerprint::{self, EntryKind, HashFormat, ModeRequest, WalkOptions};
use serde_json::Value;

use crate::util;

fn expected() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let raw = std::fs::read_to_string(util::data("golden/expected.json")).unwrap();
        serde_json::from_str(&raw).unwrap()
    })
}

fn have_git() -> bool {
    let ok = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && util::in_ci() {
        panic!("git is required for the git-mode fingerprint tests (CI=true)");
    }
    ok
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
        cmd.arg(util::data("golden/make-fixtures.sh")).arg(&dir);
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
    if !have_git() {
        eprintln!("SKIPPED golden_fx7_git: no git CLI to build the fixture");
        return;
    }
    check_case("fx7-git");
}

#[test]
fn golden_fx7_git_scoped_alpha() {
    if !have_git() {
        eprintln!("SKIPPED golden_fx7_git_scoped_alpha: no git CLI to build the fixture");
        return;
    }
    check_case("fx7-git-scoped-alpha");
}

#[test]
fn golden_manifest_transforms_hash_the_recorded_bytes() {
    let mut checked = 0;
    for (id, case) in expected()["cases"].as_object().unwrap() {
        for m in case["manifestTransforms"].as_array().unwrap() {
            let raw = hex::decode(m["inputHex"].as_str().unwrap()).unwrap();
            let legacy = reel::fingerprint::manifest::legacy_hashed(&raw).into_owned();
            let jcs1 = reel::fingerprint::manifest::jcs1_hashed(&raw).map(|b| b.into_owned());
            for (key, out) in [("legacy", Ok(legacy)), ("jcs1", jcs1)] {
                let want = &m[key];
                match want["hex"].as_str().or(want["utf8Hex"].as_str()) {
                    Some(h) => assert_eq!(hex::encode(out.unwrap()), h, "{id} {} {key}", m["path"]),
                    None => assert!(out.is_err(), "{id} {} {key}: expected an error", m["path"]),
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 20, "only {checked} transforms checked");
}
