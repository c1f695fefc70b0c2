//! reel's integration tests: one test binary, one module per feature
//! (ripgrep style), so the suite links once.

mod assert;
mod assertions;
mod cassette;
mod claude;
mod crash;
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
mod rehash;
mod replay;
mod replay_mutate;
mod report;
mod rerun;
mod scaffold;
mod sibling;
mod util;
mod verify;
mod verify_margins;
mod verify_scenario;
