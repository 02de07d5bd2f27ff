#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
# find_package(cdc) and pkg-config agree: cdc::cdc and `cdc` link the shared
# library, CDC_USE_STATIC_LIBS and `cdc-static` the static one; no forced
# -std in Cflags (C++20 is the user's flag, or cdc::cdc's compile feature).
needs_libcdc() { readelf -d "$1" | grep -q 'NEEDED.*\[libcdc\.so\.0\]'; }
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
needs_libcdc "$tmp/cmake/consumer"
a=$("$tmp/cmake/consumer")
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake_static" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCDC_USE_STATIC_LIBS=ON >/dev/null
cmake --build "$tmp/cmake_static" >/dev/null
! needs_libcdc "$tmp/cmake_static/consumer"
b=$("$tmp/cmake_static/consumer")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
libdir=$(pkg-config --variable=libdir cdc)
[[ $(pkg-config --cflags cdc cdc-c cdc-static) != *-std=* ]]
# shellcheck disable=SC2046
c++ -std=c++20 -o "$tmp/pc_shared" "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags --libs cdc)
needs_libcdc "$tmp/pc_shared"
c=$(LD_LIBRARY_PATH="$libdir" "$tmp/pc_shared")  # (as cdc.pc says)
# shellcheck disable=SC2046
c++ -std=c++20 -o "$tmp/pc_static" "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags --libs cdc-static)
! needs_libcdc "$tmp/pc_static"
d=$(env -u LD_LIBRARY_PATH "$tmp/pc_static")
echo "find_package shared / static: $a / $b"
echo "pkg-config cdc / cdc-static:  $c / $d"
[[ "$a" == "$b" && "$a" == "$c" && "$a" == "$d" ]]
[[ "$a" == *" 1048576 "* ]]
# The C API from a C11 program built against the installed package: with
# pkg-config's cdc-c (shared) and cdc-static, and with find_package(cdc)
# (cdc::cdc_shared).
test -f "$libdir/libcdc.a"
test -L "$libdir/libcdc.so.0"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_pc" "$src/tests/install/c_consumer/c_api_test.c" \
    $(pkg-config --cflags --libs cdc-c) -Wl,-rpath,"$libdir"
needs_libcdc "$tmp/c_pc"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror -o "$tmp/c_static" "$src/tests/install/c_consumer/c_api_test.c" \
    $(pkg-config --cflags --libs cdc-static)
! needs_libcdc "$tmp/c_static"
cmake -S "$src/tests/install/c_consumer" -B "$tmp/cmake_c" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build "$tmp/cmake_c" >/dev/null
needs_libcdc "$tmp/cmake_c/c_api_test"
bash "$src/tests/install/c_api_check.sh" "$tmp/c_pc" "$tmp/prefix/bin/cdc"
bash "$src/tests/install/c_api_check.sh" "$tmp/c_static" "$tmp/prefix/bin/cdc"
bash "$src/tests/install/c_api_check.sh" "$tmp/cmake_c/c_api_test" "$tmp/prefix/bin/cdc"
echo "C API: pkg-config (shared, static) and find_package programs agree with the installed cdc"
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
# ... and its installed S3 helper (../libexec/cdc/cdc-store-s3), which runs
# the store commands on a store whose packs are in S3: nothing listens on
# port 1, so its error (the S3 request) shows that it ran; no store is made.
test -x "$tmp/prefix/libexec/cdc/cdc-store-s3"
set +e
err=$(env -u CDC_STORE_S3 CDC_S3_RETRIES=1 AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y \
      "$tmp/prefix/bin/cdc" store init --no-encryption --packs s3://bucket/p --s3-endpoint http://127.0.0.1:1 "$tmp/s3store" 2>&1)
rc=$?
set -e
[[ $rc -eq 4 && "$err" == *"S3 GET s3://bucket"* && ! -e "$tmp/s3store" ]] || { echo "$rc: $err" >&2; exit 1; }
echo "installed cdc store with S3 packs: the helper ran ($err)"
