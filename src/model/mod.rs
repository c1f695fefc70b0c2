//! The scripted model endpoint: an Anthropic Messages API on loopback that
//! answers a real agent (Claude Code) from a YAML script, so a scenario can be
//! recorded without a model token and reproduced byte for byte.
//!
//! - [`script`]: the script format (turns of text / tool_use blocks, usage,
//!   `expect` checks) and its validation.
//! - [`conversation`]: what a request tells us (which turn is due, what the
//!   agent last saw, its working directory).
//! - [`route`]: which conversation (main or a sub-agent's) a request is.
//! - [`reply`]: rendering a turn as SSE or JSON, deterministically.
//! - [`server`]: the HTTP server, routing, request log and problem list.
//! - [`upstream`]: the live model a rerun forwards to from turn N on.
//! - [`offline`]: the environment that runs the real agent against it with
//!   no traffic off the machine.
//!
//! Deliberately not here: no model of its own (the live API is only ever
//! forwarded to, from a given turn on, under `upstream`), no learning from requests, no state
//! between requests that could make a retry get a different answer, and no
//! driving of the agent process (that is `crate::agent`).
//!
//! ```no_run
//! use reel::model::{Script, Server, ServeOptions};
//! let script = Script::load("scenarios/hello.model.yaml")?;
//! let server = Server::start(script, ServeOptions::default())?;
//! // run the agent with ANTHROPIC_BASE_URL = server.url() ...
//! let problems = server.shutdown();
//! assert!(problems.is_empty(), "the agent broke the script: {problems:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Also: scripts carry thinking blocks and `{{cwd}}` / `{{config}}` /
//! `{{home}}` / `{{run}}` placeholders; a turn may hold seeded weighted
//! alternatives (`script::draw`); `judge:` replies answer reel's judge (a
//! request with no tools opening with `JUDGE_OPENING`). The server is
//! `tiny_http`.

pub mod conversation;
pub mod offline;
pub mod reply;
pub mod route;
pub mod script;
pub mod server;
pub mod upstream;

pub use offline::offline_env;
pub use route::ConversationId;
pub use script::{Block, Expect, Script, ScriptError, Subagent, Turn, Usage};
pub use server::{JUDGE_OPENING, Problem, ProblemKind, ServeError, ServeOptions, Server};
pub use upstream::Upstream;
