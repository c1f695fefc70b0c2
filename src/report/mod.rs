//! Every report reel prints. The status reporter ([`status`], over per-file
//! [`outcome::FileOutcome`]s) is what `replay`, `verify-cassettes` and
//! `rehash` print on stderr by default; replay's others are the original's
//! per-file text footer (`--verbose`), the JSON envelope
//! (stdout, `schema/replay.json`), JUnit XML (`--junit FILE`) and GitHub
//! workflow annotations (`GITHUB_ACTIONS=true`). [`verify`], [`rehash`],
//! [`fingerprint`] and [`rerun`] render those commands (text and JSON).
//!
//! Renderers only read results ([`crate::replay::ReplayResult`],
//! [`crate::verify::gate::CassetteResult`], ...); they never re-judge
//! anything (pass/fail, messages and failure kinds come from the verdict).
//! Writing a report file goes through `crate::atomic::write_atomic`.
//!
//! The status reporter turns one `FileOutcome` per file
//! (`outcome::from_replay`, `from_verify`, `from_rehash`) into a `PASS` /
//! `FAIL` / `STALE` / `ERROR` / `SKIP` line with its items, then a tally; a new
//! batch command builds `FileOutcome`s and calls `status::render_file` /
//! `render_tally`. `github` renders annotations (replay; `rerun` has its own)
//! and the GitHub job summary for replay and verify-cassettes, appended to
//! `$GITHUB_STEP_SUMMARY`. Also here: `gc` (`reel gc`'s text and JSON),
//! `matrix` and `eval`.

pub mod eval;
pub mod fingerprint;
pub mod gc;
pub mod github;
pub mod json;
pub mod junit;
pub mod matrix;
pub mod outcome;
pub mod rehash;
pub mod rerun;
pub mod status;
pub mod text;
pub mod verify;
