//! `--shard I/N`: a deterministic partition of a batch's files, so a CI
//! matrix of N jobs splits the work with no coordination.
//!
//! A file belongs to shard `1 + (h mod N)`, where `h` is the first eight bytes
//! (big-endian) of the SHA-256 of its **key**: its path relative to the
//! directory argument it was discovered in, with `/` separators. Discovery is
//! non-recursive, so the key is the file name; a file named directly on the
//! command line keys by its file name too, so `reel replay cassettes/` and
//! `reel replay cassettes/*.cassette.json` shard alike. Each file's shard
//! depends on its own key only: adding or removing a file never moves
//! another one, and every shard of every job of a matrix agrees.
//!
//! Hashing (not round-robin over the sorted list) is what keeps shards
//! stable as files come and go; the price is that shard sizes are only
//! balanced on average.
//!
//! `Shard::select` / `contains` serve any batch command; the flag is defined
//! once, in `cli::shard::ShardArgs`. The partition is property-tested:
//! disjoint, covering, and stable under additions.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// One shard of a partition: `index` of `total`, 1-based (`1/3`, `2/3`,
/// `3/3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u64,
    total: u64,
}

impl Shard {
    /// `index/total`, `1 <= index <= total`.
    pub fn new(index: u64, total: u64) -> Result<Shard, String> {
        if total == 0 {
            return Err("the shard count N must be at least 1".into());
        }
        if index == 0 || index > total {
            return Err(format!(
                "the shard index must be between 1 and {total} (shards are numbered from 1)"
            ));
        }
        Ok(Shard { index, total })
    }

    pub fn index(self) -> u64 {
        self.index
    }

    pub fn total(self) -> u64 {
        self.total
    }

    /// The 1-based shard a key falls in, for a partition into `total`.
    pub fn of_key(key: &str, total: u64) -> u64 {
        let digest = Sha256::digest(key.as_bytes());
        let mut head = [0u8; 8];
        head.copy_from_slice(&digest[..8]);
        1 + u64::from_be_bytes(head) % total.max(1)
    }

    /// Whether the file with this key belongs to this shard.
    pub fn contains_key(self, key: &str) -> bool {
        Shard::of_key(key, self.total) == self.index
    }

    /// Whether `path` (discovered in, or named as) a batch target belongs to
    /// this shard; see the module docs for the key.
    pub fn contains(self, path: &Path) -> bool {
        self.contains_key(&key_of(path))
    }

    /// The items of `all` in this shard, order kept.
    pub fn select<T: AsRef<Path>>(self, all: Vec<T>) -> Vec<T> {
        all.into_iter()
            .filter(|p| self.contains(p.as_ref()))
            .collect()
    }
}

/// The shard key of a file: its name (the path relative to the directory
/// argument of a non-recursive discovery). A path with no file name keys by
/// its whole text.
pub fn key_of(path: &Path) -> String {
    match path.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => crate::paths::to_posix(path),
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.total)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let shape = || format!("expected I/N with 1 <= I <= N (e.g. 1/4), got \"{s}\"");
        let (i, n) = s.trim().split_once('/').ok_or_else(shape)?;
        let number = |t: &str| {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(shape());
            }
            t.parse::<u64>().map_err(|_| shape())
        };
        Shard::new(number(i)?, number(n)?).map_err(|e| format!("{e}, got \"{s}\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    #[test]
    fn parses_i_of_n_and_refuses_the_rest() {
        assert_eq!("2/3".parse::<Shard>().unwrap(), Shard::new(2, 3).unwrap());
        assert_eq!("1/1".parse::<Shard>().unwrap().to_string(), "1/1");
        for bad in [
            "", "3", "0/3", "4/3", "1/0", "a/3", "1/b", "-1/3", "1/3/4", "/3", "1/",
        ] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains(&format!("\"{bad}\"")), "{bad}: {e}");
        }
        assert!(
            "0/3"
                .parse::<Shard>()
                .unwrap_err()
                .contains("numbered from 1")
        );
    }

    #[test]
    fn the_key_is_the_file_name() {
        assert_eq!(
            key_of(Path::new("cassettes/a.cassette.json")),
            "a.cassette.json"
        );
        let s = Shard::new(1, 7).unwrap();
        assert_eq!(
            s.contains(Path::new("x/a.cassette.json")),
            s.contains(Path::new("a.cassette.json"))
        );
    }

    #[test]
    fn the_partition_is_pinned() {
        // Other tools (a CI script, another reel version) must agree on where
        // a file goes: the hash is part of the interface.
        let of = |k: &str| Shard::of_key(k, 4);
        let got: Vec<u64> = ["a", "b", "write-note.cassette.json", ""]
            .iter()
            .map(|k| of(k))
            .collect();
        let expected: Vec<u64> = ["a", "b", "write-note.cassette.json", ""]
            .iter()
            .map(|k| {
                let d = Sha256::digest(k.as_bytes());
                1 + u64::from_be_bytes(d[..8].try_into().unwrap()) % 4
            })
            .collect();
        assert_eq!(got, expected);
        assert!(got.iter().all(|s| (1..=4).contains(s)));
    }

    fn names() -> impl Strategy<Value = BTreeSet<String>> {
        proptest::collection::btree_set("[a-z0-9_.-]{1,12}(\\.cassette\\.json)?", 0..40)
    }

    proptest! {
        #[test]
        fn shards_are_disjoint_and_cover_the_set(files in names(), total in 1u64..12) {
            let paths: Vec<PathBuf> = files.iter().map(|n| Path::new("dir").join(n)).collect();
            let mut seen: Vec<PathBuf> = Vec::new();
            for i in 1..=total {
                let part = Shard::new(i, total).unwrap().select(paths.clone());
                for p in part {
                    prop_assert!(!seen.contains(&p), "{} in two shards", p.display());
                    seen.push(p);
                }
            }
            seen.sort();
            let mut all = paths.clone();
            all.sort();
            prop_assert_eq!(seen, all);
        }

        #[test]
        fn adding_a_file_moves_no_other(files in names(), extra in "[a-z0-9_.-]{1,12}", total in 1u64..12) {
            let before: Vec<PathBuf> = files.iter().map(|n| Path::new("dir").join(n)).collect();
            prop_assume!(!files.contains(&extra));
            let mut after = before.clone();
            after.push(Path::new("dir").join(&extra));
            for i in 1..=total {
                let s = Shard::new(i, total).unwrap();
                let mut old = s.select(before.clone());
                let mut new: Vec<PathBuf> = s.select(after.clone());
                new.retain(|p| before.contains(p));
                old.sort();
                new.sort();
                prop_assert_eq!(old, new);
            }
        }
    }
}
