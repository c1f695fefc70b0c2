//! Type coercions over JSON values, as the original's TypeScript reads its
//! input: `typeof` names, truthiness, `String(v)`, `Number(v)`, and V8's
//! TypeError for iterating what is not iterable.

use serde_json::Value;

use super::number;

/// JavaScript `typeof`-style name, for error messages.
pub fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) | Value::Object(_) => "object",
    }
}

/// A JSON scalar, borrowed: what the coercions read of a value that is not
/// an object or an array. Compact records of untrusted JSON
/// (`crate::cassette::Recorded`) are read through it without rebuilding a
/// `Value` for every read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    /// As a double (what every coercion reads of a number).
    Number(f64),
    String(&'a str),
}

impl<'a> Scalar<'a> {
    /// The scalar `v` is (`None` for an object or an array).
    pub fn of(v: &'a Value) -> Option<Scalar<'a>> {
        match v {
            Value::Null => Some(Scalar::Null),
            Value::Bool(b) => Some(Scalar::Bool(*b)),
            Value::Number(n) => Some(Scalar::Number(n.as_f64().unwrap_or(f64::NAN))),
            Value::String(s) => Some(Scalar::String(s)),
            Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// JavaScript truthiness.
    pub fn truthy(self) -> bool {
        match self {
            Scalar::Null => false,
            Scalar::Bool(b) => b,
            Scalar::Number(f) => f != 0.0 && !f.is_nan(),
            Scalar::String(s) => !s.is_empty(),
        }
    }

    /// JavaScript `Number(v)`.
    pub fn to_number(self) -> f64 {
        match self {
            Scalar::Null => 0.0,
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Number(f) => f,
            Scalar::String(s) => string_to_number(s),
        }
    }
}

/// JavaScript truthiness of a JSON value (absent is `undefined`: false;
/// an object or array is true).
pub fn truthy(v: Option<&Value>) -> bool {
    v.is_some_and(|v| Scalar::of(v).is_none_or(Scalar::truthy))
}

/// JavaScript `String(v)` for a JSON value.
pub fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number::of_json(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// JavaScript `Number(v)` (ToNumber) for an optional JSON value: absent is
/// NaN, null 0, a string is read as a JS numeric literal, an array through its
/// `String` form, an object NaN.
pub fn js_to_number(v: Option<&Value>) -> f64 {
    match v.map(|v| (v, Scalar::of(v))) {
        None => f64::NAN,
        Some((_, Some(scalar))) => scalar.to_number(),
        Some((a @ Value::Array(_), None)) => string_to_number(&js_string(a)),
        Some((_, None)) => f64::NAN,
    }
}

/// ECMAScript StringToNumber: surrounding white space ignored, empty is 0,
/// `Infinity`, `0x`/`0o`/`0b` integers, else a decimal literal (or NaN).
fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}');
    if t.is_empty() {
        return 0.0;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return f64::NAN;
            }
            return digits.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            });
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    // Rust also reads `inf`/`nan`/`infinity`, which JavaScript does not: only
    // digits, one sign, a point and an exponent are let through.
    if unsigned.is_empty()
        || !unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        || !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// The message of V8's TypeError for `for (const x of v)` over a value that
/// is not iterable: a boolean, a number, or an object (an array or a string
/// iterates, so callers never ask for those).
pub fn not_iterable_error(v: &Value) -> String {
    let what = match v {
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {}", number::of_json(n)),
        _ => "object".to_owned(),
    };
    format!("{what} is not iterable (cannot read property Symbol(Symbol.iterator))")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn to_number_follows_javascript() {
        let n = |v: Value| js_to_number(Some(&v));
        assert_eq!(js_to_number(None).to_bits(), f64::NAN.to_bits());
        assert_eq!(n(json!(null)), 0.0);
        assert_eq!(n(json!(true)), 1.0);
        assert_eq!(n(json!(12.5)), 12.5);
        assert_eq!(n(json!(" 42\n")), 42.0);
        assert_eq!(n(json!("")), 0.0);
        assert_eq!(n(json!("-1e3")), -1000.0);
        assert_eq!(n(json!(".5")), 0.5);
        assert_eq!(n(json!("0x1F")), 31.0);
        assert_eq!(n(json!("-Infinity")), f64::NEG_INFINITY);
        assert_eq!(n(json!([7])), 7.0);
        assert_eq!(n(json!([])), 0.0);
        for nan in [
            json!("inf"),
            json!("nan"),
            json!("1_0"),
            json!("-0x1"),
            json!("12px"),
            json!([1, 2]),
            json!({}),
        ] {
            assert!(n(nan.clone()).is_nan(), "{nan}");
        }
    }
}
