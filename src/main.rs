//! The `reel` binary: parse arguments, run, map the outcome to an exit code.

mod allocator;

fn main() -> std::process::ExitCode {
    // `reel __sandbox …` is reel starting an agent confined: the helper
    // runs before anything else (no argument parsing, no threads).
    reel::sandbox::run_if_helper();
    // `reel __mcp-frozen …` / `reel __mcp-relay …`: reel's own MCP
    // servers, started by the agent.
    reel::mcp::run_if_server();
    reel::cli::main()
}
