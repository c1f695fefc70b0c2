//! `hookFailureBlocks` (v16): the events on which a hook that blocks when it
//! fails (`onFailure: "block"`, agent 2.1.294 and later) may have run.
//!
//! The agent streams a hook's `hook_response` frame before it turns the
//! hook's failure into a block, so the frame still reads `error` /
//! `cancelled`: a failed frame of such an event cannot say whether it
//! blocked. Events whose hooks stream no frame at all hide any block
//! (test/cassette-v16.test.ts, test/hook-failure-blocks.test.ts; the
//! original's src/run/hook-failure-blocks.ts).

use serde_json::Value;

use crate::cassette::Cassette;

/// Events where the agent logs a failure and never blocks.
const EXEMPT: &[&str] = &["Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"];

/// Events the agent runs outside its REPL loop, which stream no
/// `hook_response` frame: a block there is invisible on the stream.
const FRAMELESS: &[&str] = &[
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "Elicitation",
    "ElicitationResult",
    "FileChanged",
    "InstructionsLoaded",
    "Notification",
    "PostCompact",
    "PreCompact",
    "SessionEnd",
    "StopFailure",
    "WorktreeCreate",
    "WorktreeRemove",
];

/// The newest agent read and found to have no `onFailure`.
const LAST_AGENT_WITHOUT_ON_FAILURE: &str = "2.1.293";

/// A run's inventory: the events listed, or unknown (and why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inventory {
    Events(Vec<String>),
    Unknown(String),
}

impl Inventory {
    /// The cassette's frozen inventory or, for a recording made before it
    /// was frozen, what the agent its init frames report allows: every one
    /// at or below 2.1.293 has no `onFailure`; a newer one, or none
    /// reported, leaves it unknown.
    pub(super) fn of(cassette: &Cassette) -> Inventory {
        match cassette.doc.get("hookFailureBlocks") {
            Some(recorded) => well_formed(recorded).unwrap_or_else(|| {
                Inventory::Unknown("the recorded inventory is malformed".into())
            }),
            None => {
                let versions = init_versions(cassette);
                if agents_predate_on_failure(&versions) {
                    return Inventory::Events(Vec::new());
                }
                let named = if versions.is_empty() {
                    "(unknown)".to_owned()
                } else {
                    versions
                        .iter()
                        .map(|v| v.as_deref().unwrap_or("(unknown)"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                Inventory::Unknown(format!(
                    "recorded before the inventory existed, by agent {named}"
                ))
            }
        }
    }

    /// A failed frame of `event` may be a block the frame does not show.
    pub(super) fn may_block_on_failure(&self, event: &str) -> bool {
        if EXEMPT.contains(&event) {
            return false;
        }
        match self {
            Inventory::Unknown(_) => true,
            Inventory::Events(events) => events.iter().any(|e| e == event),
        }
    }

    /// Why a block may be hidden on an event that streams no frame: the
    /// frameless events listed, or the unknown inventory's reason.
    pub(super) fn hidden_blocks(&self) -> Option<String> {
        match self {
            Inventory::Unknown(why) => Some(format!(
                "the run's onFailure: block inventory is unknown ({why}), and a hook on an event \
                    that streams no frame (Notification, SessionEnd, PreCompact, …) would block \
                    unseen"
            )),
            Inventory::Events(events) => {
                let hidden: Vec<&str> = events
                    .iter()
                    .map(String::as_str)
                    .filter(|e| FRAMELESS.contains(e))
                    .collect();
                (!hidden.is_empty()).then(|| {
                    format!(
                        "a hook that blocks when it fails may run on {}, whose hooks stream no \
                            frame, so a block there cannot be seen",
                        hidden.join(", ")
                    )
                })
            }
        }
    }
}

/// `{events: [string]}` or `{unknown: true, why: string}`.
fn well_formed(v: &Value) -> Option<Inventory> {
    let o = v.as_object()?;
    if o.contains_key("unknown") {
        return (o.get("unknown") == Some(&Value::Bool(true)))
            .then(|| o.get("why").and_then(Value::as_str))
            .flatten()
            .map(|why| Inventory::Unknown(why.to_owned()));
    }
    let events = o.get("events")?.as_array()?;
    events
        .iter()
        .map(|e| e.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .map(Inventory::Events)
}

/// Every init frame's `claude_code_version`, in order (`None` where one
/// reports none).
fn init_versions(cassette: &Cassette) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for line in cassette.event_lines() {
        // Only init lines are parsed.
        if !line.stored().contains("init") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line.text()) else {
            continue;
        };
        if v.get("type").and_then(Value::as_str) == Some("system")
            && v.get("subtype").and_then(Value::as_str) == Some("init")
        {
            out.push(
                v.get("claude_code_version")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            );
        }
    }
    out
}

/// Every agent a run's init frames report (`None`: one reported no version)
/// is at or below the last without `onFailure`; none reported is not old.
/// `record` skips the hook-source scan for such a run (`{events: []}`).
pub(crate) fn agents_predate_on_failure(versions: &[Option<String>]) -> bool {
    !versions.is_empty()
        && versions
            .iter()
            .all(|v| v.as_deref().is_some_and(predates_on_failure))
}

/// An agent version at or below the last without `onFailure`, compared as
/// dotted numbers part by part (`2.1.1000` is newer than `2.1.293`; a
/// missing part is 0, an empty one too, as `Number("")` is); one that does
/// not parse is not old.
fn predates_on_failure(version: &str) -> bool {
    let parts = |v: &str| -> Option<Vec<u64>> {
        v.split('.')
            .map(|p| {
                if p.is_empty() {
                    Some(0)
                } else {
                    p.parse().ok()
                }
            })
            .collect()
    };
    let (Some(a), Some(b)) = (parts(version), parts(LAST_AGENT_WITHOUT_ON_FAILURE)) else {
        return false;
    };
    let at = |p: &[u64], i: usize| p.get(i).copied().unwrap_or(0);
    (0..a.len().max(b.len()))
        .map(|i| at(&a, i).cmp(&at(&b, i)))
        .find(|o| o.is_ne())
        .is_none_or(|o| o.is_lt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// test/hook-failure-blocks.test.ts ("resolveHookFailureBlocks").
    #[test]
    fn versions_compare_numerically() {
        for v in ["2.1.293", "2.1.284", "2.0.99", "1.9.300", "2.1.292.9"] {
            assert!(predates_on_failure(v), "{v}");
        }
        for v in [
            "2.1.294", "2.1.295", "2.1.1000", "3.0.0", "garbage", "2.1.x",
        ] {
            assert!(!predates_on_failure(v), "{v}");
        }
    }

    #[test]
    fn malformed_inventories_read_as_malformed() {
        for bad in [
            serde_json::json!(null),
            serde_json::json!({}),
            serde_json::json!({"events": "PreToolUse"}),
            serde_json::json!({"unknown": true}),
            serde_json::json!([]),
            serde_json::json!("x"),
        ] {
            assert!(well_formed(&bad).is_none(), "{bad}");
        }
        assert_eq!(
            well_formed(&serde_json::json!({"events": ["PreToolUse"]})),
            Some(Inventory::Events(vec!["PreToolUse".into()]))
        );
        assert!(well_formed(&serde_json::json!({"unknown": true, "why": "x"})).is_some());
    }
}
