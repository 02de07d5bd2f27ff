#include "manifest_cursor.hpp"

namespace cdc::transfer {

namespace {
constexpr std::size_t kQueuedBatches = 2;
struct Stopped {};  // thrown through for_each_chunk when the consumer went away
}  // namespace

ManifestCursor::ManifestCursor(const std::filesystem::path& store_dir, const store::OpenOptions& options,
                               std::string name, std::size_t batch_chunks) {
    thread_ = std::thread(&ManifestCursor::run, this, store_dir, options, std::move(name), batch_chunks);
}

ManifestCursor::~ManifestCursor() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void ManifestCursor::run(std::filesystem::path dir, store::OpenOptions options, std::string name,
                         std::size_t batch_chunks) {
    try {
        const store::Store s = store::Store::open(dir, options);
        Batch batch;
        auto hand_over = [&] {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return stop_ || queue_.size() < kQueuedBatches; });
            if (stop_) throw Stopped{};
            queue_.push_back(std::move(batch));
            batch = {};
            cv_.notify_all();
        };
        s.for_each_chunk(name, [&](const store::ChunkId& id, std::uint32_t size) {
            batch.ids.push_back(id);
            batch.sizes.push_back(size);
            if (batch.ids.size() == batch_chunks) hand_over();
        });
        if (!batch.ids.empty()) hand_over();
    } catch (const Stopped&) {
    } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
}

bool ManifestCursor::next(Batch& out) {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
        out = std::move(queue_.front());
        queue_.pop_front();
        cv_.notify_all();
        return true;
    }
    if (error_) std::rethrow_exception(error_);
    return false;
}

}  // namespace cdc::transfer
