//! `reel model serve`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct ModelArgs {}

pub fn run(_args: ModelArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel model serve"))
}
