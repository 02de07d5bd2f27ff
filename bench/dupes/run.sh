#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cdc dupes against fdupes, jdupes, rdfind and rmlint on one corpus, in one run.
#   bench/dupes/run.sh [CORPUS_DIR] [CDC_BINARY] [RUNS]
# Installs the peers (Debian packages) when missing, builds the corpus
# (make_corpus.py) unless CORPUS_DIR/.complete exists, warms the page cache,
# checks that every tool finds the same duplicate sets (sets.py: by inode,
# which evens out the tools' hard-link rules), then times each tool RUNS
# times (default 3) with /usr/bin/time and prints a Markdown table: median
# wall time, and the largest peak RSS of the runs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
corpus="${1:-/tmp/cdc-dupes-bench}"
cdc="${2:-$here/../../build/cdc}"
runs="${3:-3}"
out="$(mktemp -d /tmp/cdc-dupes-results-XXXXXX)"

need=()
for p in fdupes jdupes rdfind rmlint time python3; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then need+=("$p"); fi
done
if ((${#need[@]})); then
  echo "run.sh: installing ${need[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[[ -x "$cdc" ]] || { echo "run.sh: no cdc binary at $cdc (scripts/build.sh release)" >&2; exit 2; }

if [[ ! -e "$corpus/.complete" ]]; then
  python3 "$here/make_corpus.py" "$corpus"
  touch "$corpus/.complete"
fi
# Warm cache: every file read once before any tool runs.
find "$corpus" -type f -print0 | xargs -0 cat > /dev/null

# name | command writing its result to $res | format for sets.py
tools=(
  "cdc dupes --mode compare|$cdc dupes -q --mode compare --json $corpus > \$res|cdc-json"
  "cdc dupes --mode hash (blake3)|$cdc dupes -q --mode hash --json $corpus > \$res|cdc-json"
  "cdc dupes --mode hash --digest xxh3|$cdc dupes -q --mode hash --digest xxh3 --json $corpus > \$res|cdc-json"
  "cdc dupes (auto)|$cdc dupes -q --json $corpus > \$res|cdc-json"
  "fdupes -r -q|fdupes -r -q $corpus > \$res|fdupes"
  "jdupes -r -q|jdupes -r -q $corpus > \$res|fdupes"
  "rdfind|rdfind -outputname \$res $corpus > /dev/null|rdfind"
  "rmlint -T df|rmlint -T df -o fdupes:\$res $corpus > /dev/null 2>&1|fdupes"
)

echo "corpus: $(du -sh --apparent-size "$corpus" | cut -f1) apparent, $(find "$corpus" -type f | wc -l) paths; cdc $("$cdc" --version); $(nproc) cores" >&2
base_rss=$(/usr/bin/time -f "%M" "$cdc" --help 2>&1 >/dev/null | tail -1)
bash_rss=$(/usr/bin/time -f "%M" bash -c "true" 2>&1 >/dev/null | tail -1)
printf "| tool | wall s (median of %s) | vs cdc compare | peak RSS MB | same sets |\n|---|---:|---:|---:|---|\n" "$runs"
ref=""
first_wall=""
for entry in "${tools[@]}"; do
  IFS='|' read -r name cmd fmt <<<"$entry"
  walls=(); rss=0
  for ((i = 0; i < runs; i++)); do
    res="$out/result.$i"
    # The tool runs directly under time(1) (its redirections are made by this
    # shell): a `bash -c` wrapper would put bash's own ~3 MB in %M, a floor
    # that hid the difference between the small tools.
    eval "/usr/bin/time -o \"\$out/time\" -f '%e %M' $cmd"
    read -r w m < <(tail -1 "$out/time")
    walls+=("$w"); ((m > rss)) && rss=$m
  done
  wall=$(printf "%s\n" "${walls[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  python3 "$here/sets.py" "$fmt" "$out/result.0" > "$out/sets"
  nsets=$(wc -l < "$out/sets")
  if [[ -z "$ref" ]]; then ref="$out/sets.ref"; cp "$out/sets" "$ref"; fi
  same=$(cmp -s "$out/sets" "$ref" && echo "yes ($nsets)" || echo "NO ($nsets)")
  [[ -z "$first_wall" ]] && first_wall=$wall
  ratio=$(python3 -c "print(f'{$wall / $first_wall:.2f}x')")
  printf "| %s | %s | %s | %.1f | %s |\n" "$name" "$wall" "$ratio" "$(python3 -c "print($rss / 1024)")" "$same"
done
echo "(cdc baseline RSS, \`cdc --help\`: $(python3 -c "print(f'{$base_rss / 1024:.1f}')") MB; for scale, \`bash -c true\`: $(python3 -c "print(f'{$bash_rss / 1024:.1f}')") MB)"
rm -rf "$out"
