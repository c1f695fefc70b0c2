//! What every bench shares: the one seeded input generator (cassettes, skill
//! trees), the physical floors (read + JSON-parse a file), peak-RSS probes,
//! and the machine-readable `BENCH` line that `scripts/bench.sh` collects
//! into docs/benchmarks.md.
//!
//! Inputs are generated from a seed (xorshift64*) into a temp dir at bench
//! time and never committed. Deliberately not here: timing policy (each bench
//! decides how many runs and which statistic) and any assertion — benches
//! report, they never fail on a figure.
//!
//! Include with `mod support;` from a file in `benches/`; each bench uses a
//! subset, hence the `dead_code` allowance.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// Benches measure what the `reel` binary does, so they run on its
/// allocator and its settings — the floors included.
#[path = "../../src/allocator.rs"]
mod allocator;

/// The default seed of every generated input (`REEL_BENCH_SEED` overrides).
pub const SEED: u64 = 0x5eed;

/// True when the bench runs as a test (`cargo test --all-targets` runs
/// `harness = false` benches without `--bench`): benches then shrink their
/// inputs to a quick smoke run, so CI checks they work without paying for
/// the full measurement.
pub fn smoke() -> bool {
    !std::env::args().any(|a| a == "--bench")
}

/// `REEL_BENCH_SEED`, else [`SEED`].
pub fn seed() -> u64 {
    env_u64("REEL_BENCH_SEED", SEED)
}

/// An unsigned env override (`REEL_BENCH_EVENTS`, `REEL_BENCH_ITERS`, ...).
pub fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// The one seeded generator, shared with the integration tests.
#[path = "../../tests/it/support/rng.rs"]
mod rng;
pub use rng::Rng;

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

/// About `bytes` of English-looking prose.
pub fn prose(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 16);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(if rng.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

/// A v12 cassette of `events` transcript lines of about `event_bytes` each
/// (system init, then a seeded mix of assistant text (after a redacted
/// thinking block, as Claude Code records them), tool_use, tool_result and
/// thinking-token lines, then a `result`), and one inlined artifact; with
/// `with_timeline`, also the recorder's `timeline` of those lines (one small
/// object per tool call, result and thinking block). 50,000 events of 1,000
/// bytes pretty-print to ~51 MB (~56 MB with the timeline).
pub fn cassette(
    events: usize,
    event_bytes: usize,
    seed: u64,
    with_timeline: bool,
) -> Map<String, Value> {
    let mut rng = Rng::new(seed);
    let pad = event_bytes.saturating_sub(180);
    let mut lines = Vec::with_capacity(events);
    let mut timeline: Vec<Value> = Vec::new();
    let mut ts = 1_000u64;
    let mut mark = |line: usize, entry: Value, ts: &mut u64| {
        *ts += 7;
        let mut e = json!({"seq": timeline.len(), "ts": *ts, "line": line});
        if let (Some(e), Value::Object(rest)) = (e.as_object_mut(), entry) {
            e.extend(rest);
        }
        timeline.push(e);
    };
    lines.push(
        json!({"type":"system","subtype":"init","cwd":"/sessions/bench","session_id":"bench",
               "tools":["Bash","Read","Write","Skill","AskUserQuestion"],"mcp_servers":[{"name":"cowork","status":"connected"}],
               "skills":["bench-skill"],"model":"bench-model"})
        .to_string(),
    );
    let mut tool = 0u64;
    while lines.len() < events.saturating_sub(1) {
        let line = match rng.below(4) {
            0 => {
                mark(lines.len(), json!({"type": "thinking"}), &mut ts);
                let signature: String = (0..40).map(|_| format!("{:x}", rng.next())).collect();
                json!({"type":"assistant","message":{"model":"bench-model","id":format!("msg_{}", lines.len()),"role":"assistant",
                    "content":[{"type":"thinking","thinking":"","signature":&signature[..300]},
                               {"type":"text","text":prose(&mut rng, pad.saturating_sub(340))}]},"parent_tool_use_id":null})
            }
            1 => {
                tool += 1;
                mark(
                    lines.len(),
                    json!({"type":"tool_use","toolUseId":format!("toolu_{tool}"),"name":"Bash",
                    "model":"bench-model","skillScope":"(root)"}),
                    &mut ts,
                );
                json!({"type":"assistant","message":{"model":"bench-model","id":format!("msg_{}", lines.len()),"role":"assistant",
                    "content":[{"type":"tool_use","id":format!("toolu_{tool}"),"name":"Bash","input":{"command":format!("echo {}", prose(&mut rng, pad.saturating_sub(100)))}}]},
                    "parent_tool_use_id":null})
            }
            2 => {
                mark(
                    lines.len(),
                    json!({"type":"tool_result","toolUseId":format!("toolu_{tool}"),"isError":false}),
                    &mut ts,
                );
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_{tool}"),
                    "content":prose(&mut rng, pad),"is_error":false}]},"parent_tool_use_id":null})
            }
            _ => {
                json!({"type":"system","subtype":"thinking_tokens","estimated_tokens":rng.below(500),"uuid":format!("{:032x}", rng.next()),
                    "session_id":"bench","pad":prose(&mut rng, pad.saturating_sub(100))})
            }
        };
        lines.push(line.to_string());
    }
    lines.push(
        json!({"type":"result","subtype":"success","is_error":false,"num_turns":tool,"total_cost_usd":1.5,
               "usage":{"input_tokens":1000,"output_tokens":2000},"result":"done"})
        .to_string(),
    );
    let body = "# Actions\n- [ ] ship it\n";
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
        "controlOut": [],
        "effectiveFidelity": "protocol",

        "artifacts": [{"path": "outputs/actions.md", "bytes": body.len(),
                       "sha256": hex_sha256(body.as_bytes()), "body": body}],
        "fingerprint": {"baseline": "1.0.0", "hashFormat": "jcs1"}
    })
    .as_object()
    .cloned()
    .map(|mut doc| {
        if with_timeline {
            doc.insert(
                "timelineHeader".into(),
                json!({"v": 1, "startedAtWall": "2026-11-30T00:00:00.000Z", "startedAtMono": "1000000"}),
            );
            doc.insert("timeline".into(), Value::Array(timeline));
        }
        doc
    })
    .expect("a JSON object literal")
}

/// The large cassette of the replay and verify benches, written to `dir`:
/// `REEL_BENCH_EVENTS` (default 50,000) events, ~51 MB (see [`cassette`] for
/// `with_timeline`). Returns its path and size in bytes.
pub fn write_big_cassette(dir: &Path, with_timeline: bool) -> (PathBuf, u64) {
    let events = env_u64("REEL_BENCH_EVENTS", if smoke() { 500 } else { 50_000 }) as usize;
    let doc = cassette(events, 1_000, seed(), with_timeline);
    let name = if with_timeline {
        "big-timeline.cassette.json"
    } else {
        "big.cassette.json"
    };
    let path = dir.join(name);
    let bytes = serde_json::to_vec_pretty(&doc).expect("serialise");
    std::fs::write(&path, &bytes).expect("write the bench cassette");
    (path, bytes.len() as u64)
}

/// The same `events` lines recorded as one multi-turn session of `turns`
/// user turns (docs/multi-turn.md) and as a one-prompt run: both cassettes
/// hold the same lines (each turn's slice ends with its own `result`), the
/// same top-level `assert:`; the multi-turn one adds `reelTurns` marks and
/// per-turn `assert:` blocks (three keys each, judged on that turn's slice).
/// Written to `dir`; returns (one-turn path, multi-turn path, size of the
/// multi-turn file).
pub fn write_turn_cassettes(dir: &Path, turns: usize) -> (PathBuf, PathBuf, u64) {
    let events = env_u64("REEL_BENCH_EVENTS", if smoke() { 500 } else { 50_000 }) as usize;
    let turns = turns.clamp(1, events / 4);
    let mut doc = cassette(events, 1_000, seed(), false);
    let per = events / turns;
    let mut marks = Vec::new();
    let mut scenario_turns = Vec::new();
    let lines = doc["events"].as_array_mut().expect("events");
    for t in 0..turns {
        let (start, end) = (
            t * per,
            if t + 1 == turns {
                events
            } else {
                (t + 1) * per
            },
        );
        // Each turn ends with its `result`, as a recorded session's does.
        lines[end - 1] = Value::String(
            json!({"type":"result","subtype":"success","is_error":false,"num_turns":1,
                   "total_cost_usd":0.03,"usage":{"input_tokens":20,"output_tokens":40},
                   "result":"done"})
            .to_string(),
        );
        marks.push(json!({"index": t, "eventStart": start, "eventEnd": end,
                          "frameStart": t, "frameEnd": t + 1, "interrupted": false, "resumed": false}));
        scenario_turns.push(json!({"prompt": format!("turn {}", t + 1), "answers": [],
            "assert": [{"tool_called": "Bash"}, {"tool_result_contains": "runbook"}, {"max_tool_errors": 0}]}));
    }
    let one = serde_json::to_vec_pretty(&doc).expect("serialise");
    let scenario = doc["scenario"].as_object_mut().expect("scenario");
    scenario.shift_remove("prompt");
    scenario.insert("turns".into(), Value::Array(scenario_turns));
    doc.insert(
        "reelTurns".into(),
        json!({"sessionId": "bench", "maxTurns": null, "resumedSession": null, "turns": marks}),
    );
    let multi = serde_json::to_vec_pretty(&doc).expect("serialise");
    let (one_path, multi_path) = (
        dir.join("one-turn.cassette.json"),
        dir.join("turns.cassette.json"),
    );
    std::fs::write(&one_path, &one).expect("write the one-turn cassette");
    std::fs::write(&multi_path, &multi).expect("write the multi-turn cassette");
    (one_path, multi_path, multi.len() as u64)
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Writes a skill tree of `files` files totalling exactly `total_bytes`
/// under `root`: 40 skills, two directory levels, sizes drawn around the
/// mean, one `.claude-plugin/plugin.json` per 500 files (exercising the
/// manifest transforms), random (incompressible) bodies otherwise.
pub fn skill_tree(root: &Path, files: usize, total_bytes: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let mean = (total_bytes / files.max(1)).max(1) as u64;
    let mut sizes: Vec<usize> = (0..files)
        .map(|_| 1 + rng.below(2 * mean) as usize)
        .collect();
    let sum: usize = sizes.iter().sum();
    for s in &mut sizes {
        *s = (*s as u128 * total_bytes as u128 / sum as u128) as usize;
    }
    let short = total_bytes - sizes.iter().sum::<usize>();
    sizes[0] += short;
    for (i, size) in sizes.iter().enumerate() {
        let skill = i % 40;
        let rel = if i % 500 == 0 {
            format!("skills/s{skill:02}/.claude-plugin/plugin.json")
        } else {
            format!("skills/s{skill:02}/part{}/file{i:04}.md", i % 5)
        };
        let path = root.join(&rel);
        std::fs::create_dir_all(path.parent().expect("generated paths have a parent"))
            .expect("mkdir");
        let body: Vec<u8> = if rel.ends_with("plugin.json") {
            let mut s = format!("{{\"version\":\"1.0.{i}\",\"name\":\"s{skill}\",\"pad\":\"");
            while s.len() + 2 < *size {
                s.push('x');
            }
            s.push_str("\"}");
            s.into_bytes()
        } else {
            let mut b = Vec::with_capacity(*size + 8);
            while b.len() < *size {
                b.extend_from_slice(&rng.next().to_le_bytes());
            }
            b.truncate(*size);
            b
        };
        std::fs::write(&path, body).expect("write");
    }
}

/// `git init` + add + commit everything under `root` (fixed identity, no
/// hooks or user config involved).
pub fn git_commit_all(root: &Path) {
    for args in [
        &["init", "-q", "."][..],
        &["add", "-A"],
        &["commit", "-q", "--no-verify", "-m", "bench"],
    ] {
        let st = Command::new("git")
            .args([
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@example.com",
            ])
            .args(args)
            .current_dir(root)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .status()
            .expect("git runs");
        assert!(st.success(), "git {args:?}");
    }
}

/// The physical floor of any command that loads a cassette: read the file
/// and parse it into a `serde_json::Value`.
pub fn read_and_parse(path: &Path) {
    let bytes = std::fs::read(path).expect("read");
    let v: Value = serde_json::from_slice(&bytes).expect("parse");
    std::hint::black_box(v);
}

/// Best and median wall time of `n` runs of `f` (after one warm-up run).
pub fn time_runs(n: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    f();
    let mut times: Vec<Duration> = (0..n.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[0], times[times.len() / 2])
}

/// Peak resident set size of this process image so far, in bytes.
///
/// Reads `VmHWM` (the high-water mark of the current address space) rather
/// than `getrusage`: `ru_maxrss` survives `exec`, so a child forked from a
/// parent holding the generated 50 MB input would report the parent's peak.
pub fn peak_rss_self() -> u64 {
    let hwm = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    hwm.unwrap_or_else(|| rusage(libc::RUSAGE_SELF).ru_maxrss as u64 * 1024)
}

/// Peak resident set size of the largest waited-for child, in bytes.
pub fn peak_rss_children() -> u64 {
    rusage(libc::RUSAGE_CHILDREN).ru_maxrss as u64 * 1024
}

fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: getrusage only writes into the zeroed struct it is given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    }
}

/// One measurement, as `scripts/bench.sh` reads it.
pub struct Bench<'a> {
    /// Stable id (the row key in docs/benchmarks.md).
    pub name: &'a str,
    /// The measured time (the statistic named in `stat`).
    pub seconds: f64,
    /// The physical floor for the same input, if one applies.
    pub floor_seconds: Option<f64>,
    /// Peak RSS of the process that did the work, if measured.
    pub peak_rss_bytes: Option<u64>,
    /// Size of the input, for RSS ratios.
    pub input_bytes: Option<u64>,
    /// `median`, `min`, ... (no spaces).
    pub stat: &'a str,
    /// Runs behind the statistic.
    pub runs: usize,
}

impl Bench<'_> {
    /// Prints `BENCH name=... seconds=... ...` on stdout (one line, `-` for
    /// a figure that does not apply).
    pub fn emit(&self) {
        let opt_f = |v: Option<f64>| v.map_or("-".to_owned(), |s| format!("{s:.6}"));
        let opt_u = |v: Option<u64>| v.map_or("-".to_owned(), |n| n.to_string());
        println!(
            "BENCH name={} seconds={:.6} floor_seconds={} peak_rss_bytes={} input_bytes={} stat={} runs={}",
            self.name,
            self.seconds,
            opt_f(self.floor_seconds),
            opt_u(self.peak_rss_bytes),
            opt_u(self.input_bytes),
            self.stat,
            self.runs
        );
    }
}

/// cowork-harness 2.0.0, for side-by-side rows: `REEL_BENCH_ORIGINAL` names
/// its built checkout (`dist/cli.js`; how to build it:
/// `docs/spec/running-the-original.md`), `REEL_BENCH_NODE` its node 22
/// (default `node` on `PATH`). `None` when unset; under `CI=true` with
/// `REEL_BENCH_REQUIRE_ORIGINAL=1` a missing original is an error.
pub struct Original {
    node: PathBuf,
    cli: PathBuf,
}

impl Original {
    pub fn from_env() -> Option<Original> {
        let Some(dir) = std::env::var_os("REEL_BENCH_ORIGINAL") else {
            assert!(
                std::env::var_os("REEL_BENCH_REQUIRE_ORIGINAL").is_none(),
                "REEL_BENCH_REQUIRE_ORIGINAL is set but REEL_BENCH_ORIGINAL is not"
            );
            eprintln!(
                "(side-by-side rows skipped: set REEL_BENCH_ORIGINAL to a built cowork-harness checkout)"
            );
            return None;
        };
        let cli = PathBuf::from(dir).join("dist/cli.js");
        assert!(cli.is_file(), "REEL_BENCH_ORIGINAL: no {}", cli.display());
        let node = std::env::var_os("REEL_BENCH_NODE")
            .map_or_else(|| PathBuf::from("node"), PathBuf::from);
        Some(Original { node, cli })
    }

    /// Wall time of one `node dist/cli.js ARGS` run in `cwd` (its exit code
    /// must be `want`).
    pub fn time(&self, args: &[&std::ffi::OsStr], cwd: &Path, want: i32) -> f64 {
        let t = Instant::now();
        let out = Command::new(&self.node)
            .arg(&self.cli)
            .args(args)
            .current_dir(cwd)
            .output()
            .expect("spawn the original");
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(
            out.status.code(),
            Some(want),
            "original {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        secs
    }
}
