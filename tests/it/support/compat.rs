//! cowork-harness's captured runs (tests/compat/expected/INDEX.txt): each
//! case's command line, run against the capture layout
//! ([`super::Fixture::capture_layout`]), and its recorded outputs.

use super::{Fixture, Run, RunExt, compat, reel};

/// One line of INDEX.txt.
pub struct Case {
    pub name: String,
    pub rc: i32,
    pub cwd: String,
    pub args: Vec<String>,
}

/// Every case whose name starts with `prefix` (`""`: all), in file order.
pub fn cases(prefix: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(compat("expected/INDEX.txt")).unwrap();
    text.lines()
        .filter_map(|l| {
            let (head, args) = l.split_once("args=")?;
            let mut it = head.split_whitespace();
            let name = it.next()?.to_string();
            let rc = it.next()?.strip_prefix("rc=")?.parse().ok()?;
            let cwd = it.next()?.strip_prefix("cwd=")?.to_string();
            Some(Case {
                name,
                rc,
                cwd,
                args: args.split_whitespace().map(str::to_owned).collect(),
            })
        })
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

/// Runs `case` in `fx`, both streams with the fixture's paths normalised
/// back to `$PEER` / `$SCRATCH` / `$DRIFT`.
pub fn run_case(fx: &Fixture, case: &Case) -> Run {
    let mut args: Vec<String> = case.args.iter().map(|a| fx.expand(a)).collect();
    // Text cases compare with the original's report: reel prints that layout
    // (the original's footer) with --verbose; its default is a status line
    // per cassette.
    if !args.iter().any(|a| a == "json" || a == "--help") {
        args.push("--verbose".into());
    }
    let mut run = reel().args(&args).current_dir(fx.expand(&case.cwd)).run();
    run.stdout = fx.normalise(&run.stdout);
    run.stderr = fx.normalise(&run.stderr);
    run
}

/// The original's recorded `<name>.<ext>` (`stdout`, `stderr`), as captured.
pub fn expected_raw(name: &str, ext: &str) -> String {
    std::fs::read_to_string(compat(&format!("expected/{name}.{ext}"))).unwrap()
}

/// [`expected_raw`] with the original's name for itself in commands it
/// suggests replaced by reel's, and the reader's ceiling as it is now: the
/// 2.0.0 captures name v12, reel (like the original since 4.x) reads up to v16.
pub fn expected(name: &str, ext: &str) -> String {
    expected_raw(name, ext)
        .replace("cowork-harness rehash", "reel rehash")
        .replace("upgrade cowork-harness", "upgrade reel")
        .replace("harness understands (v12)", "harness understands (v16)")
}
