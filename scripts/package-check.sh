#!/usr/bin/env bash
# The crate packages cleanly and the PACKAGED sources build: a file the build
# needs (an `include_str!`, a schema, build.rs) that the `include` list leaves
# out fails here, and the packaged build names the commit it came from
# (.cargo_vcs_info.json, read by build.rs). scripts/test.sh runs it.
#
# `cargo package --no-verify`, then `cargo check` of the unpacked `.crate`:
# the check reuses the dependencies' metadata the suite's clippy run already
# built into target/, so it compiles reel alone (~15 s). A debug `cargo
# install` of it compiled and linked reel once more (58 s of the suite on 2
# cores) to prove only what the test build already does for the same sources:
# that they link and that the binary replays the bundled cassettes
# (tests/it/action.rs, verify.rs, journey.rs). A user's
# `cargo install --locked --path .` is the same build in release.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> cargo package --locked --no-verify (checked below)" >&2
cargo package --locked --allow-dirty --no-verify

version="$(cargo pkgid | sed 's/.*[#@]//')"
name="$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | head -1)"   # the package, not [lib]
packaged="target/package/$name-$version"
# Unpacked from the .crate itself, as a registry download would be.
rm -rf "$packaged"
tar -xzf "$packaged.crate" -C target/package
messages="$(mktemp)"
trap 'rm -f "$messages"' EXIT

echo "==> cargo check --locked of the packaged crate ($packaged)" >&2
cargo check --locked --quiet --lib --bins --manifest-path "$packaged/Cargo.toml" \
  --target-dir target --message-format json >"$messages"

# What `reel --version` of the packaged build names: its build script's
# REEL_BUILD_COMMIT, from .cargo_vcs_info.json (the unpacked crate is no
# checkout). The commit packaged is the one checked out (HEAD).
stamped="$(grep -o '\["REEL_BUILD_COMMIT","[^"]*"\]' "$messages" | head -1 | cut -d'"' -f4)"
head="$(git rev-parse --short=12 HEAD)"
[ "$stamped" = "$head" ] \
  || { echo "package-check: the packaged build names commit '$stamped', not HEAD $head (.cargo_vcs_info.json)" >&2; exit 1; }
echo "==> the packaged build names commit $stamped" >&2
echo "==> package check passed" >&2
