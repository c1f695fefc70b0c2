//! reel's integration tests: one test binary, one module per feature
//! (ripgrep style), so the suite links once.

mod action;
mod assert;
mod assertions;
mod cassette;
mod causes;
mod claude;
mod crash;
mod diff;
mod doctor;
mod file_modes;
mod fingerprint;
mod fuzz;
mod help_texts;
mod hostile;
mod lint;
mod model;
mod parity_evidence;
mod privacy_matrix;
mod record;
mod record_batch;
mod rehash;
mod replay;
mod replay_mutate;
mod report;
mod rerun;
mod review;
mod scaffold;
mod shard;
mod show;
mod sibling;
mod support;
mod verify;
mod verify_lifecycle;
mod verify_margins;
mod verify_scenario;
