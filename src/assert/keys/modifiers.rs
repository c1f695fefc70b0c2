//! The verdict modifiers: always-passing no-ops that `computeVerdict` reads from
//! `assertions[]`.

use serde_json::json;

use super::*;

pub(super) const KEYS: &[Key] = &[
    Key {
        name: name::ALLOW_PERMISSIVE_AUTO_ALLOW,
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: a permissive auto-allow does not fail the run",
        ranks: Ranks {
            listed: 40,
            check: 52,
            schema: 66,
            strip: Some(40),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: "allow_missing_capability",
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: a missing capability does not fail the run",
        ranks: Ranks {
            listed: 41,
            check: 53,
            schema: 71,
            strip: Some(41),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: "allow_l0_plugin_divergence",
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: an L0 plugin divergence does not fail the run",
        ranks: Ranks {
            listed: 42,
            check: 54,
            schema: 70,
            strip: Some(42),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: name::ALLOW_STALL,
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: stalling on a question does not fail the run",
        ranks: Ranks {
            listed: 43,
            check: 55,
            schema: 72,
            strip: Some(43),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: "allow_undelivered_deliverables",
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: undelivered deliverables do not fail the run",
        ranks: Ranks {
            listed: 44,
            check: 56,
            schema: 73,
            strip: Some(44),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: "allow_outputs_delete",
        bucket: Bucket::Always,
        param: Param::True,
        description: "verdict modifier: deleting in outputs/ does not fail the run",
        ranks: Ranks {
            listed: 45,
            check: 57,
            schema: 67,
            strip: Some(45),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
    Key {
        name: "allow_delete_in",
        bucket: Bucket::Always,
        param: Param::NonEmptyStrList,
        description: "verdict modifier: deleting in these mounts does not fail the run",
        example: Some(|| json!(["outputs"])),
        ranks: Ranks {
            listed: 46,
            check: 58,
            schema: 69,
            strip: Some(46),
        },
        eval: Eval::VerdictModifier,
        ..Key::DEFAULTS
    },
];
