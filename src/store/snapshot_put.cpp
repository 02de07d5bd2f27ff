// SPDX-License-Identifier: Apache-2.0
// `cdc store put` as a snapshot (cdc/snapshot.hpp, put_snapshot): the
// inputs' files put with Writer::put_files into the snapshot's content
// manifests, then a tree of their names; names resolved to their newest
// version (find_latest, latest_nodes); the store's format (2: snapshots
// only).
#include "snapshot_capture.hpp"
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
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store {

namespace {

/// "/" and the path's names ('/'-joined). (Built by appending: GCC 12's
/// -Wrestrict misreads `"/" + std::string&&` once inlined.)
std::string absolute(std::string_view path) {
    std::string p("/");
    p += detail::join_parts(detail::path_parts(path));
    return p;
}

}  // namespace

PutSnapshotResult put_snapshot(const Store& store, PutSnapshotOptions& options) {
    PutSnapshotResult out;
    Snapshot& snap = out.result.snapshot;
    detail::stamp_snapshot(snap, options.host);
    snap.tags = options.tags;
    for (const auto& n : options.names) {
        const std::string p = absolute(n);
        if (std::find(snap.paths.begin(), snap.paths.end(), p) == snap.paths.end()) snap.paths.push_back(p);
    }
    std::sort(snap.paths.begin(), snap.paths.end());

    detail::SnapshotSources src;
    src.files = options.files;
    src.merge = true;
    for (const auto& t : options.trees) src.roots.push_back({t.source, detail::path_parts(t.path)});
    // Directories above the inputs: as given (a tree's), else plain ones.
    std::map<std::string, const PutDir*> dir_meta;
    for (const auto& d : options.dirs) dir_meta[detail::join_parts(detail::path_parts(d.path))] = &d;
    src.dir_above = [&](const std::vector<std::string>& place) {
        tree::Entry e;
        e.type = tree::EntryType::directory;
        const auto d = dir_meta.find(detail::join_parts(place));
        if (d != dir_meta.end()) {
            e.mode = d->second->mode & 07777;
            e.mtime_ns = e.atime_ns = d->second->mtime_ns;
            e.uid = d->second->uid;
            e.gid = d->second->gid;
        } else {
            e.mode = 0755;
            e.mtime_ns = e.atime_ns = snap.time_ns;
            e.uid = ::geteuid();
            e.gid = ::getegid();
        }
        e.user = tree::local_user_name(e.uid);
        e.group = tree::local_group_name(e.gid);
        return e;
    };
    if (options.use_parent && !options.trees.empty()) src.parent = detail::find_parent(store, snap, {}, false);
    if (src.parent) snap.parent = src.parent->id;
    src.xattrs = options.xattrs;
    src.one_file_system = options.one_file_system;
    src.exclude = options.exclude;
    src.never_enter = options.never_enter;
    src.progress = options.progress;
    src.files_done = options.done;
    src.tree_file_done = options.tree_file_done;
    out.stats = detail::build_snapshot(store, snap, out.result, src, &out.tree_skipped);
    return out;
}


std::optional<LatestNode> find_latest(const Store& store, std::string_view path) {
    const std::string p = absolute(path);
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
    list_snapshot(store, snap, absolute(path), false, [&](const SnapshotNode& n) {
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
