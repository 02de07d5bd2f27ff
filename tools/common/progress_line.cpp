// SPDX-License-Identifier: Apache-2.0
#include "progress_line.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace cdc::cli {

void ProgressLine::draw(const std::string& text) {
    if (!enabled_) return;
    fmt::print(stderr, "\r\033[K{}", text);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressLine::clear() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

std::string mb(std::uint64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

}  // namespace cdc::cli
