//! One recorded `events` line → what it means to the re-drive, read fast.
//!
//! Replay reads every recorded line (50 000-line cassettes happen), and
//! building a full `serde_json::Value` per line — order-preserving maps,
//! arbitrary-precision numbers — was most of replay's time. So the lines that
//! dominate recordings (`assistant` text / tool_use blocks, `user` tool results
//! with string content, and every line type the parser ignores) are read into
//! small typed views that borrow from the line instead.
//!
//! A lean cassette's line is read straight from its stored JSON string
//! token ([`read_stored_keeping`], `stored`): the same views, with only the
//! strings they keep unescaped.
//!
//! The views are a shortcut, never a second rulebook: a view only accepts a
//! line whose every consulted field has the plain shape it expects (a string, a
//! bool, null, absent). Anything else — another type, an odd shape, a duplicate
//! key, a sub-agent dispatch, array tool-result content — makes [`read`] fall
//! back to the reference parser, [`parse::parse_message`] over a `Value`, which
//! alone decides malformed and protocol-error lines. The unit tests check that
//! both paths agree line by line.
//!
//! Not here: what the events do to the run record (`record`).

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::de::Deserializer;
use serde::{Deserialize, de::Error as _};
use serde_json::Value;
use serde_json::value::RawValue;

use super::parse::{self, AgentEvent, ThinkingBlock};
use super::run::ContextData;

/// What one `events` line contributes.
#[derive(Debug, Clone, PartialEq)]
pub enum LineOutcome {
    /// Empty or whitespace-only: skipped silently.
    Blank,
    /// A line type the parser does not act on (`stream_event`, …).
    Ignored,
    /// Not JSON: a cassette-format finding.
    Malformed,
    /// JSON, but a structurally malformed frame (the message says how).
    ProtocolError(String),
    /// The agent events the line means, in order.
    Events(Vec<AgentEvent>),
}

/// The line types [`parse::parse_message`] acts on; the rest are ignored.
const HANDLED_TYPES: &[&str] = &[
    "infra_error",
    "system",
    "control_request",
    "assistant",
    "user",
    "result",
];

/// Reads one line (pure: safe to call on many lines in parallel).
pub fn read(line: &str) -> LineOutcome {
    read_keeping(line, true)
}

/// [`read`]; without `carried_lines`, a system line only carried into
/// `contextEvents` keeps its subtype, not its fields
/// ([`ContextData::Unkept`]): a verdict never reads them, and a 50,000-line
/// run carries megabytes of them.
pub fn read_keeping(line: &str, carried_lines: bool) -> LineOutcome {
    if line.trim().is_empty() {
        return LineOutcome::Blank;
    }
    read_view(line, carried_lines).unwrap_or_else(|| read_reference(line))
}

/// The reference path: the whole line as a `Value`, through `parse_message`.
fn read_reference(line: &str) -> LineOutcome {
    // An ignored type is skipped after one non-allocating scan of `type`
    // (the scan still validates the JSON).
    if let Ok(TypeOnly { ty: Some(ty) }) = serde_json::from_str::<TypeOnly<'_>>(line)
        && !HANDLED_TYPES.contains(&ty.as_ref())
    {
        return LineOutcome::Ignored;
    }
    let msg = match serde_json::from_str::<Value>(line) {
        Ok(msg) => msg,
        // JSON.parse takes a lone surrogate escape (an emoji cut in half
        // upstream); read the orphan as U+FFFD rather than drop the line.
        Err(_) => match crate::js::json::replace_lone_surrogate_escapes(line)
            .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
        {
            Some(msg) => msg,
            None => return LineOutcome::Malformed,
        },
    };
    match parse::parse_message(msg) {
        Ok(events) => LineOutcome::Events(events),
        Err(message) => LineOutcome::ProtocolError(message),
    }
}

/// Just the `type` of a line (borrowed; everything else skipped unparsed).
#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<Cow<'a, str>>,
}

/// The fast path; `None` means "ask the reference path".
fn read_view(line: &str, carried_lines: bool) -> Option<LineOutcome> {
    if !view_can_judge(line) {
        return None;
    }
    let view: LineView<'_> = serde_json::from_str(line).ok()?;
    judge_view(view, || ContextData::of_line(line), carried_lines)
}

/// Reads one line straight from its JSON string token as stored (quotes
/// included; UTF-8, not yet checked as a string): `None` when the token is
/// not one the view reads that way, and the caller unescapes it and reads
/// it with [`read_keeping`], which reaches the same outcome. A token read this way
/// has been checked whole as a string [`crate::js::json::unescape_into`]
/// takes ([`crate::js::json::NestedCursor`]).
/// `keep`: a kept carried line's data by reference
/// ([`ContextData::Stored`]), when the caller can keep the token; else it
/// is made from the token's text ([`ContextData::of_stored`]).
pub fn read_stored_keeping(
    token: &str,
    carried_lines: bool,
    keep: &dyn Fn() -> Option<ContextData>,
) -> Option<LineOutcome> {
    let inner = token.strip_prefix('"')?.strip_suffix('"')?;
    let view = stored::view(inner)?;
    let carried = || keep().unwrap_or_else(|| ContextData::of_stored(inner));
    judge_view(view, carried, carried_lines)
}

/// What a line read into its view means; `None` for the reference path.
/// `carried`: the line's data as a carried system line (asked for only
/// when one is kept).
fn judge_view(
    view: LineView<'_>,
    carried: impl FnOnce() -> ContextData,
    carried_lines: bool,
) -> Option<LineOutcome> {
    match view.ty.as_ref()?.0.as_ref() {
        "assistant" => assistant_events(view).map(LineOutcome::Events),
        "user" => user_events(view).map(LineOutcome::Events),
        "system" => system_events(view, carried, carried_lines).map(LineOutcome::Events),
        ty if !HANDLED_TYPES.contains(&ty) => Some(LineOutcome::Ignored),
        _ => None,
    }
}

/// Whether a successful view parse proves the reference parser would accept
/// the line too. Fields a view does not consult are skipped by serde_json's
/// lenient skipper, which (unlike a `Value` parse) has no nesting limit and
/// lets lone UTF-16 surrogate escapes through; lines that could hit either are
/// left to the reference path. Counting every `[`/`{` byte over-counts (those
/// inside strings too), which only sends more lines the slow way.
fn view_can_judge(line: &str) -> bool {
    const MAX_OPENERS: usize = 100; // well under serde_json's nesting limit of 128
    let bytes = line.as_bytes();
    static UNICODE_ESCAPE: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    bytes.first() == Some(&b'{')
        && memchr::memchr2_iter(b'[', b'{', bytes)
            .nth(MAX_OPENERS - 1)
            .is_none()
        && !UNICODE_ESCAPE.find_iter(bytes).any(|i| {
            // `\uD800`–`\uDFFF`: a surrogate half (paired or not).
            matches!(bytes.get(i + 2), Some(b'd' | b'D'))
                && matches!(
                    bytes.get(i + 3),
                    Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
                )
        })
}

/// A JSON string (only), borrowed from the line unless it has escapes.
struct JsonStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    /// Taken as its raw token and unescaped by the one fast unescaper:
    /// serde_json's own string reader grows a fresh scratch buffer per
    /// line, a few reallocations for every line with an escaped string. An
    /// escape the unescaper leaves to others (a surrogate) fails the view,
    /// and the reference path reads the line.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let token = <&'de RawValue>::deserialize(d)?.get();
        let Some(inner) = token.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
            return Err(D::Error::custom("expected a string"));
        };
        if !inner.contains('\\') {
            return Ok(JsonStr(Cow::Borrowed(inner)));
        }
        let mut text = String::new();
        if crate::js::json::unescape_into(inner.as_bytes(), &mut text) {
            Ok(JsonStr(Cow::Owned(text)))
        } else {
            Err(D::Error::custom("an escape left to the reference path"))
        }
    }
}

impl JsonStr<'_> {
    /// JS `v ? String(v) : undefined` for a string `v`.
    fn truthy(v: Option<Self>) -> Option<String> {
        v.filter(|s| !s.0.is_empty()).map(|s| s.0.into_owned())
    }
}

/// A key that must be a string when present. Unlike `Option`, a JSON `null`
/// is refused (the reference reads `String(null)` = `"null"` there).
#[derive(Default)]
enum PresentStr<'a> {
    #[default]
    Absent,
    Is(JsonStr<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for PresentStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        JsonStr::deserialize(d).map(PresentStr::Is)
    }
}

impl PresentStr<'_> {
    /// JS `v === undefined ? "" : String(v)` for a string `v`.
    fn or_empty(self) -> String {
        match self {
            PresentStr::Absent => String::new(),
            PresentStr::Is(s) => s.0.into_owned(),
        }
    }
}

/// Makes a derived view refuse a JSON array. serde's derive also reads a
/// struct from a positional array, which the reference (objects only) never
/// would. Placed first with `#[serde(default)]`: as an object key it is
/// absent (or refused), as the first array element it is refused, and an
/// empty array fails on the next field, which has no default.
#[derive(Default)]
struct ObjectsOnly;

impl<'de> Deserialize<'de> for ObjectsOnly {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(D::Error::custom("a view reads objects only"))
    }
}

/// An `assistant` / `user` line, as far as the re-drive reads it.
#[derive(Deserialize, Default)]
struct LineView<'a> {
    #[serde(rename = "\u{0}objects-only", default)]
    _objects_only: ObjectsOnly,
    #[serde(rename = "type", borrow)]
    ty: Option<JsonStr<'a>>,
    #[serde(borrow)]
    subtype: Option<JsonStr<'a>>,
    #[serde(borrow)]
    message: Option<MessageView<'a>>,
    #[serde(borrow)]
    parent_tool_use_id: Option<JsonStr<'a>>,
    tool_use_result: Option<ToolUseResult>,
}

#[derive(Deserialize, Default)]
struct MessageView<'a> {
    #[serde(rename = "\u{0}objects-only", default)]
    _objects_only: ObjectsOnly,
    #[serde(borrow)]
    model: Option<JsonStr<'a>>,
    #[serde(borrow)]
    content: Option<Vec<BlockView<'a>>>,
}

/// A content block of either role (the union of the keys both read).
#[derive(Deserialize, Default)]
struct BlockView<'a> {
    #[serde(rename = "\u{0}objects-only", default)]
    _objects_only: ObjectsOnly,
    #[serde(rename = "type", borrow)]
    ty: Option<JsonStr<'a>>,
    #[serde(default, borrow)]
    text: PresentStr<'a>,
    /// A thinking block's text (`null` reads as absent, like JS `??`).
    #[serde(borrow)]
    thinking: Option<JsonStr<'a>>,
    /// Only whether it is a non-empty string is read: never copied.
    signature: Option<Signature>,
    #[serde(default, borrow)]
    name: PresentStr<'a>,
    #[serde(borrow)]
    id: Option<JsonStr<'a>>,
    input: Option<Value>,
    #[serde(borrow)]
    parent_tool_use_id: Option<JsonStr<'a>>,
    #[serde(borrow)]
    tool_use_id: Option<JsonStr<'a>>,
    /// Tool-result content: only the string form is read here.
    #[serde(borrow)]
    content: Option<JsonStr<'a>>,
    is_error: Option<bool>,
}

/// A thinking block's `signature`: all the view reads of it is whether it
/// is a non-empty string.
struct Signature {
    non_empty_string: bool,
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?.get();
        Ok(Signature {
            non_empty_string: raw.starts_with('"') && raw != "\"\"",
        })
    }
}

/// A user line's `tool_use_result`, as far as the view reads it: whether
/// it is an object, and then the keys that mark a sub-agent result
/// envelope.
enum ToolUseResult {
    NotAnObject,
    Object(ResultEnvelope),
}

/// The envelope keys of a `tool_use_result` object (`Some` when present);
/// `agent_type` and `resolved_model` keep their text when a string.
#[derive(Default)]
struct ResultEnvelope {
    resolved_model: Option<EnvelopeKey>,
    agent_type: Option<EnvelopeKey>,
    status: Option<EnvelopeKey>,
}

/// One envelope key's value: a string (its text, when the view reads it),
/// or anything else.
enum EnvelopeKey {
    String(Option<String>),
    Other,
}

impl EnvelopeKey {
    fn is_string(key: &Option<EnvelopeKey>) -> bool {
        matches!(key, Some(EnvelopeKey::String(_)))
    }

    fn text(key: Option<EnvelopeKey>) -> Option<String> {
        match key {
            Some(EnvelopeKey::String(text)) => text,
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for ToolUseResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// The keys as serde reads them (a duplicate fails the view).
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Keys<'a> {
            #[serde(borrow)]
            resolved_model: Option<&'a RawValue>,
            #[serde(borrow)]
            agent_type: Option<&'a RawValue>,
            #[serde(borrow)]
            status: Option<&'a RawValue>,
        }
        let raw = <&'de RawValue>::deserialize(d)?.get();
        if !raw.starts_with('{') {
            return Ok(ToolUseResult::NotAnObject);
        }
        let keys: Keys<'_> = serde_json::from_str(raw).map_err(D::Error::custom)?;
        let key = |v: Option<&RawValue>, keep: bool| -> Result<Option<EnvelopeKey>, D::Error> {
            Ok(match v {
                None => None,
                Some(r) if r.get().starts_with('"') => Some(EnvelopeKey::String(if keep {
                    Some(serde_json::from_str::<String>(r.get()).map_err(D::Error::custom)?)
                } else {
                    None
                })),
                Some(_) => Some(EnvelopeKey::Other),
            })
        };
        Ok(ToolUseResult::Object(ResultEnvelope {
            resolved_model: key(keys.resolved_model, true)?,
            agent_type: key(keys.agent_type, true)?,
            status: key(keys.status, false)?,
        }))
    }
}

fn assistant_events(view: LineView<'_>) -> Option<Vec<AgentEvent>> {
    let line_parent = JsonStr::truthy(view.parent_tool_use_id);
    let (model, blocks) = match view.message {
        Some(m) => (
            m.model.map(|s| s.0.into_owned()),
            m.content.unwrap_or_default(),
        ),
        None => (None, Vec::new()),
    };
    let mut events = Vec::with_capacity(blocks.len());
    for block in blocks {
        let parent = JsonStr::truthy(block.parent_tool_use_id).or_else(|| line_parent.clone());
        match block.ty.as_ref().map(|t| t.0.as_ref()) {
            Some("text") => events.push(AgentEvent::AssistantText {
                text: block.text.or_empty(),
                parent,
                model: model.clone(),
            }),
            Some("thinking") => {
                let text = match (block.thinking, block.text) {
                    (Some(t), _) | (None, PresentStr::Is(t)) => t.0,
                    (None, PresentStr::Absent) => Cow::Borrowed(""),
                };
                let redacted =
                    text.is_empty() && block.signature.is_some_and(|s| s.non_empty_string);
                // Only the capped part is copied out of the line.
                let text = match text {
                    Cow::Borrowed(t) => {
                        crate::js::utf16::slice(t, parse::THINKING_TEXT_CAP).to_owned()
                    }
                    Cow::Owned(t) => parse::capped_thinking_text(t),
                };
                events.push(AgentEvent::Thinking {
                    block: std::sync::Arc::new(ThinkingBlock {
                        text: Value::String(text),
                        redacted,
                    }),
                    model: model.clone(),
                });
            }
            Some("tool_use") => {
                let name = block.name.or_empty();
                let input = block.input.unwrap_or(Value::Null);
                let dispatch = name == "Agent"
                    || name == "Task"
                    || input
                        .as_object()
                        .is_some_and(|i| i.contains_key("subagent_type"));
                if dispatch {
                    // Sub-agent dispatches read more keys; rare enough to leave
                    // to the reference.
                    return None;
                }
                events.push(AgentEvent::ToolUse {
                    name,
                    input,
                    parent,
                    tool_use_id: JsonStr::truthy(block.id),
                    model: model.clone(),
                });
            }
            _ => {}
        }
    }
    Some(events)
}

/// System subtypes the reference parser reads fields of (or the driver
/// consults); every other subtype is only carried, as its line.
const SYSTEM_SUBTYPES_READ: &[&str] = &[
    "init",
    "api_metrics",
    "thinking",
    "task_started",
    "permission_denied",
];

/// The system lines the hook keys judge (`hook_event_*`, `hook_decision`,
/// `hook_output_*`): the agent's own hook frames.
pub const HOOK_FRAME_SUBTYPES: &[&str] = &["hook_started", "hook_response"];

/// A system line whose subtype is only carried into `contextEvents`: its
/// data kept as the JSON text a report writes when it is flat
/// ([`ContextData::Json`]), not parsed into a map.
fn system_events(
    view: LineView<'_>,
    carried: impl FnOnce() -> ContextData,
    keep_line: bool,
) -> Option<Vec<AgentEvent>> {
    let subtype = view.subtype?.0;
    if SYSTEM_SUBTYPES_READ.contains(&subtype.as_ref()) {
        return None;
    }
    // The hook frames are kept even for a verdict: the hook keys read them.
    let keep = keep_line || HOOK_FRAME_SUBTYPES.contains(&subtype.as_ref());
    Some(vec![AgentEvent::SystemEvent {
        subtype: subtype.into_owned(),
        data: if keep { carried() } else { ContextData::Unkept },
    }])
}

fn user_events(view: LineView<'_>) -> Option<Vec<AgentEvent>> {
    let blocks = view.message.and_then(|m| m.content).unwrap_or_default();
    let mut events = Vec::with_capacity(blocks.len());
    if let Some(ToolUseResult::Object(envelope)) = view.tool_use_result {
        let first_result = blocks
            .iter()
            .find(|b| b.ty.as_ref().is_some_and(|t| t.0 == "tool_result"));
        let tool_use_id = first_result
            .and_then(|b| b.tool_use_id.as_ref())
            .filter(|id| !id.0.is_empty());
        let marked = EnvelopeKey::is_string(&envelope.resolved_model)
            || EnvelopeKey::is_string(&envelope.agent_type)
            || EnvelopeKey::is_string(&envelope.status);
        if let (Some(id), true) = (tool_use_id, marked) {
            events.push(AgentEvent::SubagentResultMeta {
                tool_use_id: id.0.clone().into_owned(),
                agent_type: EnvelopeKey::text(envelope.agent_type),
                resolved_model: EnvelopeKey::text(envelope.resolved_model),
            });
        }
    }
    for block in blocks {
        if block.ty.as_ref().map(|t| t.0.as_ref()) != Some("tool_result") {
            continue;
        }
        let tool_use_id = JsonStr::truthy(block.tool_use_id);
        if tool_use_id.is_none() {
            events.push(AgentEvent::ProtocolEvidenceError);
        }
        let full = block.content.map_or_else(String::new, |c| c.0.into_owned());
        events.push(parse::tool_result_event(
            tool_use_id,
            block.is_error.unwrap_or(false),
            full,
            None,
        ));
    }
    Some(events)
}

mod stored;
#[cfg(test)]
mod tests;
