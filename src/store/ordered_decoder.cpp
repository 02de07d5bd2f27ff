#include "ordered_decoder.hpp"

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
    b->fds.clear();
    b->raw_bytes = 0;
    b->error = nullptr;
    b->done.store(false);
    b->kept.store(false);
    return b;
}

void OrderedDecoder::add(const ChunkId& id, const Location& loc, int fd) {
    if (!filling_->ids.empty() && filling_->raw_bytes + loc.raw_size > options_.block_bytes) submit();
    filling_->ids.push_back(id);
    filling_->locs.push_back(loc);
    filling_->fds.push_back(fd);
    filling_->raw_bytes += loc.raw_size;
}

void OrderedDecoder::add_bytes(std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    if (!filling_->ids.empty() && filling_->raw_bytes + bytes.size() > options_.block_bytes) submit();
    // Copied into place now. (A block holds at most block_bytes unless it
    // has a single item, so the buffer only ever grows while empty.)
    Block& b = *filling_;
    if (b.capacity < b.raw_bytes + bytes.size()) {
        b.capacity = std::max(b.raw_bytes + bytes.size(), options_.block_bytes);
        b.data = std::make_unique_for_overwrite<std::byte[]>(b.capacity);
    }
    std::memcpy(b.data.get() + b.raw_bytes, bytes.data(), bytes.size());
    Location loc;
    loc.raw_size = static_cast<std::uint32_t>(bytes.size());
    b.ids.push_back(ChunkId{});
    b.locs.push_back(loc);
    b.fds.push_back(-1);
    b.raw_bytes += bytes.size();
}

void OrderedDecoder::submit() {
    // (The next block first: it may wait for a kept one to come back.)
    std::unique_ptr<Block> b = std::exchange(filling_, fresh_block());
    if (b->capacity < b->raw_bytes) {
        b->capacity = std::max(b->raw_bytes, options_.block_bytes);
        b->data = std::make_unique_for_overwrite<std::byte[]>(b->capacity);
    }
    Block* bp = b.get();
    inflight_.push_back(std::move(b));
    pool_.submit([bp, this] {
        try {
            thread_local std::vector<std::byte> record;
            std::size_t at = 0;
            for (std::size_t k = 0; k < bp->ids.size(); ++k) {
                if (bp->fds[k] >= 0)  // (else bytes given, in place already)
                    read_chunk_into(bp->fds[k], bp->locs[k], bp->ids[k], record,
                                    std::span(bp->data.get() + at, bp->locs[k].raw_size), context_);
                at += bp->locs[k].raw_size;
            }
        } catch (...) {
            bp->error = std::current_exception();
        }
        bp->done.store(true);
    });
    while (inflight_.size() >= options_.blocks_ahead) deliver_front();
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
