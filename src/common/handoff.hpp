// SPDX-License-Identifier: Apache-2.0
// A producer thread handing items to one consumer through a bounded queue
// (ChunkFeed: segments read and cut ahead; ManifestCursor: batches of a
// chunk list). The producer's exception reaches the consumer after the
// items produced before it; destroying the Handoff stops the producer (its
// waits throw Stopped, which ends it quietly) and joins it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace cdc::common {

template <class T>
class Handoff {
public:
    /// Thrown by the producer's waits once the consumer is gone.
    struct Stopped {};

    explicit Handoff(std::size_t capacity) : capacity_(capacity) {}
    ~Handoff() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    Handoff(const Handoff&) = delete;
    Handoff& operator=(const Handoff&) = delete;

    /// Starts the producer: produce() calls push() (and wait()).
    void start(std::function<void()> produce) {
        thread_ = std::thread([this, produce = std::move(produce)] {
            try {
                produce();
            } catch (const Stopped&) {
            } catch (...) {
                std::lock_guard lock(mutex_);
                error_ = std::current_exception();
            }
            std::lock_guard lock(mutex_);
            done_ = true;
            cv_.notify_all();
        });
    }

    /// Producer: queues an item, waiting while `capacity` items wait.
    void push(T item) {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
        if (stop_) throw Stopped{};
        queue_.push_back(std::move(item));
        cv_.notify_all();
    }

    /// Producer: waits until pred() holds (evaluated under the lock).
    template <class Pred>
    void wait(Pred pred) {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || pred(); });
        if (stop_) throw Stopped{};
    }

    /// Runs f() under the lock, then wakes the waiters (state a wait() reads).
    template <class F>
    void update(F f) {
        {
            std::lock_guard lock(mutex_);
            f();
        }
        cv_.notify_all();
    }

    /// Consumer: the next item; false at the end; rethrows the producer's error.
    bool next(T& out) {
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

private:
    std::size_t capacity_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<T> queue_;
    bool done_ = false;
    bool stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;  // last: joined before the rest goes
};

}  // namespace cdc::common
