// SPDX-License-Identifier: Apache-2.0
// Writer (writer_impl.hpp): the facade, the session (lock, keyed-store
// check, catalog connection), manifests, single chunks and the flush.
#include "writer_impl.hpp"

#include "catalog_records.hpp"
#include "codec.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <stdexcept>

#include <sys/stat.h>

namespace cdc::store {

namespace detail {

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

std::size_t ahead_budget() {
    const char* e = std::getenv("CDC_STORE_AHEAD_BYTES");
    if (e == nullptr || *e == '\0') return kAheadBytes;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(e, &end, 10);
    return end && *end == '\0' ? static_cast<std::size_t>(n) : kAheadBytes;
}

}  // namespace detail

using namespace detail;

Writer::Impl::Impl(const Store::Impl& s)
    : store(s), catalog(s.catalog->connect()), store_lock(s.dir, s.catalog->hosts_lock()), level(s.info.zstd_level), door(*this) {
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
    catalog->upgrade_for_writing();
    packs = std::make_unique<PackAppender>(*s.packs, s.info.pack_size);
    s.seal_records(singles);
    piece_body = piece_body_size(max_chunk());
    if (piece_body != 0) {
        settings_bytes = settings_record(catalog->settings());
        if (settings_bytes.size() > max_chunk()) piece_body = 0;
        settings_id = store.chunk_id(settings_bytes);
    }
}

Writer::Impl::~Impl() {
    catalog->cancel_read();
    if (pool) {
        try {
            pool->drain();
        } catch (...) {
            // the failure was reported to the caller already
        }
    }
}

// ---------------------------------------------------------------- manifests, flush, single chunks

void Writer::Impl::begin(const FileMeta& meta) {
    if (!manifests.empty() && !manifests.back().finished)
        throw StoreError(fmt::format("begin_manifest('{}'): the manifest '{}' is still open", meta.name,
                                     manifests.back().meta.name));
    if (meta.name.empty()) throw OptionError("a manifest needs a name");
    ManifestDraft m;
    m.meta = meta;
    // (no reserve: a tree's small files would each hold 128 KiB, mapped
    // and faulted in, until the flush)
    manifests.push_back(std::move(m));
}

void Writer::Impl::add_ref(ManifestDraft& m, const ChunkId& id, std::uint32_t raw_size) {
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

void Writer::Impl::finish(std::optional<ChunkId> digest, std::uint64_t size) {
    ManifestDraft& m = open_manifest("finish_manifest");
    if (size != m.size)
        throw DamageError(fmt::format("manifest '{}': size {} is not the sum of its chunks' sizes ({})", m.meta.name,
                                      size, m.size));
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

void Writer::Impl::abandon() {
    if (manifests.empty() || manifests.back().finished) return;
    if (manifests.back().row != 0) abandoned.push_back(manifests.back().row);
    for (const auto& s : manifests.back().full) pending_refs -= s.second.size() / 32;
    manifests.pop_back();
}

void Writer::Impl::flush() {
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

// How long a flush waits for the claimants of its deferred chunks.
constexpr auto kClaimWait = std::chrono::seconds(5);

void Writer::Impl::defer_claimed(const Segment& seg, std::vector<std::size_t>& fresh, PutStats& file) {
    std::vector<ChunkId> ids;
    ids.reserve(fresh.size());
    IdSet others;
    for (const std::size_t i : fresh) {
        const ChunkId id = id_of(seg.digests[i]);
        if (!ahead_claimed.contains(id))
            ids.push_back(id);
        else if (ahead_others.contains(id))
            others.insert(id);  // (claimed with the look-ahead's batch)
    }
    if (!ids.empty()) others.merge(catalog->claim(ids));
    if (others.empty()) return;
    std::vector<std::size_t> offsets(seg.lengths.size());
    for (std::size_t i = 1; i < offsets.size(); ++i) offsets[i] = offsets[i - 1] + seg.lengths[i - 1];
    std::erase_if(fresh, [&](std::size_t i) {
        const ChunkId id = id_of(seg.digests[i]);
        if (!others.contains(id)) return false;
        const auto* p = seg.data.get() + offsets[i];
        deferred.emplace(id, std::vector<std::byte>(p, p + seg.lengths[i]));
        deferred_bytes += seg.lengths[i];
        file.new_bytes -= seg.lengths[i];
        unflushed_new -= seg.lengths[i];
        return true;
    });
}

void Writer::Impl::resolve_deferred() {
    end_lookups();
    const auto until = std::chrono::steady_clock::now() + kClaimWait;
    std::vector<ChunkId> ids;
    for (;;) {
        ids.clear();
        for (const auto& [id, bytes] : deferred) ids.push_back(id);
        IdSet found;
        catalog->find_present(ids, found);
        for (const ChunkId& id : found) {
            const auto it = deferred.find(id);
            if (it == deferred.end()) continue;  // (found holds only what was asked)
            deferred_bytes -= it->second.size();
            deferred.erase(it);
        }
        if (deferred.empty() || std::chrono::steady_clock::now() >= until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Their claimants are slow or gone: stored here (a copy may race).
    ensure_started();
    RecordBatch batch;
    store.seal_records(batch);
    std::vector<std::byte> out;
    for (const auto& [id, raw] : deferred) {
        // (catalog records stay raw: a rebuild looks for them among raw records)
        const Codec codec = id == settings_id ? Codec::raw : thread_compressor(level).compress(raw, out);
        batch.add(id, codec, static_cast<std::uint32_t>(raw.size()),
                  codec == Codec::zstd ? std::span<const std::byte>(out) : std::span<const std::byte>(raw));
        ++totals.new_chunks;
        totals.new_bytes += raw.size();
    }
    if (!batch.entries.empty()) {
        packs->append(batch);
        totals.stored_bytes += batch.bytes.size();
    }
    deferred.clear();
    deferred_bytes = 0;
}

void Writer::Impl::flush_once() {
    if (pool) pool->drain();
    door.wait_hashed();  // every finished file's digest delivered
    // The settings record, before the first file this writer publishes
    // names it: claimed as any chunk (writers starting together store it once).
    if (piece_body != 0 && !settings_stored && finished_count() > 0) {
        end_lookups();
        if (!catalog->chunk_size(settings_id)) {
            if (claims && catalog->claim(std::span(&settings_id, 1)).contains(settings_id))
                deferred.emplace(settings_id, settings_bytes);
            else
                store_catalog_record(settings_bytes);
        }
        settings_stored = true;
    }
    if (!deferred.empty()) {
        // First what this writer stored and listed, its files not yet
        // published: the writers waiting for the chunks it claimed see them
        // indexed (each commits before it waits: none waits for another
        // that waits). Then its deferred chunks are indexed by their
        // claimants, or stored here, before its files are published.
        std::vector<ManifestDraft*> held;
        for (auto& m : manifests)
            if (m.finished) {
                m.finished = false;
                held.push_back(&m);
            }
        try {
            flush_commit(false);
        } catch (...) {
            for (ManifestDraft* m : held) m->finished = true;
            throw;
        }
        for (ManifestDraft* m : held) m->finished = true;
        resolve_deferred();
    }
    flush_commit();
}

void Writer::Impl::flush_commit(bool last) {
    write_catalog_records();
    append_singles();
    totals.stored_bytes += stored_counter.exchange(0);
    auto [sizes, rows] = packs->sync();
    bool work = !sizes.empty() || !rows.empty() || !abandoned.empty() ||
                (last && (!removing.empty() || !naming.empty()));
    for (const auto& m : manifests) work = work || m.finished || !m.full.empty();
    if (!work) {
        packs->release_retired();  // no length to commit
        return;
    }
    FlushBatch batch;
    batch.chunks = rows;
    batch.pack_sizes = sizes;
    for (auto& m : manifests) batch.manifests.push_back(&m);
    batch.abandoned = abandoned;
    if (last) {
        batch.remove = removing;
        batch.named = naming;
    }
    batch.algorithm = store.info.algorithm;
    batch.profile = finder->profile();
    catalog->commit(batch);
    totals.raced_chunks += batch.raced_chunks;
    totals.raced_bytes += batch.raced_bytes;
    packs->release_retired();  // their lengths are committed: other writers may continue them
    session.clear();
    pending_refs = 0;
    unflushed_new = 0;
    while (!manifests.empty() && manifests.front().finished) manifests.pop_front();
    abandoned.clear();
    if (last) {
        removing.clear();
        naming.clear();
    }
}

ChunkId Writer::Impl::store_catalog_record(std::span<const std::byte> bytes) {
    ensure_started();
    const ChunkId id = store.chunk_id(bytes);
    const auto size = static_cast<std::uint32_t>(bytes.size());
    if (session.emplace(id, size).second) {
        singles.add(id, Codec::raw, size, bytes);
        if (singles.bytes.size() >= kSinglesBatch) append_singles();  // (a long list's pieces: by the batch)
    }
    return id;
}

void Writer::Impl::write_catalog_records() {
    if (piece_body == 0) return;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (ManifestDraft& m : manifests) {
        if (m.full.empty() && !m.finished) continue;
        if (m.pieces == 0 && m.stream.empty()) m.uid = random_uid();
        // Row by row, pieces cut as the stream fills: a flush of a long list
        // (up to kFlushRefs ids) holds one piece and one row more, not a
        // second copy of every row.
        auto cut = [&](bool to_end) {
            std::size_t at = 0;
            while (m.stream.size() - at >= piece_body || (to_end && at < m.stream.size())) {
                const std::size_t n = std::min(piece_body, m.stream.size() - at);
                const bool last = to_end && at + n == m.stream.size();
                const ChunkId id =
                    store_catalog_record(manifest_piece(m.uid, m.pieces++, last, std::span(m.stream).subspan(at, n)));
                at += n;
                if (m.records.empty()) m.records.insert(m.records.end(), settings_id.begin(), settings_id.end());
                m.records.insert(m.records.end(), id.begin(), id.end());
            }
            m.stream.erase(m.stream.begin(), m.stream.begin() + static_cast<std::ptrdiff_t>(at));
        };
        for (const auto& row : m.full) {
            m.stream.insert(m.stream.end(), row.second.begin(), row.second.end());
            cut(false);
        }
        if (m.finished) {
            ManifestTrailer t;
            t.meta = m.meta;
            t.size = m.size;
            t.chunks = m.chunks;
            t.digest = m.digest;
            t.algorithm = store.info.algorithm;
            t.profile = finder->profile();
            t.time_ns = now;
            const auto trailer = encode_trailer(t);
            m.stream.insert(m.stream.end(), trailer.begin(), trailer.end());
            cut(true);
        }
    }
}

ChunkPut Writer::Impl::store_one(const ChunkId& id, std::uint32_t raw_size, Codec codec,
                                 std::span<const std::byte> payload) {
    ensure_started();
    // The batch's final size at most, once: grown by doubling, the record
    // that passes the batch size would double it (each push server stream
    // has one).
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

ChunkPut Writer::Impl::put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size,
                                            std::span<const std::byte> frame, std::vector<std::byte>& raw,
                                            bool lacking) {
    if (raw_size > max_chunk())
        throw OptionError(fmt::format("chunk {}: raw size {} is too large for the store (at most {})", to_hex(id),
                                      raw_size, max_chunk()));
    ++totals.chunks;
    totals.bytes += raw_size;
    raw.resize(raw_size);
    thread_local Decompressor d;  // (a zstd context is costly to make: one per thread, reused)
    if (!d.decompress(frame, raw))
        throw DamageError(fmt::format("chunk {}: the zstd frame does not decode to {} bytes", to_hex(id),
                                      raw_size));
    if (store.chunk_id(raw) != id)
        throw DamageError(fmt::format("chunk {}: the decoded bytes have another BLAKE3 (damaged in transit?)",
                                      to_hex(id)));
    if (lacking ? session.contains(id) : known(id).has_value()) return {id, false, 0};
    if (frame.size() < raw_size) return store_one(id, raw_size, Codec::zstd, frame);
    return store_one(id, raw_size, Codec::raw, raw);
}

std::uint64_t Writer::Impl::add_chunks(std::span<const ChunkId> ids) {
    ManifestDraft& m = open_manifest("add_chunks");
    end_lookups();
    // The ids this writer did not put, looked up together: one statement a
    // batch over a network (no view for one: a view is two more round
    // trips, and this writer's session keeps gc from what it refers to),
    // one view for the lot in SQLite.
    std::vector<std::uint32_t> sizes(ids.size(), 0);
    std::vector<ChunkId> ask;
    std::vector<std::size_t> asked;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (const auto it = session.find(ids[i]); it != session.end()) {
            sizes[i] = it->second;
        } else {
            ask.push_back(ids[i]);
            asked.push_back(i);
        }
    }
    if (!ask.empty()) {
        std::optional<ReadView> read;
        if (!catalog->round_trips() || ask.size() > Catalog::kFindChunksBatch) read.emplace(*catalog);
        catalog->chunk_sizes(ask, [&](std::size_t k, std::uint32_t size) { sizes[asked[k]] = size; });
        if (read) read->end();
    }
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (sizes[i] == 0)
            throw DamageError(fmt::format("manifest '{}': chunk {} is neither in the store nor put by this writer",
                                          m.meta.name, to_hex(ids[i])));
        add_ref(m, ids[i], sizes[i]);
        sum += sizes[i];
    }
    return sum;
}

void Writer::Impl::add_read_chunks(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes) {
    ManifestDraft& m = open_manifest("add_read_chunks");
    if (ids.size() != sizes.size())
        throw std::invalid_argument(fmt::format("add_read_chunks: {} ids and {} sizes", ids.size(), sizes.size()));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (sizes[i] == 0) throw std::invalid_argument("add_read_chunks: a chunk of 0 bytes");
        add_ref(m, ids[i], sizes[i]);
    }
}

ChunkPut Writer::Impl::put_chunk(std::span<const std::byte> raw) {
    if (raw.size() > max_chunk())
        throw OptionError(fmt::format("a chunk of {} bytes is too large for the store (at most {})", raw.size(),
                                      max_chunk()));
    const ChunkId id = store.chunk_id(raw);
    ++totals.chunks;
    totals.bytes += raw.size();
    if (known(id)) return {id, false, 0};
    std::vector<std::byte> out;
    const Codec codec = thread_compressor(level).compress(raw, out);
    return store_one(id, static_cast<std::uint32_t>(raw.size()), codec,
                     codec == Codec::zstd ? std::span<const std::byte>(out) : raw);
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
        impl_->catalog->cancel_read();
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
        impl_->catalog->cancel_read();
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

void Writer::Impl::flush_carrying(std::vector<std::string>& slot, std::vector<std::string> names) {
    slot = std::move(names);
    try {
        flush();
    } catch (...) {
        slot.clear();
        throw;
    }
    slot.clear();  // (the last transaction took them; a flush with nothing to commit carries none)
}
void Writer::commit_removing(std::span<const std::string> names) {
    impl_->flush_carrying(impl_->removing, {names.begin(), names.end()});
}
void Writer::commit_naming(const std::function<std::vector<std::string>()>& names) {
    impl_->flush_carrying(impl_->naming, impl_->catalog->gc_marks() ? names() : std::vector<std::string>());
}
const PutStats& Writer::stats() const noexcept { return impl_->totals; }

}  // namespace cdc::store
