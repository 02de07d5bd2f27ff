// SPDX-License-Identifier: Apache-2.0
// Progress reports of a push or pull, at most every 200 ms.
#pragma once

#include "client_api.hpp"

#include <chrono>

namespace cdc::transfer {

class ProgressThrottle {
public:
    ProgressThrottle(const TransferProgressFn& fn, std::uint64_t total_bytes, std::uint64_t total_files)
        : fn_(fn), t0_(Clock::now()), last_(t0_) {
        p_.bytes_total = total_bytes;
        p_.files_total = total_files;
    }
    /// `in_file` bytes of the current file done; `sent` raw bytes sent in all.
    void file_bytes(std::uint64_t in_file, std::uint64_t sent) {
        p_.bytes_done = base_ + in_file;
        p_.bytes_sent = sent;
        report(false);
    }
    /// The current file is done with `bytes` bytes.
    void file_done(std::uint64_t bytes) {
        base_ += bytes;
        p_.bytes_done = base_;
        ++p_.files_done;
        report(false);
    }

private:
    using Clock = std::chrono::steady_clock;
    void report(bool force) {
        if (!fn_) return;
        const auto now = Clock::now();
        if (!force && now - last_ < std::chrono::milliseconds(200)) return;
        last_ = now;
        p_.seconds = std::chrono::duration<double>(now - t0_).count();
        fn_(p_);
    }

    const TransferProgressFn& fn_;
    Clock::time_point t0_, last_;
    TransferProgress p_;
    std::uint64_t base_ = 0;
};

}  // namespace cdc::transfer
