//! `reel record --rerecord-stale`, `--dry-run` and `--jobs N`, over a copy of
//! the bundled project (a git repository, as it was recorded in), with the
//! real Claude Code CLI against the scripted models.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::record::same_recording;
use crate::support;

/// The bundled project with its cassettes, committed.
fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    support::copy_tree(
        &support::repo().join("cassettes"),
        &tmp.path().join("cassettes"),
    );
    support::example_tree(tmp.path());
    tmp
}

fn git_commit_all(dir: &Path) {
    for args in [&["add", "-A"][..], &["commit", "-qm", "change"]] {
        let st = std::process::Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn record(dir: &Path, args: &[&str], claude: Option<&Path>) -> Output {
    let mut cmd = support::reel();
    cmd.current_dir(dir)
        .arg("record")
        .args(args)
        .env("REEL_RUNS_DIR", dir.join("runs"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("REEL_AGENT_CMD");
    match claude {
        Some(c) => cmd.env("REEL_CLAUDE_BIN", c),
        // A dry run must not need (or start) an agent.
        None => cmd.env("REEL_CLAUDE_BIN", "/nonexistent/claude"),
    };
    cmd.output().unwrap()
}

fn lines(o: &Output) -> BTreeSet<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// How many scenarios (= cassettes) the bundled project has.
fn bundled_count() -> usize {
    reel::discover::scenarios_in(&support::repo().join("scenarios"))
        .unwrap()
        .len()
}

const SKILL_CASSETTES: [&str; 2] = [
    "cassettes/skill-not-triggered.cassette.json",
    "cassettes/skill-triggered.cassette.json",
];

/// Changes the one bundled skill (a file added), committed.
fn change_the_skill(dir: &Path) {
    std::fs::write(dir.join("skills/note-style/extra.md"), "a new reference\n").unwrap();
    git_commit_all(dir);
}

#[test]
fn dry_run_lists_the_drifted_cassettes_and_writes_nothing() {
    let p = project();
    let before = tree(p.path());
    // Nothing drifted yet: nothing listed.
    let out = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--dry-run"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lines(&out).is_empty(), "{:?}", lines(&out));
    assert!(
        stderr(&out).contains(&format!("0 of {} cassette(s) drifted", bundled_count())),
        "{}",
        stderr(&out)
    );

    change_the_skill(p.path());
    let before_run = tree(p.path());
    let out = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--dry-run"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = lines(&out);
    assert_eq!(
        listed,
        SKILL_CASSETTES.iter().map(|s| s.to_string()).collect()
    );
    let err = stderr(&out);
    assert!(err.contains("1 added (extra.md)"), "{err}");
    assert!(err.contains("nothing was run or written"), "{err}");
    assert_eq!(tree(p.path()), before_run, "--dry-run wrote something");
    assert!(
        !p.path().join("runs").exists(),
        "--dry-run made a run directory"
    );
    assert_eq!(before.len() + 1, before_run.len());

    // A plain dry run of the scenarios lists every default cassette.
    let out = record(p.path(), &["scenarios/", "--dry-run"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out).len(), bundled_count(), "{:?}", lines(&out));
    assert_eq!(tree(p.path()), before_run);
}

#[test]
fn dry_run_applies_the_refusals() {
    let p = project();
    std::fs::write(
        p.path().join("scenarios/zz-broken.yaml"),
        "prompt: hi\nbogus_key: 1\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join("scenarios/zz-unscripted.yaml"),
        "name: zz-unscripted\nsession: ../sessions/lean.yaml\nfidelity: protocol\nprompt: hi\n",
    )
    .unwrap();
    let out = record(p.path(), &["scenarios/", "--dry-run"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("zz-broken.yaml") && err.contains("bogus_key"),
        "{err}"
    );
    assert!(
        err.contains("zz-unscripted.yaml` has no scripted model and no credential"),
        "{err}"
    );
    // The good ones are still listed.
    assert_eq!(lines(&out).len(), bundled_count(), "{err}");

    // A drifted cassette whose scenario is gone cannot be re-recorded.
    change_the_skill(p.path());
    std::fs::remove_file(p.path().join("scenarios/skill-triggered.yaml")).unwrap();
    let out = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--dry-run"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("scenarioSource ../scenarios/skill-triggered.yaml"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        lines(&out),
        BTreeSet::from([SKILL_CASSETTES[0].to_string()])
    );
}

#[test]
fn rerecord_stale_re_records_exactly_the_drifted_cassettes() {
    let claude = support::require!(support::claude_bin());
    let p = project();
    change_the_skill(p.path());
    let before = tree(p.path());
    let dry = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--dry-run"],
        None,
    );
    // --accept: in place (without it each drifted re-recording would go to
    // a `NAME.cassette.json.new` for `reel review`).
    let out = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--jobs", "2", "--accept"],
        Some(&claude),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(lines(&out), lines(&dry), "the run and the dry run disagree");
    let after = tree(p.path());
    for (path, bytes) in &before {
        let changed = after.get(path) != Some(bytes);
        let expected = SKILL_CASSETTES.iter().any(|c| Path::new(c) == path);
        assert_eq!(changed, expected, "{}: changed={changed}", path.display());
    }
    // The re-recorded cassettes are fresh again.
    let verify = support::reel()
        .current_dir(p.path())
        .args([
            "verify-cassettes",
            "cassettes/",
            "--allow-patterns-file",
            "cassettes/verify-allow.txt",
        ])
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let again = record(
        p.path(),
        &["cassettes/", "--rerecord-stale", "--dry-run"],
        None,
    );
    assert!(lines(&again).is_empty(), "{:?}", lines(&again));
}

/// One line a wrapper around claude logs per run.
#[derive(Debug)]
struct RunSeen {
    start: f64,
    end: f64,
    cwd: String,
    url: String,
    config: String,
    home: String,
}

#[test]
fn jobs_2_records_as_serial_does_and_isolates_every_run() {
    let claude = support::require!(support::claude_bin());
    let p = project();
    std::fs::remove_dir_all(p.path().join("cassettes")).unwrap();
    // The agent runs sandboxed with a fresh environment: the wrapper logs
    // into its own run directory (`$TMPDIR` is `<run>/tmp`), kept.
    let wrapper = p.path().join("claude-wrapper.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\n\
             start=$EPOCHREALTIME\n\
             {claude:?} \"$@\"\n\
             rc=$?\n\
             echo \"$start $EPOCHREALTIME cwd=$PWD url=$ANTHROPIC_BASE_URL config=$CLAUDE_CONFIG_DIR home=$HOME\" >> \"$TMPDIR/../isolation.log\"\n\
             exit $rc\n",
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    // The wrapper's own agent is not on its PATH: the sandbox is told.
    let install = claude.canonicalize().unwrap();
    let install = install
        .ancestors()
        .find(|a| a.ends_with("node_modules"))
        .unwrap();
    let mut cmd = support::reel();
    cmd.current_dir(p.path())
        .args(["record", "scenarios/", "--jobs", "2", "--keep-run-dir"])
        .env("REEL_RUNS_DIR", p.path().join("runs"))
        .env("REEL_SANDBOX_READ", install)
        .env("REEL_CLAUDE_BIN", &wrapper)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("REEL_AGENT_CMD");
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let written = lines(&out);
    let n = bundled_count();
    assert_eq!(written.len(), n, "{err}");
    assert_eq!(err.matches("(live verdict PASS)").count(), n, "{err}");
    // The same cassettes a serial recording wrote (the committed ones;
    // `the_committed_examples_re_record_identically_apart_from_volatile_fields`
    // re-records them serially), volatile fields aside.
    let compared = written.iter().filter(|c| {
        !support::VOLATILE_BY_DESIGN
            .iter()
            .any(|v| c.ends_with(&format!("/{v}.cassette.json")))
    });
    for c in compared {
        let scenario = format!(
            "scenarios/{}.yaml",
            c.trim_start_matches("cassettes/")
                .trim_end_matches(".cassette.json")
        );
        let d = same_recording(&scenario, &support::repo().join(c), &p.path().join(c));
        assert!(d.is_none(), "{c}: {}", d.unwrap());
    }

    let mut text = String::new();
    for scenario in std::fs::read_dir(p.path().join("runs")).unwrap().flatten() {
        for run in std::fs::read_dir(scenario.path()).unwrap().flatten() {
            text.push_str(
                &std::fs::read_to_string(run.path().join("isolation.log")).unwrap_or_default(),
            );
        }
    }
    let runs: Vec<RunSeen> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let field = |k: &str| {
                f.iter()
                    .find_map(|x| x.strip_prefix(k))
                    .unwrap_or_else(|| panic!("{k} missing in {l}"))
                    .to_owned()
            };
            RunSeen {
                start: f[0].parse().unwrap(),
                end: f[1].parse().unwrap(),
                cwd: field("cwd="),
                url: field("url="),
                config: field("config="),
                home: field("home="),
            }
        })
        .collect();
    assert_eq!(runs.len(), n, "{text}");
    for (what, get) in [
        (
            "work root",
            (|r: &RunSeen| r.cwd.clone()) as fn(&RunSeen) -> String,
        ),
        ("config dir", |r| r.config.clone()),
        ("home", |r| r.home.clone()),
    ] {
        let distinct: BTreeSet<String> = runs.iter().map(get).collect();
        assert_eq!(
            distinct.len(),
            runs.len(),
            "two runs shared a {what}: {text}"
        );
    }
    assert!(
        runs.iter().all(|r| r.url.starts_with("http://127.0.0.1:")),
        "{text}"
    );
    let mut overlapping = 0;
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            if a.start < b.end && b.start < a.end {
                overlapping += 1;
                assert_ne!(
                    a.url, b.url,
                    "two concurrent runs shared a model port: {text}"
                );
            }
        }
    }
    assert!(
        overlapping > 0,
        "--jobs 2 never ran two recordings at once: {text}"
    );
}
