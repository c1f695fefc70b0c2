//! The `reel` binary: parse arguments, run, map the outcome to an exit code.

mod allocator;

fn main() -> std::process::ExitCode {
    // `reel __sandbox …` is reel starting an agent confined: the helper
    // runs before anything else (no argument parsing, no threads).
    reel::sandbox::run_if_helper();
    reel::cli::main()
}
