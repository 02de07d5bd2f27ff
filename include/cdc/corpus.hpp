// SPDX-License-Identifier: Apache-2.0
// cdc/corpus.hpp — corpus analysis over the chunking API: a whole corpus
// analysed in one pass (analyze), the dedup index, chunk-size statistics,
// resync after edits, parameter sweeps and deterministic test data.
#pragma once

#include <cdc/cdc.hpp>
#include <cdc/corpus/analyze.hpp>
#include <cdc/corpus/datagen.hpp>
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/corpus/size_stats.hpp>
#include <cdc/corpus/splitmix64.hpp>
#include <cdc/corpus/sweep.hpp>
