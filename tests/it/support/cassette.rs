//! The cassette builder: tests state the document they need (a minimal v12
//! one, or a bundled cassette) and edit it as JSON — fields by path, the
//! recorded lines (`events`, `controlOut`: JSON text inside strings) parsed,
//! edited and written back — instead of `.replace()` on JSON text.

use std::path::Path;

use serde_json::{Map, Value, json};

/// A cassette document under construction.
#[derive(Clone, Debug)]
pub struct CassetteDoc(Map<String, Value>);

impl CassetteDoc {
    /// The smallest document the v12 loader accepts: one empty event line,
    /// a scenario with no assertions, `hashFormat` `jcs1`.
    pub fn minimal() -> CassetteDoc {
        let v = json!({
            "cassetteVersion": 12,
            "scenario": {"prompt": "p", "session": "s", "assert": []},
            "events": ["{}"],
            "fingerprint": {"hashFormat": "jcs1"},
        });
        CassetteDoc(v.as_object().unwrap().clone())
    }

    /// A cassette file, as recorded.
    pub fn from_file(path: &Path) -> CassetteDoc {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        CassetteDoc(
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not a JSON object: {e}", path.display())),
        )
    }

    /// Sets the field at the dotted `path` (`fingerprint.hashFormat`,
    /// `scenario.assert.0`), creating missing objects on the way.
    pub fn set(mut self, path: &str, value: Value) -> CassetteDoc {
        let (parent, last) = match path.rsplit_once('.') {
            Some((p, l)) => (Some(p), l),
            None => (None, path),
        };
        let mut at = &mut self.0;
        if let Some(parent) = parent {
            let mut node = at
                .entry(parent.split('.').next().unwrap())
                .or_insert_with(|| json!({}));
            for step in parent.split('.').skip(1) {
                node = step_into(node, step, path);
            }
            match node {
                Value::Object(m) => at = m,
                Value::Array(a) => {
                    let i: usize = last.parse().unwrap_or_else(|_| panic!("{path}: index"));
                    a[i] = value;
                    return self;
                }
                other => panic!("{path}: {parent} is {other}, not a container"),
            }
        }
        at.insert(last.to_owned(), value);
        self
    }

    /// Removes the field at the dotted `path` (keeping the others' order).
    pub fn remove(mut self, path: &str) -> CassetteDoc {
        let (parent, last) = match path.rsplit_once('.') {
            Some((p, l)) => (Some(p), l),
            None => (None, path),
        };
        let obj = match parent {
            None => &mut self.0,
            Some(parent) => {
                let mut steps = parent.split('.');
                let mut node = self.0.get_mut(steps.next().unwrap()).expect(path);
                for step in steps {
                    node = step_into(node, step, path);
                }
                node.as_object_mut().expect(path)
            }
        };
        obj.shift_remove(last);
        self
    }

    /// Any other edit of the document.
    pub fn edit(mut self, f: impl FnOnce(&mut Map<String, Value>)) -> CassetteDoc {
        f(&mut self.0);
        self
    }

    /// Edits each JSON line of the array `field` (`events`, `controlOut`):
    /// parsed, handed to `f`, and written back compact only when `f`
    /// changed it (so untouched lines keep their recorded bytes).
    pub fn edit_lines(mut self, field: &str, f: impl FnMut(&mut Value)) -> CassetteDoc {
        edit_lines(&mut self.0[field], f);
        self
    }

    /// Maps every string in the document, the recorded lines' strings
    /// included (lines that change are re-serialised).
    pub fn map_strings(mut self, f: &impl Fn(&str) -> String) -> CassetteDoc {
        for v in self.0.values_mut() {
            map_strings(v, f);
        }
        self
    }

    pub fn doc(&self) -> &Map<String, Value> {
        &self.0
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }

    /// One-line JSON text.
    pub fn compact(&self) -> String {
        serde_json::to_string(&self.0).unwrap()
    }

    /// The cowork-harness writer's text: `JSON.stringify(d, null, 2)`.
    pub fn pretty(&self) -> String {
        serde_json::to_string_pretty(&self.0).unwrap()
    }

    /// Writes [`CassetteDoc::pretty`] to `path`.
    pub fn write(&self, path: &Path) {
        std::fs::write(path, self.pretty()).unwrap();
    }

    /// One-line JSON text with the unparsed `raw` text as the value of the
    /// top-level or `scenario` field `key` (for documents serde_json would
    /// refuse to build, such as nesting far past the loader's limit).
    pub fn compact_with_raw(&self, in_scenario: bool, key: &str, raw: &str) -> String {
        // A marker no real value contains, serialised in the field's place
        // and swapped for the raw text once.
        const MARK: &str = "\u{1}reel-raw-slot\u{1}";
        let doc = if in_scenario {
            self.clone().set(&format!("scenario.{key}"), json!(MARK))
        } else {
            self.clone().set(key, json!(MARK))
        };
        let text = doc.compact();
        let quoted = serde_json::to_string(MARK).unwrap();
        assert_eq!(text.matches(&quoted).count(), 1);
        text.replacen(&quoted, raw, 1)
    }
}

/// [`CassetteDoc::edit_lines`] on an array of recorded lines already in
/// hand (`&mut doc["events"]`).
pub fn edit_lines(lines: &mut Value, mut f: impl FnMut(&mut Value)) {
    let lines = lines.as_array_mut().expect("recorded lines are an array");
    for line in lines {
        let text = line.as_str().expect("a recorded line is a string");
        let before: Value = serde_json::from_str(text).expect("a recorded line is JSON");
        let mut after = before.clone();
        f(&mut after);
        if after != before {
            *line = Value::String(serde_json::to_string(&after).unwrap());
        }
    }
}

/// Renames every object key `from` under `v` to `to`, in place (the key
/// keeps its position).
pub fn rename_keys(v: &mut Value, from: &str, to: &str) {
    match v {
        Value::Object(m) => {
            if m.contains_key(from) {
                *m = std::mem::take(m)
                    .into_iter()
                    .map(|(k, v)| {
                        if k == from {
                            (to.to_owned(), v)
                        } else {
                            (k, v)
                        }
                    })
                    .collect();
            }
            m.values_mut().for_each(|x| rename_keys(x, from, to));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename_keys(x, from, to)),
        _ => {}
    }
}

fn step_into<'a>(node: &'a mut Value, step: &str, path: &str) -> &'a mut Value {
    match node {
        Value::Object(m) => m.entry(step).or_insert_with(|| json!({})),
        Value::Array(a) => {
            let i: usize = step
                .parse()
                .unwrap_or_else(|_| panic!("{path}: {step} is no index"));
            &mut a[i]
        }
        other => panic!("{path}: {step} lies inside {other}"),
    }
}

/// Maps every string under `v`; a string holding a JSON object or array
/// (a recorded line) is parsed, mapped and re-serialised when it changed.
pub fn map_strings(v: &mut Value, f: &impl Fn(&str) -> String) {
    match v {
        Value::String(s) => {
            if let Ok(mut inner @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(s)
            {
                let before = inner.clone();
                map_strings(&mut inner, f);
                if inner != before {
                    *s = serde_json::to_string(&inner).unwrap();
                }
            } else {
                *s = f(s);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        Value::Object(m) => m.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_remove_keep_the_other_fields_in_place() {
        let doc = CassetteDoc::minimal()
            .set("fingerprint.baseline", json!("1"))
            .remove("fingerprint.hashFormat")
            .set("cassetteVersion", json!(11))
            .set("scenario.assert", json!([{"result": "success"}]))
            .set("scenario.assert.0", json!({"result": "error"}));
        assert_eq!(
            doc.compact(),
            r#"{"cassetteVersion":11,"scenario":{"prompt":"p","session":"s","assert":[{"result":"error"}]},"events":["{}"],"fingerprint":{"baseline":"1"}}"#
        );
    }

    #[test]
    fn edit_lines_rewrites_only_the_lines_it_changes() {
        // Spelled as serde_json would not write it: an untouched line keeps
        // its recorded bytes.
        let recorded = "{\"type\": \"system\"}";
        let doc = CassetteDoc::minimal()
            .set(
                "events",
                json!([recorded, "{\"type\":\"result\",\"timestamp\":1}"]),
            )
            .edit_lines("events", |line| rename_keys(line, "timestamp", "ts"));
        assert_eq!(
            doc.doc()["events"],
            json!([recorded, "{\"type\":\"result\",\"ts\":1}"])
        );
    }

    #[test]
    fn map_strings_reaches_into_recorded_lines() {
        let doc = CassetteDoc::minimal()
            .set("events", json!(["{\"text\":\"id-1\"}"]))
            .set("scenario.prompt", json!("id-1"))
            .map_strings(&|s: &str| s.replace("id-1", "id-2"));
        assert_eq!(doc.doc()["events"], json!(["{\"text\":\"id-2\"}"]));
        assert_eq!(doc.doc()["scenario"]["prompt"], json!("id-2"));
    }

    #[test]
    fn a_raw_slot_is_spliced_unparsed() {
        let text = CassetteDoc::minimal().compact_with_raw(true, "x", "[[[]]]");
        assert!(text.contains(r#""assert":[],"x":[[[]]]},"#), "{text}");
    }
}
