#!/usr/bin/env bash
# The GitHub Action's script (action.yml at the repository root runs it; the
# test suite runs it too, tests/it/action.rs). Two subcommands:
#
#   action.sh cache-key   print `dir=` and `key=` lines for $GITHUB_OUTPUT: where
#                         the built reel is kept and the cache key of this source
#   action.sh run         get a reel binary (REEL_ACTION_BIN, else the cached
#                         build, else `cargo install --locked --path <source>`),
#                         then run `reel replay` and `reel verify-cassettes` over
#                         the paths; both always run, the exit code is the worse
#
# Inputs (environment, set by action.yml from the action's inputs):
#   REEL_ACTION_PATHS         cassette files/dirs, whitespace-separated (default cassettes/)
#   REEL_ACTION_SHARD         I/N, passed to both commands as --shard (default: none)
#   REEL_ACTION_REPLAY_FLAGS  extra replay flags, whitespace-separated (no quoting)
#   REEL_ACTION_VERIFY_FLAGS  extra verify-cassettes flags, whitespace-separated
#   REEL_ACTION_JUNIT         write replay's JUnit here (default: none; with several
#                             paths, FILE-1.xml, FILE-2.xml, ... one per path)
#   REEL_ACTION_SKIP_VERIFY   `true`: replay only
#   REEL_ACTION_AGENT_VERSIONS  also rerun under these Claude Code releases (a matrix)
#   REEL_ACTION_MATRIX_JUNIT  write the matrix's JUnit here
#   REEL_ACTION_BIN           use this reel binary; no build
#   REEL_ACTION_SOURCE        the crate to build (default: this script's repository)
#   REEL_ACTION_INSTALL_DIR   where the build is kept (default $RUNNER_TEMP/reel-action)
#   REEL_ACTION_REPORT_DIR    write one `reel report` page per cassette here (empty: none);
#                             the job summary lists them, failing ones first, each
#                             linked to its assertions section
#   REEL_ACTION_RERUN         `true`: also `reel rerun` the paths (token-free re-execution
#                             of the skills, inside reel's kernel sandbox)
#   REEL_ACTION_RERUN_FLAGS   extra rerun flags, whitespace-separated
#   REEL_ACTION_CLAUDE_BIN    the agent binary for rerun (default: the pinned Claude
#                             Code CLI, installed with npm into $RUNNER_TEMP)
#   REEL_ACTION_CLAUDE_VERSION  the Claude Code version to install (default 2.1.332)
#
# A rerun executes the code the cassettes name. It is refused under
# `pull_request_target` (the base repository's secrets and a write token);
# reel itself starts with an environment holding no secret of the job (no
# GITHUB_TOKEN, no GITHUB_ENV), and the agent's is built from nothing. On
# hosted Ubuntu runners AppArmor blocks unprivileged user namespaces; the
# script lifts that with `sudo sysctl` when it can, so the rerun gets every
# sandbox layer, and writes the layers it got to the job summary.
# Runner environment it reads: GITHUB_ACTIONS, GITHUB_STEP_SUMMARY (reel appends
# the job summary itself), GITHUB_OUTPUT (replay-exit, verify-exit, reel),
# RUNNER_TEMP.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="${REEL_ACTION_SOURCE:-$(dirname "$here")}"
install_dir="${REEL_ACTION_INSTALL_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/reel-action}"

# The cache key: the OS, the toolchain and a digest of everything the build
# reads, so a cached binary is reused exactly when it would be rebuilt alike.
cache_key() {
    local digest rustc
    rustc="$(rustc --version 2>/dev/null || echo no-rustc)"
    digest="$(
        cd "$source_dir" &&
            { printf '%s\n' "$rustc"; find Cargo.toml Cargo.lock build.rs src schema -type f 2>/dev/null | LC_ALL=C sort | xargs sha256sum; } |
            sha256sum | cut -c1-32
    )"
    echo "reel-$(uname -s)-$(uname -m)-$digest"
}

# The reel binary to run, built once per cache key.
reel_bin() {
    if [[ -n "${REEL_ACTION_BIN:-}" ]]; then
        echo "$REEL_ACTION_BIN"
        return
    fi
    local key bin
    key="$(cache_key)"
    bin="$install_dir/bin/reel"
    if [[ -x "$bin" && "$(cat "$install_dir/key" 2>/dev/null)" == "$key" ]]; then
        echo "reel-action: reusing the cached build $bin ($key)" >&2
    else
        echo "reel-action: building reel from $source_dir (cargo install --locked)" >&2
        cargo install --locked --path "$source_dir" --root "$install_dir" --force >&2
        echo "$key" >"$install_dir/key"
    fi
    echo "$bin"
}

# Exit codes combined as reel combines them: 0 < 1 < 3 < 2.
worse() {
    local rank_a rank_b
    rank() { case "$1" in 0) echo 0 ;; 1) echo 1 ;; 3) echo 2 ;; *) echo 3 ;; esac; }
    rank_a="$(rank "$1")"
    rank_b="$(rank "$2")"
    if ((rank_a >= rank_b)); then echo "$1"; else echo "$2"; fi
}

output() {
    if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
        echo "$1" >>"$GITHUB_OUTPUT"
    fi
}

run() {
    local reel paths replay_flags verify_flags shard=() junit=() code=0 replay_code verify_code
    reel="$(reel_bin)"
    output "reel=$reel"
    read -r -a paths <<<"${REEL_ACTION_PATHS:-cassettes/}"
    read -r -a replay_flags <<<"${REEL_ACTION_REPLAY_FLAGS:-}"
    read -r -a verify_flags <<<"${REEL_ACTION_VERIFY_FLAGS:-}"
    if [[ -n "${REEL_ACTION_SHARD:-}" ]]; then
        shard=(--shard "$REEL_ACTION_SHARD")
    fi
    if [[ -n "${REEL_ACTION_JUNIT:-}" ]]; then
        junit=(--junit "$REEL_ACTION_JUNIT")
    fi

    # replay takes one target per run; with several, each gets its own
    # JUnit file (report.xml -> report-1.xml, report-2.xml, ...).
    local i=0
    for p in "${paths[@]}"; do
        i=$((i + 1))
        if [[ ${#junit[@]} -gt 0 && ${#paths[@]} -gt 1 ]]; then
            junit=(--junit "${REEL_ACTION_JUNIT%.xml}-$i.xml")
        fi
        echo "::group::reel replay $p" >&2
        set +e
        "$reel" replay "$p" "${shard[@]}" "${replay_flags[@]}" "${junit[@]}"
        replay_code=$?
        set -e
        echo "::endgroup::" >&2
        code="$(worse "$code" "$replay_code")"
    done
    output "replay-exit=$code"

    if [[ "${REEL_ACTION_SKIP_VERIFY:-false}" != "true" ]]; then
        echo "::group::reel verify-cassettes ${paths[*]}" >&2
        set +e
        "$reel" verify-cassettes "${paths[@]}" "${shard[@]}" "${verify_flags[@]}"
        verify_code=$?
        set -e
        echo "::endgroup::" >&2
        output "verify-exit=$verify_code"
        code="$(worse "$code" "$verify_code")"
    fi
    if [[ "${REEL_ACTION_RERUN:-false}" == "true" ]]; then
        local rerun_code
        set +e
        rerun_step "$reel" "${paths[@]}"
        rerun_code=$?
        set -e
        output "rerun-exit=$rerun_code"
        code="$(worse "$code" "$rerun_code")"
    fi

    if [[ -n "${REEL_ACTION_AGENT_VERSIONS:-}" ]]; then
        local matrix_junit=() matrix_code
        if [[ -n "${REEL_ACTION_MATRIX_JUNIT:-}" ]]; then
            matrix_junit=(--junit "$REEL_ACTION_MATRIX_JUNIT")
        fi
        echo "::group::reel rerun --agent-version $REEL_ACTION_AGENT_VERSIONS" >&2
        set +e
        # A matrix cell is a rerun: the same refusal and the same clean
        # environment as rerun_step.
        if refuse_untrusted_trigger; then
            enable_user_namespaces
            env -i PATH="$PATH" HOME="$HOME" CI="${CI:-true}" LANG="${LANG:-C.UTF-8}" \
                GITHUB_ACTIONS="${GITHUB_ACTIONS:-}" GITHUB_STEP_SUMMARY="${GITHUB_STEP_SUMMARY:-}" \
                ${REEL_AGENTS_DIR:+REEL_AGENTS_DIR="$REEL_AGENTS_DIR"} \
                "$reel" rerun "${paths[@]}" --agent-version "$REEL_ACTION_AGENT_VERSIONS" \
                "${shard[@]}" "${matrix_junit[@]}"
            matrix_code=$?
        else
            matrix_code=2
        fi
        set -e
        echo "::endgroup::" >&2
        output "matrix-exit=$matrix_code"
        code="$(worse "$code" "$matrix_code")"
    fi
    reports "$reel" "${paths[@]}"
    return "$code"
}

# Lets unprivileged user namespaces be created (Ubuntu 23.10+ restricts them
# through AppArmor), when passwordless sudo allows it.
enable_user_namespaces() {
    local knob=/proc/sys/kernel/apparmor_restrict_unprivileged_userns
    if [[ -r "$knob" && "$(cat "$knob")" == "1" ]] && sudo -n true 2>/dev/null; then
        sudo -n sysctl -qw kernel.apparmor_restrict_unprivileged_userns=0 >&2 &&
            echo "reel-action: unprivileged user namespaces enabled for the rerun sandbox" >&2
    fi
    return 0
}

# The agent binary: given, or the pinned Claude Code CLI installed once.
claude_bin() {
    if [[ -n "${REEL_ACTION_CLAUDE_BIN:-}" ]]; then
        echo "$REEL_ACTION_CLAUDE_BIN"
        return
    fi
    local version="${REEL_ACTION_CLAUDE_VERSION:-2.1.332}"
    local dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/reel-claude-$version"
    if [[ ! -x "$dir/node_modules/.bin/claude" ]]; then
        mkdir -p "$dir"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
            "@anthropic-ai/claude-code@$version" >&2
    fi
    echo "$dir/node_modules/.bin/claude"
}

# A rerun executes the code a cassette names: never under
# pull_request_target (the base repository's secrets and a write token).
refuse_untrusted_trigger() {
    if [[ "${GITHUB_EVENT_NAME:-}" == "pull_request_target" ]]; then
        echo "::error::reel rerun executes the code a cassette names; refusing to run it under pull_request_target (the base repository's secrets and a write token). Run it on pull_request with permissions: {}." >&2
        return 1
    fi
}

rerun_step() {
    local reel="$1" log flags=() shard=()
    shift
    refuse_untrusted_trigger || return 2
    enable_user_namespaces
    read -r -a flags <<<"${REEL_ACTION_RERUN_FLAGS:-}"
    if [[ -n "${REEL_ACTION_SHARD:-}" ]]; then
        shard=(--shard "$REEL_ACTION_SHARD")
    fi
    log="$(mktemp)"
    echo "::group::reel rerun $*" >&2
    # reel starts with no secret of the job: an empty environment but what
    # it needs to find its tools (the agent's own is built from nothing).
    env -i PATH="$PATH" HOME="$HOME" CI="${CI:-true}" LANG="${LANG:-C.UTF-8}" \
        REEL_CLAUDE_BIN="$(claude_bin)" \
        "$reel" rerun "$@" "${shard[@]}" "${flags[@]}" 2> >(tee "$log" >&2)
    local rerun_code=$?
    echo "::endgroup::" >&2
    if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
        {
            echo "### reel rerun"
            grep -E '^(sandbox:|[0-9]+ passed)' "$log" | sed 's/^/- /'
        } >>"$GITHUB_STEP_SUMMARY"
    fi
    rm -f "$log"
    return "$rerun_code"
}

# One HTML page per cassette (reel report), and their list in the job
# summary; a page's verdict is its `reel-verdict` meta tag.
reports() {
    local reel="$1" dir="${REEL_ACTION_REPORT_DIR:-}" f name files=() failing=() passing=()
    shift
    [[ -n "$dir" ]] || return 0
    mkdir -p "$dir"
    for p in "$@"; do
        if [[ -d "$p" ]]; then
            for f in "$p"/*.cassette.json; do [[ -e "$f" ]] && files+=("$f"); done
        else
            files+=("$p")
        fi
    done
    for f in "${files[@]}"; do
        name="$(basename "$f" .cassette.json)"
        if "$reel" report "$f" --out "$dir/$name.html"; then
            if grep -q '<meta name="reel-verdict" content="fail">' "$dir/$name.html"; then
                failing+=("$name")
            else
                passing+=("$name")
            fi
        fi
    done
    output "report-dir=$dir"
    if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
        {
            echo "### reel report: ${#files[@]} HTML page(s) in the \`reel-report\` artifact"
            for name in "${failing[@]}"; do
                echo "- ❌ \`$name\`: open \`$name.html#rec-assertions\` (the failing assertions)"
            done
            for name in "${passing[@]}"; do
                echo "- ✅ \`$name\`: \`$name.html\`"
            done
        } >>"$GITHUB_STEP_SUMMARY"
    fi
}

case "${1:-}" in
cache-key)
    echo "dir=$install_dir"
    echo "key=$(cache_key)"
    ;;
run)
    run
    ;;
*)
    echo "usage: action.sh cache-key | run" >&2
    exit 2
    ;;
esac
