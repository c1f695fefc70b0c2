//! `reel verify-cassettes`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {}

pub fn run(_args: VerifyArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel verify-cassettes"))
}
