//! `reel diff` speed on a large cassette (`cargo bench --bench diff`).
//!
//! Generates the 50,000-event (~51 MB) cassette of the replay bench
//! (`support::write_big_cassette`) and a copy with exactly one change (one
//! tool call's input, edited in the parsed document), then times, each run
//! in a fresh child process:
//! - `parse`: read both files and parse them into `serde_json::Value` (the floor);
//! - `diff`: `reel::diff::diff_files` + the text rendering (what `reel diff A B` does).
//!
//! Target (issue 14): under one second. `REEL_BENCH_EVENTS` /
//! `REEL_BENCH_ITERS` / `REEL_BENCH_SEED` override the defaults. Prints
//! `BENCH` lines for `scripts/bench.sh`; no assertion on any figure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

mod support;

fn child(mode: &str, a: &Path, b: &Path) {
    let t = Instant::now();
    match mode {
        "parse" => {
            for f in [a, b] {
                support::read_and_parse(f);
            }
        }
        _ => {
            let d = reel::diff::diff_files(a, b, &reel::diff::DiffOptions::default())
                .expect("bench cassettes load");
            assert!(!d.identical, "the one-change copy diffed as identical");
            let text = reel::diff::render::diff_text(&d, false);
            std::hint::black_box((d, text));
        }
    }
    let total = t.elapsed().as_secs_f64() * 1000.0;
    if mode == "diff" && std::env::var_os("REEL_BENCH_PHASES").is_some() {
        // Where the time goes: load, read one side into its views, compare.
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let ca = reel::cassette::Cassette::load(a).expect("load");
        let load = ms(t);
        let t = Instant::now();
        let run = reel::evidence::RunRecord::from_cassette(&ca);
        let drive = ms(t);
        std::hint::black_box(run);
        let t = Instant::now();
        let r = reel::replay::replay_cassette(
            &ca,
            &reel::replay::ReplayOptions {
                lean: true,
                ..Default::default()
            },
        );
        let replay = ms(t);
        std::hint::black_box(r.ok());
        let t = Instant::now();
        let ra = reel::diff::Recording::read(&ca, true);
        let read = ms(t);
        let rb = reel::diff::Recording::read(&ca, true);
        let t = Instant::now();
        let d = reel::diff::diff_recordings(&ra, &rb, &reel::diff::DiffOptions::default());
        let cmp = ms(t);
        std::hint::black_box(d);
        eprintln!(
            "phases: load {load:.1} ms, re-drive {drive:.1} ms, replay {replay:.1} ms, read one side {read:.1} ms, compare {cmp:.1} ms"
        );
    }
    println!("{total} {}", support::peak_rss_self());
}

/// A copy of `file` with the input of its middle tool call changed.
fn one_change_copy(file: &Path) -> PathBuf {
    let mut doc: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(file).expect("read")).expect("parse");
    let events = doc["events"].as_array_mut().expect("events");
    let tool_lines: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, l)| l.as_str().is_some_and(|s| s.contains("\"tool_use\"")))
        .map(|(i, _)| i)
        .collect();
    let i = tool_lines[tool_lines.len() / 2];
    let mut line: Value = serde_json::from_str(events[i].as_str().unwrap()).expect("event");
    line["message"]["content"][0]["input"]["command"] = "echo the one change".into();
    events[i] = Value::String(line.to_string());
    let out = file.with_file_name("big-one-change.cassette.json");
    std::fs::write(&out, serde_json::to_vec_pretty(&doc).expect("serialise")).expect("write");
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(
            &args[i + 1],
            Path::new(&args[i + 2]),
            Path::new(&args[i + 3]),
        );
        return;
    }
    let iters = support::env_u64("REEL_BENCH_ITERS", if support::smoke() { 1 } else { 5 }) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, size) = support::write_big_cassette(dir.path(), false);
    let b = one_change_copy(&a);
    if let Some(keep) = std::env::var_os("REEL_BENCH_KEEP") {
        // For profiling: `<bench> --child diff KEEP/big.cassette.json KEEP/big-one-change.cassette.json`.
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).expect("REEL_BENCH_KEEP dir");
        for f in [&a, &b] {
            std::fs::copy(f, keep.join(f.file_name().unwrap())).expect("keep");
        }
    }
    let input = size + std::fs::metadata(&b).map(|m| m.len()).unwrap_or(0);
    println!(
        "two cassettes: {:.1} MB together (seed {:#x}), {iters} runs per task",
        input as f64 / 1e6,
        support::seed()
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut medians = Vec::new();
    for mode in ["parse", "diff"] {
        let mut runs: Vec<(f64, f64)> = (0..iters)
            .map(|_| {
                let out = Command::new(&exe)
                    .args(["--child", mode, &a.to_string_lossy(), &b.to_string_lossy()])
                    .output()
                    .expect("spawn bench child");
                assert!(
                    out.status.success(),
                    "{mode}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let s = String::from_utf8_lossy(&out.stdout);
                let f: Vec<f64> = s
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (f[0], f[1])
            })
            .collect();
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let median = runs[runs.len() / 2].0;
        let peak = runs.iter().map(|r| r.1).fold(0.0, f64::max);
        println!(
            "{mode:>6}: min {:8.1} ms  median {median:8.1} ms  peak RSS {:7.1} MB",
            runs[0].0,
            peak / 1e6
        );
        medians.push((median, peak));
    }
    support::Bench {
        name: "diff_50k_events_one_change",
        seconds: medians[1].0 / 1e3,
        floor_seconds: Some(medians[0].0 / 1e3),
        peak_rss_bytes: Some(medians[1].1 as u64),
        input_bytes: Some(input),
        stat: "median",
        runs: iters,
    }
    .emit();
}
