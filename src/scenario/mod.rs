//! Scenario and session YAML: strict loaders, defaults, answers.
//!
//! CONTRACT (while being built): `answers` holds the decider used by `record`
//! to answer questions/permissions and by `replay` to re-derive recorded
//! answers (`replay_protocol_fidelity`, README "Differences").
pub mod session;
