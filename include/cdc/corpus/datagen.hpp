// SPDX-License-Identifier: Apache-2.0
// Deterministic data: the input specs of tests/vectors/README.md
// (empty, byte42, zeros:LEN, repeat:WORD:LEN, splitmix64:SEED:LEN,
// text:SEED:LEN), used by tests, benchmarks, `cdc gen` and sample corpora.
#pragma once

#include <cdc/corpus/splitmix64.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {


/// The SplitMix64 byte stream (8 little-endian bytes per output).
void fill_splitmix64(std::span<std::uint8_t> out, std::uint64_t seed);
/// Low-entropy text from the 64-word list (testvectors README).
void fill_text(std::span<std::uint8_t> out, std::uint64_t seed);

/// The bytes of an input spec, produced block by block: constant memory for
/// any length (`cdc gen` streams them).
class InputGenerator {
public:
    enum class Kind { zeros, repeat, splitmix64, text };
    /// Throws cdc::OptionError if the spec is malformed.
    explicit InputGenerator(std::string_view spec);
    InputGenerator(Kind kind, std::uint64_t seed, std::uint64_t length, std::string word = {});

    /// Bytes not produced yet.
    std::uint64_t left() const noexcept { return left_; }
    /// The next min(out.size(), left()) bytes; returns their count.
    std::size_t read(std::span<std::uint8_t> out);

private:
    Kind kind_;
    std::uint64_t left_ = 0;
    std::string repeat_;      // repeat: the word
    std::string_view word_;   // text: the current word (of the word list)
    std::size_t pos_ = 0;     // in repeat_ or word_
    SplitMix64 rng_;
    std::uint64_t pending_ = 0;  // splitmix64: the rest of the current output
    int pending_bytes_ = 0;
    std::uint64_t words_ = 0;    // text: words started
    bool separator_ = false;     // text: a separator is due after the current word
};

/// Generates the bytes of an input spec; throws cdc::OptionError if the spec
/// is malformed.
std::vector<std::uint8_t> generate_input(std::string_view spec);

}  // namespace cdc
