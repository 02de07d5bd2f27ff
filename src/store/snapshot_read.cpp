// SPDX-License-Identifier: Apache-2.0
// Snapshots read back (cdc/snapshot.hpp): headers, trees, listings, the
// restore, forget, diff and find. The layout of a snapshot in the store's
// manifests is in snapshot_names.hpp.
#include "snapshot_names.hpp"

#include "restore_tree.hpp"
#include "tree_object.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include <fcntl.h>
#include <fnmatch.h>
#include <unistd.h>

namespace cdc::store {

namespace detail {

namespace {

std::string shown(std::string_view name) {
    std::string s;
    for (const char c : name) {
        if (c == '\0')
            s += "\\0";
        else
            s.push_back(c);
    }
    return s;
}

std::string hex_of(std::span<const std::uint8_t> b) {
    std::string s;
    for (const auto x : b) s += fmt::format("{:02x}", x);
    return s;
}

}  // namespace

std::string file_name(const Store& store, std::string_view id, std::string_view path) {
    const ChunkId h = store.chunk_id(std::as_bytes(std::span(path.data(), path.size())));
    return kFilePrefix + std::string(id) + "/" + to_hex(h);
}

std::vector<std::string> path_parts(std::string_view path) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= path.size()) {
        const auto slash = path.find('/', at);
        const auto end = slash == std::string_view::npos ? path.size() : slash;
        if (end > at) out.emplace_back(path.substr(at, end - at));
        if (slash == std::string_view::npos) break;
        at = slash + 1;
    }
    return out;
}

std::string join_parts(const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) {
        if (!s.empty()) s.push_back('/');
        s += p;
    }
    return s;
}

std::string content_key(std::string_view digest, std::uint64_t size) {
    std::string key(digest);
    for (int i = 0; i < 8; ++i) key.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
    return key;
}

std::string content_name_of_key(const Store& store, std::string_view key) {
    return kContentPrefix + to_hex(store.chunk_id(std::as_bytes(std::span(key.data(), key.size()))));
}

std::string content_name(const Store& store, std::string_view digest, std::uint64_t size) {
    return content_name_of_key(store, content_key(digest, size));
}

std::optional<ManifestInfo> content_manifest(const Store& store, std::string_view id, std::string_view path,
                                             const tree::Entry& e) {
    const ContentRef file{std::string(path), e.content.digest, tree::data_length(e)};
    return std::move(content_manifests(store, id, std::span(&file, 1))[0]);
}

std::vector<std::optional<ManifestInfo>> content_manifests(const Store& store, std::string_view id,
                                                           std::span<const ContentRef> files) {
    std::vector<std::string> names;
    names.reserve(files.size());
    for (const auto& f : files) names.push_back(content_name(store, f.digest, f.size));
    auto found = store.find(std::span<const std::string>(names));
    // Files of snapshots made before content names: under the snapshot's id.
    std::vector<std::size_t> rest;
    names.clear();
    for (std::size_t i = 0; i < files.size(); ++i)
        if (!found[i]) {
            rest.push_back(i);
            names.push_back(file_name(store, id, files[i].path));
        }
    if (!rest.empty()) {
        auto more = store.find(std::span<const std::string>(names));
        for (std::size_t k = 0; k < rest.size(); ++k) found[rest[k]] = std::move(more[k]);
    }
    return found;
}

std::string read_manifest(const Store& store, const std::string& name) {
    const auto info = store.find(name);
    if (!info) throw NotFoundError(fmt::format("'{}' is not in the store", shown(name)));
    std::vector<ChunkId> ids;
    store.for_each_chunk(name, [&](const ChunkId& id, std::uint32_t) { ids.push_back(id); });
    std::string out;
    out.reserve(info->size);
    store.read_chunks(ids, Store::ChunkForm::raw, [&](std::size_t, const StoredChunk& c) {
        out.append(reinterpret_cast<const char*>(c.bytes.data()), c.bytes.size());
    });
    if (out.size() != info->size || chunk_id_of(std::as_bytes(std::span(out.data(), out.size()))) != info->digest)
        throw DamageError(fmt::format("'{}': its content does not match its digest", shown(name)));
    return out;
}

std::string header_json(const Snapshot& s) {
    const nlohmann::json j = {{"v", 1},
                              {"id", s.id},
                              {"time_ns", s.time_ns},
                              {"utc_offset_s", s.utc_offset_s},
                              {"host", s.host},
                              {"user", s.user},
                              {"paths", s.paths},
                              {"tags", s.tags},
                              {"parent", s.parent},
                              {"tree", s.tree},
                              {"totals",
                               {{"files", s.totals.files},
                                {"dirs", s.totals.dirs},
                                {"others", s.totals.others},
                                {"bytes", s.totals.bytes},
                                {"bytes_read", s.totals.bytes_read},
                                {"new_bytes", s.totals.new_bytes},
                                {"stored_bytes", s.totals.stored_bytes},
                                {"skipped_unchanged", s.totals.skipped_unchanged},
                                {"skipped_unreadable", s.totals.skipped_unreadable}}}};
    // CBOR: paths and host names are bytes, not always UTF-8 text.
    const std::vector<std::uint8_t> b = nlohmann::json::to_cbor(j);
    return std::string(b.begin(), b.end());
}

Snapshot parse_header(std::string_view bytes, std::string_view what) {
    try {
        const auto j = nlohmann::json::from_cbor(bytes.begin(), bytes.end());
        if (j.at("v").get<int>() != 1) throw DamageError(fmt::format("{}: unknown header version", what));
        Snapshot s;
        s.id = j.at("id").get<std::string>();
        s.time_ns = j.at("time_ns").get<std::int64_t>();
        s.utc_offset_s = j.at("utc_offset_s").get<std::int32_t>();
        s.host = j.at("host").get<std::string>();
        s.user = j.at("user").get<std::string>();
        s.paths = j.at("paths").get<std::vector<std::string>>();
        s.tags = j.at("tags").get<std::vector<std::string>>();
        s.parent = j.at("parent").get<std::string>();
        s.tree = j.at("tree").get<std::string>();
        const auto& t = j.at("totals");
        s.totals.files = t.at("files").get<std::uint64_t>();
        s.totals.dirs = t.at("dirs").get<std::uint64_t>();
        s.totals.others = t.at("others").get<std::uint64_t>();
        s.totals.bytes = t.at("bytes").get<std::uint64_t>();
        s.totals.bytes_read = t.at("bytes_read").get<std::uint64_t>();
        s.totals.new_bytes = t.at("new_bytes").get<std::uint64_t>();
        s.totals.stored_bytes = t.at("stored_bytes").get<std::uint64_t>();
        s.totals.skipped_unchanged = t.at("skipped_unchanged").get<std::uint64_t>();
        s.totals.skipped_unreadable = t.at("skipped_unreadable").get<std::uint64_t>();
        (void)chunk_id_from_hex(s.tree);
        return s;
    } catch (const DamageError&) {
        throw;
    } catch (const std::exception& e) {
        throw DamageError(fmt::format("{}: not a snapshot header ({})", what, e.what()));
    }
}

std::string for_each_tree_record(std::string_view stream, const std::function<void(const TreeRecord&)>& each) {
    for (std::size_t at = 0; at < stream.size();) {
        if (stream.size() - at < kTreeRecordHead) return "a truncated tree record";
        TreeRecord r;
        r.at = at;
        std::memcpy(r.id.data(), stream.data() + at, r.id.size());
        std::uint32_t len = 0;  // little-endian, whatever the host
        for (int i = 3; i >= 0; --i)
            len = (len << 8) | static_cast<unsigned char>(stream[at + 32 + static_cast<std::size_t>(i)]);
        if (stream.size() - at - kTreeRecordHead < len) return "a truncated tree record";
        r.object = stream.substr(at + kTreeRecordHead, len);
        each(r);
        at += kTreeRecordHead + len;
    }
    return {};
}

SnapshotTrees::SnapshotTrees(std::string bytes, std::string_view what) : bytes_(std::move(bytes)), what_(what) {
    const std::string problem = for_each_tree_record(bytes_, [&](const TreeRecord& r) {
        index_.emplace(r.id, std::make_pair(r.at + kTreeRecordHead, r.object.size()));
    });
    if (!problem.empty()) throw DamageError(fmt::format("{}: {}", what_, problem));
}

std::vector<tree::Entry> SnapshotTrees::entries(const tree::BlobId& id) const {
    const auto it = index_.find(id);
    if (it == index_.end()) throw DamageError(fmt::format("{}: tree {} is missing", what_, to_hex(id)));
    const auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(bytes_.data()) + it->second.first,
                                 it->second.second);
    if (tree::tree_id(bytes) != id) throw DamageError(fmt::format("{}: tree {} is damaged", what_, to_hex(id)));
    try {
        return tree::parse_tree(bytes);
    } catch (const tree::TreeError& e) {
        throw DamageError(fmt::format("{}: tree {}: {}", what_, to_hex(id), e.what()));
    }
}

SnapshotTrees load_trees(const Store& store, const Snapshot& s) {
    return SnapshotTrees(read_manifest(store, tree_name(s.id)), fmt::format("snapshot {}", s.id));
}

tree::BlobId append_tree(std::vector<tree::Entry> entries, std::string& stream, std::set<tree::BlobId>& written) {
    const std::vector<std::uint8_t> bytes = tree::encode_tree(std::move(entries));
    const tree::BlobId id = tree::tree_id(bytes);
    append_encoded_tree(id, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), stream, written);
    return id;
}

void append_encoded_tree(const tree::BlobId& id, std::string_view bytes, std::string& stream,
                         std::set<tree::BlobId>& written) {
    if (!written.insert(id).second) return;
    stream.append(reinterpret_cast<const char*>(id.data()), id.size());
    const auto len = static_cast<std::uint32_t>(bytes.size());
    for (int s = 0; s < 4; ++s) stream.push_back(static_cast<char>((len >> (8 * s)) & 0xff));
    stream.append(bytes);
}

namespace {

/// A test's pause (CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT=FIFO, docs/STORE.md,
/// "Tests"): the snapshot's files are committed and renamed, the snapshot
/// is not; the FIFO opened for reading blocks until the test opens it to
/// write, then its end (the test closing it) lets the commit go on.
void test_pause_before_commit() {
    const char* fifo = std::getenv("CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT");
    if (fifo == nullptr || *fifo == '\0') return;
    int fd = -1;
    do fd = ::open(fifo, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return;
    char buf[64];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0 || (n < 0 && errno == EINTR)) continue;
        break;
    }
    ::close(fd);
}

}  // namespace

void commit_snapshot(const Store& store, Writer& w, const Snapshot& s, const std::string& stream) {
    test_pause_before_commit();
    const std::string header = header_json(s);
    w.put_file({tree_name(s.id), 0600, s.time_ns}, MemorySource(std::span<const char>(stream.data(), stream.size())));
    w.put_file({header_name(s.id), 0600, s.time_ns}, MemorySource(std::span<const char>(header.data(), header.size())));
    // The contents the snapshot names (its stream is its whole tree set):
    // the commit that makes it visible makes them live again if a gc beside
    // writers condemned them at a mark made after this writer found them
    // (PgCatalog::write_batch says why that is safe).
    w.commit_naming([&] {
        std::set<std::string> named;
        for_each_content(store, s, SnapshotTrees(stream, tree_name(s.id)),
                         [&](const std::string& name) { named.insert(name); });
        return std::vector<std::string>(named.begin(), named.end());
    });
}

tree::Entry root_entry(const Snapshot& s) {
    tree::Entry e;
    e.type = tree::EntryType::directory;
    e.mode = 0755;
    e.mtime_ns = s.time_ns;
    e.atime_ns = s.time_ns;
    e.subtree = chunk_id_from_hex(s.tree);
    return e;
}

SnapshotRestoreReport restore_checked(const std::filesystem::path& out, const tree::Entry& root,
                                      const std::vector<std::string>& parts, tree::RestoreSource source,
                                      const SnapshotRestoreOptions& options) {
    auto bytes = std::move(source.content);
    source.content = [&bytes](const tree::Entry& e, const std::function<void(std::string_view)>& sink) {
        Hasher h(DigestKind::blake3);
        std::uint64_t n = 0;
        bytes(e, [&](std::string_view b) {
            h.update(std::as_bytes(std::span(b.data(), b.size())));
            n += b.size();
            sink(b);
        });
        const Digest d = h.finish();
        if (n != tree::data_length(e) ||
            std::string(reinterpret_cast<const char*>(d.bytes.data()), d.size) != e.content.digest)
            throw DamageError("its content does not match its digest");
    };
    tree::RestoreOptions ro;
    ro.owner = options.owner;
    ro.setid = options.setid;
    ro.tree_path = parts;
    const tree::RestoreReport r = tree::restore(out, root, source, ro);
    SnapshotRestoreReport rep;
    rep.directories = r.directories;
    rep.files = r.files;
    rep.hardlinks = r.hardlinks;
    rep.symlinks = r.symlinks;
    rep.specials = r.specials;
    rep.bytes = r.bytes;
    for (const auto& p : r.problems) {
        if (p.kind == tree::RestoreProblem::Kind::not_restored)
            rep.not_restored.push_back({p.path, p.why});
        else
            rep.problems.push_back({p.path, fmt::format("{}: {}", tree::kind_name(p.kind), p.why)});
    }
    return rep;
}

std::uint64_t adopt_snapshot_files(const Store& store) {
    std::vector<std::pair<std::string, std::string>> moves;
    std::map<std::string, bool> committed;  // snapshot id -> has a header
    for (const ManifestInfo& m : store.list(kFilePrefix)) {
        const auto slash = m.name.find('/', kFilePrefix.size());
        if (slash == std::string::npos) continue;
        const std::string id = m.name.substr(kFilePrefix.size(), slash - kFilePrefix.size());
        auto it = committed.find(id);
        if (it == committed.end()) it = committed.emplace(id, store.find(header_name(id)).has_value()).first;
        if (!it->second) continue;  // a dead backup's: gc drops it
        moves.emplace_back(m.name,
                           content_name(store, std::string_view(reinterpret_cast<const char*>(m.digest.data()), m.digest.size()),
                                        m.size));
    }
    if (!moves.empty()) store.rename(moves);
    return moves.size();
}

void for_each_content(const Store& store, const Snapshot& s, const std::function<void(const std::string&)>& f,
                      std::set<tree::BlobId>* seen_before) {
    std::set<tree::BlobId> own;
    std::set<tree::BlobId>& seen = seen_before ? *seen_before : own;
    if (seen.count(root_entry(s).subtree)) return;  // (its trees are not even read)
    for_each_content(store, s, load_trees(store, s), f, &seen);
}

void for_each_content(const Store& store, const Snapshot& s, const SnapshotTrees& trees,
                      const std::function<void(const std::string&)>& f, std::set<tree::BlobId>* seen_before) {
    std::set<tree::BlobId> own;
    std::set<tree::BlobId>& seen = seen_before ? *seen_before : own;
    std::function<void(const tree::BlobId&)> visit = [&](const tree::BlobId& id) {
        if (!seen.insert(id).second) return;  // a directory met twice holds the same files
        for (const tree::Entry& e : trees.entries(id)) {
            if (e.type == tree::EntryType::directory)
                visit(e.subtree);
            else if (e.type == tree::EntryType::file)
                f(content_name(store, e.content.digest, tree::data_length(e)));
        }
    };
    visit(root_entry(s).subtree);
}

}  // namespace detail

using detail::SnapshotTrees;

namespace {

/// The entry at `path` below the snapshot's root (the root for "" or "/").
tree::Entry resolve(const Snapshot& snap, const SnapshotTrees& trees, const std::vector<std::string>& parts) {
    tree::Entry e = detail::root_entry(snap);
    std::string at;
    for (const auto& name : parts) {
        if (e.type != tree::EntryType::directory)
            throw NotFoundError(fmt::format("snapshot {}: '/{}' is not a directory", snap.id, at));
        const auto entries = trees.entries(e.subtree);
        const auto it = std::find_if(entries.begin(), entries.end(), [&](const tree::Entry& x) { return x.name == name; });
        at += (at.empty() ? "" : "/") + name;
        if (it == entries.end()) throw NotFoundError(fmt::format("snapshot {} has no '/{}'", snap.id, at));
        e = *it;
    }
    return e;
}

SnapshotNode node_of(const Store& store, const tree::Entry& e, const std::string& path) {
    SnapshotNode n;
    n.path = "/" + path;
    n.type = std::string(tree::type_name(e.type));
    n.mode = e.mode;
    n.uid = e.uid;
    n.gid = e.gid;
    n.user = e.user;
    n.group = e.group;
    n.size = e.size;
    n.mtime_ns = e.mtime_ns;
    if (e.type == tree::EntryType::symlink) n.target = e.target;
    if (e.type == tree::EntryType::hardlink) n.target = "/" + detail::join_parts(e.link);
    if (e.type == tree::EntryType::file || e.type == tree::EntryType::hardlink)
        n.digest = detail::hex_of(std::span(reinterpret_cast<const std::uint8_t*>(e.content.digest.data()),
                                            e.content.digest.size()));
    if (e.type == tree::EntryType::file) n.content = detail::content_name(store, e.content.digest, tree::data_length(e));
    return n;
}

std::string child_path(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

void walk(const SnapshotTrees& trees, const tree::Entry& e, const std::string& path,
          const std::function<void(const tree::Entry&, const std::string&)>& f) {
    f(e, path);
    if (e.type != tree::EntryType::directory) return;
    for (const auto& c : trees.entries(e.subtree)) walk(trees, c, child_path(path, c.name), f);
}

}  // namespace

SnapshotInfo Snapshot::retention_info() const {
    SnapshotInfo r;
    r.id = id;
    r.time_ns = time_ns;
    r.utc_offset_s = utc_offset_s;
    r.host = host;
    r.paths = paths;
    r.tags = tags;
    return r;
}

std::vector<Snapshot> list_snapshots(const Store& store) {
    std::vector<Snapshot> out;
    for (const ManifestInfo& m : store.list(detail::kHeaderPrefix)) {
        const std::string id = m.name.substr(detail::kHeaderPrefix.size());
        std::string header;
        try {
            header = detail::read_manifest(store, m.name);
        } catch (const NotFoundError&) {
            continue;  // forgotten since it was listed (a forget runs beside this reader)
        }
        out.push_back(detail::parse_header(header, fmt::format("snapshot {}", id)));
        if (out.back().id != id) throw DamageError(fmt::format("snapshot {}: its header names {}", id, out.back().id));
    }
    std::sort(out.begin(), out.end(), [](const Snapshot& a, const Snapshot& b) {
        return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.id < b.id;
    });
    return out;
}

Snapshot find_snapshot(const Store& store, std::string_view ref) {
    if (ref == "latest") {
        auto all = list_snapshots(store);
        if (all.empty()) throw NotFoundError(fmt::format("the store '{}' has no snapshot", store.info().path.string()));
        return all.back();
    }
    if (ref.size() < 4 || ref.size() > 32 ||
        ref.find_first_not_of("0123456789abcdef") != std::string_view::npos)
        throw OptionError(fmt::format("'{}' is not a snapshot id (4 to 32 lowercase hex digits, or latest)", ref));
    const auto found = store.list(detail::kHeaderPrefix + std::string(ref));
    if (found.empty()) throw NotFoundError(fmt::format("no snapshot '{}' in the store", ref));
    if (found.size() > 1) throw OptionError(fmt::format("'{}' names {} snapshots: give more digits", ref, found.size()));
    const std::string id = found[0].name.substr(detail::kHeaderPrefix.size());
    return detail::parse_header(detail::read_manifest(store, found[0].name), fmt::format("snapshot {}", id));
}

void list_snapshot(const Store& store, const Snapshot& snap, std::string_view path, bool recursive,
                   const std::function<void(const SnapshotNode&)>& f) {
    const SnapshotTrees trees = detail::load_trees(store, snap);
    const auto parts = detail::path_parts(path);
    const tree::Entry e = resolve(snap, trees, parts);
    const std::string base = detail::join_parts(parts);
    if (recursive) {
        walk(trees, e, base, [&](const tree::Entry& x, const std::string& p) { f(node_of(store, x, p)); });
        return;
    }
    f(node_of(store, e, base));
    if (e.type == tree::EntryType::directory)
        for (const auto& c : trees.entries(e.subtree)) f(node_of(store, c, child_path(base, c.name)));
}

SnapshotRestoreReport restore_snapshot(const Store& store, const Snapshot& snap, std::string_view path,
                                       const std::filesystem::path& out, const SnapshotRestoreOptions& options) {
    const SnapshotTrees trees = detail::load_trees(store, snap);
    const auto parts = detail::path_parts(path);
    const tree::Entry root = resolve(snap, trees, parts);
    // Content by its name (digest and length). Snapshots made before
    // content names kept it under a file's path: the first file of the
    // snapshot with that digest (a hard link's may lie outside `path`).
    std::optional<std::unordered_map<std::string, std::string>> by_digest;
    auto older_name = [&](const tree::Entry& e) -> std::string {
        if (!by_digest) {
            by_digest.emplace();
            walk(trees, detail::root_entry(snap), "", [&](const tree::Entry& x, const std::string& p) {
                if (x.type == tree::EntryType::file)
                    by_digest->emplace(x.content.digest, detail::file_name(store, snap.id, p));
            });
        }
        const auto it = by_digest->find(e.content.digest);
        if (it == by_digest->end()) throw DamageError("its content is not in the store");
        return it->second;
    };
    // One lock and one view of the index for all the files (over PostgreSQL
    // they were most of a small file's statements), the view renewed every
    // few seconds (held through a long restore, it would keep PostgreSQL
    // from cleaning up behind the writers).
    Store::ReadSession session = store.read_session();
    // The files' names in the order the restore reads them (its walk: depth
    // first, entries in order), so that the session looks them up many at
    // a time; a lazy walk, as far ahead as the session asks.
    struct Level {
        std::vector<tree::Entry> entries;
        std::size_t next = 0;
    };
    std::vector<Level> ahead;
    if (root.type == tree::EntryType::directory) {
        try {
            ahead.push_back({trees.entries(root.subtree), 0});
        } catch (const StoreError&) {
            ahead.clear();  // (the restore reports it)
        }
    }
    const std::size_t max_depth = tree::RestoreOptions{}.max_depth;  // (deeper: not restored)
    session.expect([&, root_file = root.type == tree::EntryType::file]() mutable -> std::optional<std::string> {
        if (root_file) {
            root_file = false;
            if (tree::data_length(root) > 0) return detail::content_name(store, root.content.digest, tree::data_length(root));
        }
        while (!ahead.empty()) {
            Level& level = ahead.back();
            if (level.next == level.entries.size()) {
                ahead.pop_back();
                continue;
            }
            const tree::Entry& e = level.entries[level.next++];
            if (e.type == tree::EntryType::directory) {
                if (ahead.size() >= max_depth) continue;
                std::vector<tree::Entry> children;
                try {
                    children = trees.entries(e.subtree);
                } catch (const StoreError&) {
                    continue;  // (the restore reports it)
                }
                ahead.push_back({std::move(children), 0});
            } else if (e.type == tree::EntryType::file && tree::data_length(e) > 0) {
                return detail::content_name(store, e.content.digest, tree::data_length(e));
            }
        }
        return std::nullopt;
    });
    tree::RestoreSource source;
    source.tree = [&](const tree::BlobId& id) { return trees.entries(id); };
    source.content = [&](const tree::Entry& e, const std::function<void(std::string_view)>& sink) {
        session.refresh();
        bool delivered = false;
        const auto deliver = [&](std::span<const std::byte> b) {
            delivered = true;
            sink(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
        };
        const auto read = [&](const std::string& name) {
            // (again after a lost catalog only if none of it was handed on)
            session.retry_once([&] { session.read_file(name, deliver); },
                               [&](const StoreError&) { return !delivered; });
        };
        // (read_file finds the file before it reads a byte: NotFoundError
        // means none was delivered)
        try {
            read(detail::content_name(store, e.content.digest, tree::data_length(e)));
            return;
        } catch (const NotFoundError&) {
        }
        try {
            read(older_name(e));
        } catch (const NotFoundError&) {
            throw DamageError("its content is not in the store");
        }
    };
    return detail::restore_checked(out, root, parts, std::move(source), options);
}

void forget_snapshots(Store& store, std::span<const std::string> ids) {
    // Store::remove is one transaction: a snapshot goes whole or not at all.
    store.remove(detail::snapshot_manifests(store, ids));
}

std::vector<std::string> detail::snapshot_manifests(const Store& store, std::span<const std::string> ids) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    for (const auto& id : ids) {
        if (!seen.insert(id).second) continue;
        if (!store.find(detail::header_name(id))) throw NotFoundError(fmt::format("no snapshot '{}' in the store", id));
        names.push_back(detail::header_name(id));
        if (store.find(detail::tree_name(id))) names.push_back(detail::tree_name(id));
        for (const auto& m : store.list(detail::kFilePrefix + id + "/")) names.push_back(m.name);
    }
    return names;
}

namespace {

bool same_content(const tree::Entry& a, const tree::Entry& b) {
    return a.size == b.size && a.content.digest == b.content.digest && a.extents == b.extents &&
           a.target == b.target && a.link == b.link && a.rdev == b.rdev;
}

std::vector<std::string> metadata_changes(const tree::Entry& a, const tree::Entry& b) {
    auto d = tree::entry_differences(a, b, false, false);
    std::erase_if(d, [](const std::string& f) { return f == "atime"; });
    return d;
}

void diff_dirs(const SnapshotTrees& ta, const SnapshotTrees& tb, const tree::BlobId& a, const tree::BlobId& b,
               const std::string& path, std::vector<SnapshotChange>& out) {
    if (a == b) return;
    const auto ea = ta.entries(a);
    const auto eb = tb.entries(b);
    auto all = [&](const SnapshotTrees& t, const tree::Entry& e, const std::string& p, char kind) {
        walk(t, e, p, [&](const tree::Entry&, const std::string& q) { out.push_back({kind, "/" + q, {}}); });
    };
    std::size_t i = 0, j = 0;
    while (i < ea.size() || j < eb.size()) {
        if (j == eb.size() || (i < ea.size() && ea[i].name < eb[j].name)) {
            all(ta, ea[i], child_path(path, ea[i].name), '-');
            ++i;
        } else if (i == ea.size() || eb[j].name < ea[i].name) {
            all(tb, eb[j], child_path(path, eb[j].name), '+');
            ++j;
        } else {
            const tree::Entry& x = ea[i];
            const tree::Entry& y = eb[j];
            const std::string p = child_path(path, x.name);
            if (x.type != y.type) {
                all(ta, x, p, '-');
                all(tb, y, p, '+');
            } else if (x.type != tree::EntryType::directory && !same_content(x, y)) {
                out.push_back({'M', "/" + p, {"content"}});
            } else {
                auto m = metadata_changes(x, y);
                if (!m.empty()) out.push_back({'m', "/" + p, std::move(m)});
                if (x.type == tree::EntryType::directory) diff_dirs(ta, tb, x.subtree, y.subtree, p, out);
            }
            ++i;
            ++j;
        }
    }
}

}  // namespace

SnapshotCheck verify_snapshots(const Store& store) {
    SnapshotCheck r;
    std::set<std::string> ids;
    for (const ManifestInfo& m : store.list(detail::kHeaderPrefix)) {
        const std::string id = m.name.substr(detail::kHeaderPrefix.size());
        ids.insert(id);
        ++r.snapshots;
        try {
            const Snapshot snap = detail::parse_header(detail::read_manifest(store, m.name), fmt::format("snapshot {}", id));
            const SnapshotTrees trees = detail::load_trees(store, snap);
            std::set<std::string> digests;
            std::vector<std::pair<std::string, std::string>> links;  // path, digest
            // Files' manifests are looked up in batches (one round trip
            // each for a catalog over a network).
            std::vector<detail::ContentRef> listed;
            const auto check_listed = [&] {
                const auto found = detail::content_manifests(store, id, listed);
                for (std::size_t i = 0; i < listed.size(); ++i) {
                    const auto& f = found[i];
                    const std::string& p = listed[i].path;
                    if (!f)
                        r.damage.push_back(fmt::format("snapshot {}: '/{}': its content is missing", id, p));
                    else if (std::string(reinterpret_cast<const char*>(f->digest.data()), f->digest.size()) !=
                                 listed[i].digest ||
                             f->size != listed[i].size)
                        r.damage.push_back(fmt::format("snapshot {}: '/{}': its content is not the file's", id, p));
                }
                listed.clear();
            };
            std::function<void(const tree::Entry&, const std::string&)> check = [&](const tree::Entry& e,
                                                                                     const std::string& p) {
                if (e.type == tree::EntryType::directory) {
                    std::vector<tree::Entry> children;
                    try {
                        children = trees.entries(e.subtree);
                    } catch (const DamageError& err) {
                        r.damage.push_back(fmt::format("snapshot {}: '/{}': {}", id, p, err.what()));
                        return;
                    }
                    for (const auto& c : children) check(c, child_path(p, c.name));
                } else if (e.type == tree::EntryType::file) {
                    ++r.files;
                    digests.insert(e.content.digest);
                    listed.push_back({p, e.content.digest, tree::data_length(e)});
                    if (listed.size() >= 1024) check_listed();
                } else if (e.type == tree::EntryType::hardlink) {
                    links.emplace_back(p, e.content.digest);
                }
            };
            check(detail::root_entry(snap), "");
            check_listed();
            for (const auto& [p, d] : links)
                if (!digests.count(d))
                    r.damage.push_back(fmt::format("snapshot {}: '/{}': a hard link to content the snapshot lacks", id, p));
        } catch (const StoreError& e) {
            r.damage.push_back(fmt::format("snapshot {}: {}", id, e.what()));
        }
    }
    std::set<std::string> named;  // contents some snapshot holds
    bool all_read = true;
    for (const std::string& id : ids) {
        try {
            detail::for_each_content(
                store, detail::parse_header(detail::read_manifest(store, detail::header_name(id)), id),
                [&](const std::string& n) { named.insert(n); });
        } catch (const StoreError&) {
            all_read = false;  // (named in r.damage above)
        }
    }
    if (all_read) {
        std::uint64_t unnamed = 0;
        for (const ManifestInfo& m : store.list(detail::kContentPrefix)) unnamed += named.count(m.name) ? 0U : 1U;
        if (unnamed > 0)
            r.notes.push_back(fmt::format("{} file content(s) in no snapshot (of forgotten snapshots; gc drops them)",
                                          unnamed));
    }
    std::set<std::string> orphans;
    std::uint64_t orphan_files = 0;
    for (const ManifestInfo& m : store.list(detail::kFilePrefix)) {
        const auto slash = m.name.find('/', detail::kFilePrefix.size());
        const std::string id = m.name.substr(detail::kFilePrefix.size(), slash - detail::kFilePrefix.size());
        if (!ids.count(id)) {
            orphans.insert(id);
            ++orphan_files;
        }
    }
    if (orphan_files > 0)
        r.notes.push_back(fmt::format("{} file(s) of {} interrupted backup(s), in no snapshot (gc drops them)",
                                      orphan_files, orphans.size()));
    return r;
}

std::vector<SnapshotChange> diff_snapshots(const Store& store, const Snapshot& a, const Snapshot& b) {
    const SnapshotTrees ta = detail::load_trees(store, a);
    const SnapshotTrees tb = detail::load_trees(store, b);
    std::vector<SnapshotChange> out;
    diff_dirs(ta, tb, detail::root_entry(a).subtree, detail::root_entry(b).subtree, "", out);
    return out;
}

void find_in_snapshots(const Store& store, std::string_view pattern,
                       const std::function<void(const Snapshot&, const SnapshotNode&)>& f) {
    const std::string pat(pattern);
    for (const Snapshot& s : list_snapshots(store)) {
        const SnapshotTrees trees = detail::load_trees(store, s);
        walk(trees, detail::root_entry(s), "", [&](const tree::Entry& e, const std::string& p) {
            if (p.empty()) return;
            const std::string full = "/" + p;
            if (::fnmatch(pat.c_str(), e.name.c_str(), 0) == 0 || ::fnmatch(pat.c_str(), full.c_str(), 0) == 0)
                f(s, node_of(store, e, p));
        });
    }
}

}  // namespace cdc::store
