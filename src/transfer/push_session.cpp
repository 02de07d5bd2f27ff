// SPDX-License-Identifier: Apache-2.0
#include "push_session.hpp"

#include "../store/codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace cdc::transfer {

namespace {

// Ids remembered as stored by this stream (they are in the index after the
// writer's next flush, every few tens of MiB: this only spares re-sends).
constexpr std::size_t kRecentLimit = 1u << 16;
// A file of that name with at least this many chunks is compared with.
constexpr std::uint64_t kBaseMinChunks = 256;

/// A store error while the file is read back or compared: the file fails.
[[noreturn]] void fail_file(const std::string& name, const store::StoreError& e) {
    throw TransferError(Code::data_loss, fmt::format("'{}': {} (nothing of the file is committed)", name, e.what()));
}

}  // namespace

PushSession::PushSession(const std::filesystem::path& store_dir, const store::OpenOptions& options)
    : store_(store::Store::open(store_dir, options)),
      encrypted_(store_.info().encrypted()),
      assembler_(store_.info().profile.max_size) {
    writer_ = std::make_unique<store::Writer>(store_);
    ingest_ = std::make_unique<store::Ingest>(*writer_);
    decompressor_ = std::make_unique<store::detail::Decompressor>();
    max_chunk_ = store_.info().profile.max_size;
    max_list_bytes_ = max_list_bytes(max_chunk_);
}

PushSession::~PushSession() = default;

void PushSession::require_open(const char* what) const {
    if (!open_)
        throw TransferError(Code::failed_precondition, fmt::format("{} outside a file (send start first)", what));
}

void PushSession::handle(const v1::PushRequest& request, const Sink& sink) {
    if (finished_) throw TransferError(Code::failed_precondition, "a request after finish");
    const bool first = !any_request_;
    any_request_ = true;
    if (request.body_case() == v1::PushRequest::kSnapshot) {
        if (!first) throw TransferError(Code::failed_precondition, "snapshot must be a push's first request");
        snapshot_start(request.snapshot(), sink);
        return;
    }
    switch (request.body_case()) {
    case v1::PushRequest::kCandidates: candidates(request.candidates(), sink); return;
    case v1::PushRequest::kTreeIds: tree_ids(request.tree_ids(), sink); return;
    case v1::PushRequest::kTrees: tree_bytes(request.trees()); return;
    case v1::PushRequest::kCommit: commit_snapshot(request.commit(), sink); return;
    default: break;
    }
    switch (request.body_case()) {
    case v1::PushRequest::kStart: start(request.start()); break;
    case v1::PushRequest::kChunks: add_list(request.chunks(), sink); break;
    case v1::PushRequest::kGroups: add_groups(request.groups(), sink); break;
    case v1::PushRequest::kData: add_data(request.data()); break;
    case v1::PushRequest::kEnd: end(request.end(), sink); break;
    case v1::PushRequest::kFinish: finish(sink); break;
    default: throw TransferError(Code::invalid_argument, "an empty push request");
    }
}

void PushSession::start(const v1::FileStart& m) {
    if (open_) throw TransferError(Code::failed_precondition, fmt::format("start while '{}' is open", name_));
    if (const std::string why = snap_ ? snapshot_path_problem(m.name()) : name_problem(m.name()); !why.empty())
        throw TransferError(Code::invalid_argument, fmt::format("name refused: {}", why));
    if (refuse_replacing_ && !snap_ && store_.find(m.name()))
        throw TransferError(Code::permission_denied,
                            fmt::format("'{}' exists on the server and this token may only add (an append-only "
                                        "token): it replaces nothing",
                                        m.name()));
    store::FileMeta meta;
    meta.name = snap_ ? snapshot_file_name(m.name()) : m.name();
    meta.mode = m.mode() & 07777;
    meta.mtime_ns = m.mtime_ns();
    ingest_->begin(meta);
    open_ = true;
    name_ = m.name();
    listed_bytes_ = listed_chunks_ = 0;
    file_new_chunks_ = file_new_bytes_ = 0;
    file_unchanged_ = false;
    file_identical_ = false;
    groups_.reset();
    groups_read_ = false;
    groups_next_ = 0;
    // (Small files are read back in no time: comparing costs more. A small
    // file of that name: a large stored file may still match the new version.
    // A snapshot's file has a name of the new snapshot: none to compare with.)
    if (snap_)
        ingest_->compare_with_similar();
    else
        ingest_->compare_with_stored(std::nullopt, kBaseMinChunks);
}

bool PushSession::follows_base(const List& list) {
    try {
        // At the file's first list: a similar stored file, whose groups serve
        // too if the client sent groups the file of this name lacked.
        if (ingest_->find_similar(list.ids.front()) && groups_read_ && !groups_)
            groups_ = BaseGroups::open(ingest_->base_list());
        return ingest_->follows_base(list.ids);
    } catch (const store::StoreError& e) {
        fail_file(name_, e);
    }
}

void PushSession::add_list(const v1::ChunkList& m, const Sink& sink) {
    require_open("a chunk list");
    const std::size_t count = static_cast<std::size_t>(m.sizes_size());
    if (count == 0) throw TransferError(Code::invalid_argument, "an empty chunk list");
    if (count > kMaxListChunks)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a chunk list of {} chunks (at most {})", count, kMaxListChunks));
    for (const std::uint32_t s : m.sizes())
        if (s == 0 || s > max_chunk_)
            throw TransferError(Code::invalid_argument,
                                fmt::format("a chunk of {} bytes (the store's chunks have 1 to {})", s, max_chunk_));
    for (List& list : lists_) {
        if (list.awaiting == 0) continue;
        expand(list, m);  // the chunks of the oldest group list that lacked groups
        admit_ready(sink);
        return;
    }
    if (lists_.size() >= kMaxListsAhead)
        throw TransferError(Code::failed_precondition,
                            fmt::format("more than {} chunk lists ahead of their data", kMaxListsAhead));
    List list;
    list.ids = ids_from_bytes(m.ids(), count);
    if (encrypted_) {
        list.plain = std::move(list.ids);
        list.ids.resize(count);
        for (std::size_t i = 0; i < count; ++i) list.ids[i] = store_.id_of_plain(list.plain[i]);
    }
    list.sizes.assign(m.sizes().begin(), m.sizes().end());
    for (const std::uint32_t s : list.sizes) list.bytes += s;
    if (list.bytes > max_list_bytes_)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a chunk list covering {} bytes (at most {})", list.bytes, max_list_bytes_));
    listed_bytes_ += list.bytes;
    listed_chunks_ += count;
    lists_.push_back(std::move(list));
    admit_ready(sink);
}

void PushSession::add_groups(const v1::GroupList& m, const Sink& sink) {
    require_open("a group list");
    if (encrypted_)
        throw TransferError(Code::invalid_argument,
                            "a group list to the server of an encrypted store (it takes chunk lists only: Info)");
    const std::size_t n = static_cast<std::size_t>(m.counts_size());
    if (n == 0) throw TransferError(Code::invalid_argument, "an empty group list");
    // (32 bytes a digest, or its first 16: a group is keyed by them)
    const std::size_t width = n > 0 && m.digests().size() == n * kShortGroupDigest ? kShortGroupDigest : 32;
    if (m.bytes_size() != m.counts_size() || m.digests().size() != n * width)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a group list of {} counts, {} sizes and {} bytes of digests", n,
                                        m.bytes_size(), m.digests().size()));
    if (lists_.size() >= kMaxListsAhead)
        throw TransferError(Code::failed_precondition,
                            fmt::format("more than {} chunk lists ahead of their data", kMaxListsAhead));
    List list;
    std::size_t chunks = 0;
    for (std::size_t g = 0; g < n; ++g) {
        const std::uint32_t c = m.counts(static_cast<int>(g));
        const std::uint64_t b = m.bytes(static_cast<int>(g));
        if (c == 0 || c > kMaxGroupChunks || b < c || b > std::uint64_t{c} * max_chunk_)
            throw TransferError(Code::invalid_argument,
                                fmt::format("a group of {} chunks and {} bytes (1 to {} chunks of 1 to {} bytes)", c, b,
                                            kMaxGroupChunks, max_chunk_));
        chunks += c;
        list.bytes += b;
    }
    if (chunks > kMaxListChunks)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a group list of {} chunks (at most {})", chunks, kMaxListChunks));
    if (list.bytes > max_list_bytes_)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a group list covering {} bytes (at most {})", list.bytes, max_list_bytes_));
    if (!groups_read_) {
        groups_read_ = true;
        try {
            // (a snapshot's file: the parent's content of that path, if it
            // had one: each look opens a connection of its own, which for a
            // catalog over a network costs more than a small file)
            if (!snap_) {
                groups_ = BaseGroups::open(ingest_->own_list());
            } else if (const std::string base = snapshot_base(name_); !base.empty()) {
                groups_ = BaseGroups::open(store::Ingest::stored_list(store_, base));
            }
        } catch (const store::StoreError& e) {
            fail_file(name_, e);
        }
    }
    list.ids.reserve(chunks);
    std::vector<bool> group_wanted(n, false);
    for (std::size_t g = 0; g < n; ++g) {
        const std::size_t c = m.counts(static_cast<int>(g));
        store::ChunkId digest{};  // (a short digest: zeros after its bytes)
        std::memcpy(digest.data(), m.digests().data() + g * width, width);
        const std::optional<std::uint64_t> first = groups_ ? groups_->find(digest, c, groups_next_) : std::nullopt;
        if (first) {
            groups_next_ = *first + c;
            try {
                groups_->append_ids(*first, c, list.ids);
            } catch (const store::StoreError& e) {
                fail_file(name_, e);
            }
            list.known.insert(list.known.end(), c, true);
        } else {
            list.missing.push_back({list.ids.size(), c, m.bytes(static_cast<int>(g)), digest, width});
            list.ids.resize(list.ids.size() + c);
            list.known.insert(list.known.end(), c, false);
            list.awaiting += c;
            group_wanted[g] = true;
        }
    }
    list.sizes.assign(chunks, 0);
    listed_bytes_ += list.bytes;
    listed_chunks_ += chunks;
    v1::PushReply reply;
    reply.mutable_group_want()->set_bitmap(make_bitmap(group_wanted));
    reply.mutable_group_want()->set_count(static_cast<std::uint32_t>(list.missing.size()));
    lists_.push_back(std::move(list));
    sink(reply);
    admit_ready(sink);
}

void PushSession::expand(List& list, const v1::ChunkList& m) {
    const std::size_t count = static_cast<std::size_t>(m.sizes_size());
    if (count != list.awaiting)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a chunk list of {} chunks for groups of {} chunks", count, list.awaiting));
    const std::vector<store::ChunkId> ids = ids_from_bytes(m.ids(), count);
    std::size_t k = 0;
    for (const List::Missing& g : list.missing) {
        std::uint64_t bytes = 0;
        for (std::size_t i = 0; i < g.count; ++i, ++k) {
            list.ids[g.at + i] = ids[k];
            list.sizes[g.at + i] = m.sizes(static_cast<int>(k));
            bytes += list.sizes[g.at + i];
        }
        const store::ChunkId d = group_digest(std::span(list.ids).subspan(g.at, g.count));
        if (bytes != g.bytes || std::memcmp(d.data(), g.digest.data(), g.width) != 0)
            throw TransferError(Code::invalid_argument,
                                fmt::format("the chunks listed for group {} are not that group's ({} bytes, "
                                            "{} listed)",
                                            short_id(g.digest), g.bytes, bytes));
    }
    list.awaiting = 0;
    list.missing.clear();
}

void PushSession::admit_ready(const Sink& sink) {
    for (List& list : lists_) {
        if (list.admitted) continue;
        if (list.awaiting > 0) break;
        admit(list, sink);
    }
    complete_lists();
}

void PushSession::admit(List& list, const Sink& sink) {
    const std::size_t count = list.ids.size();
    list.admitted = true;
    list.wanted.assign(count, false);
    // The next chunks of the stored file: all in the store, nothing to hash.
    list.from_base = follows_base(list);
    if (!list.from_base) {
        // Wanted: lacking in the store, and neither wanted by an earlier list
        // of this stream (its data comes first) nor stored by this stream.
        // A known chunk is one of the stored file's.
        std::vector<store::ChunkId> ask;
        ask.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
            if (list.known.empty() || !list.known[i]) ask.push_back(list.ids[i]);
        const std::vector<store::ChunkId> lacking = store_.missing(ask);
        std::unordered_set<store::ChunkId, IdHash> lack(lacking.begin(), lacking.end());
        for (std::size_t i = 0; i < count; ++i) {
            const auto& id = list.ids[i];
            if (!list.known.empty() && list.known[i]) continue;
            if (!lack.contains(id) || recent_.contains(id) || pending_.contains(id)) continue;
            list.wanted[i] = true;
            pending_.insert(id);
            ++list.remaining;
        }
    }
    // A group list that lacked no group is not answered again; one that
    // did is answered over the chunks listed for its groups.
    const bool grouped = !list.known.empty();
    if (grouped && std::find(list.known.begin(), list.known.end(), false) == list.known.end()) return;
    std::vector<bool> bits;
    if (grouped) {
        for (std::size_t i = 0; i < count; ++i)
            if (!list.known[i]) bits.push_back(list.wanted[i]);
    }
    v1::PushReply reply;
    auto* want = reply.mutable_want();
    want->set_bitmap(make_bitmap(grouped ? bits : list.wanted));
    want->set_count(static_cast<std::uint32_t>(list.remaining));
    sink(reply);
}

void PushSession::add_data(const v1::Chunks& m) {
    require_open("chunk data");
    if (m.chunks_size() == 0) throw TransferError(Code::invalid_argument, "a data message without chunks");
    for (const auto& c : m.chunks()) add_piece(c);
}

void PushSession::add_piece(const v1::ChunkData& c) {
    if (lists_.empty() || lists_.front().remaining == 0)
        throw TransferError(Code::invalid_argument, "chunk data that was not asked for (no wanted chunk is due)");
    List& list = lists_.front();
    std::size_t j = list.next_data;
    while (!list.wanted[j]) ++j;  // remaining > 0: one is ahead
    list.next_data = j;
    if (assembler_.add(c, list.plain.empty() ? list.ids[j] : list.plain[j], list.sizes[j])) complete_chunk(list, j);
}

void PushSession::complete_chunk(List& list, std::size_t j) {
    const store::ChunkId& id = list.ids[j];
    // Decoded and checked against the id before it is stored: by the writer
    // for a zstd frame (which hands the decoded bytes back for the whole-file
    // hash), here for raw bytes (a store at level 0).
    have_last_ = false;
    store::ChunkPut put;
    if (assembler_.raw()) {
        decode_chunk(*decompressor_, assembler_.payload(), true, list.sizes[j], list.plain.empty() ? id : list.plain[j],
                     last_raw_,
                     fmt::format("'{}' (nothing of the file is committed)", name_));
        put = writer_->put_chunk(last_raw_);
    } else {
        try {
            put = writer_->put_chunk_compressed(id, list.sizes[j], assembler_.payload(), last_raw_, true);
        } catch (const store::DamageError& e) {
            throw TransferError(Code::data_loss, fmt::format("'{}': {} (nothing of the file is committed)", name_,
                                                             e.what()));
        }
    }
    last_id_ = id;
    have_last_ = true;
    if (put.added) {
        ++file_new_chunks_;
        file_new_bytes_ += list.sizes[j];
    }
    remember(id);
    pending_.erase(id);
    // Whole-file hash, in file order: the stored chunks before this one, then it.
    hash_stored(list, j);
    ingest_->hash(last_raw_);
    list.next_hash = j + 1;
    list.next_data = j + 1;
    --list.remaining;
    complete_lists();
}

void PushSession::remember(const store::ChunkId& id) {
    if (recent_.size() >= kRecentLimit) recent_.clear();
    recent_.insert(id);
}

void PushSession::complete_lists() {
    while (!lists_.empty() && lists_.front().admitted && lists_.front().remaining == 0) {
        List& list = lists_.front();
        std::uint64_t stored = 0;
        if (list.from_base) {
            stored = ingest_->list_stored(list.ids);
        } else {
            // Hashing read or put every chunk: list.sizes are theirs, and
            // gc waits for writer_ (no second lookup).
            hash_stored(list, list.ids.size());
            ingest_->list(list.ids, list.sizes);
            for (const std::uint32_t s : list.sizes) stored += s;
        }
        if (stored != list.bytes)
            throw TransferError(Code::invalid_argument,
                                fmt::format("'{}': a chunk list says {} bytes, its chunks have {}", name_, list.bytes,
                                            stored));
        lists_.pop_front();
    }
}

void PushSession::check_size(List& list, std::size_t i, std::size_t size) const {
    if (list.sizes[i] != 0 && size != list.sizes[i])
        throw TransferError(Code::invalid_argument, fmt::format("'{}': chunk {} is listed with {} bytes, it has {}",
                                                                name_, short_id(list.ids[i]), list.sizes[i], size));
    list.sizes[i] = static_cast<std::uint32_t>(size);  // (a group's chunks are listed without sizes)
}

void PushSession::hash_stored(List& list, std::size_t end) {
    bool committed = false;
    try {
        while (list.next_hash < end) {
            const std::size_t i = list.next_hash;
            if (have_last_ && list.ids[i] == last_id_) {
                check_size(list, i, last_raw_.size());
                ingest_->hash(last_raw_);
                ++list.next_hash;
                continue;
            }
            // The stored chunks up to the next copy of the chunk in hand.
            std::size_t run = i + 1;
            while (run < end && !(have_last_ && list.ids[run] == last_id_)) ++run;
            const std::size_t n = ingest_->hash_stored(
                std::span(list.ids).subspan(i, run - i),
                [&](std::size_t k, std::uint32_t size) { check_size(list, i + k, size); });
            list.next_hash += n;
            if (i + n < run) {
                // A chunk this stream stored is found once the writer flushed.
                if (committed)
                    throw TransferError(Code::internal,
                                        fmt::format("'{}': chunk {} is neither in the store nor stored by this stream",
                                                    name_, store::to_hex(list.ids[i + n])));
                writer_->commit();
                committed = true;
            }
        }
    } catch (const store::DamageError& e) {
        fail_file(name_, e);
    }
}

void PushSession::end(const v1::FileEnd& m, const Sink& sink) {
    require_open("end");
    if (!lists_.empty() || assembler_.busy())
        throw TransferError(Code::failed_precondition,
                            fmt::format("end of '{}' before the data of every chunk list", name_));
    if (m.size() != listed_bytes_)
        throw TransferError(Code::invalid_argument,
                            fmt::format("'{}': end says {} bytes, its chunks have {}", name_, m.size(), listed_bytes_));
    const store::ChunkId digest = id_from_bytes(m.digest(), "end");
    groups_.reset();
    store::Ingest::Result r;
    try {
        r = ingest_->digest(m.size());
    } catch (const store::StoreError& e) {
        fail_file(name_, e);
    }
    if (r.unchanged || r.identical) {
        // The chunks of the stored file, all of them: its bytes, its digest.
        if (digest != r.digest)
            throw TransferError(Code::data_loss,
                                fmt::format("'{}': the chunks are those of the stored file, whose BLAKE3 is {}; the "
                                            "client says {}: the file is not committed",
                                            name_, store::to_hex(r.digest), store::to_hex(digest)));
        file_unchanged_ = r.unchanged;
        file_identical_ = r.identical;
    } else if (r.digest != digest) {
        throw TransferError(Code::data_loss,
                            fmt::format("'{}': the BLAKE3 of the bytes received is {}, the client says {}: the file "
                                        "is not committed",
                                        name_, store::to_hex(r.digest), store::to_hex(digest)));
    }
    ingest_->end(m.size(), digest);
    if (snap_) pushed_content(digest, m.size());
    open_ = false;
    ++totals_.files;
    totals_.bytes += m.size();
    totals_.chunks += listed_chunks_;
    totals_.new_chunks += file_new_chunks_;
    totals_.new_bytes += file_new_bytes_;
    v1::PushReply reply;
    auto* done = reply.mutable_done();
    done->set_size(m.size());
    done->set_chunks(listed_chunks_);
    done->set_new_chunks(file_new_chunks_);
    done->set_new_bytes(file_new_bytes_);
    done->set_unchanged(file_unchanged_);
    done->set_identical(file_identical_);
    if (!snap_) sink(reply);  // (a snapshot push has none: SnapshotStarted.no_dones)
}

void PushSession::finish(const Sink& sink) {
    if (snap_) throw TransferError(Code::failed_precondition, "finish in a snapshot push (send commit)");
    if (open_) throw TransferError(Code::failed_precondition, fmt::format("finish while '{}' is open", name_));
    writer_->commit();
    finished_ = true;
    v1::PushReply reply;
    reply.mutable_finished()->set_files(totals_.files);
    sink(reply);
}

void PushSession::abort() noexcept {
    if (finished_ || !writer_) return;
    try {
        writer_->commit();
    } catch (...) {
        // the stream failed already; the store stays consistent (docs/STORE.md)
    }
}

}  // namespace cdc::transfer
