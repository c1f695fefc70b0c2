//! reel's integration tests: one test binary, one module per feature
//! (ripgrep style), so the suite links once.

mod cassette;
mod claude;
mod hostile;
mod model;
mod record;
mod util;
