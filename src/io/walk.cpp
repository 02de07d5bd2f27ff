// SPDX-License-Identifier: Apache-2.0
// The one directory walker; see cdc/walk.hpp.
#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include "open_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {

int open_walked_file(const std::string& path, bool inside_tree, bool follow_symlinks, struct stat* st_out) {
    if (inside_tree) {
        struct stat st {};
        const int fd = detail::open_regular_file(AT_FDCWD, path.c_str(), O_RDONLY, 0, follow_symlinks, &st);
        if (fd >= 0) {
            if (st_out) *st_out = st;
            return fd;
        }
        if (!follow_symlinks && errno == ELOOP) throw IoError("became a symbolic link since it was listed: not read");
        if (errno == detail::kNotRegularFile)
            throw IoError(fmt::format("became a {} since it was listed: not read", file_type_name(st.st_mode)));
        throw IoError(fmt::format("cannot open: {}", std::strerror(errno)));
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw IoError(fmt::format("cannot open: {}", std::strerror(errno)));
    if (st_out && ::fstat(fd, st_out) != 0) {
        const int e = errno;
        ::close(fd);
        throw IoError(fmt::format("cannot examine: {}", std::strerror(e)));
    }
    return fd;
}

std::string_view file_type_name(mode_t mode) noexcept {
    if (S_ISREG(mode)) return "regular file";
    if (S_ISDIR(mode)) return "directory";
    if (S_ISFIFO(mode)) return "FIFO";
    if (S_ISSOCK(mode)) return "socket";
    if (S_ISCHR(mode)) return "character device";
    if (S_ISBLK(mode)) return "block device";
    if (S_ISLNK(mode)) return "symbolic link";
    return "special file";
}

void WalkVisitor::stream(const std::string& path) {
    throw IoError(fmt::format("'{}' is neither a regular file nor a directory", path));
}

void WalkVisitor::excluded(const std::string&, bool, WalkExclusion) {}

namespace {

using DirId = std::pair<dev_t, ino_t>;

class Walker {
public:
    Walker(const WalkOptions& options, WalkVisitor& visitor) : options_(options), visitor_(visitor) {
        for (const auto& name : options.exclude.if_present)
            if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
                throw OptionError(fmt::format("exclude-if-present name '{}' is invalid: it must be one file name "
                                              "(not empty, . or .., no /)",
                                              name),
                                  "exclude_if_present");
        for (const auto& d : options.exclude_dirs) {
            struct stat st {};
            if (::stat(d.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) excluded_.insert({st.st_dev, st.st_ino});
        }
    }

    void root(const std::string& given) {
        if (given == "-") {
            visitor_.stream(given);
            return;
        }
        std::string path = given;
        while (path.size() > 1 && path.ends_with('/')) path.pop_back();
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            throw IoError(fmt::format("cannot read '{}': {}", given, std::strerror(errno)));
        if (const auto name = root_name(path);
            !name.empty() && options_.exclude.patterns.root_excluded(name, S_ISDIR(st.st_mode))) {
            visitor_.excluded(path, S_ISDIR(st.st_mode), WalkExclusion::pattern);
            return;
        }
        rel_start_ = path.ends_with('/') ? path.size() : path.size() + 1;
        if (S_ISREG(st.st_mode))
            visitor_.file(path, st);
        else if (S_ISDIR(st.st_mode))
            enter(path, st, st.st_dev);
        else
            visitor_.stream(path);
    }

private:
    // The last component of a root ("" for ".", ".." and "/": no name).
    static std::string_view root_name(std::string_view path) {
        const std::size_t slash = path.rfind('/');
        const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
        return name == "." || name == ".." ? std::string_view() : name;
    }

    bool pattern_excluded(const std::string& path, bool is_dir) {
        if (options_.exclude.patterns.empty()) return false;
        if (!options_.exclude.patterns.excluded(std::string_view(path).substr(rel_start_), is_dir)) return false;
        visitor_.excluded(path, is_dir, WalkExclusion::pattern);
        return true;
    }

    // A directory tagged as a cache: a regular CACHEDIR.TAG (never a link
    // or a FIFO, which could block) that starts with the signature.
    static bool cache_tagged(int dfd) {
        const int fd = detail::open_regular_file(dfd, "CACHEDIR.TAG", O_RDONLY, 0, false);
        if (fd < 0) return false;
        std::array<char, kCacheDirTagSignature.size()> head{};
        std::size_t got = 0;
        while (got < head.size()) {
            const ssize_t n = ::read(fd, head.data() + got, head.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        ::close(fd);
        return got == head.size() && std::string_view(head.data(), got) == kCacheDirTagSignature;
    }

    // Whether the open directory `dfd` is left out as a cache or by a marker.
    std::optional<WalkExclusion> marked(int dfd) const {
        if (options_.exclude.caches && cache_tagged(dfd)) return WalkExclusion::cache_dir;
        for (const auto& name : options_.exclude.if_present) {
            struct stat st {};
            if (::fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return WalkExclusion::marker;
        }
        return std::nullopt;
    }

    void enter(const std::string& dir, const struct stat& st, dev_t root_dev) {
        if (options_.one_file_system && st.st_dev != root_dev) {
            visitor_.skipped(dir, WalkSkip::other_fs, "on another file system");
            return;
        }
        const DirId id{st.st_dev, st.st_ino};
        if (excluded_.contains(id)) {
            visitor_.skipped(dir, WalkSkip::excluded, "excluded directory");
            return;
        }
        if (std::find(ancestors_.begin(), ancestors_.end(), id) != ancestors_.end()) {
            visitor_.skipped(dir, WalkSkip::loop, "directory loop (a symbolic link to an ancestor)");
            return;
        }
        if (!walked_.insert(id).second) {
            visitor_.skipped(dir, WalkSkip::overlap, "directory already walked by another path");
            return;
        }
        ancestors_.push_back(id);
        for (const auto& [sub, sub_st] : list(dir)) enter(sub, sub_st, root_dev);
        ancestors_.pop_back();
    }

    // Reports the files of `dir` (in name order) and returns its
    // subdirectories, with the directory closed again.
    std::vector<std::pair<std::string, struct stat>> list(const std::string& dir) {
        std::vector<std::pair<std::string, struct stat>> subdirs;
        const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        // (closed however the visitor's calls end: one may throw)
        const std::unique_ptr<DIR, int (*)(DIR*)> d(dfd < 0 ? nullptr : ::fdopendir(dfd), &::closedir);
        if (d == nullptr) {
            const int err = errno;
            if (dfd >= 0) ::close(dfd);
            visitor_.skipped(dir, WalkSkip::error, fmt::format("cannot open directory: {}", std::strerror(err)));
            return subdirs;
        }
        if (const auto why = marked(dfd)) {
            visitor_.excluded(dir, true, *why);
            return subdirs;
        }
        std::vector<std::string> names;
        errno = 0;
        while (const dirent* e = ::readdir(d.get())) {
            if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
            errno = 0;
        }
        if (errno != 0)
            visitor_.skipped(dir, WalkSkip::error, fmt::format("reading directory: {}", std::strerror(errno)));
        std::sort(names.begin(), names.end());
        std::string path = dir.ends_with('/') ? dir : dir + '/';
        const std::size_t prefix = path.size();
        for (const auto& name : names) {
            path.resize(prefix);
            path.append(name);
            struct stat st {};
            const int flags = options_.follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW;
            if (::fstatat(dfd, name.c_str(), &st, flags) != 0) {
                const int err = errno;
                if (pattern_excluded(path, false)) continue;  // (its type unknown: directory-only patterns do not apply)
                struct stat link {};
                const bool dangling = options_.follow_symlinks && err == ENOENT &&
                                      ::fstatat(dfd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
                                      S_ISLNK(link.st_mode);
                if (dangling)
                    visitor_.skipped(path, WalkSkip::dangling, "dangling symbolic link");
                else
                    visitor_.skipped(path, WalkSkip::error, fmt::format("cannot examine: {}", std::strerror(err)));
                continue;
            }
            if (pattern_excluded(path, S_ISDIR(st.st_mode))) continue;
            if (S_ISREG(st.st_mode))
                visitor_.file(path, st);
            else if (S_ISDIR(st.st_mode))
                subdirs.emplace_back(path, st);
            else if (S_ISLNK(st.st_mode))
                visitor_.skipped(path, WalkSkip::symlink, "symbolic link not followed");
            else
                visitor_.skipped(path, WalkSkip::special, file_type_name(st.st_mode));
        }
        return subdirs;
    }

    const WalkOptions& options_;
    WalkVisitor& visitor_;
    std::vector<DirId> ancestors_;  // the directories being walked (loops)
    std::set<DirId> walked_;        // every directory entered (overlaps)
    std::set<DirId> excluded_;      // WalkOptions::exclude_dirs
    std::size_t rel_start_ = 0;     // where a path inside the current root starts being relative to it
};

}  // namespace

void walk(std::span<const std::string> roots, const WalkOptions& options, WalkVisitor& visitor) {
    Walker walker(options, visitor);
    for (const auto& r : roots) walker.root(r);
}

}  // namespace cdc
