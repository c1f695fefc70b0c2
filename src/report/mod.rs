//! Reports of a batch. The status reporter ([`status`], over per-file
//! [`outcome::FileOutcome`]s) is what `replay`, `verify-cassettes` and
//! `rehash` print on stderr by default; the rest are replay's: the original's
//! per-file text footer (`--verbose`), the JSON envelope
//! (stdout, `schema/replay.json`), JUnit XML (`--junit FILE`) and GitHub
//! workflow annotations (`GITHUB_ACTIONS=true`).
//!
//! Renderers only read [`crate::replay::ReplayResult`]s; they never re-judge
//! anything (pass/fail, messages and failure kinds come from the verdict).
//! Writing a report file goes through `crate::atomic::write_atomic`.

pub mod github;
pub mod json;
pub mod junit;
pub mod outcome;
pub mod rerun;
pub mod status;
pub mod text;
