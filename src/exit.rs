//! Exit codes, in one place. They are part of reel's public interface: CI
//! scripts branch on them, so they never change meaning between releases.
//!
//! They follow cowork-harness so a pipeline can swap one tool for the other.

/// Everything checked passed (replay green, no finding, migration done).
pub const SUCCESS: u8 = 0;
/// A real result the user must act on: a failing assertion, a blocking
/// staleness finding, a privacy finding, a refused rehash proof.
pub const FAILURE: u8 = 1;
/// reel could not do what was asked: bad arguments, an unreadable or invalid
/// input file, a feature not implemented yet. Nothing was judged.
pub const USAGE: u8 = 2;
/// `verify-cassettes` only: some cassette could not be verified at all
/// (unreadable, skill dirs unresolvable), so "clean" cannot be claimed.
pub const UNVERIFIED: u8 = 3;
/// `rerun` only: a cassette could not be rerun here (a tier reel does not
/// execute, no agent binary, a scenario reel cannot record). The same number
/// as [`UNVERIFIED`]: "nothing was judged, and the reason is the machine or
/// the recording, not your input".
pub const COULD_NOT_RUN: u8 = 3;

/// Combines per-file outcomes of a batch: the worst one wins.
///
/// Severity order is `SUCCESS < FAILURE < USAGE`, and `UNVERIFIED` ranks above
/// `FAILURE` (cowork-harness's `verify-cassettes` rule).
pub fn worst(a: u8, b: u8) -> u8 {
    fn rank(code: u8) -> u8 {
        match code {
            SUCCESS => 0,
            FAILURE => 1,
            UNVERIFIED => 2,
            _ => 3,
        }
    }
    if rank(a) >= rank(b) { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_is_the_most_severe() {
        assert_eq!(worst(SUCCESS, FAILURE), FAILURE);
        assert_eq!(worst(FAILURE, USAGE), USAGE);
        assert_eq!(worst(UNVERIFIED, FAILURE), UNVERIFIED);
        assert_eq!(worst(SUCCESS, SUCCESS), SUCCESS);
    }
}
