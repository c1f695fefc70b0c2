//! Crash safety: `reel rehash` (and `reel record`) killed with SIGKILL at
//! seeded random points leave every cassette on disk byte-for-byte either the
//! old one or the complete new one, and no stray temp file is ever taken for a
//! cassette by directory discovery.
//!
//! How the kill points are chosen: one uninterrupted run is timed first; the
//! delays are then drawn uniformly over that whole duration (so early kills
//! land in start-up and loading, late ones in the write), from a seeded RNG
//! (`REEL_CRASH_SEED` overrides the fixed seed; it is printed on failure).
//! A kill only counts when the process was still running at the moment of
//! the kill; the loop runs until [`KILLS`] of those happened.
//!
//! What this does not cover: power loss (the fsyncs in `crate::atomic` are
//! trusted, not simulated).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::verify::Fixture;
use crate::util;

/// Real mid-run kills each scenario must survive.
const KILLS: usize = 100;
/// Give up (and fail) after this many attempts: a run too fast to be caught
/// mid-way would otherwise loop forever.
const MAX_ATTEMPTS: usize = 1_000;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::env::var("REEL_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x0C4A_5E5A_FE71_2026u64);
        Rng(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `[0, max)`.
    fn below(&mut self, max: Duration) -> Duration {
        let nanos = max.as_nanos().max(1) as u64;
        Duration::from_nanos(self.next() % nanos)
    }
}

fn reel_command() -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("reel"));
    cmd.env("NO_COLOR", "1")
        .env_remove("GITHUB_ACTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Median wall time of `n` uninterrupted runs (each from a fresh `reset`).
fn time_uninterrupted(n: usize, make: &dyn Fn() -> Command, reset: &dyn Fn()) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            reset();
            let t = Instant::now();
            let status = make().status().expect("spawn reel");
            let elapsed = t.elapsed();
            assert!(status.success(), "uninterrupted run failed: {status}");
            elapsed
        })
        .collect();
    times.sort();
    times[n / 2]
}

/// What a kill left behind.
#[derive(Debug, Default)]
struct Tally {
    attempts: usize,
    kills: usize,
    finished_first: usize,
    old_after_kill: usize,
    new_after_kill: usize,
}

/// Names in `dir` that directory discovery would take for a cassette.
fn cassette_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cassette.json"))
        .collect();
    names.sort();
    names
}

/// The kill loop shared by every scenario: `reset` puts the old bytes back,
/// `make` builds the command that rewrites `target`, `is_new` recognises the
/// complete new cassette (`Err` says why the bytes are not it).
fn kill_loop(
    what: &str,
    target: &Path,
    old: &[u8],
    is_new: &dyn Fn(&[u8]) -> Result<(), String>,
    make: &dyn Fn() -> Command,
    reset: &dyn Fn(),
) -> Tally {
    assert!(
        is_new(old).is_err(),
        "{what}: the run must change the cassette"
    );
    let run = time_uninterrupted(3, make, reset);
    let mut rng = Rng::seeded();
    let seed_note = format!("(seed: REEL_CRASH_SEED={})", rng.0);
    let expected_name = target.file_name().unwrap().to_string_lossy().into_owned();
    let dir = target.parent().unwrap();
    let mut tally = Tally::default();
    while tally.kills < KILLS {
        assert!(
            tally.attempts < MAX_ATTEMPTS,
            "{what}: only {} of {KILLS} kills landed mid-run in {MAX_ATTEMPTS} attempts \
             (uninterrupted run {run:?}) {seed_note}",
            tally.kills
        );
        tally.attempts += 1;
        reset();
        let delay = rng.below(run);
        let mut child = make().spawn().expect("spawn reel");
        std::thread::sleep(delay);
        let running = child.try_wait().expect("try_wait").is_none();
        // SIGKILL (std's kill on unix); a race with a natural exit is fine:
        // the kill then hits a zombie and the run simply counts as finished.
        let _ = child.kill();
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        let killed = running && status.signal() == Some(libc::SIGKILL);
        let now = std::fs::read(target).unwrap_or_else(|e| {
            panic!("{what}: cassette missing after a kill at {delay:?}: {e} {seed_note}")
        });
        let state = if now == old {
            "old"
        } else {
            match is_new(&now) {
                Ok(()) => "new",
                Err(why) => panic!(
                    "{what}: after a kill at {delay:?} the cassette is neither the old one ({} \
                     bytes) nor a complete new one ({} bytes: {why}) {seed_note}",
                    old.len(),
                    now.len()
                ),
            }
        };
        assert_eq!(
            cassette_names(dir),
            vec![expected_name.clone()],
            "{what}: a file beside the cassette looks like a cassette after a kill at {delay:?} \
             {seed_note}"
        );
        if killed {
            tally.kills += 1;
            if state == "old" {
                tally.old_after_kill += 1;
            } else {
                tally.new_after_kill += 1;
            }
        } else {
            tally.finished_first += 1;
            assert!(status.success(), "{what}: run failed on its own: {status}");
            assert_eq!(state, "new", "{what}: a finished run left the old cassette");
        }
    }
    eprintln!("{what}: uninterrupted run {run:?}, {tally:?} {seed_note}");
    tally
}

#[test]
fn rehash_killed_at_random_points_leaves_old_or_new_cassette() {
    let fx = Fixture::new();
    let legacy = std::fs::read(fx.scratch.join("legacy/legacy-pdf.cassette.json")).unwrap();
    let rehash = |target: &Path| {
        let mut cmd = reel_command();
        cmd.args(["rehash", target.to_str().unwrap(), "--session"])
            .arg("examples/sessions/default.yaml")
            .current_dir(&fx.peer);
        cmd
    };

    // The expected new bytes: an uninterrupted run on a copy.
    let reference = fx.scratch.join("reference/legacy-pdf.cassette.json");
    std::fs::create_dir_all(reference.parent().unwrap()).unwrap();
    std::fs::write(&reference, &legacy).unwrap();
    let out = rehash(&reference).stderr(Stdio::piped()).output().unwrap();
    assert!(
        out.status.success(),
        "reference rehash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let migrated = std::fs::read(&reference).unwrap();
    // Sanity: the migration is the v11 -> v12 upgrade and the result loads.
    let doc: serde_json::Value = serde_json::from_slice(&migrated).unwrap();
    assert_eq!(doc["cassetteVersion"], 12);
    assert_eq!(doc["fingerprint"]["hashFormat"], "jcs1");
    reel::cassette::Cassette::load(&reference).expect("migrated cassette loads");

    let target: PathBuf = fx.scratch.join("crash/legacy-pdf.cassette.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let tally = kill_loop(
        "rehash",
        &target,
        &legacy,
        &|b: &[u8]| {
            if b == migrated.as_slice() {
                Ok(())
            } else {
                Err("not the bytes of the uninterrupted migration".into())
            }
        },
        &|| rehash(&target),
        &|| std::fs::write(&target, &legacy).unwrap(),
    );
    assert!(
        tally.old_after_kill > 0,
        "no kill landed before the write: {tally:?}"
    );

    // Whatever strays the kills left, discovery still sees one cassette.
    std::fs::write(&target, &migrated).unwrap();
    let out = util::reel()
        .args(["verify-cassettes", "--output-format", "json"])
        .arg(target.parent().unwrap())
        .current_dir(&fx.peer)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("verify json: {e}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        v["results"].as_array().map(Vec::len),
        Some(1),
        "verify-cassettes took a stray file for a cassette: {v:#}"
    );
}
