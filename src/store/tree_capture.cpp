// SPDX-License-Identifier: Apache-2.0
// A tree captured to be sent as a snapshot (ingest.hpp, TreeCapture): the
// capture of `store backup` (snapshot_capture.hpp), its regular files
// listed, and the tree objects encoded bottom-up once the sender knows each
// file's content digest (ids: the BLAKE3 of their bytes, tree_object.hpp).
#include "ingest.hpp"

#include "snapshot_capture.hpp"
#include "snapshot_names.hpp"
#include "tree_object.hpp"

#include <functional>
#include <set>
#include <unordered_map>

#include <unistd.h>

namespace cdc::store {

namespace {

using tree::BlobId;
using tree::Entry;
using tree::EntryType;

std::string child_path(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

/// A sparse file's data extents as the wire carries them (u64 LE offset,
/// length, ...): the server compares them with the parent's.
std::string extents_bytes(const std::vector<tree::Extent>& x) {
    std::string b;
    b.reserve(x.size() * 16);
    for (const tree::Extent& e : x)
        for (const std::uint64_t v : {e.offset, e.length})
            for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return b;
}

std::int64_t ns_of(const struct timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

struct TreeCapture::Impl {
    detail::Draft d;
    std::vector<File> files;
    std::vector<std::pair<std::size_t, std::size_t>> where;  // file -> (dir, index)
    std::unordered_map<std::uint64_t, std::size_t> file_of;  // (dir << 32 | index) -> file
};

TreeCapture::TreeCapture(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result)
    : impl_(std::make_unique<Impl>()) {
    Impl& c = *impl_;
    detail::stamp_snapshot(snap, options.host);
    c.d = detail::capture_paths(options, snap, result);
    std::function<void(std::size_t, const std::string&)> collect = [&](std::size_t di, const std::string& path) {
        for (std::size_t i = 0; i < c.d.dirs[di].size(); ++i) {
            const Entry& e = c.d.dirs[di][i];
            const std::string p = child_path(path, e.name);
            if (e.type == EntryType::directory) {
                collect(detail::provisional_index(e.subtree), p);
            } else if (e.type == EntryType::file) {
                c.file_of[(std::uint64_t{di} << 32) | i] = c.files.size();
                c.where.emplace_back(di, i);
                c.files.push_back({p, e.size, tree::data_length(e), e.mtime_ns, e.ctime_ns, e.inode, e.device, e.sparse, e.mode,
                                   e.sparse ? extents_bytes(e.extents) : std::string()});
            }
        }
    };
    collect(c.d.root, "");
}

TreeCapture::~TreeCapture() = default;

const std::vector<TreeCapture::File>& TreeCapture::files() const { return impl_->files; }

std::unique_ptr<Reader> TreeCapture::extents(std::size_t i, int fd, const struct stat& at_open,
                                             std::string name) const {
    const auto [di, k] = impl_->where.at(i);
    return detail::extent_reader(fd, tree::data_ranges(impl_->d.dirs[di][k]), at_open, std::move(name));
}

std::string TreeCapture::encode(std::span<const Content> contents, std::string& records,
                                std::vector<RecordSpan>& spans, std::vector<SnapshotIssue>& skipped) const {
    const Impl& c = *impl_;
    if (contents.size() != c.files.size()) throw std::invalid_argument("TreeCapture::encode: a content per file");
    std::unordered_map<std::string, std::size_t> file_of_path;
    for (std::size_t i = 0; i < c.files.size(); ++i)
        if (contents[i].digest.size() == 32) file_of_path.emplace(c.files[i].path, i);
    std::set<BlobId> written;
    std::function<BlobId(std::size_t, const std::string&)> build = [&](std::size_t di, const std::string& path) {
        std::vector<Entry> out;
        out.reserve(c.d.dirs[di].size());
        for (std::size_t i = 0; i < c.d.dirs[di].size(); ++i) {
            Entry e = c.d.dirs[di][i];
            const std::string p = child_path(path, e.name);
            if (e.type == EntryType::directory) {
                e.subtree = build(detail::provisional_index(e.subtree), p);
            } else if (e.type == EntryType::file) {
                const Content& x = contents[c.file_of.at((std::uint64_t{di} << 32) | i)];
                if (x.digest.size() != 32) continue;  // left out
                e.content.digest = x.digest;
                if (x.opened) {  // as read (it may have changed since it was captured)
                    e.size = static_cast<std::uint64_t>(x.opened->st_size);
                    e.mtime_ns = ns_of(x.opened->st_mtim);
                    e.ctime_ns = ns_of(x.opened->st_ctim);
                }
            } else if (e.type == EntryType::hardlink) {
                std::string target;
                for (const auto& part : e.link) target = child_path(target, part);
                const auto it = file_of_path.find(target);
                if (it == file_of_path.end()) {
                    skipped.push_back({"/" + p, "a hard link to '/" + target + "', which was not stored"});
                    continue;
                }
                const Content& x = contents[it->second];
                e.content.digest = x.digest;
                // (the content as read: the first file may have changed since the capture)
                if (x.opened && !e.sparse) e.size = static_cast<std::uint64_t>(x.opened->st_size);
            }
            out.push_back(std::move(e));
        }
        const std::size_t at = records.size();
        const BlobId id = detail::append_tree(std::move(out), records, written);
        if (records.size() != at) spans.push_back({at, records.size() - at});  // (else written before)
        return id;
    };
    const BlobId root = build(c.d.root, "");
    return std::string(reinterpret_cast<const char*>(root.data()), root.size());
}

}  // namespace cdc::store
