//! Scenario `metrics:` — numbers a run measures from a JSON file it wrote
//! (cowork-harness after 4.3: `src/metrics.ts`, docs/hillclimb.md "Numbers a
//! scenario declares"). Each entry is
//! `{id, artifact, path, better: higher|lower, scale | unbounded: true, min?}`.
//!
//! A metric is reported beside the verdict, never in it: `min` and `scale`
//! are the range a grader reads the number against (an omitted `min` is 0),
//! not a pass/fail threshold. The measuring is `crate::assert::metrics`.
//!
//! The loader is strict, as the rest of the scenario is: an unknown field, a
//! missing one, a repeated id (ids are grade columns, compared without case),
//! `scale` together with `unbounded`, or a `min` that is not below `scale` is
//! refused, naming the entry and the fix. The id must be a plain identifier
//! (`[A-Za-z][A-Za-z0-9_]*`): it names a grade column and its `<id>_present`
//! companion.

use serde_json::{Map, Value};

/// The fields of an entry, in the order a frozen scenario keeps them.
const FIELDS: &[&str] = &[
    "id",
    "artifact",
    "path",
    "better",
    "scale",
    "unbounded",
    "min",
];

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// The range a metric is read against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// `scale` (the best attainable, or worst for `better: lower`) and `min`
    /// (0 when omitted).
    Scaled { min: f64, scale: f64 },
    /// `unbounded: true`: no range.
    Unbounded,
}

/// One declared metric.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDecl {
    pub id: String,
    /// Work-root-relative path of the JSON file the run writes.
    pub artifact: String,
    /// Dotted path into that document (`totals.rows`, `items.0.score`).
    pub path: String,
    pub better: Better,
    pub range: Range,
}

/// A refused `metrics:` block: the message (led by the field) and a fix.
pub type Problem = (String, Option<String>);

/// Reads a scenario's `metrics` value (`None`/null: no metrics).
pub fn parse(value: Option<&Value>) -> Result<Vec<MetricDecl>, Problem> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err((
                "`metrics` must be a list of {id, artifact, path, better, scale | unbounded} \
                 entries"
                    .into(),
                None,
            ));
        }
    };
    let mut decls: Vec<MetricDecl> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let decl = entry(i, item)?;
        if let Some(first) = decls
            .iter()
            .position(|d| d.id.eq_ignore_ascii_case(&decl.id))
        {
            return Err((
                format!(
                    "metrics[{i}].id: \"{}\" is already declared by metrics[{first}] (ids name \
                     grade columns and are compared without case)",
                    decl.id
                ),
                Some("give each metric its own id".into()),
            ));
        }
        decls.push(decl);
    }
    Ok(decls)
}

/// The `metrics` value a cassette freezes: each entry's fields in the
/// declaration order, as authored (no default filled in).
pub fn frozen(value: &Value) -> Value {
    let Some(items) = value.as_array() else {
        return value.clone();
    };
    let ordered = items.iter().map(|item| match item.as_object() {
        Some(m) => Value::Object(
            FIELDS
                .iter()
                .filter_map(|k| m.get_key_value(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        None => item.clone(),
    });
    Value::Array(ordered.collect())
}

fn entry(i: usize, item: &Value) -> Result<MetricDecl, Problem> {
    let at = |field: &str| format!("metrics[{i}].{field}");
    let Some(m) = item.as_object() else {
        return Err((
            format!("metrics[{i}]: must be a mapping {{id, artifact, path, better, scale}}"),
            None,
        ));
    };
    if let Some(unknown) = m.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err((
            format!(
                "{}: unknown field{}",
                at(unknown),
                crate::scenario::did_you_mean(unknown, FIELDS)
            ),
            Some(format!("a metric's fields are {}", FIELDS.join(", "))),
        ));
    }
    let id = required_text(m, "id", &at)?;
    if !is_identifier(&id) {
        return Err((
            format!(
                "{}: \"{id}\" is not a plain identifier (a letter, then letters, digits or _)",
                at("id")
            ),
            Some("the id names a grade column, e.g. `rows_parsed`".into()),
        ));
    }
    let artifact = required_text(m, "artifact", &at)?;
    let path = required_text(m, "path", &at)?;
    let better = match m.get("better").and_then(Value::as_str) {
        Some("higher") => Better::Higher,
        Some("lower") => Better::Lower,
        Some(other) => {
            return Err((
                format!("{}: \"{other}\" is not `higher` or `lower`", at("better")),
                None,
            ));
        }
        None => {
            return Err((
                format!("{}: required (`higher` or `lower`)", at("better")),
                Some("say which way the number improves".into()),
            ));
        }
    };
    let range = range(m, i)?;
    Ok(MetricDecl {
        id,
        artifact,
        path,
        better,
        range,
    })
}

fn required_text(
    m: &Map<String, Value>,
    field: &str,
    at: &impl Fn(&str) -> String,
) -> Result<String, Problem> {
    match m.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err((format!("{}: blank", at(field)), None)),
        Some(_) => Err((format!("{}: must be a string", at(field)), None)),
        None => Err((format!("{}: required", at(field)), None)),
    }
}

/// `scale` (with an optional `min` below it) or `unbounded: true`.
fn range(m: &Map<String, Value>, i: usize) -> Result<Range, Problem> {
    let at = |field: &str| format!("metrics[{i}].{field}");
    let number = |field: &str| -> Result<Option<f64>, Problem> {
        match m.get(field) {
            None => Ok(None),
            Some(v) => match v.as_f64().filter(|x| x.is_finite()) {
                Some(x) if v.is_number() => Ok(Some(x)),
                _ => Err((format!("{}: must be a finite number", at(field)), None)),
            },
        }
    };
    let scale = number("scale")?;
    let min = number("min")?;
    let unbounded = match m.get("unbounded") {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(_) => {
            return Err((
                format!("{}: must be `true`", at("unbounded")),
                Some("for a bounded metric, drop `unbounded` and give `scale`".into()),
            ));
        }
    };
    match (scale, unbounded) {
        (Some(_), true) => Err((
            format!("metrics[{i}]: `scale` and `unbounded` are both set"),
            Some("keep `scale` for a bounded number, or `unbounded: true` for an open one".into()),
        )),
        (None, false) => Err((
            format!("metrics[{i}]: `scale` or `unbounded: true` is required"),
            Some(
                "give the number's range as `scale` (and `min`, default 0), or write \
                 `unbounded: true`"
                    .into(),
            ),
        )),
        (None, true) if min.is_some() => Err((
            format!("{}: an unbounded metric has no range", at("min")),
            Some("drop `min`, or give `scale` instead of `unbounded`".into()),
        )),
        (None, true) => Ok(Range::Unbounded),
        (Some(scale), false) => {
            let min = min.unwrap_or(0.0);
            if min < scale {
                Ok(Range::Scaled { min, scale })
            } else {
                Err((
                    format!(
                        "{}: must be above `min` ({} vs {})",
                        at("scale"),
                        crate::js::number::string(scale),
                        crate::js::number::string(min)
                    ),
                    Some("an omitted `min` is 0: a negative range needs its `min`".into()),
                ))
            }
        }
    }
}

fn is_identifier(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value) -> Result<MetricDecl, String> {
        parse(Some(&json!([v])))
            .map(|mut d| d.remove(0))
            .map_err(|(m, _)| m)
    }

    #[test]
    fn a_scaled_and_an_unbounded_metric_load() {
        let d = one(
            json!({"id": "f1", "artifact": "outputs/r.json", "path": "scores.f1",
            "better": "higher", "scale": 1}),
        )
        .unwrap();
        assert_eq!(
            d.range,
            Range::Scaled {
                min: 0.0,
                scale: 1.0
            }
        );
        assert_eq!(d.better, Better::Higher);
        let d = one(
            json!({"id": "ms", "artifact": "a.json", "path": "t", "better": "lower",
            "unbounded": true}),
        )
        .unwrap();
        assert_eq!(d.range, Range::Unbounded);
    }

    #[test]
    fn each_refusal_names_the_entry_and_field() {
        let base = json!({"id": "x", "artifact": "a.json", "path": "p", "better": "higher",
            "scale": 10});
        let with = |k: &str, v: Value| {
            let mut m = base.as_object().unwrap().clone();
            if v.is_null() {
                m.remove(k);
            } else {
                m.insert(k.into(), v);
            }
            one(Value::Object(m)).unwrap_err()
        };
        assert!(with("better", json!("up")).starts_with("metrics[0].better: \"up\""));
        assert!(with("better", Value::Null).starts_with("metrics[0].better: required"));
        assert!(with("unbounded", json!(true)).contains("are both set"));
        assert!(with("scale", Value::Null).starts_with("metrics[0]: `scale` or `unbounded: true`"));
        assert!(with("min", json!(10)).contains("must be above"));
        assert!(with("scale", json!(-1)).contains("must be above"));
        assert!(with("id", json!("2x")).contains("not a plain identifier"));
        assert!(with("path", json!("")).starts_with("metrics[0].path: blank"));
        assert!(with("scael", json!(1)).contains("unknown field"));
        assert!(with("scale", json!("10")).contains("finite number"));
    }

    #[test]
    fn ids_are_unique_without_case() {
        let m = |id: &str| {
            json!({"id": id, "artifact": "a.json", "path": "p",
            "better": "lower", "unbounded": true})
        };
        let (msg, _) = parse(Some(&json!([m("Rows"), m("rows")]))).unwrap_err();
        assert!(msg.contains("already declared by metrics[0]"), "{msg}");
    }

    #[test]
    fn frozen_keeps_the_declaration_order() {
        let v = json!([{"better": "lower", "min": 1, "id": "a", "path": "p", "artifact": "x",
            "scale": 3}]);
        let keys: Vec<String> = frozen(&v)[0].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["id", "artifact", "path", "better", "scale", "min"]);
    }
}
