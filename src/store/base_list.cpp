#include "base_list.hpp"

#include "store_impl.hpp"
#include "task_pool.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <deque>
#include <numeric>
#include <utility>

namespace cdc::store::detail {

namespace {
constexpr const char* kRowsSql = "SELECT ids FROM manifest_chunks WHERE manifest = ?1 ORDER BY seq";
// Read-back: raw bytes per block, blocks in flight, decoding threads.
constexpr std::size_t kReadBackBlock = std::size_t{2} << 20;
constexpr std::size_t kBlocksAhead = 3;
constexpr unsigned kReadBackThreads = 2;
}  // namespace

std::unique_ptr<BaseList> BaseList::open(Db& db, const std::filesystem::path& dir, const std::string& name,
                                         std::uint64_t min_chunks) {
    std::unique_ptr<BaseList> b(new BaseList());
    b->dir_ = dir;
    b->name_ = name;
    b->db_ = &db;
    b->snapshot_ = std::make_unique<Transaction>(*b->db_, false);
    {
        Stmt m(*b->db_, "SELECT id, digest, size, chunk_count FROM manifests WHERE name = ?1");
        m.bind(1, name);
        if (!m.step() || m.i64(3) < 0 || static_cast<std::uint64_t>(m.i64(3)) < min_chunks) return nullptr;
        b->manifest_ = m.i64(0);
        b->digest_ = to_id(m.blob(1), fmt::format("the digest of '{}'", name));
        b->size_ = static_cast<std::uint64_t>(m.i64(2));
        b->chunks_ = static_cast<std::uint64_t>(m.i64(3));
    }
    b->rows_ = Stmt(*b->db_, kRowsSql);
    b->rows_.bind(1, b->manifest_);
    return b;
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
        // This thread walks the list and finds the records (SQLite stays on
        // it); a pool reads and decodes blocks of chunks (decoding is most of
        // the work: ~9 KB zstd frames); blocks reach `f` in file order, at
        // most kBlocksAhead in flight.
        struct Block {
            std::vector<ChunkId> ids;
            std::vector<Location> locs;
            std::vector<int> fds;
            std::vector<std::byte> out;
            std::atomic<bool> done{false};  // set by its task; wait() rereads it when a task ends
        };
        std::deque<std::unique_ptr<Block>> inflight;  // outlives the pool: queued tasks point into it
        TaskPool pool(kReadBackThreads);
        ChunkLookup lookup(*db_);
        PackFiles packs(dir_);
        Stmt rows(*db_, kRowsSql);
        rows.bind(1, manifest_);
        const std::string context = fmt::format("'{}' (the stored version, read back to hash the new one): ", name_);
        auto deliver_front = [&] {
            Block& b = *inflight.front();
            pool.wait([&] { return b.done.load(); });
            f(b.out);
            inflight.pop_front();
        };
        auto submit = [&](std::unique_ptr<Block> b) {
            if (inflight.size() >= kBlocksAhead) deliver_front();
            b->out.resize(std::accumulate(b->locs.begin(), b->locs.end(), std::size_t{0},
                                          [](std::size_t n, const Location& l) { return n + l.raw_size; }));
            Block* bp = b.get();
            inflight.push_back(std::move(b));
            pool.submit([bp, &context] {
                thread_local std::vector<std::byte> record;
                std::size_t at = 0;
                for (std::size_t k = 0; k < bp->ids.size(); ++k) {
                    read_chunk_into(bp->fds[k], bp->locs[k], bp->ids[k], record,
                                    std::span(bp->out).subspan(at, bp->locs[k].raw_size), context);
                    at += bp->locs[k].raw_size;
                }
                bp->done = true;
            });
        };
        auto block = std::make_unique<Block>();
        std::size_t block_bytes = 0;
        std::uint64_t index = 0;
        while (index < matched_chunks_ && rows.step()) {
            const auto blob = rows.blob(0);
            for (std::size_t i = 0; i + 32 <= blob.size() && index < matched_chunks_; i += 32, ++index) {
                const ChunkId id = to_id(blob.subspan(i, 32), context);
                const auto loc = lookup.find(id);
                if (!loc)
                    throw DamageError(fmt::format("{}chunk {} (number {} of the file) is missing from the index",
                                                  context, to_hex(id), index));
                if (!block->ids.empty() && block_bytes + loc->raw_size > kReadBackBlock) {
                    submit(std::exchange(block, std::make_unique<Block>()));
                    block_bytes = 0;
                }
                block->ids.push_back(id);
                block->locs.push_back(*loc);
                block->fds.push_back(packs.fd(loc->pack));
                block_bytes += loc->raw_size;
            }
        }
        if (index < matched_chunks_)
            throw DamageError(fmt::format("{}its chunk list ends after {} chunks, {} were compared", context, index,
                                          matched_chunks_));
        if (!block->ids.empty()) submit(std::move(block));
        while (!inflight.empty()) deliver_front();
    }
    snapshot_.reset();  // rolls back the read transaction: the snapshot ends
}

}  // namespace cdc::store::detail
