// SPDX-License-Identifier: Apache-2.0
// The capture of a snapshot's sources (snapshot_capture.hpp): phase 1 of
// build_snapshot (snapshot.cpp), and of `cdc push` of a tree (src/transfer).
#include "snapshot_capture.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <ctime>
#include <functional>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store::detail {

namespace {

using tree::BlobId;
using tree::Entry;
using tree::EntryType;

class Visitor final : public tree::CaptureVisitor {
public:
    Visitor(Draft& d, SnapshotResult& r, std::string root, bool is_dir, std::vector<SnapshotIssue>* tree_skipped)
        : d_(d), r_(r), root_(std::move(root)), is_dir_(is_dir), tree_skipped_(tree_skipped) {}
    void file(Entry&, int, std::string_view) override {}
    BlobId directory(const std::vector<Entry>& entries, std::string_view path) override {
        d_.dirs.push_back(entries);
        paths_[d_.dirs.size() - 1] = path;
        return provisional(d_.dirs.size() - 1);
    }
    void problem(const tree::CaptureProblem& p) override {
        std::string path = root_;
        if (is_dir_ && !p.path.empty()) path += (root_ == "/" ? "" : "/") + p.path;
        (p.skipped ? r_.skipped : r_.warnings).push_back({path, p.what});
        if (p.skipped && tree_skipped_) tree_skipped_->push_back(r_.skipped.back());
    }
    /// The path inside the root of directory `i` of the draft.
    const std::string& path_of(std::size_t i) const { return paths_.at(i); }

private:
    Draft& d_;
    SnapshotResult& r_;
    std::string root_;
    bool is_dir_;
    std::vector<SnapshotIssue>* tree_skipped_;
    std::map<std::size_t, std::string> paths_;
};

std::int64_t ns_of(const struct timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

/// Reads the data extents of a sparse file, then checks that it did not
/// change while it was read (as SteadyFileReader does for a whole file).
class ExtentReader final : public Reader {
public:
    ExtentReader(int fd, std::vector<tree::Extent> ranges, const struct stat& at_open, std::string name)
        : fd_(fd), ranges_(std::move(ranges)), at_open_(at_open), name_(std::move(name)) {}
    ReadResult read(std::span<std::byte> buffer) override {
        while (i_ < ranges_.size() && done_ == ranges_[i_].length) {
            ++i_;
            done_ = 0;
        }
        if (i_ == ranges_.size()) {
            struct stat now {};
            if (::fstat(fd_, &now) != 0 || now.st_size != at_open_.st_size ||
                ns_of(now.st_mtim) != ns_of(at_open_.st_mtim) || ns_of(now.st_ctim) != ns_of(at_open_.st_ctim))
                throw IoError(fmt::format("'{}' changed while it was read", name_));
            return {0, true};
        }
        const auto want = std::min<std::uint64_t>(buffer.size(), ranges_[i_].length - done_);
        const ssize_t n = ::pread(fd_, buffer.data(), static_cast<std::size_t>(want),
                                  static_cast<off_t>(ranges_[i_].offset + done_));
        if (n < 0) {
            if (errno == EINTR) return {0, false};
            throw IoError(fmt::format("cannot read '{}': {}", name_, std::strerror(errno)));
        }
        if (n == 0) throw IoError(fmt::format("'{}' shrank while it was read", name_));
        done_ += static_cast<std::uint64_t>(n);
        return {static_cast<std::size_t>(n), false};
    }

private:
    int fd_;
    std::vector<tree::Extent> ranges_;
    struct stat at_open_;
    std::string name_;
    std::size_t i_ = 0;
    std::uint64_t done_ = 0;
};

/// A directory tagged as a cache (CACHEDIR.TAG, a regular file that starts
/// with the specification's signature).
bool cache_tagged(int dir_fd) {
    const int fd = ::openat(dir_fd, "CACHEDIR.TAG", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    std::string head(kCacheDirTagSignature.size(), '\0');
    const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                    ::pread(fd, head.data(), head.size(), 0) == static_cast<ssize_t>(head.size()) &&
                    head == kCacheDirTagSignature;
    ::close(fd);
    return ok;
}

}  // namespace

BlobId provisional(std::size_t i) {
    BlobId b{};
    b[0] = 0xd1;
    std::memcpy(b.data() + 8, &i, sizeof i);
    return b;
}

std::size_t provisional_index(const BlobId& b) {
    std::size_t i = 0;
    std::memcpy(&i, b.data() + 8, sizeof i);
    return i;
}

std::string join_disk(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
}

/// A directory above a given path, as a plain entry (mode, owner, times).
Entry directory_above(const std::vector<std::string>& place) {
    std::string path;
    for (const auto& c : place) path += "/" + c;
    const std::string& name = place.back();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        throw OptionError(fmt::format("cannot examine '{}': {}", path, std::strerror(errno)));
    Entry e;
    e.name = name;
    e.type = EntryType::directory;
    e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mtime_ns = ns_of(st.st_mtim);
    e.atime_ns = ns_of(st.st_atim);
    e.ctime_ns = ns_of(st.st_ctim);
    e.inode = st.st_ino;
    e.device = st.st_dev;
    return e;
}

std::unique_ptr<Reader> extent_reader(int fd, std::vector<tree::Extent> ranges, const struct stat& at_open,
                                      std::string name) {
    return std::make_unique<ExtentReader>(fd, std::move(ranges), at_open, std::move(name));
}

bool unchanged_since(const Entry& now, const Entry& before) {
    return (before.type == EntryType::file || before.type == EntryType::hardlink) && now.size == before.size &&
           now.mtime_ns == before.mtime_ns && now.ctime_ns == before.ctime_ns && now.inode == before.inode &&
           now.device == before.device && now.sparse == before.sparse && now.extents == before.extents &&
           before.content.digest.size() == 32;
}

Captured capture_sources(SnapshotSources& src, SnapshotResult& result, std::vector<SnapshotIssue>* tree_skipped) {
    Captured cap;
    Draft& d = cap.d;
    auto& disk_of = cap.disk_of;
    auto& disk_file = cap.disk_file;
    auto& file_at = cap.file_at;
    d.dirs.emplace_back();  // the root
    d.made.insert(0);
    tree::CaptureOptions co;
    co.xattrs = src.xattrs;
    co.one_file_system = src.one_file_system;
    if (!src.exclude.empty() || src.never_enter || src.stop)
        co.exclude = [&](std::string_view path, bool is_dir, int dir_fd) {
            if (is_dir && src.stop && src.stop->load(std::memory_order_relaxed)) throw CaptureStopped{};
            if (is_dir && dir_fd >= 0 && src.never_enter) {
                struct stat st {};
                if (::fstat(dir_fd, &st) == 0 && std::uint64_t{st.st_dev} == src.never_enter->first &&
                    std::uint64_t{st.st_ino} == src.never_enter->second) {
                    result.warnings.push_back({std::string(path), "the store itself: skipped"});
                    return true;
                }
            }
            const WalkExcludes& ex = src.exclude;
            bool out = !ex.empty() && ex.patterns.excluded(path, is_dir);
            if (!out && is_dir && dir_fd >= 0) {
                for (const auto& name : ex.if_present) {
                    struct stat st {};
                    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) out = true;
                }
                if (!out && ex.caches) out = cache_tagged(dir_fd);
            }
            if (out) ++result.excluded;
            return out;
        };
    auto shown = [](const std::vector<std::string>& place, std::size_t n) {
        std::string s;
        for (std::size_t k = 0; k < n; ++k) s += "/" + place[k];
        return s.empty() ? std::string("/") : s;
    };
    // Puts `e` into directory `di` (names stay sorted), or merges it into a
    // directory already there. `from`: the directory on disk `e` was
    // captured in, when that is not `di`'s (a tree's entries moved into
    // another directory: its files are read from where they are).
    std::function<void(std::size_t, Entry, const std::string&, const std::string*)> put_entry =
        [&](std::size_t di, Entry e, const std::string& at, const std::string* from) {
        auto& v = d.dirs[di];
        auto it = std::lower_bound(v.begin(), v.end(), e.name, [](const Entry& x, const std::string& n) { return x.name < n; });
        if (it == v.end() || it->name != e.name) {
            if (from && e.type != EntryType::directory) disk_file[{di, e.name}] = join_disk(*from, e.name);
            v.insert(it, std::move(e));
            return;
        }
        if (!src.merge || it->type != EntryType::directory || e.type != EntryType::directory)
            throw OptionError(fmt::format("'{}' is given twice in one snapshot", at));
        const std::size_t into = provisional_index(it->subtree);
        if (d.made.count(into)) {  // a directory made above: the captured one's metadata wins
            const BlobId keep = it->subtree;
            *it = e;
            it->subtree = keep;
            d.made.erase(into);
        }
        const auto src_dir = disk_of.find(provisional_index(e.subtree));
        const std::string* src_disk = src_dir == disk_of.end() ? nullptr : &src_dir->second;
        for (Entry& c : std::vector<Entry>(d.dirs[provisional_index(e.subtree)])) {
            const std::string where = at + "/" + c.name;
            put_entry(into, std::move(c), where, src_disk);
        }
    };
    // The directory that holds `place` (made as needed).
    auto parent_of = [&](const std::vector<std::string>& place) {
        std::size_t cur = 0;
        for (std::size_t k = 0; k + 1 < place.size(); ++k) {
            auto& entries = d.dirs[cur];
            auto it = std::lower_bound(entries.begin(), entries.end(), place[k],
                                       [](const Entry& x, const std::string& n) { return x.name < n; });
            if (it == entries.end() || it->name != place[k]) {
                const auto pos = it - entries.begin();  // (d.dirs grows below)
                std::vector<std::string> upto(place.begin(), place.begin() + static_cast<std::ptrdiff_t>(k) + 1);
                Entry e = src.dir_above(upto);
                e.name = place[k];
                e.type = EntryType::directory;
                d.dirs.emplace_back();
                e.subtree = provisional(d.dirs.size() - 1);
                d.made.insert(d.dirs.size() - 1);
                d.dirs[cur].insert(d.dirs[cur].begin() + pos, std::move(e));
                cur = d.dirs.size() - 1;
            } else {
                const bool dir = it->type == EntryType::directory;
                const std::size_t next = dir ? provisional_index(it->subtree) : 0;
                if (!dir || (!src.merge && !d.made.count(next)))
                    throw OptionError(fmt::format("'{}' is inside another path given ('{}')", shown(place, place.size()),
                                                  shown(place, k + 1)));
                cur = next;
            }
        }
        return cur;
    };
    for (const auto& r : src.roots) {
        co.link_base = r.place;
        struct stat st {};
        if (::lstat(r.disk.c_str(), &st) != 0)
            throw OptionError(fmt::format("cannot examine '{}': {}", r.disk, std::strerror(errno)));
        Visitor v(d, result, r.disk, S_ISDIR(st.st_mode), tree_skipped);
        const std::size_t first_dir = d.dirs.size();
        Entry e;
        try {
            e = tree::capture(r.disk, v, co);
        } catch (const std::system_error& err) {
            throw OptionError(err.what());
        }
        // Where each captured directory is on disk (the visitor saw them
        // with their paths inside the root).
        for (std::size_t k = first_dir; k < d.dirs.size(); ++k) {
            const std::string& inside = v.path_of(k);
            disk_of[k] = inside.empty() ? r.disk : (r.disk == "/" ? "/" + inside : r.disk + "/" + inside);
        }
        if (r.place.empty()) {  // the snapshot's root
            if (e.type != EntryType::directory) throw OptionError(fmt::format("'{}' is not a directory: it needs a name", r.disk));
            const std::string& from = disk_of.at(provisional_index(e.subtree));
            for (Entry& c : std::vector<Entry>(d.dirs[provisional_index(e.subtree)])) {
                const std::string where = "/" + c.name;
                put_entry(0, std::move(c), where, &from);
            }
            continue;
        }
        const std::size_t at = parent_of(r.place);
        e.name = r.place.back();
        if (e.type == EntryType::file) disk_file[{at, e.name}] = r.disk;
        put_entry(at, std::move(e), shown(r.place, r.place.size()), nullptr);
    }
    for (std::size_t x = 0; x < src.files.size(); ++x) {
        const auto place = path_parts(src.files[x].path);
        if (place.empty()) throw OptionError("a file of a put needs a name");
        const std::size_t at = parent_of(place);
        Entry e;
        e.name = place.back();
        e.type = EntryType::file;
        file_at[{at, e.name}] = x;
        put_entry(at, std::move(e), shown(place, place.size()), nullptr);
    }

    return cap;
}

std::string new_snapshot_id() {
    std::random_device rd;
    std::string id;
    for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", rd());
    return id;
}

std::optional<Snapshot> find_parent(const Store& store, const Snapshot& snap, const std::string& named, bool none) {
    if (!named.empty()) return find_snapshot(store, named);
    std::optional<Snapshot> parent;
    if (!none)
        for (const Snapshot& s : list_snapshots(store))  // (oldest first: the last that matches is the newest)
            if (s.host == snap.host && s.paths == snap.paths) parent = s;
    return parent;
}

void stamp_snapshot(Snapshot& snap, const std::string& host) {
    snap.id = new_snapshot_id();
    const auto now = std::chrono::system_clock::now();
    snap.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    struct tm tm {};
    ::localtime_r(&t, &tm);
    snap.utc_offset_s = static_cast<std::int32_t>(tm.tm_gmtoff);
    if (!host.empty()) {
        snap.host = host;
    } else {
        char buf[256] = {};
        snap.host = ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
    }
    const std::string user = tree::local_user_name(::geteuid());
    snap.user = user.empty() ? std::to_string(::geteuid()) : user;
}

void normalise_paths(const std::vector<std::filesystem::path>& paths, Snapshot& snap) {
    if (paths.empty()) throw OptionError("a snapshot needs at least one path");
    for (const auto& p : paths) {
        std::string a = std::filesystem::absolute(p).lexically_normal().string();
        while (a.size() > 1 && a.back() == '/') a.pop_back();
        if (std::find(snap.paths.begin(), snap.paths.end(), a) == snap.paths.end()) snap.paths.push_back(a);
    }
    std::sort(snap.paths.begin(), snap.paths.end());
    if (snap.paths.size() > 1 && snap.paths.front() == "/") throw OptionError("'/' and other paths overlap: give '/' alone");
}

Draft capture_paths(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result) {
    normalise_paths(options.paths, snap);
    SnapshotSources src;
    for (const std::string& a : snap.paths) src.roots.push_back({a, path_parts(a)});
    src.dir_above = [](const std::vector<std::string>& place) { return directory_above(place); };
    src.xattrs = options.xattrs;
    src.one_file_system = options.one_file_system;
    src.exclude = options.exclude;
    return capture_sources(src, result, nullptr).d;
}

}  // namespace cdc::store::detail
