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
// Memory: besides the Writer's buffers (bounded by its read-ahead budget,
// whatever the tree), a snapshot holds per regular file its captured Entry
// (384 bytes and its names), one Job (~220 bytes and its path and first
// name) and, from the commit on, one listed ManifestInfo and one rename;
// nothing per file is held twice (no map copying the listing, no struct
// stat or ManifestInfo in every Job, the jobs reserved once rather than
// doubled). The issue-35 tree (25,000 files) peaks at ~80 MB with the
// Writer's buffers; the encrypted store's Argon2id (64 MiB) is freed
// before the capture starts, so it is not added to that.
#include "snapshot_capture.hpp"
#include "snapshot_names.hpp"

#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

namespace {

using tree::BlobId;
using tree::Entry;
using tree::EntryType;
using detail::Captured;
using detail::Draft;
using detail::join_disk;
using detail::provisional;
using detail::provisional_index;

std::string child_path(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

std::int64_t ns_of(const struct timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

// One regular file of the snapshot. A backup holds one per file of the
// tree (25,000 in the issue-35 corpus) for the whole run, so it keeps only
// what later phases read: no struct stat, no ManifestInfo, no copy of the
// directory's path on disk (derived when the file is opened).
struct Job {
    std::size_t dir = 0, index = 0;
    std::string path;  ///< from the snapshot's root
    std::string manifest;
    bool reused = false;
    bool skipped = false;
    bool was_opened = false;
    int fd = -1;
    std::string digest;  ///< once stored (or reused)
    /// As read (it may have changed since it was captured).
    std::uint64_t opened_size = 0;
    std::int64_t opened_mtime_ns = 0, opened_ctime_ns = 0;
    const std::string* disk_dir = nullptr;  ///< a captured file: its directory on disk ...
    std::string disk;                       ///< ... or its own path (a root that is not a directory)
    std::optional<std::size_t> file;        ///< a file given as a Writer input: its index
    /// Such a file, as committed.
    std::uint32_t info_mode = 0;
    std::int64_t info_mtime_ns = 0;
};

/// Where job `j` (not a Writer input) is on disk.
std::string disk_path(const Job& j, const Entry& e) { return j.disk_dir ? join_disk(*j.disk_dir, e.name) : j.disk; }

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

    /// Decodes every directory of the parent below `dir` ahead of find's
    /// asking. One that cannot be decoded is left for find, which throws
    /// where it is needed (as when decoded on demand).
    void decode_all(const std::string& dir = {}) {
        const std::vector<Entry>* v = nullptr;
        try {
            v = children(dir);
        } catch (const std::exception&) {
            return;
        }
        if (!v) return;
        for (const Entry& e : *v)
            if (e.type == EntryType::directory) decode_all(child_path(dir, e.name));
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

}  // namespace

namespace {

// create_snapshot on `store` as it is opened: the parent looked for, and
// src.parent set (none when the snapshot reads every file again).
void take_parent(const Store& store, const SnapshotOptions& options, Snapshot& snap, detail::SnapshotSources& src) {
    src.parent = detail::find_parent(store, snap, options.parent, options.no_parent);
    if (src.parent) snap.parent = src.parent->id;
    if (options.force_read) src.parent.reset();
}

// create_snapshot's sources, all but the parent.
detail::SnapshotSources sources_of(const SnapshotOptions& options, Snapshot& snap) {
    if (options.paths.empty()) throw OptionError("a snapshot needs at least one path");
    detail::stamp_snapshot(snap, options.host);
    snap.tags = options.tags;
    detail::normalise_paths(options.paths, snap);
    detail::SnapshotSources src;
    for (const std::string& a : snap.paths) src.roots.push_back({a, detail::path_parts(a)});
    src.dir_above = [](const std::vector<std::string>& place) { return detail::directory_above(place); };
    src.xattrs = options.xattrs;
    src.one_file_system = options.one_file_system;
    src.exclude = options.exclude;
    src.progress = options.progress;
    return src;
}

}  // namespace

SnapshotResult create_snapshot(const Store& store, const SnapshotOptions& options) {
    SnapshotResult result;
    detail::SnapshotSources src = sources_of(options, result.snapshot);
    take_parent(store, options, result.snapshot, src);
    detail::build_snapshot(store, result.snapshot, result, src);
    return result;
}

SnapshotResult create_snapshot(const std::function<Store()>& open, const SnapshotOptions& options) {
    SnapshotResult result;
    detail::SnapshotSources src = sources_of(options, result.snapshot);
    std::optional<Store> store;
    const detail::StoreOpener opener = [&]() -> const Store& {
        store.emplace(open());
        take_parent(*store, options, result.snapshot, src);
        return *store;
    };
    detail::build_snapshot(opener, true, result.snapshot, result, src);
    return result;
}

namespace detail {

PutStats build_snapshot(const Store& store, Snapshot& snap, SnapshotResult& result, SnapshotSources& src,
                        std::vector<SnapshotIssue>* tree_skipped) {
    return build_snapshot(StoreOpener([&]() -> const Store& { return store; }), false, snap, result, src,
                          tree_skipped);
}

PutStats build_snapshot(const StoreOpener& open, bool opens, Snapshot& snap, SnapshotResult& result,
                        SnapshotSources& src, std::vector<SnapshotIssue>* tree_skipped) {
    // 1. Capture, and the places of the sources. The capture reads only
    // the file system; meanwhile another thread opens the store if it is
    // not open yet (an encrypted store's key derivation, ~0.3 s of one
    // core, the slow part of opening it) and reads what phase 2 compares
    // with: the parent's trees, decoded, and the names of the contents the
    // store holds (a parent made before content names has none: its files
    // are read again, once). A daily backup's capture and these take about
    // the same time, each a single thread's work. The store is used by
    // that thread alone until it is joined; if it fails, the capture stops
    // at its next directory and the failure is what the caller sees.
    const Store* opened = nullptr;
    std::optional<ParentView> pv;
    std::vector<std::string> stored;  // sorted
    std::exception_ptr parent_error;
    std::atomic<bool> failed{false};
    std::thread parent_reader;
    auto read_store = [&] {
        try {
            const Store& st = open();  // (sets src.parent when it opens)
            opened = &st;
            if (!src.parent) return;
            pv.emplace(st, *src.parent);
            pv->decode_all();
            std::vector<ManifestInfo> listed = st.list(detail::kContentPrefix);
            stored.reserve(listed.size());
            for (ManifestInfo& m : listed) stored.push_back(std::move(m.name));
            std::sort(stored.begin(), stored.end());
        } catch (...) {
            parent_error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
        }
    };
    if (opens || src.parent)
        parent_reader = std::thread(read_store);
    else
        opened = &open();
    struct Joiner {
        std::thread& t;
        ~Joiner() {
            if (t.joinable()) t.join();
        }
    } join_parent_reader{parent_reader};
    src.stop = &failed;
    std::optional<Captured> captured;
    try {
        captured.emplace(capture_sources(src, result, tree_skipped));
    } catch (const CaptureStopped&) {
    }
    src.stop = nullptr;
    if (parent_reader.joinable()) parent_reader.join();
    if (parent_error) std::rethrow_exception(parent_error);
    if (!captured) throw StoreError("the capture stopped without a reason");  // (only the reader stops it)
    const Store& store = *opened;
    Captured& cap = *captured;
    Draft& d = cap.d;
    const auto& disk_of = cap.disk_of;
    const auto& disk_file = cap.disk_file;
    const auto& file_at = cap.file_at;

    // 2. Files: reused from the parent, or queued to be read.
    std::vector<Job> jobs;
    {
        std::size_t files = 0;
        for (const auto& dir : d.dirs)
            files += static_cast<std::size_t>(std::count_if(dir.begin(), dir.end(), [](const Entry& e) { return e.type == EntryType::file; }));
        jobs.reserve(files);  // (not twice the size while it grows)
    }
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
                            j.disk_dir = disk;
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
    std::vector<std::size_t> to_read;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        Job& j = jobs[k];
        const Entry& e = d.dirs[j.dir][j.index];
        if (pv && !j.file) {
            const Entry* before = pv->find(j.path);
            // Unchanged: its content is the parent's, under its content
            // name; nothing is read or written for it.
            if (before && detail::unchanged_since(e, *before) &&
                std::binary_search(stored.begin(), stored.end(),
                                   detail::content_name(store, before->content.digest, tree::data_length(e)))) {
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
            const std::string path = disk_path(j, e);
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
            j.opened_size = static_cast<std::uint64_t>(st.st_size);
            j.opened_mtime_ns = ns_of(st.st_mtim);
            j.opened_ctime_ns = ns_of(st.st_ctim);
            j.was_opened = true;
            if (e.sparse) return Source::reader(detail::extent_reader(fd, tree::data_ranges(e), st, path));
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
                    result.skipped.push_back({disk_path(j, d.dirs[j.dir][j.index]), e.what()});
                    if (tree_skipped) tree_skipped->push_back(result.skipped.back());
                }
            }
            return;
        }
        if (!j.file && src.tree_file_done) src.tree_file_done(disk_path(j, d.dirs[j.dir][j.index]), r);
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
    // The Writer's inputs (a name and an opener per file) are done with:
    // their memory is reused by the listing below rather than added to it.
    std::vector<Writer::Input>().swap(inputs);
    // What was committed, in one range of the catalog's names (a lookup
    // per file costs more than the rest of the tree), sorted in place and
    // searched: one ManifestInfo per file read, not a second copy in a map
    // (25,000 files: ~8 MB less at the backup's peak).
    std::vector<ManifestInfo> committed;
    if (!to_read.empty()) committed = store.list(detail::kFilePrefix + snap.id + "/");
    std::sort(committed.begin(), committed.end(), [](const ManifestInfo& a, const ManifestInfo& b) { return a.name < b.name; });
    std::vector<std::pair<std::string, std::string>> moves;  // first name -> content name
    moves.reserve(to_read.size());
    for (Job& j : jobs) {
        if (j.skipped || j.reused) continue;
        const auto m = std::lower_bound(committed.begin(), committed.end(), j.manifest,
                                        [](const ManifestInfo& a, const std::string& n) { return a.name < n; });
        if (m == committed.end() || m->name != j.manifest)
            throw StoreError(fmt::format("snapshot {}: the content of '/{}' was not committed", snap.id, j.path));
        j.digest.assign(reinterpret_cast<const char*>(m->digest.data()), m->digest.size());
        moves.emplace_back(std::move(j.manifest), detail::content_name(store, j.digest, m->size));
        if (j.file) {
            j.info_mode = m->mode;
            j.info_mtime_ns = m->mtime_ns;
            j.opened_size = m->size;
        }
    }
    std::vector<ManifestInfo>().swap(committed);
    // Each new file under its content name (a content stored already keeps
    // its manifest), in one transaction before the snapshot's: a crash in
    // between leaves contents no snapshot names, which gc drops.
    if (!moves.empty()) store.rename(moves);

    // 4. The trees, bottom-up; each distinct one once.
    std::unordered_map<std::string_view, const Job*> digest_of_path;  // (jobs no longer grows)
    digest_of_path.reserve(jobs.size());
    for (const Job& j : jobs) digest_of_path.emplace(j.path, &j);
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
                    e.mode = j.info_mode & 07777;
                    e.mtime_ns = e.atime_ns = j.info_mtime_ns;
                    e.size = j.opened_size;
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
                    e.size = j.opened_size;
                    e.mtime_ns = j.opened_mtime_ns;
                    e.ctime_ns = j.opened_ctime_ns;
                }
                ++snap.totals.files;
                snap.totals.bytes += e.size;
                break;
            }
            case EntryType::hardlink: {
                std::string target;
                for (const auto& c : e.link) target = child_path(target, c);
                const auto it = digest_of_path.find(target);
                if (it == digest_of_path.end() || it->second->skipped) {
                    result.skipped.push_back({"/" + p, "a hard link to '/" + target + "', which was not stored"});
                    if (tree_skipped) tree_skipped->push_back(result.skipped.back());
                    continue;
                }
                e.content.digest = it->second->digest;
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

    detail::commit_snapshot(store, w, snap, stream);
    return w.stats();
}

}  // namespace detail

}  // namespace cdc::store
