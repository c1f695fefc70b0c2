#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs (the pinned
# Claude Code CLI into .tools/, Node packages from the npm registry), then runs
# every test. CI (.ci/run) calls exactly this. Under CI=true a test whose
# prerequisite is missing fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

# A CI clone builds everything once from scratch: incremental compilation
# would only write caches nobody reads (a clean build is faster without).
# Left alone on a developer's machine, where the next build reads them.
if [ "${CI:-}" = true ]; then
    export CARGO_INCREMENTAL=0
fi

echo "==> installing the pinned Claude Code CLI (project-local, .tools/)" >&2
REEL_CLAUDE_BIN="$(bash scripts/install-claude.sh)"
export REEL_CLAUDE_BIN

echo "==> cargo fmt --check" >&2
cargo fmt --all -- --check

echo "==> cargo clippy" >&2
cargo clippy --locked --all-targets -- -D warnings

echo "==> unused dependencies (cargo-machete, installed from crates.io when missing)" >&2
command -v cargo-machete >/dev/null 2>&1 || cargo install --locked --quiet cargo-machete@0.9.2
cargo machete

echo "==> cargo doc (warnings denied)" >&2
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --quiet

echo "==> Chromium for the report pages' browser tests (Debian's package, installed when missing)" >&2
if ! command -v chromium >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
fi

echo "==> bubblewrap and socat for claude plugin eval's Bash sandbox (tests/it/plugin_eval.rs's agreement check)" >&2
if ! command -v bwrap >/dev/null 2>&1 || ! command -v socat >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap socat >&2
fi

# cargo-nextest runs each test as a process of its own, in parallel (a slow
# test no longer holds a test binary's last thread while the rest wait), and
# names the slow ones (docs/benchmarks.md); it is what `cargo test
# --all-targets` ran, less the benches (they are not libtest harnesses) and no
# doc tests (the crate has none: every fenced block in its docs is text).
# One build of every test-profile target, benches included: cargo then links
# the eleven bench binaries while the library's unit tests and tests/it
# compile (each a long single-crate compile that leaves a core idle), instead
# of in a build of their own after the tests. nextest and the bench smoke run
# below find them built.
echo "==> building the tests and benches (test profile, one cargo build)" >&2
cargo test --locked --no-run --quiet --lib --bins --tests --benches

echo "==> tests (cargo nextest: the library, the binary, tests/it)" >&2
command -v cargo-nextest >/dev/null 2>&1 || cargo install --locked --quiet cargo-nextest@0.9.143
cargo nextest run --locked --no-fail-fast --lib --bins --tests

echo "==> benches as quick smoke tests, against the committed figures (scripts/bench.sh runs them for real)" >&2
bash scripts/bench.sh --smoke

echo "==> package check (cargo package, cargo check of the packaged crate)" >&2
bash scripts/package-check.sh

echo "==> all tests passed" >&2
