// cdc/cdc.hpp — everything: algorithms, options, sources, the chunker,
// fingerprints, the dedup index and statistics, corpus analysis, resync,
// sweeps and the duplicate-file finder.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/analyze.hpp>
#include <cdc/chunker.hpp>
#include <cdc/dedup_index.hpp>
#include <cdc/digest.hpp>
#include <cdc/dupes.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/resync.hpp>
#include <cdc/size_stats.hpp>
#include <cdc/splitmix64.hpp>
#include <cdc/source.hpp>
#include <cdc/store.hpp>
#include <cdc/sweep.hpp>
#include <cdc/version.hpp>
