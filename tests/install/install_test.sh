#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds a consumer with
# find_package(cdc) and another with pkg-config, and runs both; the same for
# the C API (a C11 program, gcc -std=c11 -Wall -Wextra -Werror).
#   install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; src="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/cdc/cdc.hpp"
test -x "$tmp/prefix/bin/cdc"
# The license travels with the package, and its metadata says it.
cmp "$src/LICENSE" "$tmp/prefix/share/doc/cdc/LICENSE"
test -f "$tmp/prefix/share/doc/cdc/NOTICE"
for pc in cdc cdc-c; do grep -qx 'License: Apache-2.0' "$(find "$tmp/prefix" -name "$pc.pc")"; done
# A man page for every command of the installed cdc (its helpers' included),
# found by man, and the bash, zsh and fish completions (docs/CLI.md).
pages=$("$tmp/prefix/bin/cdc" --cli-definitions | python3 -c '
import json, sys
def walk(c, path):
    yield "-".join(["cdc"] + path)
    for s in c.get("subcommands", []):
        yield from walk(s, path + [s["name"]])
print("\n".join(walk(json.load(sys.stdin), [])))')
[[ $(wc -l <<<"$pages") -gt 25 ]]
for page in $pages; do MANPATH="$tmp/prefix/share/man" man -w "$page" >/dev/null; done
test -f "$tmp/prefix/share/bash-completion/completions/cdc"
test -f "$tmp/prefix/share/zsh/site-functions/_cdc"
test -f "$tmp/prefix/share/fish/vendor_completions.d/cdc.fish"
echo "man pages and completions: $(wc -l <<<"$pages") commands"
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
a=$("$tmp/cmake/consumer")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
# (-lcdc finds libcdc.so before libcdc.a, as for any library installed both
# ways: the program needs the library's directory at run time)
# shellcheck disable=SC2046
c++ -o "$tmp/pc_consumer" "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags --libs --static cdc) \
    -Wl,-rpath,"$(pkg-config --variable=libdir cdc)"
b=$("$tmp/pc_consumer")
echo "find_package: $a"
echo "pkg-config:   $b"
[[ "$a" == "$b" ]]
[[ "$a" == *" 1048576 "* ]]
# The C API from a C11 program built against the installed package, with
# pkg-config (cdc-c) and with find_package(cdc) (cdc::cdc_shared): both link
# the shared library, whose SONAME the program records.
libdir=$(pkg-config --variable=libdir cdc-c)
test -f "$libdir/libcdc.a"
test -L "$libdir/libcdc.so.0"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_pc" "$src/tests/install/c_consumer/c_api_test.c" \
    $(pkg-config --cflags --libs cdc-c) -Wl,-rpath,"$libdir"
readelf -d "$tmp/c_pc" | grep -q 'NEEDED.*\[libcdc\.so\.0\]'
cmake -S "$src/tests/install/c_consumer" -B "$tmp/cmake_c" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build "$tmp/cmake_c" >/dev/null
readelf -d "$tmp/cmake_c/c_api_test" | grep -q 'NEEDED.*\[libcdc\.so\.0\]'
bash "$src/tests/install/c_api_check.sh" "$tmp/c_pc" "$tmp/prefix/bin/cdc"
bash "$src/tests/install/c_api_check.sh" "$tmp/cmake_c/c_api_test" "$tmp/prefix/bin/cdc"
echo "C API: pkg-config and find_package programs agree with the installed cdc"
# The installed tool finds its installed PNG helper (../libexec/cdc/cdc-plot).
test -x "$tmp/prefix/libexec/cdc/cdc-plot"
mkdir "$tmp/in"
"$tmp/prefix/bin/cdc" gen splitmix64:1:300000 -o "$tmp/in/a.bin"
env -u CDC_PLOT "$tmp/prefix/bin/cdc" plot -q --chart cdf -a fastcdc -o "$tmp/graphs" "$tmp/in"
head -c 8 "$tmp/graphs/compare-cdf.png" | od -An -c | grep -q 'P   N   G'
echo "installed cdc plot: $tmp/graphs/compare-cdf.png"
# ... and its installed dupes helper (../libexec/cdc/cdc-dupes), which runs
# `cdc dupes` in its place.
test -x "$tmp/prefix/libexec/cdc/cdc-dupes"
cp "$tmp/in/a.bin" "$tmp/in/b.bin"
out=$(env -u CDC_DUPES "$tmp/prefix/bin/cdc" dupes -q --csv "$tmp/in")
[[ "$out" == *"duplicate,1,300000,$tmp/in/a.bin"* && "$out" == *"duplicate,1,300000,$tmp/in/b.bin"* ]]
echo "installed cdc dupes: one group of 2"
