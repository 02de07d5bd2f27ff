// SPDX-License-Identifier: Apache-2.0
// cdc serve: a chunk store served over gRPC (push, pull, ls, hash) until
// SIGINT or SIGTERM.
#include "secret_files.hpp"
#include "commands.hpp"
#include "../common/password.hpp"

#include <protocol.hpp>
#include <service.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <limits>
#include <thread>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

struct ServeArgs {
    std::string store;
    std::string listen = "127.0.0.1:7777";
    std::string tls_cert, tls_key;
    std::string token_file;
    std::string append_token_file;
    bool no_token = false;
    std::string key_file;
    std::string password_file;
    unsigned max_streams = 16;
    unsigned max_client_streams = 0;
    double idle_timeout = 600;
    std::string port_file;
    std::uint64_t bench_max_message = 0;
    bool quiet = false;
};

/// Writes `text` to `path` through a temporary file and a rename (a reader
/// polling for the file never sees it half written).
void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = std::string(path).append(".tmp");
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()) || ::close(fd) != 0 ||
        ::rename(tmp.c_str(), path.c_str()) != 0)
        throw IoError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
}

int run_serve(const ServeArgs& a) {
    transfer::ServerOptions o;
    o.store_dir = a.store;
    if (!a.key_file.empty()) o.open.key = read_key_file(a.key_file);
    // Asked only of an encrypted store, once: the sessions share the key it unlocks.
    o.open.password = [&a] {
        const crypto::SecretBytes p = get_password(a.password_file, "--password-file", true, Ask::once, "password");
        return std::string(reinterpret_cast<const char*>(p.span().data()), p.span().size());
    };
    o.listen = a.listen;
    if (a.tls_cert.empty() != a.tls_key.empty()) throw UsageError("--tls-cert and --tls-key go together");
    if (!a.tls_cert.empty()) {
        o.tls_cert_pem = read_pem_file(a.tls_cert, "certificate file", false);
        o.tls_key_pem = read_pem_file(a.tls_key, "private key file", true);
    }
    // A token by default, on the loopback interface too: any local user can
    // reach 127.0.0.1. The user's own token (made at first start, 0600),
    // which the user's clients send there; --no-token for none.
    std::string token_origin;
    if (!a.token_file.empty() && a.no_token) throw UsageError("--token-file and --no-token exclude each other");
    if (!a.token_file.empty()) {
        o.token = read_token_file(a.token_file);
        token_origin = a.token_file;
    } else if (!a.no_token && transfer::is_loopback_address(a.listen) && transfer::address_problem(a.listen).empty()) {
        o.token = default_token(true);
        token_origin = default_token_path();
    }
    if (!a.append_token_file.empty()) {
        if (o.token.empty())
            throw UsageError("--append-token-file needs a full-access token beside it (--token-file, or the user's own "
                             "on the loopback interface; not --no-token)");
        o.append_token = read_token_file(a.append_token_file);
    }
    o.max_streams = a.max_streams;
    if (!(a.idle_timeout >= 0)) throw UsageError(fmt::format("--idle-timeout = {} is invalid: must be >= 0", a.idle_timeout));
    o.max_client_streams = a.max_client_streams;
    o.idle_timeout_seconds = a.idle_timeout;  // (bounded by the server: inf or 1e300 is a usage error)
    o.max_message_bytes = a.bench_max_message;  // (gRPC takes an int: bounded by the option)
    if (!a.quiet) o.log = [](const std::string& line) { fmt::print(stderr, "cdc serve: {}\n", line); };

    // Each stream reading a large file keeps up to an eighth of the soft
    // descriptor limit of pack files open: a server takes all it may have.
    raise_open_files_limit(std::uint64_t{1} << 20);  // the hard limit, if lower

    // Signals go to one thread that shuts the server down; block them
    // before gRPC starts its threads, which inherit the mask.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    std::unique_ptr<transfer::Server> server;
    try {
        server = std::make_unique<transfer::Server>(o);
    } catch (const store::VersionError& e) {
        throw UsageError(e.what());
    } catch (const store::NotFoundError& e) {
        throw UsageError(e.what());
    } catch (const store::PasswordError& e) {
        throw UsageError(e.what());
    }
    const std::string host = a.listen.substr(0, a.listen.rfind(':'));
    const std::string where = fmt::format("{}:{}", host, server->port());
    if (!a.quiet) {
        fmt::print(stderr, "cdc serve: store '{}' on {} ({}, {}{})\n", a.store, where,
                   o.tls_cert_pem.empty() ? "plaintext" : "TLS",
                   o.token.empty() ? std::string("no token: any local user may use it")
                                   : fmt::format("token required: {}", token_origin),
                   o.max_message_bytes ? fmt::format(", messages up to {} bytes for the benchmark", o.max_message_bytes)
                                       : "");
        if (server->encrypted())
            fmt::print(stderr, "cdc serve: the store is encrypted: {}\n",
                       o.token.empty() ? "no token, so clients get no chunker key and cannot push"
                                       : "clients with the token get its chunker key (docs/TRANSFER.md)");
        if (server->key_missing())
            fmt::print(stderr, "cdc serve: the store is keyed and no --key-file was given: pushes are refused\n");
    }
    if (!a.port_file.empty()) write_file_atomically(a.port_file, fmt::format("{}\n", server->port()));
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&stop, &sig);
        if (!a.quiet) fmt::print(stderr, "cdc serve: {} received, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        server->shutdown(5);
    });
    server->wait();
    waiter.join();
    return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<ServeArgs>();
    auto* c = app.add_subcommand("serve", "serve a chunk store (cdc store init) over gRPC: push, pull, ls, hash");
    c->add_option("--store", a->store, "the store's directory")->required()->type_name("DIR");
    c->add_option("--listen", a->listen,
                  "HOST:PORT to listen on (port 0: any free port); outside the loopback interface TLS and a token "
                  "are required")
        ->type_name("HOST:PORT")
        ->capture_default_str();
    c->add_option("--tls-cert", a->tls_cert, "TLS: the server's certificate chain (PEM)")->type_name("FILE");
    c->add_option("--tls-key", a->tls_key, "TLS: the server's private key (PEM)")->type_name("FILE");
    c->add_option("--token-file", a->token_file,
                  "clients must send this token (a file with one line of 16 to 4096 printable characters); default "
                  "on the loopback interface: the user's own token, ~/.config/cdc/token ($XDG_CONFIG_HOME/cdc/token), "
                  "made at first start (0600), which the user's clients send to loopback servers")
        ->type_name("FILE");
    c->add_option("--append-token-file", a->append_token_file,
                  "a second token, append-only: its clients may push new names, list and pull, but never replace a "
                  "file the store holds (refused: exit 4); for the machines that back up into the store")
        ->type_name("FILE");
    c->add_flag("--no-token", a->no_token,
                "on the loopback interface, require no token: any local user may push, pull and list");
    c->add_option("--key-file", a->key_file, "the key of a keyed store (needed to push into it)")->type_name("FILE");
    c->add_option("--password-file", a->password_file,
                  "an encrypted store's password: the file's content (one trailing newline dropped); default: the "
                  "file named by CDC_PASSWORD_FILE, else CDC_PASSWORD, else asked on the terminal; the server holds "
                  "the unlocked key while it runs (docs/TRANSFER.md \"Encrypted stores\")")
        ->type_name("FILE");
    add_count_option(*c, "--max-streams", a->max_streams, 1, 1'000'000, "streams served at once; more are refused (busy)");
    add_count_option(*c, "--max-client-streams", a->max_client_streams, 0, 1'000'000,
                     "streams one client (an address, every port of it; all local clients are one) may hold at once "
                     "(0, the default: half of --max-streams), so that one cannot take every slot");
    c->add_option("--idle-timeout", a->idle_timeout,
                  "cancel a stream that receives nothing for this many seconds (0: never, at most a year); a push "
                  "holds the store's shared lock, which gc waits for")
        ->type_name("SECONDS")
        ->capture_default_str();
    c->add_option("--port-file", a->port_file, "write the port listened on to this file once listening")
        ->type_name("FILE");
    add_size_option(*c, "--bench-max-message", a->bench_max_message, 0,
                    static_cast<std::uint64_t>(std::numeric_limits<int>::max()), "")
        ->group("");  // cdc bench transfer only
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Runs until SIGINT or SIGTERM (streams in flight get 5 s to finish). Messages are "
                           "limited to gRPC's default 4 MiB: files travel as chunks. Logs one line per stream on "
                           "stderr. A token is required on the loopback interface too: without --token-file, the "
                           "user's own (made at first start), which the user's own clients send there by "
                           "themselves; other local users need it (or --no-token). A keyed store served without its "
                           "--key-file refuses pushes. An encrypted store needs its password (--password-file): the server stores sealed "
                           "records, clients send and receive plain chunks; clients that send the token get the "
                           "store's chunker key. docs/TRANSFER.md shows how to make a certificate.",
                  .examples = {{"cdc serve --store /srv/store", "serve on 127.0.0.1:7777 (the user's own token)"},
                               {"cdc serve --store /srv/store --listen 0.0.0.0:7777 --tls-cert cert.pem --tls-key "
                                "key.pem --token-file token",
                                "serve the network: TLS and a token"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_serve(*a); }); });
}

}  // namespace cdc::cli
