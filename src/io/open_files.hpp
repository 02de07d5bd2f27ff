// SPDX-License-Identifier: Apache-2.0
// Opening files others may have put in place: open_regular_file (the
// walker's open of a listed file, the store's packs and lock), and how many
// one reader of many may keep open (open_files_budget).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::detail {

/// errno of open_regular_file for what is not a regular file.
inline constexpr int kNotRegularFile = EINVAL;

/// Opens `name` (relative to `dirfd`, or AT_FDCWD) with `flags` (O_CLOEXEC
/// and O_NOCTTY added) never blocking on a FIFO or device put in its place
/// and, without `follow`, never through a link; it must be a regular file
/// (then O_NONBLOCK is cleared again). -1 with errno otherwise: ELOOP for a
/// link, kNotRegularFile for anything else. `st`, if given, gets the
/// opened file's fstat (also when it is not a regular file).
inline int open_regular_file(int dirfd, const char* name, int flags, mode_t mode, bool follow,
                             struct stat* st = nullptr) {
    const int fd = ::openat(dirfd, name, flags | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW), mode);
    if (fd < 0) return -1;
    struct stat own {};
    struct stat& s = st ? *st : own;
    const int e = ::fstat(fd, &s) != 0 ? errno : !S_ISREG(s.st_mode) ? kNotRegularFile : 0;
    if (e != 0) {
        ::close(fd);
        errno = e;
        return -1;
    }
    ::fcntl(fd, F_SETFL, flags);  // the caller's status flags: O_NONBLOCK off again (F_SETFL ignores the rest)
    return fd;
}

/// How many files one reader of many may keep open at once: a share of the
/// process's soft RLIMIT_NOFILE (the rest is for the database, sockets, the
/// output and other readers), within [4, at_most]. Used by the store's pack
/// readers and by dupes' comparisons.
inline std::size_t open_files_budget(std::uint64_t share_divisor, std::size_t at_most) {
    rlimit rl{};
    std::uint64_t soft = 1024;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) soft = rl.rlim_cur;
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(soft / share_divisor, 4, at_most));
}

}  // namespace cdc::detail
