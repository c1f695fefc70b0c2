//! JSON helpers for `artifact_json` and scenario metrics: a file's document
//! parsed with V8's error wording, deep equality (object key order
//! ignored, array order significant, numbers by value), dotted-path
//! resolution with the value / absent / unresolved distinction, and
//! `JSON.stringify`-style rendering for messages.

use serde_json::Value;

use crate::js::number;

/// A file's bytes parsed as `JSON.parse` would (invalid UTF-8 read lossily,
/// as Node decodes it), or V8's wording of why not.
pub fn parse_document(bytes: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&text).map_err(|e| crate::js::json::v8_parse_error(&text, &e.to_string()))
}

/// Deep equality of parsed JSON values.
pub fn deep_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) => p == q,
            _ => x.to_string() == y.to_string(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_eq(v, w)))
        }
        _ => a == b,
    }
}

/// What a dotted path resolves to.
#[derive(Debug, Clone, PartialEq)]
pub enum DotResolve {
    /// A present value (possibly JSON null).
    Value(Value),
    /// The final key is missing from a resolved parent.
    Absent,
    /// An intermediate segment is missing or not an object; `at` names it.
    Unresolved { at: String },
}

/// Resolves `path` (`a.b.0.c`; `None`/empty = the whole document).
pub fn resolve_dot_path(doc: &Value, path: Option<&str>) -> DotResolve {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return DotResolve::Value(doc.clone());
    };
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = doc.clone();
    for (i, seg) in segs.iter().enumerate() {
        let last = i == segs.len() - 1;
        let child = match &cur {
            Value::Object(m) => m.get(*seg).cloned(),
            Value::Array(a) => {
                if *seg == "length" {
                    Some(Value::from(a.len()))
                } else {
                    canonical_index(seg).and_then(|n| a.get(n).cloned())
                }
            }
            _ => {
                let at = if i == 0 {
                    "(root)".to_owned()
                } else {
                    segs[..i].join(".")
                };
                return DotResolve::Unresolved { at };
            }
        };
        match (child, last) {
            (Some(v), true) => return DotResolve::Value(v),
            (None, true) => return DotResolve::Absent,
            (None, false) => {
                return DotResolve::Unresolved {
                    at: segs[..=i].join("."),
                };
            }
            (Some(v), false) => cur = v,
        }
    }
    DotResolve::Value(cur)
}

/// An array own-property index: canonical decimal without leading zeros.
fn canonical_index(seg: &str) -> Option<usize> {
    if seg == "0"
        || (!seg.starts_with('0') && !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()))
    {
        seg.parse().ok()
    } else {
        None
    }
}

/// `JSON.stringify(v)` (`None` = `undefined`), numbers in JavaScript form.
pub fn stringify(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(v) => stringify_value(v),
    }
}

fn stringify_value(v: &Value) -> String {
    match v {
        Value::Number(n) => number::of_json(n),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(stringify_value).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!(
                    "{}:{}",
                    serde_json::to_string(k).unwrap_or_default(),
                    stringify_value(v)
                ))
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_equality_ignores_key_order_only() {
        assert!(deep_eq(
            &json!({"a":1,"b":[1,2]}),
            &json!({"b":[1,2],"a":1})
        ));
        assert!(!deep_eq(&json!([1, 2]), &json!([2, 1])));
        let one: Value = serde_json::from_str("1.0").unwrap();
        assert!(deep_eq(&one, &json!(1)));
        assert!(!deep_eq(&json!(null), &json!(0)));
    }

    #[test]
    fn dot_paths_distinguish_absent_from_unresolved() {
        let d = json!({"a":{"b":null},"items":[{"id":7}]});
        assert_eq!(
            resolve_dot_path(&d, Some("a.b")),
            DotResolve::Value(Value::Null)
        );
        assert_eq!(resolve_dot_path(&d, Some("a.c")), DotResolve::Absent);
        assert_eq!(
            resolve_dot_path(&d, Some("x.c")),
            DotResolve::Unresolved { at: "x".into() }
        );
        assert_eq!(
            resolve_dot_path(&d, Some("a.b.c")),
            DotResolve::Unresolved { at: "a.b".into() }
        );
        assert_eq!(
            resolve_dot_path(&d, Some("items.0.id")),
            DotResolve::Value(json!(7))
        );
        assert_eq!(
            resolve_dot_path(&json!(3), Some("a")),
            DotResolve::Unresolved {
                at: "(root)".into()
            }
        );
    }

    #[test]
    fn stringify_prints_js_numbers() {
        let v: Value = serde_json::from_str(r#"{"a":1.0,"b":[2.5,"x"]}"#).unwrap();
        assert_eq!(stringify(Some(&v)), r#"{"a":1,"b":[2.5,"x"]}"#);
        assert_eq!(stringify(None), "undefined");
        // exponent forms as JavaScript prints them (max_cost_usd: 1e-9 parity)
        let v: Value = serde_json::from_str(r#"[1e-9,1e21,0.000001,123e-20]"#).unwrap();
        assert_eq!(stringify(Some(&v)), "[1e-9,1e+21,0.000001,1.23e-18]");
    }
}
