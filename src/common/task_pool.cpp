// SPDX-License-Identifier: Apache-2.0
#include "task_pool.hpp"

#include <algorithm>

namespace cdc::common {

TaskPool::TaskPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

TaskPool::~TaskPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_.notify_all();
    for (auto& t : workers_) t.join();
}

void TaskPool::submit(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(task), false});
    }
    work_.notify_one();
}

void TaskPool::submit_to_workers(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back({std::move(task), true});
    }
    work_.notify_one();
}

void TaskPool::run_one(std::unique_lock<std::mutex>& lock) {
    auto task = std::move(queue_.front().run);
    queue_.pop_front();
    ++running_;
    lock.unlock();
    std::exception_ptr error;
    try {
        task();
    } catch (...) {
        error = std::current_exception();
    }
    task = nullptr;  // captured state released outside the lock
    lock.lock();
    --running_;
    if (error && !failure_) failure_ = error;
    done_.notify_all();
}

void TaskPool::worker() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (!queue_.empty()) {
            run_one(lock);
            continue;
        }
        if (stop_) return;
    }
}

void TaskPool::wait(const std::function<bool()>& done) {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (failure_) {
            // Let running tasks finish before the caller unwinds the state they use.
            done_.wait(lock, [&] { return running_ == 0 && queue_.empty(); });
            std::rethrow_exception(failure_);
        }
        if (done()) return;
        if (!queue_.empty() && !queue_.front().workers_only) {
            run_one(lock);
            continue;
        }
        done_.wait(lock);
    }
}

void TaskPool::drain() {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (queue_.empty() && running_ == 0) break;
        if (!queue_.empty()) {
            run_one(lock);
            continue;
        }
        done_.wait(lock);
    }
    if (failure_) std::rethrow_exception(failure_);
}

void TaskPool::notify() {
    std::lock_guard lock(mutex_);
    done_.notify_all();
}

bool TaskPool::failed() const {
    std::lock_guard lock(mutex_);
    return failure_ != nullptr;
}

}  // namespace cdc::common
