//! The cassette's checkpoints: the reel-only top-level key
//! `reelCheckpoints` (schema/reel-checkpoints.json), which cowork-harness
//! carries without reading (its cassette shape is a loose object).
//!
//! ```json
//! "reelCheckpoints": {
//!   "roots": ["outputs"],
//!   "checkpoints": [
//!     {"ref": "v1:sha256:…", "turn": 1, "at": "turn-end", "consistency": "quiescent",
//!      "files": 2, "contentBytes": 120, "blobBytes": 311}
//!   ]
//! }
//! ```
//!
//! A checkpoint is written only after its blob is durable
//! ([`super::Store::put`]); reading is strict (every ref parsed), since a
//! cassette is untrusted.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Ref;

/// The cassette key.
pub const KEY: &str = "reelCheckpoints";

/// When a snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum At {
    /// At a user turn's `result`, before the next turn was sent.
    TurnEnd,
    /// After the agent exited.
    RunEnd,
}

/// How still the workspace was when it was archived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Consistency {
    /// Nothing of the run could write: the agent idle between turns with no
    /// background task, or exited.
    Quiescent,
    /// Something may have been writing (a background task, an interrupted
    /// turn, a file that changed while it was read).
    Fuzzy,
}

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoint {
    #[serde(rename = "ref")]
    pub reference: String,
    /// The 1-based user turn that had just ended (at `run-end`: the last).
    pub turn: usize,
    pub at: At,
    pub consistency: Consistency,
    pub files: u64,
    pub content_bytes: u64,
    pub blob_bytes: u64,
}

impl Checkpoint {
    /// Its ref, parsed.
    pub fn parsed(&self) -> Result<Ref, super::RefError> {
        Ref::parse(&self.reference)
    }
}

/// The key's value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Checkpoints {
    /// The workspace roots archived (work-root-relative top-level names).
    pub roots: Vec<String>,
    pub checkpoints: Vec<Checkpoint>,
}

impl Checkpoints {
    /// The cassette's checkpoints (`Ok(None)`: it has none). A key that is
    /// there but malformed, or names a malformed ref, is an error naming
    /// the JSON path.
    pub fn of(doc: &Map<String, Value>) -> Result<Option<Checkpoints>, String> {
        let Some(value) = doc.get(KEY) else {
            return Ok(None);
        };
        let parsed: Checkpoints = serde_json::from_value(value.clone())
            .map_err(|e| format!("`{KEY}`: {e} (schema/reel-checkpoints.json)"))?;
        for (i, c) in parsed.checkpoints.iter().enumerate() {
            c.parsed()
                .map_err(|e| format!("`{KEY}.checkpoints[{i}].ref`: {e}"))?;
        }
        for (i, root) in parsed.roots.iter().enumerate() {
            let plain = super::archive::checked_path(root.as_bytes())
                .is_ok_and(|p| p.components().count() == 1);
            if !plain {
                return Err(format!(
                    "`{KEY}.roots[{i}]`: `{root}` is not a single plain directory name"
                ));
            }
        }
        Ok(Some(parsed))
    }

    /// Adds the key at the end of the cassette document.
    pub fn insert_into(&self, doc: &mut Map<String, Value>) {
        // Serialising plain strings and integers cannot fail.
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        doc.insert(KEY.into(), value);
    }

    /// The checkpoint that holds the workspace as turn `turn` (1-based)
    /// left it: its turn-end checkpoint, else the run-end one of that turn.
    pub fn after_turn(&self, turn: usize) -> Option<&Checkpoint> {
        let of_turn = || self.checkpoints.iter().filter(move |c| c.turn == turn);
        of_turn()
            .find(|c| c.at == At::TurnEnd)
            .or_else(|| of_turn().find(|c| c.at == At::RunEnd))
    }

    /// The run-end checkpoint, else the last one.
    pub fn final_state(&self) -> Option<&Checkpoint> {
        self.checkpoints
            .iter()
            .find(|c| c.at == At::RunEnd)
            .or(self.checkpoints.last())
    }
}

/// What a replay says of the cassette at `path`'s snapshots: one line per
/// ref whose blob is not in the store (or a malformed key). Only presence
/// is checked here; `verify-cassettes` checks digests.
pub fn missing(path: &std::path::Path, doc: &Map<String, Value>) -> Vec<String> {
    let checkpoints = match Checkpoints::of(doc) {
        Ok(Some(c)) => c,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![format!("snapshots unreadable: {e}")],
    };
    let store = super::Store::of_cassette(path);
    let mut refs: Vec<(Ref, usize)> = Vec::new();
    for c in &checkpoints.checkpoints {
        if let Ok(r) = c.parsed()
            && !refs.iter().any(|(seen, _)| seen == &r)
        {
            refs.push((r, c.turn));
        }
    }
    refs.into_iter()
        .filter(|(r, _)| !store.blob_path(r).is_file())
        .map(|(r, turn)| {
            format!(
                "snapshot {r} (after turn {turn}) is missing from `{}`: the assertions do not \
                 need it; rerun's diffs of bodies the cassette did not keep and `rerun \
                 --from-turn` do (restore the store, e.g. `git lfs pull`, or re-record)",
                store.dir().display()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(value: Value) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(KEY.into(), value);
        m
    }

    #[test]
    fn a_checkpoint_round_trips_and_a_bad_one_names_its_path() {
        let r = format!("v1:sha256:{}", "a".repeat(64));
        let good = json!({"roots": ["outputs"], "checkpoints": [
            {"ref": r, "turn": 1, "at": "turn-end", "consistency": "quiescent",
             "files": 1, "contentBytes": 3, "blobBytes": 90}]});
        let parsed = Checkpoints::of(&doc(good.clone())).unwrap().unwrap();
        let mut out = Map::new();
        parsed.insert_into(&mut out);
        assert_eq!(out[KEY], good);
        assert_eq!(parsed.after_turn(1).unwrap().reference, r);
        assert!(parsed.after_turn(2).is_none());

        let mut bad = good.clone();
        bad["checkpoints"][0]["ref"] = json!("v9:sha256:00");
        let e = Checkpoints::of(&doc(bad)).unwrap_err();
        assert!(
            e.contains("reelCheckpoints.checkpoints[0].ref") && e.contains("v9"),
            "{e}"
        );
        let mut bad = good;
        bad["roots"] = json!(["../up"]);
        let e = Checkpoints::of(&doc(bad)).unwrap_err();
        assert!(e.contains("roots[0]"), "{e}");
        assert!(Checkpoints::of(&doc(json!([]))).is_err());
        assert_eq!(Checkpoints::of(&Map::new()).unwrap(), None);
    }
}
