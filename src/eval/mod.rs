//! `reel eval`: is a skill edit (or a runtime change) an improvement?
//!
//! Two arms, repeated live trials of each scenario, matched pairs, exact
//! tests, and a report that is always recomputed from the trial rows.
//!
//! Not here: the live run itself (`record::live`), rendering (`report::eval`).

pub mod history;
pub mod policy;
pub mod report;
pub mod rows;
pub mod run;
pub mod stats;
