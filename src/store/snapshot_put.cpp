// SPDX-License-Identifier: Apache-2.0
// `cdc store put` as a snapshot (cdc/snapshot.hpp, put_snapshot): the
// inputs' files put with Writer::put_files into the snapshot's content
// manifests, then a tree of their names; names resolved to their newest
// version (find_latest, latest_nodes); the store's format (2: snapshots
// only).
#include "snapshot_names.hpp"

#include "format.hpp"
#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store {

namespace {

struct Node {
    std::map<std::string, Node> children;
    std::optional<std::size_t> file;  ///< index into the put's files
    bool dir = false;
};

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
    return buf;
}

}  // namespace

PutSnapshotResult put_snapshot(const Store& store, PutSnapshotOptions& options) {
    PutSnapshotResult out;
    Snapshot& snap = out.result.snapshot;
    {
        std::random_device rd;
        for (int i = 0; i < 4; ++i) snap.id += fmt::format("{:08x}", rd());
    }
    const auto now = std::chrono::system_clock::now();
    snap.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    {
        const std::time_t t = std::chrono::system_clock::to_time_t(now);
        struct tm tm {};
        ::localtime_r(&t, &tm);
        snap.utc_offset_s = static_cast<std::int32_t>(tm.tm_gmtoff);
    }
    snap.host = options.host.empty() ? host_name() : options.host;
    snap.user = tree::local_user_name(::geteuid());
    if (snap.user.empty()) snap.user = std::to_string(::geteuid());
    snap.tags = options.tags;
    for (const auto& n : options.names) {
        const std::string p = "/" + detail::join_parts(detail::path_parts(n));
        if (std::find(snap.paths.begin(), snap.paths.end(), p) == snap.paths.end()) snap.paths.push_back(p);
    }
    std::sort(snap.paths.begin(), snap.paths.end());

    // The tree of names first: a clash is refused before anything is read.
    Node root;
    root.dir = true;
    for (std::size_t i = 0; i < options.files.size(); ++i) {
        const auto parts = detail::path_parts(options.files[i].path);
        if (parts.empty()) throw OptionError("a file of a put needs a name");
        Node* at = &root;
        for (std::size_t k = 0; k + 1 < parts.size(); ++k) {
            at = &at->children[parts[k]];
            if (at->file)
                throw OptionError(fmt::format("'{}' is a file and a directory of '{}' in one put",
                                              detail::join_parts({parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(k) + 1}),
                                              options.files[i].path));
            at->dir = true;
        }
        Node& leaf = at->children[parts.back()];
        if (leaf.file || leaf.dir)
            throw OptionError(fmt::format("'{}' is given twice in one put", detail::join_parts(parts)));
        leaf.file = i;
    }
    std::map<std::string, const PutDir*> dir_meta;
    for (const auto& d : options.dirs) dir_meta[detail::join_parts(detail::path_parts(d.path))] = &d;

    // The files, into this snapshot's content manifests.
    std::vector<Writer::Input> inputs;
    inputs.reserve(options.files.size());
    for (auto& f : options.files) {
        f.input.meta.name = detail::file_name(store, snap.id, detail::join_parts(detail::path_parts(f.path)));
        inputs.push_back(f.input);
    }
    std::vector<bool> failed(options.files.size(), false);
    Writer w(store);
    auto done = [&](std::size_t i, const PutStats& r, const std::exception_ptr& io_error) {
        if (io_error) {
            failed[i] = true;
            try {
                std::rethrow_exception(io_error);
            } catch (const std::exception& e) {
                out.result.skipped.push_back({"/" + options.files[i].path, e.what()});
            }
        } else {
            snap.totals.bytes_read += r.bytes;
            snap.totals.new_bytes += r.new_bytes;
        }
        if (options.done) options.done(i, r, io_error);
    };
    if (!inputs.empty()) {
        w.put_files(inputs, done, options.progress);
        w.commit();
    }

    // What was committed, in one range of the catalog's names (a lookup
    // per file costs more than the rest of the tree).
    std::unordered_map<std::string, ManifestInfo> committed;
    std::vector<std::pair<std::string, std::string>> moves;  // first name -> content name
    for (auto& m : store.list(detail::kFilePrefix + snap.id + "/")) {
        std::string name = m.name;
        moves.emplace_back(m.name, detail::content_name(store, std::string_view(reinterpret_cast<const char*>(m.digest.data()),
                                                                                m.digest.size()),
                                                        m.size));
        committed.emplace(std::move(name), std::move(m));
    }
    // Each file under its content name before the snapshot commits (as a
    // backup does, create_snapshot): a crash in between leaves contents no
    // snapshot names, which gc drops.
    if (!moves.empty()) store.rename(moves);

    // The tree, bottom-up.
    const std::uint32_t my_uid = ::geteuid(), my_gid = ::getegid();
    // Owner names looked up once each (a lookup reads the passwd and group
    // databases: per file, it was most of a tree put's cost beyond reading).
    std::map<std::uint32_t, std::string> users, groups;
    auto user_of = [&](std::uint32_t uid) -> const std::string& {
        auto it = users.find(uid);
        if (it == users.end()) it = users.emplace(uid, tree::local_user_name(uid)).first;
        return it->second;
    };
    auto group_of = [&](std::uint32_t gid) -> const std::string& {
        auto it = groups.find(gid);
        if (it == groups.end()) it = groups.emplace(gid, tree::local_group_name(gid)).first;
        return it->second;
    };
    std::string stream;
    std::set<tree::BlobId> written;
    std::function<tree::BlobId(const Node&, const std::string&)> build = [&](const Node& n, const std::string& path) {
        std::vector<tree::Entry> entries;
        for (const auto& [name, child] : n.children) {
            const std::string p = path.empty() ? name : path + "/" + name;
            tree::Entry e;
            e.name = name;
            if (child.file) {
                const std::size_t i = *child.file;
                if (failed[i]) continue;
                const PutFile& f = options.files[i];
                const auto found = committed.find(f.input.meta.name);
                if (found == committed.end())
                    throw StoreError(fmt::format("put: the content of '/{}' was not committed", p));
                const ManifestInfo* m = &found->second;
                e.type = tree::EntryType::file;
                e.mode = m->mode & 07777;
                e.mtime_ns = e.atime_ns = m->mtime_ns;
                e.size = m->size;
                e.nlink = 1;
                e.uid = f.uid.value_or(my_uid);
                e.gid = f.gid.value_or(my_gid);
                e.user = user_of(e.uid);
                e.group = group_of(e.gid);
                e.content.digest.assign(reinterpret_cast<const char*>(m->digest.data()), m->digest.size());
                ++snap.totals.files;
                snap.totals.bytes += m->size;
            } else {
                e.type = tree::EntryType::directory;
                const auto d = dir_meta.find(p);
                if (d != dir_meta.end()) {
                    e.mode = d->second->mode & 07777;
                    e.mtime_ns = e.atime_ns = d->second->mtime_ns;
                    e.uid = d->second->uid;
                    e.gid = d->second->gid;
                } else {
                    e.mode = 0755;
                    e.mtime_ns = e.atime_ns = snap.time_ns;
                    e.uid = my_uid;
                    e.gid = my_gid;
                }
                e.user = user_of(e.uid);
                e.group = group_of(e.gid);
                e.subtree = build(child, p);
                ++snap.totals.dirs;
            }
            entries.push_back(std::move(e));
        }
        return detail::append_tree(std::move(entries), stream, written);
    };
    snap.tree = to_hex(build(root, ""));
    snap.totals.skipped_unreadable = out.result.skipped.size();
    detail::commit_snapshot(w, snap, stream);
    out.stats = w.stats();
    return out;
}


std::optional<LatestNode> find_latest(const Store& store, std::string_view path) {
    const std::string p = "/" + detail::join_parts(detail::path_parts(path));
    auto all = list_snapshots(store);
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        std::optional<SnapshotNode> node;
        try {
            list_snapshot(store, *it, p, false, [&](const SnapshotNode& n) {
                if (!node) node = n;
            });
        } catch (const NotFoundError&) {
            continue;
        }
        if (node) return LatestNode{*it, *node};
    }
    return std::nullopt;
}

std::vector<LatestNode> latest_nodes(const Store& store, bool dirs) {
    std::map<std::string, LatestNode> newest;
    std::set<std::string> seen_leaf;  // non-directories of newer snapshots: nothing older below them
    auto all = list_snapshots(store);
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        std::vector<SnapshotNode> nodes;
        list_snapshot(store, *it, "/", true, [&](const SnapshotNode& n) { nodes.push_back(n); });
        std::vector<std::string> leaves;
        for (auto& n : nodes) {
            if (n.path == "/") continue;
            bool shadowed = false;
            for (auto slash = n.path.rfind('/'); slash != 0 && slash != std::string::npos;
                 slash = n.path.rfind('/', slash - 1))
                if (seen_leaf.count(n.path.substr(0, slash))) {
                    shadowed = true;
                    break;
                }
            if (shadowed || newest.count(n.path)) continue;
            if (n.type != "dir") leaves.push_back(n.path);
            const std::string key = n.path;
            newest.emplace(key, LatestNode{*it, std::move(n)});
        }
        seen_leaf.insert(leaves.begin(), leaves.end());
    }
    std::vector<LatestNode> v;
    v.reserve(newest.size());
    for (auto& [path, n] : newest)
        if (dirs || n.node.type != "dir") v.push_back(std::move(n));
    return v;
}

std::string name_snapshot_contents(const Store& store, std::string text);  // (below)

std::string file_manifest(const Store& store, const Snapshot& snap, std::string_view path) {
    std::string content;
    list_snapshot(store, snap, "/" + detail::join_parts(detail::path_parts(path)), false, [&](const SnapshotNode& n) {
        if (content.empty()) content = n.content;
    });
    // (a snapshot made before content names: its files under its own id)
    if (content.empty() || !store.find(content)) return detail::file_name(store, snap.id, detail::join_parts(detail::path_parts(path)));
    return content;
}

std::string name_snapshot_files(const Store& store, std::string text) {
    text = name_snapshot_contents(store, std::move(text));
    const std::string& prefix = detail::kFilePrefix;
    if (text.find(prefix) == std::string::npos) return text;
    std::map<std::string, std::map<std::string, std::string>> paths_of;  // snapshot id -> manifest -> path
    std::size_t at = 0;
    while ((at = text.find(prefix, at)) != std::string::npos) {
        const auto slash = text.find('/', at + prefix.size());
        const std::size_t name_end = slash == std::string::npos ? slash : slash + 1 + 64;  // a chunk id's hex
        if (slash == std::string::npos || name_end > text.size()) break;
        const std::string id = text.substr(at + prefix.size(), slash - at - prefix.size());
        const std::string name = text.substr(at, name_end - at);
        auto it = paths_of.find(id);
        if (it == paths_of.end()) {
            it = paths_of.emplace(id, std::map<std::string, std::string>{}).first;
            try {
                const Snapshot snap = find_snapshot(store, id);
                list_snapshot(store, snap, "/", true, [&](const SnapshotNode& n) {
                    if (n.type == "file") it->second[file_manifest(store, snap, n.path)] = n.path;
                });
            } catch (const std::exception&) {  // (the message keeps the manifest's name)
            }
        }
        const auto p = it->second.find(name);
        if (p == it->second.end()) {
            at = name_end;
            continue;
        }
        const std::string shown = fmt::format("{} of snapshot {}", p->second, id);
        text.replace(at, name.size(), shown);
        at += shown.size();
    }
    return text;
}

std::string name_snapshot_contents(const Store& store, std::string text) {
    const std::string& prefix = detail::kContentPrefix;
    if (text.find(prefix) == std::string::npos) return text;
    std::optional<std::map<std::string, std::pair<std::string, std::string>>> where;  // content -> path, snapshot
    std::size_t at = 0;
    while ((at = text.find(prefix, at)) != std::string::npos) {
        const std::size_t name_end = at + prefix.size() + 64;  // a chunk id's hex
        if (name_end > text.size()) break;
        const std::string name = text.substr(at, name_end - at);
        if (!where) {  // the newest snapshot's path of every content
            where.emplace();
            try {
                auto all = list_snapshots(store);
                for (auto it = all.rbegin(); it != all.rend(); ++it)
                    list_snapshot(store, *it, "/", true, [&](const SnapshotNode& n) {
                        if (!n.content.empty()) where->emplace(n.content, std::make_pair(n.path, it->id));
                    });
            } catch (const std::exception&) {  // (the message keeps the manifest's name)
            }
        }
        const auto p = where->find(name);
        if (p == where->end()) {
            at = name_end;
            continue;
        }
        const std::string shown = fmt::format("{} of snapshot {}", p->second.first, p->second.second);
        text.replace(at, name.size(), shown);
        at += shown.size();
    }
    return text;
}

void require_snapshot_format(const Store& store) {
    if (store.info().format_version < kFormatVersion)
        throw OptionError(fmt::format("this store is format {}: run `cdc store migrate {}` (turns its named files "
                                      "into a snapshot)",
                                      store.info().format_version, store.info().path.string()));
}

void upgrade_to_snapshot_format(Store& store) {
    if (store.info().format_version >= kFormatVersion) return;
    // The marker says the format (Store::open takes the larger of it and
    // the catalog's setting): replaced atomically, the catalog untouched.
    const auto dir = store.info().path;
    const auto tmp = dir / (std::string(detail::kMarkerName) + ".tmp");
    {
        std::ofstream o(tmp, std::ios::trunc);
        o << detail::marker_text(kFormatVersion);
        o.flush();
        if (!o) throw StoreError(fmt::format("cannot write '{}'", tmp.string()));
    }
    {
        const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw StoreError(fmt::format("cannot open '{}': {}", tmp.string(), std::strerror(errno)));
        ::fchmod(fd, detail::store_file_mode(dir));
        try {
            detail::fsync_fd(fd, tmp.string(), false);
        } catch (...) {
            ::close(fd);
            throw;
        }
        ::close(fd);
    }
    std::error_code ec;
    std::filesystem::rename(tmp, dir / detail::kMarkerName, ec);
    if (ec) throw StoreError(fmt::format("cannot replace '{}': {}", (dir / detail::kMarkerName).string(), ec.message()));
    detail::fsync_dir(dir);
}

}  // namespace cdc::store
