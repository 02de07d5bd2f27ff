// SPDX-License-Identifier: Apache-2.0
// Writer::Impl: a writing session (shared store lock, its own catalog
// connection, its own packs), in four files:
//   writer.cpp        the facade, manifests, single chunks, the flush
//   writer_put.cpp    put_file's pipeline: a reader thread reads and cuts
//                     segments of the stream, the pool hashes their chunks
//                     and compresses the new ones, the ingest door hashes the
//                     whole file and compares with a stored version, this
//                     thread looks chunks up and lists them in the manifest
//   writer_ahead.cpp  put_files: files read ahead on the pool (small ones
//                     whole, a large one in a chain of segments that
//                     put_file stores as they come)
// Flushes follow docs/STORE.md: packs fdatasync'ed, then one catalog commit
// with the chunk rows and manifests.
#pragma once

#include "catalog.hpp"
#include "ingest_impl.hpp"
#include "pack_writer.hpp"
#include "store_impl.hpp"
#include "../common/mapped_bytes.hpp"
#include "../common/task_pool.hpp"

#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>
#include <cdc/source.hpp>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace cdc::store::detail {

// Flush thresholds (docs/STORE.md): new record bytes, chunk references
// waiting in manifest segments, finished manifests. CDC_STORE_FLUSH_BYTES
// overrides the first (the crash tests flush often to kill between flushes).
inline constexpr std::uint64_t kDefaultFlushBytes = std::uint64_t{32} << 20;
inline constexpr std::size_t kFlushRefs = 262144;
inline constexpr std::size_t kFlushManifests = 4096;
// Raw bytes of chunks claimed by other writers (deferred) a writer holds
// before it flushes.
inline constexpr std::size_t kDeferredBytes = std::size_t{64} << 20;
// Bytes read per segment (plus MaxSize for the carried tail), segments in flight.
inline constexpr std::size_t kReadSize = std::size_t{4} << 20;
inline constexpr std::size_t kSegments = 4;
// New chunks per compression task (raw bytes).
inline constexpr std::size_t kCompressGroup = std::size_t{1} << 20;
inline constexpr std::size_t kDigestBatch = 64;
// Record bytes of single chunks (put_chunk, put_chunk_compressed) per append:
// a write(2) per ~32 chunks of 8 KiB; each push stream of a server holds one
// batch (four streams at once: 1 MiB batches set its peak memory).
inline constexpr std::size_t kSinglesBatch = std::size_t{256} << 10;
// A writer's read view for lookups is renewed after this long (begin_lookups).
inline constexpr auto kLookupSnapshotAge = std::chrono::milliseconds(100);
// put_files reads small files ahead into segments of their own, at most
// this many bytes of them (stored ones whose compression still runs count).
inline constexpr std::size_t kAheadBytes = std::size_t{48} << 20;
inline constexpr std::size_t kAheadFiles = 16;
inline constexpr std::size_t kAheadFilesRemote = 64;
// Stored files a file read whole is compared with (similar_version): the
// newest few whose lists start with its first chunk.
inline constexpr std::size_t kSimilarCandidates = 16;
// Bytes of a segment of a large file read ahead (the carried tail and new
// bytes): one huge page, in a core's L2 cache while it is cut and hashed;
// a file is held in fewer bytes than with 4 MiB segments (each needs room
// for a tail), so more files fit in the budget at once.
inline constexpr std::size_t kChainBytes = std::size_t{2} << 20;

/// The size a source will have, if known (memory, a regular file): only a
/// preference among stored files that start alike, never trusted.
std::optional<std::uint64_t> size_hint(const Source& source);
/// kDefaultFlushBytes, or CDC_STORE_FLUSH_BYTES.
std::uint64_t flush_bytes();
/// kAheadBytes, or CDC_STORE_AHEAD_BYTES (the tests lower it to make large
/// files wait for their turn): put_file's four segments and put_files'
/// read-ahead, all of a writer's buffers.
std::size_t ahead_budget();

/// A Reader over bytes in memory.
class SpanReader final : public Reader {
public:
    explicit SpanReader(std::span<const std::byte> data) : data_(data) {}
    ReadResult read(std::span<std::byte> buffer) override {
        const std::size_t n = std::min(buffer.size(), data_.size() - pos_);
        if (n) std::memcpy(buffer.data(), data_.data() + pos_, n);
        pos_ += n;
        return {n, pos_ == data_.size()};
    }

private:
    std::span<const std::byte> data_;
    std::size_t pos_ = 0;
};

struct Segment {
    /// (mapped for itself, in huge pages, common/mapped_bytes.hpp: faulting
    /// in a read-ahead budget 4 KiB at a time costs more CPU than reading
    /// the files)
    common::MappedBytes data;
    std::size_t capacity = 0;
    std::size_t size = 0;         // valid bytes
    std::size_t chunk_bytes = 0;  // bytes covered by `lengths` (from 0)
    bool eof = false;
    std::vector<std::uint32_t> lengths;
    std::vector<Digest> digests;
    std::atomic<int> hash_left{0};
    std::atomic<int> tasks_left{0};
    bool read_ahead = false;  // one of put_files' (sized to its file), not of the four
};

/// The bytes a segment could not cut yet (the next one starts with them).
inline std::span<const std::byte> tail_of(const Segment& s) {
    return {s.data.get() + s.chunk_bytes, s.size - s.chunk_bytes};
}

/// Copies `tail` to the start of `to`; returns its size (fill's `carried`).
inline std::size_t carry_into(Segment& to, std::span<const std::byte> tail) {
    if (!tail.empty()) std::memcpy(to.data.get(), tail.data(), tail.size());
    return tail.size();
}

/// Hashes chunks [begin, end) of `seg` (at byte `offset`) into seg.digests.
/// The ids of chunks [begin, end) of `seg` (their bytes from `offset`),
/// BLAKE3 side by side, then keyed with `store`'s id key in an encrypted store.
void hash_range(Segment& seg, std::size_t begin, std::size_t end, std::size_t offset, const Store::Impl& store);

/// Whether a file read whole into `seg` looks for a stored file equal to it
/// under another name (similar_version): two chunks or more, all in one
/// segment's ids.
inline bool similar_candidate(const Segment& seg) noexcept {
    return seg.digests.size() >= 2 && seg.digests.size() < kIdsPerSegment;
}

// A file put_files reads ahead on the pool: a small one whole into one
// segment (its digest too), or a large one (listed over a chain segment)
// into a chain of segments, each published (hash_left 0) as soon as it is
// cut and hashed, so that put_file stores them while the task reads on. The
// task owns everything below until `ended`, except the segments it published.
struct ReadAhead {
    FileMeta meta;  // (set by the task's open, before the first segment)
    Source source;
    std::unique_ptr<Reader> own_reader;  // a memory source's
    Reader* reader = nullptr;
    std::uint64_t listed = 0;  // the size it was listed with
    bool chain = false;
    std::vector<Segment*> segs;
    std::size_t used = 0;            // segments filled
    bool whole = false;              // a small file all in segs[0], cut and hashed
    bool at_end = false;             // the file ended in the segments filled
    std::vector<std::byte> carry;    // else the last one's uncut tail (the reader reads on after it)
    std::optional<StoredFile> stored;  // a stored file of its name and listed size (small files)
    std::optional<ChunkId> digest;     // its whole-file digest, unless `stored` may spare it
    std::exception_ptr io_error, other_error;
    std::atomic<bool> ended{false};
    // (put_files' thread only) In a look_ahead batch; the stored files
    // whose lists start as its own, if the batch asked.
    bool looked_up = false;
    std::optional<std::vector<StoredFile>> similar;
};

}  // namespace cdc::store::detail

namespace cdc::store {

struct Writer::Impl {
    using Segment = detail::Segment;
    using ReadAhead = detail::ReadAhead;
    using ManifestDraft = detail::ManifestDraft;
    using TaskPool = detail::TaskPool;

    const Store::Impl& store;
    std::unique_ptr<detail::Catalog> catalog;  // this writer's own connection
    detail::StoreLock store_lock;
    std::unique_ptr<detail::PackAppender> packs;
    std::string broken;  // why a flush failed (then nothing more is written)
    std::unique_ptr<TaskPool> pool;
    std::shared_ptr<const CutFinder> finder;
    int level;
    // One read view for the lookups of many segments and files (a view
    // per file, with its shared-memory locks, costs a tree of small files
    // more than its lookups): ended by a flush, at the end of put_file /
    // put_files, and renewed after kLookupSnapshotAge, so that it never
    // holds other writers' commits out of a checkpoint for long. Its view
    // may miss chunks another writer indexed since: those are stored again
    // (garbage gc reclaims), as with two concurrent puts.
    std::chrono::steady_clock::time_point lookups_since;
    std::vector<ChunkId> lookup_ask;     // store_segment's, kept to reuse their memory
    std::vector<std::uint8_t> same_ids;  // same_chunks', likewise
    detail::IdSet lookup_found;
    // The chunk ids of the small files read ahead and ready, looked up in
    // one batch before the first of them is stored (look_ahead): those
    // asked and those found, until the next batch. A lookup per file cost
    // a round trip each on a PostgreSQL catalog (~8,000 for a backup of
    // 8,000 small files); the answers are as old as the batch, which the
    // read view of begin_lookups allows anyway.
    detail::IdSet ahead_asked, ahead_found;
    // Of those not found, the ones claimed in the same batch (Catalog::claim),
    // and those another writer had claimed first.
    detail::IdSet ahead_claimed, ahead_others;
    std::unordered_map<ChunkId, std::uint32_t, detail::IdHash> session;  // put by this writer, not yet indexed
    // New chunks another writer claimed first (Catalog::claim): their raw
    // bytes, kept until that writer has indexed them (then only referred
    // to) or, at the latest, the flush that publishes this writer's files
    // (then stored here: resolve_deferred).
    std::unordered_map<ChunkId, std::vector<std::byte>, detail::IdHash> deferred;
    std::size_t deferred_bytes = 0;
    bool claims = true;  // (false once the catalog claims nothing: a single host's)
    std::deque<ManifestDraft> manifests;  // finished ones, then at most one open (back)
    std::vector<std::int64_t> abandoned;  // pending manifest rows to delete at the next flush
    std::size_t pending_refs = 0;
    std::uint64_t unflushed_new = 0;  // raw bytes of new chunks queued since the last flush
    detail::RecordBatch singles;      // put_chunk's records not appended yet (append_singles)
    PutStats totals;
    std::atomic<std::uint64_t> stored_counter{0};  // record bytes appended by put_file's tasks
    // put_file's buffers, shared with its reader thread and compression
    // tasks: free, or busy (stored, compression running); guarded by qm.
    std::unique_ptr<std::array<Segment, detail::kSegments>> segments;
    std::mutex qm;
    std::condition_variable free_cv;
    std::deque<Segment*> free_list;
    std::deque<Segment*> busy;
    // put_files' read-ahead segments: all of them, and the free ones (qm).
    std::vector<std::unique_ptr<Segment>> ahead_segments;
    std::vector<Segment*> ahead_free;
    std::size_t ahead_bytes = 0;  // their capacity
    const std::size_t ahead_budget_bytes = detail::ahead_budget();
    bool started = false;
    // The catalog records: body bytes per piece (0: none written, the
    // store's chunks are too small), the settings record and whether this
    // writer made sure it is stored.
    std::size_t piece_body = 0;
    std::vector<std::byte> settings_bytes;
    ChunkId settings_id{};
    bool settings_stored = false;
    // put_file's ingest door: the stored version compared with, the
    // whole-file digests, one message per file (declared after the
    // segments, manifests and pool: its hasher runs queued callbacks).
    Ingest::Impl door;
    // put_files: reads more files ahead (called by put_file between segments,
    // as a large file's segments are stored and their memory freed).
    std::function<void()> more_ahead;

    explicit Impl(const Store::Impl& s);
    ~Impl();

    /// The read-ahead budget: the buffer budget less put_file's own
    /// segments (kept for them even before a stream or a file too large to
    /// read ahead needs them: all of a writer's buffers stay within it).
    std::size_t ahead_limit() const {
        const std::size_t own = detail::kSegments * (detail::kReadSize + finder->profile().max_size);
        return ahead_budget_bytes > own ? ahead_budget_bytes - own : 0;
    }

    void begin_lookups() {
        const auto now = std::chrono::steady_clock::now();
        if (catalog->reading() && now - lookups_since > detail::kLookupSnapshotAge) end_lookups();
        if (catalog->reading()) return;
        catalog->begin_read();
        lookups_since = now;
    }
    void end_lookups() { catalog->end_read(); }

    void ensure_started() {
        if (started) return;
        packs->start(*catalog);
        started = true;
    }

    TaskPool& tasks() {
        if (!pool) pool = std::make_unique<TaskPool>();
        return *pool;
    }

    /// Raw size of a chunk this writer put or the store has; nullopt if neither.
    std::optional<std::uint32_t> known(const ChunkId& id) {
        if (auto it = session.find(id); it != session.end()) return it->second;
        return catalog->chunk_size(id);
    }

    // ---------------------------------------------------------------- manifests (writer.cpp)

    void begin(const FileMeta& meta);
    ManifestDraft& open_manifest(const char* what) {
        if (manifests.empty() || manifests.back().finished)
            throw StoreError(fmt::format("{}: no manifest is open (call begin_manifest first)", what));
        return manifests.back();
    }
    void add_ref(ManifestDraft& m, const ChunkId& id, std::uint32_t raw_size);
    /// Without a digest, the door's hasher delivers it (flush waits for that).
    void finish(std::optional<ChunkId> digest, std::uint64_t size);
    void abandon();
    std::uint64_t add_chunks(std::span<const ChunkId> ids);
    void add_read_chunks(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes);

    // ---------------------------------------------------------------- flush (writer.cpp)

    std::size_t finished_count() const {  // (finished ones, then at most one open)
        return manifests.size() - (!manifests.empty() && !manifests.back().finished ? 1 : 0);
    }
    /// Whether the bytes, references or full packs held call for a flush
    /// (between files, finished manifests count too: maybe_flush).
    bool flush_due() const {
        return std::max(packs->unsynced_bytes(), unflushed_new) >= detail::flush_bytes() ||
               pending_refs >= detail::kFlushRefs || packs->retired_count() >= detail::kMaxRetiredPacks ||
               deferred_bytes >= detail::kDeferredBytes;
    }
    void maybe_flush() {
        if (flush_due() || finished_count() >= detail::kFlushManifests) flush();
    }
    /// A flush that failed leaves this writer's memory out of step with the
    /// store (chunks it counts as stored without rows, manifest rows rolled
    /// back): it refuses to write anything more.
    void check_usable() const {
        if (!broken.empty())
            throw StoreError(fmt::format("this writer can write no more: an earlier flush failed ({}); what it had not "
                                         "committed is left for gc to reclaim",
                                         broken));
    }
    void flush();
    /// Of `fresh` (indexes into seg's chunks, at byte `offsets`), the chunks
    /// another writer claimed are kept in `deferred` and dropped from it.
    void defer_claimed(const Segment& seg, std::vector<std::size_t>& fresh, PutStats& file);
    /// Waits (a few seconds at most) for the deferred chunks to be indexed
    /// by their claimants, then stores the others itself.
    void resolve_deferred();
    /// The flush proper: catalog records, packs synced, one commit.
    /// `last`: the flush's final transaction (it carries `removing`).
    void flush_commit(bool last = true);
    /// flush() with `names` in `slot` (removing or naming) for its last
    /// transaction; `slot` is empty after, whether it committed or threw.
    void flush_carrying(std::vector<std::string>& slot, std::vector<std::string> names);
    /// Removed in the next commit's final transaction (commit_removing).
    std::vector<std::string> removing;
    /// Made live again in the next commit's final transaction (commit_naming).
    std::vector<std::string> naming;
    /// The catalog records (catalog_records.hpp) of what this flush commits:
    /// the stream of each manifest with list rows or a finish in it, in
    /// pieces appended as records (not counted in the put's figures), and
    /// the settings record once; a published manifest's `records` names them.
    void write_catalog_records();
    /// Appends a catalog record of these bytes (once per writer); its id.
    ChunkId store_catalog_record(std::span<const std::byte> bytes);
    /// docs/STORE.md, "Durability": packs first, then one catalog commit.
    void flush_once();

    // ---------------------------------------------------------------- single chunks (writer.cpp)

    /// Records of put_chunk / put_chunk_compressed wait here and go to the
    /// pack by the MiB (a write(2) per chunk costs a server its time in
    /// syscalls and the zeroing of partial pages); flush appends what is left
    /// before it syncs, so nothing is indexed unwritten.
    void append_singles() {
        if (singles.entries.empty()) return;
        packs->append(singles);  // on a failure the batch stays: flush retries it or throws before indexing
        singles.clear();
    }
    ChunkPut store_one(const ChunkId& id, std::uint32_t raw_size, Codec codec, std::span<const std::byte> payload);
    /// The largest chunk the store keeps: its max chunk size (what its
    /// readers check the index against).
    std::uint64_t max_chunk() const noexcept { return store.info.profile.max_size; }
    ChunkPut put_chunk(std::span<const std::byte> raw);
    ChunkPut put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> frame,
                                  std::vector<std::byte>& raw, bool lacking);

    // ---------------------------------------------------------------- put_file (writer_put.cpp)

    PutStats put_file(const FileMeta& meta, Source source, const ProgressFn& progress, ReadAhead* ra = nullptr);
    PutStats end_file(const FileMeta& meta, ManifestDraft& m, PutStats file, std::optional<ChunkId> known = {});
    void give_back_locked(Segment* seg) {
        if (seg->read_ahead)
            ahead_free.push_back(seg);
        else
            free_list.push_back(seg);
    }
    Segment* take_segment(TaskPool& workers);
    /// put_file's own segments (its reader thread's), allocated when first
    /// needed: they live as long as the writer (a tree of small files does
    /// not allocate and fault in 16 MiB per file; one whose files put_files
    /// reads ahead never needs them).
    void ensure_segments();
    void recycle_locked();
    bool any_busy_done();
    void fill(Segment& seg, std::size_t carried, Reader& reader, const std::string& name);
    /// fill(), giving `seg` back to the free segments if it throws.
    void fill_or_give_back(Segment& seg, std::size_t carried, Reader& reader, const std::string& name) {
        try {
            fill(seg, carried, reader, name);
        } catch (...) {
            std::lock_guard lock(qm);
            give_back_locked(&seg);
            throw;
        }
    }
    void submit_hashing(Segment& seg, TaskPool& workers);
    void store_segment(Segment& seg, ManifestDraft& m, PutStats& file, TaskPool& workers, bool whole_hash = true,
                       bool stored_chunks = false);

    // ---------------------------------------------------------------- put_files (writer_ahead.cpp)

    void put_files(std::span<const Writer::Input> inputs, const Writer::InputDone& done, const ProgressFn& progress);
    /// Looks the chunk ids of the run of ready small files at the front of
    /// `ahead` up in one batch (ahead_asked, ahead_found).
    void look_ahead(const std::deque<std::unique_ptr<ReadAhead>>& ahead);
    PutStats put_read_ahead(const ReadAhead& a, Segment& seg);
    std::optional<detail::StoredFile> stored_version(const std::string& name, std::uint64_t size);
    /// `candidates`: look_ahead's answer for this segment, if it asked.
    std::optional<detail::StoredFile> similar_version(const Segment& seg, const ChunkId& digest,
                                                      const std::vector<detail::StoredFile>* candidates);
    bool same_chunks(const detail::StoredFile& stored, const Segment& seg);
    void read_file_ahead(ReadAhead& a, const Writer::Input& in, std::span<Segment* const> segs, TaskPool& workers);
    Segment* ahead_segment(std::size_t need);
    void release_ahead(Segment* seg);
    /// Frees a free read-ahead segment (qm held).
    void free_ahead_locked(Segment* old) {
        std::erase(ahead_free, old);
        ahead_bytes -= old->capacity;
        std::erase_if(ahead_segments, [&](const std::unique_ptr<Segment>& sp) { return sp.get() == old; });
    }
    void release_segments(std::span<Segment* const> segs) {
        for (Segment* sg : segs) release_ahead(sg);
    }
};

}  // namespace cdc::store
