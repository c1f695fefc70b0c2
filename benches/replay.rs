//! Replay speed and memory on a large cassette (`cargo bench --bench replay`).
//!
//! Generates a 50,000-event (~51 MB) cassette deterministically from a seed
//! (`support::write_big_cassette`, shared with the verify bench),
//! then times each run in a fresh child process (so peak RSS is per run, and
//! no run inherits a warm allocator from the one before):
//! - `parse`: read the file and `serde_json::from_slice::<Value>` it (the floor);
//! - `replay`: `reel::replay::replay_file` + the text report (what `reel replay FILE` does);
//! - `replay-json`: the same with the full run result and the JSON envelope.
//!
//! Each run leaves its result to process exit (the floor's `Value` too), as
//! `reel replay` does.
//!
//! The three take turns run by run (9 each by default), and so do reel and
//! the original in the side-by-side row, so that a drift of the machine's
//! speed hits every side alike. Prints min / median wall time over the runs
//! and the largest peak RSS of a run against the file size. Targets (issue
//! 16): replay no slower than the parse, JSON within 1.3x of text, peak
//! memory at most 1.5x the file, at least 10x faster than cowork-harness.
//!
//! Then the same events as a 50-turn session with per-turn assertions
//! against their one-prompt recording (`replay_50_turns_50k_events`; issue
//! 41's target: within 10 %).
//!
//! `REEL_BENCH_EVENTS` / `REEL_BENCH_ITERS` / `REEL_BENCH_SEED` override the
//! defaults; `REEL_BENCH_PHASES=1` also times the load alone and with the re-drive;
//! `REEL_BENCH_KEEP=FILE` keeps the generated cassette for a profiler.
//! Prints `BENCH` lines (text and JSON paths) for `scripts/bench.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

mod support;

fn child(mode: &str, file: &Path, iters: usize) {
    let mut times = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        match mode {
            "parse" => {
                let bytes = std::fs::read(file).expect("read");
                let v: Value = serde_json::from_slice(&bytes).expect("parse");
                // Every mode leaves its result to process exit, as `reel
                // replay` does (the CLI never frees its results).
                std::mem::forget(std::hint::black_box(v));
            }
            "replay" => {
                // What `reel replay FILE` does (text report).
                let opts = reel::replay::ReplayOptions {
                    lean: true,
                    ..Default::default()
                };
                let r = reel::replay::replay_file(file, &opts);
                assert!(
                    r.error.is_none(),
                    "bench cassette failed to load: {:?}",
                    r.error
                );
                let text = reel::report::text::render(&r, Default::default(), false);
                std::mem::forget(std::hint::black_box((r, text)));
            }
            _ => {
                // `reel replay FILE --output-format json`: full run result + envelope.
                let r = reel::replay::replay_file(file, &reel::replay::ReplayOptions::default());
                assert!(
                    r.error.is_none(),
                    "bench cassette failed to load: {:?}",
                    r.error
                );
                // Streamed like the CLI's stdout (here into a sink).
                reel::report::json::write_envelope(std::slice::from_ref(&r), std::io::sink())
                    .expect("write envelope");
                std::mem::forget(std::hint::black_box(r));
            }
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    if mode == "replay" && std::env::var_os("REEL_BENCH_PHASES").is_some() {
        // Where the time goes: the lean load alone, then the lean load that
        // reads and re-drives the lines as it scans (the rest is evaluation
        // + reports); the full load beside them.
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let full = reel::cassette::Cassette::load(file).expect("load");
        let full_ms = ms(t);
        drop(full);
        let t = Instant::now();
        let c = reel::cassette::Cassette::load_lean(file).expect("load");
        let load = ms(t);
        drop(c);
        let t = Instant::now();
        let loaded = reel::cassette::Cassette::load_lean_reading(
            file,
            &reel::evidence::LineReader {
                carried_lines: true,
            },
            &mut |control_out, lines| {
                reel::evidence::RunRecord::from_read_lines(lines, control_out, 0)
            },
            None::<reel::cassette::FoldTimeline<'_, ()>>,
        );
        let drive = ms(t);
        std::hint::black_box(loaded.expect("load"));
        eprintln!(
            "phases: lean load {load:.1} ms (full load {full_ms:.1} ms); lean load + re-drive \
             {drive:.1} ms"
        );
    }
    println!(
        "{} {} {}",
        times[0],
        times[times.len() / 2],
        support::peak_rss_self()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let mode = &args[i + 1];
        let file = PathBuf::from(&args[i + 2]);
        let iters: usize = args[i + 3].parse().unwrap_or(5);
        child(mode, &file, iters);
        return;
    }
    let iters = support::env_u64("REEL_BENCH_ITERS", if support::smoke() { 1 } else { 9 }) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    // `REEL_BENCH_ONLY=turns`: only the multi-turn row (a quick check of it).
    if std::env::var("REEL_BENCH_ONLY").as_deref() == Ok("turns") {
        turns(dir.path(), iters);
        return;
    }
    // The cassette the target names, then the same run with the
    // recorder's `timeline` (a small JSON object per tool call, result and
    // thinking block), which is what makes a parse memory-heavy.
    for (with_timeline, suffix) in [(false, ""), (true, "_timeline")] {
        let (file, size) = support::write_big_cassette(dir.path(), with_timeline);
        if let Some(keep) = std::env::var_os("REEL_BENCH_KEEP") {
            // For profiling: `perf record <bench> --child replay <file> 1`.
            let mut keep = PathBuf::from(keep);
            keep.as_mut_os_string().push(suffix);
            std::fs::copy(&file, &keep).expect("write REEL_BENCH_KEEP");
        }
        measure(&file, size as f64, iters, suffix);
    }
    turns(dir.path(), iters);
}

/// A 50-turn session of the same 50,000 events against its one-prompt
/// recording (`support::write_turn_cassettes`): `reel replay` of each, the
/// two taking turns run by run. Target (issue 41): the multi-turn replay,
/// every turn judged on its own slice, within 10 % of the one-turn one.
fn turns(dir: &Path, iters: usize) {
    let (one, multi, size) = support::write_turn_cassettes(dir, 50);
    if let Some(keep) = std::env::var_os("REEL_BENCH_KEEP") {
        // For profiling: `perf record <bench> --child replay <file>_turns 1`;
        // `<file>_one_turn` is its one-prompt recording (the floor).
        for (file, suffix) in [(&multi, "_turns"), (&one, "_one_turn")] {
            let mut keep = PathBuf::from(&keep);
            keep.as_mut_os_string().push(suffix);
            std::fs::copy(file, &keep).expect("write REEL_BENCH_KEEP");
        }
    }
    let exe = std::env::current_exe().expect("current exe");
    let (mut t_one, mut t_multi, mut peak) = (Vec::new(), Vec::new(), 0.0f64);
    for _ in 0..iters {
        for (file, times) in [(&one, &mut t_one), (&multi, &mut t_multi)] {
            let out = Command::new(&exe)
                .args(["--child", "replay", &file.to_string_lossy(), "1"])
                .output()
                .expect("spawn bench child");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let f: Vec<f64> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            times.push(f[0]);
            if file == &multi {
                peak = peak.max(f[2]);
            }
        }
    }
    let median = |t: &mut Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let (one_ms, multi_ms) = (median(&mut t_one), median(&mut t_multi));
    println!(
        "turns: 50-turn replay {multi_ms:.1} ms, one-turn {one_ms:.1} ms ({:.2}x)",
        multi_ms / one_ms
    );
    support::Bench {
        name: "replay_50_turns_50k_events",
        seconds: multi_ms / 1e3,
        floor_seconds: Some(one_ms / 1e3),
        peak_rss_bytes: Some(peak as u64),
        input_bytes: Some(size),
        stat: "median",
        runs: iters,
    }
    .emit();
}

/// Times parse / replay / replay-json on `file` and emits their BENCH lines
/// (names end in `suffix`).
fn measure(file: &Path, size: f64, iters: usize, suffix: &str) {
    println!(
        "cassette{suffix}: {:.1} MB (seed {:#x}), {iters} runs per task",
        size / 1e6,
        support::seed()
    );
    let exe = std::env::current_exe().expect("current exe");
    let modes = ["parse", "replay", "replay-json"];
    // One fresh process per run, as `reel replay FILE` is: a process that
    // replays once pays for its page faults and gets no allocator reuse
    // from an earlier run, and its peak RSS is that one run's. The modes
    // take turns run by run, so a drift of the machine's speed hits all.
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); modes.len()];
    for _ in 0..iters {
        for (mode, runs) in modes.iter().zip(&mut runs) {
            let out = Command::new(&exe)
                .args(["--child", mode, &file.to_string_lossy(), "1"])
                .output()
                .expect("spawn bench child");
            assert!(
                out.status.success(),
                "{mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            let s = String::from_utf8_lossy(&out.stdout);
            let f: Vec<f64> = s
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            runs.push((f[0], f[2]));
        }
    }
    let mut rows = Vec::new();
    for (mode, mut runs) in modes.iter().zip(runs) {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let median = runs[runs.len() / 2].0;
        let peak = runs.iter().map(|r| r.1).fold(0.0, f64::max);
        println!(
            "{mode:>11}: min {:8.1} ms  median {median:8.1} ms  peak RSS {:7.1} MB ({:.2}x file)",
            runs[0].0,
            peak / 1e6,
            peak / size
        );
        rows.push(vec![runs[0].0, median, peak]);
    }
    println!(
        "replay / parse (median): text {:.2}x, json {:.2}x",
        rows[1][1] / rows[0][1],
        rows[2][1] / rows[0][1]
    );
    for (name, row) in [
        ("replay_50k_events", &rows[1]),
        ("replay_50k_events_json", &rows[2]),
        // The floor's own peak RSS, for context on the replay's.
        ("replay_floor_parse", &rows[0]),
    ] {
        support::Bench {
            name: &format!("{name}{suffix}"),
            seconds: row[1] / 1e3,
            floor_seconds: Some(rows[0][1] / 1e3),
            peak_rss_bytes: Some(row[2] as u64),
            input_bytes: Some(size as u64),
            stat: "median",
            runs: iters,
        }
        .emit();
    }
    if suffix.is_empty() {
        side_by_side(file, size, iters);
    }
}

/// `reel replay FILE` (the binary, a fresh process per run) against the
/// original's `replay FILE` in the same run, when it is installed.
fn side_by_side(file: &Path, size: f64, iters: usize) {
    let Some(original) = support::Original::from_env() else {
        return;
    };
    let dir = file.parent().expect("dir");
    let median = |mut t: Vec<f64>| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    // Alternated run by run, so that a drift of the machine's speed (this
    // kind of shared VM drifts by up to 1.6x within minutes) hits both sides.
    let (mut reel, mut orig) = (Vec::new(), Vec::new());
    for _ in 0..iters {
        let t = Instant::now();
        let st = Command::new(env!("CARGO_BIN_EXE_reel"))
            .arg("replay")
            .arg(file)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("spawn reel");
        assert!(st.success(), "reel replay");
        reel.push(t.elapsed().as_secs_f64());
        orig.push(original.time(&["replay".as_ref(), file.as_os_str()], dir, 0));
    }
    let (reel, orig) = (median(reel), median(orig));
    println!(
        "side by side: reel {:.1} ms, original {:.1} ms ({:.1}x)",
        reel * 1e3,
        orig * 1e3,
        orig / reel
    );
    support::Bench {
        name: "replay_50k_events_vs_original",
        seconds: reel,
        floor_seconds: Some(orig),
        peak_rss_bytes: None,
        input_bytes: Some(size as u64),
        stat: "median",
        runs: iters,
    }
    .emit();
}
