//! The cassette a scenario was recorded to, read for one fact: whether it
//! carries the host's control responses (`controlOut`). Keys of the
//! `needs-control-out` bucket (the decision and gate keys) are skipped on
//! replay of a cassette without them, so lint names them (L011).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::scenario;

/// Only the members lint reads; the rest of the document is skipped unread.
#[derive(Deserialize)]
struct Shape {
    #[serde(rename = "controlOut", default)]
    control_out: Option<Vec<IgnoredAny>>,
    #[serde(rename = "scenarioSource", default)]
    scenario_source: Option<String>,
}

/// The recorded cassette of the scenario at `path` and whether it carries a
/// non-empty `controlOut`. Looked for where `reel record` and cowork-harness
/// put one: beside the scenario (`<stem>.cassette.json`), in its
/// `cassettes/`, or in the `cassettes/` beside its directory; a cassette
/// whose `scenarioSource` names another scenario is not this one's.
pub(super) fn recorded(path: &Path, doc: &Value) -> Option<(PathBuf, bool)> {
    let dir = scenario::dir_of(path);
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let name = doc
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(&stem);
    let file = format!("{}.cassette.json", scenario::slug(name));
    let candidates = [
        dir.join(format!("{stem}.cassette.json")),
        dir.join("cassettes").join(&file),
        dir.join("..").join("cassettes").join(&file),
    ];
    let me = std::fs::canonicalize(path).ok();
    candidates.into_iter().find_map(|c| {
        let text = std::fs::read(&c).ok()?;
        let shape: Shape = serde_json::from_slice(&text).ok()?;
        if let Some(src) = &shape.scenario_source {
            let theirs = std::fs::canonicalize(scenario::dir_of(&c).join(src)).ok();
            if theirs != me {
                return None;
            }
        }
        let has = shape.control_out.is_some_and(|c| !c.is_empty());
        // Shown as the user would write it (`cassettes/x`, not `scenarios/../cassettes/x`).
        Some((crate::paths::lexical(&c), has))
    })
}
