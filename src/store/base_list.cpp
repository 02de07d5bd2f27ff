#include "base_list.hpp"

#include "ordered_decoder.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <cstring>

namespace cdc::store::detail {

namespace {
constexpr const char* kRowsSql = "SELECT ids FROM manifest_chunks WHERE manifest = ?1 ORDER BY seq";
}  // namespace

std::unique_ptr<BaseList> BaseList::open(Db& db, const PackStorage& packs, const std::string& name,
                                         std::uint64_t min_chunks) {
    std::unique_ptr<BaseList> b(new BaseList());
    b->packs_ = &packs;
    b->name_ = name;
    b->db_ = &db;
    b->snapshot_ = std::make_unique<Transaction>(*b->db_, false);
    {
        Stmt m(*b->db_, "SELECT id, digest, size, chunk_count, mode, mtime_ns FROM manifests WHERE name = ?1");
        m.bind(1, name);
        if (!m.step() || m.i64(3) < 0 || static_cast<std::uint64_t>(m.i64(3)) < min_chunks) return nullptr;
        b->take_row(m);
    }
    return b;
}

std::unique_ptr<BaseList> BaseList::open_similar(Db& db, const PackStorage& packs, const ChunkId& first,
                                                  std::optional<std::uint64_t> size, std::string_view name) {
    std::unique_ptr<BaseList> b(new BaseList());
    b->packs_ = &packs;
    b->db_ = &db;
    b->snapshot_ = std::make_unique<Transaction>(*b->db_, false);
    // The most recent candidates only, from the first-id index and the
    // manifests (small rows), never from their lists of ids: reading each
    // candidate's first row of ids (its overflow pages) cost 22 MB of reads
    // per file in a store holding 300 versions of it; the newest few hold
    // the latest snapshot's. Any file of two chunks or more may be one (a
    // file over one segment with fewer than 256 chunks, 4-16 MiB at 64 KiB,
    // was once left out: hashed whole and looked up).
    Stmt m(*b->db_,
           "SELECT id, digest, size, chunk_count, mode, mtime_ns, name FROM manifests WHERE first_id = ?1 AND name "
           "IS NOT NULL ORDER BY id DESC LIMIT 16");
    m.bind(1, std::span<const std::uint8_t>(first));
    // One of `size` first, then the longest common name suffix, then the newest.
    auto common_suffix = [&](std::string_view other) {
        std::size_t n = 0;
        while (n < name.size() && n < other.size() && name[name.size() - 1 - n] == other[other.size() - 1 - n]) ++n;
        return n;
    };
    bool found = false;
    std::pair<bool, std::size_t> best{false, 0};
    while (m.step()) {
        const std::string candidate = m.text(6);
        const std::pair<bool, std::size_t> score{size && static_cast<std::uint64_t>(m.i64(2)) == *size,
                                                 common_suffix(candidate)};
        if (found && score <= best) continue;
        found = true;
        best = score;
        b->name_ = candidate;
        b->take_row(m);
    }
    if (!found) return nullptr;
    return b;
}

void BaseList::take_row(const Stmt& m) {
    manifest_ = m.i64(0);
    digest_ = to_id(m.blob(1), fmt::format("the digest of '{}'", name_));
    size_ = static_cast<std::uint64_t>(m.i64(2));
    chunks_ = static_cast<std::uint64_t>(m.i64(3));
    mode_ = static_cast<std::uint32_t>(m.i64(4));
    mtime_ns_ = m.i64(5);
    rows_ = Stmt(*db_, kRowsSql);
    rows_.bind(1, manifest_);
}

BaseList::~BaseList() = default;

bool BaseList::load_row() {
    if (rows_done_) return false;
    if (!rows_.step()) {
        rows_done_ = true;
        return false;
    }
    const auto blob = rows_.blob(0);
    row_.assign(blob.begin(), blob.end());
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
    rows_.reset();
    if (matched_chunks_ > 0) {
        PackFiles packs(*packs_);
        TaskPool pool(2);
        OrderedDecoder decoder(pool, fmt::format("'{}' (the stored version, read back to hash the new one): ", name_),
                               [&](OrderedDecoder::Delivery& d) { f(d.bytes); });
        const std::uint64_t listed = for_each_listed_chunk(
            *db_, manifest_, name_, matched_chunks_, [&](const ChunkId& id, const Location& loc, std::uint64_t) {
                decoder.add(id, loc, packs);
            });
        if (listed < matched_chunks_)
            throw DamageError(fmt::format("'{}': its chunk list ends after {} chunks, {} were compared", name_, listed,
                                          matched_chunks_));
        decoder.finish();
    }
    snapshot_.reset();  // rolls back the read transaction: the snapshot ends
}

}  // namespace cdc::store::detail
