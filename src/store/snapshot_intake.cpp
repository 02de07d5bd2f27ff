// SPDX-License-Identifier: Apache-2.0
// A snapshot taken in from elsewhere (ingest.hpp, SnapshotIntake): the
// server's side of `cdc push` of a tree. Its files come through the ingest
// door, each stored under a name of the new snapshot; the parent's
// unchanged files are offered back by digest; the sender's tree objects are
// trusted in nothing: each is parsed (canonical bytes only), checked against
// its id, walked from the root with every name checked, and every file or
// hard link must name a content this intake stored or a reuse it offered.
// The totals are counted here, and the header and trees commit in the
// writer's last transaction: the snapshot appears whole or not at all (what
// a broken stream stored under the snapshot's names is dropped by gc).
#include "ingest.hpp"

#include "snapshot_capture.hpp"
#include "snapshot_names.hpp"
#include "tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <unordered_set>

namespace cdc::store {

namespace {

// What one intake may hold in memory: the tree records (a 25k-file tree
// has a few MB), the candidates offered (40 bytes each kept), directories
// deep, paths and tags, text fields.
constexpr std::uint64_t kMaxTreeBytes = std::uint64_t{256} << 20;
constexpr std::uint64_t kMaxCandidates = std::uint64_t{4} << 20;
constexpr std::size_t kMaxDepth = 2048;
constexpr std::size_t kMaxPaths = 1024;
constexpr std::size_t kMaxTextBytes = 4096;

using tree::BlobId;
using tree::Entry;
using tree::EntryType;

/// A content: digest (32 bytes) and length.
std::string content_key(std::string_view digest, std::uint64_t length) {
    std::string k(digest);
    k.append(reinterpret_cast<const char*>(&length), sizeof length);
    return k;
}

/// A sparse file's data extents from the wire (u64 LE offset, length,
/// ...); nullopt if they are not whole pairs.
std::optional<std::vector<tree::Extent>> extents_of(std::string_view b) {
    if (b.size() % 16 != 0) return std::nullopt;
    std::vector<tree::Extent> out(b.size() / 16);
    const auto u64 = [&](std::size_t at) {
        std::uint64_t v = 0;
        for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
        return v;
    };
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = {u64(i * 16), u64(i * 16 + 8)};
    return out;
}

[[noreturn]] void refuse(const std::string& why) {
    throw OptionError(fmt::format("snapshot refused: {} (nothing is committed)", why));
}

std::string text_problem(std::string_view what, std::string_view s) {
    if (s.size() > kMaxTextBytes) return fmt::format("{} longer than {} bytes", what, kMaxTextBytes);
    if (s.find('\0') != std::string_view::npos) return fmt::format("{} with a NUL byte", what);
    return {};
}

}  // namespace

struct SnapshotIntake::Impl {
    const Store& store;
    std::size_t max_name_bytes;
    Snapshot snap;
    std::optional<Snapshot> parent;
    // The parent's trees, read at the first candidates or base asked, and
    // its directories' entries by path as they are looked up.
    std::optional<detail::SnapshotTrees> parent_trees;
    std::unordered_map<std::string, std::vector<Entry>> parent_dirs;
    std::unordered_set<std::string> pushed;   // content keys this intake stored
    std::unordered_set<std::string> offered;  // content keys a reuse offered
    std::vector<std::string> first_names;     // the stored files' manifests before their content names
    std::uint64_t candidates = 0;
    std::uint64_t tree_ids = 0;                           // ids asked about (wanted_trees)
    std::unordered_set<BlobId, detail::IdHash> held;      // of those, the parent's: not sent, read at the commit
    std::string trees;  // the records received
    bool trees_begun = false;

    Impl(const Store& s, std::size_t max_name) : store(s), max_name_bytes(max_name) {}

    /// The parent's trees, read once (a damaged parent: DamageError).
    void load_parent() {
        if (!parent || parent_trees) return;
        try {
            parent_trees = detail::load_trees(store, *parent);
        } catch (const StoreError& e) {
            throw DamageError(fmt::format("the parent snapshot {}: {}", parent->id, e.what()));
        }
    }

    /// The parent's entry at `parts`, or nullptr.
    const Entry* parent_entry(const std::vector<std::string>& parts) {
        if (!parent || !parent_trees || parts.empty()) return nullptr;
        Entry root = detail::root_entry(*parent);
        const Entry* e = nullptr;
        std::string at;
        BlobId dir = root.subtree;
        for (std::size_t k = 0; k < parts.size(); ++k) {
            auto it = parent_dirs.find(at);
            if (it == parent_dirs.end()) it = parent_dirs.emplace(at, parent_trees->entries(dir)).first;
            const auto& v = it->second;
            const auto x = std::lower_bound(v.begin(), v.end(), parts[k],
                                            [](const Entry& a, const std::string& n) { return a.name < n; });
            if (x == v.end() || x->name != parts[k]) return nullptr;
            e = &*x;
            at += "/" + parts[k];
            if (k + 1 < parts.size()) {
                if (e->type != EntryType::directory) return nullptr;
                dir = e->subtree;
            }
        }
        return e;
    }
};

std::string SnapshotIntake::path_problem(std::string_view path, std::size_t max_bytes) {
    if (path.empty() || path.size() > max_bytes) return fmt::format("a path of {} bytes", path.size());
    std::size_t at = 0;
    while (at <= path.size()) {
        auto slash = path.find('/', at);
        if (slash == std::string_view::npos) slash = path.size();
        const std::string_view part = path.substr(at, slash - at);
        if (const std::string why = tree::name_problem(part); !why.empty()) return fmt::format("'{}': {}", part, why);
        at = slash + 1;
    }
    return {};
}

SnapshotIntake::SnapshotIntake(const Store& store, const Start& m, std::size_t max_name_bytes)
    : impl_(std::make_unique<Impl>(store, max_name_bytes)) {
    Snapshot& s = impl_->snap;
    if (m.paths.empty() || m.paths.size() > kMaxPaths) refuse(fmt::format("{} paths (1 to {})", m.paths.size(), kMaxPaths));
    for (const auto& p : m.paths) {
        if (const std::string why = text_problem("a path", p); !why.empty()) refuse(why);
        if (p.empty() || p.front() != '/' || (p.size() > 1 && p.back() == '/'))
            refuse(fmt::format("path '{}' is not absolute and normalised", p));
        if (p.size() > 1)
            if (const std::string why = path_problem(std::string_view(p).substr(1), max_name_bytes); !why.empty())
                refuse(fmt::format("path '{}': {}", p, why));
        s.paths.push_back(p);
    }
    std::sort(s.paths.begin(), s.paths.end());
    s.paths.erase(std::unique(s.paths.begin(), s.paths.end()), s.paths.end());
    if (m.tags.size() > kMaxPaths) refuse("too many tags");
    for (const auto& t : m.tags) {
        if (const std::string why = text_problem("a tag", t); !why.empty()) refuse(why);
        s.tags.push_back(t);
    }
    if (const std::string why = text_problem("the host", m.host); !why.empty()) refuse(why);
    if (const std::string why = text_problem("the user", m.user); !why.empty()) refuse(why);
    s.host = m.host.empty() ? "unknown" : m.host;
    s.user = m.user;
    s.time_ns = m.time_ns;
    s.utc_offset_s = m.utc_offset_s;
    s.id = detail::new_snapshot_id();
    impl_->parent = detail::find_parent(store, s, m.parent, m.no_parent);
    if (impl_->parent) s.parent = impl_->parent->id;
}

SnapshotIntake::~SnapshotIntake() = default;

const Snapshot& SnapshotIntake::snapshot() const { return impl_->snap; }

std::string SnapshotIntake::file_name(const std::string& path) const {
    return detail::file_name(impl_->store, impl_->snap.id, path);
}

std::string SnapshotIntake::base(const std::string& path) {
    Impl& st = *impl_;
    if (!st.parent) return {};
    try {
        if (!st.parent_trees) st.parent_trees = detail::load_trees(st.store, *st.parent);
        const Entry* before = st.parent_entry(detail::path_parts(path));
        if (!before || (before->type != EntryType::file && before->type != EntryType::hardlink) ||
            before->content.digest.size() != 32)
            return {};
        return detail::content_name(st.store, before->content.digest, tree::data_length(*before));
    } catch (const StoreError&) {
        return {};  // (a damaged parent: the file is compared with nothing)
    }
}

void SnapshotIntake::stored(const ChunkId& digest, std::uint64_t size, const std::string& path) {
    impl_->pushed.insert(content_key({reinterpret_cast<const char*>(digest.data()), digest.size()}, size));
    impl_->first_names.push_back(file_name(path));
}

std::string SnapshotIntake::reuse(std::span<const Candidate> batch) {
    Impl& st = *impl_;
    if (st.trees_begun) throw OptionError("snapshot refused: candidates after the trees (nothing is committed)");
    st.candidates += batch.size();
    if (st.candidates > kMaxCandidates) refuse(fmt::format("more than {} candidates", kMaxCandidates));
    st.load_parent();
    std::string digests(batch.size() * 32, '\0');
    struct Unchanged {
        std::size_t index;
        std::string digest;
        std::uint64_t length;
    };
    std::vector<Unchanged> unchanged;  // since the parent, by its metadata
    std::vector<std::string> contents;  // their content names
    for (std::size_t i = 0; i < batch.size(); ++i) {
        const Candidate& c = batch[i];
        if (const std::string why = path_problem(c.path, st.max_name_bytes); !why.empty())
            refuse(fmt::format("candidate '{}': {}", c.path, why));
        if (!st.parent) continue;
        Entry now;
        now.type = EntryType::file;
        now.size = c.size;
        now.mtime_ns = c.mtime_ns;
        now.ctime_ns = c.ctime_ns;
        now.inode = c.inode;
        now.device = c.device;
        if (c.sparse) {
            auto x = extents_of(c.extents);
            if (!x) refuse(fmt::format("candidate '{}': extents that are not (offset, length) pairs", c.path));
            now.sparse = true;
            now.extents = std::move(*x);
        }
        const Entry* before = nullptr;
        try {
            before = st.parent_entry(detail::path_parts(c.path));
        } catch (const StoreError&) {
            before = nullptr;  // a damaged parent directory: its files are pushed
        }
        if (!before || !detail::unchanged_since(now, *before)) continue;
        unchanged.push_back({i, before->content.digest, tree::data_length(now)});  // (a sparse file's: its extents')
        contents.push_back(detail::content_name(st.store, unchanged.back().digest, unchanged.back().length));
    }
    // The content must still be stored (a forgotten parent's may be gone):
    // looked up for the whole batch at once (a round trip each for a
    // catalog over a network).
    const auto found = st.store.find(std::span<const std::string>(contents));
    for (std::size_t k = 0; k < unchanged.size(); ++k) {
        if (!found[k]) continue;
        const Unchanged& u = unchanged[k];
        st.offered.insert(content_key(u.digest, u.length));
        std::memcpy(digests.data() + u.index * 32, u.digest.data(), 32);
    }
    return digests;
}

std::string SnapshotIntake::wanted_trees(std::string_view ids) {
    Impl& st = *impl_;
    if (st.trees_begun) refuse("tree ids after the tree records");
    if (ids.size() % 32 != 0) refuse("tree ids that are not 32 bytes each");
    st.tree_ids += ids.size() / 32;
    if (st.tree_ids > kMaxTreeBytes / 36) refuse(fmt::format("more than {} tree ids", kMaxTreeBytes / 36));
    st.load_parent();
    std::string wanted(ids.size() / 32, '\1');
    for (std::size_t i = 0; i < wanted.size(); ++i) {
        BlobId id{};
        std::memcpy(id.data(), ids.data() + i * 32, 32);
        if (st.parent_trees && st.parent_trees->has(id)) {
            st.held.insert(id);
            wanted[i] = '\0';
        }
    }
    return wanted;
}

bool SnapshotIntake::trees_begun() const { return impl_->trees_begun; }

void SnapshotIntake::add_trees(std::string_view bytes) {
    impl_->trees_begun = true;
    if (impl_->trees.size() + bytes.size() > kMaxTreeBytes)
        refuse(fmt::format("tree records beyond {} MiB", kMaxTreeBytes >> 20));
    impl_->trees += bytes;
}

const Snapshot& SnapshotIntake::commit(Writer& writer, std::string_view root_id, const SnapshotTotals& read) {
    Impl& st = *impl_;
    Snapshot& s = st.snap;
    if (root_id.size() != 32) refuse("a root id that is not 32 bytes");
    BlobId root{};
    std::memcpy(root.data(), root_id.data(), 32);

    // The tree records: each parsed, checked against its id, once.
    struct Tree {
        std::vector<Entry> entries;
        std::size_t at = 0, length = 0;  // of its record among those sent
        bool held = false;               // the parent's, not sent
        bool reached = false;
        SnapshotTotals totals;  // below it, once counted
        std::uint64_t reused = 0;
        bool counted = false;
    };
    std::map<BlobId, Tree> trees;
    std::vector<BlobId> order;
    const std::string problem = detail::for_each_tree_record(st.trees, [&](const detail::TreeRecord& rec) {
        const BlobId& id = rec.id;
        const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(rec.object.data()), rec.object.size());
        if (tree::tree_id(bytes) != id) refuse(fmt::format("tree {} does not have that id (BLAKE3 of its bytes)", to_hex(id)));
        if (trees.count(id)) refuse(fmt::format("tree {} sent twice", to_hex(id)));
        Tree t;
        try {
            t.entries = tree::parse_tree(bytes);
        } catch (const tree::TreeError& e) {
            refuse(fmt::format("tree {}: {}", to_hex(id), e.what()));
        }
        t.at = rec.at;
        t.length = detail::kTreeRecordHead + rec.object.size();
        trees.emplace(id, std::move(t));
        order.push_back(id);
    });
    if (!problem.empty()) refuse(problem);

    // Walked from the root: every name, every content, every subtree.
    std::vector<BlobId> held_order;  // the parent's trees reached
    std::function<Tree&(const BlobId&, const std::string&, std::size_t)> walk =
        [&](const BlobId& id, const std::string& path, std::size_t depth) -> Tree& {
        if (depth > kMaxDepth) refuse(fmt::format("'{}': directories deeper than {}", path, kMaxDepth));
        auto it = trees.find(id);
        if (it == trees.end()) {
            // Not sent: the parent's, if the server answered that it held it.
            if (!st.held.count(id)) refuse(fmt::format("'{}': its tree {} was not sent", path, to_hex(id)));
            Tree t;
            t.entries = st.parent_trees->entries(id);  // (checked against its id; DamageError)
            t.held = true;
            it = trees.emplace(id, std::move(t)).first;
            held_order.push_back(id);
        }
        Tree& t = it->second;
        if (t.counted) return t;
        t.reached = true;
        for (const Entry& e : t.entries) {
            const std::string p = path + "/" + e.name;
            if (const std::string why = tree::name_problem(e.name); !why.empty())
                refuse(fmt::format("a name in '{}': {}", path.empty() ? "/" : path, why));
            if (e.type == EntryType::file || e.type == EntryType::hardlink) {
                if (e.content.digest.size() != 32 || !e.content.chunks.empty())
                    refuse(fmt::format("'{}': a content that is not named by its 32-byte digest alone", p));
                const std::string key = content_key(e.content.digest, tree::data_length(e));
                const bool pushed = st.pushed.count(key) != 0;
                if (!pushed && !st.offered.count(key))
                    refuse(fmt::format("'{}': its content was neither pushed in this stream nor offered from the "
                                       "parent",
                                       p));
                if (e.type == EntryType::hardlink) {
                    if (e.link.empty()) refuse(fmt::format("'{}': a hard link to nothing", p));
                    for (const auto& c : e.link)
                        if (const std::string why = tree::name_problem(c); !why.empty())
                            refuse(fmt::format("'{}': a hard link through '{}': {}", p, c, why));
                    ++t.totals.others;
                } else {
                    ++t.totals.files;
                    t.totals.bytes += e.size;
                    if (!pushed) ++t.reused;
                }
            } else if (e.type == EntryType::directory) {
                Tree& sub = walk(e.subtree, p, depth + 1);
                ++t.totals.dirs;
                t.totals.files += sub.totals.files;
                t.totals.dirs += sub.totals.dirs;
                t.totals.others += sub.totals.others;
                t.totals.bytes += sub.totals.bytes;
                t.reused += sub.reused;
            } else {
                ++t.totals.others;
            }
        }
        t.counted = true;
        return t;
    };
    const Tree& top = walk(root, "", 0);
    std::string stream;
    stream.reserve(st.trees.size());
    for (const BlobId& id : order) {
        const Tree& t = trees.at(id);
        if (!t.reached) refuse(fmt::format("tree {} is in no directory of the snapshot", to_hex(id)));
        stream.append(st.trees, t.at, t.length);
    }
    std::set<BlobId> written;
    for (const BlobId& id : held_order) detail::append_encoded_tree(id, st.parent_trees->raw(id), stream, written);

    // The stored files under their content names (as a backup does, before
    // the snapshot's own transaction).
    writer.commit();
    std::vector<std::pair<std::string, std::string>> moves;
    // (looked up together: a few thousand a round trip over a network)
    const auto found = st.store.find(std::span<const std::string>(st.first_names));
    for (std::size_t k = 0; k < found.size(); ++k) {
        const auto& f = found[k];
        if (!f) continue;  // (the same path pushed twice: renamed already)
        moves.emplace_back(st.first_names[k],
                           detail::content_name(
                               st.store, {reinterpret_cast<const char*>(f->digest.data()), f->digest.size()}, f->size));
    }
    std::sort(moves.begin(), moves.end());
    moves.erase(std::unique(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                moves.end());
    if (!moves.empty()) st.store.rename(moves);

    s.tree = to_hex(root);
    s.totals.files = top.totals.files;
    s.totals.dirs = top.totals.dirs;
    s.totals.others = top.totals.others;
    s.totals.bytes = top.totals.bytes;
    s.totals.bytes_read = read.bytes_read;
    s.totals.new_bytes = read.new_bytes;
    s.totals.skipped_unchanged = top.reused;
    s.totals.skipped_unreadable = read.skipped_unreadable;
    detail::commit_snapshot(st.store, writer, s, stream);
    return s;
}

}  // namespace cdc::store
