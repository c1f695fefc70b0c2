//! Canonical JSON: the `jcs1` canonical form and the legacy `JSON.stringify`
//! emulation (spec/fingerprint.md §2). The one home of JSON serialisation rules
//! that digests depend on.
