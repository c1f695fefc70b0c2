//! `artifact_json.schema`: a JSON Schema (draft 2020-12) the value at `path`
//! must match (cowork-harness `src/json-schema.ts`, 4.x; behaviour from its
//! `test/artifact-json-schema.test.ts`).
//!
//! Hermetic: nothing is fetched (`$ref` only into the schema itself, `$id`
//! refused so no schema can be resolved from another), and every keyword
//! that would validate nothing (`format`, the content annotations) or that
//! the original refuses (`$dynamicRef` and friends, `nullable`, another
//! dialect's `$schema`) is a load error naming where it is. The original
//! compiles with ajv in strict mode; the strict rules a verdict depends on
//! (an unknown keyword, a type-specific keyword without its `type`, the
//! draft-07 list form of `items`) are checked here by a walk of our own,
//! because the `jsonschema` crate that validates has no strict mode.

use std::sync::{Mutex, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, ValidationError, Validator};
use serde_json::{Map, Value};

use super::json::stringify;
use crate::js::utf16;

/// The only `$schema` accepted: the dialect the validator implements.
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Errors shown per failing value, and the longest one (UTF-16 units).
const MAX_ERRORS: usize = 5;
const MAX_ERROR_UNITS: usize = 240;
/// Deeper schemas are refused before they are compiled.
const MAX_DEPTH: usize = 64;

/// Map of names to subschemas: the values are walked, the names never read as keywords.
const NAMED_SUBSCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
const SUBSCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
const SUBSCHEMA_ONE: &[&str] = &[
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Data, never walked: a `format` inside an enum value is not a keyword.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];
const DYNAMIC: &[&str] = &[
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
];
const ANNOTATION_ONLY: &[&str] = &["contentSchema", "contentMediaType", "contentEncoding"];
/// Keywords that describe, never constrain.
const NON_VALIDATING: &[&str] = &[
    "title",
    "description",
    "$comment",
    "$schema",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
    "$vocabulary",
];
/// Every other keyword draft 2020-12 defines (an unknown one is a typo).
const OTHER_KNOWN: &[&str] = &[
    "$ref",
    "$anchor",
    "type",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "dependencies",
];
/// Keywords that apply to one JSON type only (and pass on any other).
const TYPED: &[(&str, &[&str])] = &[
    (
        "object",
        &[
            "required",
            "properties",
            "patternProperties",
            "additionalProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        ],
    ),
    (
        "array",
        &[
            "items",
            "prefixItems",
            "contains",
            "minItems",
            "maxItems",
            "uniqueItems",
            "minContains",
            "maxContains",
            "unevaluatedItems",
        ],
    ),
    ("string", &["minLength", "maxLength", "pattern"]),
    (
        "number",
        &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
    ),
];
/// Applicators whose subschemas describe the same value (their types add to the parent's).
const SAME_VALUE: &[&str] = &["allOf", "anyOf", "oneOf", "not", "if", "then", "else"];

fn escape_pointer(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// Why `schema` cannot be used, or `None`: the load-time check and the
/// evaluator ask this one function.
pub fn schema_problem(schema: &Value) -> Option<String> {
    let Some(root) = schema.as_object() else {
        return Some("the schema must be a JSON object".into());
    };
    if root.is_empty() {
        return Some("an empty schema matches anything, so it checks nothing".into());
    }
    if root.keys().all(|k| NON_VALIDATING.contains(&k.as_str())) {
        let keys: Vec<&str> = root.keys().map(String::as_str).collect();
        return Some(format!(
            "the schema's root has no validating keyword (only {}), so it checks nothing: add \
                one, e.g. `type`, or `$ref: \"#/$defs/<name>\"`",
            keys.join(", ")
        ));
    }
    if let Some(p) = walk_problem(schema, "#", 0, &[]) {
        return Some(p);
    }
    compiled(schema).err()
}

/// The subschemas of `node` as (keyword, pointer, subschema, same value?).
fn children<'v>(node: &'v Map<String, Value>, at: &str) -> Vec<(&'v str, String, &'v Value)> {
    let mut out = Vec::new();
    for (k, v) in node {
        let here = format!("{at}/{}", escape_pointer(k));
        let k = k.as_str();
        let named = NAMED_SUBSCHEMAS.contains(&k) || k == "dependencies";
        match v {
            Value::Object(m) if named => {
                for (name, sub) in m {
                    out.push((k, format!("{here}/{}", escape_pointer(name)), sub));
                }
            }
            Value::Array(items) if SUBSCHEMA_ARRAYS.contains(&k) => {
                for (i, sub) in items.iter().enumerate() {
                    out.push((k, format!("{here}/{i}"), sub));
                }
            }
            _ if SUBSCHEMA_ONE.contains(&k) => out.push((k, here, v)),
            _ => {}
        }
    }
    out
}

/// A keyword refused where it stands, with its JSON pointer. `inherited`:
/// the types an enclosing same-value applicator already names.
fn walk_problem(node: &Value, at: &str, depth: usize, inherited: &[String]) -> Option<String> {
    let m = node.as_object()?;
    if depth >= MAX_DEPTH {
        return Some(format!(
            "the schema is deeper than {MAX_DEPTH} levels at {at}"
        ));
    }
    for (k, v) in m {
        if let Some(p) = keyword_problem(k, v, at) {
            return Some(p);
        }
    }
    let mut types: Vec<String> = inherited.to_vec();
    match m.get("type") {
        Some(Value::String(t)) => types.push(t.clone()),
        Some(Value::Array(ts)) => {
            types.extend(ts.iter().filter_map(Value::as_str).map(String::from))
        }
        _ => {}
    }
    if let Some(p) = missing_type(m, at, &types) {
        return Some(p);
    }
    for (k, here, sub) in children(m, at) {
        let pass: &[String] = if SAME_VALUE.contains(&k) { &types } else { &[] };
        if let Some(p) = walk_problem(sub, &here, depth + 1, pass) {
            return Some(p);
        }
    }
    None
}

fn keyword_problem(k: &str, v: &Value, at: &str) -> Option<String> {
    if DATA_KEYWORDS.contains(&k) {
        return None;
    }
    let json = |v: &Value| stringify(Some(v));
    Some(match k {
        "format" => format!(
            "`format` ({}) at {at} is not supported (no format is validated, so it would check \
                nothing): drop it, or use `pattern`",
            echo(&json(v))
        ),
        "$id" => format!(
            "`$id` at {at} is not supported: a schema here is self-contained (use local `$defs` \
                and `#/$defs/…` refs)"
        ),
        "nullable" => format!(
            "`nullable` at {at} is not JSON Schema (it is OpenAPI's): use `type: [<type>, \"null\"]`"
        ),
        "$schema"
            if v.as_str() != Some(SCHEMA_DIALECT)
                && v.as_str() != Some(&format!("{SCHEMA_DIALECT}#")) =>
        {
            format!(
                "`$schema` at {at} must be {SCHEMA_DIALECT} (draft 2020-12, the only dialect \
                    validated), or be left out"
            )
        }
        "$ref" if !v.as_str().is_some_and(|r| r.starts_with('#')) => format!(
            "`$ref` {} at {at} is not a local reference: only `#…` refs into this schema are \
                resolved (nothing is fetched)",
            echo(&json(v))
        ),
        _ if DYNAMIC.contains(&k) => {
            format!("`{k}` at {at} is not supported (use `$ref` to a local `#/$defs/…`)")
        }
        _ if ANNOTATION_ONLY.contains(&k) => format!(
            "`{k}` at {at} is not supported: it is an annotation in draft 2020-12 and validates \
                nothing"
        ),
        "items" if v.is_array() => "`items` takes one schema in draft 2020-12 (the list form is \
            draft-07): use `prefixItems` for a tuple"
            .into(),
        _ if !known(k) => format!("unknown keyword: \"{}\" at {at}", echo(k)),
        _ => return None,
    })
}

fn known(k: &str) -> bool {
    [
        NAMED_SUBSCHEMAS,
        SUBSCHEMA_ARRAYS,
        SUBSCHEMA_ONE,
        DATA_KEYWORDS,
        NON_VALIDATING,
        OTHER_KNOWN,
    ]
    .iter()
    .any(|list| list.contains(&k))
}

/// A keyword that checks one type, at a level that never says the value has
/// it: on any other value it passes, so the check would be vacuous.
fn missing_type(m: &Map<String, Value>, at: &str, types: &[String]) -> Option<String> {
    for (ty, keywords) in TYPED {
        let has = |t: &str| types.iter().any(|x| x == t);
        if has(ty) || (*ty == "number" && has("integer")) {
            continue;
        }
        if let Some(k) = keywords.iter().find(|k| m.contains_key(**k)) {
            let article = if ty.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            return Some(format!(
                "`{k}` at {at} applies only to {article} {ty}, and passes on anything else: add \
                    `type: {ty}` (or the intended type) at {at}"
            ));
        }
    }
    None
}

/// The longest piece of a schema a load error quotes (UTF-16 units): a
/// schema file may hold anything, a pasted token among it, and an error
/// message travels to logs and CI annotations.
const MAX_ECHO_UNITS: usize = 40;

/// `text` as a load error quotes it: whole when short (a keyword, a
/// `format` name, a ref), else its head and `…`.
fn echo(text: &str) -> String {
    if utf16::len(text) > MAX_ECHO_UNITS {
        format!("{}…", utf16::slice(text, MAX_ECHO_UNITS - 1))
    } else {
        text.to_owned()
    }
}

/// Why the schema does not compile: where, and the validator's reason with
/// the offending value itself left out (it names the value as "the value").
fn invalid_schema(e: &ValidationError<'_>) -> String {
    let reason = e.to_string().replace(&e.instance.to_string(), "the value");
    let at = format!("#{}", e.instance_path.as_str());
    let reason = if utf16::len(&reason) > MAX_ERROR_UNITS {
        format!("{}…", utf16::slice(&reason, MAX_ERROR_UNITS - 1))
    } else {
        reason
    };
    format!("schema is invalid at {at}: {reason}")
}

/// Compiled validators by schema text: a batch replays the same schema over
/// many files and cassettes.
fn compiled(schema: &Value) -> Result<std::sync::Arc<Validator>, String> {
    type Cache = Mutex<Vec<(String, Result<std::sync::Arc<Validator>, String>)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = stringify(Some(schema));
    let cache = CACHE.get_or_init(Cache::default);
    if let Ok(c) = cache.lock()
        && let Some((_, hit)) = c.iter().find(|(k, _)| *k == key)
    {
        return hit.clone();
    }
    let built = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(false)
        .build(schema)
        .map(std::sync::Arc::new)
        .map_err(|e| invalid_schema(&e));
    if let Ok(mut c) = cache.lock() {
        // Bounded: a hostile corpus of distinct schemas cannot grow it without end.
        if c.len() >= 256 {
            c.clear();
        }
        c.push((key, built.clone()));
    }
    built
}

/// Why a value fails `schema`: the first errors (each cut to 240 UTF-16
/// units) and how many more there were.
#[derive(Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The schema itself cannot be used.
    Problem(String),
    /// The value does not match.
    Errors { shown: Vec<String>, more: usize },
}

/// Validates `value` against `schema` (checked first, as the original's
/// evaluator does for a hand-built assertion).
pub fn validate(schema: &Value, value: &Value) -> Result<(), Mismatch> {
    if let Some(p) = schema_problem(schema) {
        return Err(Mismatch::Problem(p));
    }
    let validator = compiled(schema).map_err(Mismatch::Problem)?;
    let all: Vec<String> = validator
        .iter_errors(value)
        .flat_map(|e| describe(&e))
        .collect();
    if all.is_empty() {
        return Ok(());
    }
    let shown = all
        .iter()
        .take(MAX_ERRORS)
        .map(|e| {
            if utf16::len(e) > MAX_ERROR_UNITS {
                format!("{}…", utf16::slice(e, MAX_ERROR_UNITS - 1))
            } else {
                e.clone()
            }
        })
        .collect();
    Err(Mismatch::Errors {
        shown,
        more: all.len().saturating_sub(MAX_ERRORS),
    })
}

/// One validation error in the original's (ajv's) words: where, what, and
/// its parameters; an enum's or a const's allowed values are never echoed.
fn describe(e: &ValidationError<'_>) -> Vec<String> {
    let at = e.instance_path.to_string();
    let at = if at.is_empty() {
        "(root)".to_owned()
    } else {
        at
    };
    if let ValidationErrorKind::AdditionalProperties { unexpected } = &e.kind {
        return unexpected
            .iter()
            .map(|p| {
                format!(
                    "{at} must NOT have additional properties (additionalProperty: {})",
                    stringify(Some(&Value::String(p.clone())))
                )
            })
            .collect();
    }
    let (message, params) = message_and_params(e);
    let params = if params.is_empty() {
        String::new()
    } else {
        format!(" ({params})")
    };
    vec![format!("{at} {message}{params}")]
}

/// Ajv's message and params for one failed keyword (the additional
/// properties aside: one line per property).
fn message_and_params(e: &ValidationError<'_>) -> (String, String) {
    let json = |v: &Value| stringify(Some(v));
    let limit = |cmp: &str, l: &Value| {
        (
            format!("must be {cmp} {}", json(l)),
            format!("comparison: \"{cmp}\", limit: {}", json(l)),
        )
    };
    let count = |word: &str, n: u64, what: &str| {
        (
            format!("must NOT have {word} than {n} {what}"),
            format!("limit: {n}"),
        )
    };
    match &e.kind {
        ValidationErrorKind::Type { kind } => {
            let names = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(ts) => ts
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            (format!("must be {names}"), format!("type: \"{names}\""))
        }
        ValidationErrorKind::Minimum { limit: l } => limit(">=", l),
        ValidationErrorKind::Maximum { limit: l } => limit("<=", l),
        ValidationErrorKind::ExclusiveMinimum { limit: l } => limit(">", l),
        ValidationErrorKind::ExclusiveMaximum { limit: l } => limit("<", l),
        ValidationErrorKind::MinLength { limit: n } => count("fewer", *n, "characters"),
        ValidationErrorKind::MaxLength { limit: n } => count("more", *n, "characters"),
        ValidationErrorKind::MinItems { limit: n } => count("fewer", *n, "items"),
        ValidationErrorKind::MaxItems { limit: n } => count("more", *n, "items"),
        ValidationErrorKind::MinProperties { limit: n } => count("fewer", *n, "properties"),
        ValidationErrorKind::MaxProperties { limit: n } => count("more", *n, "properties"),
        ValidationErrorKind::Required { property } => (
            format!(
                "must have required property '{}'",
                property.as_str().unwrap_or_default()
            ),
            format!("missingProperty: {}", json(property)),
        ),
        ValidationErrorKind::Enum { .. } => (
            "must be equal to one of the allowed values".into(),
            String::new(),
        ),
        ValidationErrorKind::Constant { .. } => ("must be equal to constant".into(), String::new()),
        ValidationErrorKind::Pattern { pattern } => (
            format!("must match pattern \"{pattern}\""),
            format!("pattern: {}", json(&Value::String(pattern.clone()))),
        ),
        ValidationErrorKind::MultipleOf { multiple_of } => (
            format!("must be multiple of {multiple_of}"),
            format!("multipleOf: {multiple_of}"),
        ),
        ValidationErrorKind::UniqueItems => ("must NOT have duplicate items".into(), String::new()),
        ValidationErrorKind::Not { .. } => ("must NOT be valid".into(), String::new()),
        ValidationErrorKind::AnyOf => ("must match a schema in anyOf".into(), String::new()),
        ValidationErrorKind::OneOfNotValid | ValidationErrorKind::OneOfMultipleValid => (
            "must match exactly one schema in oneOf".into(),
            String::new(),
        ),
        ValidationErrorKind::FalseSchema => ("boolean schema is false".into(), String::new()),
        ValidationErrorKind::Contains => (
            "must contain at least 1 valid item(s)".into(),
            "minContains: 1".into(),
        ),
        _ => (e.to_string(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn person() -> Value {
        json!({
            "type": "object",
            "required": ["name", "age"],
            "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}
        })
    }

    fn problem(schema: Value) -> String {
        schema_problem(&schema).unwrap_or_default()
    }

    /// A token pasted into the wrong place of a schema file is never quoted
    /// whole by the load error (which reaches logs and CI annotations).
    #[test]
    fn load_errors_do_not_quote_a_secret_from_the_schema() {
        let secret = format!("sk-ant-api03-{}", "Q7x".repeat(30));
        for schema in [
            json!({"type": secret}),
            json!({"type": "object", "properties": {"a": {"minLength": secret}}}),
            json!({"type": "string", "format": secret}),
            json!({"$ref": secret}),
            json!({"type": "string", secret.clone(): 1}),
        ] {
            let p = problem(schema.clone());
            assert!(!p.contains(&secret), "{schema}: {p}");
            assert!(!p.contains(&secret[..45]), "{schema}: {p}");
        }
        // What an ordinary mistake says stays readable.
        let p = problem(json!({"type": "strng"}));
        assert!(
            p.starts_with("schema is invalid at #/type: the value is not valid"),
            "{p}"
        );
        let p = problem(json!({"type": "string", "format": "date-time"}));
        assert!(p.contains("`format` (\"date-time\")"), "{p}");
    }

    // test/artifact-json-schema.test.ts, "load-time refusals".
    #[test]
    fn refusals_name_the_keyword_and_where() {
        assert_eq!(schema_problem(&person()), None);
        let p = problem(
            json!({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}}),
        );
        assert!(
            p.contains("`format`") && p.contains("pattern") && p.contains("#/properties/mail"),
            "{p}"
        );
        for ok in [
            json!({"type": "object", "properties": {"format": {"type": "string"}}}),
            json!({"type": "object", "const": {"format": "x"}}),
            json!({"enum": [{"format": "x"}], "default": {"format": "y"}}),
            json!({"$defs": {"n": {"type": "string"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}),
            json!({"type": "object", "properties": {"$ref": {"type": "string"}}}),
            json!({"$schema": SCHEMA_DIALECT, "type": "object"}),
            json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}),
            json!({"type": "object", "required": ["a"]}),
            json!({"type": "array", "prefixItems": [{"type": "string"}]}),
        ] {
            assert_eq!(schema_problem(&ok), None, "{ok}");
        }
        for r in [
            "https://example.com/s.json",
            "file:///etc/s.json",
            "other.json",
        ] {
            assert!(problem(json!({"$ref": r})).contains("$ref"), "{r}");
        }
        assert!(!problem(json!({"$id": "https://x/s", "type": "object"})).is_empty());
        assert!(
            !problem(
                json!({"type": "object", "properties": {"a": {"$id": "a.json", "type": "string"}}})
            )
            .is_empty()
        );
        assert!(
            problem(
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
            )
            .contains("2020-12")
        );
        assert!(
            problem(
                json!({"type": "object", "$defs": {"u": {"type": "string", "format": "email"}}})
            )
            .contains("`format`")
        );
        assert!(
            problem(json!({"type": "array", "items": [{"type": "string"}]}))
                .contains("prefixItems")
        );
        assert!(problem(json!({"items": {"type": "string"}})).contains("applies only to an array"));
        for k in [
            "$dynamicRef",
            "$recursiveRef",
            "$dynamicAnchor",
            "$recursiveAnchor",
        ] {
            assert!(
                problem(json!({"type": "object", k: "#"})).contains(k),
                "{k}"
            );
        }
        for k in ["contentSchema", "contentMediaType", "contentEncoding"] {
            let v = if k == "contentSchema" {
                json!({"type": "object"})
            } else {
                json!("x")
            };
            assert!(problem(json!({"type": "string", k: v})).contains(k), "{k}");
        }
        assert!(
            problem(json!({"required": ["x"]}))
                .contains("add `type: object` (or the intended type) at #")
        );
        assert!(problem(json!({"type": "object", "propertys": {}})).contains("propertys"));
        assert!(!problem(json!({"type": 7})).is_empty());
        assert!(!problem(json!({})).is_empty());
        assert!(!problem(json!(true)).is_empty());
        assert!(problem(json!({"title": "x"})).contains("no validating keyword"));
    }

    // test/artifact-json-schema.test.ts, "evaluation".
    #[test]
    fn mismatches_name_where_and_cap_what_they_show() {
        assert_eq!(validate(&person(), &json!({"name": "a", "age": 3})), Ok(()));
        let Err(Mismatch::Errors { shown, more }) =
            validate(&person(), &json!({"name": "a", "age": -1}))
        else {
            panic!("expected a mismatch");
        };
        assert_eq!(more, 0);
        assert!(
            shown[0].contains("/age") && shown[0].contains("must be >= 0"),
            "{shown:?}"
        );

        let props: Map<String, Value> = "abcdefg"
            .chars()
            .map(|k| (k.to_string(), json!({"type": "string"})))
            .collect();
        let doc: Map<String, Value> = "abcdefg"
            .chars()
            .map(|k| (k.to_string(), json!(1)))
            .collect();
        let Err(Mismatch::Errors { shown, more }) = validate(
            &json!({"type": "object", "properties": props}),
            &Value::Object(doc),
        ) else {
            panic!("expected a mismatch");
        };
        assert_eq!(
            (
                shown
                    .iter()
                    .filter(|e| e.contains("must be string"))
                    .count(),
                more
            ),
            (5, 2)
        );

        let Err(Mismatch::Errors { shown, .. }) = validate(
            &json!({"type": "string", "enum": ["alpha-value", "beta-value"]}),
            &json!("zzz"),
        ) else {
            panic!("expected a mismatch");
        };
        assert!(!shown.join(" ").contains("alpha-value"));
        let long = json!({"type": "string", "pattern": format!("^{}$", "a".repeat(600))});
        let Err(Mismatch::Errors { shown, .. }) = validate(&long, &json!("zzz")) else {
            panic!("expected a mismatch");
        };
        assert!(
            shown[0].chars().count() <= MAX_ERROR_UNITS,
            "{}",
            shown[0].len()
        );
        assert!(matches!(
            validate(&json!({"type": 7}), &json!({})),
            Err(Mismatch::Problem(_))
        ));
    }

    // test/artifact-json-schema.test.ts, "recursion".
    #[test]
    fn a_recursive_schema_checks_every_level() {
        let tree = json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}});
        assert_eq!(
            validate(&tree, &json!({"children": [{"children": []}]})),
            Ok(())
        );
        assert!(validate(&tree, &json!({"children": [{"children": [7]}]})).is_err());
    }
}
