#!/usr/bin/env bash
# Installs the pinned Claude Code CLI into a project-local, git-ignored directory
# (.tools/claude). reel's record tests drive this real binary against reel's
# scripted model endpoint on loopback; nothing here talks to a model provider.
set -euo pipefail
CLAUDE_CODE_VERSION="${CLAUDE_CODE_VERSION:-2.1.332}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.tools/claude"
bin="$dest/node_modules/.bin/claude"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "$CLAUDE_CODE_VERSION"; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dest"
cd "$dest"
[ -f package.json ] || npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2
"$bin" --version >&2
echo "$bin"
