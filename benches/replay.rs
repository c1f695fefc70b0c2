//! Replay speed and memory on a large cassette (`cargo bench --bench replay`).
//!
//! Generates a 50,000-event (~51 MB) cassette deterministically from a seed,
//! then times, each in a fresh child process (so peak RSS is per task):
//! - `parse`: read the file and `serde_json::from_slice::<Value>` it (the floor);
//! - `replay`: `reel::replay::replay_file` + the text report (what `reel replay FILE` does);
//! - `replay-json`: the same with the full run result and the JSON envelope.
//!
//! Prints min / median wall time over the iterations and the child's peak RSS
//! against the file size. Targets (issue 4): replay well under 1 s, within 3x
//! of the parse, peak memory under 3x the cassette size.
//!
//! `REEL_BENCH_EVENTS` / `REEL_BENCH_ITERS` / `REEL_BENCH_SEED` override the
//! defaults; `REEL_BENCH_PHASES=1` also times load and re-drive separately;
//! `REEL_BENCH_KEEP=FILE` keeps the generated cassette for a profiler.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

/// xorshift64*: tiny, deterministic, good enough to vary the payloads.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "report",
    "pipeline",
    "latency",
    "migration",
    "the",
    "and",
    "skill",
    "summary",
    "outputs",
    "action",
    "items",
    "checklist",
    "backfill",
    "window",
    "risk",
    "dashboard",
    "monitoring",
    "runbook",
    "on-call",
    "support",
    "ingest",
    "caching",
    "layer",
    "target",
    "error",
    "rate",
    "within",
    "quarter",
    "status",
];

fn text(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

/// Builds the cassette document.
fn generate(events: usize, seed: u64) -> Value {
    let mut rng = Rng(seed | 1);
    let mut lines = Vec::with_capacity(events);
    lines.push(
        json!({"type":"system","subtype":"init","cwd":"/sessions/bench","session_id":"bench",
               "tools":["Bash","Read","Write","Skill","AskUserQuestion"],"mcp_servers":[{"name":"cowork","status":"connected"}],
               "skills":["bench-skill"],"model":"bench-model"})
        .to_string(),
    );
    let mut tool = 0u64;
    while lines.len() < events - 1 {
        let line = match rng.below(4) {
            0 => {
                json!({"type":"assistant","message":{"model":"bench-model","id":format!("msg_{}", lines.len()),"role":"assistant",
                    "content":[{"type":"text","text":text(&mut rng, 820)}]},"parent_tool_use_id":null})
            }
            1 => {
                tool += 1;
                json!({"type":"assistant","message":{"model":"bench-model","id":format!("msg_{}", lines.len()),"role":"assistant",
                    "content":[{"type":"tool_use","id":format!("toolu_{tool}"),"name":"Bash","input":{"command":format!("echo {}", text(&mut rng, 700))}}]},
                    "parent_tool_use_id":null})
            }
            2 => {
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_{tool}"),
                    "content":text(&mut rng, 850),"is_error":false}]},"parent_tool_use_id":null})
            }
            _ => {
                json!({"type":"system","subtype":"thinking_tokens","estimated_tokens":rng.below(500),"uuid":format!("{:032x}", rng.next()),
                    "session_id":"bench","pad":text(&mut rng, 760)})
            }
        };
        lines.push(line.to_string());
    }
    lines.push(
        json!({"type":"result","subtype":"success","is_error":false,"num_turns":tool,"total_cost_usd":1.5,
               "usage":{"input_tokens":1000,"output_tokens":2000},"result":"done"})
        .to_string(),
    );
    json!({
        "$schema": "https://raw.githubusercontent.com/yaniv-golan/cowork-harness/main/schema/cassette.v12.json",
        "generator": "cowork-harness",
        "cassetteVersion": 12,
        "scenario": {
            "name": "bench", "baseline": "latest", "session": "(inline)", "fidelity": "protocol", "execution": "local",
            "lane": "local", "prompt": "benchmark", "answers": [], "expect_denied": [],
            "assert": [
                {"result": "success"}, {"transcript_contains": "checklist"}, {"tool_called": "Bash"},
                {"tool_result_contains": "runbook"}, {"max_tool_errors": 0}, {"transcript_not_matches": "zz[0-9]+qq"}
            ],
            "skills": [], "requires_capabilities": []
        },
        "events": lines,
        "effectiveFidelity": "protocol",
        "fingerprint": {"baseline": "1.0.0", "hashFormat": "jcs1"}
    })
}

fn max_rss_bytes() -> u64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru.ru_maxrss as u64 * 1024
    }
}

fn child(mode: &str, file: &Path, iters: usize) {
    let mut times = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        match mode {
            "parse" => {
                let bytes = std::fs::read(file).expect("read");
                let v: Value = serde_json::from_slice(&bytes).expect("parse");
                std::hint::black_box(v);
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
                std::hint::black_box((r, text));
            }
            _ => {
                // `reel replay FILE --output-format json`: full run result + envelope.
                let r = reel::replay::replay_file(file, &reel::replay::ReplayOptions::default());
                assert!(
                    r.error.is_none(),
                    "bench cassette failed to load: {:?}",
                    r.error
                );
                let line = reel::report::json::envelope(std::slice::from_ref(&r)).to_string();
                std::hint::black_box((r, line));
            }
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    if mode == "replay" && std::env::var_os("REEL_BENCH_PHASES").is_some() {
        // Where the time goes: load, then the re-drive (the rest is evaluation + reports).
        let t = Instant::now();
        let c = reel::cassette::Cassette::load(file).expect("load");
        let load = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let run = reel::evidence::RunRecord::from_cassette(&c);
        let drive = t.elapsed().as_secs_f64() * 1000.0;
        std::hint::black_box(run);
        eprintln!("phases: load {load:.1} ms, re-drive {drive:.1} ms");
    }
    println!(
        "{} {} {}",
        times[0],
        times[times.len() / 2],
        max_rss_bytes()
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
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let events = env("REEL_BENCH_EVENTS", 50_000) as usize;
    let iters = env("REEL_BENCH_ITERS", 5) as usize;
    let seed = env("REEL_BENCH_SEED", 0x5eed);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bench.cassette.json");
    let doc = generate(events, seed);
    let bytes = serde_json::to_vec_pretty(&doc).expect("serialise");
    std::fs::write(&file, &bytes).expect("write");
    if let Some(keep) = std::env::var_os("REEL_BENCH_KEEP") {
        // For profiling: `perf record <bench> --child replay <file> 1`.
        std::fs::write(&keep, &bytes).expect("write REEL_BENCH_KEEP");
    }
    let size = bytes.len() as f64;
    println!(
        "cassette: {events} events, {:.1} MB (seed {seed:#x}), {iters} iterations per task",
        size / 1e6
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut rows = Vec::new();
    for mode in ["parse", "replay", "replay-json"] {
        let out = Command::new(&exe)
            .args(["--child", mode, &file.to_string_lossy(), &iters.to_string()])
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
        println!(
            "{mode:>7}: min {:8.1} ms  median {:8.1} ms  peak RSS {:7.1} MB ({:.2}x file)",
            f[0],
            f[1],
            f[2] / 1e6,
            f[2] / size
        );
        rows.push(f);
    }
    println!(
        "replay / parse (median): text {:.2}x, json {:.2}x",
        rows[1][1] / rows[0][1],
        rows[2][1] / rows[0][1]
    );
}
