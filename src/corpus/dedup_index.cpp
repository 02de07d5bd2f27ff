// SPDX-License-Identifier: Apache-2.0
// Open addressing with linear probing; see cdc/corpus/dedup_index.hpp for the layout
// and the memory bound.
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace cdc {

namespace {
constexpr std::size_t kMinSlots = 64;
// Grow at 80% full: linear probing stays short (expected probes for a hit
// ~ (1 + 1/(1-a)) / 2 = 3) and a table never holds more than 2x its entries.
constexpr std::uint64_t kLoadNum = 4;
constexpr std::uint64_t kLoadDen = 5;

struct KeyParts {
    std::array<std::uint32_t, 3> key;
    std::uint64_t hash;   // slot position (low bits)
    std::size_t shard;
};

KeyParts split(const Digest& d) noexcept {
    KeyParts k{};
    std::memcpy(k.key.data(), d.bytes.data(), 12);
    std::uint64_t lo = 0;
    std::memcpy(&lo, d.bytes.data(), 8);
    // The digest is uniform: its first 8 bytes place the slot, bytes 8..11
    // pick the shard (independent bits).
    k.hash = lo;
    k.shard = k.key[2] & (DedupIndex::kShards - 1);
    return k;
}
}  // namespace

DedupIndex::DedupIndex(std::uint64_t expected_chunks) : shards_(std::make_unique<Shard[]>(kShards)) {
    std::size_t per_shard = kMinSlots;
    if (expected_chunks > 0) {
        const std::uint64_t need = expected_chunks / kShards * kLoadDen / kLoadNum + 1;
        per_shard = std::max<std::size_t>(kMinSlots, std::bit_ceil(static_cast<std::size_t>(need)));
    }
    for (std::size_t i = 0; i < kShards; ++i) shards_[i].slots.assign(per_shard, Slot{{0, 0, 0}, 0});
}

DedupIndex::~DedupIndex() = default;

bool DedupIndex::insert(const Digest& digest, std::uint32_t size) {
    if (size > kMaxSize)
        throw OptionError(fmt::format("dedup index: chunk size {} is invalid: must be at most {}", size, kMaxSize));
    const KeyParts k = split(digest);
    Shard& s = shards_[k.shard];
    std::lock_guard lock(s.mutex);
    ++s.inserted;
    s.inserted_bytes += size;
    if ((s.used + 1) * kLoadDen > s.slots.size() * kLoadNum) {
        // Double and re-place every entry (its position is its key's hash).
        std::vector<Slot> bigger(s.slots.size() * 2, Slot{{0, 0, 0}, 0});
        const std::size_t mask = bigger.size() - 1;
        for (const Slot& e : s.slots) {
            if (!(e.size & kOccupied)) continue;
            std::uint64_t lo = e.key[0] | (std::uint64_t{e.key[1]} << 32);
            std::size_t i = static_cast<std::size_t>(lo) & mask;
            while (bigger[i].size & kOccupied) i = (i + 1) & mask;
            bigger[i] = e;
        }
        s.slots.swap(bigger);
    }
    const std::size_t mask = s.slots.size() - 1;
    std::size_t i = static_cast<std::size_t>(k.hash) & mask;
    for (;;) {
        Slot& e = s.slots[i];
        if (!(e.size & kOccupied)) {
            e.key = k.key;
            e.size = kOccupied | size;
            ++s.used;
            s.bytes += size;
            return true;
        }
        if (e.key == k.key) return false;
        i = (i + 1) & mask;
    }
}

bool DedupIndex::contains(const Digest& digest) const {
    const KeyParts k = split(digest);
    const Shard& s = shards_[k.shard];
    std::lock_guard lock(s.mutex);
    const std::size_t mask = s.slots.size() - 1;
    for (std::size_t i = static_cast<std::size_t>(k.hash) & mask;; i = (i + 1) & mask) {
        const Slot& e = s.slots[i];
        if (!(e.size & kOccupied)) return false;
        if (e.key == k.key) return true;
    }
}

std::uint64_t DedupIndex::distinct_chunks() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kShards; ++i) {
        std::lock_guard lock(shards_[i].mutex);
        n += shards_[i].used;
    }
    return n;
}

std::uint64_t DedupIndex::distinct_bytes() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kShards; ++i) {
        std::lock_guard lock(shards_[i].mutex);
        n += shards_[i].bytes;
    }
    return n;
}

std::uint64_t DedupIndex::inserted_chunks() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kShards; ++i) {
        std::lock_guard lock(shards_[i].mutex);
        n += shards_[i].inserted;
    }
    return n;
}

std::uint64_t DedupIndex::inserted_bytes() const {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < kShards; ++i) {
        std::lock_guard lock(shards_[i].mutex);
        n += shards_[i].inserted_bytes;
    }
    return n;
}

std::size_t DedupIndex::memory_bytes() const {
    std::size_t n = kShards * sizeof(Shard);
    for (std::size_t i = 0; i < kShards; ++i) {
        std::lock_guard lock(shards_[i].mutex);
        n += shards_[i].slots.capacity() * sizeof(Slot);
    }
    return n;
}

double DedupIndex::bytes_per_distinct_chunk() const {
    const std::uint64_t n = distinct_chunks();
    return n == 0 ? 0.0 : static_cast<double>(memory_bytes()) / static_cast<double>(n);
}

void DedupIndex::clear() {
    for (std::size_t i = 0; i < kShards; ++i) {
        Shard& s = shards_[i];
        std::lock_guard lock(s.mutex);
        std::fill(s.slots.begin(), s.slots.end(), Slot{{0, 0, 0}, 0});
        s.used = s.bytes = s.inserted = s.inserted_bytes = 0;
    }
}

static_assert(sizeof(std::array<std::uint32_t, 3>) == 12);

}  // namespace cdc
