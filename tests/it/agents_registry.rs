//! The release list behind `reel agents` (issue #39 item 3): when the cached
//! list may stand in for the registry's and when it is asked again. The
//! registry here is a stand-in `npm` on PATH (a shell script that logs each
//! call and prints a list), so the tests need no network and count exactly
//! how often reel asks.

use std::path::{Path, PathBuf};

use crate::support::{self, RunExt};

/// A scratch `npm` whose `view … versions --json` prints `list` (or fails as
/// offline when `list` is `None`) and whose `install` fails with E404; every
/// call is appended to `<dir>/npm.log`.
struct FakeNpm {
    dir: tempfile::TempDir,
}

impl FakeNpm {
    fn new(list: Option<&str>) -> FakeNpm {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        let view = match list {
            Some(l) => format!("echo '{l}'; exit 0"),
            None => "echo 'npm error code ENOTFOUND' >&2; exit 1".to_owned(),
        };
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{log}'\ncase \"$1\" in\n  view) {view};;\n  \
             install) echo 'npm error code E404' >&2; exit 1;;\nesac\nexit 1\n",
            log = dir.path().join("npm.log").display()
        );
        let npm = dir.path().join("bin/npm");
        std::fs::write(&npm, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeNpm { dir }
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// The registry list reel keeps, written `age` ago.
    fn cache_list(&self, list: &str, age_secs: u64) {
        let file = self.cache().join("versions.json");
        std::fs::write(&file, list).unwrap();
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    fn views(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("npm.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("view"))
            .count()
    }

    fn reel(&self, args: &[&str]) -> support::run::Run {
        support::reel()
            .args(args)
            .env("PATH", self.dir.path().join("bin"))
            .env("REEL_AGENTS_DIR", self.cache())
            .run()
    }
}

fn kept(npm: &FakeNpm) -> String {
    let text = std::fs::read_to_string(npm.cache().join("versions.json")).unwrap();
    text.trim().to_owned()
}

const OLD: &str = r#"["2.1.112","2.1.300"]"#;
const NEW: &str = r#"["2.1.112","2.1.300","2.1.400"]"#;

#[test]
fn a_fresh_kept_list_is_reused_and_refresh_asks_again() {
    let npm = FakeNpm::new(Some(NEW));
    npm.cache_list(OLD, 60);
    let run = npm.reel(&["agents", "list", "--available"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "2.1.112\n2.1.300\n"),
        "{}",
        run.stderr
    );
    assert_eq!(npm.views(), 0);
    let run = npm.reel(&["agents", "list", "--available", "--refresh"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.ends_with("2.1.400\n"), "{}", run.stdout);
    assert_eq!(npm.views(), 1);
    assert_eq!(kept(&npm), NEW);
}

/// `latest` from a stale kept list (older than 10 minutes) asks the registry
/// (it once picked an old release from the kept list).
#[test]
fn latest_from_a_stale_kept_list_asks_the_registry() {
    let npm = FakeNpm::new(Some(NEW));
    npm.cache_list(OLD, 3 * 3600);
    let run = npm.reel(&["agents", "install", "latest"]);
    assert_eq!(npm.views(), 1, "{}", run.stderr);
    // The fake registry cannot install: the release asked for is the new one.
    assert!(run.stderr.contains("2.1.400"), "{}", run.stderr);
    assert_eq!(kept(&npm), NEW);
}

/// An exact release the fresh kept list lacks is looked up again before it
/// is refused; one the registry never published is bad input (exit 2) with a
/// hint naming no flag `agents install` lacks.
#[test]
fn an_exact_release_missing_from_the_kept_list_refreshes_it_first() {
    let npm = FakeNpm::new(Some(NEW));
    npm.cache_list(OLD, 60);
    let run = npm.reel(&["agents", "install", "2.1.400"]);
    assert_eq!(npm.views(), 1, "{}", run.stderr);
    assert!(
        !run.stderr.contains("no published release"),
        "{}",
        run.stderr
    );
    let run = npm.reel(&["agents", "install", "9.9.9"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(npm.views(), 2);
    assert!(
        run.stderr
            .contains("error: agents install: no published release matches `9.9.9`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("newest: 2.1.400"), "{}", run.stderr);
    assert!(!run.stderr.contains("--agent-version"), "{}", run.stderr);
}

/// Offline, the kept list is used with a warning that says how old it is.
#[test]
fn offline_the_kept_list_is_used_and_its_age_said() {
    let npm = FakeNpm::new(None);
    npm.cache_list(OLD, 3 * 3600 + 120);
    let run = npm.reel(&["agents", "list", "--available", "--refresh"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "2.1.112\n2.1.300\n");
    assert!(
        run.stderr.contains("the registry cannot be reached"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("3 h 2 min ago"), "{}", run.stderr);
    assert!(
        run.stderr.contains("newest release in it: 2.1.300"),
        "{}",
        run.stderr
    );
    // Nothing kept and offline: exit 3, as documented.
    let empty = FakeNpm::new(None);
    let run = empty.reel(&["agents", "install", "latest"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
}

/// `bisect` checks its cassette and its endpoints before it installs
/// anything: a missing cassette never reaches npm, an endpoint the registry
/// never published is exit 2.
#[test]
fn bisect_validates_before_any_download() {
    let npm = FakeNpm::new(Some(NEW));
    let args = |c: &Path| {
        vec![
            "bisect".to_owned(),
            c.display().to_string(),
            "--good".into(),
            "2.1.300".into(),
            "--bad".into(),
            "2.1.299".into(),
        ]
    };
    let a: Vec<String> = args(Path::new("/no/such/a.cassette.json"));
    let run = npm.reel(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(npm.views(), 0, "no registry call for a missing cassette");
    let cassette = support::repo().join("cassettes/write-note.cassette.json");
    let a = args(&cassette);
    let run = npm.reel(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--bad 2.1.299: no published release matches `2.1.299`"),
        "{}",
        run.stderr
    );
    let log = std::fs::read_to_string(npm.dir.path().join("npm.log")).unwrap();
    assert!(!log.contains("install"), "nothing installed: {log}");
}
