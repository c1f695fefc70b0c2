//! `reel record`: arguments and the thin glue to the library.

use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct RecordArgs {}

pub fn run(_args: RecordArgs) -> Result<u8> {
    Err(crate::Error::not_implemented("reel record"))
}
