// SPDX-License-Identifier: Apache-2.0
// The progress line of long commands on stderr (drawn only when stderr is a
// terminal and the command is not quiet), and the "12.3 MB" sizes in it.
#pragma once

#include <cstdint>
#include <string>

namespace cdc::cli {

class ProgressLine {
public:
    explicit ProgressLine(bool enabled) : enabled_(enabled) {}
    ~ProgressLine() { clear(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;
    bool enabled() const noexcept { return enabled_; }
    void draw(const std::string& text);
    void clear();

private:
    bool enabled_;
    bool drawn_ = false;
};

/// "12.3 MB" (10^6) for rates and totals in messages.
std::string mb(std::uint64_t bytes);

}  // namespace cdc::cli
