//! Cassette lifecycle checks of `verify-cassettes`: `--max-age` (a cassette
//! recorded too long ago) and `--orphans` (a cassette whose recorded scenario
//! is gone, a scenario no cassette records).
//!
//! The recording time is the cassette's own: `timelineHeader.startedAtWall`,
//! else the newest `timestamp` of its events lines. A cassette with neither
//! cannot be aged, which is "could not verify", never a silent pass.
//!
//! Scenarios are found with [`crate::discover::scenarios_in`] in the
//! conventional `<cassette dir>/../scenarios` and in the directories the
//! cassettes' own scenarios live in; a scenario counts as recorded when the
//! one sibling resolver ([`crate::scenario::sibling::resolve`]) leads some
//! cassette of the checked directories to it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::cassette::Cassette;
use crate::paths;
use crate::scenario::sibling;

/// A `--max-age` value: a sum of `<number><unit>` parts, units `s`, `m`,
/// `h`, `d`, `w` (`90d`, `12w`, `36h`, `1w3d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxAge {
    pub limit: Duration,
}

impl FromStr for MaxAge {
    type Err = String;

    fn from_str(s: &str) -> Result<MaxAge, String> {
        let bad = || {
            format!(
                "expected a duration such as 90d, 12w or 36h (units s, m, h, d, w), got \"{s}\""
            )
        };
        let text = s.trim();
        if text.is_empty() {
            return Err(bad());
        }
        let mut total: u64 = 0;
        let mut digits = String::new();
        for c in text.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
                continue;
            }
            let unit: u64 = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86_400,
                'w' => 7 * 86_400,
                _ => return Err(bad()),
            };
            let n: u64 = digits.parse().map_err(|_| bad())?;
            digits.clear();
            total = n
                .checked_mul(unit)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(bad)?;
        }
        if !digits.is_empty() || total == 0 {
            return Err(bad());
        }
        Ok(MaxAge {
            limit: Duration::from_secs(total),
        })
    }
}

/// Seconds since the Unix epoch of an ISO-8601 UTC-or-offset timestamp
/// (`2026-11-30T06:48:35.906Z`, `2026-11-30T08:48:35+02:00`); `None` for
/// anything else.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[3..4], ":") => {
            let sign = match &rest[..1] {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let oh: i64 = rest[1..3].parse().ok()?;
            let om: i64 = rest[4..6].parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset)
}

/// When the cassette was recorded, as `(epoch seconds, the text it came
/// from)`: `timelineHeader.startedAtWall`, else the newest event
/// `timestamp`.
pub fn recorded_at(cassette: &Cassette) -> Option<(i64, String)> {
    let wall = cassette
        .doc
        .get("timelineHeader")
        .and_then(|h| h.get("startedAtWall"))
        .and_then(Value::as_str);
    if let Some(w) = wall
        && let Some(t) = parse_timestamp(w)
    {
        return Some((t, w.to_owned()));
    }
    cassette
        .events()
        .filter(|l| l.contains("\"timestamp\""))
        .filter_map(|l| {
            let v: Value = serde_json::from_str(&l).ok()?;
            let text = v.get("timestamp")?.as_str()?.to_owned();
            Some((parse_timestamp(&text)?, text))
        })
        .max_by_key(|(t, _)| *t)
}

/// The outcome of the `--max-age` check for one cassette.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Age {
    Fresh,
    /// The finding's message.
    TooOld(String),
    /// No recording time could be read (the message says so).
    Unknown(String),
}

/// Checks one cassette's age against `max` at time `now`.
pub fn check_age(cassette: &Cassette, max: &MaxAge, max_text: &str, now: SystemTime) -> Age {
    let Some((at, text)) = recorded_at(cassette) else {
        return Age::Unknown(format!(
            "max-age: no recording time in this cassette (no timelineHeader.startedAtWall, no \
                event timestamp) — cannot check --max-age {max_text}; re-record it"
        ));
    };
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let age = now.saturating_sub(at);
    if age <= max.limit.as_secs() as i64 {
        return Age::Fresh;
    }
    let redo = match cassette.scenario_source() {
        Some(src) => format!(
            "`reel record {}`",
            paths::lexical(&cassette.dir().join(src)).display()
        ),
        None => "`reel record <its scenario>`".into(),
    };
    let ago = if age >= 2 * 86_400 {
        format!("{} days", age / 86_400)
    } else {
        format!("{} hours", age / 3600)
    };
    Age::TooOld(format!(
        "recorded {text} ({ago} ago), older than --max-age {max_text} — refresh it: `reel rerun \
            --write {}` (today's agent against the recorded model replies), else re-record with \
            {redo}",
        cassette.path.display()
    ))
}

/// The `--orphans` finding of one cassette: its recorded `scenarioSource`
/// is gone.
pub fn orphan_cassette(cassette: &Cassette) -> Option<String> {
    let lookup = sibling::resolve(cassette);
    let missing = lookup.persisted_missing?;
    let resolved = paths::lexical(&cassette.dir().join(&missing));
    let found = match lookup.found {
        Some((p, _)) => format!(
            " (a scenario of the same name is at {}: if it moved there, re-record from it)",
            p.display()
        ),
        None => String::new(),
    };
    Some(format!(
        "the recorded scenarioSource {missing} ({}) is gone{found} — re-record from the scenario's \
            new place, or delete this cassette if the scenario was retired",
        resolved.display()
    ))
}

/// A scenario no cassette of the checked directories records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrphanScenario {
    pub scenario: String,
    pub message: String,
}

/// The scenarios near `cassettes` that none of them records. `cassettes` is
/// the whole batch (before `--shard`): a scenario is only an orphan if no
/// cassette anywhere in it records it.
pub fn orphan_scenarios(cassettes: &[PathBuf]) -> Vec<OrphanScenario> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    let mut recorded: BTreeSet<PathBuf> = BTreeSet::new();
    for path in cassettes {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        let conventional = paths::lexical(&dir.join("..").join("scenarios"));
        if conventional.is_dir() {
            dirs.insert(conventional);
        }
        let Ok(c) = Cassette::load(path) else {
            continue;
        };
        if let Some((found, _)) = sibling::resolve(&c).found {
            if let Some(parent) = found.parent() {
                dirs.insert(parent.to_path_buf());
            }
            recorded.insert(found);
        }
    }
    let absolute =
        |p: &Path| paths::lexical(&std::path::absolute(p).unwrap_or_else(|_| p.to_owned()));
    // Shown relative to the current directory when under it (as the
    // cassettes are), absolute otherwise.
    let cwd = std::env::current_dir().ok();
    let shown = |abs: &Path| -> String {
        cwd.as_deref()
            .and_then(|c| abs.strip_prefix(paths::lexical(c)).ok())
            .unwrap_or(abs)
            .display()
            .to_string()
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for dir in dirs {
        for scenario in crate::discover::scenarios_in(&dir).unwrap_or_default() {
            let abs = absolute(&scenario);
            if recorded.contains(&abs) || !seen.insert(abs.clone()) {
                continue;
            }
            let scenario = shown(&abs);
            out.push(OrphanScenario {
                message: format!(
                    "no cassette records this scenario — record it (`reel record {scenario}`), or \
                        delete it if it was retired"
                ),
                scenario,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s: &str| s.parse::<MaxAge>().map(|m| m.limit.as_secs());
        assert_eq!(d("90d"), Ok(90 * 86_400));
        assert_eq!(d("12w"), Ok(12 * 7 * 86_400));
        assert_eq!(d("36h"), Ok(36 * 3600));
        assert_eq!(d("1w3d"), Ok(10 * 86_400));
        assert_eq!(d("45s"), Ok(45));
        for bad in [
            "",
            "90",
            "d",
            "0d",
            "9x",
            "-1d",
            "1.5d",
            "99999999999999999999w",
        ] {
            let e = d(bad).unwrap_err();
            assert!(
                e.contains("90d") && e.contains(&format!("\"{bad}\"")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_timestamp("2026-11-30T06:48:35.906Z"),
            Some(1_796_021_315)
        );
        assert_eq!(
            parse_timestamp("2026-11-30T08:48:35+02:00"),
            parse_timestamp("2026-11-30T06:48:35Z")
        );
        assert_eq!(parse_timestamp("2000-03-01T00:00:00Z"), Some(951_868_800));
        for bad in [
            "",
            "2026-11-30",
            "2026-13-01T00:00:00Z",
            "2026-11-30T06:48:35",
            "x026-11-30T06:48:35Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }
}
