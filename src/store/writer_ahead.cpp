// SPDX-License-Identifier: Apache-2.0
// put_files (writer_impl.hpp): files read ahead on the pool, each by one
// thread (small ones whole, with their digest; a large one in a chain of
// segments that put_file stores as they come), stored in order here.
#include "writer_impl.hpp"
#include "snapshot_names.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace cdc::store {

using namespace detail;

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
    sg->data = common::map_bytes(need);
    ahead_bytes += need;
    best = sg.get();
    ahead_segments.push_back(std::move(sg));
    return best;
}

void Writer::Impl::release_ahead(Segment* seg) {
    std::lock_guard lock(qm);
    if (std::find(busy.begin(), busy.end(), seg) == busy.end()) ahead_free.push_back(seg);
}

std::optional<StoredFile> Writer::Impl::stored_version(const std::string& name, std::uint64_t size) {
    if (detail::snapshot_file_name(name)) return std::nullopt;  // (new: not looked up)
    begin_lookups();
    return catalog->stored_file(name, size);
}

// A stored file equal to a small file read whole (under another name: a
// tree put under a new prefix, a copy), if one of the few whose list starts
// alike has its size and digest.
namespace {

// Of `candidates`, the first with `digest`.
const StoredFile* with_digest(const std::vector<StoredFile>& candidates, const ChunkId& digest) {
    const auto it = std::find_if(candidates.begin(), candidates.end(),
                                 [&](const StoredFile& f) { return f.digest == digest; });
    return it == candidates.end() ? nullptr : &*it;
}

}  // namespace

std::optional<StoredFile> Writer::Impl::similar_version(const Segment& seg, const ChunkId& digest,
                                                        const std::vector<StoredFile>* candidates) {
    if (!similar_candidate(seg)) return std::nullopt;
    std::vector<StoredFile> own;
    if (!candidates) {
        begin_lookups();
        own = catalog->files_starting_with(id_of(seg.digests[0]), kSimilarCandidates, seg.chunk_bytes,
                                           seg.digests.size());
        candidates = &own;
    }
    if (const StoredFile* f = with_digest(*candidates, digest)) return *f;
    return std::nullopt;
}

bool Writer::Impl::same_chunks(const StoredFile& stored, const Segment& seg) {
    if (stored.chunks != seg.digests.size()) return false;
    begin_lookups();
    // (the row read must still be that version: a flush between the two
    // lookups renews the view, and a row id may be reused)
    if (!catalog->still_there(stored)) return false;
    const std::unique_ptr<ListReader> list = catalog->read_list(stored.row);
    std::vector<std::uint8_t>& ids = same_ids;
    std::uint32_t seq = 0;
    std::size_t k = 0;
    bool same = true;
    while (same && list->next(seq, ids)) {
        for (std::size_t off = 0; same && off + 32 <= ids.size(); off += 32, ++k)
            same = k < seg.digests.size() && std::memcmp(ids.data() + off, seg.digests[k].bytes.data(), 32) == 0;
    }
    return same && k == seg.digests.size();
}

// A file read ahead whole: `digest` if the task made it; else (a file of a
// name and size the store holds: `stored`) its chunk ids are compared with
// the stored ones first, and only a file that differs is hashed whole (by
// the hasher thread). Under a new name, a stored file of the same digest
// spares its chunks' lookups.
PutStats Writer::Impl::put_read_ahead(const ReadAhead& a, Segment& seg) {
    const FileMeta& meta = a.meta;
    const std::optional<StoredFile>& stored = a.stored;
    std::optional<ChunkId> digest = a.digest;
    ensure_started();
    begin(meta);
    door.start(meta.name);
    ManifestDraft& m = manifests.back();
    PutStats file;
    try {
        bool same = false;
        if (stored) {
            same = digest ? *digest == stored->digest : same_chunks(*stored, seg);
            if (same) digest = stored->digest;
        }
        // Under another name, a stored file with the same digest (so the
        // same chunks): no lookups.
        std::optional<StoredFile> similar;
        if (!stored && digest && seg.digests.size() > 1)
            similar = similar_version(seg, *digest, a.similar ? &*a.similar : nullptr);
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
            // rather than written again (the flush's commit checks it once more).
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
            if (!a.chain) hash_range(sg, 0, sg.lengths.size(), 0, store);
            a.at_end = sg.eof && sg.chunk_bytes == sg.size;
            a.used = k + 1;
            if (a.at_end && !a.chain) {
                // Its digest too, here (a hand-over to the hasher thread per
                // small file costs more than the hash itself): a file of one
                // chunk is its id; one whose name and size the store holds is
                // compared with that file's list first.
                a.whole = true;
                // (In an encrypted store the chunk's id is keyed; the file's
                // digest is the plain BLAKE3 of its bytes, as get checks it.)
                if (sg.lengths.size() == 1 && !store.master)
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

void Writer::Impl::look_ahead(const std::deque<std::unique_ptr<ReadAhead>>& ahead) {
    ahead_asked.clear();
    ahead_found.clear();
    ahead_claimed.clear();
    ahead_others.clear();
    std::vector<ChunkId>& ask = lookup_ask;
    ask.clear();
    // The run of small files read whole from the first on (each ended: its
    // task is done with it); one with a stored version of its name is
    // compared with that first and looks its chunks up itself if it differs.
    std::vector<ReadAhead*> run;
    for (const auto& ap : ahead) {
        ReadAhead& a = *ap;
        if (a.chain || !a.ended.load() || a.other_error || !a.whole) break;
        a.looked_up = true;
        if (!a.stored) run.push_back(&a);
    }
    // First the stored files equal to them under other names (similar_version):
    // those found need no lookups of their chunks.
    std::vector<Catalog::FirstQuery> queries;
    std::vector<ReadAhead*> asking;
    for (ReadAhead* a : run) {
        const Segment& seg = *a->segs[0];
        if (!a->digest || !similar_candidate(seg)) continue;
        queries.push_back({detail::id_of(seg.digests[0]), seg.chunk_bytes, seg.digests.size()});
        asking.push_back(a);
    }
    if (queries.size() > 1) {
        begin_lookups();
        auto answers = catalog->files_starting_with_each(queries, kSimilarCandidates);
        for (std::size_t k = 0; k < asking.size(); ++k) asking[k]->similar = std::move(answers.at(k));
    }
    for (ReadAhead* a : run) {
        if (a->similar && with_digest(*a->similar, *a->digest)) continue;
        for (const auto& d : a->segs[0]->digests) {
            const ChunkId id = detail::id_of(d);
            if (!session.contains(id) && ahead_asked.insert(id).second) ask.push_back(id);
        }
    }
    if (ask.empty()) return;
    begin_lookups();
    catalog->find_present(ask, ahead_found);
    if (!claims) return;
    // What is not found is about to be stored: claimed now (defer_claimed).
    std::erase_if(ask, [&](const ChunkId& id) { return ahead_found.contains(id); });
    if (ask.empty()) return;
    ahead_others = catalog->claim(ask);
    ahead_claimed.insert(ask.begin(), ask.end());
}

void Writer::Impl::put_files(std::span<const Writer::Input> inputs, const Writer::InputDone& done,
                             const ProgressFn& progress) {
    // Files of known size are read, cut and their chunks hashed on the pool
    // (ReadAhead), up to kAheadFiles / kAheadBytes ahead (kAheadFilesRemote
    // files on a catalog a round trip away: fewer, larger look_ahead
    // batches), each by one thread as analyze does; this thread stores them
    // in order (index lookups, manifests, compression queued) as put_file
    // does.
    TaskPool& workers = tasks();
    const std::size_t slack = finder->profile().max_size + 1;  // (the end of input is seen in the segment)
    // (a power of two of whole huge pages, at least twice the slack: each
    // segment reads more than it carries)
    const std::size_t chain_bytes = std::bit_ceil(std::max(kChainBytes, 2 * slack));
    const std::size_t ahead_files = catalog->round_trips() ? kAheadFilesRemote : kAheadFiles;
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
        while (next < inputs.size() && next - i < ahead_files && inputs[next].size_hint) {
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
                    if (!a.looked_up) {
                        // (a catalog a round trip away: the window's small
                        // files looked up together, once all are read)
                        if (catalog->round_trips())
                            workers.wait([&] {
                                return std::all_of(ahead.begin(), ahead.end(),
                                                   [](const auto& r) { return r->chain || r->ended.load(); });
                            });
                        look_ahead(ahead);
                    }
                }
                try {
                    if (a.whole) {
                        Segment* seg = a.segs[0];
                        a.segs.clear();
                        stats = put_read_ahead(a, *seg);
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

}  // namespace cdc::store
