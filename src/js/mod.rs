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
//!
//! Files. `json/`: `JsValue` (doubles, UTF-16 strings, V8 property order), the
//! lenient `JSON.parse` (with the lone-surrogate rewrite for serde and V8's
//! error wording), `JSON.stringify` with gaps, `jcs1`; `quote` / `escape` are
//! the one string writer of hand-made JSON (canonical forms, tool results in
//! reports); `unescape` is the one fast, strict JSON-string unescaper (UTF-8
//! checked in the same pass) that lean `events` items and the line views'
//! strings go through; both step through text with `block`'s SSE2 scan;
//! `cursor` is a strict token reader that keeps a few values of a large text
//! and skips the rest unbuilt (the timeline's entries), refusing anything
//! doubtful for serde_json to decide; `nested` is the same over JSON held
//! inside a JSON string, read as stored (a lean cassette's `events` lines: only
//! the strings kept are unescaped, both levels in one pass); both share number,
//! literal and value skipping (`Tokens`).
//!
//! `number.rs` is the one number formatter (`number::write`, on `ryu-js`
//! digits) and what is built on it; `coerce.rs` the coercions; `utf16.rs`
//! UTF-16 code units. `regex/` is the one ES-regex entry point (`compile_es`,
//! `EsRegex`, `escape_literal`): translation to the linear `regex` crate,
//! patterns and match ranges in UTF-16 units, the backtracker's deadline
//! watchdog, V8's syntax-error wording. `collation.rs` is Node's
//! `localeCompare` (ICU4X root collation plus Node's Han radical-stroke table,
//! `han_radical_stroke.txt`); `sandbox.rs` the QuickJS sandbox (memory limit,
//! interrupt deadline) for `allow_if`. Nothing here hashes or decides.

pub mod coerce;
pub mod collation;
pub mod json;
pub mod number;
pub mod regex;
pub mod sandbox;
pub mod utf16;
