//! Sub-agents: each dispatch, the type and model it resolved to (from
//! `system/task_started` and the dispatch's result envelope), the tools and
//! skill files it used, and its output (the dispatch's own tool_result).

use serde_json::{Map, Value};

use super::{End, Fold, Step, bump, push_unique};
use crate::evidence::parse::AgentEvent;
use crate::evidence::reference_access;
use crate::evidence::run::{RunRecord, Subagent};
use crate::evidence::tool_output::{read_file_path, skill_reference_read_path};

#[derive(Default)]
pub(in crate::evidence) struct Subagents;

impl Fold for Subagents {
    fn event(&mut self, step: &Step<'_>, rec: &mut RunRecord) -> Result<(), String> {
        match step.event {
            AgentEvent::SubagentDispatch {
                tool_use_id,
                parent,
                dispatch_agent_type,
                type_omitted,
                declared_tools,
                description,
                prompt,
                dispatch_model,
            } => rec.subagents.push(Subagent {
                tool_use_id: tool_use_id.clone(),
                parent_tool_use_id: parent.clone(),
                dispatch_agent_type: dispatch_agent_type.clone(),
                dispatch_type_omitted: *type_omitted,
                declared_tools: declared_tools.clone(),
                description: description.clone(),
                prompt: prompt.clone(),
                dispatch_model: dispatch_model.clone(),
                ..Subagent::default()
            }),
            // A call under a recognised (non-fork) dispatch.
            AgentEvent::ToolUse {
                name,
                input,
                parent: Some(p),
                ..
            } if !step.main_flow => {
                if let Some(sa) = rec.subagents.iter_mut().find(|s| &s.tool_use_id == p) {
                    push_unique(&mut rec.subagent_tools, name);
                    bump(&mut sa.tools_used, name);
                    let empty = Map::new();
                    if name == "Read"
                        && let Some(r) = skill_reference_read_path(&read_file_path(
                            input.as_object().unwrap_or(&empty),
                        ))
                    {
                        push_unique(&mut sa.references_read, &r);
                    }
                    let inp = input.as_object().unwrap_or(&empty);
                    for (path, via) in reference_access::accesses_of(name, inp) {
                        reference_access::note(&mut sa.references_accessed, path, via);
                    }
                }
            }
            AgentEvent::SubagentResultMeta {
                tool_use_id,
                agent_type,
                resolved_model,
            } => {
                if let Some(sa) = rec
                    .subagents
                    .iter_mut()
                    .find(|s| &s.tool_use_id == tool_use_id)
                {
                    if !sa.meta_seen {
                        sa.meta_seen = true;
                        sa.resolved_type_first = sa.resolved_agent_type.is_some();
                    }
                    // Overwritten by every envelope, as the original does.
                    sa.resolved_model = resolved_model.clone();
                    if sa.resolved_agent_type.is_none() {
                        sa.resolved_agent_type = agent_type.clone();
                    }
                }
            }
            AgentEvent::SystemEvent { subtype, data } if subtype == "task_started" => {
                let fields = data.fields();
                if let (Some(join), Some(st)) = (
                    fields.get("tool_use_id").and_then(Value::as_str),
                    fields.get("subagent_type").and_then(Value::as_str),
                ) && let Some(sa) = rec.subagents.iter_mut().find(|s| s.tool_use_id == join)
                {
                    sa.resolved_agent_type = Some(st.to_owned());
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Sub-agent outputs: the dispatch's own tool_result.
    fn finish(&mut self, _end: &End<'_>, rec: &mut RunRecord) {
        for sa in &mut rec.subagents {
            if let Some(tr) = rec
                .tool_results
                .iter()
                .find(|r| r.tool_use_id.as_deref() == Some(sa.tool_use_id.as_str()))
            {
                sa.output = Some(
                    tr.assert_text
                        .clone()
                        .unwrap_or_else(|| tr.text().to_owned()),
                );
                sa.output_truncated = tr.assert_text_truncated;
            }
        }
    }
}
