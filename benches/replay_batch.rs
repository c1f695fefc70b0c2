//! Batch and small replays (`cargo bench --bench replay_batch`), each run a
//! fresh `reel` process, as CI runs it:
//! - `replay_dir_1000`: `reel replay DIR` over 1,000 copies of a real
//!   cowork-harness cassette (`example-pdf-skill`, 34 events, 52 KB) whose
//!   session mounts a skill tree committed in git — the shape of a suite CI
//!   replays. Floor: reading + parsing every file into a `serde_json::Value`
//!   (one thread).
//! - `replay_small`: `reel replay FILE` of one 36 KB cassette
//!   (`example-multiselect-gate`). Floor: a process that reads and parses it
//!   (this bench's own `--child parse`, the same binary start-up as any Rust
//!   CLI).
//! - `replay_fingerprint_2000`: `reel replay FILE` of the pdf cassette with
//!   2,000 more files (46 MB) in its git-tracked skill tree, so the replay's
//!   skill-hash check hashes them all (the recorded hash no longer matches:
//!   a STALE warning, exit 0, for both tools). Floor: `git ls-files -z |
//!   xargs -0 sha256sum` over the tree.
//!
//! With `REEL_BENCH_ORIGINAL` set (see `support::Original`), the original
//! runs the same inputs in the same run, run by run in turn with reel.
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
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        // The small replay's floor: a process that reads and parses the file.
        support::read_and_parse(Path::new(&args[i + 1]));
        return;
    }
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
    replay_small(&root, iters);
    replay_fingerprint_2000(&examples, iters);
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Wall time of one `reel replay FILE` run in `cwd` (it must pass).
fn time_reel(file: &Path, cwd: &Path) -> f64 {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_reel"))
        .arg("replay")
        .arg(file)
        .current_dir(cwd)
        .output()
        .expect("spawn reel");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "reel replay {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    secs
}

/// `reel replay FILE` and, when installed, the original's, taking turns
/// run by run (a drift of the machine's speed hits both); their medians.
fn side_by_side(file: &Path, cwd: &Path, iters: usize) -> (f64, Option<f64>) {
    let original = support::Original::from_env();
    let (mut reel, mut orig) = (Vec::new(), Vec::new());
    time_reel(file, cwd);
    for _ in 0..iters {
        reel.push(time_reel(file, cwd));
        if let Some(o) = &original {
            orig.push(o.time(&["replay".as_ref(), file.as_os_str()], cwd, 0));
        }
    }
    (median(reel), (!orig.is_empty()).then(|| median(orig)))
}

/// The `_vs_original` row of `name`, when the original ran.
fn emit_vs_original(name: &str, reel: f64, orig: Option<f64>, input: u64, iters: usize) {
    let Some(orig) = orig else { return };
    println!(
        "{name}: reel {:.1} ms, original {:.1} ms ({:.1}x)",
        reel * 1e3,
        orig * 1e3,
        orig / reel
    );
    support::Bench {
        name: &format!("{name}_vs_original"),
        seconds: reel,
        floor_seconds: Some(orig),
        peak_rss_bytes: None,
        input_bytes: Some(input),
        stat: "median",
        runs: iters,
    }
    .emit();
}

/// One small cassette (36 KB): start-up and per-file cost with nothing to
/// share. Its floor is a process that reads and parses the file.
fn replay_small(root: &Path, iters: usize) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/examples");
    let file = root.join("replays/small.cassette.json");
    std::fs::copy(
        examples.join("replays/example-multiselect-gate.cassette.json"),
        &file,
    )
    .expect("copy the small cassette");
    let input = std::fs::metadata(&file).expect("stat").len();
    let iters = iters.max(if support::smoke() { 1 } else { 21 });
    let exe = std::env::current_exe().expect("current exe");
    let floor = median(
        (0..iters)
            .map(|_| {
                let t = Instant::now();
                let st = Command::new(&exe)
                    .arg("--child")
                    .arg(&file)
                    .status()
                    .expect("spawn the floor");
                assert!(st.success(), "floor child");
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let (reel, orig) = side_by_side(&file, root, iters);
    println!(
        "replay small: {:.2} ms; floor {:.2} ms",
        reel * 1e3,
        floor * 1e3
    );
    support::Bench {
        name: "replay_small",
        seconds: reel,
        floor_seconds: Some(floor),
        peak_rss_bytes: None,
        input_bytes: Some(input),
        stat: "median",
        runs: iters,
    }
    .emit();
    emit_vs_original("replay_small", reel, orig, input, iters);
    std::fs::remove_file(&file).expect("remove the small cassette");
}

/// The pdf cassette with 2,000 more files (46 MB; 50 files, 1 MB in a
/// smoke run) in its skill tree: the replay's skill-hash check hashes them.
fn replay_fingerprint_2000(examples: &Path, iters: usize) {
    let (files, bytes) = if support::smoke() {
        (50, 1 << 20)
    } else {
        (2000, 46 << 20)
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    for dir in ["skills", "sessions", "scenarios", "data"] {
        copy_tree(&examples.join(dir), &root.join(dir));
    }
    let assets = root.join("skills/my-pdf-skill/skills/my-pdf-skill/assets");
    support::skill_tree(&assets, files, bytes, support::seed());
    let file = root.join("replays/fp.cassette.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::copy(
        examples.join("replays/example-pdf-skill.cassette.json"),
        &file,
    )
    .expect("copy the cassette");
    support::git_commit_all(&root);
    let input = std::fs::metadata(&file).expect("stat").len() + bytes as u64;
    let floor = median(
        (0..iters.max(3))
            .map(|_| {
                let t = Instant::now();
                let st = Command::new("sh")
                    .args(["-c", "git ls-files -z | xargs -0 sha256sum >/dev/null"])
                    .current_dir(&assets)
                    .status()
                    .expect("spawn the floor");
                assert!(st.success(), "git ls-files | sha256sum");
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let (reel, orig) = side_by_side(&file, &root, iters);
    println!(
        "replay with a {files}-file fingerprint: {:.1} ms; floor {:.1} ms",
        reel * 1e3,
        floor * 1e3
    );
    support::Bench {
        name: "replay_fingerprint_2000",
        seconds: reel,
        floor_seconds: Some(floor),
        peak_rss_bytes: None,
        input_bytes: Some(input),
        stat: "median",
        runs: iters,
    }
    .emit();
    emit_vs_original("replay_fingerprint_2000", reel, orig, input, iters);
}
