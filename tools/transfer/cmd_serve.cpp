// cdc serve: a chunk store served over gRPC (push, pull, ls, hash) until
// SIGINT or SIGTERM.
#include "secret_files.hpp"
#include "commands.hpp"

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
    std::string key_file;
    unsigned max_streams = 16;
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
    o.listen = a.listen;
    if (a.tls_cert.empty() != a.tls_key.empty()) throw UsageError("--tls-cert and --tls-key go together");
    if (!a.tls_cert.empty()) {
        o.tls_cert_pem = read_pem_file(a.tls_cert, "certificate file", false);
        o.tls_key_pem = read_pem_file(a.tls_key, "private key file", true);
    }
    if (!a.token_file.empty()) o.token = read_token_file(a.token_file);
    o.max_streams = a.max_streams;
    if (!(a.idle_timeout >= 0)) throw UsageError(fmt::format("--idle-timeout = {} is invalid: must be >= 0", a.idle_timeout));
    o.idle_timeout_seconds = a.idle_timeout;
    o.max_message_bytes = a.bench_max_message;
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
    }
    const std::string host = a.listen.substr(0, a.listen.rfind(':'));
    const std::string where = fmt::format("{}:{}", host, server->port());
    if (!a.quiet)
        fmt::print(stderr, "cdc serve: store '{}' on {} ({}, {}{})\n", a.store, where,
                   o.tls_cert_pem.empty() ? "plaintext" : "TLS", o.token.empty() ? "no token" : "token required",
                   o.max_message_bytes ? fmt::format(", messages up to {} bytes for the benchmark", o.max_message_bytes)
                                       : "");
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
                  "clients must send this token (a file with one line of 16 to 4096 printable characters)")
        ->type_name("FILE");
    c->add_option("--key-file", a->key_file, "the key of a keyed store (needed to push into it)")->type_name("FILE");
    add_count_option(*c, "--max-streams", a->max_streams, 1, 1'000'000, "streams served at once; more are refused (busy)");
    c->add_option("--idle-timeout", a->idle_timeout,
                  "cancel a stream that receives nothing for this many seconds (0: never); a push holds the "
                  "store's shared lock, which gc waits for")
        ->type_name("SECONDS")
        ->capture_default_str();
    c->add_option("--port-file", a->port_file, "write the port listened on to this file once listening")
        ->type_name("FILE");
    add_size_option(*c, "--bench-max-message", a->bench_max_message, 0, std::uint64_t{2} << 30, "")
        ->group("");  // cdc bench transfer only
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Runs until SIGINT or SIGTERM (streams in flight get 5 s to finish). Messages are "
                           "limited to gRPC's default 4 MiB: files travel as chunks. Logs one line per stream on "
                           "stderr. docs/TRANSFER.md shows how to make a certificate.",
                  .examples = {{"cdc serve --store /srv/store", "serve on 127.0.0.1:7777"},
                               {"cdc serve --store /srv/store --listen 0.0.0.0:7777 --tls-cert cert.pem --tls-key "
                                "key.pem --token-file token",
                                "serve the network: TLS and a token"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_serve(*a); }); });
}

}  // namespace cdc::cli
