//! Reports of a replay batch: the text footer (stderr), the JSON envelope
//! (stdout, `schema/replay.json`), JUnit XML (`--junit FILE`) and GitHub
//! workflow annotations (`GITHUB_ACTIONS=true`).
//!
//! Renderers only read [`crate::replay::ReplayResult`]s; they never re-judge
//! anything (pass/fail, messages and failure kinds come from the verdict).
//! Writing a report file goes through `crate::atomic::write_atomic`.

pub mod github;
pub mod json;
pub mod junit;
pub mod rerun;
pub mod text;
