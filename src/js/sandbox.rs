//! The sandboxed JavaScript engine behind a scenario's `allow_if:` predicates
//! (QuickJS through `rquickjs`). One runtime per evaluation: no modules, no
//! I/O bindings, a memory limit and an interrupt deadline, so a predicate
//! from an untrusted scenario can neither reach the machine nor hang a run.

use std::time::{Duration, Instant};

use rquickjs::{Context, Runtime};
use serde_json::Value;

const MEMORY_LIMIT: usize = 16 * 1024 * 1024;
const TIME_LIMIT: Duration = Duration::from_millis(250);

const RESERVED: &[&str] = &[
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "new",
    "null",
    "return",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "let",
    "static",
    "implements",
    "interface",
    "package",
    "private",
    "protected",
    "public",
    "await",
    "arguments",
    "eval",
    "input",
    "undefined",
    "NaN",
    "Infinity",
];

/// A JavaScript string literal spelling `s` (JSON's quoting is valid JS).
fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn is_ident(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !RESERVED.contains(&k)
}

fn with_sandbox<T>(
    f: impl for<'js> FnOnce(rquickjs::Ctx<'js>) -> Result<T, String>,
) -> Result<T, String> {
    let rt = Runtime::new().map_err(|e| e.to_string())?;
    rt.set_memory_limit(MEMORY_LIMIT);
    rt.set_max_stack_size(512 * 1024);
    let deadline = Instant::now() + TIME_LIMIT;
    rt.set_interrupt_handler(Some(Box::new(move || Instant::now() > deadline)));
    let ctx = Context::full(&rt).map_err(|e| e.to_string())?;
    ctx.with(f)
}

fn describe(ctx: &rquickjs::Ctx<'_>, e: rquickjs::Error) -> String {
    if e.is_exception() {
        let exc = ctx.catch();
        if let Some(o) = exc.as_object()
            && let Ok(m) = o.get::<_, String>("message")
        {
            return m;
        }
        if let Some(s) = exc.as_string().and_then(|s| s.to_string().ok()) {
            return s;
        }
        return "uncaught exception (or the 250 ms time / 16 MiB memory bound was hit)".into();
    }
    e.to_string()
}

/// Compiles the predicate without running it (load-time check). A pure
/// function of `expr`, so answers are kept: a batch replay checks the same
/// few predicates of every cassette, and a fresh engine per check was a
/// fifth of its time.
pub fn check_syntax(expr: &str) -> Result<(), String> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    /// Distinct predicates remembered; past it, checks just run.
    const KEEP: usize = 4096;
    static CHECKED: Mutex<Option<HashMap<String, Result<(), String>>>> = Mutex::new(None);
    let lock = || {
        CHECKED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(known) = lock().get_or_insert_with(HashMap::new).get(expr) {
        return known.clone();
    }
    let result = compile(expr);
    let mut memo = lock();
    let memo = memo.get_or_insert_with(HashMap::new);
    if memo.len() < KEEP {
        memo.insert(expr.to_owned(), result.clone());
    }
    result
}

fn compile(expr: &str) -> Result<(), String> {
    with_sandbox(|ctx| {
        let src = format!("(function(input){{return (\n{expr}\n);}})");
        ctx.eval::<rquickjs::Value, _>(src)
            .map(|_| ())
            .map_err(|e| describe(&ctx, e))
    })
}

/// Evaluates the predicate with `input` bound, plus each identifier-shaped
/// input key as a bare variable; returns its truthiness.
pub fn eval_predicate(expr: &str, input: &Value) -> Result<bool, String> {
    let keys: Vec<&str> = input
        .as_object()
        .map(|m| {
            m.keys()
                .map(String::as_str)
                .filter(|k| is_ident(k))
                .collect()
        })
        .unwrap_or_default();
    let json = input.to_string();
    with_sandbox(|ctx| {
        let value = ctx.json_parse(json).map_err(|e| describe(&ctx, e))?;
        ctx.globals()
            .set("__reel_input", value)
            .map_err(|e| describe(&ctx, e))?;
        let params = std::iter::once("input")
            .chain(keys.iter().copied())
            .collect::<Vec<_>>()
            .join(",");
        let args = std::iter::once("__reel_input".to_owned())
            .chain(
                keys.iter()
                    .map(|k| format!("__reel_input[{}]", string_literal(k))),
            )
            .collect::<Vec<_>>()
            .join(",");
        let src = format!("!!(function({params}){{return (\n{expr}\n);}})({args})");
        ctx.eval::<bool, _>(src).map_err(|e| describe(&ctx, e))
    })
}
