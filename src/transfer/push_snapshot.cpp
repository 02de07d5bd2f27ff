// SPDX-License-Identifier: Apache-2.0
// The server's side of a tree pushed as one snapshot (proto/cdc_transfer.proto,
// SnapshotStart; docs/TRANSFER.md "Pushing a tree as a snapshot"): the
// files come through the push exchange of push_session.cpp, each stored
// under a name of the new snapshot; the parent's unchanged files are
// offered back by digest (Candidates -> Reuse); the client's tree objects
// are trusted in nothing: each is parsed (canonical bytes only), checked
// against its id, walked from the root with every name checked, and every
// file or hard link must name a content this stream pushed or a reuse
// offered. The totals are counted here, and the header and trees commit in
// the writer's last transaction: the snapshot appears whole or not at all
// (what a broken stream stored under the snapshot's names is dropped by gc).
#include "push_session.hpp"
#include "tree_session.hpp"

#include "../store/snapshot_capture.hpp"
#include "../store/snapshot_names.hpp"
#include "../store/tree_object.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace cdc::transfer {

namespace {

// What one snapshot push may hold in memory on the server: the tree
// records (a 25k-file tree has a few MB), the candidates offered (40 bytes
// each kept), directories deep.
constexpr std::uint64_t kMaxPushedTreeBytes = std::uint64_t{256} << 20;
constexpr std::uint64_t kMaxCandidates = std::uint64_t{4} << 20;
constexpr std::size_t kMaxCandidatesPerMessage = 4096;
constexpr std::size_t kMaxDepth = 2048;
constexpr std::size_t kMaxPaths = 1024;
constexpr std::size_t kMaxTextBytes = 4096;

using store::tree::BlobId;
using store::tree::Entry;
using store::tree::EntryType;

/// A content: digest (32 bytes) and length.
std::string content_key(std::string_view digest, std::uint64_t length) {
    std::string k(digest);
    k.append(reinterpret_cast<const char*>(&length), sizeof length);
    return k;
}

[[noreturn]] void refuse(const std::string& why) {
    throw TransferError(Code::invalid_argument, fmt::format("snapshot refused: {} (nothing is committed)", why));
}

std::string text_problem(std::string_view what, std::string_view s) {
    if (s.size() > kMaxTextBytes) return fmt::format("{} longer than {} bytes", what, kMaxTextBytes);
    if (s.find('\0') != std::string_view::npos) return fmt::format("{} with a NUL byte", what);
    return {};
}

}  // namespace

struct PushSession::SnapshotState {
    store::Snapshot snap;
    std::optional<store::Snapshot> parent;
    // The parent's trees, read at the first candidates, and its directories'
    // entries by path as they are looked up.
    std::optional<store::detail::SnapshotTrees> parent_trees;
    std::unordered_map<std::string, std::vector<Entry>> parent_dirs;
    std::unordered_set<std::string> pushed;   // content keys this stream stored
    std::unordered_set<std::string> offered;  // content keys a reuse offered
    std::vector<std::string> first_names;     // the pushed files' manifests before their content names
    std::uint64_t candidates = 0;
    std::string trees;  // the records received
    bool trees_begun = false;

    /// The parent's entry at `parts`, or nullptr.
    const Entry* parent_entry(const std::vector<std::string>& parts) {
        if (!parent || !parent_trees || parts.empty()) return nullptr;
        Entry root = store::detail::root_entry(*parent);
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

void PushSession::SnapshotStateDeleter::operator()(SnapshotState* s) const noexcept { delete s; }

std::string PushSession::snapshot_path_problem(const std::string& path) {
    if (path.empty() || path.size() > kMaxNameBytes) return fmt::format("a path of {} bytes", path.size());
    std::size_t at = 0;
    while (at <= path.size()) {
        auto slash = path.find('/', at);
        if (slash == std::string::npos) slash = path.size();
        const std::string_view part(path.data() + at, slash - at);
        if (const std::string why = store::tree::name_problem(part); !why.empty())
            return fmt::format("'{}': {}", part, why);
        at = slash + 1;
    }
    return {};
}

std::string PushSession::snapshot_file_name(const std::string& path) const {
    return store::detail::file_name(store_, snap_->snap.id, path);
}

std::string PushSession::snapshot_base(const std::string& path) {
    SnapshotState& st = *snap_;
    if (!st.parent) return {};
    try {
        if (!st.parent_trees) st.parent_trees = store::detail::load_trees(store_, *st.parent);
        const Entry* before = st.parent_entry(store::detail::path_parts(path));
        if (!before || (before->type != EntryType::file && before->type != EntryType::hardlink) ||
            before->content.digest.size() != 32)
            return {};
        return store::detail::content_name(store_, before->content.digest, store::tree::data_length(*before));
    } catch (const store::StoreError&) {
        return {};  // (a damaged parent: the file's groups are compared with nothing)
    }
}

void PushSession::pushed_content(const store::ChunkId& digest, std::uint64_t size) {
    snap_->pushed.insert(content_key({reinterpret_cast<const char*>(digest.data()), digest.size()}, size));
    snap_->first_names.push_back(snapshot_file_name(name_));
}

void PushSession::require_snapshot(const char* what) const {
    if (!snap_) throw TransferError(Code::failed_precondition, fmt::format("{} outside a snapshot push", what));
    if (open_) throw TransferError(Code::failed_precondition, fmt::format("{} while '{}' is open", what, name_));
}

void PushSession::snapshot_start(const v1::SnapshotStart& m, const Sink& sink) {
    if (encrypted_)
        throw TransferError(Code::failed_precondition,
                            "the store is encrypted: a tree pushed as a snapshot is not taken by the server of an "
                            "encrypted store yet (push its files by name with cdc push --names)");
    if (store_.info().format_version < store::kFormatVersion)
        throw TransferError(Code::failed_precondition,
                            fmt::format("the server's store is format {}: it takes no snapshot until `cdc store "
                                        "migrate` is run on it",
                                        store_.info().format_version));
    std::unique_ptr<SnapshotState, SnapshotStateDeleter> st(new SnapshotState);
    store::Snapshot& s = st->snap;
    if (m.paths_size() == 0 || static_cast<std::size_t>(m.paths_size()) > kMaxPaths)
        refuse(fmt::format("{} paths (1 to {})", m.paths_size(), kMaxPaths));
    for (const auto& p : m.paths()) {
        if (const std::string why = text_problem("a path", p); !why.empty()) refuse(why);
        if (p.empty() || p.front() != '/' || (p.size() > 1 && p.back() == '/'))
            refuse(fmt::format("path '{}' is not absolute and normalised", p));
        if (p.size() > 1)
            if (const std::string why = snapshot_path_problem(p.substr(1)); !why.empty())
                refuse(fmt::format("path '{}': {}", p, why));
        s.paths.push_back(p);
    }
    std::sort(s.paths.begin(), s.paths.end());
    s.paths.erase(std::unique(s.paths.begin(), s.paths.end()), s.paths.end());
    if (static_cast<std::size_t>(m.tags_size()) > kMaxPaths) refuse("too many tags");
    for (const auto& t : m.tags()) {
        if (const std::string why = text_problem("a tag", t); !why.empty()) refuse(why);
        s.tags.push_back(t);
    }
    if (const std::string why = text_problem("the host", m.host()); !why.empty()) refuse(why);
    if (const std::string why = text_problem("the user", m.user()); !why.empty()) refuse(why);
    s.host = m.host().empty() ? "unknown" : m.host();
    s.user = m.user();
    s.time_ns = m.time_ns();
    s.utc_offset_s = m.utc_offset_s();
    {
        std::random_device rd;
        for (int i = 0; i < 4; ++i) s.id += fmt::format("{:08x}", rd());
    }
    try {
        if (!m.parent().empty()) {
            st->parent = store::find_snapshot(store_, m.parent());
        } else if (!m.no_parent()) {
            for (const store::Snapshot& x : store::list_snapshots(store_))
                if (x.host == s.host && x.paths == s.paths) st->parent = x;
        }
    } catch (const store::NotFoundError& e) {
        throw TransferError(Code::not_found, fmt::format("parent: {}", e.what()));
    } catch (const OptionError& e) {
        throw TransferError(Code::invalid_argument, fmt::format("parent: {}", e.what()));
    }
    if (st->parent) s.parent = st->parent->id;
    snap_ = std::move(st);
    v1::PushReply reply;
    reply.mutable_snapshot_started()->set_id(s.id);
    reply.mutable_snapshot_started()->set_parent(s.parent);
    sink(reply);
}

void PushSession::candidates(const v1::Candidates& m, const Sink& sink) {
    require_snapshot("candidates");
    if (snap_->trees_begun) throw TransferError(Code::failed_precondition, "candidates after the trees");
    const std::size_t n = static_cast<std::size_t>(m.paths_size());
    if (n > kMaxCandidatesPerMessage || m.sizes_size() != m.paths_size() || m.mtimes_ns_size() != m.paths_size() ||
        m.ctimes_ns_size() != m.paths_size() || m.inodes_size() != m.paths_size() ||
        m.devices_size() != m.paths_size())
        refuse(fmt::format("a candidates message of {} paths (at most {}, each with its five fields)", n,
                           kMaxCandidatesPerMessage));
    snap_->candidates += n;
    if (snap_->candidates > kMaxCandidates) refuse(fmt::format("more than {} candidates", kMaxCandidates));
    if (snap_->parent && !snap_->parent_trees) {
        try {
            snap_->parent_trees = store::detail::load_trees(store_, *snap_->parent);
        } catch (const store::StoreError& e) {
            throw TransferError(Code::data_loss, fmt::format("the parent snapshot {}: {}", snap_->parent->id, e.what()));
        }
    }
    std::string digests(n * 32, '\0');
    for (std::size_t i = 0; i < n; ++i) {
        const int k = static_cast<int>(i);
        const std::string& path = m.paths(k);
        if (const std::string why = snapshot_path_problem(path); !why.empty())
            refuse(fmt::format("candidate '{}': {}", path, why));
        if (!snap_->parent) continue;
        Entry now;
        now.type = EntryType::file;
        now.size = m.sizes(k);
        now.mtime_ns = m.mtimes_ns(k);
        now.ctime_ns = m.ctimes_ns(k);
        now.inode = m.inodes(k);
        now.device = m.devices(k);
        const Entry* before = nullptr;
        try {
            before = snap_->parent_entry(store::detail::path_parts(path));
        } catch (const store::StoreError&) {
            before = nullptr;  // a damaged parent directory: its files are pushed
        }
        if (!before || !store::detail::unchanged_since(now, *before)) continue;
        const std::string& d = before->content.digest;
        // (the content must still be stored: a forgotten parent's may be gone)
        if (!store_.find(store::detail::content_name(store_, d, now.size))) continue;
        snap_->offered.insert(content_key(d, now.size));
        std::memcpy(digests.data() + i * 32, d.data(), 32);
    }
    v1::PushReply reply;
    reply.mutable_reuse()->set_digests(std::move(digests));
    sink(reply);
}

void PushSession::tree_bytes(const v1::TreeBytes& m) {
    require_snapshot("tree records");
    snap_->trees_begun = true;
    if (snap_->trees.size() + m.bytes().size() > kMaxPushedTreeBytes)
        refuse(fmt::format("tree records beyond {} MiB", kMaxPushedTreeBytes >> 20));
    snap_->trees += m.bytes();
}

void PushSession::commit_snapshot(const v1::SnapshotCommit& m, const Sink& sink) {
    require_snapshot("commit");
    SnapshotState& st = *snap_;
    store::Snapshot& s = st.snap;
    if (m.root().size() != 32) refuse("a root id that is not 32 bytes");
    BlobId root{};
    std::memcpy(root.data(), m.root().data(), 32);

    // The tree records: each parsed, checked against its id, once.
    struct Tree {
        std::vector<Entry> entries;
        std::size_t at = 0, length = 0;
        bool reached = false;
        store::SnapshotTotals totals;  // below it, once counted
        std::uint64_t reused = 0;
        bool counted = false;
    };
    std::map<BlobId, Tree> trees;
    std::vector<BlobId> order;
    const std::string& r = st.trees;
    for (std::size_t at = 0; at < r.size();) {
        if (r.size() - at < 36) refuse("a truncated tree record");
        BlobId id{};
        std::memcpy(id.data(), r.data() + at, 32);
        std::uint32_t len = 0;
        std::memcpy(&len, r.data() + at + 32, 4);  // little-endian, as the records are written
        if (len > r.size() - at - 36) refuse("a tree record longer than what follows it");
        const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(r.data() + at + 36), len);
        if (store::tree::tree_id(bytes) != id)
            refuse(fmt::format("tree {} does not have that id (BLAKE3 of its bytes)", store::to_hex(id)));
        if (trees.count(id)) refuse(fmt::format("tree {} sent twice", store::to_hex(id)));
        Tree t;
        try {
            t.entries = store::tree::parse_tree(bytes);
        } catch (const store::tree::TreeError& e) {
            refuse(fmt::format("tree {}: {}", store::to_hex(id), e.what()));
        }
        t.at = at;
        t.length = 36 + len;
        trees.emplace(id, std::move(t));
        order.push_back(id);
        at += 36 + len;
    }

    // Walked from the root: every name, every content, every subtree.
    std::function<Tree&(const BlobId&, const std::string&, std::size_t)> walk = [&](const BlobId& id,
                                                                                     const std::string& path,
                                                                                     std::size_t depth) -> Tree& {
        if (depth > kMaxDepth) refuse(fmt::format("'{}': directories deeper than {}", path, kMaxDepth));
        const auto it = trees.find(id);
        if (it == trees.end()) refuse(fmt::format("'{}': its tree {} was not sent", path, store::to_hex(id)));
        Tree& t = it->second;
        if (t.counted) return t;
        t.reached = true;
        for (const Entry& e : t.entries) {
            const std::string p = path + "/" + e.name;
            if (const std::string why = store::tree::name_problem(e.name); !why.empty())
                refuse(fmt::format("a name in '{}': {}", path.empty() ? "/" : path, why));
            if (e.type == EntryType::file || e.type == EntryType::hardlink) {
                if (e.content.digest.size() != 32 || !e.content.chunks.empty())
                    refuse(fmt::format("'{}': a content that is not named by its 32-byte digest alone", p));
                const std::string key = content_key(e.content.digest, store::tree::data_length(e));
                const bool pushed = st.pushed.count(key) != 0;
                if (!pushed && !st.offered.count(key))
                    refuse(fmt::format("'{}': its content was neither pushed in this stream nor offered from the "
                                       "parent",
                                       p));
                if (e.type == EntryType::hardlink) {
                    if (e.link.empty()) refuse(fmt::format("'{}': a hard link to nothing", p));
                    for (const auto& c : e.link)
                        if (const std::string why = store::tree::name_problem(c); !why.empty())
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
    stream.reserve(r.size());
    for (const BlobId& id : order) {
        const Tree& t = trees.at(id);
        if (!t.reached) refuse(fmt::format("tree {} is in no directory of the snapshot", store::to_hex(id)));
        stream.append(r, t.at, t.length);
    }

    // The pushed files under their content names (as a backup does, before
    // the snapshot's own transaction).
    writer_->commit();
    std::vector<std::pair<std::string, std::string>> moves;
    for (const std::string& name : st.first_names) {
        const auto f = store_.find(name);
        if (!f) continue;  // (the same path pushed twice: renamed already)
        moves.emplace_back(name, store::detail::content_name(
                                     store_, {reinterpret_cast<const char*>(f->digest.data()), f->digest.size()},
                                     f->size));
    }
    std::sort(moves.begin(), moves.end());
    moves.erase(std::unique(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                moves.end());
    if (!moves.empty()) store_.rename(moves);

    s.tree = store::to_hex(root);
    s.totals.files = top.totals.files;
    s.totals.dirs = top.totals.dirs;
    s.totals.others = top.totals.others;
    s.totals.bytes = top.totals.bytes;
    s.totals.bytes_read = totals_.bytes;
    s.totals.new_bytes = totals_.new_bytes;
    s.totals.skipped_unchanged = top.reused;
    s.totals.skipped_unreadable = m.skipped_unreadable();
    store::detail::commit_snapshot(*writer_, s, stream);
    finished_ = true;
    snapshot_id_ = s.id;
    v1::PushReply reply;
    auto* c = reply.mutable_committed();
    fill_snapshot_info(s, c->mutable_snapshot());
    c->set_skipped_unchanged(s.totals.skipped_unchanged);
    c->set_new_bytes(s.totals.new_bytes);
    sink(reply);
}

}  // namespace cdc::transfer
