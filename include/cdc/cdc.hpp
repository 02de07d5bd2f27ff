// cdc/cdc.hpp — the chunking library: algorithms, options, sources, the
// chunker, fingerprints, the dedup index and statistics, corpus analysis,
// resync and sweeps. (The duplicate-file finder is a library of its own:
// cdc/dupes.hpp, target cdc::dupes.)
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/analyze.hpp>
#include <cdc/chunker.hpp>
#include <cdc/dedup_index.hpp>
#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/resync.hpp>
#include <cdc/size_stats.hpp>
#include <cdc/splitmix64.hpp>
#include <cdc/source.hpp>
#include <cdc/sweep.hpp>
#include <cdc/version.hpp>
