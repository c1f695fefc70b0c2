//! Spend budgets: cost, tokens, turns.

use serde_json::Value;

use super::*;

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "max_cost_usd",
        bucket: Bucket::Always,
        param: Param::PosNum,
        description: "the recorded spend is at most this many US dollars",
        ranks: Ranks {
            listed: 26,
            check: 22,
            schema: 29,
            strip: Some(22),
        },
        eval: Eval::One(max_cost_usd),
        margin: Some(Margin {
            rank: 2,
            kind: MarginKind::Max,
            recorded: |r| r.cost_usd,
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "max_tokens",
        bucket: Bucket::Always,
        param: Param::PosInt,
        description: "recorded input + output tokens are at most N",
        ranks: Ranks {
            listed: 27,
            check: 23,
            schema: 30,
            strip: Some(23),
        },
        eval: Eval::One(max_tokens),
        margin: Some(Margin {
            rank: 1,
            kind: MarginKind::Max,
            recorded: RunRecord::tokens_total,
        }),
        ..Key::DEFAULTS
    },
    Key {
        name: "max_turns",
        bucket: Bucket::Always,
        param: Param::UInt,
        description: "the run took at most N turns",
        ranks: Ranks {
            listed: 29,
            check: 29,
            schema: 40,
            strip: Some(29),
        },
        eval: Eval::One(max_turns),
        margin: Some(Margin {
            rank: 3,
            kind: MarginKind::Max,
            recorded: |r| r.turns,
        }),
        ..Key::DEFAULTS
    },
];

fn max_cost_usd(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let max = f64_param(key, v)?;
    match env.run.cost_usd {
        None => {
            Err("evidence unavailable: cost telemetry absent — cannot evaluate max_cost_usd".into())
        }
        Some(c) if c <= max => ok_ev(format!("max_cost_usd: ${} ≤ ${}", f(c), num(v))),
        Some(c) => Err(format!("cost ${} exceeds max ${}", f(c), num(v))),
    }
}

fn max_tokens(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let max = f64_param(key, v)?;
    match env.run.tokens_total() {
        None => {
            Err("evidence unavailable: token telemetry absent — cannot evaluate max_tokens".into())
        }
        Some(tk) if tk <= max => ok_ev(format!("max_tokens: {} ≤ {}", f(tk), num(v))),
        Some(tk) => Err(format!("{} tokens exceeds max {}", f(tk), num(v))),
    }
}

fn max_turns(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let max = f64_param(key, v)?;
    match env.run.turns {
        None => {
            Err("evidence unavailable: turn telemetry absent — cannot evaluate max_turns".into())
        }
        Some(n) if n <= max => ok(),
        Some(n) => Err(format!("{} turns exceeds max {}", f(n), num(v))),
    }
}
