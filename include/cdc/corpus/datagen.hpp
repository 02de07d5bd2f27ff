// Deterministic data: the input specs of shared/testvectors/README.md
// (empty, byte42, zeros:LEN, repeat:WORD:LEN, splitmix64:SEED:LEN,
// text:SEED:LEN), used by tests, benchmarks, `cdc gen` and sample corpora.
#pragma once

#include <cdc/corpus/splitmix64.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace cdc {


/// The SplitMix64 byte stream (8 little-endian bytes per output).
void fill_splitmix64(std::span<std::uint8_t> out, std::uint64_t seed);
/// Low-entropy text from the 64-word list (testvectors README).
void fill_text(std::span<std::uint8_t> out, std::uint64_t seed);

/// Generates the bytes of an input spec; throws cdc::OptionError if the spec
/// is malformed.
std::vector<std::uint8_t> generate_input(std::string_view spec);

}  // namespace cdc
