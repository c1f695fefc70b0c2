//! Benchmarks for `verify-cassettes` and `rehash` (harness = false; run with
//! `cargo bench --bench verify`). Prints wall-clock figures; no assertions —
//! speed is measured here, never in tests.
//!
//! 1. privacy scan and verify (with and without the scan) of the generated
//!    50,000-event, ~51 MB cassette (`support::write_big_cassette`);
//! 2. verify of a directory of 1,000 small cassettes, all cores vs one;
//! 3. `rehash --dry-run` of a directory of legacy and current cassettes.
//!
//! Each against its floor (read + JSON-parse the same files), as `BENCH`
//! lines for `scripts/bench.sh`; run as a test (no `--bench`) it shrinks to a
//! smoke run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

mod support;

/// CPU time (user + system) of this process so far: unlike wall-clock, it
/// does not grow when other processes compete for the cores.
fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Best wall-clock time of `n` runs, with the CPU time of that run.
fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut best_cpu = Duration::ZERO;
    let mut last = None;
    for _ in 0..n {
        let (t, c) = (Instant::now(), cpu_time());
        let out = f();
        if t.elapsed() < best {
            best = t.elapsed();
            best_cpu = cpu_time() - c;
        }
        last = Some(out);
    }
    LAST_CPU.with(|c| c.set(best_cpu));
    (best, last.expect("n > 0"))
}

thread_local! {
    static LAST_CPU: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// CPU time of the best run of the last `best_of`, in ms.
fn cpu_ms() -> f64 {
    LAST_CPU.with(|c| c.get()).as_secs_f64() * 1e3
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("cores: {cores}");

    let smoke = support::smoke();
    let runs = if smoke { 1 } else { 3 };

    // 1. the 51 MB cassette (the replay bench's, from the shared generator)
    let (big_path, big_size) = support::write_big_cassette(tmp.path(), false);
    let big: Map<String, Value> =
        serde_json::from_slice(&std::fs::read(&big_path).expect("read")).expect("parse");
    println!("big cassette: {:.1} MB", big_size as f64 / 1e6);
    let (floor_big, _) = best_of(runs, || support::read_and_parse(&big_path));
    if std::env::var_os("REEL_BENCH_DETECTORS").is_some() {
        let events: Vec<&str> = big["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        per_detector(&events);
        let set =
            regex::bytes::RegexSet::new(reel::verify::detect::DETECTORS.iter().map(|d| d.pattern))
                .expect("set");
        let t = Instant::now();
        let n = events
            .iter()
            .filter(|e| set.matches(e.as_bytes()).matched_any())
            .count();
        println!(
            "  RegexSet::matches                {:>8.1} ms  ({n} lines)",
            t.elapsed().as_secs_f64() * 1e3
        );
        for (name, cls) in [
            (
                "original",
                ["email", "currency", "domain", "path", "machine-inventory"].as_slice(),
            ),
            ("secret", &["secret"]),
            ("personal+currency", &["personal", "currency"]),
            ("host", &["host"]),
        ] {
            let pats: Vec<&str> = reel::verify::detect::DETECTORS
                .iter()
                .filter(|d| cls.contains(&d.class.as_str()) || cls.contains(&d.kind))
                .map(|d| d.pattern)
                .collect();
            let set = regex::bytes::RegexSet::new(&pats).expect("set");
            let t = Instant::now();
            let n = events
                .iter()
                .filter(|e| set.matches(e.as_bytes()).matched_any())
                .count();
            println!(
                "  set {name:<28} {:>8.1} ms  ({n} lines, {} patterns)",
                t.elapsed().as_secs_f64() * 1e3,
                pats.len()
            );
        }
        if std::env::var_os("REEL_BENCH_ALL").is_some() {
            for d in reel::verify::detect::DETECTORS {
                let pats: Vec<&str> = reel::verify::detect::DETECTORS
                    .iter()
                    .filter(|x| x.kind != d.kind)
                    .map(|d| d.pattern)
                    .collect();
                let set = regex::bytes::RegexSet::new(&pats).expect("set");
                let t = Instant::now();
                let _ = events
                    .iter()
                    .filter(|e| set.matches(e.as_bytes()).matched_any())
                    .count();
                let ms = t.elapsed().as_secs_f64() * 1e3;
                println!("  set without {:<24} {:>8.1} ms", d.kind, ms);
            }
        }
        let t = Instant::now();
        let n = events
            .iter()
            .filter(|e| reel::verify::scan::is_capability_manifest(e))
            .count();
        println!(
            "  is_capability_manifest           {:>8.1} ms  ({n} lines)",
            t.elapsed().as_secs_f64() * 1e3
        );
        let t = Instant::now();
        let mut n = 0;
        for e in &events {
            reel::verify::detect::DetectorSet::global().find(
                e,
                reel::verify::detect::Surface::Full,
                |_| n += 1,
            );
        }
        println!(
            "  DetectorSet::find                {:>8.1} ms  ({n} hits)",
            t.elapsed().as_secs_f64() * 1e3
        );
        return;
    }
    let allow = reel::verify::scan::AllowList::default();
    let (t, findings) = best_of(runs, || {
        reel::verify::scan::scan_document(&big, &allow).expect("scannable")
    });
    println!(
        "  privacy scan (parsed document):        {:>8.1} ms wall, {:>8.1} ms CPU  ({} findings)",
        t.as_secs_f64() * 1e3,
        cpu_ms(),
        findings.len()
    );
    let opts = reel::verify::gate::VerifyOptions {
        privacy: true,
        staleness: false,
        scenario_drift: false,
        ..Default::default()
    };
    let (t, _) = best_of(runs, || reel::verify::gate::verify_one(&big_path, &opts));
    println!(
        "  verify one file (read + parse + scan):  {:>8.1} ms wall, {:>8.1} ms CPU",
        t.as_secs_f64() * 1e3,
        cpu_ms()
    );
    // What `verify-cassettes` does by default, and with `--skip-privacy`.
    for (name, privacy) in [
        ("verify_big_privacy", true),
        ("verify_big_no_privacy", false),
    ] {
        let opts = reel::verify::gate::VerifyOptions {
            privacy,
            staleness: true,
            scenario_drift: true,
            ..Default::default()
        };
        let (t, _) = best_of(runs, || reel::verify::gate::verify_one(&big_path, &opts));
        support::Bench {
            name,
            seconds: t.as_secs_f64(),
            floor_seconds: Some(floor_big.as_secs_f64()),
            peak_rss_bytes: None,
            input_bytes: Some(big_size),
            stat: "min",
            runs,
        }
        .emit();
    }
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let (t, _) = best_of(runs, || {
        one_thread.install(|| reel::verify::scan::scan_document(&big, &allow))
    });
    println!(
        "  privacy scan, one thread:               {:>8.1} ms wall, {:>8.1} ms CPU",
        t.as_secs_f64() * 1e3,
        cpu_ms()
    );

    // 2. 1,000 small cassettes
    let dir = tmp.path().join("many");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let small = serde_json::to_vec_pretty(&support::cassette(40, 1_000, support::seed(), false))
        .expect("serialise");
    let n_small = if smoke { 20 } else { 1000 };
    let files: Vec<PathBuf> = (0..n_small)
        .map(|i| {
            let p = dir.join(format!("c{i:04}.cassette.json"));
            std::fs::write(&p, &small).expect("write");
            p
        })
        .collect();
    let opts = reel::verify::gate::VerifyOptions {
        privacy: true,
        staleness: true,
        scenario_drift: true,
        ..Default::default()
    };
    let (t_all, results) = best_of(runs, || reel::verify::gate::verify_all(&files, &opts));
    let cpu_all = cpu_ms();
    let (floor_small, _) = best_of(runs, || {
        files.iter().for_each(|f| support::read_and_parse(f))
    });
    support::Bench {
        name: "verify_dir_1000",
        seconds: t_all.as_secs_f64(),
        floor_seconds: Some(floor_small.as_secs_f64()),
        peak_rss_bytes: None,
        input_bytes: Some((small.len() * files.len()) as u64),
        stat: "min",
        runs,
    }
    .emit();
    let (t_one, _) = best_of(runs, || {
        one_thread.install(|| reel::verify::gate::verify_all(&files, &opts))
    });
    println!(
        "{} small cassettes ({} KB each): all cores {:.1} ms wall ({:.1} ms CPU = {:.2} cores busy), one thread {:.1} ms (x{:.2}); exit {}",
        files.len(),
        small.len() / 1024,
        t_all.as_secs_f64() * 1e3,
        cpu_all,
        cpu_all / (t_all.as_secs_f64() * 1e3),
        t_one.as_secs_f64() * 1e3,
        t_one.as_secs_f64() / t_all.as_secs_f64(),
        reel::verify::gate::status(&results)
    );

    // 3. rehash --dry-run: the compat example and its v11 twin, x100, beside
    // a git-committed copy of the examples (so every legacy cassette runs the
    // full proof: session resolution, one walk, both folds, fileSigs check).
    let peer = tmp.path().join("peer");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/examples"),
        &peer.join("examples"),
    );
    support::git_commit_all(&peer);
    let rdir = peer.join("examples/bench-replays");
    std::fs::create_dir_all(&rdir).expect("mkdir");
    let pdf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compat/examples/replays/example-pdf-skill.cassette.json");
    let mut doc: Map<String, Value> =
        serde_json::from_slice(&std::fs::read(pdf).expect("read")).expect("parse");
    let current = serde_json::to_vec_pretty(&doc).expect("serialise");
    doc.insert("cassetteVersion".into(), json!(11));
    if let Some(Value::Object(fp)) = doc.get_mut("fingerprint") {
        fp.shift_remove("hashFormat");
    }
    let legacy = serde_json::to_vec_pretty(&doc).expect("serialise");
    let rfiles: Vec<PathBuf> = (0..if smoke { 10 } else { 200 })
        .map(|i| {
            let p = rdir.join(format!("r{i:03}.cassette.json"));
            std::fs::write(&p, if i % 2 == 0 { &current } else { &legacy }).expect("write");
            p
        })
        .collect();
    let ropts = reel::rehash::RehashOptions {
        dry_run: true,
        session: None,
    };
    let (t, s) = best_of(runs, || reel::rehash::rehash_files(&rfiles, &ropts));
    let (floor_rehash, _) = best_of(runs, || {
        rfiles.iter().for_each(|f| support::read_and_parse(f))
    });
    support::Bench {
        name: "rehash_dry_run_200",
        seconds: t.as_secs_f64(),
        floor_seconds: Some(floor_rehash.as_secs_f64()),
        peak_rss_bytes: None,
        input_bytes: Some(((current.len() + legacy.len()) * rfiles.len() / 2) as u64),
        stat: "min",
        runs,
    }
    .emit();
    println!(
        "rehash --dry-run, {} cassettes: {:.1} ms (migrated {}, skipped {}, refused {})",
        rfiles.len(),
        t.as_secs_f64() * 1e3,
        s.migrated,
        s.skipped,
        s.errors
    );
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("mkdir");
    for e in std::fs::read_dir(src).expect("read_dir").flatten() {
        let to = dst.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).expect("copy");
        }
    }
}

/// `REEL_BENCH_DETECTORS=1`: the cost of each detector alone over the big
/// cassette's events (to find the expensive patterns).
#[allow(dead_code)]
pub fn per_detector(events: &[&str]) {
    for d in reel::verify::detect::DETECTORS
        .iter()
        .filter(|d| std::env::var_os("REEL_BENCH_ALL").is_some() || d.kind == "us-ssn")
    {
        let re = regex::bytes::Regex::new(d.pattern).expect("compiles");
        let t = Instant::now();
        let n = events.iter().filter(|e| re.is_match(e.as_bytes())).count();
        println!(
            "  {:<32} {:>8.1} ms  ({n} lines)",
            d.kind,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}
