// SPDX-License-Identifier: Apache-2.0
// cdc push: files, trees and stdin into the store of a cdc serve, sending
// only the chunks it lacks.
#include "put_inputs.hpp"
#include "commands.hpp"

#include <protocol.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {

struct PushArgs {
    ConnectArgs connect;
    std::vector<std::string> paths;
    std::string name;
    bool follow_symlinks = false;
    WalkArgs walk;
    unsigned threads = 0;
    bool id_lists = false;
    bool json = false;
    bool quiet = false;
};

int run_push(const PushArgs& a) {
    // --name is the user's: a name the server refuses is a usage error (a
    // tree's file whose name it refuses is skipped, the rest pushed).
    WalkOptions walk;
    walk.follow_symlinks = a.follow_symlinks;
    walk.one_file_system = a.walk.one_file_system;
    walk.exclude = walk_excludes(a.walk);
    const PutInputs in = collect_put_inputs(a.paths, a.name, walk);
    if (!a.name.empty())
        if (const std::string why = transfer::name_problem(in.name); !why.empty())
            throw UsageError(fmt::format("name refused: {}", why));
    auto client = make_client(a.connect);
    std::vector<transfer::PushInput> inputs;
    for (const auto& f : in.files) inputs.push_back({f.path, f.name, f.size, f.inside_tree, a.follow_symlinks});
    transfer::PushOptions o;
    o.key = key_of(a.connect);
    o.threads = a.threads;
    o.group_lists = !a.id_lists;
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    if (line.enabled())
        o.progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("push: {} / {}  {}  sent {}  {}/{} files", mb(p.bytes_done), mb(p.bytes_total),
                                  rate(p.bytes_done, p.seconds), mb(p.bytes_sent), p.files_done, p.files_total));
        };
    const transfer::PushReport r = client->push(inputs, o);
    line.clear();
    std::vector<std::pair<std::string, std::string>> errors;
    for (const auto& e : in.errors) errors.emplace_back(e.path, e.message);
    for (const auto& e : r.errors) errors.emplace_back(e.path, e.message);
    for (const auto& [path, message] : errors) print_error(fmt::format("{}: {} (skipped)", path, message));
    if (!a.quiet)
        for (const auto& w : in.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
    const std::uint64_t reused = r.bytes_read - r.bytes_sent;
    if (a.json) {
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : r.files) {
            nlohmann::json j = {{"bytes", f.bytes},
                                {"chunks", f.chunks},
                                {"chunks_sent", f.chunks_sent},
                                {"bytes_sent", f.bytes_sent},
                                {"payload_sent", f.payload_sent},
                                {"new_chunks", f.new_chunks},
                                {"unchanged", f.unchanged},
                                {"identical", f.identical}};
            tools::put_name(j, "name", f.name);
            tools::put_name(j, "path", f.path);
            files.push_back(std::move(j));
        }
        nlohmann::json errs = nlohmann::json::array();
        for (const auto& [path, message] : errors) {
            nlohmann::json e;
            tools::put_name(e, "path", path);
            e["error"] = tools::escape_text(message);
            errs.push_back(std::move(e));
        }
        const nlohmann::json j = {{"files", files},
                                  {"file_count", r.files.size()},
                                  {"bytes_read", r.bytes_read},
                                  {"bytes_sent", r.bytes_sent},
                                  {"bytes_reused", reused},
                                  {"payload_sent", r.payload_sent},
                                  {"chunks", r.chunks},
                                  {"chunks_sent", r.chunks_sent},
                                  {"wire_bytes_sent", r.wire_sent},
                                  {"wire_bytes_received", r.wire_received},
                                  {"seconds", r.seconds},
                                  {"excluded", in.excluded},
                                  {"errors", errs}};
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("pushed {} file(s): {} read, {} sent ({} compressed, {} on the wire), {} reused; {} chunks ({} "
                   "sent) in {:.2f} s ({})\n",
                   r.files.size(), mb(r.bytes_read), mb(r.bytes_sent), mb(r.payload_sent), mb(r.wire_sent),
                   mb(reused), r.chunks, r.chunks_sent, r.seconds, rate(r.bytes_read, r.seconds));
    }
    finish_stdout();
    return errors.empty() ? kExitOk : kExitPartial;
}

}  // namespace

void add_push_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<PushArgs>();
    auto* c = app.add_subcommand("push", "send files, trees or - (stdin) to a cdc serve, only the chunks it lacks");
    add_connect_options(*c, a->connect, "--to", "HOST:PORT of the server");
    c->add_option("PATH", a->paths, "files, directories or - for standard input")->required()->type_name("");
    c->add_option("--name", a->name,
                  "the name on the server (one PATH; for a tree, the prefix of its files' names; required for -)")
        ->type_name("NAME");
    c->add_flag("--follow-symlinks", a->follow_symlinks, "follow symbolic links inside directories");
    add_walk_options(*c, a->walk);
    add_count_option(*c, "--threads", a->threads, 0, 4096, "compression threads (0: one per core)");
    c->add_flag("--id-lists", a->id_lists,
                "list every chunk id (~34 bytes a chunk) instead of digests of groups of chunks the server "
                "compares with its file of that name (~2-3 bytes a chunk where they equal); for comparison");
    add_json_flag(*c, a->json,
                  "{files: [...], bytes_read, bytes_sent, bytes_reused, chunks, chunks_sent, payload_sent, "
                  "wire_bytes_sent, wire_bytes_received, seconds, excluded, errors}");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Names as with cdc store put: a file by its path made relative, a tree's files by their paths "
                           "inside it. Each file is chunked with the store's parameters; the server checks every "
                           "chunk it receives (BLAKE3) and the whole file's BLAKE3 before the file appears. An "
                           "interrupted push, run again, sends only what the server still lacks. A file that changes while "
                           "it is read is named and not committed.",
                  .examples = {{"cdc push --to 127.0.0.1:7777 disk.img", "send the chunks the server lacks"},
                               {"cdc push --to store.example:7777 --tls-ca cert.pem --token-file token ~/project "
                                "--name p",
                                "a tree, over TLS, as p/<path inside it>"}},
                  .exit_codes = exit_codes({partial_exit()})});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_push(*a); }); });
}

}  // namespace cdc::cli
