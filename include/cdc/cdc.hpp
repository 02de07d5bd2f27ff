// cdc/cdc.hpp — everything: algorithms, options, sources, the chunker and
// fingerprints.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/source.hpp>
#include <cdc/version.hpp>
