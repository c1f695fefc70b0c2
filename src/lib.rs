//! reel: record/replay test harness for AI-agent skill runs.
//!
//! A cassette travels this pipeline (see ARCHITECTURE.md):
//!
//! ```text
//! scenario ─▶ agent ─▶ record ─▶ cassette ─▶ evidence ─▶ assert ─▶ replay ─▶ report
//!                                   │                                 ▲
//!                                   └─▶ fingerprint (staleness) ──────┘
//! ```
//!
//! The library does all the work; `src/main.rs` only parses arguments and maps
//! the outcome to an exit code (see [`exit`]).

pub mod agent;
pub mod agents;
pub mod assert;
pub mod atomic;
pub mod cassette;
pub mod cli;
pub mod diff;
pub mod discover;
pub mod doctor;
pub mod document;
pub mod elide;
pub mod error;
pub mod eval;
pub mod evidence;
pub mod exit;
pub mod fingerprint;
pub mod html;
pub mod js;
pub mod judge;
pub mod lint;
pub mod mask;
pub mod matrix;
pub mod mcp;
pub mod messages;
pub mod model;
pub mod paths;
pub mod plugin_eval;
pub mod project;
pub mod protocol;
pub mod record;
pub mod rehash;
pub mod replay;
pub mod report;
pub mod rerun;
pub mod review;
pub mod run;
pub mod runs;
pub mod sandbox;
pub mod scaffold;
pub mod scenario;
pub mod shard;
pub mod show;
pub mod snapshot;
pub mod terminal_safe;
pub mod verify;

pub use error::Error;
