//! JSON helpers for `artifact_json`: deep equality (object key order
//! ignored, array order significant, numbers by value), dotted-path
//! resolution with the value / absent / unresolved distinction, and
//! `JSON.stringify`-style rendering for messages.

use serde_json::Value;

/// ECMAScript `Number::toString` of a JSON number (`1e-9`, not
/// `0.000000001`; `1` for `1.0`), as the original's messages print it.
pub use crate::evidence::parse::js_number;

/// `value` with every number re-spelt as JavaScript prints it after
/// `JSON.parse` (`1e-09` → `1e-9`, `1.0` → `1`): the original echoes a frozen
/// assertion from its parsed form, not from the cassette's text.
pub fn js_numbers(value: &Value) -> Value {
    match value {
        Value::Number(n) => js_number(n)
            .parse::<serde_json::Number>()
            .map_or_else(|_| value.clone(), Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(js_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), js_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `JSON.parse`'s (V8, Node 22) message for `text` that failed to parse, for
/// the failures whose V8 wording is derivable without V8's parser: an empty
/// document and a document whose first token cannot start a JSON value (a
/// text or Markdown file read as JSON). Other failures keep `fallback`.
pub fn v8_parse_error(text: &str, fallback: &str) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let is_ws = |u: u16| matches!(u, 0x20 | 0x09 | 0x0a | 0x0d);
    let Some(pos) = units.iter().position(|u| !is_ws(*u)) else {
        return "Unexpected end of JSON input".to_owned();
    };
    let first = char::from_u32(u32::from(units[pos]));
    // A `t`/`f`/`n` start must spell its literal: V8 reports the first unit
    // that departs from it (or the end of input).
    let literal = match first {
        Some('t') => Some("true"),
        Some('f') => Some("false"),
        Some('n') => Some("null"),
        _ => None,
    };
    let mut pos = pos;
    if let Some(word) = literal {
        let word: Vec<u16> = word.encode_utf16().collect();
        match word
            .iter()
            .enumerate()
            .find(|(i, w)| units.get(pos + i) != Some(w))
        {
            None => return fallback.to_owned(),
            Some((i, _)) if pos + i >= units.len() => {
                return "Unexpected end of JSON input".to_owned();
            }
            Some((i, _)) => pos += i,
        }
    } else if first.is_some_and(|c| matches!(c, '{' | '[' | '"' | '-' | '0'..='9')) {
        return fallback.to_owned();
    }
    let token = String::from_utf16_lossy(&units[pos..pos + 1]);
    // V8 quotes the whole source when it is short, else a window of 10 units
    // either side of the token, marking each cut with `...`.
    const CONTEXT: usize = 10;
    if units.len() < 2 * CONTEXT + 1 {
        return format!("Unexpected token '{token}', \"{text}\" is not valid JSON");
    }
    let start = pos.saturating_sub(CONTEXT);
    let end = (pos + CONTEXT).min(units.len());
    let window = String::from_utf16_lossy(&units[start..end]);
    let before = if start > 0 { "..." } else { "" };
    let after = if end < units.len() { "..." } else { "" };
    format!("Unexpected token '{token}', {before}\"{window}\"{after} is not valid JSON")
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
        Value::Number(n) => js_number(n),
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

    /// JSON.parse messages captured from cowork-harness 2.0.0 (Node 22).
    #[test]
    fn parse_errors_read_as_v8_reports_them() {
        assert_eq!(
            v8_parse_error("reel smoke: the recorder works\n", "x"),
            "Unexpected token 'r', \"reel smoke\"... is not valid JSON"
        );
        assert_eq!(
            v8_parse_error("hello", "x"),
            "Unexpected token 'h', \"hello\" is not valid JSON"
        );
        assert_eq!(v8_parse_error("   \n", "x"), "Unexpected end of JSON input");
        assert_eq!(
            v8_parse_error("            # hello world and more", "x"),
            "Unexpected token '#', ...\"          # hello wo\"... is not valid JSON"
        );
        assert_eq!(
            v8_parse_error("# Title\n\nSome text here", "x"),
            "Unexpected token '#', \"# Title\n\nS\"... is not valid JSON"
        );
        assert_eq!(v8_parse_error("{\"a\": }", "fallback"), "fallback");
        // a literal's first departing unit (example-pdf-skill's project/notes.txt)
        assert_eq!(
            v8_parse_error("fixture project file\n", "x"),
            "Unexpected token 'i', \"fixture pro\"... is not valid JSON"
        );
        assert_eq!(v8_parse_error("nul", "x"), "Unexpected end of JSON input");
        assert_eq!(v8_parse_error("true", "fallback"), "fallback");
    }

    #[test]
    fn numbers_are_respelt_as_javascript_prints_them() {
        let v: Value =
            serde_json::from_str(r#"{"a":1e-09,"b":[1.0,1E3,2.50],"c":"1e-09"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&js_numbers(&v)).unwrap(),
            r#"{"a":1e-9,"b":[1,1000,2.5],"c":"1e-09"}"#
        );
    }
}
