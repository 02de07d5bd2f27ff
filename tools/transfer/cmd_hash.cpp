// SPDX-License-Identifier: Apache-2.0
// cdc hash: the BLAKE3 of a file computed by a cdc serve while the bytes
// stream in (the seed's hashing service; nothing is stored).
#include "commands.hpp"

#include <cdc/source.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

struct HashArgs {
    ConnectArgs connect;
    std::string path;
    bool json = false;
    bool quiet = false;
};

int run_hash(const HashArgs& a) {
    const bool is_stdin = a.path == "-";
    const int fd = is_stdin ? STDIN_FILENO : ::open(a.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw UsageError(fmt::format("cannot read '{}': {}", a.path, std::strerror(errno)));
    auto client = make_client(a.connect);
    FdReader reader(fd, is_stdin ? "stdin" : a.path);
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    transfer::TransferProgressFn progress;
    if (line.enabled())
        progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("hash: {}  {}", mb(p.bytes_done), rate(p.bytes_done, p.seconds)));
        };
    transfer::HashResult r;
    try {
        r = client->hash(reader, progress);
    } catch (...) {
        if (!is_stdin) ::close(fd);
        throw;
    }
    if (!is_stdin) ::close(fd);
    line.clear();
    const std::string hex = store::to_hex(r.digest);
    if (a.json) {
        nlohmann::json j = {{"digest", hex},         {"bytes_read", r.bytes},          {"bytes_sent", r.bytes},
                            {"bytes_reused", 0},     {"wire_bytes_sent", r.wire_sent}, {"seconds", r.seconds}};
        tools::put_name(j, "path", a.path);
        fmt::print("{}\n", tools::json_text(j));
    } else {
        fmt::print("{}  {}\n", hex, tools::escape_text(a.path));
        if (!a.quiet)
            fmt::print(stderr, "hashed by the server: {} read, {} sent ({} on the wire), 0 reused in {:.2f} s ({})\n",
                       mb(r.bytes), mb(r.bytes), mb(r.wire_sent), r.seconds, rate(r.bytes, r.seconds));
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_hash_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<HashArgs>();
    auto* c = app.add_subcommand("hash", "BLAKE3 of a file (or -) computed by a cdc serve as the bytes stream in");
    add_connect_options(*c, a->connect, "--via", "HOST:PORT of the server");
    c->add_option("FILE", a->path, "a file, or - for standard input")->required()->type_name("");
    add_json_flag(*c, a->json, "{digest, path, bytes_read, bytes_sent, bytes_reused, wire_bytes_sent, seconds}");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Prints 'DIGEST  FILE' like b3sum. The bytes travel in messages of 1 MiB and are hashed "
                           "as they arrive: the server's memory does not grow with the file (cdc bench transfer "
                           "shows the one-message way).",
                  .examples = {{"cdc hash --via 127.0.0.1:7777 big.iso", "the server's BLAKE3 of big.iso"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_hash(*a); }); });
}

}  // namespace cdc::cli
