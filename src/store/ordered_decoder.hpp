// SPDX-License-Identifier: Apache-2.0
// Reading many stored chunks back as raw bytes, in order, with the decoding
// (most of the work: zstd frames of a few KB each) on a pool of threads: the
// caller finds each record (its SQLite connection stays on its thread) and
// adds it; blocks of raw bytes are read and decoded by the pool, a few in
// flight, and handed to `deliver` in the order the chunks were added. Used
// wherever a file's bytes come back from the store: `get` (get.cpp), the
// stored version of a file put or pushed again (base_list.cpp) and
// Store::read_chunks in raw form, and the push server's whole-file hash
// (push_session.cpp: bytes in hand between stored chunks, add_bytes).
//
// A block's bytes are valid during `deliver`; a consumer that hands them to
// another thread (get: the whole-file hasher) keeps the block with
// Delivery::keep() and gives it back with release(), from any thread. Block
// buffers are reused (allocated once, never zero-filled): memory is at most
// (blocks_ahead + blocks_kept + 1) x block_bytes (+ a chunk larger than that).
#pragma once

#include "store_impl.hpp"
#include "../common/task_pool.hpp"

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
    struct Block;

public:
    struct Options {
        std::size_t block_bytes = std::size_t{2} << 20;  ///< raw bytes per block (a larger chunk: a block of its own)
        std::size_t blocks_ahead = 4;                    ///< a block is delivered when this many are in flight
        std::size_t blocks_kept = 0;                     ///< blocks consumers may keep at once (0: no keep())
        const crypto::Sealer* sealer = nullptr;          ///< an encrypted store's key (records.hpp)
    };
    /// What `deliver` gets: a block's raw bytes, its chunks' locations
    /// (raw_size each), and keep().
    class Delivery {
    public:
        std::span<const std::byte> bytes;
        std::span<const Location> locs;
        /// The bytes stay valid after `deliver` returns, until release(token).
        const void* keep() noexcept;

    private:
        friend class OrderedDecoder;
        explicit Delivery(Block& b) noexcept;
        Block* block_;
    };
    using Deliver = std::function<void(Delivery&)>;

    /// `pool`: the threads that decode (shared with other work is fine: a
    /// decoder's failures stay its own). `context` prefixes a DamageError
    /// (see read_record).
    OrderedDecoder(TaskPool& pool, std::string context, Deliver deliver, Options options);
    OrderedDecoder(TaskPool& pool, std::string context, Deliver deliver)
        : OrderedDecoder(pool, std::move(context), std::move(deliver), Options{}) {}
    /// Waits for its tasks in flight (their blocks are dropped). Kept blocks
    /// must be released, or no longer read, before.
    ~OrderedDecoder();
    OrderedDecoder(const OrderedDecoder&) = delete;
    OrderedDecoder& operator=(const OrderedDecoder&) = delete;

    /// The next chunk, its record at `loc` in `pack` (which stays open
    /// until finish). May deliver earlier blocks first.
    void add(const ChunkId& id, const Location& loc, const PackReader& pack);
    /// The same with the pack opened by `packs`; at their bound, what is
    /// added is delivered first and `packs` closes them all.
    void add(const ChunkId& id, const Location& loc, PackFiles& packs);
    /// Bytes in hand, delivered in their place among the chunks (copied
    /// into the block at once: `bytes` may go once this returns). Their
    /// Location in a delivery has only raw_size.
    void add_bytes(std::span<const std::byte> bytes);
    /// Delivers everything added (adding may go on after). Rethrows the
    /// first read or decode error.
    void finish();
    /// Gives back a block kept by Delivery::keep(); any thread.
    void release(const void* token) noexcept;

private:
    struct Block {
        std::vector<ChunkId> ids;
        std::vector<Location> locs;
        std::vector<const PackReader*> packs;  // nullptr: bytes of add_bytes, copied into data already
        std::size_t raw_bytes = 0;
        std::unique_ptr<std::byte[]> data;
        std::size_t capacity = 0;
        std::exception_ptr error;  // the task's, rethrown on delivery
        std::atomic<bool> done{false};
        std::atomic<bool> kept{false};  // by a consumer, until release()
    };
    void submit();
    /// Room for `bytes` raw bytes in b's buffer (a new buffer: only while
    /// nothing is in it).
    void reserve(Block& b, std::size_t bytes) const;
    /// Reads and decodes a block's chunks into its buffer (on the pool).
    void decode_block(Block& b) const;
    void deliver_front();
    std::unique_ptr<Block> fresh_block();

    std::string context_;
    Deliver deliver_;
    Options options_;
    std::unique_ptr<Block> filling_;
    std::deque<std::unique_ptr<Block>> inflight_;
    std::deque<std::unique_ptr<Block>> kept_;  // delivered and kept, in order
    std::vector<std::unique_ptr<Block>> spare_;
    TaskPool& pool_;
};

}  // namespace cdc::store::detail
