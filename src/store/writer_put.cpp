// SPDX-License-Identifier: Apache-2.0
// put_file's pipeline (writer_impl.hpp): segments read and cut by a reader
// thread, their chunks hashed and the new ones compressed on the pool, the
// whole file hashed and compared with a stored version by the ingest door,
// chunks looked up and listed on this thread.
#include "writer_impl.hpp"

#include "codec.hpp"

#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <thread>

namespace cdc::store {

namespace detail {

void hash_range(Segment& seg, std::size_t begin, std::size_t end, std::size_t offset, const Store::Impl& store) {
    for (std::size_t i = begin; i < end; i += kDigestBatch) {
        const std::size_t m = std::min(kDigestBatch, end - i);
        std::size_t len = 0;
        for (std::size_t j = i; j < i + m; ++j) len += seg.lengths[j];
        compute_digests(DigestKind::blake3, {seg.data.get() + offset, len},
                        std::span<const std::uint32_t>(seg.lengths.data() + i, m),
                        std::span<Digest>(seg.digests.data() + i, m));
        store.key_digests(std::span<Digest>(seg.digests.data() + i, m));
        offset += len;
    }
}

}  // namespace detail

using namespace detail;

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

void Writer::Impl::ensure_segments() {
    if (segments) return;
    segments = std::make_unique<std::array<Segment, kSegments>>();
    std::lock_guard lock(qm);
    for (auto& sg : *segments) {
        sg.capacity = kReadSize + finder->profile().max_size;
        sg.data = common::map_bytes(sg.capacity);
        free_list.push_back(&sg);
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
        // (A snapshot's manifest name is no name to show: its source names the file.)
        if (!name.empty() && name[0] == '\0') throw;
        throw IoError(fmt::format("reading '{}': {}", name, e.what()));
    }
    seg.size += got.bytes;
    seg.eof = got.end;
    // Cut every chunk with a full window (ALGORITHMS.md section 1).
    seg.lengths.clear();
    seg.chunk_bytes = cut_lengths(*finder, {seg.data.get(), seg.size}, seg.eof, seg.lengths);
    seg.digests.resize(seg.lengths.size());
}

void Writer::Impl::submit_hashing(Segment& seg, TaskPool& workers) {
    // One task per segment: the segments in flight spread over the pool and
    // the reader (the cut: the critical path) keeps a core. A segment split
    // over every thread would run more hashers than cores beside the reader.
    const std::size_t n = seg.lengths.size();
    seg.hash_left.store(n ? 1 : 0);
    if (n == 0) return;
    Segment* sp = &seg;
    workers.submit([this, sp, n] {
        hash_range(*sp, 0, n, 0, store);
        sp->hash_left.fetch_sub(1);
    });
}

// `whole_hash`: the segment's bytes go to the whole-file hasher (not when the
// file's digest is known: the stored version's, or a read-ahead file's).
// `stored_chunks`: the segment's chunks are a committed file's (compared).
void Writer::Impl::store_segment(Segment& seg, ManifestDraft& m, PutStats& file, TaskPool& workers, bool whole_hash,
                                 bool stored_chunks) {
    // While the chunks are the stored version's (base_list.hpp), they are in
    // the store (a committed manifest's chunks are indexed, and gc waits for
    // this writer) and their bytes need no hashing now: the stored digest,
    // or a read-back at the first difference, covers them. No lookups.
    const bool follows = door.follows_base(seg.digests);
    const bool in_base = stored_chunks || follows;
    // Look the chunks this writer did not put up in the index (one read
    // view, one batch), then list them all and queue the new ones.
    std::vector<std::size_t> fresh;
    if (in_base) {
        for (std::size_t i = 0; i < seg.lengths.size(); ++i) add_ref(m, id_of(seg.digests[i]), seg.lengths[i]);
    } else {
        std::vector<ChunkId>& ask = lookup_ask;
        IdSet& found = lookup_found;
        ask.clear();
        found.clear();
        for (const Digest& d : seg.digests) {
            const ChunkId id = id_of(d);
            if (session.contains(id)) continue;
            if (!ahead_asked.contains(id))
                ask.push_back(id);
            else if (ahead_found.contains(id))
                found.insert(id);
        }
        if (!ask.empty()) {
            begin_lookups();
            catalog->find_present(ask, found);
        }
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
    if (claims && !fresh.empty()) defer_claimed(seg, fresh, file);
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
        door.hash_kept({seg.data.get(), seg.chunk_bytes}, [sp, &workers] {
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
            store.seal_records(batch);
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
    door.start(meta.name);
    std::unique_ptr<Reader> own_reader;
    Reader* reader = ra ? ra->reader : source.reader_ptr();
    if (!ra && source.is_memory()) {
        own_reader = std::make_unique<SpanReader>(source.memory_bytes());
        reader = own_reader.get();
    }
    PutStats file;
    ProgressTicker ticker(progress);
    ManifestDraft& m = manifests.back();
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
                hash_range(*first, 0, first->lengths.size(), 0, store);
                store_segment(*first, m, file, workers);
                between_segments();
            } else {
                ready.push_back(first);  // (given back if what follows throws)
                submit_hashing(*first, workers);
                door.compare_with_stored(size_hint(source), 0);
                start_reader(tail_of(*first));
            }
        } else {
            {
                std::lock_guard lock(qm);
                for (Segment* sg : ra->segs) ready.push_back(sg);  // (given back if what follows throws)
            }
            door.compare_with_stored(ra->listed, 0);
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
        try {
            door.drop();  // its base and hash: the next file's starts afresh
        } catch (...) {
        }
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
PutStats Writer::Impl::end_file(const FileMeta& meta, ManifestDraft& m, PutStats file, std::optional<ChunkId> known) {
    file.stored_bytes = 0;  // counted at the next flush (compression may still run)
    file.files = 1;
    totals.bytes += file.bytes;
    totals.chunks += file.chunks;
    totals.new_chunks += file.new_chunks;
    totals.new_bytes += file.new_bytes;
    if (const auto base = door.end_base(file.bytes)) {
        // The stored version's chunks, all of them: its bytes, its digest.
        if (base->same_name && meta.mode == base->mode && meta.mtime_ns == base->mtime_ns && m.chunks == base->chunks)
            m.keep_row = base->row;
        if (base->same_name) {
            file.unchanged_files = 1;
            ++totals.unchanged_files;
        } else {
            file.identical_files = 1;
            ++totals.identical_files;
        }
        finish(base->digest, file.bytes);
        return file;
    }
    if (known) {
        finish(known, file.bytes);
        return file;
    }
    // The digest arrives once the hasher is through this file; the manifest
    // (in a deque: it stays put) is written at a flush, which waits for it.
    door.end_hash([mp = &m](const Digest& d) { mp->digest = id_of(d); });
    finish(std::nullopt, file.bytes);
    return file;
}

}  // namespace cdc::store
