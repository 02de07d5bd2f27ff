// SPDX-License-Identifier: Apache-2.0
#include "ordered_decoder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>
#include <utility>

namespace cdc::store::detail {

OrderedDecoder::Delivery::Delivery(Block& b) noexcept
    : bytes(b.data.get(), b.raw_bytes), locs(b.locs), block_(&b) {}

const void* OrderedDecoder::Delivery::keep() noexcept {
    block_->kept.store(true);
    return block_;
}

OrderedDecoder::OrderedDecoder(TaskPool& pool, std::string context, Deliver deliver, Options options)
    : context_(std::move(context)), deliver_(std::move(deliver)), options_(options), pool_(pool) {
    filling_ = fresh_block();
}

OrderedDecoder::~OrderedDecoder() {
    for (const auto& b : inflight_) {
        try {
            pool_.wait([&] { return b->done.load(); });
        } catch (...) {
            // another user's task failed: ours still end (the pool runs every task)
            while (!b->done.load()) std::this_thread::yield();
        }
    }
}

void OrderedDecoder::release(const void* token) noexcept {
    static_cast<Block*>(const_cast<void*>(token))->kept.store(false);
    pool_.notify();
}

std::unique_ptr<OrderedDecoder::Block> OrderedDecoder::fresh_block() {
    // Blocks given back are reused, oldest first; at the limit of kept
    // blocks, the oldest is waited for.
    while (!kept_.empty() && (!kept_.front()->kept.load() || kept_.size() >= options_.blocks_kept)) {
        pool_.wait([&] { return !kept_.front()->kept.load(); });
        spare_.push_back(std::move(kept_.front()));
        kept_.pop_front();
    }
    std::unique_ptr<Block> b;
    if (!spare_.empty()) {
        b = std::move(spare_.back());
        spare_.pop_back();
    } else {
        b = std::make_unique<Block>();
    }
    b->ids.clear();
    b->locs.clear();
    b->packs.clear();
    b->raw_bytes = 0;
    b->error = nullptr;
    b->done.store(false);
    b->kept.store(false);
    return b;
}

void OrderedDecoder::add(const ChunkId& id, const Location& loc, const PackReader& pack) {
    if (!filling_->ids.empty() && filling_->raw_bytes + loc.raw_size > options_.block_bytes) submit();
    filling_->ids.push_back(id);
    filling_->locs.push_back(loc);
    filling_->packs.push_back(&pack);
    filling_->raw_bytes += loc.raw_size;
}

void OrderedDecoder::add(const ChunkId& id, const Location& loc, PackFiles& packs) {
    if (packs.needs_room(loc.pack)) {
        finish();  // what is in flight reads the packs open now
        packs.close_all();
    }
    add(id, loc, packs.reader(loc.pack));
}

void OrderedDecoder::reserve(Block& b, std::size_t bytes) const {
    if (b.capacity >= bytes) return;
    b.capacity = std::max(bytes, options_.block_bytes);
    b.data = std::make_unique_for_overwrite<std::byte[]>(b.capacity);
}

void OrderedDecoder::add_bytes(std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    if (!filling_->ids.empty() && filling_->raw_bytes + bytes.size() > options_.block_bytes) submit();
    // Copied into place now. (A block holds at most block_bytes unless it
    // has a single item, so the buffer only ever grows while empty.)
    Block& b = *filling_;
    reserve(b, b.raw_bytes + bytes.size());
    std::memcpy(b.data.get() + b.raw_bytes, bytes.data(), bytes.size());
    Location loc;
    loc.raw_size = static_cast<std::uint32_t>(bytes.size());
    b.ids.push_back(ChunkId{});
    b.locs.push_back(loc);
    b.packs.push_back(nullptr);
    b.raw_bytes += bytes.size();
}

void OrderedDecoder::submit() {
    // (The next block first: it may wait for a kept one to come back.)
    std::unique_ptr<Block> b = std::exchange(filling_, fresh_block());
    reserve(*b, b->raw_bytes);
    Block* bp = b.get();
    const bool in_hand =
        std::all_of(bp->packs.begin(), bp->packs.end(), [](const PackReader* p) { return p == nullptr; });
    inflight_.push_back(std::move(b));
    if (in_hand) {
        bp->done.store(true);  // nothing to read or decode
    } else {
        pool_.submit([bp, this] {
            try {
                decode_block(*bp);
            } catch (...) {
                bp->error = std::current_exception();
            }
            bp->done.store(true);
        });
    }
    // In order, each as soon as it is decoded, and at the latest when
    // blocks_ahead are in flight: a block of bytes in hand (the chunks a
    // push server just received) is ready at once and waited for company
    // (4 pushes at once held 10 MB of blocks).
    while (!inflight_.empty() && (inflight_.size() >= options_.blocks_ahead || inflight_.front()->done.load()))
        deliver_front();
}

void OrderedDecoder::decode_block(Block& b) const {
    // The records of one pack that lie close together are read at once,
    // whatever their order in the block: a file's chunks were stored in its
    // order, but in segments the writer's pool may have finished out of
    // order, so a block's records are mostly one stretch of a pack in pieces
    // swapped around. How far a read may reach is the reader's (Runs: over
    // S3 a read is a request, and RGW spends about as much CPU on a request
    // as on sending a MiB).
    // (Grown, never zero-filled: every byte of a run is read into it.)
    thread_local std::unique_ptr<std::byte[]> records;
    thread_local std::size_t records_capacity = 0;
    thread_local std::vector<std::size_t> order;   // the block's stored records, by pack and offset
    thread_local std::vector<std::size_t> out_at;  // where each item's raw bytes go in the block
    const std::size_t n = b.ids.size();
    out_at.resize(n);
    order.clear();
    for (std::size_t i = 0, at = 0; i < n; ++i) {
        out_at[i] = at;
        at += b.locs[i].raw_size;
        if (b.packs[i] != nullptr) order.push_back(i);  // (nullptr: bytes given, in place already)
    }
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        return std::tie(b.locs[x].pack, b.locs[x].offset, x) < std::tie(b.locs[y].pack, b.locs[y].offset, y);
    });
    const auto record_end = [&](std::size_t i) { return b.locs[i].offset + kRecordHeaderSize + b.locs[i].stored_size; };
    for (std::size_t k = 0; k < order.size();) {
        const std::size_t head = order[k];
        const PackReader& pack = *b.packs[head];
        const PackReader::Runs runs = pack.runs();
        const std::uint64_t first = b.locs[head].offset;
        std::uint64_t end = record_end(head);
        std::size_t m = k + 1;
        // (The same chunk twice in a block is the same record: read once.)
        for (; m < order.size(); ++m) {
            const std::size_t i = order[m];
            if (b.packs[i] != &pack || b.locs[i].pack != b.locs[head].pack || b.locs[i].offset > end + runs.max_gap ||
                std::max(end, record_end(i)) - first > runs.max_bytes)
                break;
            end = std::max(end, record_end(i));
        }
        const auto want = static_cast<std::size_t>(end - first);
        // In place where the reader holds the bytes (a block of the S3
        // cache: one copy of every byte less), else read into `records`.
        const PackReader::View view = pack.view_at(first, want);
        std::span<const std::byte> run = view.bytes;
        if (run.empty()) {
            if (want > records_capacity) {
                records = std::make_unique_for_overwrite<std::byte[]>(want);
                records_capacity = want;
            }
            run = std::span<const std::byte>(records.get(), pack.read_at(first, std::span(records.get(), want)));
        }
        const std::size_t got = run.size();
        for (; k < m; ++k) {
            const std::size_t i = order[k];
            const std::size_t from = static_cast<std::size_t>(b.locs[i].offset - first);
            const auto record = std::span<const std::byte>(run).subspan(std::min(from, got)).first(
                got > from ? std::min<std::size_t>(got - from, kRecordHeaderSize + b.locs[i].stored_size) : 0);
            decode_record_into(record, b.locs[i], b.ids[i], std::span(b.data.get() + out_at[i], b.locs[i].raw_size),
                               context_, options_.sealer);
        }
    }
}

void OrderedDecoder::deliver_front() {
    Block& b = *inflight_.front();
    pool_.wait([&] { return b.done.load(); });
    if (b.error) std::rethrow_exception(b.error);
    Delivery d(b);
    deliver_(d);
    if (b.kept.load())
        kept_.push_back(std::move(inflight_.front()));
    else
        spare_.push_back(std::move(inflight_.front()));
    inflight_.pop_front();
}

void OrderedDecoder::finish() {
    if (!filling_->ids.empty()) submit();
    while (!inflight_.empty()) deliver_front();
}

}  // namespace cdc::store::detail
