#!/usr/bin/env bash
# Writes the release note for the day given as $1 to outputs/note.md.
set -euo pipefail
day="${1:?usage: note.sh DAY}"
mkdir -p outputs
printf 'Team: the release is on %s.\n' "$day" > outputs/note.md
echo "wrote outputs/note.md for $day"
