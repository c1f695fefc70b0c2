//! `--shard I/N`, defined once and flattened into every batch command
//! (`replay`, `verify-cassettes`, `record`, `rerun`). The partition itself is
//! [`crate::shard`].

use std::path::PathBuf;

use crate::shard::Shard;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct ShardArgs {
    /// Work only on shard I of N (1-based): files are partitioned by a hash of
    /// their name, so each job of a CI matrix takes a stable, disjoint share and
    /// a file added elsewhere moves no other file.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

impl ShardArgs {
    /// The files of this shard (all of them without `--shard`), order kept.
    pub fn select(&self, files: Vec<PathBuf>) -> Vec<PathBuf> {
        match self.shard {
            Some(s) => s.select(files),
            None => files,
        }
    }

    /// The stderr notice for a shard that drew no file of a non-empty batch
    /// (not an error: a matrix wider than the batch has empty shards).
    pub fn empty_notice(&self, command: &str, of: usize) -> Option<String> {
        self.shard
            .map(|s| format!("{command}: shard {s} holds none of the {of} file(s) — nothing to do"))
    }
}
