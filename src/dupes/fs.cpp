// SPDX-License-Identifier: Apache-2.0
// cdc dupes: descriptors. Opening files and their directories without
// following symbolic links, reading, and the metadata a merge must preserve.
#include "internal.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace cdc::dupes_detail {

namespace {

int retry_open(auto&& open_call) noexcept {
    int fd;
    do {
        fd = open_call();
    } while (fd < 0 && errno == EINTR);
    return fd;
}

// O_NONBLOCK: a FIFO (or a device) put where a file was must not block the
// open; reads of regular files ignore it.
constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

// Up to 64 KiB per list or value (the Linux limit), retried if it grows
// between the two calls.
template <class Call>
bool read_sized(std::string& out, Call&& call) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        const ssize_t need = call(nullptr, 0);
        if (need < 0) return false;
        out.resize(static_cast<std::size_t>(need));
        if (need == 0) return true;
        const ssize_t got = call(out.data(), out.size());
        if (got >= 0) {
            out.resize(static_cast<std::size_t>(got));
            return true;
        }
        if (errno != ERANGE) return false;
    }
    errno = ERANGE;
    return false;
}

}  // namespace

void Fd::reset(int fd) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
}

int open_read(const char* path, bool follow) noexcept {
    const int flags = kReadFlags | (follow ? 0 : O_NOFOLLOW);
    return retry_open([&] { return ::open(path, flags); });
}

int open_at(int dirfd, const char* name, bool writable) noexcept {
    const int flags = (kReadFlags & ~O_RDONLY) | (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW;
    return retry_open([&] { return ::openat(dirfd, name, flags); });
}

bool read_exact(int fd, void* buf, std::size_t len, std::uint64_t offset) noexcept {
    auto* p = static_cast<char*>(buf);
    while (len > 0) {
        const ssize_t n = ::pread(fd, p, len, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        if (n == 0) {
            errno = 0;
            return false;
        }
        p += n;
        len -= static_cast<std::size_t>(n);
        offset += static_cast<std::uint64_t>(n);
    }
    return true;
}

std::string errno_text(int err) { return err == 0 ? std::string("file shrank") : std::string(std::strerror(err)); }

void refuse_followed_links(const DupesOptions& options) {
    if (options.follow_symlinks)
        throw OptionError("follow_symlinks is for reports only: actions never act through symbolic links",
                          "follow_symlinks");
}

std::string_view root_of(std::span<const std::string> roots, std::string_view path) noexcept {
    std::string_view best;
    for (const std::string& r : roots) {
        const bool under = path == r || (path.starts_with(r) && (r.ends_with('/') || path[r.size()] == '/'));
        if (under && r.size() >= best.size()) best = r;
    }
    return best;
}

std::string ParentDir::open(std::span<const std::string> roots, std::string_view path) {
    fd.reset();
    const auto slash = path.rfind('/');
    name = std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
    const std::string_view dir = slash == std::string_view::npos ? std::string_view(".")
                                 : slash == 0                     ? std::string_view("/")
                                                                  : path.substr(0, slash);
    // The part of the path that the user gave (a root) is resolved as the
    // walk resolved it (symlinks followed); every directory below it is
    // opened with O_NOFOLLOW, one component at a time: the walk never
    // followed a symlink there, so one found now is a swap.
    std::string_view root = root_of(roots, path);
    if (root == path || root.size() > dir.size()) root = dir;  // a file given as a root: its directory as is
    const std::string start(root);
    fd.reset(retry_open([&] { return ::open(start.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }));
    if (fd.get() < 0) return fmt::format("cannot open directory '{}': {}", start, std::strerror(errno));
    std::string_view rest = dir.substr(root.size());
    while (!rest.empty()) {
        const auto next = rest.find('/');
        const std::string part(rest.substr(0, next));
        rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
        if (part.empty() || part == ".") continue;
        const int sub = retry_open(
            [&] { return ::openat(fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); });
        if (sub < 0) {
            const int err = errno;
            return err == ELOOP || err == ENOTDIR
                       ? fmt::format("directory '{}' was replaced (now a symbolic link or not a directory)", dir)
                       : fmt::format("cannot open directory '{}': {}", dir, std::strerror(err));
        }
        fd.reset(sub);
    }
    return {};
}

std::string read_meta(int fd, FileMeta& out) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fmt::format("fstat: {}", std::strerror(errno));
    out.dev = static_cast<std::uint64_t>(st.st_dev);
    out.uid = st.st_uid;
    out.gid = st.st_gid;
    out.mode = st.st_mode & 07777;
    out.xattrs.clear();
    std::string names;
    if (!read_sized(names, [fd](char* b, std::size_t n) { return ::flistxattr(fd, b, n); })) {
        if (errno == ENOTSUP) return {};  // no extended attributes on this file system
        return fmt::format("listing extended attributes: {}", std::strerror(errno));
    }
    for (std::size_t at = 0; at < names.size();) {
        const std::string name(names.c_str() + at);
        at += name.size() + 1;
        if (name.empty()) continue;
        std::string value;
        if (!read_sized(value, [&](char* b, std::size_t n) { return ::fgetxattr(fd, name.c_str(), b, n); })) {
            if (errno == ENODATA) continue;  // removed meanwhile
            return fmt::format("reading extended attribute {}: {}", name, std::strerror(errno));
        }
        out.xattrs.emplace_back(name, std::move(value));
    }
    std::sort(out.xattrs.begin(), out.xattrs.end());
    return {};
}

std::string meta_difference(const FileMeta& file, const FileMeta& kept, bool ignore_metadata) {
    std::vector<std::string> diff;
    if (file.dev != kept.dev) diff.emplace_back("file system");
    if (!ignore_metadata) {
        if (file.uid != kept.uid) diff.push_back(fmt::format("owner (uid {}, kept file {})", file.uid, kept.uid));
        if (file.gid != kept.gid) diff.push_back(fmt::format("group (gid {}, kept file {})", file.gid, kept.gid));
        if (file.mode != kept.mode) diff.push_back(fmt::format("mode ({:04o}, kept file {:04o})", file.mode, kept.mode));
        if (file.xattrs != kept.xattrs) {
            // The names whose presence or value differ.
            std::vector<std::string> names;
            for (const auto* side : {&file.xattrs, &kept.xattrs})
                for (const auto& [name, value] : *side) {
                    const auto& other = side == &file.xattrs ? kept.xattrs : file.xattrs;
                    const bool same = std::find(other.begin(), other.end(), std::pair(name, value)) != other.end();
                    if (!same && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
                }
            std::sort(names.begin(), names.end());
            diff.push_back(fmt::format("extended attributes ({})", fmt::join(names, ", ")));
        }
    }
    return fmt::format("{}", fmt::join(diff, ", "));
}

}  // namespace cdc::dupes_detail
