//! `verify-cassettes` and the skill's own published text (README departure):
//! an email, domain, figure or path the run echoes from the skill tree its
//! session names is reported as published by the skill and does not fail the
//! gate; a secret is never waived, even when the skill file holds it, and
//! text the skill does not hold still fails.

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture, RunExt, assert_schema};

const SKILL_MD: &str = "---\nname: acme-report\ndescription: Builds the Acme Widgets report.\n---\n\
# Acme Widgets report\n\nQuestions go to support@acmewidgets.io; the manual is at \
acmewidgets.io/manual. Plans start at $49.\n";

/// A GitHub token, planted in the skill file AND echoed by the run.
fn planted_token() -> String {
    format!("ghp_{}", "Q7x".repeat(12))
}

/// A fixture laid out as a project: the cassette of `skill-triggered` with
/// its session pointing at `skills/acme-report`, whose events also carry
/// `echoed` (as a run quoting the skill would).
fn project(skill_md: &str, echoed: &[String]) -> (Fixture, std::path::PathBuf) {
    let fx = Fixture::new();
    fx.write("skills/acme-report/SKILL.md", skill_md);
    fx.write(
        "sessions/skill.yaml",
        "permission_mode: default\nskills:\n  local:\n    - ../skills/acme-report\n",
    );
    // The skill's body as the agent loads it, an assistant reply, a tool
    // result: lines scanned with every detector (not the init manifest).
    const SLOTS: [usize; 3] = [11, 28, 23];
    let mut i = 0;
    let doc =
        CassetteDoc::from_file(&support::repo().join("cassettes/skill-triggered.cassette.json"))
            .edit_lines("events", |line| {
                if let Some(text) = SLOTS
                    .iter()
                    .position(|s| *s == i)
                    .and_then(|k| echoed.get(k))
                {
                    line["reel_note"] = json!(text);
                }
                i += 1;
            });
    let path = fx.path("cassettes/acme.cassette.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    doc.write(&path);
    (fx, path)
}

/// `verify-cassettes PATH --skip-staleness` (JSON output when `json`).
pub(crate) fn verify(path: &std::path::Path, json: bool) -> support::Run {
    let mut cmd = support::reel();
    cmd.args([
        "verify-cassettes",
        path.to_str().unwrap(),
        "--skip-staleness",
    ]);
    if json {
        cmd.args(["--output-format", "json"]);
    }
    cmd.run()
}

/// The findings of the one cassette of a JSON report, checked against its schema.
pub(crate) fn findings(out: &support::Run) -> Vec<Value> {
    let v: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_schema("verify-cassettes.json", &v);
    v["results"][0]["findings"].as_array().unwrap().clone()
}

#[test]
fn text_the_skill_publishes_is_reported_but_passes() {
    let echoed = vec![
        "Contact support@acmewidgets.io for help".to_owned(),
        "Read acmewidgets.io/manual first; plans start at $49.".to_owned(),
    ];
    let (_fx, path) = project(SKILL_MD, &echoed);
    let out = verify(&path, true);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    // email, domain (twice: in the address and the manual's link), currency
    assert!(found.len() >= 3, "{found:?}");
    for f in &found {
        assert_eq!(
            f["publishedBy"], "../skills/acme-report/SKILL.md",
            "every finding is the skill's own text: {f}"
        );
    }
    let text = verify(&path, false);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let line = text
        .stderr
        .lines()
        .find(|l| l.contains("[email]"))
        .unwrap_or_else(|| panic!("{}", text.stderr));
    assert!(
        line.ends_with("— published by the skill (../skills/acme-report/SKILL.md), not counted"),
        "{line}"
    );
}

#[test]
fn a_secret_or_text_the_skill_does_not_hold_still_fails() {
    let skill = format!("{SKILL_MD}\nDeploy token: {}\n", planted_token());
    let echoed = vec![
        format!("Contact support@acmewidgets.io, token {}", planted_token()),
        "cc jane.doe@acme-corp.com".to_owned(),
    ];
    let (_fx, path) = project(&skill, &echoed);
    let out = verify(&path, true);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let found = findings(&out);
    let by = |cls: &str, sample: &str| {
        found
            .iter()
            .find(|f| f["cls"] == cls && f["sample"].as_str().unwrap().contains(sample))
            .unwrap_or_else(|| panic!("no {cls} {sample} in {found:?}"))
    };
    assert_eq!(
        by("email", "support@")["publishedBy"],
        "../skills/acme-report/SKILL.md"
    );
    assert!(by("email", "jane.doe@").get("publishedBy").is_none());
    let secret = by("secret", "ghp_");
    assert!(secret.get("publishedBy").is_none(), "{secret}");
    assert!(
        !secret["sample"]
            .as_str()
            .unwrap()
            .contains(&planted_token())
    );
}

#[test]
fn without_a_resolvable_skill_tree_nothing_is_waived() {
    let echoed = vec!["Contact support@acmewidgets.io for help".to_owned()];
    let (fx, path) = project(SKILL_MD, &echoed);
    std::fs::remove_dir_all(fx.path("skills")).unwrap();
    let out = verify(&path, true);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        findings(&out)
            .iter()
            .all(|f| f.get("publishedBy").is_none())
    );
}
