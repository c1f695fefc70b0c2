//! `reel fingerprint`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct FingerprintArgs {}

pub fn run(_args: FingerprintArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel fingerprint"))
}
