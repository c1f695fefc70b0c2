//! `snapshot`: a run's workspace kept under a content address
//! (docs/snapshots.md).
//!
//! A snapshot is the canonical tar stream of the workspace roots a run could
//! write (`outputs/` and writable connected folders), stored gzipped under
//! its SHA-256 (`v1:sha256:<hex>`) in a store beside the cassettes. The same
//! content gives the same ref on any machine; writing a blob that exists is
//! a no-op; a blob is durable before anything names it. A cassette names its
//! snapshots in `reelCheckpoints` (one per turn end and one at run end).
//!
//! Files: `reference` (the strict ref parser), `archive` (the canonical tar
//! stream, written and read), `store` (the content-addressed store: put,
//! check, list), `checkpoint` (the cassette key), `restore` (a file, every
//! file, or the tree back out of a blob), `gc` (unreferenced blobs under
//! cassette roots).
//!
//! Not here: when a run takes a snapshot (`record::checkpoints`), what
//! verify-cassettes makes of a finding (`verify::snapshots`).

pub mod archive;
pub mod checkpoint;
pub mod gc;
pub mod reference;
pub mod restore;
pub mod store;

pub use checkpoint::{At, Checkpoint, Checkpoints, Consistency};
pub use reference::{Ref, RefError};
pub use store::{Store, Taken};
