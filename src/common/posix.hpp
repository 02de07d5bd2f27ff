// SPDX-License-Identifier: Apache-2.0
// Small POSIX pieces the store and the transfer client share: an owned
// file descriptor, and a time in nanoseconds as futimens wants it.
#pragma once

#include <cstdint>
#include <ctime>

#include <unistd.h>

namespace cdc::common {

/// An owned file descriptor (closed by the destructor).
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(Fd&& o) noexcept : fd_(o.release()) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            if (fd_ >= 0) ::close(fd_);
            fd_ = o.release();
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept {
        const int f = fd_;
        fd_ = -1;
        return f;
    }
    explicit operator bool() const noexcept { return fd_ >= 0; }

private:
    int fd_ = -1;
};

/// Nanoseconds since the epoch as a timespec for futimens: tv_nsec in
/// [0, 1e9) as it requires, so a time before 1970 with a fraction of a
/// second has the second below it (-1.5 s: -2 s + 0.5 s).
inline timespec timespec_of_ns(std::int64_t ns) noexcept {
    std::int64_t sec = ns / 1'000'000'000;
    std::int64_t frac = ns % 1'000'000'000;
    if (frac < 0) {
        frac += 1'000'000'000;
        --sec;
    }
    return {static_cast<time_t>(sec), static_cast<long>(frac)};
}

}  // namespace cdc::common
