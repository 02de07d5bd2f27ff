// The whole-file BLAKE3 of put and get, on a thread of its own. BLAKE3's
// tree over the file cannot reuse the per-chunk digests (CDC boundaries are
// not aligned to its 1 KiB chunks, and a chunk's counter starts at 0), so this
// second pass over every byte costs about as much as the chunk hashing; on
// the thread that cuts and looks chunks up (put) or writes them out (get) it
// was the serial bottleneck. Here it overlaps them: spans of buffers the
// pipeline owns are queued in order, hashed in that order, and each span's
// `done` runs (on the hasher thread) once its bytes are hashed, so the
// pipeline recycles a buffer only after that. Messages follow each other in
// the queue: end_message() delivers one's digest and starts the next, so a
// put goes on with its next file while the last one is still hashed.
#pragma once

#include <cdc/digest.hpp>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>

namespace cdc::store::detail {

class OrderedHasher {
public:
    OrderedHasher() : hasher_(DigestKind::blake3) {}
    /// Hashes what is queued (their callbacks still run), then stops.
    ~OrderedHasher() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        work_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    OrderedHasher(const OrderedHasher&) = delete;
    OrderedHasher& operator=(const OrderedHasher&) = delete;

    /// Queues the next bytes of the message; `data` must stay valid and
    /// unchanged until `done` has run.
    void update(std::span<const std::byte> data, std::function<void()> done) {
        push({data, std::move(done), {}, false});
    }

    /// Queues the end of the message: `deliver` gets its digest (on the
    /// hasher thread; may be empty to drop it) and a new message starts.
    void end_message(std::function<void(const Digest&)> deliver) { push({{}, {}, std::move(deliver), true}); }

    /// Waits until everything queued is hashed and delivered.
    void wait_idle() {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
    }

    /// Waits until everything queued is hashed; returns the digest of the
    /// message and starts a new one.
    Digest finish() {
        wait_idle();
        return hasher_.finish();  // the hasher thread is idle: only it touched hasher_ before
    }

private:
    struct Item {
        std::span<const std::byte> data;
        std::function<void()> done;
        std::function<void(const Digest&)> deliver;
        bool end = false;
    };

    void push(Item item) {
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(item));
            if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
        }
        work_.notify_one();
    }

    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stop_, nothing left
            Item item = std::move(queue_.front());
            queue_.pop_front();
            busy_ = true;
            lock.unlock();
            // Only this thread touches hasher_ while busy_.
            if (item.end) {
                const Digest d = hasher_.finish();
                if (item.deliver) item.deliver(d);
            } else {
                hasher_.update(item.data);
                if (item.done) item.done();
            }
            lock.lock();
            busy_ = false;
            if (queue_.empty()) idle_.notify_all();
        }
    }

    Hasher hasher_;
    std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable idle_;
    std::deque<Item> queue_;
    bool busy_ = false;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace cdc::store::detail
