// SPDX-License-Identifier: Apache-2.0
// borg-buzhash (COMPAT.md section 6): BorgBackup 1.2's buzhash chunker. The
// hash window starts AT the candidate cut and looks ahead; the table is
// XORed with a 32-bit seed.
#include "compat_tables.hpp"
#include "family.hpp"

#include <algorithm>

namespace cdc::detail {

namespace {

/// H(w) = XOR over j of rotl32(Ts[w[j]], (W - 1 - j) mod 32), computed whole.
std::uint32_t window_hash(const std::uint32_t* table, const std::uint8_t* w, std::size_t window) noexcept {
    std::uint32_t h = 0;
    for (std::size_t j = 0; j < window; ++j) h ^= rotl32(table[w[j]], static_cast<unsigned>((window - 1 - j) % 32));
    return h;
}

}  // namespace

std::size_t borg_scalar(const BorgParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min + p.window) return n;       // too short to scan: all of it
    const std::size_t end = std::min(n, p.max);  // E = min(R, max)
    std::uint32_t h = window_hash(p.table, w + p.min, p.window);
    for (std::size_t c = p.min;; ++c) {
        if ((h & p.mask) == 0) return c;  // chunk = D[s .. s+c)
        if (c + 1 > end - p.window - 1) return end;  // the window ending at E is never used
        // Roll: byte c leaves, byte c + W enters.
        h = rotl32(h, 1) ^ p.leaving[w[c]] ^ p.table[w[c + p.window]];
    }
}

namespace {

/// The seeded table and its rotated copy.
struct BorgTables {
    std::array<std::uint32_t, 256> table;
    std::array<std::uint32_t, 256> leaving;
};

void check(const AlgorithmInfo& info, const Profile& p) {
    if (p.window_size + p.min_size + 1 > p.max_size)
        option_error(info.name, "window_size", p.window_size,
                     fmt::format("window_size + min_size + 1 must be at most max_size ({}; borg: \"too small "
                                 "max_size\")",
                                 p.max_size));
}

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options&, KernelLevel level) {
    auto t = std::make_shared<BorgTables>();
    for (std::size_t b = 0; b < 256; ++b) {
        t->table[b] = borg_buzhash_table()[b] ^ static_cast<std::uint32_t>(p.seed);
        t->leaving[b] = rotl32(t->table[b], static_cast<unsigned>(p.window_size % 32));
    }
    const BorgParams params{t->table.data(), t->leaving.data(), p.min_size, p.max_size, p.window_size,
                            static_cast<std::uint32_t>(p.normal_size - 1)};
    return make_family_finder(info, p, level, params, &select_borg, t);
}

// borg's command line refuses chunk_max_exp > 23 (and its C code anything
// above MAX_DATA_SIZE); min, avg and max are 2^chunk_min_exp,
// 2^hash_mask_bits and 2^chunk_max_exp.
constexpr SizeRule kExponent{.low = 64, .high = 8 * MiB, .power_of_two = true};

}  // namespace

const std::array<AlgorithmRow, 1> kBorgRows = {{
    {.info = {.name = "borg-buzhash",
              .summary = "buzhash of the window after the cut; seed, window, power-of-two sizes",
              .origin = "BorgBackup 1.2.4 (borg.chunker.Chunker)",
              .default_min = 512 * KiB, .default_normal = 2 * MiB, .default_max = 8 * MiB,
              .min_rule = kExponent, .normal_rule = kExponent, .max_rule = kExponent,
              // borg hands the seed to C as a 32-bit int (u32 values >= 2^31 as value - 2^32)
              .seed = {.accepted = true, .default_value = 0, .low = 0, .high = 0xFFFFFFFF},
              // 0 crashes borg; window + min + 1 <= max is check()'s
              .window_size = {.accepted = true, .default_value = 4095, .low = 1, .high = 8 * MiB}},
     .check = &check,
     .make = &make},
}};

}  // namespace cdc::detail
