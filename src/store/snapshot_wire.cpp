// SPDX-License-Identifier: Apache-2.0
// A snapshot's tree over the wire (cdc/snapshot_wire.hpp): the server's
// export, the client's check and restore.
#include "restore_tree.hpp"
#include "snapshot_names.hpp"
#include "tree_object.hpp"

#include <cdc/digest.hpp>
#include <cdc/snapshot_wire.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace cdc::store {

namespace {

/// The name a root entry travels under (a tree object's names must be
/// names; the snapshot's root has none).
constexpr std::string_view kRootName = "root";

}  // namespace

SnapshotExport export_snapshot(const Store& store, const Snapshot& snap, std::string_view path) {
    // The snapshot's tree records as stored, each tree object parsed once
    // (a server answers many pulls: re-encoding every tree, or parsing it
    // once per walk, took most of a pull's start).
    const detail::SnapshotTrees trees = detail::load_trees(store, snap);
    std::unordered_map<tree::BlobId, std::vector<tree::Entry>, detail::IdHash> parsed;
    auto entries = [&](const tree::BlobId& id) -> const std::vector<tree::Entry>& {
        if (const auto it = parsed.find(id); it != parsed.end()) return it->second;
        return parsed.emplace(id, trees.entries(id)).first->second;  // (checked against its id)
    };
    const auto parts = detail::path_parts(path);
    tree::Entry e = detail::root_entry(snap);
    std::string at;
    for (const auto& name : parts) {
        if (e.type != tree::EntryType::directory)
            throw NotFoundError(fmt::format("snapshot {}: '/{}' is not a directory", snap.id, at));
        const auto& list = entries(e.subtree);
        const auto it = std::find_if(list.begin(), list.end(), [&](const tree::Entry& x) { return x.name == name; });
        at += (at.empty() ? "" : "/") + name;
        if (it == list.end()) throw NotFoundError(fmt::format("snapshot {} has no '/{}'", snap.id, at));
        e = *it;
    }
    SnapshotExport x;
    x.snapshot = snap;
    tree::Entry named = e;
    if (named.name.empty()) named.name = kRootName;
    const auto root = tree::encode_tree({named});
    x.root.assign(reinterpret_cast<const char*>(root.data()), root.size());
    // The trees below the path, each once, as stored.
    std::set<tree::BlobId> sent;
    std::function<void(const tree::Entry&)> add = [&](const tree::Entry& d) {
        if (d.type != tree::EntryType::directory || !sent.insert(d.subtree).second) return;
        const auto& list = entries(d.subtree);  // (checked against its id)
        x.trees.append(trees.record(d.subtree));
        for (const auto& c : list) add(c);
    };
    add(e);
    std::function<void(const tree::Entry&)> count = [&](const tree::Entry& f) {
        if (f.type == tree::EntryType::file || f.type == tree::EntryType::hardlink) ++x.files;
        if (f.type != tree::EntryType::directory) return;
        for (const auto& c : entries(f.subtree)) count(c);
    };
    count(e);
    // Every content of the snapshot by digest: its content manifest (or,
    // in a snapshot made before content names, its first file's), looked up
    // a batch at a time (one round trip each for a catalog over a network).
    std::vector<detail::ContentRef> refs;
    const auto resolve = [&] {
        const auto found = detail::content_manifests(store, snap.id, refs);
        for (std::size_t i = 0; i < refs.size(); ++i)
            x.contents.emplace(refs[i].digest,
                               found[i] ? found[i]->name : detail::content_name(store, refs[i].digest, refs[i].size));
        refs.clear();
    };
    std::unordered_set<std::string> queued;  // (digests of refs)
    std::function<void(const tree::Entry&, const std::string&)> walk = [&](const tree::Entry& f, const std::string& p) {
        if (f.type == tree::EntryType::file && !x.contents.count(f.content.digest) && queued.insert(f.content.digest).second) {
            refs.push_back({p, f.content.digest, tree::data_length(f)});
            if (refs.size() == 4096) {
                resolve();
                queued.clear();
            }
        }
        if (f.type != tree::EntryType::directory) return;
        for (const auto& c : entries(f.subtree)) walk(c, p.empty() ? c.name : p + "/" + c.name);
    };
    walk(detail::root_entry(snap), "");
    resolve();
    return x;
}

struct ImportedTree::Impl {
    std::vector<std::string> parts;
    tree::Entry root;
    detail::SnapshotTrees trees;
    /// Trees contents() parsed, for the restore that follows (each parse
    /// checks the object's canonical bytes: the second cost as much as the
    /// first), up to kCachedEntries entries.
    std::unordered_map<tree::BlobId, std::vector<tree::Entry>, detail::IdHash> parsed;
    std::size_t cached = 0;
    static constexpr std::size_t kCachedEntries = std::size_t{1} << 20;

    const std::vector<tree::Entry>& entries(const tree::BlobId& id, std::vector<tree::Entry>& scratch) {
        if (const auto it = parsed.find(id); it != parsed.end()) return it->second;
        scratch = trees.entries(id);
        if (cached + scratch.size() > kCachedEntries) return scratch;
        cached += scratch.size();
        return parsed.emplace(id, std::move(scratch)).first->second;
    }
};

ImportedTree::ImportedTree(std::string_view path, std::string root, std::string trees)
    : impl_(std::make_unique<Impl>()) {
    impl_->parts = detail::path_parts(path);
    std::vector<tree::Entry> one;
    try {
        one = tree::parse_tree(std::span(reinterpret_cast<const std::uint8_t*>(root.data()), root.size()));
    } catch (const tree::TreeError& e) {
        throw DamageError(fmt::format("the root entry received is not a tree object: {}", e.what()));
    }
    if (one.size() != 1) throw DamageError(fmt::format("the root received holds {} entries, not one", one.size()));
    impl_->root = std::move(one[0]);
    if (const std::string bad = tree::entry_problem(impl_->root); !bad.empty())
        throw DamageError(fmt::format("the root entry received: {}", bad));
    // A file root is restored under its own name inside a directory OUT.
    if (impl_->root.type != tree::EntryType::directory)
        if (const std::string bad = tree::name_problem(impl_->root.name); !bad.empty())
            throw DamageError(fmt::format("the root entry received: {}", bad));
    impl_->trees = detail::SnapshotTrees(std::move(trees), "the trees received");
}

ImportedTree::~ImportedTree() = default;
ImportedTree::ImportedTree(ImportedTree&&) noexcept = default;
ImportedTree& ImportedTree::operator=(ImportedTree&&) noexcept = default;

std::vector<ContentNeed> ImportedTree::contents() const {
    // The restore's walk (restore_tree.cpp), without the file system: the
    // same entries refused, the same depth bound, the same hard-link rule.
    std::vector<ContentNeed> out;
    std::set<std::string> firsts;  // snapshot paths of restored files with more than one link
    const tree::RestoreOptions defaults;
    std::vector<std::string> at = impl_->parts;
    auto file = [&](const tree::Entry& e) {
        if (e.type == tree::EntryType::hardlink && firsts.count(detail::join_parts(e.link))) return;
        if (tree::data_length(e) > 0) out.push_back({e.content.digest, tree::data_length(e)});
        if (e.nlink > 1) {
            firsts.insert(detail::join_parts(at));
            if (e.type == tree::EntryType::hardlink) firsts.insert(detail::join_parts(e.link));
        }
    };
    std::function<void(const tree::BlobId&, std::size_t)> entries = [&](const tree::BlobId& id, std::size_t depth) {
        std::vector<tree::Entry> scratch;
        const std::vector<tree::Entry>* found = nullptr;
        try {
            found = &impl_->entries(id, scratch);
        } catch (const std::exception&) {
            return;
        }
        const auto& list = *found;
        std::set<std::string_view> seen;
        for (const auto& e : list) {
            if (!tree::name_problem(e.name).empty() || !tree::entry_problem(e).empty() || !seen.insert(e.name).second)
                continue;
            at.push_back(e.name);
            if (e.type == tree::EntryType::directory) {
                if (depth < defaults.max_depth) entries(e.subtree, depth + 1);
            } else if (e.type == tree::EntryType::file || e.type == tree::EntryType::hardlink) {
                file(e);
            }
            at.pop_back();
        }
    };
    if (impl_->root.type == tree::EntryType::directory)
        entries(impl_->root.subtree, 0);
    else if (impl_->root.type == tree::EntryType::file || impl_->root.type == tree::EntryType::hardlink)
        file(impl_->root);
    return out;
}

SnapshotRestoreReport ImportedTree::restore(const std::filesystem::path& out, const ContentFn& content,
                                            const SnapshotRestoreOptions& options) const {
    tree::RestoreSource source;
    source.tree = [&](const tree::BlobId& id) {
        const auto it = impl_->parsed.find(id);
        return it != impl_->parsed.end() ? it->second : impl_->trees.entries(id);
    };
    source.content = [&](const tree::Entry& e, const std::function<void(std::string_view)>& sink) {
        content(ContentNeed{e.content.digest, tree::data_length(e)}, sink);
    };
    return detail::restore_checked(out, impl_->root, impl_->parts, std::move(source), options);
}

}  // namespace cdc::store
