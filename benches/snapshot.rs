//! Benchmark: workspace snapshots (docs/snapshots.md).
//!
//! 1. Cost per MB: `Store::put` of a seeded 64 MB workspace (256 files, half
//!    prose, half incompressible bytes) into an empty store (tar + SHA-256 +
//!    gzip + fsync); floor: reading and SHA-256-hashing the same files. And
//!    the same workspace put again into that store (a no-op write: the
//!    archive is still built and hashed).
//! 2. Record overhead on the bundled examples: `reel record` (library) of
//!    write-note, doc-report and the three-turn conversation with the real
//!    Claude Code CLI and their scripted models, snapshots on (the default)
//!    against off (`[snapshots] record = false`), best of five each,
//!    alternating. Target: under 10 % of a scripted record's time.
//!
//! Needs the pinned CLI for part 2 (`REEL_CLAUDE_BIN`, else
//! `.tools/claude/...`); without it (and not under CI) part 2 is skipped.
//! As a smoke test (`cargo test --benches`) it snapshots 4 MB and records
//! one scenario once each way.
//!
//! Run: `cargo bench --bench snapshot`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reel::snapshot::{Store, archive::Limits};
use sha2::{Digest, Sha256};

mod support;

/// A seeded workspace of `mb` megabytes under `root/outputs`.
fn workspace(root: &Path, mb: usize) {
    let mut rng = support::Rng::new(support::seed());
    let files = 4 * mb;
    let each = (mb << 20) / files;
    for i in 0..files {
        let dir = root.join(format!("outputs/part{}", i % 8));
        std::fs::create_dir_all(&dir).unwrap();
        let body: Vec<u8> = if i % 2 == 0 {
            support::prose(&mut rng, each).into_bytes()
        } else {
            (0..each).map(|_| rng.next() as u8).collect()
        };
        std::fs::write(dir.join(format!("file{i:04}.bin")), body).unwrap();
    }
}

/// Reads and hashes every file under `dir` (the floor of a snapshot).
fn read_and_hash(dir: &Path) {
    for e in walk(dir) {
        let bytes = std::fs::read(&e).unwrap();
        std::hint::black_box(Sha256::digest(&bytes));
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

fn cost_per_mb(tmp: &Path, mb: usize, runs: usize) {
    let work = tmp.join("work");
    workspace(&work, mb);
    let roots = vec!["outputs".to_owned()];
    let mut fresh = Vec::new();
    let mut again = Vec::new();
    for i in 0..runs {
        let store = Store::new(tmp.join(format!("store-{i}")));
        let t = Instant::now();
        let taken = store.put(&work, &roots, &Limits::default()).unwrap();
        fresh.push(t.elapsed());
        assert!(taken.written);
        let t = Instant::now();
        let second = store.put(&work, &roots, &Limits::default()).unwrap();
        again.push(t.elapsed());
        assert!(!second.written);
        std::fs::remove_dir_all(tmp.join(format!("store-{i}"))).unwrap();
    }
    fresh.sort();
    again.sort();
    let (_, floor) = support::time_runs(runs, || read_and_hash(&work.join("outputs")));
    let bytes = (mb as u64) << 20;
    for (name, samples) in [("snapshot_put", &fresh), ("snapshot_put_again", &again)] {
        let median = samples[samples.len() / 2];
        println!(
            "{name}: {mb} MB in {:.1} ms median ({:.2} ms/MB; read + sha256 floor {:.2} ms/MB)",
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3 / mb as f64,
            floor.as_secs_f64() * 1e3 / mb as f64
        );
        support::Bench {
            name,
            seconds: median.as_secs_f64(),
            floor_seconds: Some(floor.as_secs_f64()),
            peak_rss_bytes: None,
            input_bytes: Some(bytes),
            stat: "median",
            runs,
        }
        .emit();
    }
    std::fs::remove_dir_all(&work).unwrap();
}

fn claude(repo: &Path) -> Option<PathBuf> {
    let bin = std::env::var_os("REEL_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join(".tools/claude/node_modules/.bin/claude"));
    if bin.is_file() {
        return Some(bin);
    }
    let msg = format!(
        "snapshot: the Claude Code CLI is missing at {} (set REEL_CLAUDE_BIN or run \
         scripts/install-claude.sh); the record overhead is not measured",
        bin.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}");
    }
    eprintln!("SKIPPING {msg}");
    None
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// One recording of `scenario`, from `cwd` (whose `reel.toml` says whether
/// snapshots are taken); its wall time.
fn record_once(cwd: &Path, scenario: &Path, out: &Path) -> Duration {
    std::env::set_current_dir(cwd).unwrap();
    let mut opts = reel::record::RecordOptions::new(scenario);
    opts.out = Some(out.to_path_buf());
    opts.stage.accept = true;
    let t = Instant::now();
    reel::record::record(&opts).expect("record");
    t.elapsed()
}

fn record_overhead(repo: &Path, tmp: &Path, rounds: usize, names: &[&str]) {
    let Some(claude) = claude(repo) else {
        return;
    };
    for d in ["scenarios", "sessions", "skills", "data"] {
        copy_tree(&repo.join(d), &tmp.join(d));
    }
    let (on, off) = (tmp.join("on"), tmp.join("off"));
    std::fs::create_dir_all(&on).unwrap();
    std::fs::create_dir_all(&off).unwrap();
    std::fs::write(off.join("reel.toml"), "[snapshots]\nrecord = false\n").unwrap();
    // SAFETY: single-threaded at this point; only this process reads them.
    unsafe {
        std::env::set_var("REEL_RUNS_DIR", tmp.join("runs"));
        std::env::set_var("REEL_CLAUDE_BIN", &claude);
        std::env::remove_var("REEL_AGENT_CMD");
    }
    for name in names {
        let scenario = tmp.join(format!("scenarios/{name}.yaml"));
        let (mut best_on, mut best_off) = (Duration::MAX, Duration::MAX);
        for round in 0..rounds {
            let mut order = [(&on, &mut best_on), (&off, &mut best_off)];
            if round % 2 == 1 {
                order.reverse();
            }
            for (cwd, best) in order {
                let wall = record_once(cwd, &scenario, &cwd.join(format!("{name}.cassette.json")));
                *best = (*best).min(wall);
            }
        }
        let overhead = best_on.as_secs_f64() / best_off.as_secs_f64() - 1.0;
        println!(
            "record {name}: snapshots on {:.0} ms, off {:.0} ms ({:+.1} %)",
            best_on.as_secs_f64() * 1e3,
            best_off.as_secs_f64() * 1e3,
            overhead * 100.0
        );
        support::Bench {
            name: &format!("snapshot_record_{}", name.replace('-', "_")),
            seconds: best_on.as_secs_f64(),
            floor_seconds: Some(best_off.as_secs_f64()),
            peak_rss_bytes: None,
            input_bytes: None,
            stat: "min",
            runs: rounds,
        }
        .emit();
    }
}

fn main() {
    // The agents this bench starts are confined through this executable.
    reel::sandbox::run_if_helper();
    reel::mcp::run_if_server();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    if support::smoke() {
        cost_per_mb(tmp.path(), 4, 1);
        record_overhead(&repo, tmp.path(), 1, &["write-note"]);
        return;
    }
    cost_per_mb(tmp.path(), 64, 5);
    record_overhead(
        &repo,
        tmp.path(),
        5,
        &["write-note", "doc-report", "conversation"],
    );
}
