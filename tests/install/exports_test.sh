#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shared library exports the public API only:
#   exports_test.sh LIBCDC_SO CDC_H
#  - its SONAME is libcdc.so.<major>;
#  - every function declared in cdc.h is exported;
#  - every exported symbol is a cdc_* function or, demangled, in namespace
#    cdc (or the typeinfo / vtable of a class there) and not in cdc::detail
#    or cdc::dupes_detail: no BLAKE3, xxHash, OpenSSL, {fmt} or libstdc++
#    symbol leaks out.
set -euo pipefail
lib="$1"; header="$2"
fail() { echo "exports_test: $*" >&2; exit 1; }
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libcdc\.so\.[0-9]+$ ]] || fail "SONAME is '$soname', expected libcdc.so.N"
exports=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u)
[[ -n "$exports" ]] || fail "nothing exported"
# The C API: every function of cdc.h.
declared=$(grep -oE '\bcdc_[a-z_0-9]+\(' "$header" | tr -d '(' | sort -u)
for f in $declared; do
  grep -qx "$f" <<<"$exports" || fail "$f (declared in cdc.h) is not exported"
done
# Everything else demangles into namespace cdc, outside the internals.
cxx=$(grep -v '^cdc_' <<<"$exports" | c++filt)
bad=$(grep -vE '^((typeinfo|typeinfo name|vtable|VTT) for )?cdc::' <<<"$cxx" || true)
[[ -z "$bad" ]] || fail "symbols outside the public API are exported:"$'\n'"$(head -20 <<<"$bad")"
internal=$(grep -E 'cdc::(detail|dupes_detail)::' <<<"$cxx" || true)
[[ -z "$internal" ]] || fail "internal symbols are exported:"$'\n'"$(head -20 <<<"$internal")"
# The C++ API is there too.
grep -q '^cdc::make_cut_finder(' <<<"$cxx" || fail "cdc::make_cut_finder is not exported"
echo "exports_test: $soname exports $(wc -l <<<"$exports") symbols: $(wc -w <<<"$declared") C functions and the C++ API, nothing internal"
