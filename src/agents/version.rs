//! The registry's release list and the selectors that pick from it.
//!
//! Release numbers are not contiguous (2.1.112 is followed by 2.1.113, but
//! 0.2.9 by 0.2.14), so every selector resolves against the list the registry
//! publishes — nothing is ever computed by counting upward.

use std::fmt;

use semver::Version;

/// The published releases, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionList {
    versions: Vec<Version>,
}

/// Why a list or a selector could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("`{0}` is not a version selector")]
    Syntax(String),
    #[error("no published release matches `{0}`")]
    NoMatch(String),
    #[error("the registry's version list is not a JSON array of version strings: {0}")]
    List(String),
}

impl VersionList {
    /// From `npm view <pkg> versions --json`: a JSON array of strings (or a
    /// single string when only one release exists). Entries that are not
    /// semantic versions are skipped: they cannot be installed by number.
    pub fn from_npm_json(text: &str) -> Result<VersionList, SelectorError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| SelectorError::List(e.to_string()))?;
        let strings: Vec<&str> = match &value {
            serde_json::Value::Array(items) => items.iter().filter_map(|v| v.as_str()).collect(),
            serde_json::Value::String(s) => vec![s.as_str()],
            other => return Err(SelectorError::List(format!("found {other}"))),
        };
        Ok(VersionList::new(
            strings.iter().filter_map(|s| Version::parse(s).ok()),
        ))
    }

    pub fn new(versions: impl IntoIterator<Item = Version>) -> VersionList {
        let mut versions: Vec<Version> = versions.into_iter().collect();
        versions.sort();
        versions.dedup();
        VersionList { versions }
    }

    pub fn as_slice(&self) -> &[Version] {
        &self.versions
    }

    /// The newest release that is not a pre-release (what `latest` means).
    pub fn latest(&self) -> Option<&Version> {
        self.versions.iter().rev().find(|v| v.pre.is_empty())
    }

    /// Whether `v` was published.
    pub fn contains(&self, v: &Version) -> bool {
        self.versions.binary_search(v).is_ok()
    }

    /// The releases strictly between `low` and `high`, ascending.
    pub fn between(&self, low: &Version, high: &Version) -> &[Version] {
        let from = self.versions.partition_point(|v| v <= low);
        let to = self.versions.partition_point(|v| v < high);
        &self.versions[from..to.max(from)]
    }

    /// The published release right before `v`, if any.
    pub fn before(&self, v: &Version) -> Option<&Version> {
        let at = self.versions.partition_point(|x| x < v);
        at.checked_sub(1).map(|i| &self.versions[i])
    }
}

/// One `--agent-version` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The newest release.
    Latest,
    /// The newest N releases.
    Last(usize),
    /// One release by number.
    Exact(Version),
    /// Every release from `low` to `high`, both included when given
    /// (`2.1.250..2.1.260`, `2.1.250..`, `..2.1.260`).
    Range {
        low: Option<Version>,
        high: Option<Version>,
    },
}

impl Selector {
    /// Parses one selector (`latest`, `last:N`, `X.Y.Z`, `A..B`).
    pub fn parse(text: &str) -> Result<Selector, SelectorError> {
        let t = text.trim();
        let bad = || SelectorError::Syntax(text.to_owned());
        if t == "latest" {
            return Ok(Selector::Latest);
        }
        if let Some(n) = t.strip_prefix("last:") {
            return match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Selector::Last(n)),
                _ => Err(bad()),
            };
        }
        if let Some((low, high)) = t.split_once("..") {
            let end = |s: &str| -> Result<Option<Version>, SelectorError> {
                let s = s.trim();
                if s.is_empty() {
                    Ok(None)
                } else {
                    Version::parse(s).map(Some).map_err(|_| bad())
                }
            };
            let (low, high) = (end(low)?, end(high)?);
            if low.is_none() && high.is_none() {
                return Err(bad());
            }
            return Ok(Selector::Range { low, high });
        }
        Version::parse(t).map(Selector::Exact).map_err(|_| bad())
    }

    /// Parses a comma-separated list (`2.1.250,2.1.300,latest`).
    pub fn parse_list(text: &str) -> Result<Vec<Selector>, SelectorError> {
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Selector::parse)
            .collect()
    }

    /// Whether this selector can be resolved without the registry's list
    /// (an exact number already installed needs no network).
    pub fn exact(&self) -> Option<&Version> {
        match self {
            Selector::Exact(v) => Some(v),
            _ => None,
        }
    }

    /// The published releases this selector names, ascending.
    pub fn resolve(&self, list: &VersionList) -> Result<Vec<Version>, SelectorError> {
        let all = list.as_slice();
        let found: Vec<Version> = match self {
            Selector::Latest => list.latest().cloned().into_iter().collect(),
            Selector::Last(n) => {
                let stable: Vec<&Version> = all.iter().filter(|v| v.pre.is_empty()).collect();
                let from = stable.len().saturating_sub(*n);
                stable[from..].iter().map(|v| (*v).clone()).collect()
            }
            Selector::Exact(v) => list.contains(v).then(|| v.clone()).into_iter().collect(),
            Selector::Range { low, high } => all
                .iter()
                .filter(|v| low.as_ref().is_none_or(|l| *v >= l))
                .filter(|v| high.as_ref().is_none_or(|h| *v <= h))
                .cloned()
                .collect(),
        };
        if found.is_empty() {
            return Err(SelectorError::NoMatch(self.to_string()));
        }
        Ok(found)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Latest => f.write_str("latest"),
            Selector::Last(n) => write!(f, "last:{n}"),
            Selector::Exact(v) => write!(f, "{v}"),
            Selector::Range { low, high } => {
                let show = |v: &Option<Version>| v.as_ref().map(Version::to_string);
                write!(
                    f,
                    "{}..{}",
                    show(low).unwrap_or_default(),
                    show(high).unwrap_or_default()
                )
            }
        }
    }
}

/// Resolves every selector and merges the releases: ascending, each once.
pub fn resolve_all(
    selectors: &[Selector],
    list: &VersionList,
) -> Result<Vec<Version>, SelectorError> {
    let mut out = Vec::new();
    for s in selectors {
        out.extend(s.resolve(list)?);
    }
    Ok(VersionList::new(out).versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slice of the real list (npm view @anthropic-ai/claude-code versions
    /// --json, December 2026): gaps, an old line, the layout change at 2.1.113.
    const FIXTURE: &str = r#"["0.2.9","0.2.14","1.0.0","2.1.110","2.1.112","2.1.113",
        "2.1.285","2.1.286","2.1.288","2.1.331","2.1.332","2.2.0-beta.1"]"#;

    fn list() -> VersionList {
        VersionList::from_npm_json(FIXTURE).unwrap()
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn names(vs: &[Version]) -> Vec<String> {
        vs.iter().map(Version::to_string).collect()
    }

    #[test]
    fn the_list_is_sorted_by_version_not_by_text() {
        let l =
            VersionList::from_npm_json(r#"["2.1.9","2.1.10","0.2.14","0.2.9","2.1.10"]"#).unwrap();
        assert_eq!(names(l.as_slice()), ["0.2.9", "0.2.14", "2.1.9", "2.1.10"]);
        assert_eq!(
            names(VersionList::from_npm_json(r#""1.0.0""#).unwrap().as_slice()),
            ["1.0.0"]
        );
        assert!(matches!(
            VersionList::from_npm_json("{}"),
            Err(SelectorError::List(_))
        ));
        assert!(VersionList::from_npm_json("not json").is_err());
    }

    #[test]
    fn latest_and_last_skip_pre_releases_and_gaps() {
        let l = list();
        assert_eq!(names(&Selector::Latest.resolve(&l).unwrap()), ["2.1.332"]);
        assert_eq!(
            names(&Selector::Last(3).resolve(&l).unwrap()),
            ["2.1.288", "2.1.331", "2.1.332"]
        );
        assert_eq!(Selector::Last(100).resolve(&l).unwrap().len(), 11);
    }

    #[test]
    fn exact_numbers_must_be_published() {
        let l = list();
        assert_eq!(
            names(&Selector::parse("2.1.286").unwrap().resolve(&l).unwrap()),
            ["2.1.286"]
        );
        // 2.1.287 was never published: no counting upward.
        assert_eq!(
            Selector::parse("2.1.287").unwrap().resolve(&l),
            Err(SelectorError::NoMatch("2.1.287".into()))
        );
    }

    #[test]
    fn ranges_are_inclusive_and_open_ended() {
        let l = list();
        let r = |s: &str| names(&Selector::parse(s).unwrap().resolve(&l).unwrap());
        assert_eq!(
            r("2.1.112..2.1.286"),
            ["2.1.112", "2.1.113", "2.1.285", "2.1.286"]
        );
        assert_eq!(r("2.1.287..2.1.331"), ["2.1.288", "2.1.331"]);
        assert_eq!(r("2.1.331.."), ["2.1.331", "2.1.332", "2.2.0-beta.1"]);
        assert_eq!(r("..0.2.14"), ["0.2.9", "0.2.14"]);
        assert!(
            Selector::parse("2.1.300..2.1.200")
                .unwrap()
                .resolve(&l)
                .is_err()
        );
    }

    #[test]
    fn bad_selectors_are_named() {
        for bad in [
            "",
            "lates",
            "last:0",
            "last:x",
            "2.1",
            "..",
            "2.1.x..2.1.3",
            "v2.1.3",
        ] {
            assert_eq!(
                Selector::parse(bad),
                Err(SelectorError::Syntax(bad.into())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_list_of_selectors_merges_into_one_ascending_set() {
        let sel = Selector::parse_list("latest, 2.1.112,last:2,2.1.285..2.1.286").unwrap();
        assert_eq!(
            names(&resolve_all(&sel, &list()).unwrap()),
            ["2.1.112", "2.1.285", "2.1.286", "2.1.331", "2.1.332"]
        );
        assert_eq!(
            sel.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["latest", "2.1.112", "last:2", "2.1.285..2.1.286"]
        );
    }

    #[test]
    fn between_and_before_walk_the_published_list() {
        let l = list();
        assert_eq!(
            names(l.between(&v("2.1.112"), &v("2.1.288"))),
            ["2.1.113", "2.1.285", "2.1.286"]
        );
        assert!(l.between(&v("2.1.288"), &v("2.1.112")).is_empty());
        assert_eq!(l.before(&v("2.1.286")), Some(&v("2.1.285")));
        assert_eq!(l.before(&v("2.1.287")), Some(&v("2.1.286")));
        assert_eq!(l.before(&v("0.2.9")), None);
    }
}
