// SPDX-License-Identifier: Apache-2.0
#include "connect.hpp"

#include "secret_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cdc::cli {

void add_connect_options(CLI::App& cmd, ConnectArgs& a, const std::string& flag, const std::string& help) {
    cmd.add_option(flag, a.address, help)->required()->type_name("HOST:PORT");
    cmd.add_option("--token-file", a.token_file,
                   "file holding the server's token (default: the CDC_TOKEN environment variable, if set)")
        ->type_name("FILE");
    cmd.add_flag("--tls", a.tls, "use TLS, trusting the system's certificate authorities");
    cmd.add_option("--tls-ca", a.tls_ca, "use TLS, trusting the certificate(s) in this PEM file (e.g. the server's own)")
        ->type_name("FILE");
    cmd.add_option("--tls-server-name", a.tls_server_name,
                   "the name the server's certificate must carry (default: HOST)")
        ->type_name("NAME");
    cmd.add_option("--key-file", a.key_file,
                   "the key of a keyed store (64 hex digits or 32 bytes), to chunk like the server (checked against "
                   "the store's key check value)")
        ->type_name("FILE");
    cmd.add_option("--timeout", a.timeout,
                   "give up when the server leaves a read or write waiting this many seconds (0: never)")
        ->type_name("SECONDS")
        ->capture_default_str();
}

std::unique_ptr<transfer::Client> make_client(const ConnectArgs& a) {
    transfer::ClientOptions o;
    o.address = a.address;
    o.tls = a.tls;
    if (!a.tls_ca.empty()) o.ca_pem = read_pem_file(a.tls_ca, "certificate file", false);
    o.server_name = a.tls_server_name;
    if (!a.token_file.empty())
        o.token = read_token_file(a.token_file);
    else if (const char* env = std::getenv("CDC_TOKEN"); env != nullptr && *env != '\0')
        o.token = check_token(env, "CDC_TOKEN");
    else if (transfer::is_loopback_address(a.address))
        o.token = default_token(false);  // what the user's own loopback server requires
    if (!(a.timeout >= 0 && a.timeout <= 86400 * 365))
        throw UsageError(fmt::format("--timeout {} is invalid: 0 (never) to {} seconds", a.timeout, 86400 * 365));
    o.timeout_seconds = a.timeout;
    return std::make_unique<transfer::Client>(o);
}

std::optional<Key> key_of(const ConnectArgs& a) {
    if (a.key_file.empty()) return std::nullopt;
    return read_key_file(a.key_file);
}

int with_transfer_errors(const std::function<int()>& f) {
    try {
        return f();
    } catch (const transfer::TransferError& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return e.code() == transfer::Code::not_found || e.code() == transfer::Code::invalid_argument ? kExitUsage
                                                                                                     : kExitFailure;
    }
}

std::string rate(std::uint64_t bytes, double seconds) {
    return fmt::format("{:.0f} MB/s", seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0);
}

}  // namespace cdc::cli
