// SPDX-License-Identifier: Apache-2.0
// A bidirectional stream served by blocking code on a thread of its own,
// with the next request read while the current one is handled.
//
// gRPC's receive windows on the server are fixed (service.cpp: no BDP
// probing, for the server's memory): a stream is granted window for a
// message only while a read of it is pending, and 64 KiB beyond. With the
// synchronous API the handler's thread reads, then handles: while it
// handles a data message (decode, hash, store) nothing is pending, and the
// client stops after 64 KiB. Here the body runs on its own thread over
// gRPC's callback API and, when it takes a request, the next one is read
// while it handles that one: the client sends message k + 1 while the
// server handles k. A stream then holds two messages (the one handled and
// the one read ahead) where it held one, so read-ahead is rationed: a
// stream reads ahead only while it holds a slot of a ReadAheadBudget shared
// by the server's streams (a burst of streams holds at most that many
// messages more; the others read as the synchronous API did).
//
// The body sees a blocking read() (false at the end of the stream or when
// it was cancelled) and write() (throws `cancelled` when the stream broke),
// and returns the status the stream finishes with: a status the body
// returns while a read is still pending (a request refused) reaches the
// client as it would from a synchronous handler.
#pragma once

#include "protocol.hpp"

#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

namespace cdc::transfer {

/// Read-ahead slots shared by the streams of a server.
class ReadAheadBudget {
public:
    explicit ReadAheadBudget(int slots) : free_(slots) {}
    bool take() noexcept {
        int n = free_.load();
        while (n > 0)
            if (free_.compare_exchange_weak(n, n - 1)) return true;
        return false;
    }
    void give() noexcept { free_.fetch_add(1); }

private:
    std::atomic<int> free_;
};

template <class Request, class Reply>
class ReadAheadBidi final : public grpc::ServerBidiReactor<Request, Reply> {
public:
    using Body = std::function<grpc::Status(ReadAheadBidi&)>;

    /// Runs `body` on a thread of its own; the object deletes itself when
    /// gRPC is done with the stream (OnDone). `budget` outlives the stream.
    static ReadAheadBidi* start(ReadAheadBudget& budget, Body body) {
        return new ReadAheadBidi(budget, std::move(body));
    }

    /// The next request (blocks); false at the end of the stream, or when
    /// it was cancelled.
    bool read(Request& out) {
        // (a slot another stream gave back is taken at the next request)
        if (!ahead_) ahead_ = budget_.take();
        bool start = false;
        {
            std::lock_guard lock(mutex_);
            if (queue_.empty() && !reading_ && !ended_ && !cancelled_) start = reading_ = true;
        }
        // (reads start outside the lock: their reaction takes it)
        if (start) this->StartRead(&incoming_);
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return !queue_.empty() || ended_ || cancelled_; });
            if (cancelled_ || queue_.empty()) return false;
            out = std::move(queue_.front());
            queue_.pop_front();
            start = ahead_ && !reading_ && !ended_;
            if (start) reading_ = true;
        }
        if (start) this->StartRead(&incoming_);  // the next request, while this one is handled
        return true;
    }

    /// Sends a reply: it waits for the previous one to be taken by gRPC
    /// (one write at a time), not for this one, so that the body goes on
    /// with the next request meanwhile (a push's `done` of a file costs its
    /// thread no wait). TransferError(cancelled) when the stream broke.
    void write(const Reply& reply) {
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return !writing_; });
            if (cancelled_ || !write_ok_) throw TransferError(Code::cancelled, "the client went away");
            writing_ = true;
        }
        outgoing_ = reply;
        this->StartWrite(&outgoing_);
    }

    void OnReadDone(bool ok) override {
        {
            std::lock_guard lock(mutex_);
            reading_ = false;
            if (ok)
                queue_.push_back(std::move(incoming_));
            else
                ended_ = true;
        }
        cv_.notify_all();
    }

    void OnWriteDone(bool ok) override {
        {
            std::lock_guard lock(mutex_);
            writing_ = false;
            write_ok_ = ok;
        }
        cv_.notify_all();
    }

    void OnCancel() override {
        {
            std::lock_guard lock(mutex_);
            cancelled_ = true;
        }
        cv_.notify_all();
    }

    void OnDone() override {
        // The body's thread called Finish as its last act; OnDone may run
        // on that thread itself (inlined), or on one of gRPC's.
        if (worker_.get_id() == std::this_thread::get_id())
            worker_.detach();
        else if (worker_.joinable())
            worker_.join();
        delete this;
    }

private:
    ReadAheadBidi(ReadAheadBudget& budget, Body body) : budget_(budget), body_(std::move(body)) {
        try {
            start_worker();
        } catch (const std::system_error&) {  // no thread to be had
            body_ = nullptr;
            this->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                      "the server cannot start a thread for this stream; try again"));
        }
    }

    void start_worker() {
        worker_ = std::thread([this] {
            grpc::Status st;
            try {
                st = body_(*this);
            } catch (const std::exception& e) {
                st = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
            }
            body_ = nullptr;  // what it captured goes before the stream ends
            if (ahead_) budget_.give();
            {
                // (the last reply taken before the status)
                std::unique_lock lock(mutex_);
                cv_.wait(lock, [&] { return !writing_; });
            }
            this->Finish(st);
        });
    }

    ReadAheadBudget& budget_;
    Body body_;
    bool ahead_ = false;  ///< holds a slot of budget_ (the body's thread only)
    std::thread worker_;
    Request incoming_;  ///< the read pending, if any (gRPC writes it)
    Reply outgoing_;    ///< the write pending, if any (gRPC reads it)
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Request> queue_;  // (mutex_) one request at most
    bool reading_ = false;       // (mutex_) a read is pending
    bool ended_ = false;         // (mutex_) the client half-closed, or the stream broke
    bool cancelled_ = false;     // (mutex_)
    bool writing_ = false;       // (mutex_)
    bool write_ok_ = true;       // (mutex_) the last write went
};

}  // namespace cdc::transfer
