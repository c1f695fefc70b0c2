//! The README's one exit-code table, every command's `--help` and the
//! commands' behaviour agree (issue #39): each command of `reel --help` has a
//! row, its codes are the ones its help's `Exit codes:` paragraph lists, and
//! one bad-input case per command exits 2 before any download or agent start
//! (no `npm`, no agent, an empty release cache: a command that reached for
//! any of them would exit 3 instead). Also the one-line refusal of a
//! cassette given where a scenario is expected.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::{self, RunExt};

/// The README table: command → its codes.
fn readme_table() -> BTreeMap<String, BTreeSet<u8>> {
    let text = std::fs::read_to_string(support::repo().join("README.md")).unwrap();
    let section = text
        .split("## Exit codes\n")
        .nth(1)
        .expect("README has an `## Exit codes` section");
    let section = section.split("\n## ").next().unwrap();
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `reel ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let command = cells[1]
            .trim_matches('`')
            .trim_start_matches("reel ")
            .to_owned();
        let codes = cells[2]
            .split_whitespace()
            .map(|c| c.parse().unwrap_or_else(|_| panic!("{line}: code {c:?}")))
            .collect();
        assert!(rows.insert(command, codes).is_none(), "{line}: twice");
    }
    rows
}

/// The subcommands `reel --help` lists (`help` aside).
fn commands() -> Vec<String> {
    let run = support::reel().arg("--help").run();
    let listing = run.stdout.split("Commands:\n").nth(1).unwrap();
    let listing = listing.split("\n\n").next().unwrap();
    listing
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// The codes a command's help lists: its paragraph starting `Exit codes:`,
/// items separated by `;` or `·`, each starting with its code.
fn help_codes(command: &str) -> Option<BTreeSet<u8>> {
    let run = support::reel().args([command, "--help"]).run();
    let joined = run
        .stdout
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|p| p.contains("Exit codes:"))?;
    let after = joined.split("Exit codes:").nth(1)?;
    Some(
        after
            .split([';', '·'])
            .filter_map(|item| {
                let item = item.trim();
                let (code, rest) = item.split_once(' ')?;
                (code.len() == 1 && !rest.is_empty())
                    .then(|| code.parse().ok())
                    .flatten()
            })
            .collect(),
    )
}

#[test]
fn every_command_has_one_row_and_its_help_lists_the_same_codes() {
    let table = readme_table();
    let mut wrong = Vec::new();
    for c in commands() {
        let Some(row) = table.get(&c) else {
            wrong.push(format!("{c}: no row in the README's exit-code table"));
            continue;
        };
        match help_codes(&c) {
            None => wrong.push(format!(
                "{c}: `reel {c} --help` has no `Exit codes:` paragraph"
            )),
            Some(help) if &help != row => {
                wrong.push(format!("{c}: README {row:?} but --help {help:?}"))
            }
            Some(_) => {}
        }
        if !row.contains(&2) {
            wrong.push(format!("{c}: every command exits 2 on usage errors"));
        }
    }
    let listed: BTreeSet<String> = commands().into_iter().collect();
    for c in table.keys().filter(|c| !listed.contains(*c)) {
        wrong.push(format!("{c}: a README row for no command"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One bad-input case per command: (arguments, what stderr names).
const BAD_INPUT: &[(&[&str], &str)] = &[
    (&["record", "/no/such/scenario.yaml"], "scenario.yaml"),
    (&["replay", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["rerun", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["verify-cassettes", "--max-age", "soon", "."], "max-age"),
    (&["rehash", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["fingerprint", "/no/such/skill"], "skill"),
    (
        &["model", "extract", "/no/such/a.cassette.json"],
        "a.cassette.json",
    ),
    (&["doctor", "--no-such-flag"], "--no-such-flag"),
    (&["scaffold", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["lint", "/no/such/scenario.yaml"], "scenario.yaml"),
    (&["assertions", "no_such_key"], "no_such_key"),
    (
        &[
            "diff",
            "/no/such/a.cassette.json",
            "/no/such/b.cassette.json",
        ],
        "a.cassette.json",
    ),
    (&["show", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["report", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["review", "/no/such/dir"], "needs a terminal"),
    (&["accept", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["reject", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["pending", "--no-such-flag"], "--no-such-flag"),
    (&["regrade", "/no/such/a.cassette.json"], "a.cassette.json"),
    (&["agents", "install", "lates"], "lates"),
    (
        &[
            "bisect",
            "/no/such/a.cassette.json",
            "--good",
            "2.1.112",
            "--bad",
            "2.1.332",
        ],
        "a.cassette.json",
    ),
    (&["eval", "/no/such/scenario.yaml"], "--arm"),
    (&["gc", "--older-than", "soon"], "soon"),
    (&["import", "plugin-eval", "/no/such/plugin"], "plugin"),
    (
        &["export", "plugin-eval", "/no/such/s.yaml", "--out", "p"],
        "s.yaml",
    ),
];

#[test]
fn bad_input_exits_2_before_any_download_or_agent_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (cache, bin, home) = (
        tmp.path().join("agents"),
        tmp.path().join("bin"),
        tmp.path().join("home"),
    );
    for d in [&cache, &bin, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut wrong = Vec::new();
    let mut covered = BTreeSet::new();
    for (args, names) in BAD_INPUT {
        covered.insert(args[0].to_owned());
        let run = support::reel()
            .current_dir(tmp.path())
            .args(*args)
            .env("PATH", &bin)
            .env("HOME", &home)
            .env("REEL_AGENTS_DIR", &cache)
            .env("REEL_RUNS_DIR", tmp.path().join("runs"))
            .env("REEL_CLAUDE_BIN", "/no/such/claude")
            .env_remove("XDG_CACHE_HOME")
            .run();
        if run.code != 2 || !run.stderr.contains(names) {
            wrong.push(format!(
                "reel {}: exit {}\n{}",
                args.join(" "),
                run.code,
                run.stderr
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    let listed: BTreeSet<String> = commands().into_iter().collect();
    assert_eq!(covered, listed, "one bad-input case per command");
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "nothing was downloaded into the release cache"
    );
}

/// Issue #39 item 10: a cassette given to a command that takes scenarios is
/// named as one, on one line, exit 2 (it once printed 43 lines of YAML
/// errors).
#[test]
fn a_cassette_given_as_a_scenario_is_one_line_pointing_at_replay() {
    let cassette = support::repo().join("cassettes/write-note.cassette.json");
    for command in ["record", "lint"] {
        let run = support::reel().arg(command).arg(&cassette).run();
        assert_eq!(run.code, 2, "{command}: {}", run.streams());
        assert_eq!(run.stderr.lines().count(), 1, "{command}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("is a cassette, not a scenario: use `reel replay"),
            "{command}: {}",
            run.stderr
        );
    }
    // Named otherwise, it is still known by its contents.
    let tmp = tempfile::tempdir().unwrap();
    let renamed = tmp.path().join("recording.json");
    std::fs::copy(&cassette, &renamed).unwrap();
    let run = support::reel().arg("lint").arg(&renamed).run();
    assert_eq!(
        (run.code, run.stderr.lines().count()),
        (2, 1),
        "{}",
        run.stderr
    );
    // --rerecord-stale takes cassettes by design.
    let run = support::reel()
        .args(["record", "--rerecord-stale", "--dry-run"])
        .arg(Path::new(&cassette))
        .run();
    assert!(!run.stderr.contains("is a cassette"), "{}", run.stderr);
}

/// Issue #39 item 10: `reel --help` names the formats reel reads.
#[test]
fn top_level_help_names_the_cassette_versions_read() {
    let run = support::reel().arg("--help").run();
    assert!(run.stdout.contains("v9–v16"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("cowork-harness v12."),
        "{}",
        run.stdout
    );
}

/// Issue #39 item 9: `reel --version` names the commit it was built from.
#[test]
fn version_names_the_commit_built_from() {
    let run = support::reel().arg("--version").run();
    let line = run.stdout.trim();
    let head = std::process::Command::new("git")
        .current_dir(support::repo())
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    assert_eq!(
        line,
        format!("reel {} ({head})", env!("CARGO_PKG_VERSION")),
        "{}",
        run.stderr
    );
}
