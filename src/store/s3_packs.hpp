// SPDX-License-Identifier: Apache-2.0
// The pack storage of a store whose packs are in an S3 bucket (docs/STORE.md,
// "Packs in S3"): pack N is the object PREFIX/packs/NNNNNNNN.pack, written
// once, whole. A sink keeps what is appended in memory up to one part
// (PackLocation::s3_part_size); at its sync the pack becomes an object by one
// PUT, or, once a part was full, by a multipart upload completed there (its
// full parts went up as they filled). Either way the object appears whole or
// not at all, never overwriting one (If-None-Match: *), and only then does
// the writer commit the catalog rows that name it. A sink is sealed by its
// sync: the writer's next records go to a new pack.
//
// Pack ids are reserved in the store's directory (DIR/packs/NNNNNNNN.uploading,
// O_EXCL) by the writers sharing the local catalog, and a new id is also
// asked of the bucket (HEAD), so that a pack uploaded by a writer that died
// before its commit (an orphan gc deletes) is never taken for free.
//
// Reads are ranged GETs through a cache of aligned blocks shared by the
// storage's readers (bounded; packs never change once written), the next
// block of a pack read at length fetched ahead (S3PackStorage::kLargeRead).
#pragma once

#include "pack_storage.hpp"
#include "s3_client.hpp"

#include <cdc/store.hpp>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace cdc::store::detail {

class S3PackStorage final : public PackStorage {
public:
    /// The packs of the store in `dir` at `where` (validated: OptionError).
    /// Credentials are read at the first request (init: at once, and the
    /// bucket is asked whether it answers and the prefix is empty).
    S3PackStorage(std::filesystem::path dir, const PackLocation& where, bool init);
    ~S3PackStorage() override;

    std::string describe(std::uint64_t id) const override;
    std::unique_ptr<PackSink> create(std::uint64_t id) override;
    /// nullptr: an object is never appended to.
    std::unique_ptr<PackSink> reopen(std::uint64_t id,
                                     const std::function<std::optional<std::uint64_t>()>& committed) override;
    void sync_names() override {}
    std::unique_ptr<PackReader> open(std::uint64_t id) const override;
    std::map<std::uint64_t, std::uint64_t> list() const override;
    void remove(std::uint64_t id) override;
    /// Nothing: an object is never longer than its committed length (it is
    /// written whole before the commit that names it).
    void truncate(std::uint64_t, std::uint64_t) override {}
    /// Aborts the multipart uploads of packs up to `up_to` under the prefix
    /// and drops their id reservations in DIR/packs (gc).
    void reclaim_incomplete(std::uint64_t up_to) override;

    /// The object key of pack `id`.
    std::string key_of(std::uint64_t id) const;
    /// The client (credentials loaded on first use).
    const s3::Client& client() const;
    std::uint64_t part_size() const noexcept { return part_size_; }

    /// The memory all of a process's sinks may hold (a pack is about the
    /// writer's 32 MiB flush, so one `cdc store put` keeps its packs in
    /// memory). A sink that would pass it writes its pack to its reservation
    /// file (DIR/packs/NNNNNNNN.uploading) instead and sends it from there: a
    /// `cdc serve` answering many pushes at once holds this much, not a pack
    /// per push (docs/BENCHMARKS.md, "Memory of one long-lived server").
    static constexpr std::uint64_t kSinksMemory = std::uint64_t{64} << 20;
    /// What the process's sinks hold now.
    static std::uint64_t sinks_memory();
    /// Tests: another bound than kSinksMemory.
    static void set_sinks_memory_bound(std::uint64_t bytes);

    /// Reads go through a cache of aligned blocks, shared by the storage's
    /// readers. A small read (a chunk of a file whose chunks hop between the
    /// packs of many days) takes a block of kBlockBytes: larger ones fetched
    /// for nothing (4 MiB: 4x the bytes and 1.2x the requests for the last
    /// of ten daily tars). A read of kLargeRead or more (the decoder's run
    /// over a file's stretch of a pack) takes blocks of kLargeBlockBytes,
    /// and the pack's next one is fetched ahead by one thread while this one
    /// is read: RGW spends about as much CPU on a request as on sending a
    /// MiB, and a reader waits only for the bytes it reads (a block is read
    /// as it arrives). 64 MiB cached in all (with 32 the large blocks push
    /// the small ones out: 2x the requests for the last of ten daily tars).
    /// docs/BENCHMARKS.md, "Packs in S3" and "`get` against the RGW's own GET".
    static constexpr std::size_t kBlockBytes = std::size_t{1} << 20;
    static constexpr std::size_t kLargeBlockBytes = std::size_t{8} << 20;
    static constexpr std::size_t kLargeRead = std::size_t{256} << 10;
    static constexpr std::size_t kCacheBytes = std::size_t{64} << 20;
    /// The large blocks of a pack fetched ahead of the one a reader is on,
    /// each by a thread of its own: RGW answers a ranged GET after a delay
    /// (it asks the OSD for the object's first stripe), so one request
    /// ahead left the link idle between answers (docs/BENCHMARKS.md).
    static constexpr std::size_t kAhead = 2;
    /// Large blocks waiting to be fetched ahead, at most (the oldest is
    /// dropped: its reader has moved on).
    static constexpr std::size_t kAheadQueue = 4;
    /// Tests: the block buffers the process's caches have allocated (a block
    /// takes the buffer of a whole block gone: two of each size are kept).
    static std::uint64_t buffers_allocated();
    /// A read of pack `id` (`size` bytes long) at `offset`, through the cache.
    std::size_t read(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::span<std::byte> out) const;
    /// The same in place (PackReader::view_at): a read of kLargeRead or more
    /// within one large block, which the view keeps (the cache may let it go
    /// meanwhile: its buffer is not lent on while the view holds it).
    PackReader::View view(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::size_t n) const;

private:
    struct Block;
    struct Buffers;
    using BlockKey = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;  // pack, block bytes, index
    struct Cache;
    /// The cache of the packs under `key` (endpoint, bucket, prefix), shared
    /// by the storages of them alive in the process.
    static std::shared_ptr<Cache> shared_cache(const std::string& key);
    /// The block, from the cache or loaded by this thread (returned when
    /// loaded; while another thread loads it, at once). `by_reader`: a
    /// reader's, not the fetch-ahead thread's.
    std::shared_ptr<Block> block(std::uint64_t id, std::uint64_t size, std::uint64_t block_bytes, std::uint64_t index,
                                 bool by_reader) const;
    /// Queues large block `index` of pack `id` for the fetch-ahead thread.
    void fetch_ahead(std::uint64_t id, std::uint64_t size, std::uint64_t index) const;
    void fetch_ahead_loop() const;
    void forget_blocks(std::uint64_t id) const;
    /// Waits until `until` bytes of `b` are in, or it is loaded (whole or
    /// short); returns its bytes in. Rethrows its loading's error.
    static std::size_t wait_for(Block& b, std::size_t until);

    std::filesystem::path dir_;
    PackLocation where_;
    s3::BucketPath path_;
    std::string endpoint_;
    std::uint64_t part_size_;
    mutable std::once_flag client_once_;
    mutable std::unique_ptr<s3::Client> client_;

    std::shared_ptr<Cache> cache_;  // shared with the process's other storages of these packs

    // The fetch-ahead thread (started by the first large read) and its queue.
    mutable std::mutex ahead_mutex_;  // (taken after Cache::mutex, never before)
    mutable std::condition_variable ahead_cv_;
    mutable std::deque<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> ahead_queue_;  // pack, size, index
    mutable bool ahead_stop_ = false;
    mutable std::vector<std::thread> ahead_threads_;
};

}  // namespace cdc::store::detail
