//! The one masker: what differs between two recordings of the same run and
//! is not what the run *did* — its run directories, session id, tool-use,
//! message and request ids, UUIDs, timestamps and durations — written as
//! placeholders.
//!
//! - [`roots`]: the one root finder, a recording's run directories as it
//!   states them, and their placeholders (`{{cwd}}`, `{{config}}`, …).
//! - [`normalize`]: the [`Normalizer`], ids numbered by first appearance,
//!   times and durations as constants, then the project's masks.
//!
//! Low on purpose: `rerun` (fresh-run mapping, divergences), `diff` (masked
//! views) and `judge` (the baseline trajectory's evidence digest) all mask
//! through it, so it imports none of them.
//!
//! Deliberately not here: deciding what a difference means.

pub mod normalize;
pub mod roots;

pub use normalize::Normalizer;
pub use roots::Roots;
