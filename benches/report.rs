//! `reel report` speed on a large cassette (`cargo bench --bench report`).
//!
//! Renders the recording view of the 50,000-event (~51 MB, with timeline)
//! cassette of the replay bench (`support::write_big_cassette`), each run in
//! a fresh child process:
//! - `parse`: read the file and parse it into `serde_json::Value` (the floor);
//! - `report`: `html::recording::render_file` (load and replay) with the default
//!   window (500 turns, 4 KiB bodies), what `reel report FILE` does.
//!
//! Target (issue 33): under one second. Also prints the page's size, which
//! stays proportional to the window, not to the cassette.
//! `REEL_BENCH_EVENTS` / `REEL_BENCH_ITERS` / `REEL_BENCH_SEED` override
//! the defaults. Prints `BENCH` lines for `scripts/bench.sh`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod support;

fn child(mode: &str, file: &Path) {
    let t = Instant::now();
    let mut page_bytes = 0;
    match mode {
        "parse" => support::read_and_parse(file),
        _ => {
            let page = reel::html::recording::render_file(file, &reel::html::Options::default())
                .expect("bench cassette loads")
                .expect("renders");
            page_bytes = page.len();
            std::hint::black_box(page);
        }
    }
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    println!("{ms} {} {page_bytes}", support::peak_rss_self());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], Path::new(&args[i + 2]));
        return;
    }
    let iters = support::env_u64("REEL_BENCH_ITERS", if support::smoke() { 1 } else { 5 }) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, size) = support::write_big_cassette(dir.path(), true);
    println!(
        "cassette: {:.1} MB (seed {:#x}), {iters} runs per task",
        size as f64 / 1e6,
        support::seed()
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut medians = Vec::new();
    for mode in ["parse", "report"] {
        let mut runs: Vec<(f64, f64, f64)> = (0..iters)
            .map(|_| {
                let out = Command::new(&exe)
                    .args(["--child", mode, &file.to_string_lossy()])
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
                (f[0], f[1], f[2])
            })
            .collect();
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let median = runs[runs.len() / 2].0;
        let peak = runs.iter().map(|r| r.1).fold(0.0, f64::max);
        println!(
            "{mode:>6}: min {:8.1} ms  median {median:8.1} ms  peak RSS {:7.1} MB  page {:.2} MB",
            runs[0].0,
            peak / 1e6,
            runs[0].2 / 1e6
        );
        medians.push((median, peak));
    }
    support::Bench {
        name: "report_50k_events_recording_page",
        seconds: medians[1].0 / 1e3,
        floor_seconds: Some(medians[0].0 / 1e3),
        peak_rss_bytes: Some(medians[1].1 as u64),
        input_bytes: Some(size),
        stat: "median",
        runs: iters,
    }
    .emit();
}
