//! reel's integration tests: one test binary, one module per feature
//! (ripgrep style), so the suite links once.

mod rehash;
mod util;
mod verify;
