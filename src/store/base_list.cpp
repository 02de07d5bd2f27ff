// SPDX-License-Identifier: Apache-2.0
#include "base_list.hpp"

#include "ordered_decoder.hpp"
#include "snapshot_names.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <cstring>

namespace cdc::store::detail {

std::unique_ptr<BaseList> BaseList::open(Catalog& catalog, const PackStorage& packs, const crypto::Sealer* sealer,
                                         const std::string& name, std::uint64_t min_chunks, NameLook* look) {
    std::unique_ptr<BaseList> b(new BaseList(catalog));
    b->packs_ = &packs;
    b->sealer_ = sealer;
    b->name_ = name;
    if (snapshot_file_name(name)) return nullptr;  // (new: not looked up)
    // Over a network, the look outside a view: most files of a push of
    // small files have no stored version large enough to compare with, and
    // a view costs two more round trips. Its list is then read in a view
    // only while the view still holds that file, live (read_list_if_there:
    // one replaced since reads empty, and one a gc mark condemned since,
    // whose chunks may be condemned with it, never becomes a base).
    const bool outside = catalog.round_trips();
    std::optional<StoredFile> file;
    if (outside) {
        file = catalog.stored_file(name);
        if (look) *look = {true, file};
        if (!file || file->chunks < min_chunks) return nullptr;
    }
    catalog.begin_read();
    b->viewing_ = true;
    if (!outside) {
        file = catalog.stored_file(name);
        if (!file || file->chunks < min_chunks) return nullptr;
    }
    b->take(*file, outside);
    return b;
}

std::unique_ptr<BaseList> BaseList::open_similar(Catalog& catalog, const PackStorage& packs,
                                                  const crypto::Sealer* sealer, const ChunkId& first,
                                                  std::optional<std::uint64_t> size, std::string_view name) {
    // Over a network, the look outside a view: most files (new ones, and
    // every file of one chunk: the index holds lists of two or more) have
    // no candidate, and a view costs two more round trips. The chosen
    // candidate's list is then read only while the view still holds it
    // (see open).
    std::optional<std::vector<StoredFile>> outside;
    if (catalog.round_trips()) {
        outside = catalog.files_starting_with(first, 16);
        if (outside->empty()) return nullptr;
    }
    std::unique_ptr<BaseList> b(new BaseList(catalog));
    b->packs_ = &packs;
    b->sealer_ = sealer;
    catalog.begin_read();
    b->viewing_ = true;
    // The most recent candidates only, from the first-id index and the
    // manifests (small rows), never from their lists of ids: the cost of
    // reading each candidate's first row of ids would grow with the
    // versions stored; the newest few hold the latest snapshot's. Any file
    // of two chunks or more may be one.
    // One of `size` first, then the longest common name suffix, then the newest.
    auto common_suffix = [&](std::string_view other) {
        std::size_t n = 0;
        while (n < name.size() && n < other.size() && name[name.size() - 1 - n] == other[other.size() - 1 - n]) ++n;
        return n;
    };
    const StoredFile* best = nullptr;
    std::pair<bool, std::size_t> best_score{false, 0};
    const std::vector<StoredFile> candidates = outside ? std::move(*outside) : catalog.files_starting_with(first, 16);
    for (const StoredFile& c : candidates) {
        const std::pair<bool, std::size_t> score{size && c.size == *size, common_suffix(c.name)};
        if (best && score <= best_score) continue;
        best = &c;
        best_score = score;
    }
    if (!best) return nullptr;
    b->name_ = best->name;
    b->take(*best, outside.has_value());
    return b;
}

void BaseList::take(const StoredFile& file, bool if_there) {
    manifest_ = file.row;
    digest_ = file.digest;
    size_ = file.size;
    chunks_ = file.chunks;
    mode_ = file.mode;
    mtime_ns_ = file.mtime_ns;
    rows_ = if_there ? catalog_.read_list_if_there(file) : catalog_.read_list(manifest_);
}

BaseList::~BaseList() {
    rows_.reset();
    if (viewing_) catalog_.cancel_read();
}

bool BaseList::load_row() {
    if (rows_done_ || !rows_) return false;
    std::uint32_t seq = 0;
    if (!rows_->next(seq, row_)) {
        rows_done_ = true;
        return false;
    }
    pos_ = 0;
    return true;
}
bool BaseList::next_equals(const std::uint8_t* id) {
    if (pos_ + 32 > row_.size() && !load_row()) return false;  // the new version is longer
    if (std::memcmp(row_.data() + pos_, id, 32) != 0) return false;
    pos_ += 32;
    return true;
}

bool BaseList::complete() {
    if (!matching_) return false;
    if (pos_ + 32 <= row_.size()) return false;
    return matched_chunks_ == chunks_ && !load_row();
}

void BaseList::read_matched(const std::function<void(std::span<const std::byte>)>& f) {
    rows_.reset();  // (its statement is done with)
    if (matched_chunks_ > 0) {
        PackFiles packs(*packs_);
        TaskPool pool(2);
        OrderedDecoder decoder(pool, fmt::format("'{}' (the stored version, read back to hash the new one): ", name_),
                               [&](OrderedDecoder::Delivery& d) { f(d.bytes); },
                               OrderedDecoder::Options{.sealer = sealer_});
        const std::uint64_t listed = for_each_listed_chunk(
            catalog_, manifest_, name_, matched_chunks_, [&](const ChunkId& id, const Location& loc, std::uint64_t) {
                decoder.add(id, loc, packs);
            });
        if (listed < matched_chunks_)
            throw DamageError(fmt::format("'{}': its chunk list ends after {} chunks, {} were compared", name_, listed,
                                          matched_chunks_));
        decoder.finish();
    }
    viewing_ = false;
    catalog_.cancel_read();  // the snapshot ends
}

}  // namespace cdc::store::detail
