// SPDX-License-Identifier: Apache-2.0
// What the clients of cdc-transfer share: the connection options (address,
// token, TLS, key), the error mapping to exit codes.
#pragma once

#include "cli_basics.hpp"
#include "cli_docs.hpp"
#include "cli_options.hpp"
#include "escape.hpp"
#include "progress_line.hpp"

#include <client.hpp>

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

namespace cdc::cli {

struct ConnectArgs {
    std::string address;
    std::string token_file;
    bool tls = false;
    std::string tls_ca;
    std::string tls_server_name;
    std::string key_file;
    double timeout = 300;
};

/// Adds `flag` (--to, --from or --via: HOST:PORT, required), --token-file,
/// --tls, --tls-ca, --tls-server-name, --key-file and --timeout.
void add_connect_options(CLI::App& cmd, ConnectArgs& args, const std::string& flag, const std::string& help);

/// The client for these options: the token from --token-file or CDC_TOKEN,
/// else, to a loopback address, the user's own token (default_token), if any.
std::unique_ptr<transfer::Client> make_client(const ConnectArgs& args);
/// The key of --key-file, if given.
std::optional<Key> key_of(const ConnectArgs& args);

/// Runs f() and maps a TransferError to its exit code (not found, invalid
/// argument: usage, 2; the rest: failure, 4) after printing it.
int with_transfer_errors(const std::function<int()>& f);

/// "12.3 MB/s" of `bytes` in `seconds`.
std::string rate(std::uint64_t bytes, double seconds);

}  // namespace cdc::cli
