//! The main agent's text: literals, regexes, host-path leaks, computer:// links.

use serde_json::Value;

use super::*;

pub(super) const KEYS: &[Key] = &[
    Key {
        name: "transcript_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "the main agent's text contains this literal",
        example: Some(|| Value::from("Done")),
        ranks: Ranks {
            listed: 1,
            check: 0,
            schema: 0,
            strip: Some(0),
        },
        eval: Eval::One(transcript_contains),
        opposite: Some("transcript_not_contains"),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_not_contains",
        bucket: Bucket::Always,
        param: Param::NonEmpty,
        description: "the main agent's text does not contain this literal",
        example: Some(|| Value::from("Done")),
        ranks: Ranks {
            listed: 2,
            check: 1,
            schema: 1,
            strip: Some(1),
        },
        eval: Eval::One(transcript_not_contains),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_matches",
        bucket: Bucket::Always,
        param: Param::Regex,
        description: "the main agent's text matches this regex (ECMAScript, case-insensitive)",
        ranks: Ranks {
            listed: 3,
            check: 7,
            schema: 2,
            strip: Some(2),
        },
        eval: Eval::One(transcript_matches),
        opposite: Some("transcript_not_matches"),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_not_matches",
        bucket: Bucket::Always,
        param: Param::Regex,
        description: "the main agent's text does not match this regex",
        ranks: Ranks {
            listed: 4,
            check: 8,
            schema: 3,
            strip: Some(3),
        },
        eval: Eval::One(transcript_not_matches),
        ..Key::DEFAULTS
    },
    Key {
        name: "transcript_no_host_path",
        bucket: Bucket::LiveOnly,
        param: Param::True,
        description: "the transcript leaks no host path",
        ranks: Ranks {
            listed: 71,
            check: 59,
            schema: 57,
            strip: None,
        },
        eval: Eval::Live(transcript_no_host_path),
        ..Key::DEFAULTS
    },
    Key {
        name: "computer_links_resolve",
        bucket: Bucket::NeedsManifest,
        param: Param::True,
        description: "the transcript has computer:// links and each resolves to a file",
        ranks: Ranks {
            listed: 61,
            check: 60,
            schema: 58,
            strip: Some(61),
        },
        eval: Eval::One(computer_links_required),
        ..Key::DEFAULTS
    },
    Key {
        name: "computer_links_resolve_if_present",
        bucket: Bucket::NeedsManifest,
        param: Param::True,
        description: "every computer:// link in the transcript resolves (none passes)",
        ranks: Ranks {
            listed: 62,
            check: 61,
            schema: 59,
            strip: Some(62),
        },
        eval: Eval::One(computer_links_if_present),
        ..Key::DEFAULTS
    },
];

fn transcript_not_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let s = str_param(key, v)?;
    if env.run.transcript.contains(s) {
        Err(format!("transcript unexpectedly contains \"{s}\""))
    } else {
        ok()
    }
}

fn transcript_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if t(key, &re, &env.run.transcript)? {
        ok()
    } else {
        Err(format!("transcript did not match /{p}/i"))
    }
}

fn transcript_not_matches(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let p = str_param(key, v)?;
    let re = env.re(key, p)?;
    if t(key, &re, &env.run.transcript)? {
        Err(format!("transcript unexpectedly matched /{p}/i"))
    } else {
        ok()
    }
}

/// Live only: the run's working directory (system/init `cwd`) is the host path.
fn transcript_no_host_path(env: &mut Env<'_>, _key: &'static str, _v: &Value) -> KeyResult {
    let host = env.run.init.as_ref().and_then(|i| i.cwd.clone());
    match host.filter(|h| h.starts_with('/') && h.len() > 1) {
        Some(h) if env.run.transcript.contains(&h) => {
            Err(format!("transcript leaks the host path {h}"))
        }
        Some(_) => ok(),
        None => Err(
            "evidence unavailable: transcript_no_host_path needs the run's working directory \
                (system/init cwd)"
                .into(),
        ),
    }
}

fn computer_links_required(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    computer_links(env, key, true)
}

fn computer_links_if_present(env: &mut Env<'_>, key: &'static str, _v: &Value) -> KeyResult {
    computer_links(env, key, false)
}

fn transcript_contains(env: &mut Env<'_>, key: &'static str, v: &Value) -> KeyResult {
    let s = str_param(key, v)?;
    if env.run.transcript.contains(s) {
        ok_ev(format!("transcript_contains: found \"{s}\""))
    } else {
        Err(format!("transcript missing \"{s}\""))
    }
}

fn computer_links(env: &Env<'_>, key: &str, require_presence: bool) -> KeyResult {
    let found = links::extract(&env.run.transcript);
    if found.is_empty() {
        return if require_presence {
            Err(format!(
                "{key}: no computer:// link in the transcript — cannot verify a deliverable link \
                    resolves (use computer_links_resolve_if_present to pass when no link is \
                    expected)"
            ))
        } else {
            ok_ev(format!(
                "{key}: no computer:// links in the transcript (vacuous pass — _if_present)"
            ))
        };
    }
    let tier_note = env
        .tier()
        .filter(|t| !t.is_empty())
        .map(|t| format!(" (tier: {t})"))
        .unwrap_or_default();
    let root = env.root();
    let res = LinkResolution {
        folder_prefixes: env
            .ctx
            .cassette
            .folder_prefix_map()
            .map(|m| m.into_iter().map(|e| (e.from, e.mount)).collect()),
        tree: env.tree(),
        root_display: &root,
    };
    let dangling: Vec<String> = found
        .iter()
        .filter_map(|l| {
            let (resolved, desc) = links::resolve(l, &res);
            (!resolved).then(|| format!("computer://{} — checked {desc}", l.raw))
        })
        .collect();
    if dangling.is_empty() {
        ok_ev(format!(
            "{key}: {} computer:// link(s) all resolved{tier_note}",
            found.len()
        ))
    } else {
        Err(format!(
            "dangling computer:// link(s){tier_note}: {}",
            dangling.join("; ")
        ))
    }
}
