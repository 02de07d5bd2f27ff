// Reading many stored chunks back as raw bytes, in order, with the decoding
// (most of the work: zstd frames of a few KB each) on a pool of two threads:
// the caller finds each record (its SQLite connection stays on its thread)
// and adds it; blocks of about 2 MiB of raw bytes are read and decoded by the
// pool, at most three in flight, and handed to `deliver` in the order the
// chunks were added. Used where a whole file's bytes are needed from the
// store for its BLAKE3: the stored version of a file put or pushed again
// (base_list.cpp) and Store::read_chunks in raw form (the push server).
#pragma once

#include "store_impl.hpp"
#include "task_pool.hpp"

#include <atomic>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace cdc::store::detail {

class OrderedDecoder {
public:
    /// `deliver(bytes, locs)`: a block, the raw bytes of its chunks back to
    /// back and their locations (raw_size each), valid during the call.
    /// `context` prefixes a DamageError (see read_record).
    using Deliver = std::function<void(std::span<const std::byte> bytes, std::span<const Location> locs)>;
    /// `pool`: the threads that decode (shared with other work is fine: a
    /// decoder's failures stay its own).
    OrderedDecoder(TaskPool& pool, std::string context, Deliver deliver);
    /// Waits for its tasks in flight (their blocks are dropped).
    ~OrderedDecoder();
    OrderedDecoder(const OrderedDecoder&) = delete;
    OrderedDecoder& operator=(const OrderedDecoder&) = delete;

    /// The next chunk, its record at `loc` in the pack open as `fd` (which
    /// stays open until finish). May deliver earlier blocks first.
    void add(const ChunkId& id, const Location& loc, int fd);
    /// Delivers everything added. Rethrows the first read or decode error.
    void finish();

private:
    struct Block {
        std::vector<ChunkId> ids;
        std::vector<Location> locs;
        std::vector<int> fds;
        std::size_t raw_bytes = 0;
        std::vector<std::byte> out;
        std::exception_ptr error;  // the task's, rethrown on delivery
        std::atomic<bool> done{false};
    };
    void submit();
    void deliver_front();

    std::string context_;
    Deliver deliver_;
    std::unique_ptr<Block> filling_;
    std::deque<std::unique_ptr<Block>> inflight_;
    TaskPool& pool_;
};

}  // namespace cdc::store::detail
