//! Number text: ECMAScript `Number::toString` (radix 10, ECMA-262
//! §6.1.6.1.20) and the forms built on it — `String(n)`, `n.toFixed(1)`, the
//! number `JSON.stringify` writes. Every number reel prints the JavaScript way
//! is spelt by [`write()`], on `ryu-js`'s shortest round-trip digits (an exact
//! tie between two shortest candidates goes to the even digit, as the spec
//! asks: RFC 8785's `1424953923781206.25` is `1424953923781206.2`).
//!
//! Plain notation for decimal exponents in [-6, 21), else `d.ddde±x`; `-0`
//! is `0`; NaN and ±Infinity have no `toString` digits here ([`write()`] refuses
//! them; [`string`] spells them as `String(n)` does, [`json_value`] as the
//! `null` of `JSON.stringify`).

use std::fmt::Write as _;

use serde::Serializer;
use serde_json::Value;

/// Appends `Number::prototype.toString(n)` to `out`; `false` (nothing
/// written) for NaN/±Infinity. The one formatter: everything below calls it.
pub fn write(n: f64, out: &mut String) -> bool {
    if !n.is_finite() {
        return false;
    }
    // Safe integers (counts, ids, timestamps: most numbers in a cassette)
    // print as themselves, without the digit search; -0 prints as 0.
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        let _ = write!(out, "{}", n as i64);
        return true;
    }
    out.push_str(ryu_js::Buffer::new().format_finite(n));
    true
}

/// `Number::prototype.toString(n)`; `None` for NaN/±Infinity.
pub fn to_string(n: f64) -> Option<String> {
    let mut out = String::new();
    write(n, &mut out).then_some(out)
}

/// JavaScript `String(n)`: [`to_string`], or `NaN` / `Infinity` /
/// `-Infinity`.
pub fn string(n: f64) -> String {
    to_string(n).unwrap_or_else(|| {
        if n.is_nan() {
            "NaN".into()
        } else if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    })
}

/// `String(n)` of a JSON number as `JSON.parse` reads it (a double): `1` for
/// `1.0`, `1e-9` for `0.000000001`, `Infinity` for `1e400`.
pub fn of_json(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) => string(f),
        None => n.to_string(),
    }
}

/// JavaScript `n.toFixed(1)` (a tie rounds away from zero, where Rust's
/// formatting rounds it to even: 1.25 → "1.3").
pub fn to_fixed_1(n: f64) -> String {
    if !n.is_finite() || n.abs() >= 1e21 {
        return string(n);
    }
    let tenths = n.abs() * 10.0;
    // A tie is exactly k + 0.5 tenths, i.e. a multiple of 1/20 that is
    // binary-exact, which only quarters are; for them `* 10` is exact too.
    let rounded = if (n.abs() * 4.0).fract() == 0.0 && tenths.fract() == 0.5 {
        (tenths.floor() + 1.0) / 10.0
    } else {
        n.abs()
    };
    let s = format!("{rounded:.1}");
    // JavaScript keeps the sign even when the digits round to zero.
    if n < 0.0 { format!("-{s}") } else { s }
}

/// A JS number as the JSON value `JSON.stringify` writes: `10`, not `10.0`;
/// `null` for NaN/±Infinity.
pub fn json_value(n: f64) -> Value {
    // Safe integers (nearly every duration and count) print as themselves.
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
        return Value::from(n as i64); // -0 prints as 0, as in JavaScript
    }
    to_string(n)
        .and_then(|s| s.parse::<serde_json::Number>().ok())
        .map_or(Value::Null, Value::Number)
}

/// A JSON value as `JSON.stringify(JSON.parse(v))` writes it at the top level:
/// a number is re-formatted the JavaScript way (`1.0` → `1`); anything else
/// is kept as recorded.
pub fn reformat(v: &Value) -> Value {
    match v {
        // An integer written plainly is already in JavaScript's form.
        Value::Number(n)
            if n.as_i64()
                .is_some_and(|i| i != 0 && i.unsigned_abs() < 1 << 53) =>
        {
            v.clone()
        }
        Value::Number(n) => json_value(n.as_f64().unwrap_or(f64::NAN)),
        other => other.clone(),
    }
}

/// `value` with every number re-spelt as JavaScript prints it after
/// `JSON.parse` (`1e-09` → `1e-9`, `1.0` → `1`): the original echoes a frozen
/// assertion from its parsed form, not from the cassette's text. A number
/// with no JSON spelling (`1e400`) is kept as written.
pub fn respell(value: &Value) -> Value {
    match value {
        Value::Number(n) => of_json(n)
            .parse::<serde_json::Number>()
            .map_or_else(|_| value.clone(), Value::Number),
        Value::Array(items) => Value::Array(items.iter().map(respell).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), respell(v))).collect())
        }
        other => other.clone(),
    }
}

/// `#[serde(serialize_with)]` for an f64 written as `JSON.stringify` would
/// ([`json_value`]): `12`, not `12.0`; a non-finite number as `null`.
pub fn serialize<S: Serializer>(n: &f64, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&json_value(*n), s)
}

/// [`serialize`] of an optional f64 (`None` is `null`).
pub fn serialize_opt<S: Serializer>(n: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) => serialize(n, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn es(n: f64) -> Option<String> {
        to_string(n)
    }

    #[test]
    fn rfc8785_number_samples() {
        // RFC 8785 Appendix B (IEEE hex → expected) where it agrees with ES.
        let cases: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
        ];
        for (bits, want) in cases {
            assert_eq!(es(f64::from_bits(*bits)).unwrap(), *want, "{bits:x}");
        }
        assert_eq!(es(f64::NAN), None);
        assert_eq!(es(f64::INFINITY), None);
    }

    #[test]
    fn safe_integers_print_as_themselves() {
        for (n, want) in [
            (9_007_199_254_740_991.0, "9007199254740991"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (-42.0, "-42"),
            (1e15, "1000000000000000"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
        ] {
            assert_eq!(es(n).as_deref(), Some(want), "{n}");
        }
    }

    #[test]
    fn js_number_matches_number_to_string() {
        for (v, want) in [
            ("5", "5"),
            ("1.5", "1.5"),
            ("-2", "-2"),
            ("0", "0"),
            ("-0.0", "0"),
            ("1e21", "1e+21"),
            ("123456789012345678901234", "1.2345678901234569e+23"),
            ("1e20", "100000000000000000000"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("1.25e-7", "1.25e-7"),
            ("0.1", "0.1"),
            ("100.5", "100.5"),
        ] {
            let n: serde_json::Number = serde_json::from_str(v).unwrap();
            assert_eq!(of_json(&n), want, "{v}");
        }
        assert_eq!(string(f64::NAN), "NaN");
        assert_eq!(string(f64::NEG_INFINITY), "-Infinity");
    }

    #[test]
    fn numbers_are_written_the_javascript_way() {
        assert_eq!(json_value(10.0).to_string(), "10");
        assert_eq!(json_value(1.5).to_string(), "1.5");
        assert_eq!(json_value(f64::NAN), Value::Null);
        assert_eq!(json_value(f64::INFINITY), Value::Null);
        assert_eq!(reformat(&json!(3.0)).to_string(), "3");
        assert_eq!(reformat(&json!("s")), json!("s"));
    }

    #[test]
    fn numbers_are_respelt_as_javascript_prints_them() {
        let v: Value =
            serde_json::from_str(r#"{"a":1e-09,"b":[1.0,1E3,2.50],"c":"1e-09"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&respell(&v)).unwrap(),
            r#"{"a":1e-9,"b":[1,1000,2.5],"c":"1e-09"}"#
        );
    }

    #[test]
    fn to_fixed_rounds_ties_away_from_zero_like_javascript() {
        assert_eq!(to_fixed_1(1.25), "1.3");
        assert_eq!(to_fixed_1(0.75), "0.8");
        assert_eq!(to_fixed_1(0.25), "0.3");
        assert_eq!(to_fixed_1(12.0 / 11.0), "1.1");
        assert_eq!(to_fixed_1(1.5), "1.5");
        assert_eq!(to_fixed_1(2.0 / 3.0), "0.7");
        assert_eq!(to_fixed_1(0.0), "0.0");
        assert_eq!(to_fixed_1(-1.25), "-1.3");
        assert_eq!(to_fixed_1(-0.04), "-0.0");
        // 0.15 is not a tie in binary (slightly below): JavaScript says 0.1.
        assert_eq!(to_fixed_1(0.15), "0.1");
        // 0.35 is slightly below too: 0.3 in JavaScript.
        assert_eq!(to_fixed_1(0.35), "0.3");
    }

    /// `ryu-js` against an independent reference: Rust's shortest
    /// round-trip digits (`{:e}`) laid out by the spec's rules, over seeded
    /// random doubles and short decimals. Where the two differ, the double
    /// must be an exact tie between two shortest digit strings (Rust may take
    /// the odd one) and ours the even one.
    #[test]
    fn agrees_with_the_spec_layout_of_rusts_shortest_digits() {
        fn reference(n: f64) -> String {
            if n == 0.0 {
                return "0".into();
            }
            let sci = format!("{:e}", n.abs());
            let (mantissa, exp) = sci.split_once('e').unwrap();
            let exp: i32 = exp.parse().unwrap();
            let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
            let k = digits.len() as i32;
            let pos = exp + 1;
            let body = if k <= pos && pos <= 21 {
                format!("{digits}{}", "0".repeat((pos - k) as usize))
            } else if 0 < pos && pos <= 21 {
                let (a, b) = digits.split_at(pos as usize);
                format!("{a}.{b}")
            } else if -6 < pos && pos <= 0 {
                format!("0.{}{digits}", "0".repeat((-pos) as usize))
            } else {
                let e = pos - 1;
                let sign = if e < 0 { '-' } else { '+' };
                let (d1, rest) = digits.split_at(1);
                let dot = if rest.is_empty() { "" } else { "." };
                format!("{d1}{dot}{rest}e{sign}{}", e.abs())
            };
            format!("{}{body}", if n < 0.0 { "-" } else { "" })
        }
        /// The significant digits of a number's text.
        fn significant(text: &str) -> String {
            let mantissa = text.split('e').next().unwrap();
            let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            digits
                .trim_start_matches('0')
                .trim_end_matches('0')
                .to_owned()
        }
        /// `ours` is the even one of two shortest candidates `n` lies exactly
        /// between: n's exact expansion is one digit longer, ending in 5.
        fn even_tie(n: f64, ours: &str, theirs: &str) -> bool {
            let exact = significant(&format!("{:.800e}", n.abs()));
            let (o, t) = (significant(ours), significant(theirs));
            ours.parse::<f64>().ok() == Some(n)
                && o.len() == t.len()
                && exact.len() == o.len() + 1
                && exact.ends_with('5')
                && o.bytes().last().is_some_and(|d| d % 2 == 0)
        }
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut mismatches, mut ties) = (vec![], 0);
        for _ in 0..20_000 {
            let bits = f64::from_bits(next());
            let short: f64 = format!("{}e{}", next() % 100_000, (next() % 60) as i32 - 30)
                .parse()
                .unwrap();
            for n in [bits, short, -short] {
                if !n.is_finite() {
                    continue;
                }
                let (ours, theirs) = (es(n).unwrap(), reference(n));
                if ours == theirs {
                    continue;
                }
                if even_tie(n, &ours, &theirs) {
                    ties += 1;
                } else {
                    mismatches.push(format!("{:x}: {ours} vs {theirs}", n.to_bits()));
                }
            }
        }
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert!(ties > 0, "the sample holds exact ties");
    }
}
