// SPDX-License-Identifier: Apache-2.0
#include "pull_session.hpp"

#include "chunk_messages.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>

#include <cstring>

namespace cdc::transfer {

namespace {
// Chunks per list sent by the server (~32 MiB of 8 KiB chunks at most, and
// the list byte bound).
constexpr std::size_t kPullListChunks = 4096;
}  // namespace

PullSession::PullSession(const std::filesystem::path& store_dir, const store::OpenOptions& options)
    : dir_(store_dir), options_(options), store_(store::Store::open(store_dir, options)) {
    max_list_bytes_ = max_list_bytes(store_.info().profile.max_size);
}

PullSession::~PullSession() = default;

void PullSession::handle(const v1::PullRequest& request, const Sink& sink) {
    if (finished_) throw TransferError(Code::failed_precondition, "a request after the end of the file");
    switch (request.body_case()) {
    case v1::PullRequest::kStart: start(request.start(), sink); break;
    case v1::PullRequest::kWant: want(request.want(), sink); break;
    default: throw TransferError(Code::invalid_argument, "an empty pull request");
    }
}

void PullSession::start(const v1::PullStart& m, const Sink& sink) {
    if (started_) throw TransferError(Code::failed_precondition, "a second start in one pull");
    started_ = true;
    if (const std::string why = name_problem(m.name()); !why.empty())
        throw TransferError(Code::invalid_argument, fmt::format("name refused: {}", why));
    name_ = m.name();
    manifest_ = name_;
    auto info = store_.find(name_);
    if (!info) {
        // A file of a snapshot (store put, backup): the newest version of
        // that path, its content's manifest with the file's own metadata.
        if (const auto latest = store::find_latest(store_, name_); latest && latest->node.type == "file") {
            manifest_ = latest->node.content;
            info = store_.find(manifest_);
            if (info) {
                info->mode = latest->node.mode;
                info->mtime_ns = latest->node.mtime_ns;
            }
        }
    }
    if (!info) throw TransferError(Code::not_found, fmt::format("no file named '{}' on the server", name_));
    v1::PullReply reply;
    auto* h = reply.mutable_header();
    h->set_size(info->size);
    h->set_digest(info->digest.data(), info->digest.size());
    h->set_mode(info->mode);
    h->set_mtime_ns(info->mtime_ns);
    h->set_chunks(info->chunks);
    sink(reply);
    if (m.have_size() == info->size && m.have_digest().size() == info->digest.size() &&
        std::memcmp(m.have_digest().data(), info->digest.data(), info->digest.size()) == 0) {
        // The client has the file: nothing to list.
        v1::PullReply last;
        last.mutable_end();
        sink(last);
        finished_ = true;
        return;
    }
    cursor_ = std::make_unique<ManifestCursor>(dir_, options_, manifest_, kPullListChunks);
    current_ = next_list();
    if (current_) {
        send_list(*current_, sink);
    } else {
        v1::PullReply last;
        last.mutable_end();
        sink(last);
        finished_ = true;
    }
}

std::optional<PullSession::List> PullSession::next_list() {
    List list;
    std::uint64_t bytes = 0;
    for (;;) {
        if (batch_pos_ == batch_.ids.size()) {
            batch_pos_ = 0;
            batch_ = {};
            try {
                if (!cursor_->next(batch_)) break;
            } catch (const store::NotFoundError&) {
                throw TransferError(Code::aborted, fmt::format("'{}' was removed during the pull", name_));
            }
        }
        const std::uint32_t size = batch_.sizes[batch_pos_];
        if (!list.ids.empty() && (list.ids.size() == kPullListChunks || bytes + size > max_list_bytes_)) break;
        list.ids.push_back(batch_.ids[batch_pos_]);
        list.sizes.push_back(size);
        bytes += size;
        ++batch_pos_;
    }
    if (list.ids.empty()) return std::nullopt;
    if (store_.info().encrypted()) add_plain_ids(list);
    return list;
}

void PullSession::add_plain_ids(List& list) const {
    list.plain.resize(list.ids.size());
    try {
        store_.read_chunks(list.ids, store::Store::ChunkForm::raw, [&](std::size_t i, const store::StoredChunk& c) {
            const store::ChunkId plain = store::chunk_id_of(c.bytes);
            // (the raw form checks the record, not the id: a record under
            // another id of the same size would pass that)
            if (store_.id_of_plain(plain) != list.ids[i])
                throw store::DamageError(fmt::format("'{}': chunk {} holds another chunk's bytes (its id does not "
                                                     "match them)",
                                                     name_, store::to_hex(list.ids[i])));
            list.plain[i] = plain;
        });
    } catch (const store::NotFoundError& e) {
        throw TransferError(Code::aborted, fmt::format("'{}' changed during the pull: {}", name_, e.what()));
    }
}

void PullSession::send_list(const List& list, const Sink& sink) {
    v1::PullReply reply;
    auto* c = reply.mutable_chunks();
    std::string ids;
    ids.reserve(list.ids.size() * 32);
    for (const auto& id : list.wire_ids()) append_id(ids, id);
    c->set_ids(std::move(ids));
    c->mutable_sizes()->Add(list.sizes.begin(), list.sizes.end());
    sink(reply);
}

void PullSession::want(const v1::Want& m, const Sink& sink) {
    if (!current_) throw TransferError(Code::failed_precondition, "a want before the file started");
    const std::vector<bool> wanted = read_bitmap(m.bitmap(), current_->ids.size(), m.count());
    const List list = std::move(*current_);
    current_ = next_list();
    if (current_) send_list(*current_, sink);
    std::vector<store::ChunkId> ids;
    std::vector<store::ChunkId> wire;  // (an encrypted store's: the plain ids)
    ids.reserve(m.count());
    for (std::size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i]) {
            ids.push_back(list.ids[i]);
            if (!list.plain.empty()) wire.push_back(list.plain[i]);
        }
    v1::PullReply reply;
    ChunkPacker packer([&](v1::Chunks& chunks) {
        reply.mutable_data()->Swap(&chunks);
        sink(reply);
        reply.Clear();
    });
    try {
        store_.read_chunks(ids, store::Store::ChunkForm::stored, [&](std::size_t k, const store::StoredChunk& c) {
            packer.add(wire.empty() ? ids[k] : wire[k], c.raw_size, c.codec == store::Codec::raw, c.bytes);
        });
    } catch (const store::NotFoundError& e) {
        throw TransferError(Code::aborted, fmt::format("'{}' changed during the pull: {}", name_, e.what()));
    }
    packer.flush();
    bytes_sent_ += packer.payload_bytes();
    if (!current_) {
        v1::PullReply last;
        last.mutable_end();
        sink(last);
        finished_ = true;
    }
}

}  // namespace cdc::transfer
