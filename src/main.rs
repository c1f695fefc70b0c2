//! The `reel` binary: parse arguments, run, map the outcome to an exit code.

mod allocator;

fn main() -> std::process::ExitCode {
    // `reel __sandbox …` is reel starting an agent confined: the helper
    // runs before anything else (no argument parsing, no threads).
    reel::sandbox::run_if_helper();
    // `reel __mcp-frozen …`: the frozen MCP server an agent runs on a rerun.
    let args: Vec<std::ffi::OsString> = std::env::args_os().take(2).collect();
    if args
        .get(1)
        .is_some_and(|a| a == reel::mcp::frozen::FROZEN_ARG)
    {
        reel::mcp::frozen::frozen_main(&std::env::args_os().collect::<Vec<_>>());
    }
    reel::cli::main()
}
