#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on built-in sample data: installs what is missing, builds the
# release, writes the sample corpus (once) and measures dedup with every
# algorithm that needs no key.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
CDC_TARGETS=cdc_tool scripts/build.sh release >/dev/null
[[ -f build/sample/.cdc-sample ]] || ./build/cdc sample --quiet build/sample
./build/cdc analyze -a all build/sample
