// SPDX-License-Identifier: Apache-2.0
// Decodes a fuzzer input into an algorithm, a valid profile, an optional
// key, a script of read sizes and the data to chunk.
#pragma once

#include <cdc/corpus.hpp>

#include "../support/random_options.hpp"

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace cdc::fuzz {

struct Case {
    std::shared_ptr<const CutFinder> finder;
    std::vector<std::size_t> read_sizes;  // 0 = an empty read
    std::span<const std::uint8_t> data;
};

class Bytes {
public:
    Bytes(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
    std::uint8_t u8() { return n_ ? (--n_, *p_++) : 0; }
    std::uint32_t u16() { return static_cast<std::uint32_t>(u8()) | (static_cast<std::uint32_t>(u8()) << 8); }
    std::span<const std::uint8_t> rest() const { return {p_, n_}; }

private:
    const std::uint8_t* p_;
    std::size_t n_;
};

/// Small profiles (average at most ~4 KiB) so that short inputs cross many cut points.
inline Case decode(const std::uint8_t* data, std::size_t size, KernelLevel level = KernelLevel::automatic) {
    Bytes in(data, size);
    const auto all = algorithms();
    const AlgorithmInfo& a = all[in.u8() % all.size()];
    // Options drawn from the name's rules with the input's bytes as the
    // random source (every name, its level/seed/polynomial/window included).
    const Options o = test::random_valid_options(
        a, [&] { return static_cast<std::uint64_t>(in.u16()) | (static_cast<std::uint64_t>(in.u16()) << 16); }, 4096);
    Case c;
    c.finder = make_cut_finder(a.name, o, level);
    const std::size_t nreads = 1 + in.u8() % 6;
    for (std::size_t i = 0; i < nreads; ++i) {
        const std::uint32_t v = in.u16();
        c.read_sizes.push_back(v % 7 == 0 ? 0 : v);
    }
    if (c.read_sizes.size() == 1 && c.read_sizes[0] == 0) c.read_sizes[0] = 1;
    c.data = in.rest();
    return c;
}

/// Reads `data` with the scripted sizes (cycling); the last delivery may
/// carry the end of the stream.
class ScriptReader final : public Reader {
public:
    ScriptReader(std::span<const std::uint8_t> data, const std::vector<std::size_t>& sizes)
        : data_(data), sizes_(sizes) {}
    ReadResult read(std::span<std::byte> buf) override {
        std::size_t want = sizes_[call_++ % sizes_.size()];
        if (want == 0 && ++zeros_ > 100) want = 1;  // stay below the stuck-reader bound
        if (want) zeros_ = 0;
        const std::size_t n = std::min({want, buf.size(), data_.size() - pos_});
        if (n) std::memcpy(buf.data(), data_.data() + pos_, n);
        pos_ += n;
        // At the end: a delivery may carry the end (odd calls), an empty read always does.
        return {n, pos_ == data_.size() && want != 0 && (n == 0 || (call_ & 1))};
    }

private:
    std::span<const std::uint8_t> data_;
    const std::vector<std::size_t>& sizes_;
    std::size_t pos_ = 0, call_ = 0, zeros_ = 0;
};

}  // namespace cdc::fuzz
