//! Benchmark: recording throughput of `reel record --jobs N` against serial
//! recording — the bundled scenarios (`scenarios/*.yaml`) recorded with the
//! real Claude Code CLI against their scripted models, through
//! `record::batch::run_jobs` (what `reel record scenarios/ --jobs N` runs).
//! The floor of each row is the serial recording of the same set, so the
//! ratio is the wall time of N jobs relative to one.
//!
//! Needs the pinned CLI (`REEL_CLAUDE_BIN`, else `.tools/claude/...`, installed
//! by `scripts/install-claude.sh`); under `CI=true` a missing CLI fails the
//! bench, otherwise it reports why and records nothing. As a smoke test
//! (`cargo test --benches`) it records two scenarios with `--jobs 2`.
//!
//! Run: `cargo bench --bench record_jobs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reel::record::RecordOptions;
use reel::record::batch::run_jobs;

mod support;

fn claude(repo: &Path) -> Option<PathBuf> {
    let bin = std::env::var_os("REEL_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join(".tools/claude/node_modules/.bin/claude"));
    if bin.is_file() {
        return Some(bin);
    }
    let msg = format!(
        "record_jobs: the Claude Code CLI is missing at {} (set REEL_CLAUDE_BIN or run scripts/install-claude.sh)",
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
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// Records every scenario into `out/` with `jobs` at once; the wall time.
fn record_all(scenarios: &[PathBuf], out: &Path, jobs: usize) -> Duration {
    let opts: Vec<RecordOptions> = scenarios
        .iter()
        .map(|s| {
            let mut o = RecordOptions::new(s);
            o.out = Some(out.join(format!(
                "{}.cassette.json",
                s.file_stem().unwrap().to_string_lossy()
            )));
            o
        })
        .collect();
    let t = Instant::now();
    let results = run_jobs(&opts, jobs, |_| {});
    let wall = t.elapsed();
    for (o, r) in opts.iter().zip(&results) {
        if let Err(e) = r {
            panic!("record_jobs: {} failed: {e}", o.scenario.display());
        }
    }
    wall
}

fn main() {
    // The agents this bench starts are confined through this executable,
    // and their MCP servers recorded through it.
    reel::sandbox::run_if_helper();
    reel::mcp::run_if_server();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let Some(claude) = claude(&repo) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    for d in ["scenarios", "sessions", "skills", "data"] {
        copy_tree(&repo.join(d), &tmp.path().join(d));
    }
    // SAFETY: single-threaded at this point; only this process reads them.
    unsafe {
        std::env::set_var("REEL_RUNS_DIR", tmp.path().join("runs"));
        std::env::set_var("REEL_CLAUDE_BIN", &claude);
        std::env::remove_var("REEL_AGENT_CMD");
    }
    let mut scenarios = reel::discover::scenarios_in(&tmp.path().join("scenarios")).unwrap();
    if support::smoke() {
        scenarios.truncate(2);
        let out = tmp.path().join("smoke");
        std::fs::create_dir_all(&out).unwrap();
        record_all(&scenarios, &out, 2);
        println!(
            "record_jobs smoke: recorded {} scenarios with 2 jobs",
            scenarios.len()
        );
        return;
    }
    let n = scenarios.len();
    // Rounds alternate 1,2,4 then 4,2,1 (best of the two per setting), so a
    // load that drifts during the bench weighs on every setting alike.
    let settings = [1usize, 2, 4];
    let mut best = [Duration::MAX; 3];
    for order in [[0usize, 1, 2], [2, 1, 0]] {
        for k in order {
            let out = tmp.path().join(format!("out-{k}"));
            std::fs::create_dir_all(&out).unwrap();
            let wall = record_all(&scenarios, &out, settings[k]);
            best[k] = best[k].min(wall);
        }
    }
    let serial = best[0];
    let mut rows = Vec::new();
    for (k, jobs) in settings.into_iter().enumerate() {
        let wall = best[k];
        rows.push((jobs, wall));
        println!(
            "record {n} scenarios, --jobs {jobs}: {:.2} s ({:.2} recordings/s)",
            wall.as_secs_f64(),
            n as f64 / wall.as_secs_f64()
        );
    }
    for (jobs, wall) in rows {
        support::Bench {
            name: match jobs {
                1 => "record_jobs_1",
                2 => "record_jobs_2",
                _ => "record_jobs_4",
            },
            seconds: wall.as_secs_f64(),
            floor_seconds: Some(serial.as_secs_f64()),
            peak_rss_bytes: None,
            input_bytes: None,
            stat: "min",
            runs: 2,
        }
        .emit();
    }
}
