//! The history of a set of cases: every eval appends one line per scenario
//! and arm to `eval-history.jsonl` next to the cases (format in
//! docs/eval.md, schema/eval-history.json), and copies the earlier lines of
//! its scenarios into its own directory (`history.jsonl`), so its report is
//! derived from that directory alone and stays reproducible.
//!
//! An arm is "unchanged" when its identity is: the content signature of its
//! skill directory (a `git:` arm's extracted tree included), `none`, or a
//! runtime profile with its model script's bytes. The report pools the
//! earlier runs of the same scenario and identity into a pass rate with a
//! Wilson interval (the noise band), and calls the case *flaky* when its
//! rate moved between runs of an unchanged arm and the latest run lies
//! within the band of the earlier ones; *shifted* when it lies outside.
//!
//! Not here: deciding anything about A against B (that is the paired test).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stats;

pub const HISTORY_FILE: &str = "eval-history.jsonl";
/// The earlier lines an eval directory's report reads.
pub const SNAPSHOT_FILE: &str = "history.jsonl";

/// One eval's result for one scenario under one arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub format: u32,
    /// When the eval finished, seconds since the Unix epoch (UTC).
    pub at_unix_s: u64,
    pub scenario: String,
    pub arm: String,
    pub source: String,
    /// What makes two runs of an arm "the same arm" (see the module doc).
    pub identity: String,
    pub attempted: u64,
    pub completed: u64,
    pub passed: u64,
}

/// A scenario's history under one arm, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmHistory {
    /// Earlier runs of the same scenario with the same arm identity.
    pub runs: u64,
    pub completed: u64,
    pub passed: u64,
    /// Pooled pass rate of the earlier runs.
    pub pass_rate: Option<f64>,
    /// Wilson interval of the pooled rate at the policy's confidence.
    pub band: Option<[f64; 2]>,
    /// Each earlier run's pass rate, oldest first.
    pub rates: Vec<f64>,
    /// `new` (no earlier run), `stable`, `flaky` or `shifted`.
    pub state: String,
}

/// Where the history of `scenario_files` lives: next to the first case.
pub fn file_for(scenario_files: &[PathBuf]) -> Option<PathBuf> {
    let first = scenario_files.first()?;
    let dir = first.parent().filter(|p| !p.as_os_str().is_empty());
    Some(dir.unwrap_or(Path::new(".")).join(HISTORY_FILE))
}

/// Reads a history file (missing: empty). A line that does not parse is an
/// error naming the file and line: the file is documented and hand-readable.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("read `{}`: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                format!(
                    "`{}` line {}: {e} (the format is schema/eval-history.json)",
                    path.display(),
                    i + 1
                )
            })
        })
        .collect()
}

/// Appends `lines` to the history at `path`: the old content and the new
/// lines are written together atomically.
pub fn append(path: &Path, lines: &[Line]) -> std::io::Result<()> {
    let mut text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for l in lines {
        text.push_str(&serde_json::to_string(l).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    crate::atomic::write_atomic(path, text.as_bytes())
}

/// The history of `scenario` under an arm of `identity`, from the earlier
/// `lines`, with the current run's counts deciding `flaky` / `shifted`.
pub fn summarize(
    lines: &[Line],
    scenario: &str,
    identity: &str,
    current: (u64, u64),
    confidence: f64,
) -> ArmHistory {
    let earlier: Vec<&Line> = lines
        .iter()
        .filter(|l| l.scenario == scenario && l.identity == identity && l.completed > 0)
        .collect();
    let completed: u64 = earlier.iter().map(|l| l.completed).sum();
    let passed: u64 = earlier.iter().map(|l| l.passed).sum();
    let rates: Vec<f64> = earlier
        .iter()
        .map(|l| l.passed as f64 / l.completed as f64)
        .collect();
    let band = (completed > 0).then(|| {
        let w = stats::wilson(passed, completed, confidence);
        [w.low, w.high]
    });
    let (cur_completed, cur_passed) = current;
    let cur = (cur_completed > 0).then(|| cur_passed as f64 / cur_completed as f64);
    let state = match (band, cur) {
        (None, _) | (_, None) => "new",
        (Some([lo, hi]), Some(r)) if r < lo || r > hi => "shifted",
        (Some(_), Some(r)) if rates.iter().any(|x| *x != r) => "flaky",
        _ => "stable",
    };
    ArmHistory {
        runs: earlier.len() as u64,
        completed,
        passed,
        pass_rate: (completed > 0).then(|| passed as f64 / completed as f64),
        band,
        rates,
        state: state.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(passed: u64, completed: u64) -> Line {
        Line {
            format: 1,
            at_unix_s: 1_790_000_000,
            scenario: "note".into(),
            arm: "a".into(),
            source: "skills/x".into(),
            identity: "sig".into(),
            attempted: completed,
            completed,
            passed,
        }
    }

    #[test]
    fn a_rate_moving_inside_the_band_is_flaky_and_outside_it_shifted() {
        let earlier = [line(4, 6), line(3, 6), line(5, 6)];
        let h = summarize(&earlier, "note", "sig", (6, 4), 0.95);
        assert_eq!(h.runs, 3);
        assert_eq!(h.state, "flaky", "{h:?}");
        assert_eq!(
            summarize(&earlier, "note", "sig", (20, 0), 0.95).state,
            "shifted"
        );
        let steady = [line(6, 6), line(6, 6)];
        assert_eq!(
            summarize(&steady, "note", "sig", (6, 6), 0.95).state,
            "stable"
        );
        assert_eq!(
            summarize(&steady, "note", "other", (6, 6), 0.95).state,
            "new"
        );
    }

    #[test]
    fn history_lines_append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(HISTORY_FILE);
        append(&p, &[line(1, 2)]).unwrap();
        append(&p, &[line(2, 2)]).unwrap();
        assert_eq!(read(&p).unwrap(), vec![line(1, 2), line(2, 2)]);
        std::fs::write(&p, "{not json}\n").unwrap();
        assert!(read(&p).unwrap_err().contains("line 1"));
    }
}
