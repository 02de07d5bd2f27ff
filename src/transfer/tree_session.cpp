// SPDX-License-Identifier: Apache-2.0
#include "tree_session.hpp"

#include "chunk_messages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace cdc::transfer {

namespace {
// Chunks per list (as a file's pull).
constexpr std::size_t kTreeListChunks = 4096;
}  // namespace

void fill_snapshot_info(const store::Snapshot& s, v1::SnapshotInfo* out) {
    out->set_id(s.id);
    out->set_time_ns(s.time_ns);
    out->set_utc_offset_s(s.utc_offset_s);
    out->set_host(s.host);
    out->set_user(s.user);
    for (const auto& p : s.paths) out->add_paths(p);
    for (const auto& t : s.tags) out->add_tags(t);
    out->set_parent(s.parent);
    out->set_files(s.totals.files);
    out->set_dirs(s.totals.dirs);
    out->set_others(s.totals.others);
    out->set_bytes(s.totals.bytes);
}

TreePullSession::TreePullSession(const std::filesystem::path& store_dir, const store::OpenOptions& options)
    : store_(store::Store::open(store_dir, options)) {
    // A tree's chunks travel under the ids the client checks them against,
    // plain BLAKE3; an encrypted store keeps keyed ids, and its tree pull
    // would have to read and hash every chunk first (as the file pull does).
    if (store_.info().encrypted())
        throw TransferError(Code::failed_precondition,
                            "the store is encrypted: pull its files by name (cdc pull NAME); a snapshot's tree in "
                            "one stream is not served from an encrypted store yet");
    max_list_bytes_ = max_list_bytes(store_.info().profile.max_size);
}

void TreePullSession::handle(const v1::PullTreeRequest& request, const Sink& sink) {
    if (finished_) throw TransferError(Code::failed_precondition, "a request after the end of the tree");
    switch (request.body_case()) {
    case v1::PullTreeRequest::kStart: start(request.start(), sink); break;
    case v1::PullTreeRequest::kFiles: files(request.files(), sink); break;
    case v1::PullTreeRequest::kWant: want(request.want(), sink); break;
    default: throw TransferError(Code::invalid_argument, "an empty tree pull request");
    }
}

void TreePullSession::start(const v1::TreeStart& m, const Sink& sink) {
    if (started_) throw TransferError(Code::failed_precondition, "a second start in one tree pull");
    started_ = true;
    if (m.path().size() > kMaxNameBytes || m.path().find('\0') != std::string::npos)
        throw TransferError(Code::invalid_argument, "path refused: longer than 4096 bytes or with a NUL byte");
    export_ = store::export_snapshot(store_, store::find_snapshot(store_, m.snapshot()), m.path());
    v1::PullTreeReply reply;
    auto* h = reply.mutable_header();
    fill_snapshot_info(export_.snapshot, h->mutable_snapshot());
    h->set_root(export_.root);
    h->set_trees_bytes(export_.trees.size());
    sink(reply);
    for (std::size_t at = 0; at < export_.trees.size(); at += kDataMessageBytes) {
        v1::PullTreeReply t;
        t.mutable_trees()->set_bytes(export_.trees.substr(at, kDataMessageBytes));
        sink(t);
    }
    export_.trees = {};
}

void TreePullSession::files(const v1::TreeFiles& m, const Sink& sink) {
    if (!started_ || files_done_) throw TransferError(Code::failed_precondition, "files out of turn in a tree pull");
    if (m.digests().size() % 32 != 0 || m.digests().size() / 32 > kMaxTreeFilesPerMessage)
        throw TransferError(Code::invalid_argument, "a files message that is not 32-byte digests (8192 at most)");
    const std::size_t n = m.digests().size() / 32;
    // (a restore asks for one content per file at most: a client cannot make
    // the server hold more)
    if (files_.size() + n > std::min<std::uint64_t>(export_.files, kMaxTreeFiles))
        throw TransferError(Code::invalid_argument,
                            fmt::format("more contents asked for than the {} file(s) of the path", export_.files));
    for (std::size_t i = 0; i < n; ++i) {
        const auto it = export_.contents.find(m.digests().substr(i * 32, 32));
        if (it == export_.contents.end())
            throw TransferError(Code::invalid_argument, "a content asked for is not one of the snapshot's files");
        files_.push_back(&it->second);
    }
    if (!m.last()) return;
    files_done_ = true;
    current_ = next_list();
    send_list_or_end(sink);
}

void TreePullSession::send_list_or_end(const Sink& sink) {
    v1::PullTreeReply reply;
    if (!current_) {
        reply.mutable_end();
        sink(reply);
        finished_ = true;
        return;
    }
    auto* c = reply.mutable_chunks();
    std::string ids;
    ids.reserve(current_->ids.size() * 32);
    for (const auto& id : current_->ids) append_id(ids, id);
    c->set_ids(std::move(ids));
    c->mutable_sizes()->Add(current_->sizes.begin(), current_->sizes.end());
    sink(reply);
}

std::optional<TreePullSession::List> TreePullSession::next_list() {
    List list;
    std::uint64_t bytes = 0;
    // The files listed for this list under one read session, told the files
    // in their order so that it looks them up a batch at a time (a catalog
    // a round trip away took 7 statements a file); a session of its own per
    // list, not held while the client decides what it wants.
    std::optional<store::Store::ReadSession> session;
    for (;;) {
        if (file_pos_ == file_ids_.size()) {
            if (next_file_ == files_.size()) break;
            file_ids_.clear();
            file_sizes_.clear();
            file_pos_ = 0;
            if (!session) {
                session.emplace(store_.read_session());
                session->expect([this, k = next_file_]() mutable -> std::optional<std::string> {
                    if (k == files_.size()) return std::nullopt;
                    return *files_[k++];
                });
            }
            const std::string& name = *files_[next_file_++];
            try {
                // (once more in a fresh view after a lost catalog: a
                // PostgreSQL restart mid-pull)
                session->retry_once([&] {
                    file_ids_.clear();
                    file_sizes_.clear();
                    session->for_each_chunk(name, [&](const store::ChunkId& id, std::uint32_t size) {
                        file_ids_.push_back(id);
                        file_sizes_.push_back(size);
                    });
                });
            } catch (const store::NotFoundError&) {
                throw TransferError(Code::aborted, "the snapshot was forgotten during the pull");
            }
            continue;
        }
        const std::uint32_t size = file_sizes_[file_pos_];
        if (!list.ids.empty() && (list.ids.size() == kTreeListChunks || bytes + size > max_list_bytes_)) break;
        list.ids.push_back(file_ids_[file_pos_]);
        list.sizes.push_back(size);
        bytes += size;
        ++file_pos_;
    }
    if (list.ids.empty()) return std::nullopt;
    return list;
}

void TreePullSession::want(const v1::Want& m, const Sink& sink) {
    if (!current_) throw TransferError(Code::failed_precondition, "a want before a chunk list");
    const std::vector<bool> wanted = read_bitmap(m.bitmap(), current_->ids.size(), m.count());
    const List list = std::move(*current_);
    current_ = next_list();
    if (current_) send_list_or_end(sink);
    std::vector<store::ChunkId> ids;
    ids.reserve(m.count());
    for (std::size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i]) ids.push_back(list.ids[i]);
    v1::PullTreeReply reply;
    ChunkPacker packer([&](v1::Chunks& chunks) {
        reply.mutable_data()->Swap(&chunks);
        sink(reply);
        reply.Clear();
    });
    try {
        store_.read_chunks(ids, store::Store::ChunkForm::stored, [&](std::size_t k, const store::StoredChunk& c) {
            packer.add(ids[k], c.raw_size, c.codec == store::Codec::raw, c.bytes);
        });
    } catch (const store::NotFoundError& e) {
        throw TransferError(Code::aborted, fmt::format("the snapshot changed during the pull: {}", e.what()));
    }
    packer.flush();
    bytes_sent_ += packer.payload_bytes();
    if (!current_) send_list_or_end(sink);
}

}  // namespace cdc::transfer
