//! JavaScript semantics the evidence readers follow (the original is
//! TypeScript): `typeof` names, truthiness, `String(v)`, `Number(v)`,
//! `Number::toString`, `JSON.stringify` number forms, UTF-16 lengths and
//! slices.

use serde_json::Value;

/// JavaScript `typeof`-style name, for error messages.
pub(super) fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) | Value::Object(_) => "object",
    }
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// JavaScript `String(v)` for a JSON value.
pub fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(n),
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

/// JavaScript `Number::toString` (ECMAScript 6.1.6.1.20): the shortest
/// round-trip digits, plain notation for exponents in [-6, 21), else
/// `d.ddde±x`.
pub fn js_number(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) => crate::canon::js_string_of_number(f),
        None => n.to_string(),
    }
}

/// JavaScript `Number(v)` (ToNumber) for an optional JSON value: absent is
/// NaN, null 0, a string is read as a JS numeric literal, an array through its
/// `String` form, an object NaN.
pub fn js_to_number(v: Option<&Value>) -> f64 {
    match v {
        None => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => string_to_number(s),
        Some(a @ Value::Array(_)) => string_to_number(&js_string(a)),
        Some(Value::Object(_)) => f64::NAN,
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

/// A JS number as the JSON value `JSON.stringify` writes: ECMAScript number
/// formatting (`10`, not `10.0`), and `null` for NaN/±Infinity.
pub fn js_number_value(n: f64) -> Value {
    // Safe integers (nearly every duration and count) print as themselves.
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
        return Value::from(n as i64); // -0 prints as 0, as in JavaScript
    }
    crate::canon::es_number(n)
        .and_then(|s| s.parse::<serde_json::Number>().ok())
        .map_or(Value::Null, Value::Number)
}

/// A JSON value as `JSON.stringify(JSON.parse(v))` writes it at the top level:
/// a number is re-formatted the JavaScript way (`1.0` → `1`); anything else
/// is kept as recorded.
pub fn js_reformat(v: &Value) -> Value {
    match v {
        // An integer written plainly is already in JavaScript's form.
        Value::Number(n)
            if n.as_i64()
                .is_some_and(|i| i != 0 && i.unsigned_abs() < 1 << 53) =>
        {
            v.clone()
        }
        Value::Number(n) => js_number_value(n.as_f64().unwrap_or(f64::NAN)),
        other => other.clone(),
    }
}

/// Slices `s` to at most `max` UTF-16 code units (JS `String.prototype.slice`).
pub fn slice_utf16(s: &str, max: usize) -> &str {
    // A UTF-8 string never has more UTF-16 units than bytes.
    if s.len() <= max {
        return s;
    }
    // ASCII is one unit per byte (and every byte is a char boundary).
    if s.as_bytes()[..max].is_ascii() {
        return &s[..max];
    }
    let mut units = 0usize;
    for (idx, ch) in s.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &s[..idx];
        }
    }
    s
}

/// Length in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}
