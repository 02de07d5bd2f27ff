// SPDX-License-Identifier: Apache-2.0
// The transfer server (cdc serve): a gRPC server over one chunk store. Each
// stream runs a session (push_session.hpp, pull_session.hpp) on the
// server's thread for that stream. The header does not include gRPC.
#pragma once

#include <cdc/store.hpp>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace cdc::transfer {

/// The longest idle timeout (a year).
inline constexpr double kMaxIdleTimeoutSeconds = 365.0 * 24 * 3600;

struct ServerOptions {
    std::filesystem::path store_dir;
    /// A keyed store's key (needed to push into it); an encrypted store's
    /// password (called once: the sessions share the key it unlocks).
    store::OpenOptions open;
    std::string listen = "127.0.0.1:7777";
    std::string tls_cert_pem;         ///< TLS when both are set
    std::string tls_key_pem;
    std::string token;                ///< required from clients when set
    /// A second token that may add (push new names, read, list, pull) but
    /// never replace what the store holds; needs `token`.
    std::string append_token;
    unsigned max_streams = 16;        ///< concurrent push/pull/hash/ls streams; more are refused
    /// Streams one client (a peer address, its port aside) may hold at once,
    /// so that one cannot take every slot; 0: half of max_streams (at least 1).
    unsigned max_client_streams = 0;
    /// A stream that receives nothing for this long is cancelled (a push
    /// holds the store's shared lock: gc waits for it). 0: never; at most
    /// kMaxIdleTimeoutSeconds (OptionError beyond, inf or nan).
    double idle_timeout_seconds = 600;
    /// The largest message accepted: gRPC's 4 MiB default. Raised only by
    /// `cdc bench transfer`, to reproduce the seed's single huge message.
    std::size_t max_message_bytes = 0;
    /// One line per finished or failed stream (nullptr: silent).
    std::function<void(const std::string&)> log;
};

class Server {
public:
    /// Opens the store, checks the policy (an address outside the loopback
    /// interface needs TLS and a token: OptionError) and starts listening
    /// (StoreError / TransferError if it cannot).
    explicit Server(ServerOptions options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    /// The port listened on (useful with port 0: any free port).
    int port() const noexcept;
    /// The store is keyed and the server has no key: it refuses pushes.
    bool key_missing() const noexcept;
    /// The store is encrypted at rest (the server holds its unlocked key).
    bool encrypted() const noexcept;
    /// Blocks until shutdown() (from another thread or a signal handler thread).
    void wait();
    /// Stops accepting streams, cancels those running after `grace_seconds`.
    void shutdown(double grace_seconds = 5);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdc::transfer
