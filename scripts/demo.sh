#!/usr/bin/env bash
# The main job on built-in sample data: installs what is missing, builds the
# release, generates a sample and chunks it with every algorithm.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release >/dev/null
sample=build/sample.txt
[[ -f "$sample" ]] || ./build/cdc gen text:3:50331648 -o "$sample"
for a in $(./build/cdc algorithms | awk 'NR > 1 && $5 != "required" { print $1 }'); do
  ./build/cdc chunk -a "$a" --digest none --csv "$sample" |
    awk -F, -v a="$a" 'NR > 1 { n++; s += $2 } END { printf "%-16s %8d chunks %10d bytes  mean %6.0f B\n", a, n, s, s / n }'
done
