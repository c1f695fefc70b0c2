//! `reel eval`: is a skill edit (or a runtime change) an improvement?
//!
//! Two arms, repeated live trials of each scenario, matched pairs, exact
//! tests, and a report that is always recomputed from the trial rows.
//!
//! Not here: the live run itself (`run`), rendering (`report::eval`).
//!
//! Files: `mod` (arms and their one axis), `rows` (the manifest `eval.json`,
//! the trial rows `runs.jsonl`, shard merge), `run` (ABBA scheduling over
//! `run`), `stats` (paired statistics: exact McNemar, Newcombe's
//! paired interval, Holm among the rows Tarone's rule counts, the detectable
//! difference; checked against `tests/data/eval_stats_reference.json`, made by
//! `scripts/eval-stats-reference.py`), `policy` (the policy and statuses),
//! `report` (the report derived from the rows, and the check of a persisted
//! one) and `history` (the per-case history with its noise band,
//! `eval-history.jsonl`).

pub mod history;
pub mod policy;
pub mod report;
pub mod rows;
pub mod run;
pub mod stats;
