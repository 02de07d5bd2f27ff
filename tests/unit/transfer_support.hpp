// SPDX-License-Identifier: Apache-2.0
// Helpers of the transfer tests: the client's push and pull logic talking to
// the server's sessions in process (no gRPC), and hand-made requests.
#pragma once

#include "store_support.hpp"

#include <client_api.hpp>
#include <pull_session.hpp>
#include <push_session.hpp>

#include <deque>
#include <memory>
#include <optional>

namespace cdc::test {

/// A stream whose other end is a server session in this process: a write is
/// handled at once, its replies wait for read(). A refused request ends the
/// stream like gRPC would: later writes fail and finish() throws the error.
template <class Session, class Out, class In>
class LocalStream final : public transfer::MessageStream<Out, In> {
public:
    LocalStream(const std::filesystem::path& dir, const store::OpenOptions& o) : session_(dir, o) {}
    void write(const Out& m) override {
        if (error_) throw *error_;
        this->wire_sent += m.ByteSizeLong() + 5;
        try {
            session_.handle(m, [&](const In& r) { replies_.push_back(r); });
        } catch (const transfer::TransferError& e) {
            fail(e);
        } catch (const store::DamageError& e) {
            fail(transfer::TransferError(transfer::Code::data_loss, e.what()));
        } catch (const std::exception& e) {
            fail(transfer::TransferError(transfer::Code::internal, e.what()));
        }
    }
    bool read(In& m) override {
        if (replies_.empty()) return false;
        m = std::move(replies_.front());
        replies_.pop_front();
        this->wire_received += m.ByteSizeLong() + 5;
        return true;
    }
    void writes_done() override {}
    void finish() override {
        if (error_) throw *error_;
    }
    void cancel() override { abort_session(); }
    Session& session() { return session_; }

private:
    void fail(const transfer::TransferError& e) {
        error_ = e;
        replies_.clear();
        abort_session();
    }
    void abort_session() {
        if constexpr (requires { session_.abort(); }) session_.abort();
    }

    Session session_;
    std::deque<In> replies_;
    std::optional<transfer::TransferError> error_;
};

using LocalPush = LocalStream<transfer::PushSession, transfer::v1::PushRequest, transfer::v1::PushReply>;
using LocalPull = LocalStream<transfer::PullSession, transfer::v1::PullRequest, transfer::v1::PullReply>;

/// What Info would say about the store at `dir`.
inline transfer::ServerParams params_of(const std::filesystem::path& dir) {
    const store::Store s = store::Store::open(dir);
    const auto& i = s.info();
    transfer::ServerParams p;
    p.algorithm = i.algorithm;
    p.profile = i.profile;
    p.zstd_level = i.zstd_level;
    p.store_id = i.store_id;
    p.max_message_bytes = static_cast<std::uint32_t>(transfer::kMaxMessageBytes);
    p.max_list_chunks = static_cast<std::uint32_t>(transfer::kMaxListChunks);
    p.group_lists = true;
    return p;
}

/// Pushes files through in-process streams.
inline transfer::PushReport local_push(const std::filesystem::path& dir, const std::vector<transfer::PushInput>& in,
                                       const transfer::PushOptions& o = {}, const store::OpenOptions& open = {}) {
    return transfer::push_files([&] { return std::make_unique<LocalPush>(dir, open); }, params_of(dir), in, o);
}

inline transfer::PullReport local_pull(const std::filesystem::path& dir, const std::string& name,
                                       const std::filesystem::path& out, const transfer::PullOptions& o = {}) {
    LocalPull stream(dir, {});
    return transfer::pull_file(stream, params_of(dir), name, out, o);
}

// ---- hand-made requests

inline transfer::v1::PushRequest start_request(const std::string& name) {
    transfer::v1::PushRequest r;
    r.mutable_start()->set_name(name);
    r.mutable_start()->set_mode(0644);
    return r;
}

inline transfer::v1::PushRequest list_request(const std::vector<std::vector<std::uint8_t>>& chunks) {
    transfer::v1::PushRequest r;
    std::string ids;
    for (const auto& c : chunks) {
        transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(c))));
        r.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(c.size()));
    }
    r.mutable_chunks()->set_ids(ids);
    return r;
}

/// A GroupList of `chunks` cut as a client cuts them (protocol.hpp); the
/// groups' chunk indices go to `groups` when given.
inline transfer::v1::PushRequest group_request(const std::vector<std::vector<std::uint8_t>>& chunks,
                                               std::vector<std::pair<std::size_t, std::size_t>>* groups = nullptr) {
    std::vector<store::ChunkId> ids;
    for (const auto& c : chunks) ids.push_back(store::chunk_id_of(std::as_bytes(std::span(c))));
    transfer::v1::PushRequest r;
    auto* m = r.mutable_groups();
    std::string digests;
    transfer::for_each_group(ids, [&](std::size_t a, std::size_t b) {
        transfer::append_id(digests, transfer::group_digest(std::span(ids).subspan(a, b - a)));
        m->add_counts(static_cast<std::uint32_t>(b - a));
        std::uint64_t bytes = 0;
        for (std::size_t k = a; k < b; ++k) bytes += chunks[k].size();
        m->add_bytes(bytes);
        if (groups) groups->emplace_back(a, b);
    });
    m->set_digests(digests);
    return r;
}

/// `r`'s group digests cut to their first `width` bytes (what a client
/// sends a server whose Info says group_digest_bytes = 16).
inline transfer::v1::PushRequest short_digests(transfer::v1::PushRequest r, std::size_t width = 16) {
    const std::string& full = r.groups().digests();
    std::string cut;
    for (std::size_t at = 0; at + 32 <= full.size(); at += 32) cut.append(full, at, width);
    r.mutable_groups()->set_digests(cut);
    return r;
}

/// One chunk sent raw, under the id of `claimed` (its own bytes when `claimed` is empty).
inline transfer::v1::PushRequest data_request(const std::vector<std::uint8_t>& bytes,
                                              const std::vector<std::uint8_t>& claimed = {}) {
    transfer::v1::PushRequest r;
    auto* c = r.mutable_data()->add_chunks();
    const auto id = store::chunk_id_of(std::as_bytes(std::span(claimed.empty() ? bytes : claimed)));
    c->set_id(id.data(), id.size());
    c->set_raw_size(static_cast<std::uint32_t>(bytes.size()));
    c->set_raw(true);
    c->set_payload_size(static_cast<std::uint32_t>(bytes.size()));
    c->set_piece(bytes.data(), bytes.size());
    return r;
}

inline transfer::v1::PushRequest end_request(const std::vector<std::uint8_t>& whole) {
    transfer::v1::PushRequest r;
    r.mutable_end()->set_size(whole.size());
    const auto d = store::chunk_id_of(std::as_bytes(std::span(whole)));
    r.mutable_end()->set_digest(d.data(), d.size());
    return r;
}

}  // namespace cdc::test
