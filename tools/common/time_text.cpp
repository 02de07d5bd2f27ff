// SPDX-License-Identifier: Apache-2.0
#include "time_text.hpp"

#include "escape.hpp"

#include <fmt/format.h>

#include <ctime>

namespace cdc::cli {

std::string local_time_text(std::int64_t ns) {
    // The second the time falls in: floored (-1.5 s is in the second -2),
    // not truncated toward 0.
    std::int64_t sec = ns / 1'000'000'000;
    if (ns % 1'000'000'000 < 0) --sec;
    const std::time_t t = static_cast<std::time_t>(sec);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

std::string listing_line(std::uint64_t size, std::uint64_t chunks, std::int64_t mtime_ns, std::uint32_t mode,
                         std::string_view name) {
    return fmt::format("{:>14} {:>8} {} {:04o} {}", size, chunks, local_time_text(mtime_ns), mode,
                       tools::escape_text(name));
}

}  // namespace cdc::cli
