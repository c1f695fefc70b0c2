//! A file whose body the cassette does not hold says why, in every command
//! that shows it (issue 28): an upload is never inlined by design, which is
//! not "too large or unreadable".

use serde_json::{Value, json};

use crate::support::{self, CassetteDoc, Fixture, RunExt};

/// `summarize-input`, its 83-byte upload grown to 1.2 KB (`bytes`, `sha256`)
/// as a second recording of a larger brief would have it.
fn with_upload(fx: &Fixture, name: &str, bytes: u64, sha: &str) -> std::path::PathBuf {
    let doc =
        CassetteDoc::from_file(&support::repo().join("cassettes/summarize-input.cassette.json"))
            .edit(|d| {
                for a in d["artifacts"].as_array_mut().unwrap() {
                    if a["path"] == "uploads/brief.txt" {
                        assert_eq!(a["truncationReason"], "input", "{a}");
                        a["bytes"] = json!(bytes);
                        a["sha256"] = json!(sha);
                    }
                }
            });
    let path = fx.path(name);
    doc.write(&path);
    path
}

#[test]
fn an_upload_is_not_reported_as_too_large_or_unreadable() {
    let fx = Fixture::new();
    let big = with_upload(&fx, "big.cassette.json", 1234, &"ab".repeat(32));
    let small = with_upload(&fx, "small.cassette.json", 83, &"cd".repeat(32));

    // verify-cassettes: nothing of an upload is in the cassette to leak.
    let out = support::reel()
        .args([
            "verify-cassettes",
            big.to_str().unwrap(),
            "--skip-staleness",
        ])
        .args(["--output-format", "json"])
        .run();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["results"][0]["findings"], json!([]), "{v}");

    // show: the reason, where "truncated: input" read as if it were cut.
    let show = support::reel().args(["show", big.to_str().unwrap()]).run();
    let line = show
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("uploads/brief.txt"))
        .unwrap_or_else(|| panic!("{}", show.stdout));
    insta::assert_snapshot!("show_upload_body_not_kept", line.trim());

    // diff: a changed upload says why there is no text to compare.
    let diff = support::reel()
        .args(["diff", small.to_str().unwrap(), big.to_str().unwrap()])
        .run();
    let files: Vec<&str> = diff
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("files:"))
        .take_while(|l| !l.starts_with("assertions:"))
        .collect();
    insta::assert_snapshot!("diff_upload_body_not_kept", files.join("\n"));
    for text in [&show.stdout, &diff.stdout, &out.stderr] {
        assert!(!text.contains("too large"), "{text}");
    }
}

#[test]
fn a_body_over_the_cap_says_so_in_one_clean_sentence() {
    let fx = Fixture::new();
    let doc =
        CassetteDoc::from_file(&support::repo().join("cassettes/summarize-input.cassette.json"))
            .edit(|d| {
                d["artifacts"].as_array_mut().unwrap().push(json!({
                    "path": "outputs/big.csv", "bytes": 70_000, "sha256": "ef".repeat(32),
                    "truncated": true, "truncationReason": "size"
                }));
            });
    let path = fx.path("c.cassette.json");
    doc.write(&path);
    let out = support::reel()
        .args([
            "verify-cassettes",
            path.to_str().unwrap(),
            "--skip-staleness",
        ])
        .args(["--skip-scenario-drift"])
        .run();
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("[unscanned]"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(
        !line.trim().contains("  "),
        "no run of spaces inside the sentence: {line}"
    );
    insta::assert_snapshot!("verify_body_over_cap", line.trim());
}
