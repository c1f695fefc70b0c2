//! `verify-cassettes`: the privacy scan and staleness gate for committed
//! cassettes, and the record-time redaction/secret scrubbing that keeps
//! private data out of them in the first place.
//!
//! * [`detect`]: the ONE table of text detectors (cowork-harness's five
//!   classes, provider secrets, personal data, host details), shared by the
//!   scanner and the scrubber.
//! * [`scan`]: where in a cassette each detector runs, plus the structural
//!   host-inventory check; produces [`scan::Finding`]s.
//! * [`published`]: findings whose text the skill tree itself publishes
//!   (reported, never failing).
//! * [`own_mcp`]: findings that name the session's own MCP servers, or a
//!   money figure one of them returned (reported, never failing).
//! * [`stream`]: streamed content blocks joined from their fragments (a
//!   secret split across `stream_event` lines), read by the scanner and the
//!   scrubber alike.
//! * [`gate`]: `verify-cassettes` per cassette and per batch (privacy,
//!   staleness via [`crate::fingerprint::staleness`], session-shape and
//!   scenario drift, version), the exit-code rule.
//! * [`margins`]: `--margins`, each count-bound assertion's recorded value
//!   (off the same re-drive the assertion judges) against its budget.
//! * rendering of a gate run (text and JSON) is [`crate::report::verify`].
//! * [`redact`]: `.cowork-redact.json` policies and `scrub_cassette`, used by
//!   `record` before a cassette is written.
//! * [`snapshots`]: each checkpoint's blob resolves and matches its ref; its
//!   files privacy-scanned as artifact bodies.
//! * [`inventory`]: the account state a recording drops (the init model
//!   menu, rate-limit state), applied by `scrub_cassette`.
//!
//! This module never judges a recording's assertions (that is `assert`/
//! `replay`); the verdict-preserving check takes the verdict as a closure.
//!
//! The scan covers every string of a cassette: transcript lines read decoded
//! (`\n`, `\"`, `\u` escapes), artifact bodies, paths, scenario, metadata and
//! any other field by JSON path. The gate includes the `pending-review` finding
//! for a forgotten `.new` (located by `review`). `lifecycle` is `--max-age` and
//! `--orphans` (recording time from `timelineHeader.startedAtWall`, else the
//! newest event timestamp; orphans through the one sibling resolver). `margins`
//! reads each count-bound key's `margin` against the re-driven `RunRecord`,
//! through the accessors the assertions use.
//!
//! `published`: a finding of the email, domain, currency or path class that the
//! same detector finds in the session's skill tree (walked as the fingerprint
//! walks it) is a note, never a failure. `own_mcp`: a host-inventory finding
//! naming an MCP server that the session's own config or recorded `reelMcp`
//! traffic declares, and a money figure such a server returned, are notes too.

pub mod detect;
pub mod gate;
pub mod inventory;
pub mod lifecycle;
pub mod margins;
pub mod own_mcp;
pub mod published;
pub mod redact;
pub mod scan;
pub mod snapshots;
pub mod stream;
