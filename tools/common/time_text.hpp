// Timestamps in listings (cdc store ls, cdc ls).
#pragma once

#include <cstdint>
#include <string>

namespace cdc::cli {

/// "2024-05-01 12:34:56" in local time, from nanoseconds since the epoch.
std::string local_time_text(std::int64_t ns);

}  // namespace cdc::cli
