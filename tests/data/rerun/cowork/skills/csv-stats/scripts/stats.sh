#!/usr/bin/env bash
# Prints {"rows": N, "total": SUM} for a CSV whose last column is numeric and
# whose first line is a header.
set -euo pipefail
awk -F, 'NR > 1 && NF > 0 { rows += 1; total += $NF }
         END { printf "{\"rows\": %d, \"total\": %d}\n", rows, total }' "$1"
