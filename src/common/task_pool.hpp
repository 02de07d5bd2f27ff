// SPDX-License-Identifier: Apache-2.0
// A small fixed pool of worker threads for the store's pipelines (hashing,
// compressing, reading records). Tasks run in submission order; the caller
// waits for a condition while helping to run queued tasks, so no thread is
// idle while work is queued (except a long task submitted for the workers
// only: a caller that waits for it must not be held up running another). The first exception a task throws is kept and
// rethrown by the next wait(); later tasks still run (they see failed()).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cdc::common {

class TaskPool {
public:
    /// `threads` workers (0: one per core).
    explicit TaskPool(unsigned threads = 0);
    ~TaskPool();
    TaskPool(const TaskPool&) = delete;
    TaskPool& operator=(const TaskPool&) = delete;

    void submit(std::function<void()> task);
    /// A task wait() does not run on its caller (drain() may): a long one,
    /// such as reading a whole file ahead, that would hold the caller up
    /// while what it waits for is ready. Queued in order with the others.
    void submit_to_workers(std::function<void()> task);
    /// Runs queued tasks on the calling thread, or sleeps, until done()
    /// holds (it is evaluated under the pool's mutex: make it cheap and read
    /// state that tasks change before they return). Rethrows a task failure.
    void wait(const std::function<bool()>& done);
    /// Waits until every submitted task has finished.
    void drain();
    bool failed() const;
    /// Wakes wait()ers: call after changing state their condition reads
    /// outside a task (another thread's queue, a flag).
    void notify();
    unsigned threads() const noexcept { return static_cast<unsigned>(workers_.size()); }

private:
    void run_one(std::unique_lock<std::mutex>& lock);
    void worker();

    mutable std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable done_;
    struct Task {
        std::function<void()> run;
        bool workers_only = false;
    };
    std::deque<Task> queue_;
    std::size_t running_ = 0;
    std::exception_ptr failure_;
    bool stop_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace cdc::common
