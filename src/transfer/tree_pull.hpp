// SPDX-License-Identifier: Apache-2.0
// The client's side of a tree pull (PullTree: a path of a snapshot, whole),
// below gRPC, on a MessageStream as push and pull (client_api.hpp).
#pragma once

#include "client_api.hpp"

#include <cdc/snapshot.hpp>

namespace cdc::transfer {

using TreePullStream = MessageStream<v1::PullTreeRequest, v1::PullTreeReply>;

struct TreePullOptions {
    std::optional<Key> key;                    ///< a keyed store's key (to chunk the seeds alike)
    std::vector<std::filesystem::path> seeds;  ///< files whose chunks may be reused
    /// The regular files already in OUT are seeds too (they are replaced by
    /// the restore; their chunks need not travel).
    bool seed_output = true;
    store::SnapshotRestoreOptions restore;
    TransferProgressFn progress;
};

struct TreePullReport {
    store::Snapshot snapshot;
    store::SnapshotRestoreReport restore;
    std::uint64_t contents = 0;       ///< contents asked for
    std::uint64_t bytes = 0;          ///< their bytes
    std::uint64_t chunks = 0;         ///< chunks listed
    std::uint64_t chunks_sent = 0;    ///< chunks that travelled
    std::uint64_t bytes_sent = 0;     ///< their raw bytes
    std::uint64_t payload_sent = 0;   ///< their size as sent
    std::uint64_t bytes_reused = 0;   ///< raw bytes taken from the seeds (or repeated in a list)
    std::uint64_t seed_files = 0;
    std::uint64_t seed_bytes = 0;     ///< bytes of the seeds chunked
    std::uint64_t wire_sent = 0;
    std::uint64_t wire_received = 0;
    double seconds = 0;
};

/// A snapshot's header as it travelled (its totals: files, dirs, others, bytes).
store::Snapshot snapshot_from_info(const v1::SnapshotInfo& m);

/// Restores `path` of snapshot `snapshot` (an id, a prefix, "latest") into
/// `out` as `store get SNAP[:PATH] -o OUT` does (store::ImportedTree: nothing
/// written outside OUT, every tree and content checked), fetching only the
/// chunks no seed holds. TransferError when the server refuses or the
/// stream breaks (what was restored stays), or what it sent fails a check;
/// problems of single entries are in report.restore. A thread of its own
/// reads the stream while this one writes wants, as a gRPC stream allows (the
/// in-process test stream, whose read() ends when no reply waits, does not).
TreePullReport pull_tree(TreePullStream& stream, const ServerParams& params, const std::string& snapshot,
                         const std::string& path, const std::filesystem::path& out, const TreePullOptions& options);

}  // namespace cdc::transfer
