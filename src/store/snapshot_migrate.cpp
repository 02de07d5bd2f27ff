// SPDX-License-Identifier: Apache-2.0
// A store's named files (format 1: `put`, `push`) turned into one snapshot
// (cdc/snapshot.hpp, migrate_names): a tree of the names, each file's chunk
// list copied into a content manifest of the snapshot.
#include "snapshot_names.hpp"

#include "tree_object.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

namespace cdc::store {

namespace {

struct Node {
    std::map<std::string, Node> children;
    const ManifestInfo* file = nullptr;
};

std::vector<std::string> split_name(const std::string& name) {
    std::vector<std::string> out;
    std::size_t at = 0;
    for (;;) {
        const auto slash = name.find('/', at);
        out.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
        if (slash == std::string::npos) break;
        at = slash + 1;
    }
    return out;
}

}  // namespace

SnapshotResult migrate_names(Store& store, const MigrateOptions& options) {
    const std::vector<ManifestInfo> files = store.list();
    if (files.empty()) throw NotFoundError(fmt::format("the store '{}' has no named file", store.info().path.string()));
    SnapshotResult result;
    Snapshot& snap = result.snapshot;
    {
        std::random_device rd;
        for (int i = 0; i < 4; ++i) snap.id += fmt::format("{:08x}", rd());
    }
    const auto now = std::chrono::system_clock::now();
    snap.time_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    if (!options.host.empty()) {
        snap.host = options.host;
    } else {
        char buf[256] = {};
        snap.host = ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "localhost";
    }
    snap.user = tree::local_user_name(::geteuid());
    if (snap.user.empty()) snap.user = std::to_string(::geteuid());
    snap.paths = {"/"};
    snap.tags = {"migrated"};

    // The names as a tree.
    Node root;
    for (const ManifestInfo& m : files) {
        if (const std::string why = name_problem(m.name); !why.empty()) {
            result.skipped.push_back({m.name, why});
            continue;
        }
        const auto parts = split_name(m.name);
        Node* at = &root;
        bool ok = true;
        for (std::size_t i = 0; i + 1 < parts.size() && ok; ++i) {
            at = &at->children[parts[i]];
            ok = at->file == nullptr;
        }
        if (ok) {
            Node& leaf = at->children[parts.back()];
            ok = leaf.file == nullptr && leaf.children.empty();
            if (ok) leaf.file = &m;
        }
        if (!ok) result.skipped.push_back({m.name, "a file and a directory of the same name"});
    }

    Writer w(store);
    std::string stream;
    std::set<tree::BlobId> written;
    std::set<std::string> contents;  // content manifests this migration writes
    std::function<tree::BlobId(const Node&, const std::string&)> build = [&](const Node& n, const std::string& path) {
        std::vector<tree::Entry> entries;
        for (const auto& [name, child] : n.children) {
            const std::string p = path.empty() ? name : path + "/" + name;
            tree::Entry e;
            e.name = name;
            e.uid = ::geteuid();
            e.gid = ::getegid();
            e.user = snap.user;
            if (child.file) {
                const ManifestInfo& m = *child.file;
                std::vector<ChunkId> ids;
                std::vector<std::uint32_t> sizes;
                std::uint64_t total = 0;
                store.for_each_chunk(m.name, [&](const ChunkId& id, std::uint32_t size) {
                    ids.push_back(id);
                    sizes.push_back(size);
                    total += size;
                });
                const std::string content = detail::content_name(
                    store, std::string_view(reinterpret_cast<const char*>(m.digest.data()), m.digest.size()), total);
                if (contents.insert(content).second && !store.find(content)) {
                    w.begin_manifest({content, m.mode, m.mtime_ns});
                    if (!ids.empty()) w.add_read_chunks(ids, sizes);
                    w.finish_manifest(m.digest, total);
                }
                e.type = tree::EntryType::file;
                e.mode = m.mode & 07777;
                e.mtime_ns = e.atime_ns = m.mtime_ns;
                e.size = m.size;
                e.nlink = 1;
                e.content.digest.assign(reinterpret_cast<const char*>(m.digest.data()), m.digest.size());
                ++snap.totals.files;
                snap.totals.bytes += m.size;
            } else {
                e.type = tree::EntryType::directory;
                e.mode = 0755;
                e.mtime_ns = e.atime_ns = snap.time_ns;
                e.subtree = build(child, p);
                ++snap.totals.dirs;
            }
            entries.push_back(std::move(e));
        }
        return detail::append_tree(std::move(entries), stream, written);
    };
    snap.tree = to_hex(build(root, ""));
    snap.totals.skipped_unreadable = result.skipped.size();
    detail::commit_snapshot(store, w, snap, stream);
    if (options.remove_names) {
        std::set<std::string> left_out;  // (kept under their names: not in the snapshot)
        for (const auto& i : result.skipped) left_out.insert(i.path);
        std::vector<std::string> names;
        for (const auto& m : files)
            if (!left_out.count(m.name)) names.push_back(m.name);
        store.remove(names);
    }
    return result;
}

}  // namespace cdc::store
