#include "ordered_decoder.hpp"

#include <thread>
#include <utility>

namespace cdc::store::detail {

namespace {
constexpr std::size_t kBlockBytes = std::size_t{2} << 20;
constexpr std::size_t kBlocksAhead = 3;
}  // namespace

OrderedDecoder::OrderedDecoder(TaskPool& pool, std::string context, Deliver deliver)
    : context_(std::move(context)), deliver_(std::move(deliver)), filling_(std::make_unique<Block>()), pool_(pool) {}

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

void OrderedDecoder::add(const ChunkId& id, const Location& loc, int fd) {
    if (!filling_->ids.empty() && filling_->raw_bytes + loc.raw_size > kBlockBytes) submit();
    filling_->ids.push_back(id);
    filling_->locs.push_back(loc);
    filling_->fds.push_back(fd);
    filling_->raw_bytes += loc.raw_size;
}

void OrderedDecoder::submit() {
    if (inflight_.size() >= kBlocksAhead) deliver_front();
    std::unique_ptr<Block> b = std::exchange(filling_, std::make_unique<Block>());
    b->out.resize(b->raw_bytes);
    Block* bp = b.get();
    inflight_.push_back(std::move(b));
    pool_.submit([bp, this] {
        try {
            thread_local std::vector<std::byte> record;
            std::size_t at = 0;
            for (std::size_t k = 0; k < bp->ids.size(); ++k) {
                read_chunk_into(bp->fds[k], bp->locs[k], bp->ids[k], record,
                                std::span(bp->out).subspan(at, bp->locs[k].raw_size), context_);
                at += bp->locs[k].raw_size;
            }
        } catch (...) {
            bp->error = std::current_exception();
        }
        bp->done.store(true);
    });
}

void OrderedDecoder::deliver_front() {
    Block& b = *inflight_.front();
    pool_.wait([&] { return b.done.load(); });
    if (b.error) std::rethrow_exception(b.error);
    deliver_(b.out, b.locs);
    inflight_.pop_front();
}

void OrderedDecoder::finish() {
    if (!filling_->ids.empty()) submit();
    while (!inflight_.empty()) deliver_front();
}

}  // namespace cdc::store::detail
