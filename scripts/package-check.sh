#!/usr/bin/env bash
# "Install like a tool": the crate packages cleanly, and `cargo install` of the
# PACKAGED crate builds it (so a file the build needs but the `include` list
# leaves out fails here) and gives a reel that replays and verifies the bundled
# cassettes. scripts/test.sh runs it.
#
# `cargo package --no-verify`: its own verification is a from-scratch build of
# the same packaged sources, which the install below already is; building them
# twice cost the suite minutes on a 2-core machine (docs/benchmarks.md).
#
# The install is a debug build into the repository's target dir so it reuses
# the dependencies the test suite already compiled; a user's
# `cargo install --locked --path .` is the same build in release.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo package --locked --no-verify (the install below builds it)" >&2
cargo package --locked --allow-dirty --no-verify

version="$(cargo pkgid | sed 's/.*[#@]//')"
name="$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | head -1)"   # the package, not [lib]
packaged="target/package/$name-$version"
# Unpacked from the .crate itself, as a registry download would be.
rm -rf "$packaged"
tar -xzf "$packaged.crate" -C target/package
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT

echo "==> cargo install --locked --path $packaged" >&2
cargo install --locked --debug --path "$packaged" --root "$root" --target-dir target

reel="$root/bin/reel"
# The packaged build names the commit it came from (.cargo_vcs_info.json).
"$reel" --version | grep -Eq '^reel [0-9.]+ \([0-9a-f]{12}\)$' \
  || { echo "package-check: \`reel --version\` names no commit: $("$reel" --version)" >&2; exit 1; }
"$reel" --version
echo "==> the installed reel replays and verifies the bundled cassettes" >&2
"$reel" replay cassettes/
"$reel" verify-cassettes cassettes/ --allow-patterns-file cassettes/verify-allow.txt
echo "==> package check passed" >&2
