// SPDX-License-Identifier: Apache-2.0
// Making a snapshot (cdc/snapshot.hpp, create_snapshot): four phases.
// 1. Capture (tree.hpp) of every path, metadata only: each directory's
//    entries are kept in memory under a provisional id, files are not read.
// 2. Each regular file either reuses its parent's content (size, mtime,
//    ctime, inode and device unchanged: its chunk list is copied into a
//    manifest of this snapshot, nothing is read) or is queued.
// 3. The queued files are put with Writer::put_files (read ahead on the
//    pool, as `cdc store put` of a tree), each reopened without following
//    links and checked to be the inode captured; then a commit, and each
//    file's digest is read from its manifest.
// 4. The trees are encoded bottom-up with those digests (tree_object.hpp),
//    each distinct one once into the "\0t/ID" manifest, then the header;
//    one last commit makes the snapshot visible.
#include "snapshot_names.hpp"

#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

namespace {

using tree::BlobId;
using tree::Entry;
using tree::EntryType;

/// Provisional ids of captured directories: an index into Draft::dirs.
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

struct Draft {
    std::vector<std::vector<Entry>> dirs;
    std::set<std::size_t> made;  ///< directories above the paths, made from lstat
};

std::string child_path(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

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

/// A directory above a given path, as a plain entry (mode, owner, times).
Entry directory_above(const std::string& path, const std::string& name) {
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

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < path.size()) {
        auto slash = path.find('/', at);
        if (slash == std::string::npos) slash = path.size();
        if (slash > at) out.push_back(path.substr(at, slash - at));
        at = slash + 1;
    }
    return out;
}

std::string random_id() {
    std::random_device rd;
    std::string s;
    for (int i = 0; i < 4; ++i) s += fmt::format("{:08x}", rd());
    return s;
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    return buf;
}

std::string user_name() {
    std::string n = tree::local_user_name(::geteuid());
    return n.empty() ? std::to_string(::geteuid()) : n;
}

std::int32_t utc_offset(std::time_t t) {
    struct tm tm {};
    ::localtime_r(&t, &tm);
    return static_cast<std::int32_t>(tm.tm_gmtoff);
}

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

struct Job {
    std::size_t dir = 0, index = 0;
    std::string path;  ///< from the snapshot's root
    std::string manifest;
    bool reused = false;
    bool skipped = false;
    std::string digest;  ///< 32 bytes once stored
    struct stat opened {};
    bool was_opened = false;
    int fd = -1;
    std::string disk;                 ///< a captured file: where it is
    std::optional<std::size_t> file;  ///< a file given as a Writer input: its index
    ManifestInfo info;                ///< such a file: as committed
};

/// The parent's entries, directory by directory, read as asked.
class ParentView {
public:
    ParentView(const Store& store, const Snapshot& p) : store_(store), trees_(detail::load_trees(store, p)), snap_(p) {
        root_ = detail::root_entry(p);
    }
    /// The entry at `path` ('/'-joined, from the root); files of one
    /// directory come in a row, so its entries are looked up once.
    const Entry* find(const std::string& path) {
        const auto slash = path.rfind('/');
        const std::vector<Entry>* v = children(slash == std::string::npos ? std::string() : path.substr(0, slash));
        if (!v) return nullptr;
        const std::string_view name = slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
        const auto x = std::lower_bound(v->begin(), v->end(), name,
                                        [](const Entry& a, std::string_view n) { return a.name < n; });
        if (x == v->end() || x->name != name) return nullptr;
        return &*x;
    }

    /// The parent's tree of directory `dir` and its encoded bytes, if its
    /// entries are `entries` (then the new snapshot's tree is that one:
    /// not encoded again).
    std::optional<std::pair<BlobId, std::string_view>> same_tree(const std::string& dir, const std::vector<Entry>& entries) {
        const Entry* e = dir.empty() ? &root_ : find(dir);
        if (!e || e->type != EntryType::directory) return std::nullopt;
        const std::vector<Entry>* v = children(dir);
        if (!v || *v != entries) return std::nullopt;
        const std::string_view raw = trees_.raw(e->subtree);
        if (raw.empty()) return std::nullopt;
        return std::make_pair(e->subtree, raw);
    }

private:
    /// The entries of directory `dir` ("" the root), nullptr if it is not one.
    const std::vector<Entry>* children(const std::string& dir) {
        if (const auto it = dirs_.find(dir); it != dirs_.end()) return it->second ? &*it->second : nullptr;
        const Entry* e = dir.empty() ? &root_ : find(dir);
        std::optional<std::vector<Entry>> v;
        if (e && e->type == EntryType::directory) v = trees_.entries(e->subtree);
        // (values of an unordered_map stay where they are as it grows)
        auto& slot = dirs_.emplace(dir, std::move(v)).first->second;
        return slot ? &*slot : nullptr;
    }

    const Store& store_;
    detail::SnapshotTrees trees_;
    Snapshot snap_;
    Entry root_;
    std::unordered_map<std::string, std::optional<std::vector<Entry>>> dirs_;
};

bool unchanged(const Entry& now, const Entry& before) {
    return (before.type == EntryType::file || before.type == EntryType::hardlink) && now.size == before.size &&
           now.mtime_ns == before.mtime_ns && now.ctime_ns == before.ctime_ns && now.inode == before.inode &&
           now.device == before.device && now.sparse == before.sparse && now.extents == before.extents &&
           before.content.digest.size() == 32;
}


}  // namespace

SnapshotResult create_snapshot(const Store& store, const SnapshotOptions& options) {
    if (options.paths.empty()) throw OptionError("a snapshot needs at least one path");
    SnapshotResult result;
    Snapshot& snap = result.snapshot;
    snap.id = random_id();
    const auto now = std::chrono::system_clock::now();
    snap.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    snap.utc_offset_s = utc_offset(std::chrono::system_clock::to_time_t(now));
    snap.host = options.host.empty() ? host_name() : options.host;
    snap.user = user_name();
    snap.tags = options.tags;
    for (const auto& p : options.paths) {
        std::string a = std::filesystem::absolute(p).lexically_normal().string();
        while (a.size() > 1 && a.back() == '/') a.pop_back();
        if (std::find(snap.paths.begin(), snap.paths.end(), a) == snap.paths.end()) snap.paths.push_back(a);
    }
    std::sort(snap.paths.begin(), snap.paths.end());
    if (snap.paths.size() > 1 && snap.paths.front() == "/") throw OptionError("'/' and other paths overlap: give '/' alone");

    detail::SnapshotSources src;
    // The parent: given, or the newest of this host and these paths.
    if (!options.parent.empty()) {
        src.parent = find_snapshot(store, options.parent);
    } else if (!options.no_parent) {
        for (const Snapshot& s : list_snapshots(store))
            if (s.host == snap.host && s.paths == snap.paths) src.parent = s;
    }
    if (src.parent) snap.parent = src.parent->id;
    if (options.force_read) src.parent.reset();
    for (const std::string& a : snap.paths) src.roots.push_back({a, split(a)});
    src.dir_above = [](const std::vector<std::string>& place) {
        std::string at;
        for (const auto& c : place) at += "/" + c;
        return directory_above(at, place.back());
    };
    src.xattrs = options.xattrs;
    src.one_file_system = options.one_file_system;
    src.exclude = options.exclude;
    src.progress = options.progress;
    detail::build_snapshot(store, snap, result, src);
    return result;
}

namespace detail {

PutStats build_snapshot(const Store& store, Snapshot& snap, SnapshotResult& result, SnapshotSources& src,
                        std::vector<SnapshotIssue>* tree_skipped) {
    // 1. Capture, and the places of the sources.
    Draft d;
    d.dirs.emplace_back();  // the root
    d.made.insert(0);
    std::map<std::size_t, std::string> disk_of;  // captured directory -> its path on disk
    std::map<std::pair<std::size_t, std::string>, std::string> disk_file;  // (dir, name) -> a root that is not a directory
    std::map<std::pair<std::size_t, std::string>, std::size_t> file_at;   // (dir, name) -> index into src.files
    tree::CaptureOptions co;
    co.xattrs = src.xattrs;
    co.one_file_system = src.one_file_system;
    if (!src.exclude.empty() || src.never_enter)
        co.exclude = [&](std::string_view path, bool is_dir, int dir_fd) {
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
    auto join_disk = [](const std::string& dir, const std::string& name) {
        return dir == "/" ? "/" + name : dir + "/" + name;
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

    // 2. Files: reused from the parent, or queued to be read.
    std::vector<Job> jobs;
    std::unordered_map<std::uint64_t, std::size_t> job_of;  // (dir << 32 | index) -> job
    {
        std::function<void(std::size_t, const std::string&, const std::string*)> collect =
            [&](std::size_t di, const std::string& path, const std::string* disk) {
                for (std::size_t i = 0; i < d.dirs[di].size(); ++i) {
                    const Entry& e = d.dirs[di][i];
                    const std::string p = child_path(path, e.name);
                    if (e.type == EntryType::directory) {
                        const std::size_t sub = provisional_index(e.subtree);
                        const auto it = disk_of.find(sub);
                        collect(sub, p, it == disk_of.end() ? nullptr : &it->second);
                    } else if (e.type == EntryType::file) {
                        job_of[(std::uint64_t{di} << 32) | i] = jobs.size();
                        Job j;
                        j.dir = di;
                        j.index = i;
                        j.path = p;
                        if (const auto f = file_at.find({di, e.name}); f != file_at.end()) {
                            j.file = f->second;
                        } else if (const auto df = disk_file.find({di, e.name}); df != disk_file.end()) {
                            j.disk = df->second;
                        } else if (disk) {
                            j.disk = join_disk(*disk, e.name);
                        } else {
                            throw StoreError(fmt::format("snapshot {}: no source for '/{}'", snap.id, p));
                        }
                        jobs.push_back(std::move(j));
                    }
                }
            };
        collect(0, "", nullptr);
    }
    Writer w(store);
    std::optional<ParentView> pv;
    if (src.parent) pv.emplace(store, *src.parent);
    std::vector<std::size_t> to_read;
    // The contents the store holds (a parent made before content names
    // has none: its files are read again, once).
    std::set<std::string> stored;
    if (pv)
        for (const ManifestInfo& m : store.list(detail::kContentPrefix)) stored.insert(m.name);
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        Job& j = jobs[k];
        const Entry& e = d.dirs[j.dir][j.index];
        if (pv && !j.file) {
            const Entry* before = pv->find(j.path);
            // Unchanged: its content is the parent's, under its content
            // name; nothing is read or written for it.
            if (before && unchanged(e, *before) &&
                stored.count(detail::content_name(store, before->content.digest, tree::data_length(e)))) {
                j.reused = true;
                j.digest = before->content.digest;
                ++snap.totals.skipped_unchanged;
                continue;
            }
        }
        // (named only if read: a keyed hash of its path)
        j.manifest = detail::file_name(store, snap.id, j.path);
        to_read.push_back(k);
    }

    // 3. The files read and stored.
    std::vector<Writer::Input> inputs(to_read.size());
    for (std::size_t n = 0; n < to_read.size(); ++n) {
        Job& j = jobs[to_read[n]];
        const Entry& e = d.dirs[j.dir][j.index];
        if (j.file) {
            inputs[n] = src.files[*j.file].input;
            inputs[n].meta.name = j.manifest;
            continue;
        }
        inputs[n].meta = {j.manifest, e.mode, e.mtime_ns};
        inputs[n].size_hint = tree::data_length(e);
        inputs[n].open = [&j, &e](FileMeta&) -> Source {
            const std::string& path = j.disk;
            int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOATIME);
            if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd < 0) throw IoError(fmt::format("cannot open it: {}", std::strerror(errno)));
            j.fd = fd;
            struct stat st {};
            if (::fstat(fd, &st) != 0) throw IoError(fmt::format("cannot examine it: {}", std::strerror(errno)));
            if (!S_ISREG(st.st_mode) || st.st_ino != e.inode || st.st_dev != e.device)
                throw IoError("it was replaced after it was captured");
            if (e.sparse && static_cast<std::uint64_t>(st.st_size) != e.size)
                throw IoError("it changed after it was captured");
            j.opened = st;
            j.was_opened = true;
            if (e.sparse) return Source::reader(std::make_unique<ExtentReader>(fd, tree::data_ranges(e), st, path));
            return Source::reader(std::make_unique<SteadyFileReader>(fd, st, path));
        };
    }
    auto close_job = [&](Job& j) {
        if (j.fd >= 0) ::close(std::exchange(j.fd, -1));
    };
    auto done = [&](std::size_t n, const PutStats& r, const std::exception_ptr& io_error) {
        Job& j = jobs[to_read[n]];
        close_job(j);
        if (j.file && src.files_done) src.files_done(*j.file, r, io_error);
        if (io_error) {
            j.skipped = true;
            try {
                std::rethrow_exception(io_error);
            } catch (const std::exception& e) {
                if (j.file) {
                    result.skipped.push_back({"/" + j.path, e.what()});
                } else {
                    result.skipped.push_back({j.disk, e.what()});
                    if (tree_skipped) tree_skipped->push_back(result.skipped.back());
                }
            }
            return;
        }
        if (!j.file && src.tree_file_done) src.tree_file_done(j.disk, r);
        snap.totals.bytes_read += r.bytes;
        snap.totals.new_bytes += r.new_bytes;
    };
    if (!inputs.empty()) {  // (nothing read: no digest to look up, no commit needed before the last)
        try {
            w.put_files(inputs, done, src.progress);
        } catch (...) {
            for (auto& j : jobs) close_job(j);
            throw;
        }
        w.commit();
        snap.totals.stored_bytes = w.stats().stored_bytes;
    }
    // What was committed, in one range of the catalog's names (a lookup
    // per file costs more than the rest of the tree).
    std::unordered_map<std::string, ManifestInfo> committed;
    if (!to_read.empty())
        for (auto& m : store.list(detail::kFilePrefix + snap.id + "/")) {
            std::string name = m.name;
            committed.emplace(std::move(name), std::move(m));
        }
    std::unordered_map<std::string, std::string> digest_of_path;
    std::vector<std::pair<std::string, std::string>> moves;  // first name -> content name
    for (Job& j : jobs) {
        if (j.skipped) continue;
        if (!j.reused) {
            const auto m = committed.find(j.manifest);
            if (m == committed.end())
                throw StoreError(fmt::format("snapshot {}: the content of '/{}' was not committed", snap.id, j.path));
            j.digest.assign(reinterpret_cast<const char*>(m->second.digest.data()), m->second.digest.size());
            moves.emplace_back(j.manifest, detail::content_name(store, j.digest, m->second.size));
            if (j.file) j.info = m->second;
        }
        digest_of_path.emplace(j.path, j.digest);
    }
    // Each new file under its content name (a content stored already keeps
    // its manifest), in one transaction before the snapshot's: a crash in
    // between leaves contents no snapshot names, which gc drops.
    if (!moves.empty()) store.rename(moves);

    // 4. The trees, bottom-up; each distinct one once.
    const std::uint32_t my_uid = ::geteuid(), my_gid = ::getegid();
    std::map<std::uint32_t, std::string> users, groups;  // (looked up once each)
    std::string stream;
    std::set<BlobId> written;
    std::function<BlobId(std::size_t, const std::string&)> build = [&](std::size_t di, const std::string& path) {
        std::vector<Entry> out;
        out.reserve(d.dirs[di].size());
        for (std::size_t i = 0; i < d.dirs[di].size(); ++i) {
            Entry e = std::move(d.dirs[di][i]);  // (each directory is built once)
            const std::string p = child_path(path, e.name);
            switch (e.type) {
            case EntryType::directory:
                e.subtree = build(provisional_index(e.subtree), p);
                ++snap.totals.dirs;
                break;
            case EntryType::file: {
                const Job& j = jobs[job_of.at((std::uint64_t{di} << 32) | i)];
                if (j.skipped) continue;
                e.content.digest = j.digest;
                if (j.file) {  // as the Writer stored it (mode and mtime from its open)
                    const PutFile& f = src.files[*j.file];
                    e.mode = j.info.mode & 07777;
                    e.mtime_ns = e.atime_ns = j.info.mtime_ns;
                    e.size = j.info.size;
                    e.nlink = 1;
                    e.uid = f.uid.value_or(my_uid);
                    e.gid = f.gid.value_or(my_gid);
                    auto u = users.find(e.uid);
                    if (u == users.end()) u = users.emplace(e.uid, tree::local_user_name(e.uid)).first;
                    auto g = groups.find(e.gid);
                    if (g == groups.end()) g = groups.emplace(e.gid, tree::local_group_name(e.gid)).first;
                    e.user = u->second;
                    e.group = g->second;
                } else if (j.was_opened) {  // as read (it may have changed since it was captured)
                    e.size = static_cast<std::uint64_t>(j.opened.st_size);
                    e.mtime_ns = ns_of(j.opened.st_mtim);
                    e.ctime_ns = ns_of(j.opened.st_ctim);
                }
                ++snap.totals.files;
                snap.totals.bytes += e.size;
                break;
            }
            case EntryType::hardlink: {
                std::string target;
                for (const auto& c : e.link) target = child_path(target, c);
                const auto it = digest_of_path.find(target);
                if (it == digest_of_path.end()) {
                    result.skipped.push_back({"/" + p, "a hard link to '/" + target + "', which was not stored"});
                    if (tree_skipped) tree_skipped->push_back(result.skipped.back());
                    continue;
                }
                e.content.digest = it->second;
                ++snap.totals.others;
                break;
            }
            default:
                ++snap.totals.others;
                break;
            }
            out.push_back(std::move(e));
        }
        if (pv)
            if (const auto same = pv->same_tree(path, out)) {
                detail::append_encoded_tree(same->first, same->second, stream, written);
                return same->first;
            }
        return detail::append_tree(std::move(out), stream, written);
    };
    snap.tree = to_hex(build(0, ""));
    // Everything left out: files that could not be read (here or by the
    // capture), directories that could not be listed, names that vanished.
    snap.totals.skipped_unreadable = result.skipped.size();

    detail::commit_snapshot(w, snap, stream);
    return w.stats();
}

}  // namespace detail

}  // namespace cdc::store
