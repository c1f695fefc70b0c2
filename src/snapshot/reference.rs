//! A snapshot's content address, `v1:sha256:<64 lowercase hex>`, parsed
//! strictly: a ref is read from a cassette, which is untrusted, and names a
//! file in the store, so anything but the exact shape is refused with the
//! reason (never normalised: `V1:`, upper-case hex or a stray space would
//! each name another blob).

use std::fmt;

/// The only version this reel reads and writes.
pub const VERSION: &str = "v1";
/// The only digest algorithm of v1.
pub const ALGORITHM: &str = "sha256";

/// A parsed snapshot ref: the SHA-256 of the snapshot's canonical tar
/// stream (docs/snapshots.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ref {
    hex: String,
}

/// Why a string is not a snapshot ref.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("`{0}` is not a snapshot ref: expected `v1:sha256:<64 lowercase hex digits>`")]
    Shape(String),
    #[error(
        "`{found}` uses snapshot ref version `{version}`, which this reel does not read (it reads \
         `v1`); upgrade reel or re-record the cassette"
    )]
    UnknownVersion { found: String, version: String },
    #[error("`{found}` uses digest `{algorithm}`; a v1 snapshot ref is `v1:sha256:<hex>`")]
    UnknownAlgorithm { found: String, algorithm: String },
    #[error("`{found}`: the digest must be 64 lowercase hex digits ({why})")]
    Digest { found: String, why: String },
}

impl Ref {
    /// Parses `text` exactly (no trimming, no case folding).
    pub fn parse(text: &str) -> Result<Ref, RefError> {
        let shown = shown(text);
        let mut parts = text.splitn(3, ':');
        let (Some(version), Some(algorithm), Some(hex)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(RefError::Shape(shown));
        };
        if version != VERSION {
            let looks_versioned = version.len() > 1
                && version.starts_with('v')
                && version[1..].bytes().all(|b| b.is_ascii_digit());
            return Err(if looks_versioned {
                RefError::UnknownVersion {
                    found: shown,
                    version: version.to_owned(),
                }
            } else {
                RefError::Shape(shown)
            });
        }
        if algorithm != ALGORITHM {
            return Err(RefError::UnknownAlgorithm {
                found: shown,
                algorithm: algorithm.chars().take(32).collect(),
            });
        }
        let why = if hex.len() != 64 {
            Some(format!("found {} characters", hex.chars().count()))
        } else {
            hex.chars()
                .find(|c| !matches!(c, '0'..='9' | 'a'..='f'))
                .map(|c| format!("found `{}`", c.escape_default()))
        };
        match why {
            Some(why) => Err(RefError::Digest { found: shown, why }),
            None => Ok(Ref {
                hex: hex.to_owned(),
            }),
        }
    }

    /// The ref of a SHA-256 digest.
    pub fn of_digest(digest: &[u8; 32]) -> Ref {
        Ref {
            hex: hex::encode(digest),
        }
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{VERSION}:{ALGORITHM}:{}", self.hex)
    }
}

impl std::str::FromStr for Ref {
    type Err = RefError;
    fn from_str(s: &str) -> Result<Ref, RefError> {
        Ref::parse(s)
    }
}

/// A ref as an error shows it: at most 90 characters, escaped.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(90)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().count() > 90 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_well_formed_ref_round_trips() {
        let text = format!("v1:sha256:{HEX}");
        let r = Ref::parse(&text).unwrap();
        assert_eq!(r.to_string(), text);
        assert_eq!(r.hex(), HEX);
        assert_eq!(Ref::of_digest(&[0xab; 32]).to_string().len(), 10 + 64);
    }

    #[test]
    fn every_malformed_ref_is_refused_with_its_reason() {
        let cases = [
            (String::new(), "is not a snapshot ref"),
            ("sha256:abc".into(), "is not a snapshot ref"),
            (
                format!("v2:sha256:{HEX}"),
                "version `v2`, which this reel does not read",
            ),
            (format!("V1:sha256:{HEX}"), "is not a snapshot ref"),
            (format!("v1:sha512:{HEX}"), "uses digest `sha512`"),
            (format!("v1:sha256:{}", &HEX[1..]), "found 63 characters"),
            (format!("v1:sha256:{}", HEX.to_uppercase()), "found `A`"),
            (format!("v1:sha256:{HEX} "), "found 65 characters"),
            (format!("v1:sha256:../{}", &HEX[3..]), "found `.`"),
        ];
        for (text, want) in cases {
            let e = Ref::parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
