//! Crash safety: `reel rehash` and `reel record` killed with SIGKILL at
//! seeded random points leave every cassette on disk byte-for-byte either the
//! old one or the complete new one, and no stray temp file is ever taken for a
//! cassette by directory discovery.
//!
//! How the kill points are chosen: one uninterrupted run is timed first; the
//! delays are then drawn uniformly over that whole duration (so early kills
//! land in start-up and loading, late ones in the write), from a seeded RNG
//! (`REEL_CRASH_SEED` overrides the fixed seed; it is printed on failure).
//! A kill only counts when the process was still running at the moment of
//! the kill; the loop runs until [`KILLS`] of those happened, then adds
//! [`TAIL_KILLS`] aimed at the write itself.
//!
//! What this does not cover: power loss (the fsyncs in `crate::atomic` are
//! trusted, not simulated).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support;
use crate::support::{Fixture, Rng};

/// Real mid-run kills each scenario must survive, delays uniform over the
/// whole run.
const KILLS: usize = 100;
/// Then this many more aimed at the write itself (uniform delays rarely land
/// there): each waits until a temp file appears beside the target (or the
/// target changes), then kills after a random 0-2 ms.
const TAIL_KILLS: usize = 20;
/// Give up (and fail) after this many attempts: a run too fast to be caught
/// mid-way would otherwise loop forever.
const MAX_ATTEMPTS: usize = 3_000;

/// The kill-delay seed: `REEL_CRASH_SEED`, else a fixed one.
fn crash_seed() -> u64 {
    std::env::var("REEL_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0C4A_5E5A_FE71_2026u64)
}

/// Uniform in `[0, max)`.
fn delay_below(rng: &mut Rng, max: Duration) -> Duration {
    let nanos = max.as_nanos().max(1) as u64;
    Duration::from_nanos(rng.below(nanos))
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

/// Shortest wall time of `n` uninterrupted runs (each from a fresh `reset`):
/// on a loaded machine the shortest is the best estimate of the run itself.
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
    times[0]
}

/// Names in `dir` (strays of earlier kills included).
fn names_in(dir: &Path) -> std::collections::BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect()
}

/// Sleeps until the run has started writing `target` — a new temp file
/// beside it (`present` holds the names there before the spawn) or the
/// target's bytes changed — or the child exited, polling finely.
fn wait_for_write(
    child: &mut std::process::Child,
    target: &Path,
    old: &[u8],
    present: &std::collections::BTreeSet<std::ffi::OsString>,
) {
    let dir = target.parent().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if child.try_wait().expect("try_wait").is_some() {
            return;
        }
        let temp_seen = names_in(dir).iter().any(|n| !present.contains(n));
        if temp_seen || std::fs::read(target).is_ok_and(|b| b != old) {
            return;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
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
    let run = time_uninterrupted(5, make, reset);
    let seed = crash_seed();
    let mut rng = Rng::new(seed);
    let seed_note = format!("(seed: REEL_CRASH_SEED={})", seed | 1);
    let expected_name = target.file_name().unwrap().to_string_lossy().into_owned();
    let dir = target.parent().unwrap();
    let mut tally = Tally::default();
    while tally.kills < KILLS + TAIL_KILLS {
        assert!(
            tally.attempts < MAX_ATTEMPTS,
            "{what}: only {} of {} kills landed mid-run in {MAX_ATTEMPTS} attempts \
             (uninterrupted run {run:?}) {seed_note}",
            tally.kills,
            KILLS + TAIL_KILLS
        );
        tally.attempts += 1;
        reset();
        let present = names_in(dir);
        let mut child = make().spawn().expect("spawn reel");
        let delay = if tally.kills < KILLS {
            delay_below(&mut rng, run)
        } else {
            wait_for_write(&mut child, target, old, &present);
            delay_below(&mut rng, Duration::from_millis(2))
        };
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
    let fx = Fixture::capture_layout();
    let legacy = std::fs::read(fx.scratch().join("legacy/legacy-pdf.cassette.json")).unwrap();
    let rehash = |target: &Path| {
        let mut cmd = reel_command();
        cmd.args(["rehash", target.to_str().unwrap(), "--session"])
            .arg("examples/sessions/default.yaml")
            .current_dir(fx.peer());
        cmd
    };

    // The expected new bytes: an uninterrupted run on a copy.
    let reference = fx.scratch().join("reference/legacy-pdf.cassette.json");
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

    let target: PathBuf = fx.scratch().join("crash/legacy-pdf.cassette.json");
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
    let out = support::reel()
        .args(["verify-cassettes", "--output-format", "json"])
        .arg(target.parent().unwrap())
        .current_dir(fx.peer())
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

/// Processes whose command line mentions `needle` (the test's temp dir).
fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(raw) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
            if cmd.contains(needle) {
                found.push((pid, cmd));
            }
        }
    }
    found
}

#[test]
fn record_killed_at_random_points_leaves_old_or_new_cassette() {
    // A canned agent: the record helper's replay agent, replaying a real
    // recorded run (cassettes/write-note.cassette.json) over stream-json.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for rel in ["scenarios/write-note.yaml", "sessions/lean.yaml"] {
        std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(support::repo().join(rel), root.join(rel)).unwrap();
    }
    let canned = root.join("canned.cassette.json");
    std::fs::copy(
        support::repo().join("cassettes/write-note.cassette.json"),
        &canned,
    )
    .unwrap();
    let agent_cmd = format!(
        "python3 {} {}",
        support::data("agents/replay_agent.py").display(),
        canned.display()
    );
    let record = |out: &Path| {
        let mut cmd = reel_command();
        // `--accept`: each kill replaces the cassette in place (the write is
        // what is under test, not the review of a differing re-recording).
        cmd.args(["record", "scenarios/write-note.yaml", "--accept", "--out"])
            .arg(out)
            .arg("--agent-cmd")
            .arg(&agent_cmd)
            .env("REEL_RUNS_DIR", root.join("runs"))
            .env_remove("REEL_AGENT_CMD")
            .current_dir(root);
        cmd
    };

    // The reference: an uninterrupted recording. Recordings are not
    // byte-reproducible (the timeline carries wall-clock offsets), so a
    // complete new cassette is one that loads and holds the whole run.
    let reference = root.join("ref/write-note.cassette.json");
    let out = record(&reference).stderr(Stdio::piped()).output().unwrap();
    assert!(
        out.status.success(),
        "reference record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference = reel::cassette::Cassette::load(&reference).expect("reference loads");
    let ref_events: Vec<String> = reference.events().map(|l| l.into_owned()).collect();
    assert!(ref_events.len() > 3, "the canned run has events");
    let is_new = |bytes: &[u8]| -> Result<(), String> {
        let c = reel::cassette::Cassette::from_bytes("new.cassette.json", bytes)
            .map_err(|e| format!("does not load: {e}"))?;
        let events: Vec<String> = c.events().map(|l| l.into_owned()).collect();
        if events != ref_events {
            return Err(format!(
                "{} events, the uninterrupted run recorded {}",
                events.len(),
                ref_events.len()
            ));
        }
        if c.artifacts().is_none_or(|a| a.is_empty()) {
            return Err("no artifacts manifest".into());
        }
        Ok(())
    };

    // The old cassette at the output path: another real recording.
    let old = std::fs::read(support::repo().join("cassettes/pick-format.cassette.json")).unwrap();
    let target = root.join("cassettes/write-note.cassette.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let tally = kill_loop(
        "record",
        &target,
        &old,
        &is_new,
        &|| record(&target),
        &|| std::fs::write(&target, &old).unwrap(),
    );
    assert!(
        tally.old_after_kill > 0,
        "no kill landed before the write: {tally:?}"
    );

    // The agents of killed recorders see EOF and exit: none is left behind.
    let needle = root.to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left = processes_mentioning(&needle);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = processes_mentioning(&needle);
    }
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// `rehash` (write mode) over the hostile corpus and v11 twins of it (so the
/// full migration proof runs on hostile content): no panic, no hang, a
/// refused or skipped file keeps its bytes, a migrated one loads, and nothing
/// else appears in the directory.
#[test]
fn rehash_over_hostile_cassettes_changes_only_what_it_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let mut before = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(support::data("hostile")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".cassette.json") || !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        if let Ok(serde_json::Value::Object(mut doc)) =
            serde_json::from_slice::<serde_json::Value>(&bytes)
            && doc.get("cassetteVersion") == Some(&serde_json::json!(12))
        {
            doc.insert("cassetteVersion".into(), serde_json::json!(11));
            if let Some(serde_json::Value::Object(fp)) = doc.get_mut("fingerprint") {
                fp.shift_remove("hashFormat");
            }
            let twin = serde_json::to_vec_pretty(&doc).unwrap();
            let twin_name = name.replace(".cassette.json", "-v11.cassette.json");
            std::fs::write(dir.path().join(&twin_name), &twin).unwrap();
            before.insert(twin_name, twin);
        }
        std::fs::write(dir.path().join(&name), &bytes).unwrap();
        before.insert(name, bytes);
    }
    assert!(before.len() >= 60, "corpus and twins: {}", before.len());
    let out = support::reel()
        .args(["rehash", ".", "--output-format", "json"])
        .current_dir(dir.path())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)) && !stderr.contains("panicked"),
        "rehash: {:?}\n{stderr}",
        out.status
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(
        results.len(),
        before.len(),
        "every file answered: {report:#}"
    );
    for row in results {
        let name = row["file"].as_str().unwrap().trim_start_matches("./");
        let now = std::fs::read(dir.path().join(name)).unwrap();
        if row["action"] == "migrated" {
            reel::cassette::Cassette::from_bytes(name, &now)
                .unwrap_or_else(|e| panic!("{name}: migrated but does not load: {e}"));
        } else {
            assert!(
                now == before[name],
                "{name}: {} but rewritten",
                row["action"]
            );
        }
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        before.keys().cloned().collect::<Vec<_>>(),
        "stray files"
    );
}
