// How many files one reader of many may keep open at once: a share of the
// process's soft RLIMIT_NOFILE (the rest is for the database, sockets, the
// output and other readers), within [4, at_most]. Used by the store's pack
// readers and by dupes' comparisons.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <sys/resource.h>

namespace cdc::detail {

inline std::size_t open_files_budget(std::uint64_t share_divisor, std::size_t at_most) {
    rlimit rl{};
    std::uint64_t soft = 1024;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) soft = rl.rlim_cur;
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(soft / share_divisor, 4, at_most));
}

}  // namespace cdc::detail
