//! Reading a judge's reply as a grade: every top-level JSON object in the
//! text is tried; exactly one distinct full-coverage grade (one result per
//! rubric index, no duplicates) must be found — none, or two that differ,
//! is an unparseable grade (the caller retries once, then marks the verdict
//! `judgeInvalid`), never a made-up pass or fail.

use serde_json::Value;

/// One graded claim, aligned to the rubric by index.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClaimGrade {
    pub pass: bool,
    /// The judge's one-sentence reason (empty when it gave none).
    pub rationale: String,
}

/// Why a reply is not a grade.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GradeError {
    #[error("no full-coverage {{\"results\": [...]}} grade for a {claims}-claim rubric")]
    NoGrade { claims: usize },
    #[error("{distinct} different full-coverage grades in one reply (ambiguous)")]
    Ambiguous { distinct: usize },
}

/// The one grade in `reply` for a rubric of `claims` claims.
pub fn parse(reply: &str, claims: usize) -> Result<Vec<ClaimGrade>, GradeError> {
    let mut found: Vec<Vec<ClaimGrade>> = Vec::new();
    for object in top_level_objects(reply) {
        let Some(grade) = full_grade(object, claims) else {
            continue;
        };
        // A judge that restates its own grade has given one grade.
        let verdicts = |g: &[ClaimGrade]| g.iter().map(|c| c.pass).collect::<Vec<_>>();
        if !found.iter().any(|f| verdicts(f) == verdicts(&grade)) {
            found.push(grade);
        }
    }
    match found.len() {
        0 => Err(GradeError::NoGrade { claims }),
        1 => Ok(found.remove(0)),
        distinct => Err(GradeError::Ambiguous { distinct }),
    }
}

fn full_grade(object: &str, claims: usize) -> Option<Vec<ClaimGrade>> {
    let v: Value = serde_json::from_str(object).ok()?;
    let results = v.get("results")?.as_array()?;
    let mut by_index: Vec<Option<ClaimGrade>> = vec![None; claims];
    for r in results {
        let index = usize::try_from(r.get("index")?.as_u64()?).ok()?;
        let pass = r.get("pass")?.as_bool()?;
        let rationale = r
            .get("rationale")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let slot = by_index.get_mut(index)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(ClaimGrade { pass, rationale });
    }
    by_index.into_iter().collect()
}

/// Every balanced top-level `{...}` in `text`, braces inside JSON strings
/// ignored. Hand-written: a streaming JSON reader stops at the first
/// non-JSON byte, and judges wrap their JSON in prose and fences.
fn top_level_objects(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if depth > 0 => in_string = true,
            b'{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    out.push(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grade_wrapped_in_prose_and_restated_is_one_grade() {
        let reply = r#"Sure. {"results":[{"index":1,"pass":false,"rationale":"no {total}"},{"index":0,"pass":true}]}
```json
{"results":[{"index":0,"pass":true},{"index":1,"pass":false}]}
```"#;
        let g = parse(reply, 2).unwrap();
        assert!(g[0].pass && !g[1].pass);
        assert_eq!(g[1].rationale, "no {total}");
    }

    #[test]
    fn partial_duplicate_and_ambiguous_grades_are_not_grades() {
        assert_eq!(
            parse(r#"{"results":[{"index":0,"pass":true}]}"#, 2),
            Err(GradeError::NoGrade { claims: 2 })
        );
        assert!(
            parse(
                r#"{"results":[{"index":0,"pass":true},{"index":0,"pass":true}]}"#,
                2
            )
            .is_err()
        );
        assert!(parse("I think it passes.", 1).is_err());
        assert_eq!(
            parse(
                r#"{"results":[{"index":0,"pass":true}]} {"results":[{"index":0,"pass":false}]}"#,
                1
            ),
            Err(GradeError::Ambiguous { distinct: 2 })
        );
    }
}
