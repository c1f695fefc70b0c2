//! The digests cowork-harness added after 2.0.0, against golden vectors
//! computed under Node from the documented algorithms
//! (tests/data/golden/after-2.0.mjs): `sessionFingerprint` with `projects`,
//! `workspaceFixtureSig` / `workspaceFixtureFileSigs`; and the `fixture` /
//! `unverifiable-fixture` staleness classes, case by case after the original's
//! test/cassette-v14-workspace-fixture.test.ts ("computeStaleness — the
//! fixture signature" and "replay gate").

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use reel::fingerprint::staleness::{self, FindingClass, Gate};
use reel::fingerprint::{self, ShapeCoverage, fixture};
use reel::scenario::session::Session;
use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture, RunExt};

fn golden() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let raw = std::fs::read_to_string(support::data("golden/after-2.0.json")).unwrap();
        serde_json::from_str(&raw).unwrap()
    })
}

#[test]
fn session_fingerprint_hashes_projects_like_the_original() {
    for case in golden()["session"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let s = Session::parse(case["yaml"].as_str().unwrap(), Path::new("s.yaml")).unwrap();
        assert_eq!(
            reel::js::json::legacy_serde(&fingerprint::session_shape(&s)),
            case["shapeJson"].as_str().unwrap(),
            "{id}: shape"
        );
        assert_eq!(
            fingerprint::session_fingerprint_of(&s),
            case["expected"].as_str().unwrap(),
            "{id}"
        );
        assert_eq!(
            fingerprint::session_fingerprint_covering(&s, ShapeCoverage::BeforeProjects),
            case["beforeProjectsExpected"].as_str().unwrap(),
            "{id}: the 2.0.0 shape"
        );
    }
}

/// A session without projects hashes exactly as under 2.0.0 (the anchor
/// upstream committed), so no v12 cassette moves.
#[test]
fn session_fingerprint_without_projects_is_unchanged() {
    let anchor = {
        let raw = std::fs::read_to_string(support::data("golden/expected.json")).unwrap();
        let doc: Value = serde_json::from_str(&raw).unwrap();
        doc["upstreamAnchor"]["sessionFingerprint"]["minimalExpected"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    for yaml in ["", "projects: []\n"] {
        let s = Session::parse(yaml, Path::new("s.yaml")).unwrap();
        assert_eq!(fingerprint::session_fingerprint_of(&s), anchor, "{yaml:?}");
    }
}

fn plant(dir: &Path, files: &Value) {
    for f in files.as_array().unwrap() {
        let path = dir.join(f[0].as_str().unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, f[1].as_str().unwrap()).unwrap();
        let mode = if f[2].as_bool().unwrap() {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
fn workspace_fixture_signature_matches_the_golden_vectors() {
    for case in golden()["fixture"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        plant(tmp.path(), &case["files"]);
        let scan = fixture::scan(tmp.path(), id).unwrap();
        assert_eq!(
            scan.sig,
            case["workspaceFixtureSig"].as_str().unwrap(),
            "{id}"
        );
        let sigs: Vec<(String, String)> =
            serde_json::from_value(case["workspaceFixtureFileSigs"].clone()).unwrap();
        assert_eq!(scan.file_sigs, sigs, "{id}");
    }
}

#[test]
fn workspace_fixture_scan_refuses_what_the_original_refuses() {
    let fx = Fixture::new();
    fx.write("ok/report.md", "x");
    fx.write("cfg/.claude/settings.json", "{}");
    fx.write("cfg/CLAUDE.md", "x");
    fx.write("junk/.DS_Store", "x");
    fx.write("linked/a.md", "x");
    std::os::unix::fs::symlink("/etc/hosts", fx.path("linked/link")).unwrap();
    fx.write("hard/a.md", "x");
    std::fs::hard_link(fx.path("hard/a.md"), fx.path("hard/b.md")).unwrap();
    assert!(fixture::scan(&fx.path("ok"), "ok").is_ok());
    let err = |rel: &str| fixture::scan(&fx.path(rel), rel).unwrap_err().0;
    assert_eq!(err("gone"), "workspace_fixture gone: no such directory");
    assert_eq!(
        err("ok/report.md"),
        "workspace_fixture ok/report.md: not a directory"
    );
    let cfg = err("cfg");
    assert!(cfg.contains("2 problem(s)"), "{cfg}");
    assert!(cfg.contains(".claude is agent configuration"), "{cfg}");
    assert!(err("junk").contains("holds no file to stage"));
    assert!(err("linked").contains("\"link\" is a symlink"));
    assert!(err("hard").contains("second hard link"));
}

/// A cassette dir holding `fixtures/step1/` and a cassette recorded against
/// it (the fixture stored cassette-relative), as the original's `recorded()`.
struct Recorded {
    _tmp: tempfile::TempDir,
    fixture: PathBuf,
    path: PathBuf,
    doc: CassetteDoc,
}

fn recorded() -> Recorded {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let fixture = dir.join("fixtures/step1");
    std::fs::create_dir_all(fixture.join("data")).unwrap();
    std::fs::write(fixture.join("report.md"), "# step 1\n").unwrap();
    std::fs::write(fixture.join("data/scores.json"), "{\"s\":1}\n").unwrap();
    for f in ["report.md", "data/scores.json"] {
        std::fs::set_permissions(fixture.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let scan = fixture::scan(&fixture, "fixtures/step1").unwrap();
    let doc = CassetteDoc::minimal()
        .set("cassetteVersion", json!(14))
        .set("scenario.workspace_fixture", json!("fixtures/step1"))
        .set("scenario.session", json!("(inline)"))
        .set("scenario.assert", json!([{"result": "success"}]))
        .set(
            "fingerprint",
            json!({
                "baseline": staleness::latest_baseline::APP_VERSION,
                "hashFormat": "jcs1",
                "workspaceFixtureSig": scan.sig,
                "workspaceFixtureFileSigs": scan.file_sigs,
            }),
        )
        .set(
            "events",
            json!([
                "{\"type\":\"system\",\"subtype\":\"init\",\"tools\":[]}",
                "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}",
            ]),
        );
    let path = dir.join("c.cassette.json");
    doc.write(&path);
    Recorded {
        _tmp: tmp,
        fixture,
        path,
        doc,
    }
}

fn fixture_findings(r: &Recorded, doc: &CassetteDoc) -> Vec<(FindingClass, String)> {
    let c = reel::cassette::Cassette::unchecked(&r.path, doc.doc().clone(), 14);
    staleness::compute(&c, None)
        .findings
        .into_iter()
        .filter(|f| f.class.as_str().contains("fixture"))
        .map(|f| (f.class, f.message))
        .collect()
}

fn classes(r: &Recorded) -> Vec<FindingClass> {
    fixture_findings(r, &r.doc)
        .into_iter()
        .map(|f| f.0)
        .collect()
}

#[test]
fn an_unchanged_fixture_is_clean() {
    let r = recorded();
    assert_eq!(classes(&r), []);
}

#[test]
fn a_content_edit_is_a_fixture_finding_naming_the_file() {
    let r = recorded();
    std::fs::write(r.fixture.join("data/scores.json"), "{\"s\":2}\n").unwrap();
    let f = fixture_findings(&r, &r.doc);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, FindingClass::Fixture);
    assert!(f[0].1.contains("data/scores.json"), "{}", f[0].1);
}

#[test]
fn an_added_or_removed_file_is_a_fixture_finding() {
    let r = recorded();
    std::fs::write(r.fixture.join("extra.md"), "x").unwrap();
    assert!(fixture_findings(&r, &r.doc)[0].1.contains("extra.md"));
    std::fs::remove_file(r.fixture.join("extra.md")).unwrap();
    std::fs::remove_file(r.fixture.join("report.md")).unwrap();
    assert!(fixture_findings(&r, &r.doc)[0].1.contains("report.md"));
}

#[test]
fn only_the_exec_bit_of_the_mode_is_drift() {
    let r = recorded();
    let report = r.fixture.join("report.md");
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(classes(&r), []);
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(classes(&r), [FindingClass::Fixture]);
}

#[test]
fn a_missing_fixture_dir_is_unverifiable() {
    let r = recorded();
    std::fs::remove_dir_all(&r.fixture).unwrap();
    let f = fixture_findings(&r, &r.doc);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, FindingClass::UnverifiableFixture);
    assert!(
        f[0].1
            .starts_with("workspace_fixture fixtures/step1: no such directory"),
        "{}",
        f[0].1
    );
}

#[test]
fn a_fixture_the_scan_now_refuses_is_unverifiable_not_a_crash() {
    let r = recorded();
    std::os::unix::fs::symlink("/etc/hosts", r.fixture.join("link")).unwrap();
    assert_eq!(classes(&r), [FindingClass::UnverifiableFixture]);
}

#[test]
fn no_recorded_signature_is_unverifiable_never_a_silent_skip() {
    let r = recorded();
    let bare = r.doc.clone().set(
        "fingerprint",
        json!({"baseline": staleness::latest_baseline::APP_VERSION}),
    );
    let f = fixture_findings(&r, &bare);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].0, FindingClass::UnverifiableFixture);
}

#[test]
fn a_scenario_without_a_fixture_gets_no_fixture_finding() {
    let r = recorded();
    let plain = r.doc.clone().remove("scenario.workspace_fixture");
    assert_eq!(fixture_findings(&r, &plain), []);
}

/// The gate: `fixture` warns by default and fails under
/// `--fail-on-skill-drift`, an explicit `--session` and `--strict`;
/// `unverifiable-fixture` fails the bare gate.
#[test]
fn fixture_drift_warns_unverifiable_fixture_fails() {
    let r = recorded();
    std::fs::write(r.fixture.join("report.md"), "edited").unwrap();
    let c = reel::cassette::Cassette::unchecked(&r.path, r.doc.doc().clone(), 14);
    let s = staleness::compute(&c, None);
    assert!(s.failures(Gate::Bare).is_empty());
    for gate in [Gate::FailOnSkillDrift, Gate::ExplicitSession, Gate::Strict] {
        assert_eq!(s.failures(gate).len(), 1, "{gate:?}");
    }
    std::fs::remove_dir_all(&r.fixture).unwrap();
    let s = staleness::compute(&c, None);
    assert_eq!(s.failures(Gate::Bare).len(), 1);
}

/// End to end, after the original's verify test: a fixture directory gone is
/// could-not-verify (exit 3); drift is a real finding (exit 1).
#[test]
fn verify_cassettes_exit_codes_for_the_fixture_classes() {
    let r = recorded();
    let run = |r: &Recorded| {
        support::reel()
            .args(["verify-cassettes", "--output-format", "json"])
            .arg(&r.path)
            .run()
    };
    let clean = run(&r);
    assert_eq!(clean.code, 0, "{}", clean.streams());
    std::fs::write(r.fixture.join("report.md"), "edited").unwrap();
    let drift = run(&r);
    assert_eq!(drift.code, 1, "{}", drift.streams());
    assert!(
        drift
            .stdout
            .contains("workspace_fixture fixtures/step1 changed")
    );
    std::fs::remove_dir_all(&r.fixture).unwrap();
    let gone = run(&r);
    assert_eq!(gone.code, 3, "{}", gone.streams());
    assert!(gone.stdout.contains("no such directory"));
}

/// A cassette whose `sessionFingerprint` was taken before `projects` joined
/// the shape, for a session that declares projects: neither clean nor drift
/// (the original's `sessionFingerprintDrift` says unverifiable) — exit 3.
#[test]
fn verify_cassettes_pre_projects_session_fingerprint_is_unverifiable() {
    let fx = Fixture::new();
    let yaml = "projects:\n  - uuid: u1\n    from: ./one\n";
    fx.write("s.yaml", yaml);
    let s = Session::parse(yaml, Path::new("s.yaml")).unwrap();
    let old = fingerprint::session_fingerprint_covering(&s, ShapeCoverage::BeforeProjects);
    let doc = CassetteDoc::minimal()
        .set("scenario.session", json!("s.yaml"))
        .set(
            "fingerprint.baseline",
            json!(staleness::latest_baseline::APP_VERSION),
        )
        .set("sessionFingerprint", json!(old));
    let path = fx.path("c.cassette.json");
    doc.write(&path);
    let verify = || {
        support::reel()
            .args(["verify-cassettes", "--output-format", "json"])
            .arg(&path)
            .run()
    };
    let r = verify();
    assert_eq!(r.code, 3, "{}", r.streams());
    assert!(
        r.stdout.contains("predates `projects` coverage"),
        "{}",
        r.streams()
    );
    let current = fingerprint::session_fingerprint_of(&s);
    doc.set("sessionFingerprint", json!(current)).write(&path);
    let r = verify();
    assert_eq!(r.code, 0, "{}", r.streams());
}
