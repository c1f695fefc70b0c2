//! reel's integration tests: one test binary, one module per feature
//! (ripgrep style), so the suite links once.

mod assert;
mod cassette;
mod claude;
mod crash;
mod diff;
mod fingerprint;
mod fuzz;
mod hostile;
mod model;
mod parity_evidence;
mod record;
mod rehash;
mod replay;
mod replay_mutate;
mod rerun;
mod review;
mod show;
mod sibling;
mod util;
mod verify;
mod verify_margins;
mod verify_scenario;
