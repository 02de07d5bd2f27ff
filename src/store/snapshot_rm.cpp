// SPDX-License-Identifier: Apache-2.0
// Deleting a path's history (cdc/snapshot.hpp, remove_paths): each snapshot
// that holds it rewritten without it (new trees, a new header with a new id,
// the other files' contents kept, nothing read), the old one forgotten in
// the same transaction.
#include "snapshot_names.hpp"

#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace cdc::store {

namespace {

std::string normal(std::string_view path) {
    std::string s;
    std::size_t at = 0;
    while (at <= path.size()) {
        const auto slash = path.find('/', at);
        const auto end = slash == std::string_view::npos ? path.size() : slash;
        if (end > at) {
            if (!s.empty()) s.push_back('/');
            s.append(path.substr(at, end - at));
        }
        if (slash == std::string_view::npos) break;
        at = slash + 1;
    }
    return s;
}

std::string child_of(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    std::string s = dir;
    s.push_back('/');
    return s.append(name);
}

bool removed_by(std::string p, const std::set<std::string>& gone) {
    for (;;) {
        if (gone.count(p)) return true;
        const auto slash = p.rfind('/');
        if (slash == std::string::npos) return false;
        p.resize(slash);
    }
}

struct Plan {
    Snapshot old;
    Snapshot now;  ///< its rewrite (id empty: nothing left)
    std::string stream;
    std::vector<std::string> removed;
    std::vector<std::pair<std::string, tree::Entry>> files;  ///< path, entry (kept files)
    bool exists = false;  ///< a rewrite made by an interrupted remove_paths is there
};

}  // namespace

std::vector<RewrittenSnapshot> remove_paths(Store& store, std::span<const std::string> paths, bool dry_run) {
    std::set<std::string> asked;
    for (const auto& p : paths) {
        const std::string n = normal(p);
        if (n.empty()) throw OptionError("'/' is every path: forget the snapshots instead");
        asked.insert(n);
    }
    std::set<std::string> found;
    std::vector<Plan> plans;
    const std::vector<Snapshot> all = list_snapshots(store);
    for (const Snapshot& s : all) {
        const detail::SnapshotTrees trees = detail::load_trees(store, s);
        // What goes: the paths asked, and hard links into them.
        std::set<std::string> gone;
        std::vector<std::pair<std::string, std::string>> links;  // path, target
        std::function<void(const tree::Entry&, const std::string&)> scan = [&](const tree::Entry& e,
                                                                                const std::string& p) {
            if (!p.empty() && asked.count(p)) {
                gone.insert(p);
                found.insert(p);
            }
            if (e.type == tree::EntryType::hardlink) {
                std::string t;
                for (const auto& c : e.link) t = child_of(t, c);
                links.emplace_back(p, t);
            }
            if (e.type == tree::EntryType::directory)
                for (const auto& c : trees.entries(e.subtree)) scan(c, child_of(p, c.name));
        };
        scan(detail::root_entry(s), "");
        if (gone.empty()) continue;
        const std::set<std::string> asked_here = gone;
        for (const auto& [p, t] : links)
            if (removed_by(t, asked_here)) gone.insert(p);

        Plan plan;
        plan.old = s;
        std::set<tree::BlobId> written;
        SnapshotTotals t = s.totals;
        t.files = t.dirs = t.others = t.bytes = 0;
        std::function<tree::BlobId(const tree::BlobId&, const std::string&)> build = [&](const tree::BlobId& id,
                                                                                      const std::string& path) {
            std::vector<tree::Entry> out;
            for (tree::Entry e : trees.entries(id)) {
                const std::string p = child_of(path, e.name);
                if (gone.count(p)) {
                    plan.removed.push_back("/" + p);
                    continue;
                }
                switch (e.type) {
                case tree::EntryType::directory:
                    e.subtree = build(e.subtree, p);
                    ++t.dirs;
                    break;
                case tree::EntryType::file:
                    plan.files.emplace_back(p, e);
                    ++t.files;
                    t.bytes += e.size;
                    break;
                default:
                    ++t.others;
                    break;
                }
                out.push_back(std::move(e));
            }
            return detail::append_tree(std::move(out), plan.stream, written);
        };
        const tree::BlobId root = build(detail::root_entry(s).subtree, "");
        if (t.files + t.others > 0) {
            plan.now = s;
            plan.now.tree = to_hex(root);
            plan.now.totals = t;
            // An interrupted earlier run may have committed this rewrite
            // already: the same header but for the id.
            for (const Snapshot& o : all)
                if (o.id != s.id && o.tree == plan.now.tree && o.time_ns == s.time_ns && o.host == s.host &&
                    o.user == s.user && o.paths == s.paths && o.tags == s.tags && o.parent == s.parent) {
                    plan.now.id = o.id;
                    plan.exists = true;
                }
            if (!plan.exists) {
                std::random_device rd;
                plan.now.id.clear();
                for (int i = 0; i < 4; ++i) plan.now.id += fmt::format("{:08x}", rd());
            }
        } else {
            plan.now.id.clear();
        }
        plans.push_back(std::move(plan));
    }
    for (const auto& p : asked)
        if (!found.count(p)) throw NotFoundError(fmt::format("no snapshot holds '/{}' (nothing removed)", p));

    std::vector<RewrittenSnapshot> report;
    for (const Plan& p : plans) report.push_back({p.old.id, p.now.id, p.removed});
    if (dry_run) return report;

    // The rewrites, in one Writer (each header after its files and trees,
    // so that a flush never shows a header without them), and the old
    // snapshots removed in its last transaction: one transaction unless
    // the rewrites are large enough for the Writer to flush before (then a
    // crash in between leaves some rewrites beside their old snapshots, and
    // remove_paths again finishes).
    std::vector<std::string> old;
    for (const Plan& p : plans) old.push_back(p.old.id);
    const std::vector<std::string> old_names = detail::snapshot_manifests(store, old);
    {
        Writer w(store);
        bool any = false;
        std::set<std::string> copied;
        for (const Plan& p : plans) {
            if (p.now.id.empty() || p.exists) continue;
            any = true;
            // Kept files keep their content manifests (shared by content
            // name); a snapshot made before content names has its files
            // under its own id, which forgetting it drops: those are given
            // their content names first.
            for (const auto& [path, e] : p.files) {
                const auto m = detail::content_manifest(store, p.old.id, path, e);
                if (!m) throw DamageError(fmt::format("snapshot {}: '/{}': its content is missing", p.old.id, path));
                const std::string content = detail::content_name(store, e.content.digest, tree::data_length(e));
                if (m->name == content || !copied.insert(content).second) continue;
                std::vector<ChunkId> ids;
                std::vector<std::uint32_t> sizes;
                std::uint64_t total = 0;
                store.for_each_chunk(m->name, [&](const ChunkId& id, std::uint32_t size) {
                    ids.push_back(id);
                    sizes.push_back(size);
                    total += size;
                });
                w.begin_manifest({content, m->mode, m->mtime_ns});
                if (!ids.empty()) w.add_read_chunks(ids, sizes);
                w.finish_manifest(m->digest, total);
            }
            const std::string header = detail::header_json(p.now);
            w.put_file({detail::tree_name(p.now.id), 0600, p.now.time_ns},
                       MemorySource(std::span<const char>(p.stream.data(), p.stream.size())));
            w.put_file({detail::header_name(p.now.id), 0600, p.now.time_ns},
                       MemorySource(std::span<const char>(header.data(), header.size())));
        }
        if (any) {
            w.commit_removing(old_names);
            return report;
        }
    }
    store.remove(old_names);  // (nothing to write: one transaction still)
    return report;
}

}  // namespace cdc::store
