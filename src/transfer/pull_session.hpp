// SPDX-License-Identifier: Apache-2.0
// The server's side of one Pull stream, below gRPC: the file's header, then
// its chunk list in lists, and for each list the chunks the client wants,
// read from the store as stored (zstd frames travel as they are). The next
// list goes out before the data of the current one, so that the client
// decides what it wants while the data arrives.
//
// An encrypted store's catalog holds keyed ids only: a list's chunks are
// read and hashed for their plain ids before the list goes out, and read
// again (as stored) for the chunks the client wants.
#pragma once

#include "cdc_transfer.pb.h"
#include "manifest_cursor.hpp"
#include "protocol.hpp"

#include <cdc/store.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

namespace cdc::transfer {

class PullSession {
public:
    using Sink = std::function<void(const v1::PullReply&)>;

    PullSession(const std::filesystem::path& store_dir, const store::OpenOptions& options);
    ~PullSession();
    PullSession(const PullSession&) = delete;
    PullSession& operator=(const PullSession&) = delete;

    /// Handles one request; replies go to `sink`. TransferError (not_found for
    /// an unknown name) for a request the protocol does not allow.
    void handle(const v1::PullRequest& request, const Sink& sink);
    bool finished() const noexcept { return finished_; }
    /// Raw and payload bytes of the chunks sent.
    std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }

private:
    struct List {
        std::vector<store::ChunkId> ids;    // the store's
        std::vector<std::uint32_t> sizes;
        // An encrypted store's: the chunks' plain BLAKE3, the ids the client
        // sees (empty for a plain store, whose ids are those).
        std::vector<store::ChunkId> plain;
        const std::vector<store::ChunkId>& wire_ids() const { return plain.empty() ? ids : plain; }
    };
    /// An encrypted store: the plain ids of the list's chunks, read, opened
    /// and hashed (the catalog has only keyed ids), each checked against
    /// its keyed id.
    void add_plain_ids(List& list) const;
    void start(const v1::PullStart& m, const Sink& sink);
    void want(const v1::Want& m, const Sink& sink);
    /// The next list from the cursor (at most kPullListChunks and the list byte bound).
    std::optional<List> next_list();
    void send_list(const List& list, const Sink& sink);

    std::filesystem::path dir_;
    store::OpenOptions options_;
    store::Store store_;
    std::uint64_t max_list_bytes_ = 0;
    std::string name_;
    std::string manifest_;  ///< the manifest read: name_, or the content of a snapshot's file of that path
    std::unique_ptr<ManifestCursor> cursor_;
    ManifestCursor::Batch batch_;  // read from the cursor, not listed yet
    std::size_t batch_pos_ = 0;
    std::optional<List> current_;  // listed, its want not received yet
    std::uint64_t bytes_sent_ = 0;
    bool started_ = false;
    bool finished_ = false;
};

}  // namespace cdc::transfer
