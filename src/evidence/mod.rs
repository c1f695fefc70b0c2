//! Evidence: what a recorded event stream shows.
//!
//! The recorded `events` lines are re-driven through one stream-json parser
//! into a [`RunRecord`] (transcript, tool calls and results, sub-agents,
//! skills, init context, tasks, usage, cost, questions and their options, gate
//! deliveries, ...), and `controlOut` is indexed by `request_id`. Assertions
//! read only the run record, never the raw lines.
//!
//! CONTRACT (while being built): `RunRecord::from_cassette(&Cassette)` never
//! fails; malformed lines become cassette-format findings inside the record.

use crate::cassette::Cassette;

/// Everything the recorded run shows. Fields are added by the evidence module.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {}

impl RunRecord {
    /// Re-drives the cassette's `events` (and indexes `controlOut`).
    pub fn from_cassette(_cassette: &Cassette) -> RunRecord {
        RunRecord::default()
    }
}
