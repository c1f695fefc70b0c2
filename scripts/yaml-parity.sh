#!/usr/bin/env bash
# The serde_yaml -> serde_yaml_ng parity check (scripts/yaml-parity/): every
# YAML file of the repository's tests and examples (and of the shared compat
# corpus when present), 200 seeded mutations of each, and the fuzz targets'
# bombs, read by both crates; prints each difference and exits 1 on any.
set -euo pipefail
cd "$(dirname "$0")/.."
roots=(tests examples scenarios sessions skills data cassettes)
[ -d /work/shared/compat ] && roots+=(/work/shared/compat)
existing=()
for r in "${roots[@]}"; do [ -e "$r" ] && existing+=("$r"); done
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/yaml-parity}" \
  cargo run --quiet --release --manifest-path scripts/yaml-parity/Cargo.toml -- "${existing[@]}"
