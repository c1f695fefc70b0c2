//! Batch replay (`cargo bench --bench replay_batch`): `reel replay DIR` over
//! 1,000 copies of a real cowork-harness cassette (`example-pdf-skill`, 34
//! events, 52 KB) whose session mounts a skill tree committed in git — the
//! shape of a suite CI replays. Each run is a fresh `reel` process.
//!
//! Floor: reading + parsing every file into a `serde_json::Value` (one
//! thread). With `REEL_BENCH_ORIGINAL` set (see `support::Original`), the
//! original replays the same directory in the same run.
//! `REEL_BENCH_ITERS`, `REEL_BENCH_BATCH` (number of cassettes) override.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

mod support;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let examples = repo.join("tests/compat/examples");
    let n = support::env_u64("REEL_BENCH_BATCH", if support::smoke() { 20 } else { 1000 }) as usize;
    let iters = support::env_u64("REEL_BENCH_ITERS", if support::smoke() { 1 } else { 5 }) as usize;
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    for dir in ["skills", "sessions", "scenarios", "data"] {
        copy_tree(&examples.join(dir), &root.join(dir));
    }
    let cassette = std::fs::read(examples.join("replays/example-pdf-skill.cassette.json"))
        .expect("bundled cassette");
    let replays = root.join("replays");
    std::fs::create_dir_all(&replays).expect("mkdir");
    let files: Vec<PathBuf> = (0..n)
        .map(|i| {
            let p = replays.join(format!("c{i:04}.cassette.json"));
            std::fs::write(&p, &cassette).expect("write");
            p
        })
        .collect();
    // The recording's skill hash is over the git-tracked set.
    support::git_commit_all(&root);
    let input_bytes = (cassette.len() * n) as u64;
    println!(
        "{n} cassettes of {} KB ({:.1} MB), {iters} runs",
        cassette.len() / 1024,
        input_bytes as f64 / 1e6
    );

    let (floor, _) = support::time_runs(iters, || {
        for f in &files {
            support::read_and_parse(f);
        }
    });
    let reel = env!("CARGO_BIN_EXE_reel");
    let mut times: Vec<f64> = (0..iters)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(reel)
                .arg("replay")
                .arg(&replays)
                .current_dir(&root)
                .output()
                .expect("spawn reel");
            let secs = t.elapsed().as_secs_f64();
            assert!(
                out.status.success(),
                "reel replay DIR: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            secs
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "reel replay DIR: min {:.1} ms, median {:.1} ms; floor {:.1} ms",
        times[0] * 1e3,
        median * 1e3,
        floor.as_secs_f64() * 1e3
    );
    support::Bench {
        name: "replay_dir_1000",
        seconds: median,
        floor_seconds: Some(floor.as_secs_f64()),
        peak_rss_bytes: Some(support::peak_rss_children()),
        input_bytes: Some(input_bytes),
        stat: "median",
        runs: iters,
    }
    .emit();
    if let Some(original) = support::Original::from_env() {
        // The original takes tens of seconds here: one run.
        let secs = original.time(&["replay".as_ref(), replays.as_os_str()], &root, 0);
        println!(
            "original replay DIR: {:.2} s ({:.1}x reel's median)",
            secs,
            secs / median
        );
        support::Bench {
            name: "replay_dir_1000_vs_original",
            seconds: median,
            floor_seconds: Some(secs),
            peak_rss_bytes: None,
            input_bytes: Some(input_bytes),
            stat: "median",
            runs: iters,
        }
        .emit();
    }
}
