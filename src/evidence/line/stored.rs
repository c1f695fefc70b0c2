//! A line's view read straight from its stored token (the JSON string a
//! cassette holds it in), with [`NestedCursor`]: the same [`LineView`] the
//! serde path reads from the unescaped line, with the same rules (one
//! reader per field below, each taking exactly the shapes the field's
//! `Deserialize` takes), so the one judgement ([`super::judge_view`])
//! follows. Strings are borrowed from the stored text when they hold no
//! escape; only the kept ones are ever unescaped.
//!
//! Anything the serde path would refuse is refused here too (`None`), and
//! more: a key starting with `$`, any `\u` escape.

use serde_json::Value;

use super::{
    BlockView, EnvelopeKey, JsonStr, LineView, MessageView, PresentStr, ResultEnvelope, Signature,
    ToolUseResult,
};
use crate::js::json::{NestedCursor, Tokens};

/// Nesting the reader allows, counting the view's own objects: under
/// serde_json's limit of 128, so the reference parser takes any line read
/// here.
const MAX_DEPTH: usize = 100;

/// The view of the line stored as `stored` (a JSON string's inside).
pub(super) fn view(stored: &str) -> Option<LineView<'_>> {
    let mut c = NestedCursor::new(stored);
    let mut view = LineView::default();
    const FIELDS: &[&str] = &[
        "type",
        "subtype",
        "message",
        "parent_tool_use_id",
        "tool_use_result",
    ];
    object(&mut c, FIELDS, 1, |c, field| {
        match field {
            0 => view.ty = optional_str(c)?,
            1 => view.subtype = optional_str(c)?,
            2 => view.message = message(c)?,
            3 => view.parent_tool_use_id = optional_str(c)?,
            _ => view.tool_use_result = tool_use_result(c)?,
        }
        Some(())
    })?;
    c.at_end().then_some(view)
}

/// Reads an object's members: the value of a key that is one of `fields`
/// with `member` (given its index), any other value skipped at `depth`.
/// `None` when the next value is not an object, a key of `fields` repeats
/// (serde's derive refuses a repeated field) or a key starts with `$`, or
/// `member` refuses.
fn object<'a>(
    c: &mut NestedCursor<'a>,
    fields: &[&str],
    depth: usize,
    mut member: impl FnMut(&mut NestedCursor<'a>, usize) -> Option<()>,
) -> Option<()> {
    if !c.eat(b'{') {
        return None;
    }
    if c.eat(b'}') {
        return Some(());
    }
    let mut seen = 0u32;
    loop {
        let key = c.string()?.stored();
        if key.starts_with('$') || !c.eat(b':') {
            return None;
        }
        match fields.iter().position(|f| *f == key) {
            Some(i) => {
                if seen & 1 << i != 0 {
                    return None;
                }
                seen |= 1 << i;
                member(c, i)?;
            }
            None => skip(c, depth)?,
        }
        if c.eat(b'}') {
            return Some(());
        }
        if !c.eat(b',') {
            return None;
        }
    }
}

/// Skips an unread value at `depth` (the objects and arrays around it).
fn skip(c: &mut NestedCursor<'_>, depth: usize) -> Option<()> {
    c.value(MAX_DEPTH - depth).map(drop)
}

/// `null` (taken) or not.
fn null(c: &mut NestedCursor<'_>) -> bool {
    c.peek() == Some(b'n') && c.literal("null")
}

/// `Option<JsonStr>`: a string or `null`.
fn optional_str<'a>(c: &mut NestedCursor<'a>) -> Option<Option<JsonStr<'a>>> {
    if null(c) {
        return Some(None);
    }
    Some(Some(JsonStr(c.string()?.text())))
}

/// `PresentStr`: a string (`null` is refused).
fn present_str<'a>(c: &mut NestedCursor<'a>) -> Option<PresentStr<'a>> {
    Some(PresentStr::Is(JsonStr(c.string()?.text())))
}

fn message<'a>(c: &mut NestedCursor<'a>) -> Option<Option<MessageView<'a>>> {
    if null(c) {
        return Some(None);
    }
    let mut m = MessageView::default();
    object(c, &["model", "content"], 2, |c, field| {
        match field {
            0 => m.model = optional_str(c)?,
            _ => m.content = content(c)?,
        }
        Some(())
    })?;
    Some(Some(m))
}

/// `Option<Vec<BlockView>>`: an array of objects, or `null`.
fn content<'a>(c: &mut NestedCursor<'a>) -> Option<Option<Vec<BlockView<'a>>>> {
    if null(c) {
        return Some(None);
    }
    if !c.eat(b'[') {
        return None;
    }
    let mut blocks = Vec::new();
    if c.eat(b']') {
        return Some(Some(blocks));
    }
    loop {
        blocks.push(block(c)?);
        if c.eat(b']') {
            return Some(Some(blocks));
        }
        if !c.eat(b',') {
            return None;
        }
    }
}

fn block<'a>(c: &mut NestedCursor<'a>) -> Option<BlockView<'a>> {
    const DEPTH: usize = 4; // line, message, content, block
    let mut b = BlockView::default();
    const FIELDS: &[&str] = &[
        "type",
        "text",
        "thinking",
        "signature",
        "name",
        "id",
        "input",
        "parent_tool_use_id",
        "tool_use_id",
        "content",
        "is_error",
    ];
    object(c, FIELDS, DEPTH, |c, field| {
        match field {
            0 => b.ty = optional_str(c)?,
            1 => b.text = present_str(c)?,
            2 => b.thinking = optional_str(c)?,
            3 => b.signature = signature(c)?,
            4 => b.name = present_str(c)?,
            5 => b.id = optional_str(c)?,
            6 => b.input = input(c, DEPTH)?,
            7 => b.parent_tool_use_id = optional_str(c)?,
            8 => b.tool_use_id = optional_str(c)?,
            9 => b.content = optional_str(c)?,
            _ => {
                b.is_error = if null(c) {
                    None
                } else if c.literal("true") {
                    Some(true)
                } else if c.literal("false") {
                    Some(false)
                } else {
                    return None;
                }
            }
        }
        Some(())
    })?;
    Some(b)
}

/// `Option<Signature>`: anything, `null` reading as absent.
fn signature(c: &mut NestedCursor<'_>) -> Option<Option<Signature>> {
    if null(c) {
        return Some(None);
    }
    let non_empty_string = if c.peek() == Some(b'"') {
        !c.string()?.is_empty()
    } else {
        skip(c, 4)?;
        false
    };
    Some(Some(Signature { non_empty_string }))
}

/// `Option<Value>`: the value built straight from its stored text, as
/// serde_json parses it (`null` reads as absent).
fn input(c: &mut NestedCursor<'_>, depth: usize) -> Option<Option<Value>> {
    if null(c) {
        return Some(None);
    }
    value(c, MAX_DEPTH - depth).map(Some)
}

/// A value as serde_json's `Value` parse makes it (keys in order, a
/// repeated key's last value in its first place, a number's spelling
/// kept), opening at most `depth` arrays and objects inside each other.
/// A key starting with `$` (serde_json reads an object with a reserved
/// `$serde_json::private::` key as something else) is refused.
fn value(c: &mut NestedCursor<'_>, depth: usize) -> Option<Value> {
    Some(match c.peek()? {
        b'"' => Value::String(c.string()?.text().into_owned()),
        b'{' => {
            let depth = depth.checked_sub(1)?;
            c.eat(b'{');
            let mut members = serde_json::Map::new();
            let mut more = !c.eat(b'}');
            while more {
                let key = c.string()?.text();
                if key.starts_with('$') || !c.eat(b':') {
                    return None;
                }
                members.insert(key.into_owned(), value(c, depth)?);
                more = c.eat(b',');
                if !more && !c.eat(b'}') {
                    return None;
                }
            }
            Value::Object(members)
        }
        b'[' => {
            let depth = depth.checked_sub(1)?;
            c.eat(b'[');
            let mut items = Vec::new();
            let mut more = !c.eat(b']');
            while more {
                items.push(value(c, depth)?);
                more = c.eat(b',');
                if !more && !c.eat(b']') {
                    return None;
                }
            }
            Value::Array(items)
        }
        b't' if c.literal("true") => Value::Bool(true),
        b'f' if c.literal("false") => Value::Bool(false),
        b'n' if c.literal("null") => Value::Null,
        _ => Value::Number(serde_json::from_str(c.number()?).ok()?),
    })
}

/// `Option<ToolUseResult>`: an object's envelope keys, or any other value.
fn tool_use_result(c: &mut NestedCursor<'_>) -> Option<Option<ToolUseResult>> {
    if null(c) {
        return Some(None);
    }
    if c.peek() != Some(b'{') {
        skip(c, 1)?;
        return Some(Some(ToolUseResult::NotAnObject));
    }
    let mut envelope = ResultEnvelope::default();
    object(
        c,
        &["resolvedModel", "agentType", "status"],
        2,
        |c, field| {
            match field {
                0 => envelope.resolved_model = Some(envelope_key(c, true)?),
                1 => envelope.agent_type = Some(envelope_key(c, true)?),
                _ => envelope.status = Some(envelope_key(c, false)?),
            }
            Some(())
        },
    )?;
    Some(Some(ToolUseResult::Object(envelope)))
}

/// An envelope key's value: only whether it is a string is read (and the
/// text of the kept ones), so `null` may read as `Other`.
fn envelope_key(c: &mut NestedCursor<'_>, keep: bool) -> Option<EnvelopeKey> {
    if c.peek() == Some(b'"') {
        let s = c.string()?;
        return Some(EnvelopeKey::String(keep.then(|| s.text().into_owned())));
    }
    skip(c, 2)?;
    Some(EnvelopeKey::Other)
}
