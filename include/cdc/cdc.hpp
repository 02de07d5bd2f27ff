// SPDX-License-Identifier: Apache-2.0
// cdc/cdc.hpp — chunking: algorithms and cut finders, options, sources, the
// chunker (and its batch loop cut_lengths), fingerprints, errors, version.
// Corpus analysis (analyze, dedup index, size statistics, resync, sweeps,
// deterministic data) is <cdc/corpus.hpp>; the duplicate-file finder is
// <cdc/dupes.hpp>; the chunk store is <cdc/store.hpp>.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/source.hpp>
#include <cdc/version.hpp>
