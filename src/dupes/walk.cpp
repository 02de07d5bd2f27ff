// cdc dupes: the tree walk (regular files, symlink and file-system rules).
#include "internal.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <set>
#include <unistd.h>
#include <utility>

namespace cdc {

using namespace dupes_detail;

std::string_view StringArena::store(std::string_view s) {
    const std::size_t need = s.size() + 1;
    char* at;
    if (need > kChunkSize) {
        // A block of its own; the current chunk keeps its free space.
        blocks_.push_back(std::make_unique_for_overwrite<char[]>(need));
        capacity_ += need;
        at = blocks_.back().get();
    } else {
        if (need > left_) {
            blocks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkSize));
            capacity_ += kChunkSize;
            next_ = blocks_.back().get();
            left_ = kChunkSize;
        }
        at = next_;
        next_ += need;
        left_ -= need;
    }
    std::memcpy(at, s.data(), s.size());
    at[s.size()] = '\0';
    return {at, s.size()};
}

bool is_dupes_temporary(std::string_view name) noexcept { return name.starts_with(kTempPrefix); }

namespace {

struct Walker {
    const DupesOptions& opt;
    DupesScan::Data& scan;
    std::set<std::pair<std::uint64_t, std::uint64_t>> seen_dirs;
    std::string path;  // the path being looked at (one buffer, reused)

    void warn(const std::string& msg) const {
        if (opt.warning) opt.warning(msg);
    }

    void progress() const {
        if (opt.progress && (scan.files_scanned & 1023) == 0) {
            DupesProgress p;
            p.phase = "walk";
            p.files = scan.files_scanned;
            opt.progress(p);
        }
    }

    void add_file(std::string_view file, const struct stat& st) {
        ++scan.files_scanned;
        progress();
        if (static_cast<std::uint64_t>(st.st_size) < opt.min_size) return;
        Entry e;
        e.path = scan.paths.store(file).data();
        e.dev = static_cast<std::uint64_t>(st.st_dev);
        e.ino = static_cast<std::uint64_t>(st.st_ino);
        e.size = static_cast<std::uint64_t>(st.st_size);
        e.mtime_ns = mtime_ns(st);
        scan.entries.push_back(e);
    }

    // Iterative depth-first walk below one root directory.
    void walk_dir(const std::string& root, std::uint64_t root_dev) {
        std::vector<std::string> stack{root};
        while (!stack.empty()) {
            const std::string dir = std::move(stack.back());
            stack.pop_back();
            DIR* d = ::opendir(dir.c_str());
            if (d == nullptr) {
                warn(fmt::format("cannot read directory '{}': {} (skipped)", dir, std::strerror(errno)));
                ++scan.skipped;
                continue;
            }
            const int dfd = ::dirfd(d);
            const std::string prefix = dir.ends_with('/') ? dir : std::string(dir).append("/");
            errno = 0;
            while (const dirent* de = ::readdir(d)) {
                const std::string_view name(de->d_name);
                if (name == "." || name == "..") continue;
                path.assign(prefix).append(name);
                if (is_dupes_temporary(name)) {
                    scan.stale_temporaries.push_back(scan.paths.store(path));
                    continue;
                }
                struct stat st {};
                if (::fstatat(dfd, de->d_name, &st, opt.follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW) != 0) {
                    // A dangling symlink when following is not an error worth a warning.
                    if (!(opt.follow_symlinks && errno == ENOENT))
                        warn(fmt::format("cannot stat '{}': {} (skipped)", path, std::strerror(errno)));
                    if (!(opt.follow_symlinks && errno == ENOENT)) ++scan.skipped;
                    continue;
                }
                if (S_ISREG(st.st_mode)) {
                    add_file(path, st);
                } else if (S_ISDIR(st.st_mode)) {
                    if (opt.one_file_system && static_cast<std::uint64_t>(st.st_dev) != root_dev) continue;
                    if (!seen_dirs.emplace(st.st_dev, st.st_ino).second) continue;  // loop or overlap
                    stack.push_back(path);
                }
                // symlinks (when not followed), devices, fifos, sockets: not files to merge
            }
            ::closedir(d);
        }
    }
};

std::string trim_slashes(std::string p) {
    while (p.size() > 1 && p.ends_with('/')) p.pop_back();
    return p;
}

}  // namespace

DupesScan::DupesScan(std::unique_ptr<Data> data) noexcept : data_(std::move(data)) {}
DupesScan::DupesScan(DupesScan&&) noexcept = default;
DupesScan& DupesScan::operator=(DupesScan&&) noexcept = default;
DupesScan::~DupesScan() = default;
std::size_t DupesScan::file_count() const noexcept { return data_ ? data_->entries.size() : 0; }

DupesScan scan_dupes(std::span<const std::string> roots, const DupesOptions& options) {
    auto data = std::make_unique<DupesScan::Data>();
    DupesScan::Data& scan = *data;
    Walker w{options, scan, {}, {}};
    for (const auto& given : roots) {
        const std::string root = trim_slashes(given);
        scan.roots.push_back(root);
        struct stat st {};
        if (::stat(root.c_str(), &st) != 0)
            throw OptionError(fmt::format("cannot read '{}': {}", given, std::strerror(errno)));
        if (S_ISREG(st.st_mode)) {
            w.add_file(root, st);
        } else if (S_ISDIR(st.st_mode)) {
            if (w.seen_dirs.emplace(st.st_dev, st.st_ino).second)
                w.walk_dir(root, static_cast<std::uint64_t>(st.st_dev));
        } else {
            throw OptionError(fmt::format("'{}' is neither a regular file nor a directory", given));
        }
    }
    // The same path given twice (overlapping roots) is one path. (strcmp
    // orders as std::string does: by unsigned bytes, a prefix first.)
    std::sort(scan.entries.begin(), scan.entries.end(),
              [](const Entry& a, const Entry& b) { return std::strcmp(a.path, b.path) < 0; });
    scan.entries.erase(std::unique(scan.entries.begin(), scan.entries.end(),
                                   [](const Entry& a, const Entry& b) { return std::strcmp(a.path, b.path) == 0; }),
                       scan.entries.end());
    std::sort(scan.stale_temporaries.begin(), scan.stale_temporaries.end());
    return DupesScan(std::move(data));
}

}  // namespace cdc
