#!/usr/bin/env bash
# Runs every benchmark in release mode and regenerates docs/benchmarks.md.
#
# usage: scripts/bench.sh [--no-write] [--render-only] | --smoke | --guard [FILE]
#   --no-write     print the table on stdout instead of writing docs/benchmarks.md
#   --render-only  rewrite docs/benchmarks.md from the last run's target/bench-logs/
#   --smoke        run every bench once as a quick smoke test (test build, small
#                  inputs: what `cargo test` does with them) and compare with
#                  benches/baseline-smoke.bench; scripts/test.sh runs this
#   --guard [FILE] compare FILE (default: the last run's target/bench-logs/all.bench)
#                  with benches/baseline.bench
#
# The guard (after every full run, and --smoke) prints each row against its
# committed figure and REPORTS a regression over 20 % as a `::warning::` line;
# it never fails the run (a shared machine's speed drifts by more than that).
# Where a row has a floor (measured in the same run), the guard compares
# time/floor ratios, which cancel most of that drift; else raw times.
# A full run rewrites benches/baseline.bench only with --rebaseline.
#
# Each bench (every [[bench]] in Cargo.toml) prints machine-readable lines
#   BENCH name=<id> seconds=<t> floor_seconds=<f|-> peak_rss_bytes=<m|-> input_bytes=<b|-> stat=<s> runs=<n>
# (written by benches/support/mod.rs); everything else it prints is kept in
# target/bench-logs/<bench>.log. Inputs are generated from a seed
# (REEL_BENCH_SEED) into temp dirs; nothing generated is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
write=1
run=1
smoke=0
guard=""
rebaseline=0
usage="usage: scripts/bench.sh [--no-write] [--render-only] [--rebaseline] | --smoke | --guard [FILE]"
while [ $# -gt 0 ]; do
  case "$1" in
    --no-write) write=0 ;;
    --render-only) run=0 ;;
    --rebaseline) rebaseline=1 ;;
    --smoke) smoke=1 ;;
    --guard) guard=target/bench-logs/all.bench
             if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then guard=$2; shift; fi ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done

logs=target/bench-logs
mkdir -p "$logs"

# compare BASELINE CURRENT: a line per row of CURRENT that BASELINE also has
# (stderr), a `::warning::` per regression over 20 %. Always succeeds.
compare() {
  local base=$1 now=$2
  if [ ! -s "$base" ]; then
    echo "bench.sh: guard: no committed figures in $base (nothing to compare)" >&2
    return 0
  fi
  awk -v base="$base" '
    function fields(line, f,    i, kv, n, parts) {
      n = split(line, parts, " ")
      for (i = 2; i <= n; i++) { split(parts[i], kv, "="); f[kv[1]] = kv[2] }
    }
    !/^BENCH / { next }
    FNR == NR { delete f; fields($0, f); bt[f["name"]] = f["seconds"]; bf[f["name"]] = f["floor_seconds"]; next }
    {
      delete f; fields($0, f); n = f["name"]
      if (!(n in bt) || bt[n] <= 0) { printf "bench guard: %-40s %10.4f s  (no committed figure)\n", n, f["seconds"]; next }
      raw = f["seconds"] / bt[n]
      how = "time"; r = raw
      # Floors from the original (`_vs_original`) measure another tool: raw times there.
      if (n !~ /_vs_original$/ && bf[n] != "-" && f["floor_seconds"] != "-" && bf[n] > 0 && f["floor_seconds"] > 0) {
        r = (f["seconds"] / f["floor_seconds"]) / (bt[n] / bf[n]); how = "time/floor"
      }
      printf "bench guard: %-40s now %10.4f s  committed %10.4f s  %5.2fx (%s %.2fx)\n", n, f["seconds"], bt[n], raw, how, r
      if (r > 1.2) printf "::warning:: bench guard: %s is %.2fx its committed figure (%s; over the 20 %% budget) — a regression, or a loaded machine: re-run scripts/bench.sh\n", n, r, how
      seen++
    }
    END { printf "bench guard: %d row(s) compared with %s (a regression is reported, never fails the run)\n", seen, base }
  ' "$base" "$now" >&2
  return 0
}

if [ -n "$guard" ]; then
  [ -s "$guard" ] || { echo "bench.sh: --guard: no BENCH lines in $guard (run scripts/bench.sh first)" >&2; exit 2; }
  compare benches/baseline.bench "$guard"
  exit 0
fi

if [ "$smoke" = 1 ]; then
  # `cargo test --bench '*'` runs each bench without `--bench`: small inputs,
  # one run (benches/support/mod.rs, `smoke()`), on the test build. (Not
  # `--benches`: that also runs the library's unit tests, a second time.)
  echo "bench.sh: benches as smoke tests (cargo test --bench '*') ..." >&2
  status=0
  cargo test --locked --bench '*' >"$logs/smoke.log" 2>&1 || status=$?
  grep -v '^BENCH ' "$logs/smoke.log" >&2 || true
  [ "$status" -eq 0 ] || { echo "bench.sh: --smoke: a bench failed (see $logs/smoke.log)" >&2; exit "$status"; }
  grep '^BENCH ' "$logs/smoke.log" >"$logs/smoke.bench" || true
  compare benches/baseline-smoke.bench "$logs/smoke.bench"
  exit 0
fi
benches=$(awk '/^\[\[bench\]\]/{b=1; next} b && /^name *=/{gsub(/[" ]/, "", $0); sub(/^name=/, "", $0); print; b=0}' Cargo.toml)
[ -n "$benches" ] || { echo "bench.sh: no [[bench]] in Cargo.toml" >&2; exit 2; }

if [ "$run" = 1 ]; then
echo "bench.sh: building (release) ..." >&2
cargo build --release --quiet
cargo bench --no-run --quiet

: >"$logs/all.bench"
for b in $benches; do
  echo "bench.sh: running $b ..." >&2
  start=$(date +%s)
  if ! cargo bench --quiet --bench "$b" >"$logs/$b.log" 2>"$logs/$b.stderr"; then
    echo "bench.sh: bench $b failed (see $logs/$b.log, $logs/$b.stderr)" >&2
    tail -5 "$logs/$b.stderr" >&2
    exit 1
  fi
  n=$(grep -c '^BENCH ' "$logs/$b.log" || true)
  if [ "$n" -eq 0 ]; then
    echo "bench.sh: bench $b printed no BENCH line" >&2
    exit 1
  fi
  grep '^BENCH ' "$logs/$b.log" >>"$logs/all.bench"
  echo "bench.sh: $b: $n measurement(s) in $(( $(date +%s) - start )) s" >&2
done
fi

cpu=$(awk -F': *' '/^model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
mem=$(awk '/^MemTotal/{printf "%.1f GB", $2/1048576}' /proc/meminfo 2>/dev/null || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)

render() {
  cat <<EOF
# Benchmarks

Regenerate with \`scripts/bench.sh\` (release build; runs every \`benches/*.rs\`,
collects their \`BENCH\` lines and rewrites this file). Inputs are generated
from a fixed seed (\`REEL_BENCH_SEED\`, default \`0x5eed\`) into temp dirs and
never committed. Times are wall clock on warm caches.

**Machine:** ${cpu:-unknown CPU}, $(nproc) logical cores, ${mem:-? GB} RAM;
load average at start $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?');
$(rustc --version 2>/dev/null || echo 'rustc ?'); reel ${commit}${dirty};
measured $(date -u '+%Y-%m-%d %H:%M UTC').

The **floor** is the least any implementation must do with the same input:
for commands that load cassettes, reading the file(s) and parsing them into a
\`serde_json::Value\` (single thread); for the fingerprint,
\`git ls-files -z | xargs -0 sha256sum\` over the same tree; for a model turn,
parsing the request body; for the record overhead, reading and parsing the
cassette it writes. **Ratio** = time / floor (below 1x means reel beats the
single-threaded floor by using more cores or by not building a full tree).
Peak RSS is the maximum resident set of the process doing the work. Every
replay run and floor run is its own fresh process, as \`reel replay FILE\` is,
that leaves its result to process exit (as the CLI does; the floor's
\`Value\` too), and benches run on the \`reel\` binary's allocator (jemalloc), floors
included; under glibc's malloc the parse floor is about 30% faster and
replay about 1.5 times slower.

A timeline-rich cassette (the second replay group) is memory-heavy for any
reader that builds a \`serde_json::Value\`: its ~37,000 small objects take
about 1.5 KB each in an order-preserving map, so the parse floor alone is
above 3x the file. reel's replay loads cassettes leanly (the file is mapped,
\`events\` stay JSON string tokens in it, read on the pool as the scan passes
them and folded as soon as read; \`timeline\` stays text until read), so its
peak stays near the file size.

Side-by-side rows (\`…_vs_original\`) run cowork-harness 2.0.0 in the same
run: set \`REEL_BENCH_ORIGINAL\` to its built checkout and put node 22 on
\`PATH\` (\`docs/spec/running-the-original.md\`); without it they are left out.
Their **floor** column is the original's time.

| measurement | input | time | floor | ratio | peak RSS | target | statistic |
|---|---|---:|---:|---:|---:|---|---|
EOF
  awk '
    function fmt_t(s) { if (s == "-") return "-"; if (s < 0.001) return sprintf("%.1f µs", s * 1e6); if (s < 1) return sprintf("%.1f ms", s * 1e3); return sprintf("%.2f s", s) }
    function fmt_b(b) { if (b == "-") return "-"; if (b >= 1e6) return sprintf("%.1f MB", b / 1e6); return sprintf("%.1f KB", b / 1e3) }
    function desc(n,    k) {
      if (n == "replay_50k_events") return "`reel replay` of a 50,000-event cassette (load, re-drive, evaluate 6 assertions, verdict, text report)";
      if (n == "replay_floor_parse") return "the replay floor itself: read the 50,000-event cassette + parse it into a `serde_json::Value` (its peak RSS)";
      if (n == "replay_50k_events_json") return "`reel replay --output-format json` of the same cassette (full run result and JSON envelope)";
      if (n == "replay_50k_events_timeline") return "`reel replay` of the same run with the recorder `timeline` (37,000 small objects)";
      if (n == "replay_floor_parse_timeline") return "the floor for that cassette: read + parse into a `serde_json::Value` (its peak RSS)";
      if (n == "replay_50k_events_json_timeline") return "`reel replay --output-format json` of the cassette with the timeline";
      if (n == "replay_50_turns_50k_events") return "`reel replay` of the 50,000 events as a 50-turn session, 3 assertions per turn judged on its slice (`reelTurns`); **floor column: the same events as a one-prompt cassette, same run**";
      if (n == "replay_50k_events_vs_original") return "`reel replay FILE` (the binary) of the 50,000-event cassette; **floor column: cowork-harness 2.0.0 `replay FILE` on node 22, same run**";
      if (n == "replay_dir_1000") return "`reel replay DIR` of 1,000 copies of a real cowork-harness cassette (34 events, session mounting a git-tracked skill); floor: read + parse every file";
      if (n == "replay_small") return "`reel replay FILE` of one 36 KB cassette (`example-multiselect-gate`); floor: a process that reads and parses it"
      if (n == "replay_small_vs_original") return "the same; **floor column: cowork-harness 2.0.0 `replay FILE`, same run**"
      if (n == "replay_fingerprint_2000") return "`reel replay FILE` of the pdf cassette with 2,000 more files (46 MB) in its git-tracked skill tree (the skill-hash check hashes them; STALE warning, exit 0); floor: `git ls-files -z | xargs -0 sha256sum`"
      if (n == "replay_fingerprint_2000_vs_original") return "the same; **floor column: cowork-harness 2.0.0 `replay FILE`, same run**"
      if (n == "replay_dir_1000_vs_original") return "the same directory; **floor column: cowork-harness 2.0.0 `replay DIR`, same run**";
      if (n == "replay_manifest_2k") return "`reel replay` of a cassette with 2,000 inlined artifacts, a 2,000-glob `no_unexpected_files` allowlist and `input_unmodified` (checks the manifest tree; nothing is written)";
      if (n == "replay_manifest_2k_mutate") return "the same with `--mutate` (50 perturbations, each a re-evaluation)";
      if (n == "replay_manifest_2k_assertions") return "the two manifest assertions alone on that cassette (one evaluation)";
      if (n == "fingerprint_2000_files") return "`reel fingerprint .` over a 2,000-file, 46 MB skill tree committed in git (whole process)";
      if (n == "verify_big_privacy") return "verify of the 50,000-event cassette, privacy scan on";
      if (n == "verify_big_no_privacy") return "verify of the 50,000-event cassette, privacy scan off";
      if (n == "verify_dir_1000") return "`verify-cassettes` of a directory of 1,000 small cassettes (all checks)";
      if (n == "rehash_dry_run_200") return "`rehash --dry-run` of 200 cassettes (100 legacy v11 with the full proof, 100 current)";
      if (n ~ /^model_turn/) { k = n; sub(/^model_turn_?/, "", k); return "scripted model: one turn over loopback HTTP" (k != "" ? " (turn " k ")" : "") }
      if (n == "record_overhead") return "`reel record` overhead: agent exit to cassette on disk";
      if (n == "snapshot_put") return "workspace snapshot of 64 MB (256 files, half text, half incompressible) into an empty store: tar + sha256 + gzip + fsync; floor: read + sha256 of the files";
      if (n == "snapshot_put_again") return "the same snapshot again into that store (blob exists: no write)";
      if (n ~ /^snapshot_record_/) { k = n; sub(/^snapshot_record_/, "", k); gsub(/_/, "-", k); return "`reel record` of " k " (real Claude Code, scripted model) with snapshots; floor: `[snapshots] record = false`" }
      if (n ~ /^record_jobs_/) { k = n; sub(/^record_jobs_/, "", k); return (k == "1" ? "`reel record scenarios/` (serial)" : "`reel record scenarios/ --jobs " k "`") ": the bundled scenarios, real Claude Code CLI + scripted models (floor: serial)" }
      if (n == "rerun_vs_record") return "`reel rerun` of the csv-stats recording (real Claude Code, 3 turns, a Bash script); floor = `reel record` of the same scenario";
      if (n == "rerun_sandbox_cost") return "the same `reel rerun`, confined (Landlock + user/PID/mount/network namespaces, the default); floor = `reel rerun --no-sandbox`";
      if (n == "report_50k_events_recording_page") return "`reel report` (recording page) of the 50,000-event cassette with timeline (load, replay verdicts, a 500-turn window, 4 KiB bodies; a 0.94 MB page); floor: read + parse";
      if (n == "diff_50k_events_one_change") return "`reel diff` of the 50,000-event cassette against a copy with one changed tool input (load both, re-drive, replay verdicts, compare every view, text); floor: read + parse both";
      return n
    }
    {
      delete f
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      t = f["seconds"]; fl = f["floor_seconds"]; rss = f["peak_rss_bytes"]; inb = f["input_bytes"]
      ratio = (fl == "-" || fl == 0) ? "-" : sprintf("%.2fx", t / fl)
      r = fmt_b(rss)
      if (rss != "-" && inb != "-" && inb > 0) r = r sprintf(" (%.2fx input)", rss / inb)
      n = f["name"]; tgt = "-"
      if (n ~ /_vs_original$/) { want = (n ~ /^replay_small/) ? 60 : 20; tgt = ((fl != "-" && t * want <= fl) ? "met" : "MISSED") ": ≥ " want "x faster than the original" }
      else if (n == "replay_50k_events" || n == "replay_50k_events_timeline") { text[n] = t; tgt = ((fl != "-" && t <= fl && rss != "-" && rss <= 1.3 * inb) ? "met" : "MISSED") ": ≤ floor, RSS ≤ 1.3x input" }
      else if (n ~ /^replay_50k_events_json/) { k = n; sub(/_json/, "", k); tgt = ((k in text && t <= 1.3 * text[k]) ? "met" : "MISSED") ": ≤ 1.3x text mode" }
      if (n == "replay_50_turns_50k_events") tgt = ((fl != "-" && t <= 1.1 * fl) ? "met" : "MISSED") ": ≤ one-turn + 10 %"
      if (n == "fingerprint_2000_files") tgt = ((fl != "-" && t <= 2 * fl) ? "met" : "MISSED") ": ≤ 2x floor"
      if (n ~ /^model_turn/) tgt = ((t < 0.005) ? "met" : "MISSED") ": < 5 ms"
      if (n == "record_overhead") tgt = ((t < 0.05) ? "met" : "MISSED") ": < 50 ms"
      if (n ~ /^snapshot_record_/) tgt = ((fl != "-" && t <= 1.1 * fl) ? "met" : "MISSED") ": < 10 % of the record"
      if (n == "rerun_vs_record") tgt = ((fl != "-" && t <= 1.1 * fl + 0.2) ? "met" : "MISSED") ": ≤ record + 10 % + 200 ms"
      if (n == "rerun_sandbox_cost") tgt = ((fl != "-" && t <= 1.05 * fl + 0.05) ? "met" : "MISSED") ": ≤ --no-sandbox + 5 % + 50 ms"
      if (n == "report_50k_events_recording_page") tgt = ((t < 1) ? "met" : "MISSED") ": < 1 s"
      if (n == "diff_50k_events_one_change") tgt = ((t < 1) ? "met" : "MISSED") ": < 1 s"
      printf "| %s | %s | %s | %s | %s | %s | %s | %s of %s |\n", desc(n), fmt_b(inb), fmt_t(t), fmt_t(fl), ratio, r, tgt, f["stat"], f["runs"]
    }' "$logs/all.bench"
  cat <<EOF

The targets come from the issues that specified each command; rows without
one are reported for their ratio to the floor. Raw bench output of the last
run: \`target/bench-logs/\`.
EOF
}

compare benches/baseline.bench "$logs/all.bench"
if [ "$rebaseline" = 1 ]; then
  cp "$logs/all.bench" benches/baseline.bench
  echo "bench.sh: benches/baseline.bench rewritten from this run" >&2
fi

# The hand-written part of docs/benchmarks.md (from this line on) is kept
# as it is: profiles, the release matrix, the suite's times.
marker='<!-- hand-written below: scripts/bench.sh keeps everything from here on -->'
hand_written() {
  [ -f docs/benchmarks.md ] || return 0
  awk -v m="$marker" '$0 == m {on = 1} on' docs/benchmarks.md
}

if [ "$write" = 1 ]; then
  mkdir -p docs
  { render; echo; hand_written; } >docs/benchmarks.md.tmp
  mv docs/benchmarks.md.tmp docs/benchmarks.md
  echo "bench.sh: wrote docs/benchmarks.md ($(grep -c '^BENCH ' "$logs/all.bench") measurements)" >&2
else
  render
fi
