//! Benchmark: the recorder's own overhead for a typical run — from the moment
//! the agent's last process is gone to the cassette being on disk (post-run
//! manifest, secret scrub, assembly, loader validation, fingerprint, live
//! verdict, atomic write). Target: under 50 ms.
//!
//! The agent is `tests/data/agents/replay_agent.py`, which replays the
//! committed `cassettes/write-note.cassette.json` (a real Claude Code run)
//! so the event stream, control frames and outputs have a real run's shape.
//!
//! Run: `cargo bench --bench record_overhead` (prints median / p90 / max, and
//! a `BENCH` line against the floor: reading and parsing the cassette written).
//! `REEL_TIMING=1 reel record ...` prints the per-phase split of one run.
//!
//! Measured (2 shared cores, release): before the secret scrubber of
//! `verify::redact` was wired in, median 12.7 ms / p90 26 ms; with it,
//! median 102 ms / p90 129 ms, of which the scrub (`scrub_cassette_checked`,
//! detector scan of every line) is ~100-140 ms, the live verdict (replay
//! engine) 13-25 ms and the atomic write (fsync) 7-15 ms. The scan was slow
//! because the detector set's lazy DFA overflowed the regex crate's default
//! 2 MiB cache and fell back to the NFA simulation on every line; with a
//! secrets-only set, a larger cache and per-detector regexes compiled on
//! first hit: median 22 ms / p90 38 ms on the same (loaded) machine where
//! the old code measured 180 / 258 ms; a fresh `reel record` process spends
//! 1.5-6 ms in the scrub.

use std::path::PathBuf;
use std::time::Duration;

use reel::record::{RecordOptions, record};

mod support;

fn main() {
    // The agents this bench starts are confined through this executable,
    // and their MCP servers recorded through it.
    reel::sandbox::run_if_helper();
    reel::mcp::run_if_server();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    // SAFETY: single-threaded at this point; only this process reads it.
    unsafe {
        std::env::set_var("REEL_RUNS_DIR", tmp.path().join("runs"));
    }
    let agent = format!(
        "python3 {} {}",
        repo.join("tests/data/agents/replay_agent.py").display(),
        repo.join("cassettes/write-note.cassette.json").display()
    );
    let iterations = if support::smoke() { 2 } else { 25 };
    let mut samples: Vec<Duration> = Vec::new();
    for i in 0..iterations {
        let mut opts = RecordOptions::new(repo.join("scenarios/write-note.yaml"));
        opts.out = Some(tmp.path().join(format!("out-{i}.cassette.json")));
        opts.agent_cmd = Some(agent.clone());
        opts.no_model_script = true;
        opts.allow_failing = true; // the verdict is computed either way
        let rec = record(&opts).expect("record");
        samples.push(rec.overhead);
    }
    samples.sort();
    // The floor: read and parse the cassette the recorder wrote.
    let last = tmp
        .path()
        .join(format!("out-{}.cassette.json", iterations - 1));
    let (_, floor) = support::time_runs(iterations, || support::read_and_parse(&last));
    support::Bench {
        name: "record_overhead",
        seconds: samples[iterations / 2].as_secs_f64(),
        floor_seconds: Some(floor.as_secs_f64()),
        peak_rss_bytes: None,
        input_bytes: std::fs::metadata(&last).ok().map(|m| m.len()),
        stat: "median",
        runs: iterations,
    }
    .emit();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "record overhead (agent exit -> cassette on disk), {iterations} runs: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        ms(samples[iterations / 2]),
        ms(samples[iterations * 9 / 10]),
        ms(samples[iterations - 1])
    );
}
