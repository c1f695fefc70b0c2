//! One record per assertion key: its name, bucket, parameter shape,
//! description, ordering ranks, evaluator and (for a count-bound key) the
//! `--margins` bound, grouped by family, each family's evaluators beside its
//! records (ripgrep's `flags/defs.rs` model).
//!
//! Every list of keys in reel is derived from [`all`] here: the catalog
//! order (`reel assertions`), the evaluation order of `check()`, the
//! schema order the scenario loader emits, replay's strip order and the
//! `--margins` report order are each a sort of the records by one rank. A key
//! is added in one place: a record in its family's `KEYS`.

mod cost;
mod decisions;
mod files;
pub(crate) use files::TEN_MIB;
mod gates;
mod hooks;
pub(crate) use files::artifact_json_problem;
pub(crate) use hooks::{agents_predate_on_failure, hook_object_problem};
pub(crate) use tools::{tool_object_problem, tool_order_problem};
pub(crate) use transcript::last_message_problem;
mod modifiers;
mod outcome;
mod permissions;
mod skills;
mod subagents;
mod tasks;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_plugin_eval;
mod tools;
mod transcript;

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use super::catalog::{ANY, Bucket, Field, Param, Refine, opt, req};
use super::eval::{
    Env, KeyResult, any_t, bad_param, f, f64_param, hostloop_only, is_vm, num, obj_param, ok,
    ok_ev, opt_str, str_list, str_param, t,
};
use super::glob::{Glob, GlobList};
use super::json::{self, DotResolve};
use super::links::{self, LinkResolution};
use super::tree::contained_rel;
use crate::cassette::{PreRunOrigin, TruncationReason};
use crate::evidence::RunRecord;
use crate::js::regex::{EsRegex, compile_es};

/// The names of the keys other modules act on by name (the scaffold writes
/// them, lint and the verdict read them), defined once: each key's record
/// takes its name from here.
pub mod name {
    pub const TOOL_CALLED: &str = "tool_called";
    pub const SKILL_TRIGGERED: &str = "skill_triggered";
    pub const INPUT_UNMODIFIED: &str = "input_unmodified";
    pub const TOOL_NOT_CALLED: &str = "tool_not_called";
    pub const FILE_EXISTS: &str = "file_exists";
    pub const NO_UNEXPECTED_FILES: &str = "no_unexpected_files";
    pub const QUESTION_ASKED: &str = "question_asked";
    pub const GATE_ANSWERS_DELIVERED: &str = "gate_answers_delivered";
    pub const EGRESS_DENIED: &str = "egress_denied";
    pub const EGRESS_ALLOWED: &str = "egress_allowed";
    pub const ALLOW_STALL: &str = "allow_stall";
    pub const ALLOW_PERMISSIVE_AUTO_ALLOW: &str = "allow_permissive_auto_allow";
    pub const REPLAY_PROTOCOL_FIDELITY: &str = "replay_protocol_fidelity";
}

/// One assertion key.
pub struct Key {
    pub name: &'static str,
    pub bucket: Bucket,
    pub(crate) param: Param,
    /// A one-line description of what the key checks (`reel assertions`).
    pub description: &'static str,
    /// The example `reel assertions KEY` shows, when the parameter shape's
    /// generic one would say less.
    pub(crate) example: Option<fn() -> Value>,
    pub ranks: Ranks,
    pub(crate) eval: Eval,
    /// A count-bound key: what `verify-cassettes --margins` reports.
    pub margin: Option<Margin>,
    /// The pre-run baseline field a manifest key also needs.
    pub baseline: Option<&'static str>,
    /// The key that negates this one with the same parameter
    /// (`tool_called` / `tool_not_called`): both naming one value can never
    /// pass together.
    pub opposite: Option<&'static str>,
    /// The keys this one leaves no room for at some values.
    pub excludes: Option<Excludes>,
}

/// This key, at a value `when` accepts, contradicts each of `others` at a
/// value its predicate accepts (`questions_count_max: 0` and any
/// `question_asked`): `reel lint` reports each pair (L009).
#[derive(Clone, Copy)]
pub struct Excludes {
    pub when: ValueTest,
    pub others: &'static [(&'static str, ValueTest)],
    /// Why, in `reel lint`'s words.
    pub why: &'static str,
    /// The refusal of the scenario loader (`record`), for the rules the
    /// original's `record` enforces too.
    pub refusal: Option<&'static str>,
}

/// A test of a parameter value.
pub type ValueTest = fn(&Value) -> bool;

/// Any value.
fn any(_: &Value) -> bool {
    true
}

/// `true`.
fn is_true(v: &Value) -> bool {
    v.as_bool() == Some(true)
}

/// `0`.
fn is_zero(v: &Value) -> bool {
    v.as_u64() == Some(0)
}

/// A key's position in each order that lists keys (lower first).
#[derive(Debug, Clone, Copy)]
pub struct Ranks {
    /// The catalog (docs/spec/replay.md §4) order: `reel assertions`.
    pub listed: u8,
    /// The original's `check()` chain: evaluation order, so the first
    /// failing key in it supplies an item's message.
    pub check: u8,
    /// The original schema's declaration order, which its scenario loader
    /// emits an assertion's keys in (so a frozen item lists them so).
    pub schema: u8,
    /// The order replay rebuilds an assertion in when it strips it to the
    /// keys the cassette can check (cowork-harness `stripToContent`): set
    /// exactly for the keys replay evaluates.
    pub strip: Option<u8>,
}

/// How a key is evaluated. A record cannot leave it out, and the
/// non-evaluating variants are checked against the bucket by a test.
#[derive(Clone, Copy)]
pub(crate) enum Eval {
    /// One result.
    One(Evaluator),
    /// Several results (each matcher of the parameter fails on its own).
    Many(MultiEvaluator),
    /// A live-only key: evaluated on a live run, "live-only" on replay.
    Live(Evaluator),
    /// A verdict modifier: always passes; `computeVerdict` reads it.
    VerdictModifier,
    /// Produced by replay itself, never evaluated from `assert:` (the
    /// original's `check()` has no branch for it).
    Synthesized,
}

pub(crate) type Evaluator = fn(&mut Env<'_>, &'static str, &Value) -> KeyResult;
pub(crate) type MultiEvaluator = fn(&mut Env<'_>, &'static str, &Value, &mut Vec<KeyResult>);

/// The `--margins` bound of a count-bound key.
#[derive(Clone, Copy)]
pub struct Margin {
    /// Position in the report (cowork-harness `COUNT_BOUND_MARGIN_KEYS`).
    pub rank: u8,
    pub kind: MarginKind,
    /// The recorded value, read through the accessor the key's assertion
    /// judges; `None` when the recording cannot show it.
    pub recorded: fn(&RunRecord) -> Option<f64>,
}

/// Which side of the budget a count-bound key bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MarginKind {
    /// A ceiling: headroom = budget / recorded.
    Max,
    /// A floor: headroom = recorded / budget.
    Min,
}

impl Key {
    /// The optional fields of a record, for `..Key::DEFAULTS`.
    const DEFAULTS: Key = Key {
        name: "",
        bucket: Bucket::Always,
        param: Param::True,
        description: "",
        example: None,
        ranks: Ranks {
            listed: 0,
            check: 0,
            schema: 0,
            strip: None,
        },
        eval: Eval::Synthesized,
        margin: None,
        baseline: None,
        opposite: None,
        excludes: None,
    };

    /// A verdict modifier (always passes; relaxes the verdict).
    pub fn verdict_modifier(&self) -> bool {
        matches!(self.eval, Eval::VerdictModifier)
    }

    /// A parameter value the key accepts (always passes validation).
    pub fn example(&self) -> Value {
        self.example.map_or_else(|| self.param.example(), |f| f())
    }
}

const FAMILIES: &[&[Key]] = &[
    outcome::KEYS,
    transcript::KEYS,
    tools::KEYS,
    subagents::KEYS,
    skills::KEYS,
    cost::KEYS,
    tasks::KEYS,
    files::KEYS,
    decisions::KEYS,
    permissions::KEYS,
    hooks::KEYS,
    modifiers::KEYS,
];

fn sorted_by<R: Ord>(rank: impl Fn(&Key) -> Option<R>) -> Vec<&'static Key> {
    let mut keys: Vec<(R, &'static Key)> = FAMILIES
        .iter()
        .flat_map(|family| family.iter())
        .filter_map(|k| Some((rank(k)?, k)))
        .collect();
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    keys.into_iter().map(|(_, k)| k).collect()
}

/// Every key, in catalog order.
pub fn all() -> &'static [&'static Key] {
    static ORDER: OnceLock<Vec<&'static Key>> = OnceLock::new();
    ORDER.get_or_init(|| sorted_by(|k| Some(k.ranks.listed)))
}

/// Every key, in the original's `check()` order.
pub fn check_order() -> &'static [&'static Key] {
    static ORDER: OnceLock<Vec<&'static Key>> = OnceLock::new();
    ORDER.get_or_init(|| sorted_by(|k| Some(k.ranks.check)))
}

/// Every key name, in schema declaration order.
pub fn schema_order() -> &'static [&'static str] {
    static ORDER: OnceLock<Vec<&'static str>> = OnceLock::new();
    ORDER.get_or_init(|| names(sorted_by(|k| Some(k.ranks.schema))))
}

/// The names of the keys replay evaluates, in its strip order.
pub fn strip_order() -> &'static [&'static str] {
    static ORDER: OnceLock<Vec<&'static str>> = OnceLock::new();
    ORDER.get_or_init(|| names(sorted_by(|k| k.ranks.strip)))
}

/// The count-bound keys, in `--margins` report order.
pub fn count_bound() -> &'static [&'static Key] {
    static ORDER: OnceLock<Vec<&'static Key>> = OnceLock::new();
    ORDER.get_or_init(|| sorted_by(|k| k.margin.map(|m| m.rank)))
}

fn names(keys: Vec<&'static Key>) -> Vec<&'static str> {
    keys.into_iter().map(|k| k.name).collect()
}

/// The record of `name`, or `None` for an unknown key.
pub fn find(name: &str) -> Option<&'static Key> {
    all().iter().copied().find(|k| k.name == name)
}
