//! Plugin-manifest transforms (spec/fingerprint.md §1.4): which files are
//! manifests, and the bytes each hash format feeds to sha256 for them.
//!
//! Both transforms parse with [`crate::js::json::parse`] (`JSON.parse`)
//! and drop the top-level `version`, so a version bump alone is not drift. The
//! legacy transform is frozen forever: it defines every pre-v12 digest and is
//! the proof `rehash` relies on. This module does not read files.

use std::borrow::Cow;

use crate::js::json::{self, CanonError, JsValue};

/// How a file is treated by the per-file digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManifestKind {
    /// `rel` ends with `.claude-plugin/plugin.json` (a plain suffix test, so
    /// `x.claude-plugin/plugin.json` qualifies — upstream quirk kept).
    ClaudeManifest,
    /// `rel == "plugin.json"` (frozen legacy arm).
    RootManifest,
}

/// Classifies a root-relative path.
pub fn classify(rel: &str) -> Option<ManifestKind> {
    if rel.ends_with(".claude-plugin/plugin.json") {
        Some(ManifestKind::ClaudeManifest)
    } else if rel == "plugin.json" {
        Some(ManifestKind::RootManifest)
    } else {
        None
    }
}

/// Bytes the legacy (pre-v12) format hashes for a manifest: `JSON.stringify`
/// of the parsed value without its top-level `version`; the raw bytes when the
/// text does not parse or is `null` (where upstream's `delete` throws).
pub fn legacy_hashed(raw: &[u8]) -> Cow<'_, [u8]> {
    match json::parse(raw) {
        Ok(JsValue::Null) | Err(_) => Cow::Borrowed(raw),
        Ok(mut v) => {
            if let JsValue::Object(o) = &mut v {
                o.remove("version");
            }
            Cow::Owned(json::legacy(&v).into_bytes())
        }
    }
}

/// Bytes the `jcs1` format hashes for a manifest: the canonical form of the
/// parsed value without its top-level `version`; raw bytes only when the text
/// does not parse. A non-finite number is an error (never a raw fallback: raw
/// bytes would silently reinstate `version`).
pub fn jcs1_hashed(raw: &[u8]) -> Result<Cow<'_, [u8]>, CanonError> {
    match json::parse(raw) {
        Err(_) => Ok(Cow::Borrowed(raw)),
        Ok(mut v) => {
            if let JsValue::Object(o) = &mut v {
                o.remove("version");
            }
            Ok(Cow::Owned(json::jcs1(&v)?.into_bytes()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_worked_examples() {
        let t = |s: &str| {
            (
                String::from_utf8(legacy_hashed(s.as_bytes()).into_owned()).unwrap(),
                jcs1_hashed(s.as_bytes()).map(|b| String::from_utf8(b.into_owned()).unwrap()),
            )
        };
        assert_eq!(
            t(r#"{"version":"9","b":1,"a":{"d":[3,1,2],"c":null},"ä":true,"z":false}"#),
            (
                r#"{"b":1,"a":{"d":[3,1,2],"c":null},"ä":true,"z":false}"#.into(),
                Ok(r#"{"a":{"c":null,"d":[3,1,2]},"b":1,"z":false,"ä":true}"#.into())
            )
        );
        assert_eq!(
            t(r#"{"name":"x","version":"1","name":"y","k":1}"#),
            (
                r#"{"name":"y","k":1}"#.into(),
                Ok(r#"{"k":1,"name":"y"}"#.into())
            )
        );
        assert_eq!(
            t(r#"[{"version":1,"b":2,"a":1}]"#),
            (
                r#"[{"version":1,"b":2,"a":1}]"#.into(),
                Ok(r#"[{"a":1,"b":2,"version":1}]"#.into())
            )
        );
        assert_eq!(t("null\n"), ("null\n".into(), Ok("null".into())));
        assert_eq!(t("{not json"), ("{not json".into(), Ok("{not json".into())));
        assert_eq!(
            t("\u{feff}{}"),
            ("\u{feff}{}".into(), Ok("\u{feff}{}".into()))
        );
        assert_eq!(
            t(r#"{"version":"1","x":1e400}"#),
            (r#"{"x":null}"#.into(), Err(CanonError::NonFinite))
        );
        assert_eq!(
            classify("x.claude-plugin/plugin.json"),
            Some(ManifestKind::ClaudeManifest)
        );
        assert_eq!(classify("plugin.json"), Some(ManifestKind::RootManifest));
        assert_eq!(classify("a/plugin.json"), None);
        assert_eq!(classify(".cursor-plugin/plugin.json"), None);
    }
}
