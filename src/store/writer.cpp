// Writer: a writing session (shared store lock, own connection, own packs).
// put_file runs a pipeline: a reader thread reads and cuts segments of the
// stream, the pool hashes their chunks (compute_digests) and compresses the
// new ones, a hasher thread hashes the whole file (ordered_hasher.hpp), this
// thread looks chunks up in the index and lists them in the manifest.
// put_files reads files ahead on the pool (ReadAhead: small ones whole, a
// large one in a chain of segments that put_file stores as they come).
// Flushes follow docs/STORE.md: packs fdatasync'ed, then one transaction
// with the chunk rows and manifests.
#include "base_list.hpp"
#include "codec.hpp"
#include "ordered_hasher.hpp"
#include "pack_writer.hpp"
#include "store_impl.hpp"
#include "task_pool.hpp"

#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>
#include <cdc/source.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <sys/mman.h>
#include <sys/stat.h>

namespace cdc::store {

using namespace detail;

namespace {
// Flush thresholds (docs/STORE.md): new record bytes, chunk references
// waiting in manifest segments, finished manifests. CDC_STORE_FLUSH_BYTES
// overrides the first (the crash tests flush often to kill between flushes).
constexpr std::uint64_t kDefaultFlushBytes = std::uint64_t{32} << 20;
constexpr std::size_t kFlushRefs = 262144;
constexpr std::size_t kFlushManifests = 4096;
// Bytes read per segment (plus MaxSize for the carried tail), segments in flight.
constexpr std::size_t kReadSize = std::size_t{4} << 20;
constexpr std::size_t kSegments = 4;
// New chunks per compression task (raw bytes).
constexpr std::size_t kCompressGroup = std::size_t{1} << 20;
constexpr std::size_t kDigestBatch = 64;
// Record bytes of single chunks (put_chunk, put_chunk_compressed) per append.
constexpr std::size_t kSinglesBatch = std::size_t{1} << 20;
// Chunk ids per index lookup statement (put_file): one statement for many
// ids saves SQLite's per-statement bind/step/reset, which cost more than the
// B-tree seek itself when each chunk had a statement of its own.
constexpr int kLookupBatch = 64;
constexpr std::size_t kFewIds = 8;  // fewer left than this: looked up one by one
constexpr auto kLookupSnapshotAge = std::chrono::milliseconds(100);

std::string lookup_sql() {
    std::string sql = "SELECT id FROM chunks WHERE id IN (?1";
    for (int i = 2; i <= kLookupBatch; ++i) sql += fmt::format(",?{}", i);
    return sql + ")";
}

/// The size a source will have, if known (memory, a regular file): only a
/// preference among stored files that start alike, never trusted.
std::optional<std::uint64_t> size_hint(const Source& source) {
    if (source.is_memory()) return source.memory_bytes().size();
    int fd = -1;
    if (const auto* fr = dynamic_cast<const FdReader*>(source.reader_ptr())) fd = fr->fd();
    if (const auto* sr = dynamic_cast<const SteadyFileReader*>(source.reader_ptr())) fd = sr->fd();
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return static_cast<std::uint64_t>(st.st_size);
    return std::nullopt;
}

std::uint64_t flush_bytes() {
    static const std::uint64_t v = [] {
        const char* e = std::getenv("CDC_STORE_FLUSH_BYTES");
        if (e == nullptr || *e == '\0') return kDefaultFlushBytes;
        char* end = nullptr;
        const unsigned long long n = std::strtoull(e, &end, 10);
        return (end && *end == '\0' && n > 0) ? static_cast<std::uint64_t>(n) : kDefaultFlushBytes;
    }();
    return v;
}

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

ChunkId id_of(const Digest& d) {
    ChunkId id;
    std::memcpy(id.data(), d.bytes.data(), id.size());
    return id;
}

/// Buffers mapped for themselves (not from malloc, whose arenas kept freed
/// segments resident: a put of many large and small files peaked 30-45 MB
/// above its buffer budget), unmapped when freed.
struct Unmap {
    std::size_t length = 0;
    void operator()(std::byte* p) const noexcept {
        if (p != nullptr) ::munmap(p, length);
    }
};
using Bytes = std::unique_ptr<std::byte[], Unmap>;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

/// `n` bytes (zero-filled by the kernel as first touched). A buffer of
/// whole 2 MiB pages is aligned to them and asks for transparent huge
/// pages: one page fault each rather than 512 (a process that faulted in
/// its 48 MiB of read-ahead 4 KiB at a time spent more CPU in faults than
/// in reading the files).
Bytes alloc_bytes(std::size_t n) {
    const std::size_t length = (n + 4095) & ~std::size_t{4095};
    const bool huge = length >= kHugePage && length % kHugePage == 0;
    const std::size_t mapped = huge ? length + kHugePage : length;
    void* raw = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    auto* p = static_cast<std::byte*>(raw);
    if (huge) {
        // (the aligned part kept, the rest unmapped)
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        const std::size_t head = ((at + kHugePage - 1) & ~(kHugePage - 1)) - at;
        if (head != 0) ::munmap(p, head);
        if (kHugePage - head != 0) ::munmap(p + head + length, kHugePage - head);
        p += head;
        ::madvise(p, length, MADV_HUGEPAGE);  // (a hint: no error matters)
    }
    return Bytes(p, Unmap{length});
}

struct Segment {
    Bytes data;
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
std::span<const std::byte> tail_of(const Segment& s) {
    return {s.data.get() + s.chunk_bytes, s.size - s.chunk_bytes};
}

/// Copies `tail` to the start of `to`; returns its size (fill's `carried`).
std::size_t carry_into(Segment& to, std::span<const std::byte> tail) {
    if (!tail.empty()) std::memcpy(to.data.get(), tail.data(), tail.size());
    return tail.size();
}

// The file stored under a name, as put_files finds it before reading a
// small file of that name and size ahead.
struct StoredVersion {
    std::int64_t row = 0;
    ChunkId digest{};
    std::uint64_t chunks = 0;
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
};

// put_files reads small files ahead into segments of their own, at most
// this many bytes of them (stored ones whose compression still runs count).
constexpr std::size_t kAheadBytes = std::size_t{48} << 20;

/// kAheadBytes, or CDC_STORE_AHEAD_BYTES (the tests lower it to make large
/// files wait for their turn): put_file's four segments and put_files'
/// read-ahead, all of a writer's buffers.
std::size_t ahead_budget() {
    const char* e = std::getenv("CDC_STORE_AHEAD_BYTES");
    if (e == nullptr || *e == '\0') return kAheadBytes;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(e, &end, 10);
    return end && *end == '\0' ? static_cast<std::size_t>(n) : kAheadBytes;
}
constexpr std::size_t kAheadFiles = 16;
// Bytes of a segment of a large file read ahead (the carried tail and new
// bytes): one huge page, in a core's L2 cache while it is cut and hashed;
// a file is held in fewer bytes than with 4 MiB segments (each needs room
// for a tail), so more files fit in the budget at once (2 MiB ones: re-puts
// of the sample 0.70x -> 0.73x analyze, of the versions tree 0.66x -> 0.75x).
constexpr std::size_t kChainBytes = std::size_t{2} << 20;

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
    std::optional<StoredVersion> stored;  // a stored file of its name and listed size (small files)
    std::optional<ChunkId> digest;        // its whole-file digest, unless `stored` may spare it
    std::exception_ptr io_error, other_error;
    std::atomic<bool> ended{false};
};

}  // namespace

struct Writer::Impl {
    struct ManifestState {
        FileMeta meta;
        std::int64_t db_id = 0;  // row of the pending manifest, once a segment went to the database
        std::uint32_t next_seq = 0;
        std::vector<std::uint8_t> current;  // ids of the segment being filled
        std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> full;  // waiting for a flush
        std::uint64_t chunks = 0;
        std::uint64_t size = 0;
        bool finished = false;
        ChunkId digest{};
        ChunkId first{};  // its first chunk's id (manifests.first_id of a list of two or more)
        // The row of the stored file this one equals (chunks, digest, mode,
        // mtime): kept as it is at the flush if it is still there unchanged.
        std::int64_t keep_row = 0;
    };

    const Store::Impl& store;
    Db db;
    StoreLock store_lock;
    std::unique_ptr<PackAppender> packs;
    std::string broken;  // why a flush failed (then nothing more is written)
    std::unique_ptr<TaskPool> pool;
    std::shared_ptr<const CutFinder> finder;
    int level;
    Stmt has_chunk;
    Stmt stored_by_name;  // put_files: the stored file of a name and size (read_ahead)
    Stmt stored_ids;      // its chunk list
    Stmt has_chunks;  // lookup_sql()
    Stmt similar_small;  // put_files: stored files a small one under a new name may equal
    // One read transaction for the lookups of many segments and files (a
    // BEGIN and COMMIT per file, with their shared-memory locks, cost a tree
    // of small files more than its lookups): ended by a flush, at the end of
    // put_file / put_files, and renewed after kLookupSnapshotAge, so that it
    // never holds other writers' commits out of a checkpoint for long. Its
    // snapshot may miss chunks another writer indexed since: those are
    // stored again (garbage gc reclaims), as with two concurrent puts.
    std::unique_ptr<Transaction> lookups;
    std::chrono::steady_clock::time_point lookups_since;
    std::vector<ChunkId> lookup_ask;  // store_segment's, kept to reuse their memory
    std::unordered_set<ChunkId, IdHash> lookup_found;
    std::unordered_map<ChunkId, std::uint32_t, IdHash> session;  // put by this writer, not yet indexed
    std::deque<ManifestState> manifests;  // finished ones, then at most one open (back)
    std::vector<std::int64_t> abandoned;  // pending manifest rows to delete at the next flush
    std::size_t pending_refs = 0;
    std::uint64_t unflushed_new = 0;  // raw bytes of new chunks queued since the last flush
    RecordBatch singles;              // put_chunk's records not appended yet (append_singles)
    PutStats totals;
    std::atomic<std::uint64_t> stored_counter{0};  // record bytes appended by put_file's tasks
    // put_file's buffers, shared with its reader thread and compression
    // tasks: free, or busy (stored, compression running); guarded by qm.
    std::unique_ptr<std::array<Segment, kSegments>> segments;
    std::mutex qm;
    std::condition_variable free_cv;
    std::deque<Segment*> free_list;
    std::deque<Segment*> busy;
    // put_files' read-ahead segments: all of them, and the free ones (qm).
    std::vector<std::unique_ptr<Segment>> ahead_segments;
    std::vector<Segment*> ahead_free;
    std::size_t ahead_bytes = 0;  // their capacity
    const std::size_t ahead_budget_bytes = ahead_budget();
    /// The read-ahead budget: the buffer budget less put_file's own
    /// segments (kept for them even before a stream or a file too large to
    /// read ahead needs them: all of a writer's buffers stay within it).
    std::size_t ahead_limit() const {
        const std::size_t own = kSegments * (kReadSize + finder->profile().max_size);
        return ahead_budget_bytes > own ? ahead_budget_bytes - own : 0;
    }
    bool started = false;
    // put_file's whole-file digests, one message per file (declared after
    // the segments, manifests and pool: its destructor runs queued callbacks).
    OrderedHasher whole_hasher;
    // put_file of a large file under a committed name: the stored version's
    // chunk list (base_list.hpp), on a connection of its own.
    std::unique_ptr<Db> base_db;
    std::unique_ptr<BaseList> base;
    // A large file whose name the store does not hold: at its first
    // segment, a stored file that starts with the same chunk is looked for.
    bool look_similar = false;
    std::optional<std::uint64_t> expected_size;  // of the file being put, if known
    // put_files: reads more files ahead (called by put_file between segments,
    // as a large file's segments are stored and their memory freed).
    std::function<void()> more_ahead;

    explicit Impl(const Store::Impl& s)
        : store(s), db(s.db_path(), false), store_lock(s.dir), level(s.info.zstd_level) {
        if (s.info.profile.keyed) {
            if (!s.key)
                throw OptionError(fmt::format("the store '{}' is keyed: give its key to put into it", s.dir.string()),
                                  "key");
            if (key_check_value(*s.key) != s.key_check)
                throw OptionError(fmt::format("wrong key for the store '{}' (its check value does not match): "
                                              "nothing was written",
                                              s.dir.string()),
                                  "key");
        }
        finder = make_cut_finder(s.info.algorithm, s.chunking_options());
        store_lock.lock(false);
        // A store made before manifests.first_id gets it from its first
        // writer (put, push): whoever looks files up by it holds a Writer.
        add_first_ids(db);
        has_chunk = Stmt(db, "SELECT raw_size FROM chunks WHERE id = ?1");
        stored_by_name = Stmt(db, "SELECT id, digest, chunk_count, mode, mtime_ns FROM manifests WHERE name = ?1 "
                                  "AND size = ?2");
        // (the row read must still be that version: a flush between the two
        // queries renews the snapshot, and a row id may be reused)
        stored_ids = Stmt(db, "SELECT ids FROM manifest_chunks WHERE manifest = ?1 AND EXISTS (SELECT 1 FROM manifests "
                              "WHERE id = ?1 AND digest = ?2 AND chunk_count = ?3) ORDER BY seq");
        has_chunks = Stmt(db, lookup_sql().c_str());
        // (of the newest stored files whose lists start with the same id,
        // those of its size and chunk count: the index's order, no sort, a
        // bounded scan however many files start alike)
        similar_small = Stmt(db,
                             "SELECT id, digest, chunk_count, mode, mtime_ns FROM (SELECT id, digest, chunk_count, "
                             "mode, mtime_ns, size, name FROM manifests WHERE first_id = ?1 ORDER BY id DESC LIMIT "
                             "16) WHERE size = ?2 AND chunk_count = ?3 AND name IS NOT NULL");
        packs = std::make_unique<PackAppender>(s.dir, s.info.pack_size);
    }

    void begin_lookups() {
        const auto now = std::chrono::steady_clock::now();
        if (lookups && now - lookups_since > kLookupSnapshotAge) end_lookups();
        if (lookups) return;
        lookups = std::make_unique<Transaction>(db, false);
        lookups_since = now;
    }

    void end_lookups() {
        if (!lookups) return;
        const std::unique_ptr<Transaction> t = std::move(lookups);
        t->commit();
    }

    ~Impl() {
        lookups.reset();  // (a read transaction: rolled back)
        if (pool) {
            try {
                pool->drain();
            } catch (...) {
                // the failure was reported to the caller already
            }
        }
    }

    void ensure_started() {
        if (started) return;
        packs->start(db);
        started = true;
    }

    TaskPool& tasks() {
        if (!pool) pool = std::make_unique<TaskPool>();
        return *pool;
    }

    /// Raw size of a chunk this writer put or the store has; nullopt if neither.
    std::optional<std::uint32_t> known(const ChunkId& id) {
        if (auto it = session.find(id); it != session.end()) return it->second;
        has_chunk.bind(1, std::span<const std::uint8_t>(id));
        std::optional<std::uint32_t> r;
        if (has_chunk.step()) r = static_cast<std::uint32_t>(has_chunk.i64(0));
        has_chunk.reset();
        return r;
    }

    /// Adds to `found` those of `ids` the index holds (not the session's).
    void indexed(std::span<const ChunkId> ids, std::unordered_set<ChunkId, IdHash>& found) {
        // Batches of kLookupBatch; a rest of fewer than kFewIds (a small
        // file's ids) one statement each: binding a padded batch for them
        // cost more than the lookups.
        const std::size_t rest = ids.size() % kLookupBatch;
        const std::size_t batched = rest < kFewIds ? ids.size() - rest : ids.size();
        for (std::size_t i = batched; i < ids.size(); ++i) {
            has_chunk.bind(1, std::span<const std::uint8_t>(ids[i]));
            if (has_chunk.step()) found.insert(ids[i]);
            has_chunk.reset();
        }
        for (std::size_t i = 0; i < batched; i += kLookupBatch) {
            const std::size_t n = std::min<std::size_t>(kLookupBatch, batched - i);
            for (std::size_t k = 0; k < std::size_t{kLookupBatch}; ++k)  // a short batch repeats its last id
                has_chunks.bind(static_cast<int>(k) + 1, std::span<const std::uint8_t>(ids[i + std::min(k, n - 1)]));
            while (has_chunks.step()) found.insert(to_id(has_chunks.blob(0), "a chunk row"));
            has_chunks.reset();
        }
    }

    // ---------------------------------------------------------------- manifests

    void begin(const FileMeta& meta) {
        if (!manifests.empty() && !manifests.back().finished)
            throw StoreError(fmt::format("begin_manifest('{}'): the manifest '{}' is still open", meta.name,
                                         manifests.back().meta.name));
        if (meta.name.empty()) throw OptionError("a manifest needs a name");
        ManifestState m;
        m.meta = meta;
        // (no reserve: a tree's small files would each hold 128 KiB, mapped
        // and faulted in, until the flush)
        manifests.push_back(std::move(m));
    }

    ManifestState& open_manifest(const char* what) {
        if (manifests.empty() || manifests.back().finished)
            throw StoreError(fmt::format("{}: no manifest is open (call begin_manifest first)", what));
        return manifests.back();
    }

    void add_ref(ManifestState& m, const ChunkId& id, std::uint32_t raw_size) {
        if (m.chunks == 0) m.first = id;
        m.current.insert(m.current.end(), id.begin(), id.end());
        ++m.chunks;
        m.size += raw_size;
        if (m.current.size() == kIdsPerSegment * 32) {
            m.full.emplace_back(m.next_seq++, std::move(m.current));
            m.current = {};
            m.current.reserve(kIdsPerSegment * 32);
            pending_refs += kIdsPerSegment;
        }
    }

    /// Without a digest, put_file's whole_hasher delivers it (flush waits for that).
    void finish(std::optional<ChunkId> digest, std::uint64_t size) {
        ManifestState& m = open_manifest("finish_manifest");
        if (size != m.size)
            throw DamageError(fmt::format("manifest '{}': size {} is not the sum of its chunks' sizes ({})",
                                          m.meta.name, size, m.size));
        if (digest) m.digest = *digest;
        m.finished = true;
        if (!m.current.empty()) {
            pending_refs += m.current.size() / 32;
            m.full.emplace_back(m.next_seq++, std::move(m.current));
            m.current = {};
        }
        ++totals.files;
        maybe_flush();
    }

    void abandon() {
        if (manifests.empty() || manifests.back().finished) return;
        if (manifests.back().db_id != 0) abandoned.push_back(manifests.back().db_id);
        for (const auto& s : manifests.back().full) pending_refs -= s.second.size() / 32;
        manifests.pop_back();
    }

    // ---------------------------------------------------------------- flush

    std::size_t finished_count() const {  // (finished ones, then at most one open)
        return manifests.size() - (!manifests.empty() && !manifests.back().finished ? 1 : 0);
    }

    /// Whether the bytes, references or full packs held call for a flush
    /// (between files, finished manifests count too: maybe_flush).
    bool flush_due() const {
        return std::max(packs->unsynced_bytes(), unflushed_new) >= flush_bytes() || pending_refs >= kFlushRefs ||
               packs->retired_count() >= kMaxRetiredPacks;
    }

    void maybe_flush() {
        if (flush_due() || finished_count() >= kFlushManifests) flush();
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

    void flush() {
        check_usable();
        try {
            flush_once();
        } catch (const std::exception& e) {
            broken = e.what();
            throw;
        } catch (...) {
            broken = "an unknown error";
            throw;
        }
    }

    /// docs/STORE.md, "Durability": packs first, then one transaction.
    void flush_once() {
        if (pool) pool->drain();
        append_singles();
        whole_hasher.wait_idle();  // every finished file's digest delivered
        totals.stored_bytes += stored_counter.exchange(0);
        auto [sizes, rows] = packs->sync();
        bool work = !sizes.empty() || !rows.empty() || !abandoned.empty();
        for (const auto& m : manifests) work = work || m.finished || !m.full.empty();
        if (!work) {
            packs->release_retired();  // no length to commit
            return;
        }
        end_lookups();
        Transaction t(db, true);
        {
            Stmt ins(db, "INSERT OR IGNORE INTO chunks(id, pack, offset, raw_size, stored_size) VALUES(?1,?2,?3,?4,?5)");
            for (const auto& r : rows) {
                ins.bind(1, std::span<const std::uint8_t>(r.id))
                    .bind(2, static_cast<std::int64_t>(r.pack))
                    .bind(3, static_cast<std::int64_t>(r.offset))
                    .bind(4, static_cast<std::int64_t>(r.raw_size))
                    .bind(5, static_cast<std::int64_t>(r.stored_size));
                ins.run();
            }
        }
        {
            Stmt up(db, "INSERT INTO packs(id, size) VALUES(?1, ?2) ON CONFLICT(id) DO UPDATE SET size = excluded.size");
            for (const auto& [id, size] : sizes) {
                up.bind(1, static_cast<std::int64_t>(id)).bind(2, static_cast<std::int64_t>(size));
                up.run();
            }
        }
        write_manifests();
        t.commit();
        packs->release_retired();  // their lengths are committed: other writers may continue them
        session.clear();
        pending_refs = 0;
        unflushed_new = 0;
        while (!manifests.empty() && manifests.front().finished) manifests.pop_front();
        abandoned.clear();
    }

    void write_manifests() {
        Stmt pending(db, "INSERT INTO manifests(pending_name) VALUES(?1)");
        Stmt seg(db, "INSERT INTO manifest_chunks(manifest, seq, ids) VALUES(?1, ?2, ?3)");
        Stmt old(db, "SELECT id FROM manifests WHERE name = ?1");
        Stmt drop_chunks(db, "DELETE FROM manifest_chunks WHERE manifest = ?1");
        Stmt drop(db, "DELETE FROM manifests WHERE id = ?1");
        Stmt publish(db,
                     "UPDATE manifests SET name = ?2, pending_name = NULL, size = ?3, mode = ?4, mtime_ns = ?5, "
                     "digest = ?6, algorithm = ?7, min_size = ?8, normal_size = ?9, max_size = ?10, keyed = ?11, "
                     "chunk_count = ?12, committed_ns = ?13, first_id = ?14 WHERE id = ?1");
        const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        const Profile& p = finder->profile();
        Stmt same(db,
                  "SELECT 1 FROM manifests WHERE id = ?1 AND name = ?2 AND digest = ?3 AND size = ?4 AND mode = ?5 "
                  "AND mtime_ns = ?6 AND chunk_count = ?7");
        for (auto& m : manifests) {
            if (m.finished && m.keep_row != 0) {
                // Put again unchanged, metadata included: if the stored row is
                // still that file (no other writer replaced it meanwhile),
                // keep it rather than write the same list again.
                same.bind(1, m.keep_row)
                    .bind(2, m.meta.name)
                    .bind(3, std::span<const std::uint8_t>(m.digest))
                    .bind(4, static_cast<std::int64_t>(m.size))
                    .bind(5, std::int64_t{m.meta.mode})
                    .bind(6, m.meta.mtime_ns)
                    .bind(7, static_cast<std::int64_t>(m.chunks));
                const bool kept = same.step();
                same.reset();
                if (kept) {
                    if (m.db_id != 0) {  // segments written as pending rows already
                        drop_chunks.bind(1, m.db_id);
                        drop_chunks.run();
                        drop.bind(1, m.db_id);
                        drop.run();
                    }
                    m.full.clear();
                    continue;
                }
            }
            if (m.db_id == 0 && (m.finished || !m.full.empty())) {
                pending.bind(1, m.meta.name);
                pending.run();
                m.db_id = db.last_insert_rowid();
            }
            for (const auto& [seq, ids] : m.full) {
                seg.bind(1, m.db_id).bind(2, std::int64_t{seq}).bind(3, std::span<const std::uint8_t>(ids));
                seg.run();
            }
            m.full.clear();
            if (!m.finished) continue;
            old.bind(1, m.meta.name);
            while (old.step()) {
                const std::int64_t id = old.i64(0);
                drop_chunks.bind(1, id);
                drop_chunks.run();
                drop.bind(1, id);
                drop.run();
            }
            old.reset();
            publish.bind(1, m.db_id)
                .bind(2, m.meta.name)
                .bind(3, static_cast<std::int64_t>(m.size))
                .bind(4, std::int64_t{m.meta.mode})
                .bind(5, m.meta.mtime_ns)
                .bind(6, std::span<const std::uint8_t>(m.digest))
                .bind(7, store.info.algorithm)
                .bind(8, static_cast<std::int64_t>(p.min_size))
                .bind(9, static_cast<std::int64_t>(p.normal_size))
                .bind(10, static_cast<std::int64_t>(p.max_size))
                .bind(11, std::int64_t{p.keyed})
                .bind(12, static_cast<std::int64_t>(m.chunks))
                .bind(13, now);
            if (m.chunks >= 2)
                publish.bind(14, std::span<const std::uint8_t>(m.first));
            else
                publish.bind_null(14);
            publish.run();
        }
        for (const std::int64_t id : abandoned) {
            drop_chunks.bind(1, id);
            drop_chunks.run();
            drop.bind(1, id);
            drop.run();
        }
    }

    // ---------------------------------------------------------------- chunks

    /// Records of put_chunk / put_chunk_compressed wait here and go to the
    /// pack by the MiB (a write(2) per chunk cost the transfer server 15% of
    /// its time in syscalls and the zeroing of partial pages); flush appends
    /// what is left before it syncs, so nothing is indexed unwritten.
    void append_singles() {
        if (singles.entries.empty()) return;
        packs->append(singles);  // on a failure the batch stays: flush retries it or throws before indexing
        singles.clear();
    }

    ChunkPut store_one(const ChunkId& id, std::uint32_t raw_size, Codec codec, std::span<const std::byte> payload) {
        ensure_started();
        // The batch's final size at most, once: grown by doubling, the
        // record that passes 1 MiB made it 2 MiB (each push server stream has one).
        if (singles.bytes.capacity() == 0) singles.bytes.reserve(kSinglesBatch + kRecordHeaderSize + max_chunk());
        const std::size_t before = singles.bytes.size();
        singles.add(id, codec, raw_size, payload);
        const std::size_t record = singles.bytes.size() - before;
        session.emplace(id, raw_size);
        unflushed_new += raw_size;
        ++totals.new_chunks;
        totals.new_bytes += raw_size;
        totals.stored_bytes += record;
        if (singles.bytes.size() >= kSinglesBatch) append_singles();
        maybe_flush();
        return {id, true, record};
    }

    /// The largest chunk the store keeps: its max chunk size (what its
    /// readers check the index against).
    std::uint64_t max_chunk() const noexcept { return store.info.profile.max_size; }

    ChunkPut put_chunk(std::span<const std::byte> raw) {
        if (raw.size() > max_chunk())
            throw OptionError(fmt::format("a chunk of {} bytes is too large for the store (at most {})", raw.size(),
                                          max_chunk()));
        const ChunkId id = chunk_id_of(raw);
        ++totals.chunks;
        totals.bytes += raw.size();
        if (known(id)) return {id, false, 0};
        std::vector<std::byte> out;
        const Codec codec = thread_compressor(level).compress(raw, out);
        return store_one(id, static_cast<std::uint32_t>(raw.size()), codec,
                         codec == Codec::zstd ? std::span<const std::byte>(out) : raw);
    }

    ChunkPut put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> frame,
                                  std::vector<std::byte>& raw, bool lacking) {
        if (raw_size > max_chunk())
            throw OptionError(fmt::format("chunk {}: raw size {} is too large for the store (at most {})", to_hex(id),
                                          raw_size, max_chunk()));
        ++totals.chunks;
        totals.bytes += raw_size;
        raw.resize(raw_size);
        thread_local Decompressor d;  // (a context per call cost the transfer server 10% of its time)
        if (!d.decompress(frame, raw))
            throw DamageError(fmt::format("chunk {}: the zstd frame does not decode to {} bytes", to_hex(id),
                                          raw_size));
        if (chunk_id_of(raw) != id)
            throw DamageError(fmt::format("chunk {}: the decoded bytes have another BLAKE3 (damaged in transit?)",
                                          to_hex(id)));
        if (lacking ? session.contains(id) : known(id).has_value()) return {id, false, 0};
        if (frame.size() < raw_size) return store_one(id, raw_size, Codec::zstd, frame);
        return store_one(id, raw_size, Codec::raw, raw);
    }

    std::uint64_t add_chunks(std::span<const ChunkId> ids) {
        ManifestState& m = open_manifest("add_chunks");
        std::uint64_t sum = 0;
        end_lookups();
        Transaction read(db, false);  // one snapshot for the lookups
        for (const ChunkId& id : ids) {
            const auto size = known(id);
            if (!size)
                throw DamageError(fmt::format("manifest '{}': chunk {} is neither in the store nor put by this writer",
                                              m.meta.name, to_hex(id)));
            add_ref(m, id, *size);
            sum += *size;
        }
        read.commit();
        return sum;
    }

    void add_read_chunks(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes) {
        ManifestState& m = open_manifest("add_read_chunks");
        if (ids.size() != sizes.size())
            throw std::invalid_argument(fmt::format("add_read_chunks: {} ids and {} sizes", ids.size(), sizes.size()));
        for (std::size_t i = 0; i < ids.size(); ++i) {
            if (sizes[i] == 0) throw std::invalid_argument("add_read_chunks: a chunk of 0 bytes");
            add_ref(m, ids[i], sizes[i]);
        }
    }

    // ---------------------------------------------------------------- files

    /// The stored version of `name` to compare a large put with, if any;
    /// else a stored file that starts alike is looked for at the first
    /// segment (one of `size`, the file's if known, first).
    void open_base(const std::string& name, std::optional<std::uint64_t> size) {
        base.reset();
        if (!base_db) base_db = std::make_unique<Db>(store.db_path(), false);
        base = BaseList::open(*base_db, store.dir, name, 0);
        look_similar = !base;
        expected_size = size;
    }

    /// Stops comparing with the stored version: the chunks that matched are
    /// read back and hashed first (this file's bytes so far, in order).
    void leave_base() {
        const std::unique_ptr<BaseList> b = std::move(base);
        b->read_matched([&](std::span<const std::byte> block) {
            whole_hasher.update(block, {});
            whole_hasher.wait_idle();  // the block is reused
        });
    }

    PutStats put_file(const FileMeta& meta, Source source, const ProgressFn& progress, ReadAhead* ra = nullptr);
    void put_files(std::span<const Writer::Input> inputs, const Writer::InputDone& done, const ProgressFn& progress);
    PutStats put_read_ahead(const FileMeta& meta, Segment& seg, std::optional<ChunkId> digest,
                            const std::optional<StoredVersion>& stored);
    std::optional<StoredVersion> stored_version(const std::string& name, std::uint64_t size);
    std::optional<StoredVersion> similar_version(const Segment& seg, const ChunkId& digest);
    void read_file_ahead(ReadAhead& a, const Writer::Input& in, std::span<Segment* const> segs, TaskPool& workers);
    bool same_chunks(const StoredVersion& stored, const Segment& seg);
    PutStats end_file(const FileMeta& meta, ManifestState& m, PutStats file, std::optional<ChunkId> known = {});
    Segment* ahead_segment(std::size_t need);
    void release_ahead(Segment* seg);
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
    void ensure_segments() {
        if (segments) return;
        segments = std::make_unique<std::array<Segment, kSegments>>();
        std::lock_guard lock(qm);
        for (auto& sg : *segments) {
            sg.capacity = kReadSize + finder->profile().max_size;
            sg.data = alloc_bytes(sg.capacity);
            free_list.push_back(&sg);
        }
    }
    /// Frees a free read-ahead segment (qm held).
    void free_ahead_locked(Segment* old) {
        std::erase(ahead_free, old);
        ahead_bytes -= old->capacity;
        std::erase_if(ahead_segments, [&](const std::unique_ptr<Segment>& sp) { return sp.get() == old; });
    }
    void release_segments(std::span<Segment* const> segs) {
        for (Segment* sg : segs) release_ahead(sg);
    }
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
    void store_segment(Segment& seg, ManifestState& m, PutStats& file, TaskPool& workers, bool whole_hash = true,
                       bool stored_chunks = false);
};

Segment* Writer::Impl::take_segment(TaskPool& workers) {
    for (;;) {
        {
            std::lock_guard lock(qm);
            recycle_locked();
            if (!free_list.empty()) {
                Segment* seg = free_list.front();
                free_list.pop_front();
                return seg;
            }
        }
        workers.wait([&] { return any_busy_done(); });
    }
}

void Writer::Impl::recycle_locked() {
    bool freed = false;
    for (auto it = busy.begin(); it != busy.end();) {
        if ((*it)->tasks_left.load() == 0) {
            give_back_locked(*it);
            it = busy.erase(it);
            freed = true;
        } else {
            ++it;
        }
    }
    if (freed) free_cv.notify_all();
}

bool Writer::Impl::any_busy_done() {
    std::lock_guard lock(qm);
    for (const Segment* b : busy)
        if (b->tasks_left.load() == 0) return true;
    return false;
}

// `carried`: the bytes the previous segment could not cut yet, at the
// start of `seg` already (carry_into).
void Writer::Impl::fill(Segment& seg, std::size_t carried, Reader& reader, const std::string& name) {
    seg.size = carried;
    // The one read loop fills the segment (or stops at the end of input).
    FillResult got;
    try {
        got = read_at_least(reader, std::span<std::byte>(seg.data.get() + seg.size, seg.capacity - seg.size),
                            seg.capacity - seg.size);
    } catch (const IoError& e) {
        throw IoError(fmt::format("reading '{}': {}", name, e.what()));
    }
    seg.size += got.bytes;
    seg.eof = got.end;
    // Cut every chunk with a full window (ALGORITHMS.md section 1).
    seg.lengths.clear();
    seg.chunk_bytes = cut_lengths(*finder, {seg.data.get(), seg.size}, seg.eof, seg.lengths);
    seg.digests.resize(seg.lengths.size());
}

void hash_range(Segment& seg, std::size_t begin, std::size_t end, std::size_t offset) {
    for (std::size_t i = begin; i < end; i += kDigestBatch) {
        const std::size_t m = std::min(kDigestBatch, end - i);
        std::size_t len = 0;
        for (std::size_t j = i; j < i + m; ++j) len += seg.lengths[j];
        compute_digests(DigestKind::blake3, {seg.data.get() + offset, len},
                        std::span<const std::uint32_t>(seg.lengths.data() + i, m),
                        std::span<Digest>(seg.digests.data() + i, m));
        offset += len;
    }
}

void Writer::Impl::submit_hashing(Segment& seg, TaskPool& workers) {
    // One task per segment: the segments in flight spread over the pool and
    // the reader (the cut: the critical path) keeps a core. Split over every
    // thread, a segment ran more hashers than cores beside the reader (a
    // same-name re-put of 1 GiB took 0.53-0.58 s, now 0.50-0.53 s; puts of
    // new data and re-puts under another name the same).
    const std::size_t n = seg.lengths.size();
    seg.hash_left.store(n ? 1 : 0);
    if (n == 0) return;
    Segment* sp = &seg;
    workers.submit([sp, n] {
        hash_range(*sp, 0, n, 0);
        sp->hash_left.fetch_sub(1);
    });
}

// `whole_hash`: the segment's bytes go to the whole-file hasher (not when the
// file's digest is known: the stored version's, or a read-ahead file's).
// `stored_chunks`: the segment's chunks are a committed file's (compared).
void Writer::Impl::store_segment(Segment& seg, ManifestState& m, PutStats& file, TaskPool& workers, bool whole_hash,
                                 bool stored_chunks) {
    // While the chunks are the stored version's (base_list.hpp), they are in
    // the store (a committed manifest's chunks are indexed, and gc waits for
    // this writer) and their bytes need no hashing now: the stored digest,
    // or a read-back at the first difference, covers them. No lookups.
    bool in_base = stored_chunks;
    if (look_similar) {
        look_similar = false;
        if (!seg.digests.empty())
            base = BaseList::open_similar(*base_db, store.dir, id_of(seg.digests[0]), expected_size, m.meta.name);
    }
    if (base) {
        in_base = base->match(seg.digests);
        if (!in_base) leave_base();
    }
    // Look the chunks this writer did not put up in the index (one read
    // snapshot, kLookupBatch ids a statement), then list them all and queue
    // the new ones.
    std::vector<std::size_t> fresh;
    if (in_base) {
        for (std::size_t i = 0; i < seg.lengths.size(); ++i) add_ref(m, id_of(seg.digests[i]), seg.lengths[i]);
    } else {
        std::vector<ChunkId>& ask = lookup_ask;
        std::unordered_set<ChunkId, IdHash>& found = lookup_found;
        ask.clear();
        found.clear();
        for (const Digest& d : seg.digests) {
            const ChunkId id = id_of(d);
            if (!session.contains(id)) ask.push_back(id);
        }
        begin_lookups();
        indexed(ask, found);
        for (std::size_t i = 0; i < seg.lengths.size(); ++i) {
            const ChunkId id = id_of(seg.digests[i]);
            add_ref(m, id, seg.lengths[i]);
            if (!session.contains(id) && !found.contains(id)) {
                session.emplace(id, seg.lengths[i]);
                fresh.push_back(i);
                file.new_bytes += seg.lengths[i];
                unflushed_new += seg.lengths[i];
            }
        }
    }
    file.bytes += seg.chunk_bytes;
    file.chunks += seg.lengths.size();
    file.new_chunks += fresh.size();
    // Compression tasks of about kCompressGroup raw bytes each; the segment
    // is recycled when they are done.
    std::vector<std::vector<std::pair<std::size_t, std::uint32_t>>> groups;  // (offset, length)
    std::vector<std::vector<ChunkId>> group_ids;
    std::size_t group_bytes = kCompressGroup;
    std::size_t next = 0, offset = 0;
    for (std::size_t i = 0; i < seg.lengths.size(); offset += seg.lengths[i], ++i) {
        if (next >= fresh.size() || fresh[next] != i) continue;
        ++next;
        if (group_bytes >= kCompressGroup) {
            groups.emplace_back();
            group_ids.emplace_back();
            group_bytes = 0;
        }
        groups.back().emplace_back(offset, seg.lengths[i]);
        group_ids.back().push_back(id_of(seg.digests[i]));
        group_bytes += seg.lengths[i];
    }
    // The compression tasks and the whole-file hasher hold the segment.
    const bool hashed_whole = whole_hash && !in_base;
    seg.tasks_left.store(static_cast<int>(groups.size()) + (hashed_whole ? 1 : 0));
    {
        std::lock_guard lock(qm);
        busy.push_back(&seg);
    }
    if (hashed_whole) {
        Segment* sp = &seg;
        whole_hasher.update({seg.data.get(), seg.chunk_bytes}, [sp, &workers] {
            sp->tasks_left.fetch_sub(1);
            workers.notify();
        });
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
        Segment* sp = &seg;
        workers.submit([this, sp, items = std::move(groups[g]), ids = std::move(group_ids[g])] {
            thread_local std::vector<std::byte> out;
            thread_local RecordBatch batch;
            batch.clear();
            Compressor& c = thread_compressor(level);
            for (std::size_t k = 0; k < items.size(); ++k) {
                const std::span<const std::byte> raw(sp->data.get() + items[k].first, items[k].second);
                const Codec codec = c.compress(raw, out);
                batch.add(ids[k], codec, items[k].second, codec == Codec::zstd ? std::span<const std::byte>(out) : raw);
            }
            packs->append(batch);
            stored_counter.fetch_add(batch.bytes.size());
            sp->tasks_left.fetch_sub(1);
        });
    }
}

// `ra`: the file read ahead by put_files (its source, metadata and reader
// are there): one segment (a file listed small that grew), or a chain its
// task is still filling, stored here as each segment is ready. Unless the
// file ended in them, the reader thread reads on from the carried tail.
PutStats Writer::Impl::put_file(const FileMeta& meta_in, Source source, const ProgressFn& progress, ReadAhead* ra) {
    ensure_started();
    TaskPool& workers = tasks();
    if (ra) {
        // Its task opens the file (and sets its metadata) before it fills
        // the first segment.
        workers.wait([&] { return ra->segs[0]->hash_left.load() == 0 || ra->ended.load(); });
        if (ra->ended.load() && ra->used == 0) {  // (used: read once ended)
            release_segments(ra->segs);
            ra->segs.clear();
            std::rethrow_exception(ra->io_error ? ra->io_error : ra->other_error);
        }
    }
    const FileMeta& meta = ra ? ra->meta : meta_in;
    begin(meta);
    look_similar = false;
    std::unique_ptr<Reader> own_reader;
    Reader* reader = ra ? ra->reader : source.reader_ptr();
    if (!ra && source.is_memory()) {
        own_reader = std::make_unique<SpanReader>(source.memory_bytes());
        reader = own_reader.get();
    }
    PutStats file;
    ProgressTicker ticker(progress);
    ManifestState& m = manifests.back();
    auto between_segments = [&] {
        if (flush_due()) flush();
        if (more_ahead) more_ahead();
    };

    // The first segment is read here: a file that fits in it (most files of
    // a tree) is cut and its chunks hashed on this thread, with no hand-over;
    // its compression goes to the pool and its whole-file digest to the
    // hasher thread, and the next file does not wait for either.
    std::thread reader_thread;
    std::deque<Segment*> ready;  // cut, hashing queued or done (guarded by qm)
    bool reader_done = false, stop = false;
    std::exception_ptr read_error;
    auto stop_reader = [&] {
        {
            std::lock_guard lock(qm);
            stop = true;
        }
        free_cv.notify_all();
        if (reader_thread.joinable()) reader_thread.join();
    };
    // The reader thread reads on after `carry` (the previous segment's uncut
    // tail) into put_file's own segments, allocated at the first large file.
    auto start_reader = [&](std::span<const std::byte> carry) {
        ensure_segments();
        reader_thread = std::thread([&, carry] {
            const Segment* prev = nullptr;
            try {
                for (;;) {
                    Segment* seg;
                    {
                        std::unique_lock lock(qm);
                        free_cv.wait(lock, [&] { return stop || !free_list.empty(); });
                        if (stop) break;
                        seg = free_list.front();
                        free_list.pop_front();
                    }
                    // (a segment goes back to the free list only once stored:
                    // `prev`, still in `ready` or busy, keeps its bytes)
                    fill_or_give_back(*seg, carry_into(*seg, prev ? tail_of(*prev) : carry), *reader, meta.name);
                    submit_hashing(*seg, workers);
                    const bool at_end = seg->eof && seg->chunk_bytes == seg->size;
                    {
                        std::lock_guard lock(qm);
                        ready.push_back(seg);
                        if (at_end) reader_done = true;
                    }
                    workers.notify();
                    prev = seg;
                    if (at_end) break;
                }
            } catch (...) {
                std::lock_guard lock(qm);
                read_error = std::current_exception();
                reader_done = true;
            }
            workers.notify();
        });
    };
    bool ra_pending = ra != nullptr;  // its task may still fill segments
    try {
        bool large = true;
        if (!ra) {
            ensure_segments();
            Segment* first = take_segment(workers);
            fill_or_give_back(*first, 0, *reader, meta.name);
            if (first->eof && first->chunk_bytes == first->size) {
                large = false;
                hash_range(*first, 0, first->lengths.size(), 0);
                store_segment(*first, m, file, workers);
                between_segments();
            } else {
                ready.push_back(first);  // (given back if what follows throws)
                submit_hashing(*first, workers);
                open_base(meta.name, size_hint(source));
                start_reader(tail_of(*first));
            }
        } else {
            {
                std::lock_guard lock(qm);
                for (Segment* sg : ra->segs) ready.push_back(sg);  // (given back if what follows throws)
            }
            open_base(meta.name, ra->listed);
        }
        while (large) {
            Segment* seg = nullptr;
            bool done = false;
            bool chain_ended = false;
            workers.wait([&] {
                std::lock_guard lock(qm);
                for (const Segment* b : busy)
                    if (b->tasks_left.load() == 0) return true;  // one to recycle for the reader
                if (ra_pending && ra->ended.load()) {
                    chain_ended = true;
                    return true;
                }
                if (!ready.empty() && ready.front()->hash_left.load() == 0) {
                    seg = ready.front();
                    return true;
                }
                if (ready.empty() && reader_done) {
                    done = true;
                    return true;
                }
                return false;
            });
            if (chain_ended) {
                // Its segments not filled go back; then the file ended in
                // them, failed, or grew since it was listed (read on).
                ra_pending = false;
                {
                    std::lock_guard lock(qm);
                    for (std::size_t k = ra->used; k < ra->segs.size(); ++k) {
                        ready.pop_back();
                        give_back_locked(ra->segs[k]);
                    }
                }
                if (ra->io_error || ra->other_error) {
                    read_error = ra->io_error ? ra->io_error : ra->other_error;
                    reader_done = true;
                } else if (ra->at_end) {
                    reader_done = true;
                } else {
                    start_reader(ra->carry);
                }
                continue;
            }
            {
                std::lock_guard lock(qm);
                recycle_locked();
                if (seg) ready.pop_front();
            }
            if (done) break;
            if (!seg) continue;
            store_segment(*seg, m, file, workers);
            between_segments();
            ticker.tick([&](Progress& pr) {
                pr.bytes_done = file.bytes;
                pr.new_bytes = file.new_bytes;
            });
        }
        stop_reader();
        if (read_error) std::rethrow_exception(read_error);
    } catch (...) {
        stop_reader();
        try {
            workers.drain();  // (a chain's task too: its segments are in `ready`)
        } catch (...) {
        }
        base.reset();
        whole_hasher.end_message({});  // drops this file's digest; the next file's starts afresh
        {
            // Segments cut but not stored go back to the free list.
            std::lock_guard lock(qm);
            for (Segment* r : ready) give_back_locked(r);
            recycle_locked();
        }
        abandon();
        throw;
    }
    return end_file(meta, m, file);
}

// The end of a file's put: its figures, and its manifest finished (with the
// stored version's digest when it equals it, else the one the hasher makes).
PutStats Writer::Impl::end_file(const FileMeta& meta, ManifestState& m, PutStats file, std::optional<ChunkId> known) {
    file.stored_bytes = 0;  // counted at the next flush (compression may still run)
    file.files = 1;
    totals.bytes += file.bytes;
    totals.chunks += file.chunks;
    totals.new_chunks += file.new_chunks;
    totals.new_bytes += file.new_bytes;
    if (base) {
        const bool same = base->complete() && base->size() == file.bytes;
        if (same) {
            // The stored version's chunks, all of them: its bytes, its digest.
            const ChunkId digest = base->digest();
            const bool same_name = base->name() == meta.name;
            if (same_name && meta.mode == base->mode() && meta.mtime_ns == base->mtime_ns() &&
                m.chunks == base->chunk_count())
                m.keep_row = base->manifest_row();
            base.reset();
            if (same_name) {
                file.unchanged_files = 1;
                ++totals.unchanged_files;
            } else {
                file.identical_files = 1;
                ++totals.identical_files;
            }
            finish(digest, file.bytes);
            return file;
        }
        leave_base();
    }
    if (known) {
        finish(known, file.bytes);
        return file;
    }
    // The digest arrives once the hasher is through this file; the manifest
    // (in a deque: it stays put) is written at a flush, which waits for it.
    whole_hasher.end_message([mp = &m](const Digest& d) { mp->digest = id_of(d); });
    finish(std::nullopt, file.bytes);
    return file;
}

// ---------------------------------------------------------------- put_files

Segment* Writer::Impl::ahead_segment(std::size_t need) {
    std::lock_guard lock(qm);
    recycle_locked();
    Segment* best = nullptr;
    for (Segment* sg : ahead_free)
        if (sg->capacity >= need && (!best || sg->capacity < best->capacity)) best = sg;
    if (best) {
        std::erase(ahead_free, best);
        return best;
    }
    // A new one, within the budget: free ones too small make room first,
    // the smallest first (a large one is costlier to fault in again), and
    // only if that makes enough room.
    std::size_t free_bytes = 0;
    for (const Segment* sg : ahead_free) free_bytes += sg->capacity;
    const std::size_t limit = ahead_limit();
    if (ahead_bytes - free_bytes + need > limit) return nullptr;
    std::sort(ahead_free.begin(), ahead_free.end(),
              [](const Segment* x, const Segment* y) { return x->capacity > y->capacity; });
    while (ahead_bytes + need > limit) free_ahead_locked(ahead_free.back());
    auto sg = std::make_unique<Segment>();
    sg->read_ahead = true;
    sg->capacity = need;
    sg->data = alloc_bytes(need);
    ahead_bytes += need;
    best = sg.get();
    ahead_segments.push_back(std::move(sg));
    return best;
}

void Writer::Impl::release_ahead(Segment* seg) {
    std::lock_guard lock(qm);
    if (std::find(busy.begin(), busy.end(), seg) == busy.end()) ahead_free.push_back(seg);
}

std::optional<StoredVersion> Writer::Impl::stored_version(const std::string& name, std::uint64_t size) {
    begin_lookups();
    stored_by_name.bind(1, name).bind(2, static_cast<std::int64_t>(size));
    std::optional<StoredVersion> v;
    if (stored_by_name.step()) {
        v.emplace();
        v->row = stored_by_name.i64(0);
        v->digest = to_id(stored_by_name.blob(1), fmt::format("the digest of '{}'", name));
        v->chunks = static_cast<std::uint64_t>(stored_by_name.i64(2));
        v->mode = static_cast<std::uint32_t>(stored_by_name.i64(3));
        v->mtime_ns = stored_by_name.i64(4);
    }
    stored_by_name.reset();
    return v;
}

// A stored file equal to a small file read whole (under another name: a
// tree put under a new prefix, a copy), if one of the few whose list starts
// alike has its size and digest.
std::optional<StoredVersion> Writer::Impl::similar_version(const Segment& seg, const ChunkId& digest) {
    if (seg.digests.size() < 2 || seg.digests.size() >= kIdsPerSegment) return std::nullopt;
    begin_lookups();
    similar_small.bind(1, std::span<const std::uint8_t>(seg.digests[0].bytes.data(), 32))
        .bind(2, static_cast<std::int64_t>(seg.chunk_bytes))
        .bind(3, static_cast<std::int64_t>(seg.digests.size()));
    std::vector<StoredVersion> candidates;
    while (similar_small.step()) {
        StoredVersion v;
        v.row = similar_small.i64(0);
        v.digest = to_id(similar_small.blob(1), "a stored digest");
        v.chunks = static_cast<std::uint64_t>(similar_small.i64(2));
        v.mode = static_cast<std::uint32_t>(similar_small.i64(3));
        v.mtime_ns = similar_small.i64(4);
        candidates.push_back(v);
    }
    similar_small.reset();
    for (const StoredVersion& v : candidates)
        if (v.digest == digest) return v;
    return std::nullopt;
}

bool Writer::Impl::same_chunks(const StoredVersion& stored, const Segment& seg) {
    if (stored.chunks != seg.digests.size()) return false;
    begin_lookups();
    stored_ids.bind(1, stored.row)
        .bind(2, std::span<const std::uint8_t>(stored.digest))
        .bind(3, static_cast<std::int64_t>(stored.chunks));
    std::size_t k = 0;
    bool same = true;
    while (same && stored_ids.step()) {
        const auto ids = stored_ids.blob(0);
        for (std::size_t off = 0; same && off + 32 <= ids.size(); off += 32, ++k)
            same = k < seg.digests.size() && std::memcmp(ids.data() + off, seg.digests[k].bytes.data(), 32) == 0;
    }
    stored_ids.reset();
    return same && k == seg.digests.size();
}

// A file read ahead whole: `digest` if the task made it; else (a file of a
// name and size the store holds: `stored`) its chunk ids are compared with
// the stored ones first, and only a file that differs is hashed whole (by
// the hasher thread). Under a new name, a stored file of the same digest
// spares its chunks' lookups.
PutStats Writer::Impl::put_read_ahead(const FileMeta& meta, Segment& seg, std::optional<ChunkId> digest,
                                      const std::optional<StoredVersion>& stored) {
    ensure_started();
    begin(meta);
    look_similar = false;
    ManifestState& m = manifests.back();
    PutStats file;
    try {
        bool same = false;
        if (stored) {
            same = digest ? *digest == stored->digest : same_chunks(*stored, seg);
            if (same) digest = stored->digest;
        }
        // Under another name, a stored file with the same digest (so the
        // same chunks): no lookups.
        std::optional<StoredVersion> similar;
        if (!stored && digest && seg.digests.size() > 1) similar = similar_version(seg, *digest);
        // (the same chunks as a committed file, which the index holds: no lookups)
        const bool stored_chunks = (same && stored->chunks == seg.digests.size()) || similar;
        // (the segment is busy until its tasks are done)
        store_segment(seg, m, file, tasks(), !digest, stored_chunks);
        if (similar) {
            file.identical_files = 1;
            ++totals.identical_files;
        }
        if (same) {
            // Its content is the stored version's: counted unchanged, and
            // with its metadata unchanged too its row is kept as it is
            // rather than written again (write_manifests checks it once more).
            file.unchanged_files = 1;
            ++totals.unchanged_files;
            if (stored->mode == meta.mode && stored->mtime_ns == meta.mtime_ns && stored->chunks == m.chunks)
                m.keep_row = stored->row;
        }
        if (flush_due()) flush();
    } catch (...) {
        release_ahead(&seg);  // unless it went busy
        abandon();
        throw;
    }
    return end_file(meta, m, file, digest);
}

// A ReadAhead's task: opens the file, fills, cuts and hashes its segments
// in turn and publishes each (a chain's as they come), then `ended`.
// `segs`: the task's own copy of a.segs (put_file takes those over).
void Writer::Impl::read_file_ahead(ReadAhead& a, const Writer::Input& in, std::span<Segment* const> segs,
                                   TaskPool& workers) {
    try {
        a.source = in.open ? in.open(a.meta) : Source{};
        a.reader = a.source.reader_ptr();
        if (a.source.is_memory()) {
            a.own_reader = std::make_unique<SpanReader>(a.source.memory_bytes());
            a.reader = a.own_reader.get();
        }
        std::size_t carried = 0;
        for (std::size_t k = 0; k < segs.size(); ++k) {
            Segment& sg = *segs[k];
            fill(sg, carried, *a.reader, a.meta.name);
            if (!a.chain) hash_range(sg, 0, sg.lengths.size(), 0);
            a.at_end = sg.eof && sg.chunk_bytes == sg.size;
            a.used = k + 1;
            if (a.at_end && !a.chain) {
                // Its digest too, here (on the hasher thread, a hand-over
                // per file cost a first put of /usr/include 7% more CPU): a
                // file of one chunk is its id; one whose name and size the
                // store holds is compared with that file's list first.
                a.whole = true;
                if (sg.lengths.size() == 1)
                    a.digest = id_of(sg.digests[0]);
                else if (!a.stored)
                    a.digest = chunk_id_of({sg.data.get(), sg.size});
            }
            // The tail goes on before the segment is published: once
            // stored, it may be handed out again.
            if (!a.at_end) {
                if (k + 1 < segs.size())
                    carried = carry_into(*segs[k + 1], tail_of(sg));
                else
                    a.carry.assign(tail_of(sg).begin(), tail_of(sg).end());
            }
            // A chain's segment is hashed by another task (published, hash_left
            // 0, once hashed) while this one cuts the next: a file read ahead
            // alone keeps two cores busy, as put_file's reader and pool do.
            if (a.chain)
                submit_hashing(sg, workers);
            else
                sg.hash_left.store(0);
            if (a.at_end) break;
        }
    } catch (const IoError&) {
        a.io_error = std::current_exception();
    } catch (...) {
        a.other_error = std::current_exception();
    }
    a.ended.store(true);
    workers.notify();
}

void Writer::Impl::put_files(std::span<const Writer::Input> inputs, const Writer::InputDone& done,
                             const ProgressFn& progress) {
    // Files of known size are read, cut and their chunks hashed on the pool
    // (ReadAhead), up to kAheadFiles / kAheadBytes ahead, each by one thread
    // as analyze does; this thread stores them in order (index lookups,
    // manifests, compression queued) as put_file does.
    TaskPool& workers = tasks();
    const std::size_t slack = finder->profile().max_size + 1;  // (the end of input is seen in the segment)
    // (a power of two of whole huge pages, at least twice the slack: each
    // segment reads more than it carries)
    const std::size_t chain_bytes = std::bit_ceil(std::max(kChainBytes, 2 * slack));
    std::deque<std::unique_ptr<ReadAhead>> ahead;  // inputs[i], [i + 1], ... in order
    std::size_t next = 0;                          // the first input not read ahead
    std::size_t current = 0;                       // the input being stored
    // A small file is read ahead whole; a large one in a chain of segments
    // if all of them fit in kAheadBytes now, else (the file being stored
    // next) its first segment, put_file reading on from there in its turn.
    // Segments are handed out on this thread only.
    auto read_ahead = [&] {
        const std::size_t i = current;
        next = std::max(next, i);
        while (next < inputs.size() && next - i < kAheadFiles && inputs[next].size_hint) {
            const std::uint64_t hint = *inputs[next].size_hint;
            // A small file is read whole into one segment of a power of two
            // (a few sizes, reused from file to file: each new one is
            // faulted in again), a large one into chain segments.
            const bool large = hint > chain_bytes - slack;
            const std::size_t need =
                large ? chain_bytes
                      : std::bit_ceil(std::max<std::size_t>(static_cast<std::size_t>(hint) + slack, std::size_t{64} << 10));
            // Each segment of a chain reads at least need - slack new bytes
            // (the rest may be the previous one's tail): this many see the
            // end of the listed size.
            const std::uint64_t links = large ? hint / (need - slack) + 1 : 1;
            const std::size_t count = links * need <= ahead_limit() ? static_cast<std::size_t>(links) : 1;
            std::vector<Segment*> segs;
            while (segs.size() < count) {
                Segment* sg = ahead_segment(need);
                if (!sg) break;
                sg->hash_left.store(1);  // (0 once filled)
                segs.push_back(sg);
            }
            if (segs.size() < count) {
                release_segments(segs);
                break;
            }
            auto a = std::make_unique<ReadAhead>();
            a->meta = inputs[next].meta;
            a->listed = hint;
            a->chain = large;
            a->segs = std::move(segs);
            if (!a->chain) a->stored = stored_version(a->meta.name, hint);
            ReadAhead* ap = a.get();
            const Writer::Input* in = &inputs[next];
            ahead.push_back(std::move(a));
            ++next;
            auto task = [this, ap, in, &workers, segs = ap->segs] { read_file_ahead(*ap, *in, segs, workers); };
            if (ap->chain)  // (long: this thread, waiting for the file it stores, must not be held up running it)
                workers.submit_to_workers(std::move(task));
            else
                workers.submit(std::move(task));
        }
    };
    more_ahead = read_ahead;
    ProgressTicker ticker(progress);
    try {
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            current = i;
            read_ahead();
            PutStats stats;
            std::exception_ptr io_error;
            if (!ahead.empty()) {  // inputs[i], read ahead
                ReadAhead& a = *ahead.front();
                if (!a.chain) {  // (a chain is stored as it is read)
                    workers.wait([&] { return a.ended.load(); });
                    if (a.other_error) std::rethrow_exception(a.other_error);
                }
                try {
                    if (a.whole) {
                        Segment* seg = a.segs[0];
                        a.segs.clear();
                        stats = put_read_ahead(a.meta, *seg, a.digest, a.stored);
                    } else {
                        // A chain, a small file that grew since it was
                        // listed (put_file reads on), or one that failed.
                        // put_file gives the segments back, whatever happens.
                        struct Handed {
                            ReadAhead& r;
                            ~Handed() { r.segs.clear(); }
                        } handed{a};
                        // (its task may still be opening the source: put_file
                        // reads a's meta and reader once the first segment is in)
                        stats = put_file(a.meta, Source{}, progress, &a);
                    }
                } catch (const IoError&) {
                    io_error = std::current_exception();
                }
                ahead.pop_front();
            } else {  // opened and put in turn (a large file, a stream)
                next = std::max(next, i + 1);  // (not read ahead by put_file's more_ahead either)
                FileMeta meta = inputs[i].meta;
                try {
                    Source source = inputs[i].open ? inputs[i].open(meta) : Source{};
                    stats = put_file(meta, std::move(source), progress);
                } catch (const IoError&) {
                    io_error = std::current_exception();
                }
            }
            done(i, stats, io_error);
            ticker.tick([&](Progress& p) {
                p.files_done = i + 1;
                p.files_total = inputs.size();
            });
        }
    } catch (...) {
        more_ahead = nullptr;
        // The read-ahead tasks use `ahead` and its inputs: let them end first.
        try {
            workers.drain();
        } catch (...) {
        }
        for (auto& a : ahead) release_segments(a->segs);
        throw;
    }
    more_ahead = nullptr;
}

// ---------------------------------------------------------------- Writer

Writer::Writer(const Store& store) : impl_(std::make_unique<Impl>(*store.impl_)) {}
Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&&) noexcept = default;
Writer::~Writer() = default;

PutStats Writer::put_file(const FileMeta& meta, Source source, const ProgressFn& progress) {
    impl_->check_usable();
    PutStats r;
    try {
        r = impl_->put_file(meta, std::move(source), progress);
    } catch (...) {
        impl_->lookups.reset();
        throw;
    }
    impl_->end_lookups();  // (a caller may wait long before the next put)
    return r;
}
void Writer::put_files(std::span<const Input> inputs, const InputDone& done, const ProgressFn& progress) {
    impl_->check_usable();
    try {
        impl_->put_files(inputs, done, progress);
    } catch (...) {
        impl_->lookups.reset();
        throw;
    }
    impl_->end_lookups();
}
ChunkPut Writer::put_chunk(std::span<const std::byte> raw) {
    impl_->check_usable();
    return impl_->put_chunk(raw);
}
ChunkPut Writer::put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> frame) {
    std::vector<std::byte> raw;
    return put_chunk_compressed(id, raw_size, frame, raw, false);
}
ChunkPut Writer::put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> frame,
                                      std::vector<std::byte>& decoded, bool lacking) {
    impl_->check_usable();
    return impl_->put_chunk_compressed(id, raw_size, frame, decoded, lacking);
}
void Writer::begin_manifest(const FileMeta& meta) {
    impl_->check_usable();
    impl_->begin(meta);
}
std::uint64_t Writer::add_chunks(std::span<const ChunkId> ids) {
    impl_->check_usable();
    return impl_->add_chunks(ids);
}
void Writer::add_read_chunks(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes) {
    impl_->check_usable();
    impl_->add_read_chunks(ids, sizes);
}
void Writer::finish_manifest(const ChunkId& digest, std::uint64_t size) {
    impl_->check_usable();
    impl_->finish(digest, size);
}
void Writer::commit() { impl_->flush(); }
const PutStats& Writer::stats() const noexcept { return impl_->totals; }

}  // namespace cdc::store
