//! The `reel` binary: parse arguments, run, map the outcome to an exit code.

/// jemalloc (see Cargo.toml for why); the library sets no allocator.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    reel::cli::main()
}
