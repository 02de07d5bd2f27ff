// SPDX-License-Identifier: Apache-2.0
// A client's chunking pipeline: a thread reads a stream into segments of a
// few MiB, cuts them (cut_lengths: the boundaries of cdc::Chunker) and
// computes each chunk's BLAKE3 id (with one more thread: hashing is most of
// the work), while the caller consumes the segments before it (lists,
// compression, the whole-file digest). A fixed set of
// segments is reused: memory is kSegments x (read size + max chunk size),
// whatever the stream's length.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/source.hpp>
#include <cdc/store.hpp>

#include "../common/task_pool.hpp"
#include "../common/handoff.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace cdc::transfer {

class ChunkFeed {
public:
    /// Segments in all: a consumer holding this many minus one leaves the
    /// reader one to fill (it must release one before next() else).
    static constexpr std::size_t kSegments = 5;

    struct Segment {
        std::uint64_t offset = 0;              ///< of bytes[0] in the stream
        std::span<const std::byte> bytes;      ///< the chunks, back to back
        std::vector<std::uint32_t> lengths;
        std::vector<store::ChunkId> ids;
        std::vector<std::size_t> starts;       ///< of each chunk in bytes
    };

    /// Starts reading `reader` (which must outlive the feed).
    ChunkFeed(std::shared_ptr<const CutFinder> finder, Reader& reader, std::size_t read_size = std::size_t{4} << 20);
    ~ChunkFeed();
    ChunkFeed(const ChunkFeed&) = delete;
    ChunkFeed& operator=(const ChunkFeed&) = delete;

    /// The next segment, nullptr at the end of the stream; rethrows a read
    /// error. A segment stays valid until released.
    Segment* next();
    /// Gives a segment back. Segments are released in the order they came.
    void release(Segment* segment);

private:
    struct Slot {
        std::unique_ptr<std::byte[]> data;
        std::size_t size = 0;
        Segment segment;
    };
    void run(Reader& reader);

    std::shared_ptr<const CutFinder> finder_;
    std::size_t read_size_;
    std::vector<Slot> slots_;
    std::deque<Slot*> free_;        // guarded by the handoff's lock
    common::TaskPool pool_;  // hashes beside the reading thread
    common::Handoff<Slot*> ready_;          // last: its thread stops before the rest goes
};

}  // namespace cdc::transfer
