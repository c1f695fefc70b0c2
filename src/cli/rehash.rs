//! `reel rehash`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct RehashArgs {}

pub fn run(_args: RehashArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel rehash"))
}
