// SPDX-License-Identifier: Apache-2.0
// Listings of stored files (cdc store ls, cdc ls): timestamps and lines.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cdc::cli {

/// "2024-05-01 12:34:56" in local time, from nanoseconds since the epoch.
std::string local_time_text(std::int64_t ns);

/// One line of a listing: size, chunks, mtime, mode and the name, escaped
/// (escape.hpp: a name's newline or terminal escape cannot fake a line).
std::string listing_line(std::uint64_t size, std::uint64_t chunks, std::int64_t mtime_ns, std::uint32_t mode,
                         std::string_view name);

}  // namespace cdc::cli
