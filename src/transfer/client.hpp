// SPDX-License-Identifier: Apache-2.0
// A client of a cdc transfer server (cdc serve): one gRPC channel, the calls
// of the protocol. The header does not include gRPC.
#pragma once

#include "client_api.hpp"
#include "tree_pull.hpp"

#include <cdc/source.hpp>

#include <memory>
#include <string>
#include <vector>

namespace cdc::transfer {

struct ClientOptions {
    std::string address;            ///< HOST:PORT
    bool tls = false;               ///< TLS, with the system's roots unless ca_pem is given
    std::string ca_pem;             ///< trusted certificate(s) (PEM): implies tls
    std::string server_name;        ///< the name the server's certificate must carry (default: HOST)
    std::string token;              ///< sent as "authorization: Bearer <token>"
    /// The largest message the client sends / accepts (default: gRPC's 4 MiB
    /// receive limit; `cdc bench transfer` raises it for the seed's unary call).
    std::size_t max_message_bytes = 0;
    /// A call gives up when the server has let one of its reads or writes
    /// wait this long (the client's own work between them does not count):
    /// a server that accepts a stream and never answers cannot hold the
    /// client forever. 0: never.
    double timeout_seconds = 300;
};

/// One file on the server.
struct RemoteFile {
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
    store::ChunkId digest{};
    std::uint64_t chunks = 0;
    std::int64_t committed_ns = 0;
};

/// A path of a snapshot on the server (SnapshotList).
struct RemoteNode {
    std::string path;  ///< from the snapshot's root, starting with '/'
    std::string type;
    std::uint32_t mode = 0;
    std::uint32_t uid = 0, gid = 0;
    std::string user, group;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string target;
    std::string digest;  ///< hex
};

struct HashResult {
    store::ChunkId digest{};
    std::uint64_t bytes = 0;       ///< as counted by the server
    std::uint64_t wire_sent = 0;
    double seconds = 0;
};

class Client {
public:
    /// Creates the channel (connects lazily). OptionError if a token would
    /// travel in clear to an address outside the loopback interface.
    explicit Client(const ClientOptions& options);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// The store's parameters (the first call checks that the server answers
    /// and accepts the token: TransferError otherwise).
    const ServerParams& params();
    std::vector<RemoteFile> list(const std::string& prefix);
    /// BLAKE3 of the bytes of `reader`, streamed in pieces of 1 MiB and
    /// hashed by the server as they arrive (nothing is stored).
    HashResult hash(Reader& reader, const TransferProgressFn& progress = {});
    /// The same as one unary message holding all of `bytes` (the seed's way).
    HashResult hash_unary(std::span<const std::byte> bytes);
    PushReport push(const std::vector<PushInput>& inputs, const PushOptions& options);
    /// A tree as one snapshot (push_tree in client_api.hpp).
    TreePushReport push_tree(const TreePushOptions& options);
    PullReport pull(const std::string& name, const std::filesystem::path& out, const PullOptions& options);
    PullReport pull_to_fd(const std::string& name, int fd, const PullOptions& options);
    /// The server store's snapshots, oldest first.
    std::vector<store::Snapshot> snapshots();
    /// The paths of a snapshot at and below `path` (`recursive` false: the
    /// path and, for a directory, its children); the snapshot's header in `snap`.
    std::vector<RemoteNode> snapshot_list(const std::string& snapshot, const std::string& path, bool recursive,
                                          store::Snapshot& snap);
    /// A path of a snapshot, whole, into `out` (tree_pull.hpp).
    TreePullReport pull_tree(const std::string& snapshot, const std::string& path, const std::filesystem::path& out,
                             const TreePullOptions& options);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdc::transfer
