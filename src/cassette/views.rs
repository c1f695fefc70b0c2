//! Typed views of the v12 cassette fields (cowork-harness
//! `schema/cassette.v12.json`). These are *views*: the document in
//! [`super::Cassette::doc`] stays the source of truth, so unknown fields are
//! never lost.

use serde::{Deserialize, Serialize};

/// `fingerprint`: the staleness tripwire.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FingerprintRecord {
    /// Agent/app version the run was recorded against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// `"jcs1"` on v12; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_assets_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sig: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_sources: Option<Vec<String>>,
    /// `"git"` or `"raw"` (absent ⇒ raw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `"skill"` when agent scoping was on (absent ⇒ off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_scope: Option<String>,
    /// `[[path, sha256], ...]` in walk order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sigs: Option<Vec<(String, String)>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sigs_omitted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_scope: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_hash: Option<String>,
    /// Gate-option label provenance (kept as JSON; checked by staleness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_provenance: Option<serde_json::Value>,
}

/// One `artifacts[]` entry of the post-run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestEntry {
    /// Work-root-relative path (untrusted: check before joining).
    pub path: String,
    #[serde(default)]
    pub bytes: u64,
    /// Hex sha256 of the file; `""` for links and unreadable files.
    #[serde(default)]
    pub sha256: String,
    /// Inlined body (UTF-8 text, or base64 when `encoding == Base64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<BodyEncoding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation_reason: Option<TruncationReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_kind: Option<LinkKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyEncoding {
    Utf8,
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncationReason {
    Size,
    Readonly,
    Unreadable,
    Input,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Symlink,
    Hardlink,
}

/// `preRunOrigin`: how trustworthy the pre-run baseline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreRunOrigin {
    LocalWalk,
    RemoteUnavailable,
    LocalUnreadable,
}

/// `folderPrefixMap[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FolderPrefix {
    pub from: String,
    pub mount: String,
}

/// `environment`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_binary_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_image: Option<serde_json::Value>,
}

/// `authoring`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authoring {
    #[serde(default)]
    pub non_deterministic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}
