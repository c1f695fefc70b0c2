//! Benchmark: `reel rerun` of a recording against `reel record` of the same
//! scenario under its model script — both whole processes driving the real
//! Claude Code CLI over loopback. A rerun does what a record does (stage,
//! serve, drive, manifest, assemble, verdict) plus taking the replies from the
//! cassette and the turn-by-turn comparison, so its cost over `record` is the
//! overhead of rerunning. Target: within 10 % + 200 ms of `record`.
//!
//! Second row: the kernel sandbox's cost — the same rerun confined (the
//! default) against `--no-sandbox`. Target: within 5 % + 50 ms.
//!
//! Needs the real agent (`REEL_CLAUDE_BIN` or `.tools/claude`, installed by
//! `scripts/install-claude.sh`); without it the bench says so and, under
//! `CI=true`, fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod support;

fn claude() -> Option<PathBuf> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("REEL_CLAUDE_BIN")
        .map(PathBuf::from)
        .or_else(|| Some(repo.join(".tools/claude/node_modules/.bin/claude")))
        .filter(|p| p.is_file())
}

fn run(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let out = cmd.output().expect("run reel");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn copy(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

fn main() {
    let Some(claude) = claude() else {
        let msg = "rerun bench: the Claude Code CLI is missing (run scripts/install-claude.sh or set REEL_CLAUDE_BIN)";
        if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
            panic!("{msg}");
        }
        eprintln!("SKIPPING: {msg}");
        return;
    };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let reel = env!("CARGO_BIN_EXE_reel");
    let tmp = tempfile::tempdir().expect("temp dir");
    // Skills are staged from git-tracked files: a scratch repository.
    for sub in ["scenarios", "sessions", "skills", "data"] {
        copy(&repo.join(sub), &tmp.path().join(sub));
    }
    support::git_commit_all(tmp.path());
    let scenario = "scenarios/csv-stats.yaml";
    let cassette = tmp.path().join("bench.cassette.json");
    let iterations = if support::smoke() { 1 } else { 7 };
    let reel_cmd = || {
        let mut c = Command::new(reel);
        c.current_dir(tmp.path())
            .env("REEL_CLAUDE_BIN", &claude)
            .env("REEL_RUNS_DIR", tmp.path().join("runs"));
        c
    };
    let mut records = Vec::new();
    let mut reruns = Vec::new();
    let mut unconfined = Vec::new();
    for _ in 0..iterations {
        records.push(run(reel_cmd()
            .args(["record", scenario, "--out"])
            .arg(&cassette)));
        reruns.push(run(reel_cmd().arg("rerun").arg(&cassette)));
        unconfined.push(run(reel_cmd()
            .arg("rerun")
            .arg(&cassette)
            .arg("--no-sandbox")));
    }
    records.sort();
    reruns.sort();
    unconfined.sort();
    let (record, rerun) = (records[iterations / 2], reruns[iterations / 2]);
    let bare = unconfined[iterations / 2];
    support::Bench {
        name: "rerun_sandbox_cost",
        seconds: rerun.as_secs_f64(),
        floor_seconds: Some(bare.as_secs_f64()),
        peak_rss_bytes: None,
        input_bytes: std::fs::metadata(&cassette).ok().map(|m| m.len()),
        stat: "median",
        runs: iterations,
    }
    .emit();
    support::Bench {
        name: "rerun_vs_record",
        seconds: rerun.as_secs_f64(),
        floor_seconds: Some(record.as_secs_f64()),
        peak_rss_bytes: None,
        input_bytes: std::fs::metadata(&cassette).ok().map(|m| m.len()),
        stat: "median",
        runs: iterations,
    }
    .emit();
    println!(
        "sandboxed rerun {:.0} ms vs --no-sandbox {:.0} ms",
        rerun.as_secs_f64() * 1e3,
        bare.as_secs_f64() * 1e3
    );
    println!(
        "rerun {:.0} ms vs record {:.0} ms (median of {iterations}; csv-stats, 3 model turns, one Bash script)",
        rerun.as_secs_f64() * 1e3,
        record.as_secs_f64() * 1e3
    );
}
