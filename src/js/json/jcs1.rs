//! `jcs1`: the canonical form (keys in UTF-16 code-unit order, no
//! whitespace, `Number::toString` numbers, `JSON.stringify` strings).

use super::JsValue;
use super::stringify::{write_str, write_string};
use crate::js::number;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonError {
    /// `jcs1` refuses NaN/±Infinity (upstream `JcsCanonicalizationError`).
    #[error("cannot canonicalize a non-finite number")]
    NonFinite,
}

/// The `jcs1` canonical form of `v`.
pub fn jcs1(v: &JsValue) -> Result<String, CanonError> {
    let mut out = String::new();
    write_jcs1(v, &mut out)?;
    Ok(out)
}

/// `jcs1` of a `serde_json::Value`.
///
/// Same bytes as `jcs1(&from_serde(v))`, written straight from the serde
/// value: a `serde_json::Value` holds valid UTF-8 with no duplicate keys and
/// no lone surrogates, so the UTF-16 detour only matters for the key order,
/// and that is compared on the fly. Replay canonicalises every recorded tool
/// input, so skipping the conversion matters (a property test pins the two
/// paths together).
pub fn jcs1_serde(v: &serde_json::Value) -> Result<String, CanonError> {
    let mut out = String::new();
    write_jcs1_serde(v, &mut out)?;
    Ok(out)
}

/// [`jcs1_serde`], appended to `out` (a buffer its caller reuses: a replay
/// digests every tool input). On an error, `out` is as it was.
pub fn jcs1_serde_into(v: &serde_json::Value, out: &mut String) -> Result<(), CanonError> {
    let start = out.len();
    write_jcs1_serde(v, out).inspect_err(|_| out.truncate(start))
}

fn write_jcs1_serde(v: &serde_json::Value, out: &mut String) -> Result<(), CanonError> {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            // Same double as `from_serde` reads.
            let d = n.to_string().parse::<f64>().unwrap_or(f64::NAN);
            if !number::write(d, out) {
                return Err(CanonError::NonFinite);
            }
        }
        Value::String(s) => write_str(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs1_serde(item, out)?;
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut sorted: Vec<(&String, &Value)> = m.iter().collect();
            // JS default sort: by UTF-16 code unit, which differs from UTF-8
            // byte order only between astral and U+E000..U+FFFF characters.
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (k, val)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_jcs1_serde(val, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn write_jcs1(v: &JsValue, out: &mut String) -> Result<(), CanonError> {
    match v {
        JsValue::Null => out.push_str("null"),
        JsValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsValue::Number(n) => {
            if !number::write(*n, out) {
                return Err(CanonError::NonFinite);
            }
        }
        JsValue::String(s) => write_string(s, out),
        JsValue::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs1(item, out)?;
            }
            out.push(']');
        }
        JsValue::Object(o) => {
            let mut sorted: Vec<&(Vec<u16>, JsValue)> = o.entries.iter().collect();
            // Vec<u16> orders lexicographically by code unit: JS default sort.
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (i, (k, val)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_jcs1(val, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}
