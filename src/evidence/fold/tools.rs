//! The main agent's tool calls: names in first-call order, per-tool counts
//! and errors, skills invoked, skill files read, redundant identical calls,
//! and the links each `WebSearch` result listed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{End, Fold, Step, bump, push_unique};
use crate::evidence::parse::AgentEvent;
use crate::evidence::reference_access;
use crate::evidence::run::{
    CallOrigin, InputField, InputJson, RedundantGroup, RunRecord, ToolCall, ToolErrorCount,
    WebSearch,
};
use crate::evidence::tool_output::{read_file_path, skill_reference_read_path, web_search_links};
use crate::js::coerce::js_string;
use crate::protocol::SKILL_TOOL;

#[derive(Default)]
pub(in crate::evidence) struct Tools {
    /// The input digest of each call of `RunRecord::tool_calls` (all
    /// calls, sub-agents included), in the same order: the input itself is
    /// not kept, and the name and parent are read off the record's call
    /// (copies of them were a tenth of a call's fold).
    input_digests: Vec<[u8; 32]>,
    /// A main-agent call's `tool_use_id` → its index in `RunRecord::tool_calls`.
    call_by_use_id: HashMap<String, usize>,
    /// Main-agent `WebSearch` tool_use id → its query, until its result.
    pending_searches: HashMap<String, String>,
}

/// A call's top-level input fields and whole input, as written, and the
/// skill files it reaches ([`call_input`]), shared by every record that
/// folds its line.
#[derive(Clone)]
pub(in crate::evidence) struct CallInput {
    fields: Arc<[(String, InputField)]>,
    json: Arc<InputJson>,
    /// [`reference_access::accesses_of`] the call (read where the line
    /// was: the fold's first touch of a long command's text was most of
    /// its cost); nearly always empty.
    accesses: Vec<(String, &'static str)>,
}

impl Tools {
    /// Room for `calls` main-agent calls ([`super::Folds::reserve_lines`]).
    pub(super) fn reserve_calls(&mut self, calls: usize) {
        self.input_digests.reserve(calls);
        self.call_by_use_id.reserve(calls);
    }
}

impl Fold for Tools {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::ToolUse {
                name,
                input,
                parent,
                tool_use_id,
                ..
            } => {
                if step.main_flow {
                    let empty = Map::new();
                    let inp = input.as_object().unwrap_or(&empty);
                    let accesses = step.call_input.as_ref().map(|c| c.accesses.as_slice());
                    self.main_call(name, inp, tool_use_id, accesses, rec);
                    if let Some(id) = tool_use_id {
                        // The index of the call pushed next.
                        self.call_by_use_id.insert(id.clone(), rec.tool_calls.len());
                    }
                }
                rec.tool_calls.push(tool_call(
                    name,
                    input,
                    parent,
                    tool_use_id,
                    step.main_flow,
                    rec,
                    step.call_input.clone(),
                ));
                self.input_digests
                    .push(step.input_digest.unwrap_or_default());
            }
            AgentEvent::ToolResult { result, error_line } => {
                let Some(id) = &result.tool_use_id else {
                    return Ok(());
                };
                let is_error = &result.is_error;
                // Always present on a re-drive ([`crate::evidence::parse`]).
                let assert_text = result.assert_text.as_deref().unwrap_or_default();
                if let Some(&call) = self.call_by_use_id.get(id) {
                    let name = &rec.tool_calls[call].name;
                    if *is_error {
                        rec.tool_error_lines
                            .push((name.clone(), error_line.clone().unwrap_or_default()));
                    }
                    let slot = match rec.tool_errors.iter_mut().position(|(n, _)| n == name) {
                        Some(i) => &mut rec.tool_errors[i],
                        None => {
                            rec.tool_errors
                                .push((name.clone(), ToolErrorCount::default()));
                            rec.tool_errors.last_mut().expect("just pushed")
                        }
                    };
                    slot.1.calls += 1;
                    if *is_error {
                        slot.1.errors += 1;
                    }
                }
                // Most runs search nothing: an empty map is not asked
                // (asking hashes the id of every result).
                let search = match self.pending_searches.is_empty() {
                    true => None,
                    false => self.pending_searches.remove(id),
                };
                if let Some(query) = search {
                    // Parsed from the 10 KB assertion text, not the display text.
                    match web_search_links(assert_text) {
                        Some(results) => rec.web_searches.push(WebSearch {
                            tool_use_id: id.clone(),
                            query,
                            results,
                        }),
                        None => rec.evidence_errors.web_search_parse += 1,
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, end: &End<'_>, rec: &mut RunRecord) {
        rec.evidence_errors.web_search_parse += self.pending_searches.len() as u64;
        let groups = self.redundant_groups(end, &rec.tool_calls);
        rec.redundant_tool_calls = groups;
    }
}

/// The call as the object form of `tool_called` reads it: where it ran and
/// its top-level input fields (`written` by the line's reader, or here).
fn tool_call(
    name: &str,
    input: &Value,
    parent: &Option<String>,
    tool_use_id: &Option<String>,
    main_flow: bool,
    rec: &RunRecord,
    written: Option<CallInput>,
) -> ToolCall {
    let origin = if main_flow {
        CallOrigin::Main
    } else if parent
        .as_ref()
        .is_some_and(|p| rec.subagents.iter().any(|s| &s.tool_use_id == p))
    {
        CallOrigin::Subagent
    } else {
        CallOrigin::Unknown
    };
    let CallInput {
        fields: input,
        json: input_json,
        ..
    } = written.unwrap_or_else(|| call_input(name, input));
    ToolCall {
        name: name.to_owned(),
        tool_use_id: tool_use_id.clone(),
        parent: parent.clone(),
        origin,
        input,
        input_json,
    }
}

/// A call's top-level input fields and whole input, written as the
/// record keeps them. Pure: the line's reader writes it (on the reading
/// pool, [`super::super::ReadLine`]) and every record folding the line
/// shares it; writing the inputs was most of a call's fold.
pub(in crate::evidence) fn call_input(name: &str, input: &Value) -> CallInput {
    let field = |v: &Value| {
        InputField::capped(match v {
            Value::String(s) => s.clone(),
            other => crate::js::json::legacy_serde(other),
        })
    };
    let fields: Vec<(String, InputField)> = input
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), field(v))).collect())
        .unwrap_or_default();
    let json = match joinable(input, &fields) {
        Some(quoted) => InputJson::joined(quoted),
        None => InputJson::written(InputField::capped(crate::js::json::legacy_serde(input))),
    };
    let empty = Map::new();
    CallInput {
        fields: Arc::from(fields),
        json: Arc::new(json),
        accesses: reference_access::accesses_of(name, input.as_object().unwrap_or(&empty)),
    }
}

/// Which of `input`'s fields are strings (bit `i`: field `i`), when
/// `JSON.stringify(input)` can be joined from the fields written
/// ([`crate::evidence::join_fields`]): a second serialisation of every
/// input doubled a replay's fold. `None` where joining would not be exact:
/// not an object, a cut field, an index-like key (V8 writes those first),
/// more fields than the mask holds.
fn joinable(input: &Value, fields: &[(String, InputField)]) -> Option<u64> {
    let m = input.as_object()?;
    let index_like = |k: &str| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit());
    if fields.len() > InputJson::MAX_JOINED_FIELDS
        || fields.iter().any(|(k, f)| f.truncated || index_like(k))
    {
        return None;
    }
    Some(
        m.values()
            .enumerate()
            .filter(|(_, v)| v.is_string())
            .fold(0, |mask, (i, _)| mask | (1 << i)),
    )
}

impl Tools {
    fn main_call(
        &mut self,
        name: &str,
        inp: &Map<String, Value>,
        tool_use_id: &Option<String>,
        accesses: Option<&[(String, &'static str)]>,
        rec: &mut RunRecord,
    ) {
        push_unique(&mut rec.tools_called, name);
        bump(&mut rec.tool_counts, name);
        if name == "Read"
            && let Some(r) = skill_reference_read_path(&read_file_path(inp))
        {
            push_unique(&mut rec.references_read, &r);
        }
        let found;
        let accesses = match accesses {
            Some(read) => read,
            None => {
                found = reference_access::accesses_of(name, inp);
                &found
            }
        };
        for (path, via) in accesses {
            reference_access::note(&mut rec.references_accessed, path.clone(), via);
        }
        if name == SKILL_TOOL {
            rec.skills_invoked.push(
                inp.get("skill")
                    .filter(|v| !v.is_null())
                    .map(js_string)
                    .unwrap_or_default(),
            );
        }
        if let Some(id) = tool_use_id
            && name == "WebSearch"
        {
            let query = inp
                .get("query")
                .filter(|v| !v.is_null())
                .map(js_string)
                .unwrap_or_default();
            self.pending_searches.insert(id.clone(), query);
        }
    }

    /// Redundant identical main-agent calls, grouped by (name, SHA-256 of
    /// the canonical input): keeping the digest instead of the canonical
    /// text keeps this pass from holding a second copy of every input.
    fn redundant_groups(&self, end: &End<'_>, calls: &[ToolCall]) -> Vec<RedundantGroup> {
        let mut groups: Vec<(&str, [u8; 32], u64)> = Vec::with_capacity(calls.len());
        // (name, digest) → index in `groups`: a linear search made this
        // quadratic in the number of calls. Sized once: rehashing as it
        // grew cost more than the lookups.
        let mut index: HashMap<(&str, [u8; 32]), usize> = HashMap::with_capacity(calls.len());
        for (call, &digest) in calls.iter().zip(&self.input_digests) {
            if call
                .parent
                .as_ref()
                .is_some_and(|p| !end.fork_scoped.contains(p))
            {
                continue;
            }
            match index.entry((call.name.as_str(), digest)) {
                Entry::Occupied(e) => groups[*e.get()].2 += 1,
                Entry::Vacant(e) => {
                    groups.push((call.name.as_str(), digest, 1));
                    e.insert(groups.len() - 1);
                }
            }
        }
        groups
            .into_iter()
            .filter(|g| g.2 >= 2)
            .map(|(name, digest, count)| RedundantGroup {
                name: name.to_owned(),
                arg_hash: hex::encode(&digest[..8]),
                count,
            })
            .collect()
    }
}

#[cfg(test)]
mod input_json_tests {
    use super::*;
    use serde_json::json;

    fn fields(v: &Value) -> Vec<(String, InputField)> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => crate::js::json::legacy_serde(other),
                };
                (
                    k.clone(),
                    InputField {
                        text,
                        truncated: false,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn joined_fields_are_json_stringify_of_the_input() {
        for v in [
            json!({}),
            json!({"command": "echo \"hi\"\n\tπ \u{1}", "n": 1.5e21, "flag": true, "none": null}),
            json!({"file_path": "/a/b.md", "edits": [{"old": "x", "new": "y\\z"}], "o": {"2": 1, "a": 2}}),
            json!({"big": 12345678901234567890u64, "neg": -0.0, "small": 1e-7}),
        ] {
            let fields = fields(&v);
            let quoted = joinable(&v, &fields).unwrap();
            assert_eq!(
                crate::evidence::join_fields(&fields, quoted),
                crate::js::json::legacy_serde(&v),
                "{v}"
            );
            // What a record reads: the same text, joined on first use.
            let call = ToolCall {
                name: "T".into(),
                tool_use_id: None,
                parent: None,
                origin: CallOrigin::Main,
                input: call_input("T", &v).fields,
                input_json: call_input("T", &v).json,
            };
            assert_eq!(call.input_json().text, crate::js::json::legacy_serde(&v));
        }
    }

    #[test]
    fn an_index_like_key_or_a_cut_field_is_left_to_the_full_writer() {
        let v = json!({"b": 1, "10": 2});
        assert_eq!(joinable(&v, &fields(&v)), None);
        let v = json!({"a": "x"});
        let mut f = fields(&v);
        f[0].1.truncated = true;
        assert_eq!(joinable(&v, &f), None);
        assert_eq!(joinable(&json!("text"), &[]), None);
    }
}
