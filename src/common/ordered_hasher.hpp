// SPDX-License-Identifier: Apache-2.0
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

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

namespace cdc::common {

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

/// An OrderedHasher fed with bytes the caller does not keep: they are copied
/// into a few blocks of its own (bounded memory: `blocks` x `block_bytes`),
/// each handed to the hasher thread when full and reused once hashed. For a
/// pipeline whose buffers are transient (the push server's chunks).
class CopyingHasher {
public:
    explicit CopyingHasher(std::size_t block_bytes = std::size_t{512} << 10, std::size_t blocks = 4)
        : block_bytes_(block_bytes), blocks_(blocks) {
        for (std::size_t i = 0; i < blocks; ++i) free_.push_back(i);
    }
    CopyingHasher(const CopyingHasher&) = delete;
    CopyingHasher& operator=(const CopyingHasher&) = delete;
    ~CopyingHasher() { hasher_.wait_idle(); }  // the blocks outlive their callbacks

    void update(std::span<const std::byte> data) {
        while (!data.empty()) {
            if (!filling_) take_block();
            auto& b = blocks_[current_];
            const std::size_t n = std::min(data.size(), block_bytes_ - b.size());
            b.insert(b.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n));
            data = data.subspan(n);
            if (b.size() == block_bytes_) submit();
        }
    }

    /// Bytes the caller keeps valid and unchanged until `done` runs (on the
    /// hasher thread): hashed in order after everything given before, not
    /// copied (a decoder's block, given back by `done`).
    void update_kept(std::span<const std::byte> data, std::function<void()> done) {
        if (filling_) submit();
        hasher_.update(data, std::move(done));
    }

    /// The digest of everything given since the last finish() or reset().
    Digest finish() {
        if (filling_) submit();
        return hasher_.finish();
    }

    /// Drops what was given (a new message starts).
    void reset() { (void)finish(); }

    /// Ends the message without waiting: `deliver` gets its digest on the
    /// hasher thread (may be empty to drop it); a new message starts.
    void end_message(std::function<void(const Digest&)> deliver) {
        if (filling_) submit();
        hasher_.end_message(std::move(deliver));
    }

    /// Waits until everything given is hashed and delivered.
    void wait_idle() {
        if (filling_) submit();
        hasher_.wait_idle();
    }

private:
    void take_block() {
        std::unique_lock lock(mutex_);
        freed_.wait(lock, [&] { return !free_.empty(); });
        current_ = free_.back();
        free_.pop_back();
        lock.unlock();
        blocks_[current_].clear();
        blocks_[current_].reserve(block_bytes_);
        filling_ = true;
    }

    void submit() {
        const std::size_t slot = current_;
        filling_ = false;
        hasher_.update(blocks_[slot], [this, slot] {
            std::lock_guard lock(mutex_);
            free_.push_back(slot);
            freed_.notify_one();
        });
    }

    std::size_t block_bytes_;
    std::vector<std::vector<std::byte>> blocks_;  // never resized: a block stays put while hashed
    std::vector<std::size_t> free_;               // blocks that may be filled (mutex_)
    std::size_t current_ = 0;                     // the block being filled, if filling_
    bool filling_ = false;
    std::mutex mutex_;
    std::condition_variable freed_;
    OrderedHasher hasher_;  // last: destroyed first, once its queue is hashed
};

}  // namespace cdc::common
