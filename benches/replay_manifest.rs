//! Replay speed on a manifest-heavy cassette
//! (`cargo bench --bench replay_manifest`).
//!
//! Generates (seeded, `support::Rng`) a cassette with 2,000 inlined
//! artifacts — 1,800 created deliverables under `outputs/` (one in eight a
//! small `.json`) and 200 pre-existing inputs under `inputs/` recorded in the
//! pre-run baseline — whose `assert:` is a `no_unexpected_files` allowlist of
//! 2,000 globs (exact paths, `*`/`?` name patterns, `dir/**`, `**/name`, in
//! seeded order, every deliverable covered) and `input_unmodified: inputs/**`.
//! Then times, each in a fresh child process, the median of the runs:
//! - `parse`: read the file and `serde_json::from_slice::<Value>` it (the floor);
//! - `replay`: `reel::replay::replay_file` (lean, what `reel replay FILE` does);
//! - `mutate`: the same with `--mutate` (default caps: 50 perturbations, each
//!   one re-evaluation of both assertions);
//! - `assertions`: the two assertions alone, on a fresh `assert::Context` over
//!   the loaded cassette (what one evaluation costs, without load, re-drive
//!   and materialising 2,000 files — which dominates `replay` now).
//!
//! `REEL_BENCH_ARTIFACTS` / `REEL_BENCH_GLOBS` / `REEL_BENCH_ITERS` /
//! `REEL_BENCH_SEED` override the defaults; `REEL_BENCH_KEEP=FILE` keeps the
//! generated cassette (for `reel replay FILE --mutate` or a profiler).
//! Prints `BENCH` lines for `scripts/bench.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

mod support;

/// Share of the artifacts that are pre-existing inputs (one in ten).
const INPUT_EVERY: usize = 10;
/// Share of the deliverables that are `.json` (one in eight).
const JSON_EVERY: usize = 8;
/// Deliverable directories under `outputs/`.
const DIRS: usize = 50;

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The deliverable paths and the allowlist covering them.
fn allowlist(outputs: &[String], globs: usize, rng: &mut support::Rng) -> Vec<String> {
    let mut list: Vec<String> = Vec::with_capacity(globs);
    // Every fourth directory is allowed wholesale; the rest file by file,
    // with a seeded mix of glob shapes, so most files need a late pattern.
    for d in (0..DIRS).step_by(4) {
        list.push(format!("outputs/g{d:02}/**"));
    }
    for path in outputs {
        if list.len() >= globs {
            break;
        }
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let d: usize = dir.trim_start_matches("outputs/g").parse().unwrap_or(0);
        if d.is_multiple_of(4) {
            continue;
        }
        let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
        list.push(match rng.below(5) {
            0 | 1 => path.clone(),
            2 => format!("{dir}/{}*.{ext}", &stem[..stem.len() - 1]),
            3 => format!("{dir}/{}?.{ext}", &stem[..stem.len() - 1]),
            _ => format!("**/{name}"),
        });
    }
    // Pad with patterns that match nothing here (other projects' outputs).
    while list.len() < globs {
        let n = list.len();
        list.push(match rng.below(3) {
            0 => format!("reports/r{n:04}/*.pdf"),
            1 => format!("outputs/archive/{n:04}/**"),
            _ => format!("outputs/g{:02}/other{n:04}.txt", rng.below(DIRS as u64)),
        });
    }
    // Seeded Fisher-Yates, so the matching glob is anywhere in the list.
    for i in (1..list.len()).rev() {
        list.swap(i, rng.below(i as u64 + 1) as usize);
    }
    list
}

/// The manifest-heavy cassette, written to `dir`; its path and size.
fn write_manifest_cassette(dir: &Path, artifacts: usize, globs: usize) -> (PathBuf, u64) {
    let mut rng = support::Rng::new(support::seed());
    let mut doc = support::cassette(200, 400, support::seed(), false);
    let mut entries = Vec::with_capacity(artifacts);
    let mut outputs = Vec::new();
    let mut pre_paths = Vec::new();
    let mut pre_hashes = serde_json::Map::new();
    for i in 0..artifacts {
        if i.is_multiple_of(INPUT_EVERY) {
            let path = format!("inputs/batch{}/source{i:04}.csv", i % 7);
            let body = support::prose(&mut rng, 120);
            let sha = sha256_hex(body.as_bytes());
            pre_paths.push(Value::String(path.clone()));
            pre_hashes.insert(path.clone(), Value::String(sha.clone()));
            entries.push(json!({"path": path, "bytes": body.len(), "sha256": sha,
                                "truncated": true, "truncationReason": "input"}));
            continue;
        }
        let d = i % DIRS;
        let (path, body) = if i % JSON_EVERY == 1 {
            let body = serde_json::to_string_pretty(&json!({
                "id": i, "title": support::prose(&mut rng, 30).trim(), "score": rng.below(100),
                "done": rng.below(2) == 0, "tags": ["bench", "manifest"]
            }))
            .expect("serialise");
            (format!("outputs/g{d:02}/item{i:04}.json"), body)
        } else {
            (
                format!("outputs/g{d:02}/item{i:04}.md"),
                support::prose(&mut rng, 200),
            )
        };
        outputs.push(path.clone());
        entries.push(json!({"path": path, "bytes": body.len(),
                            "sha256": sha256_hex(body.as_bytes()), "body": body}));
    }
    let allow = allowlist(&outputs, globs, &mut rng);
    doc.insert("artifacts".into(), Value::Array(entries));
    doc.insert("preRunPaths".into(), Value::Array(pre_paths));
    doc.insert("preRunHashes".into(), Value::Object(pre_hashes));
    doc.insert("preRunOrigin".into(), json!("local-walk"));
    doc.insert("userVisibleRoots".into(), json!(["outputs", ".projects"]));
    let scenario = doc
        .get_mut("scenario")
        .and_then(Value::as_object_mut)
        .expect("the generated cassette has a scenario");
    scenario.insert(
        "assert".into(),
        json!([{"no_unexpected_files": allow}, {"input_unmodified": "inputs/**"}]),
    );
    let path = dir.join("manifest.cassette.json");
    let bytes = serde_json::to_vec_pretty(&doc).expect("serialise");
    std::fs::write(&path, &bytes).expect("write the bench cassette");
    (path, bytes.len() as u64)
}

/// The scenario's `assert:` items, evaluated on one fresh context (what one
/// replay evaluation, or one `--mutate` perturbation, costs).
fn evaluate_assertions(cassette: &reel::cassette::Cassette, run: &reel::evidence::RunRecord) {
    let ctx = reel::assert::Context::new(cassette, run, None);
    let items = cassette.scenario().get("assert").and_then(Value::as_array);
    for item in items.into_iter().flatten().filter_map(Value::as_object) {
        let outcome = reel::assert::check(item, &ctx);
        assert!(outcome.pass, "{}", outcome.message);
    }
}

fn child(mode: &str, file: &Path, iters: usize) {
    let loaded = (mode == "assertions").then(|| {
        let cassette = reel::cassette::Cassette::load(file).expect("load the bench cassette");
        let run = reel::evidence::RunRecord::from_cassette(&cassette);
        (cassette, run)
    });
    let mut times = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        match (mode, &loaded) {
            ("parse", _) => support::read_and_parse(file),
            (_, Some((cassette, run))) => evaluate_assertions(cassette, run),
            _ => {
                let opts = reel::replay::ReplayOptions {
                    lean: true,
                    mutate: (mode == "mutate").then(Default::default),
                    ..Default::default()
                };
                let r = reel::replay::replay_file(file, &opts);
                assert!(r.error.is_none(), "bench cassette failed: {:?}", r.error);
                assert!(
                    r.assertions.iter().take(2).all(|a| a.pass),
                    "the manifest assertions must pass: {:?}",
                    r.assertions
                );
                std::hint::black_box(r);
            }
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!("{}", times[times.len() / 2]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let iters: usize = args[i + 3].parse().unwrap_or(3);
        child(&args[i + 1], Path::new(&args[i + 2]), iters);
        return;
    }
    let smoke = support::smoke();
    let artifacts = support::env_u64("REEL_BENCH_ARTIFACTS", if smoke { 60 } else { 2_000 });
    let globs = support::env_u64("REEL_BENCH_GLOBS", if smoke { 60 } else { 2_000 });
    let iters = support::env_u64("REEL_BENCH_ITERS", if smoke { 1 } else { 5 }) as usize;
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, size) = write_manifest_cassette(dir.path(), artifacts as usize, globs as usize);
    if let Some(keep) = std::env::var_os("REEL_BENCH_KEEP") {
        std::fs::copy(&file, &keep).expect("write REEL_BENCH_KEEP");
    }
    println!(
        "cassette: {:.2} MB, {artifacts} artifacts, {globs} allowlist globs (seed {:#x}), median of {iters}",
        size as f64 / 1e6,
        support::seed()
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut medians = Vec::new();
    for mode in ["parse", "replay", "mutate", "assertions"] {
        // `--mutate` repeats the whole evaluation 50 times: fewer runs.
        let n = if mode == "mutate" {
            iters.min(3)
        } else {
            iters
        };
        let out = Command::new(&exe)
            .args(["--child", mode, &file.to_string_lossy(), &n.to_string()])
            .output()
            .expect("spawn bench child");
        assert!(
            out.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let median: f64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("the child prints its median");
        println!("{mode:>7}: median {:9.1} ms", median * 1e3);
        medians.push((median, n));
    }
    let floor = medians[0].0;
    for (name, (seconds, runs)) in [
        ("replay_manifest_2k", medians[1]),
        ("replay_manifest_2k_mutate", medians[2]),
        ("replay_manifest_2k_assertions", medians[3]),
    ] {
        support::Bench {
            name,
            seconds,
            floor_seconds: Some(floor),
            peak_rss_bytes: None,
            input_bytes: Some(size),
            stat: "median",
            runs,
        }
        .emit();
    }
}
