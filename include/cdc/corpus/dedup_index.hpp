// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/dedup_index.hpp — the set of distinct chunk fingerprints of a corpus.
//
//   cdc::DedupIndex index;
//   for (const cdc::Chunk& c : chunker)
//       index.insert(cdc::compute_digest(cdc::DigestKind::blake3, c.bytes),
//                    static_cast<std::uint32_t>(c.size()));
//   index.distinct_chunks(); index.distinct_bytes(); index.memory_bytes();
//
// Layout: open addressing with linear probing in flat arrays of 16-byte
// slots (a 96-bit fingerprint prefix + the chunk size with an "occupied"
// bit), split into 64 shards chosen by fingerprint bits, each with its own
// mutex, so the workers of a pool insert concurrently. A shard doubles when
// it is 80% full, so a table holds between 20 and 40 bytes per distinct
// chunk (docs/BENCHMARKS.md, "Dedup index memory", has measured figures).
//
// Only the first 12 bytes of a digest are kept: two chunks are "the same"
// when those 96 bits agree. For a uniform fingerprint (BLAKE3, SHA-256,
// XXH3-128) the chance that any two of n distinct chunks share a prefix is
// about n^2 / 2^97: ~1e-11 for a billion chunks, far below the chance of a
// disk error. Digests shorter than 12 bytes are zero-padded (Digest does so).
//
// Results do not depend on insertion order or thread count: the set of
// distinct fingerprints, their number and their bytes (equal fingerprints
// mean equal content, hence equal sizes) are the same whoever inserts first.
#pragma once

#include <cdc/digest.hpp>
#include <cdc/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace cdc {

class DedupIndex {
public:
    /// Bytes of the digest kept as the key.
    static constexpr std::size_t kKeyBytes = 12;
    /// Number of shards (a power of two).
    static constexpr std::size_t kShards = 64;
    /// Largest chunk size insert() accepts (2^31 - 1; chunks are <= 1 GiB).
    static constexpr std::uint32_t kMaxSize = 0x7fffffffu;

    /// An empty index; `expected_chunks` (0 = small) pre-sizes the shards.
    explicit DedupIndex(std::uint64_t expected_chunks = 0);
    ~DedupIndex();
    DedupIndex(const DedupIndex&) = delete;
    DedupIndex& operator=(const DedupIndex&) = delete;

    /// Adds a chunk fingerprint with the chunk's size; returns true if it was
    /// not present (a new distinct chunk). Thread-safe. Throws OptionError if
    /// size > kMaxSize.
    bool insert(const Digest& digest, std::uint32_t size);
    /// True if the fingerprint is present. Thread-safe.
    bool contains(const Digest& digest) const;

    /// Distinct fingerprints inserted so far.
    std::uint64_t distinct_chunks() const;
    /// Sum of the sizes of the distinct chunks.
    std::uint64_t distinct_bytes() const;
    /// Every insert() call so far, new or not.
    std::uint64_t inserted_chunks() const;
    std::uint64_t inserted_bytes() const;
    /// Heap bytes held by the index (slot arrays + shard headers).
    std::size_t memory_bytes() const;
    /// memory_bytes() / distinct_chunks() (0 when empty).
    double bytes_per_distinct_chunk() const;

    /// Removes everything (keeps the allocated tables).
    void clear();

    /// One distinct fingerprint: the bytes kept of its digest and the size
    /// of its chunk.
    struct Entry {
        std::array<std::uint8_t, kKeyBytes> key;
        std::uint32_t size;
    };
    /// Calls f(const Entry&) once for every distinct fingerprint, in no
    /// particular order (e.g. to merge indexes built on several machines).
    /// Each shard is locked while it is read: f must not insert here.
    template <class F>
    void for_each(F&& f) const {
        for (std::size_t i = 0; i < kShards; ++i) {
            const Shard& s = shards_[i];
            std::lock_guard lock(s.mutex);
            for (const Slot& slot : s.slots) {
                if (!(slot.size & kOccupied)) continue;
                Entry e;
                std::memcpy(e.key.data(), slot.key.data(), kKeyBytes);
                e.size = slot.size & ~kOccupied;
                f(e);
            }
        }
    }

private:
    static constexpr std::uint32_t kOccupied = 0x80000000u;  // in Slot::size
    struct Slot {
        std::array<std::uint32_t, 3> key;  // fingerprint bytes 0..11
        std::uint32_t size;                // kOccupied | chunk size; 0 = empty
    };
    struct alignas(64) Shard {
        mutable std::mutex mutex;
        std::vector<Slot> slots;  // capacity: a power of two
        std::uint64_t used = 0;
        std::uint64_t bytes = 0;
        std::uint64_t inserted = 0;
        std::uint64_t inserted_bytes = 0;
    };
    std::unique_ptr<Shard[]> shards_;
};

}  // namespace cdc
