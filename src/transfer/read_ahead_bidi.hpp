// A bidirectional stream served by blocking code on a thread of its own,
// with the next request read while the current one is handled.
//
// gRPC's receive windows on the server are fixed (service.cpp: no BDP
// probing, for the server's memory): a stream is granted window for a
// message only while a read of it is pending, and 64 KiB beyond. With the
// synchronous API the handler's thread reads, then handles: while it
// handles a data message (decode, hash, store) nothing is pending, and the
// client stops after 64 KiB. Here gRPC's callback API reads into a queue of
// `depth` messages, the body runs on its own thread and takes them from
// the queue: the client sends message k + 1 while the server handles k, and
// a stream holds at most depth + 1 messages (the one handled and the queued
// ones; no read is pending while the queue is full).
//
// The body sees a blocking read() (false at the end of the stream or when
// it was cancelled) and write() (throws `cancelled` when the stream broke),
// and returns the status the stream finishes with: a status the body
// returns while a read is still pending (a request refused) reaches the
// client as it would from a synchronous handler.
#pragma once

#include "protocol.hpp"

#include <grpcpp/support/server_callback.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cdc::transfer {

template <class Request, class Reply>
class ReadAheadBidi final : public grpc::ServerBidiReactor<Request, Reply> {
public:
    using Body = std::function<grpc::Status(ReadAheadBidi&)>;

    /// Starts reading and runs `body` on a thread of its own; the object
    /// deletes itself when gRPC is done with the stream (OnDone).
    static ReadAheadBidi* start(std::size_t depth, Body body) { return new ReadAheadBidi(depth, std::move(body)); }

    /// The next request (blocks); false at the end of the stream, or when
    /// it was cancelled.
    bool read(Request& out) {
        bool resume = false;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return !queue_.empty() || ended_ || cancelled_; });
            if (cancelled_ || queue_.empty()) return false;
            out = std::move(queue_.front());
            queue_.pop_front();
            // (a read is started outside the lock: its reaction takes it)
            if (paused_ && !ended_) {
                paused_ = false;
                reading_ = true;
                resume = true;
            }
        }
        if (resume) this->StartRead(&incoming_);
        return true;
    }

    /// Sends a reply and waits until gRPC took it; TransferError(cancelled)
    /// when the stream broke.
    void write(const Reply& reply) {
        {
            std::lock_guard lock(mutex_);
            if (cancelled_) throw TransferError(Code::cancelled, "the client went away");
            writing_ = true;
            write_ok_ = false;
        }
        outgoing_ = reply;
        this->StartWrite(&outgoing_);
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !writing_; });
        if (!write_ok_) throw TransferError(Code::cancelled, "the client went away");
    }

    void OnReadDone(bool ok) override {
        bool again = false;
        {
            std::lock_guard lock(mutex_);
            reading_ = false;
            if (!ok) {
                ended_ = true;
            } else {
                queue_.push_back(std::move(incoming_));
                incoming_.Clear();
                if (queue_.size() < depth_) {
                    reading_ = true;
                    again = true;
                } else {
                    paused_ = true;
                }
            }
        }
        cv_.notify_all();
        if (again) this->StartRead(&incoming_);
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
        else
            worker_.join();
        delete this;
    }

private:
    ReadAheadBidi(std::size_t depth, Body body) : depth_(depth < 1 ? 1 : depth), body_(std::move(body)) {
        reading_ = true;
        this->StartRead(&incoming_);
        worker_ = std::thread([this] {
            grpc::Status st;
            try {
                st = body_(*this);
            } catch (const std::exception& e) {
                st = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
            }
            body_ = nullptr;  // what it captured goes before the stream ends
            this->Finish(st);
        });
    }

    const std::size_t depth_;
    Body body_;
    std::thread worker_;
    Request incoming_;  ///< the read pending, if any (gRPC writes it)
    Reply outgoing_;    ///< the write pending, if any (gRPC reads it)
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Request> queue_;  // (mutex_)
    bool reading_ = false;       // (mutex_) a read is pending
    bool paused_ = false;        // (mutex_) the queue was full: no read pending
    bool ended_ = false;         // (mutex_) the client half-closed, or the stream broke
    bool cancelled_ = false;     // (mutex_)
    bool writing_ = false;       // (mutex_)
    bool write_ok_ = false;      // (mutex_)
};

}  // namespace cdc::transfer
