// SPDX-License-Identifier: Apache-2.0
// A client's chunking pipeline: a thread reads a stream into segments of a
// few MiB, cuts them (cut_lengths: the boundaries of cdc::Chunker) and
// computes each chunk's BLAKE3 id (with one more thread: hashing is most of
// the work), while the caller consumes the segments before it (lists,
// compression, the whole-file digest). A fixed set of
// segments is reused: memory is kSegments x (read size + max chunk size),
// whatever the stream's length. A stream known to be small (a file of at
// most kInlineBytes) is read, cut and hashed on the caller's thread in
// next(), in one segment of its size: no thread started, no buffer of the
// read size (a tree of 25,000 small files started 50,000 threads).
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
#include <optional>
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

    /// A stream of at most this many bytes (by its size_hint) is chunked
    /// inline.
    static constexpr std::uint64_t kInlineBytes = std::uint64_t{1} << 20;

    /// Starts reading `reader` (which must outlive the feed). `size_hint`:
    /// the stream's expected length, if known (a regular file's size: it
    /// may still differ, as the reader finds).
    ChunkFeed(std::shared_ptr<const CutFinder> finder, Reader& reader, std::size_t read_size = std::size_t{4} << 20,
              std::optional<std::uint64_t> size_hint = std::nullopt);
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
    /// The whole stream as one segment, on the caller's thread.
    Segment* next_inline();

    std::shared_ptr<const CutFinder> finder_;
    std::size_t read_size_;
    std::vector<Slot> slots_;
    std::deque<Slot*> free_;        // guarded by the handoff's lock
    Reader* inline_reader_ = nullptr;  // chunked in next() (a small stream); null once read
    std::vector<std::byte> inline_bytes_;
    Segment inline_segment_;
    std::optional<common::TaskPool> pool_;  // hashes beside the reading thread
    common::Handoff<Slot*> ready_;          // last: its thread stops before the rest goes
};

}  // namespace cdc::transfer
