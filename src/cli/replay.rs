//! `reel replay`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {}

pub fn run(_args: ReplayArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel replay"))
}
