//! JavaScript semantics, in one place. The original (cowork-harness) is
//! TypeScript on Node 22, and its verdicts, digests and messages depend on
//! how V8 does things a Rust program does differently; each emulation is one
//! unit here, in the way uv keeps each spec (`uv-pep440`, `uv-pep508`) in its
//! own crate:
//!
//! Each unit and what it emulates:
//! - [`json`] — `JSON.parse`, `JSON.stringify` (V8 property order, gaps), the
//!   `jcs1` canonical form, V8's `JSON.parse` error wording
//! - [`number`] — `Number::toString` — the one number formatter — and
//!   `String(n)`, `toFixed(1)`, numbers as `JSON.stringify` writes them
//! - [`coerce`] — `typeof` names, truthiness, `String(v)`, `Number(v)` of JSON
//!   values
//! - [`utf16`] — strings as UTF-16: lengths and slices in code units, per-unit
//!   stand-ins for code-point matchers
//! - [`regex`] — `new RegExp(p, flags)`: validation, translation to a linear
//!   engine, UTF-16 units, the deadline watchdog, V8's error wording
//! - [`collation`] — `localeCompare` under Node's default collator (ICU root +
//!   Node's Han order)
//! - [`sandbox`] — the QuickJS engine that evaluates `allow_if:` predicates
//!
//! Callers name the JavaScript function they mirror at the call site; the
//! emulation itself lives here.

pub mod coerce;
pub mod collation;
pub mod json;
pub mod number;
pub mod regex;
pub mod sandbox;
pub mod utf16;
