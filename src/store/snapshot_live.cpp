// SPDX-License-Identifier: Apache-2.0
// What gc keeps of the snapshots' files (snapshot_names.hpp,
// unreferenced_snapshot_files): the contents every remaining snapshot's
// trees name. Parsing the directories is most of a prune's work (each day
// changes a few files in many directories, and a changed directory is a
// new tree to read), so the trees are parsed on a pool while this thread
// reads the next snapshot's tree set (the catalog is this thread's
// connection: only this thread reads the store), and a content is hashed
// into its name once however many files and snapshots hold it.
#include "snapshot_names.hpp"

#include "store_impl.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>

namespace cdc::store::detail {

namespace {

/// Workers beside the calling thread (which runs tasks while it waits):
/// one per core but the caller's, at least one, at most three (past that
/// the shared sets' lock and the reads on this thread bound it).
unsigned walk_workers() {
    const unsigned cores = std::thread::hardware_concurrency();
    return cores <= 2 ? 1u : std::min(cores - 1, 3u);
}

/// The contents named by the directories reachable from the roots given:
/// each directory (tree id) is claimed once across all snapshots, and the
/// one who claims it parses it and claims its subdirectories.
class ContentWalk {
public:
    ContentWalk() : pool_(walk_workers()) {}

    /// False if `id` was claimed before (by this snapshot or another).
    bool claim(const tree::BlobId& id) {
        const std::lock_guard lock(mutex_);
        return seen_.insert(id).second;
    }
    /// Parses the claimed directory `id` of `trees` on the pool, then its
    /// subdirectories. `trees` must outlive drain().
    void submit(const SnapshotTrees& trees, const tree::BlobId& id) {
        pool_.submit([this, &trees, id] { visit(trees, id); });
    }
    /// Waits for every directory; rethrows the first failure (a damaged or
    /// missing tree) after the tasks running have ended.
    void drain() { pool_.drain(); }
    /// Waits for every directory, a failure already known to the caller.
    void drain_quietly() {
        try {
            pool_.drain();
        } catch (const StoreError&) {
        }
    }
    /// The content keys (content_key) met, each once. After drain().
    const std::unordered_set<std::string>& keys() const { return keys_; }

private:
    void visit(const SnapshotTrees& trees, const tree::BlobId& id) {
        if (pool_.failed()) return;  // (the walk is given up: not worth finishing)
        std::vector<std::string> found;
        for (const tree::Entry& e : trees.entries(id)) {
            if (e.type == tree::EntryType::directory) {
                if (claim(e.subtree)) submit(trees, e.subtree);
            } else if (e.type == tree::EntryType::file) {
                found.push_back(content_key(e.content.digest, tree::data_length(e)));
            }
        }
        const std::lock_guard lock(mutex_);
        for (auto& k : found) keys_.insert(std::move(k));
    }

    std::mutex mutex_;
    std::unordered_set<tree::BlobId, IdHash> seen_;
    std::unordered_set<std::string> keys_;
    // Last: destroyed first, its workers joined before the sets they fill go.
    common::TaskPool pool_;
};

}  // namespace

std::uint64_t drop_unreferenced_snapshot_files(const Store& store, Catalog& catalog) {
    std::vector<std::string> files, contents;
    unreferenced_snapshot_files(store, catalog, files, contents);
    files.insert(files.end(), contents.begin(), contents.end());
    if (!files.empty()) catalog.remove(files, "the store");
    return files.size();
}

bool unreferenced_snapshot_files(const Store& store, Catalog& catalog, std::vector<std::string>& drop,
                                 std::vector<std::string>& unnamed, std::vector<std::string>* named_out) {
    std::map<std::string, std::vector<std::string>> by_snapshot;
    for (const ManifestInfo& m : catalog.list(kFilePrefix)) {
        const auto slash = m.name.find('/', kFilePrefix.size());
        if (slash == std::string::npos) continue;
        by_snapshot[m.name.substr(kFilePrefix.size(), slash - kFilePrefix.size())].push_back(m.name);
    }
    for (auto& [id, names] : by_snapshot)
        if (!catalog.find(header_name(id))) drop.insert(drop.end(), names.begin(), names.end());
    // Contents: those no snapshot's tree names. A snapshot that cannot be
    // read keeps every content (nothing is dropped on a guess).
    const auto contents = catalog.list(kContentPrefix);
    if (contents.empty() && !named_out) return true;
    bool complete = true;
    std::deque<SnapshotTrees> trees;  // (before the walk: its tasks read them until it is gone)
    ContentWalk walk;
    try {
        for (const ManifestInfo& h : catalog.list(kHeaderPrefix)) {
            const Snapshot s = parse_header(read_manifest(store, h.name), h.name);
            const tree::BlobId root = root_entry(s).subtree;
            if (!walk.claim(root)) continue;  // (a snapshot of the same tree: not even read)
            trees.push_back(load_trees(store, s));
            walk.submit(trees.back(), root);
        }
        walk.drain();
    } catch (const StoreError&) {
        complete = false;
        walk.drain_quietly();
    }
    std::unordered_set<std::string> named;
    named.reserve(walk.keys().size());
    for (const std::string& k : walk.keys()) named.insert(content_name_of_key(store, k));
    if (complete)
        for (const ManifestInfo& m : contents)
            if (!named.count(m.name)) unnamed.push_back(m.name);
    if (named_out) {
        named_out->assign(named.begin(), named.end());
        std::sort(named_out->begin(), named_out->end());
    }
    return complete;
}

}  // namespace cdc::store::detail
