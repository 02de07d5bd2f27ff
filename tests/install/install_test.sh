#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds a consumer with
# find_package(cdc) and another with pkg-config, and runs both.
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; src="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/cdc/cdc.hpp"
test -x "$tmp/prefix/bin/cdc"
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
a=$("$tmp/cmake/consumer")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
c++ -o "$tmp/pc_consumer" "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags --libs --static cdc)
b=$("$tmp/pc_consumer")
echo "find_package: $a"
echo "pkg-config:   $b"
[[ "$a" == "$b" ]]
[[ "$a" == *" 1048576 "* ]]
# The installed tool finds its installed PNG helper (../libexec/cdc/cdc-plot).
test -x "$tmp/prefix/libexec/cdc/cdc-plot"
mkdir "$tmp/in"
"$tmp/prefix/bin/cdc" gen splitmix64:1:300000 -o "$tmp/in/a.bin"
env -u CDC_PLOT "$tmp/prefix/bin/cdc" plot -q --kind cdf -a fastcdc --out "$tmp/graphs" "$tmp/in"
head -c 8 "$tmp/graphs/compare-cdf.png" | od -An -c | grep -q 'P   N   G'
echo "installed cdc plot: $tmp/graphs/compare-cdf.png"
# ... and its installed dupes helper (../libexec/cdc/cdc-dupes), which runs
# `cdc dupes` in its place.
test -x "$tmp/prefix/libexec/cdc/cdc-dupes"
cp "$tmp/in/a.bin" "$tmp/in/b.bin"
out=$(env -u CDC_DUPES "$tmp/prefix/bin/cdc" dupes -q --csv "$tmp/in")
[[ "$out" == *"duplicate,1,300000,$tmp/in/a.bin"* && "$out" == *"duplicate,1,300000,$tmp/in/b.bin"* ]]
echo "installed cdc dupes: one group of 2"
