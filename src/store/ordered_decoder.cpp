// SPDX-License-Identifier: Apache-2.0
#include "ordered_decoder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
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
    // Records that follow each other in one pack (a file's chunks mostly
    // do: they were stored in its order) are read with one pread.
    thread_local std::vector<std::byte> records;
    std::size_t at = 0;
    const std::size_t n = b.ids.size();
    for (std::size_t k = 0; k < n;) {
        if (b.packs[k] == nullptr) {  // bytes given, in place already
            at += b.locs[k].raw_size;
            ++k;
            continue;
        }
        const auto record_end = [&](std::size_t i) { return b.locs[i].offset + kRecordHeaderSize + b.locs[i].stored_size; };
        std::size_t m = k + 1;
        while (m < n && b.packs[m] == b.packs[k] && b.locs[m].pack == b.locs[k].pack &&
               b.locs[m].offset == record_end(m - 1) && record_end(m) - b.locs[k].offset <= kMaxRun)
            ++m;
        const std::uint64_t first = b.locs[k].offset;
        const std::size_t want = static_cast<std::size_t>(record_end(m - 1) - first);
        records.resize(want);
        const std::size_t got = b.packs[k]->read_at(first, records);
        for (; k < m; ++k) {
            const std::size_t from = static_cast<std::size_t>(b.locs[k].offset - first);
            const auto record = std::span<const std::byte>(records).subspan(std::min(from, got)).first(
                got > from ? std::min<std::size_t>(got - from, kRecordHeaderSize + b.locs[k].stored_size) : 0);
            decode_record_into(record, b.locs[k], b.ids[k], std::span(b.data.get() + at, b.locs[k].raw_size),
                               context_, options_.sealer);
            at += b.locs[k].raw_size;
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
