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
#include "snapshot_capture.hpp"
#include "snapshot_names.hpp"

#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
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

using detail::Draft;
using detail::provisional;
using detail::provisional_index;

std::string child_path(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

class Visitor final : public tree::CaptureVisitor {
public:
    Visitor(Draft& d, SnapshotResult& r, std::string root, bool is_dir)
        : d_(d), r_(r), root_(std::move(root)), is_dir_(is_dir) {}
    void file(Entry&, int, std::string_view) override {}
    BlobId directory(const std::vector<Entry>& entries, std::string_view) override {
        d_.dirs.push_back(entries);
        return provisional(d_.dirs.size() - 1);
    }
    void problem(const tree::CaptureProblem& p) override {
        std::string path = root_;
        if (is_dir_ && !p.path.empty()) path += (root_ == "/" ? "" : "/") + p.path;
        (p.skipped ? r_.skipped : r_.warnings).push_back({path, p.what});
    }

private:
    Draft& d_;
    SnapshotResult& r_;
    std::string root_;
    bool is_dir_;
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
};

/// The parent's entries, directory by directory, read as asked.
class ParentView {
public:
    ParentView(const Store& store, const Snapshot& p) : store_(store), trees_(detail::load_trees(store, p)), snap_(p) {
        root_ = detail::root_entry(p);
    }
    const Entry* find(const std::string& path) {
        const auto parts = split(path);
        const Entry* e = &root_;
        std::string at;
        for (const auto& name : parts) {
            if (e->type != EntryType::directory) return nullptr;
            auto it = dirs_.find(at);
            if (it == dirs_.end()) it = dirs_.emplace(at, trees_.entries(e->subtree)).first;
            const auto& v = it->second;
            const auto x = std::lower_bound(v.begin(), v.end(), name,
                                            [](const Entry& a, const std::string& n) { return a.name < n; });
            if (x == v.end() || x->name != name) return nullptr;
            e = &*x;
            at = child_path(at, name);
        }
        return e;
    }

private:
    const Store& store_;
    detail::SnapshotTrees trees_;
    Snapshot snap_;
    Entry root_;
    std::unordered_map<std::string, std::vector<Entry>> dirs_;
};

}  // namespace

namespace detail {

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

Draft capture_paths(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result) {
    if (options.paths.empty()) throw OptionError("a snapshot needs at least one path");
    for (const auto& p : options.paths) {
        std::string a = std::filesystem::absolute(p).lexically_normal().string();
        while (a.size() > 1 && a.back() == '/') a.pop_back();
        if (std::find(snap.paths.begin(), snap.paths.end(), a) == snap.paths.end()) snap.paths.push_back(a);
    }
    std::sort(snap.paths.begin(), snap.paths.end());
    Draft d;
    d.dirs.emplace_back();  // the root
    d.made.insert(0);
    tree::CaptureOptions co;
    co.xattrs = options.xattrs;
    co.one_file_system = options.one_file_system;
    if (!options.exclude.empty())
        co.exclude = [&](std::string_view path, bool is_dir, int dir_fd) {
            const WalkExcludes& ex = options.exclude;
            bool out = ex.patterns.excluded(path, is_dir);
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
    for (const std::string& a : snap.paths) {
        const auto parts = split(a);
        co.link_base = parts;
        struct stat st {};
        if (::lstat(a.c_str(), &st) != 0) throw OptionError(fmt::format("cannot examine '{}': {}", a, std::strerror(errno)));
        Visitor v(d, result, a, S_ISDIR(st.st_mode));
        if (parts.empty()) {  // "/" itself
            if (snap.paths.size() > 1) throw OptionError("'/' and other paths overlap: give '/' alone");
            Entry e;
            try {
                e = tree::capture(a, v, co);
            } catch (const std::system_error& err) {
                throw OptionError(err.what());
            }
            d.root = provisional_index(e.subtree);
            continue;
        }
        std::size_t cur = 0;
        std::string at;
        for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
            at += "/" + parts[k];
            auto& entries = d.dirs[cur];
            auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == parts[k]; });
            if (it == entries.end()) {
                Entry e = directory_above(at, parts[k]);
                d.dirs.emplace_back();
                e.subtree = provisional(d.dirs.size() - 1);
                d.made.insert(d.dirs.size() - 1);
                d.dirs[cur].push_back(e);
                cur = d.dirs.size() - 1;
            } else {
                const std::size_t next = provisional_index(it->subtree);
                if (it->type != EntryType::directory || !d.made.count(next))
                    throw OptionError(fmt::format("'{}' is inside another path given ('{}')", a, at));
                cur = next;
            }
        }
        for (const auto& e : d.dirs[cur])
            if (e.name == parts.back()) throw OptionError(fmt::format("'{}' overlaps another path given", a));
        Entry e;
        try {
            e = tree::capture(a, v, co);
        } catch (const std::system_error& err) {
            throw OptionError(err.what());
        }
        e.name = parts.back();
        d.dirs[cur].push_back(std::move(e));
    }
    return d;
}

}  // namespace detail

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
    // 1. Capture (the paths first: the parent is found by them).
    Draft d = detail::capture_paths(options, snap, result);
    const std::size_t root = d.root;

    // The parent: given, or the newest of this host and these paths.
    std::optional<Snapshot> parent;
    if (!options.parent.empty()) {
        parent = find_snapshot(store, options.parent);
    } else if (!options.no_parent) {
        for (const Snapshot& s : list_snapshots(store))
            if (s.host == snap.host && s.paths == snap.paths) parent = s;
    }
    if (parent) snap.parent = parent->id;

    // 2. Files: reused from the parent, or queued to be read.
    std::vector<Job> jobs;
    std::unordered_map<std::uint64_t, std::size_t> job_of;  // (dir << 32 | index) -> job
    {
        std::function<void(std::size_t, const std::string&)> collect = [&](std::size_t di, const std::string& path) {
            for (std::size_t i = 0; i < d.dirs[di].size(); ++i) {
                const Entry& e = d.dirs[di][i];
                const std::string p = child_path(path, e.name);
                if (e.type == EntryType::directory) {
                    collect(provisional_index(e.subtree), p);
                } else if (e.type == EntryType::file) {
                    job_of[(std::uint64_t{di} << 32) | i] = jobs.size();
                    Job j;
                    j.dir = di;
                    j.index = i;
                    j.path = p;
                    j.manifest = detail::file_name(store, snap.id, p);
                    jobs.push_back(std::move(j));
                }
            }
        };
        collect(root, "");
    }
    Writer w(store);
    std::optional<ParentView> pv;
    if (parent && !options.force_read) pv.emplace(store, *parent);
    std::vector<std::size_t> to_read;
    // The contents the store holds (a parent made before content names
    // has none: its files are read again, once).
    std::set<std::string> stored;
    if (pv)
        for (const ManifestInfo& m : store.list(detail::kContentPrefix)) stored.insert(m.name);
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        Job& j = jobs[k];
        const Entry& e = d.dirs[j.dir][j.index];
        if (pv) {
            const Entry* before = pv->find(j.path);
            // Unchanged: its content is the parent's, under its content
            // name; nothing is read or written for it.
            if (before && detail::unchanged_since(e, *before) &&
                stored.count(detail::content_name(store, before->content.digest, tree::data_length(e)))) {
                j.reused = true;
                j.digest = before->content.digest;
                ++snap.totals.skipped_unchanged;
                continue;
            }
        }
        to_read.push_back(k);
    }

    // 3. The files read and stored.
    std::vector<Writer::Input> inputs(to_read.size());
    for (std::size_t n = 0; n < to_read.size(); ++n) {
        Job& j = jobs[to_read[n]];
        const Entry& e = d.dirs[j.dir][j.index];
        inputs[n].meta = {j.manifest, e.mode, e.mtime_ns};
        inputs[n].size_hint = tree::data_length(e);
        inputs[n].open = [&j, &e](FileMeta&) -> Source {
            const std::string path = "/" + j.path;
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
        if (io_error) {
            j.skipped = true;
            try {
                std::rethrow_exception(io_error);
            } catch (const std::exception& e) {
                result.skipped.push_back({"/" + j.path, e.what()});
            }
            return;
        }
        snap.totals.bytes_read += r.bytes;
        snap.totals.new_bytes += r.new_bytes;
    };
    if (!inputs.empty()) {  // (nothing read: no digest to look up, no commit needed before the last)
        try {
            w.put_files(inputs, done, options.progress);
        } catch (...) {
            for (auto& j : jobs) close_job(j);
            throw;
        }
        w.commit();
        snap.totals.stored_bytes = w.stats().stored_bytes;
    }
    std::unordered_map<std::string, std::string> digest_of_path;
    std::vector<std::pair<std::string, std::string>> moves;  // first name -> content name
    for (Job& j : jobs) {
        if (j.skipped) continue;
        if (!j.reused) {
            const auto m = store.find(j.manifest);
            if (!m) throw StoreError(fmt::format("snapshot {}: the content of '/{}' was not committed", snap.id, j.path));
            j.digest.assign(reinterpret_cast<const char*>(m->digest.data()), m->digest.size());
            moves.emplace_back(j.manifest, detail::content_name(store, j.digest, m->size));
        }
        digest_of_path.emplace(j.path, j.digest);
    }
    // Each new file under its content name (a content stored already keeps
    // its manifest), in one transaction before the snapshot's: a crash in
    // between leaves contents no snapshot names, which gc drops.
    if (!moves.empty()) store.rename(moves);

    // 4. The trees, bottom-up; each distinct one once.
    std::string stream;
    std::set<BlobId> written;
    std::function<BlobId(std::size_t, const std::string&)> build = [&](std::size_t di, const std::string& path) {
        std::vector<Entry> out;
        out.reserve(d.dirs[di].size());
        for (std::size_t i = 0; i < d.dirs[di].size(); ++i) {
            Entry e = d.dirs[di][i];
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
                if (j.was_opened) {  // as read (it may have changed since it was captured)
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
        return detail::append_tree(std::move(out), stream, written);
    };
    snap.tree = to_hex(build(root, ""));
    // Everything left out: files that could not be read (here or by the
    // capture), directories that could not be listed, names that vanished.
    snap.totals.skipped_unreadable = result.skipped.size();

    detail::commit_snapshot(w, snap, stream);
    return result;
}

}  // namespace cdc::store
