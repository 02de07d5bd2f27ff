// SPDX-License-Identifier: Apache-2.0
// The server's side of one PullTree stream (a path of a snapshot, whole),
// below gRPC: the path's entry and its trees, then, for the contents the
// client asks for (by digest, in the order its restore needs them), their
// chunks in lists that run across files; for each list the chunks the
// client wants, read from the store as stored.
#pragma once

#include "cdc_transfer.pb.h"
#include "protocol.hpp"

#include <cdc/snapshot_wire.hpp>
#include <cdc/store.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cdc::transfer {

/// Contents one PullTree may ask for (8 bytes each on the server).
inline constexpr std::size_t kMaxTreeFiles = std::size_t{1} << 24;
/// Digests in one TreeFiles message.
inline constexpr std::size_t kMaxTreeFilesPerMessage = 8192;
/// The tree records of one PullTree (what a client buffers before it restores).
inline constexpr std::uint64_t kMaxTreeBytes = std::uint64_t{1} << 30;

/// A snapshot's header as it travels.
void fill_snapshot_info(const store::Snapshot& s, v1::SnapshotInfo* out);

class TreePullSession {
public:
    using Sink = std::function<void(const v1::PullTreeReply&)>;

    TreePullSession(const std::filesystem::path& store_dir, const store::OpenOptions& options);
    TreePullSession(const TreePullSession&) = delete;
    TreePullSession& operator=(const TreePullSession&) = delete;

    /// Handles one request; replies go to `sink`. TransferError for a request
    /// the protocol does not allow (NotFoundError, OptionError from the
    /// store for an unknown snapshot or path).
    void handle(const v1::PullTreeRequest& request, const Sink& sink);
    bool finished() const noexcept { return finished_; }
    std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }

private:
    struct List {
        std::vector<store::ChunkId> ids;
        std::vector<std::uint32_t> sizes;
    };
    void start(const v1::TreeStart& m, const Sink& sink);
    void files(const v1::TreeFiles& m, const Sink& sink);
    void want(const v1::Want& m, const Sink& sink);
    std::optional<List> next_list();
    void send_list_or_end(const Sink& sink);

    store::Store store_;
    std::uint64_t max_list_bytes_ = 0;
    store::SnapshotExport export_;
    std::vector<const std::string*> files_;  // the manifests of the contents asked for, in order
    std::size_t next_file_ = 0;
    std::vector<store::ChunkId> file_ids_;   // the chunks of the content being listed
    std::vector<std::uint32_t> file_sizes_;
    std::size_t file_pos_ = 0;
    std::optional<List> current_;
    std::uint64_t bytes_sent_ = 0;
    bool started_ = false;
    bool files_done_ = false;
    bool finished_ = false;
};

}  // namespace cdc::transfer
