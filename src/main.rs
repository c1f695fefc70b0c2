//! The `reel` binary: parse arguments, run, map the outcome to an exit code.

mod allocator;

fn main() -> std::process::ExitCode {
    reel::cli::main()
}
