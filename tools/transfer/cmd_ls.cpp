// SPDX-License-Identifier: Apache-2.0
// cdc ls: the files in the store of a cdc serve.
#include "time_text.hpp"
#include "commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {

struct LsArgs {
    ConnectArgs connect;
    std::string prefix;
    bool json = false;
    bool quiet = false;
};

int run_ls(const LsArgs& a) {
    auto client = make_client(a.connect);
    const auto files = client->list(a.prefix);
    if (a.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& f : files)
        {
            nlohmann::json j = {{"size", f.size},
                                {"mode", f.mode},
                                {"mtime_ns", f.mtime_ns},
                                {"digest", store::to_hex(f.digest)},
                                {"chunks", f.chunks},
                                {"committed_ns", f.committed_ns}};
            tools::put_name(j, "name", f.name);
            arr.push_back(std::move(j));
        }
        fmt::print("{}\n", tools::json_text(arr));
    } else {
        for (const auto& f : files)
            fmt::print("{}\n", listing_line(f.size, f.chunks, f.mtime_ns, f.mode, f.name));
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_ls_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<LsArgs>();
    auto* c = app.add_subcommand("ls", "list the files of a cdc serve (size, chunks, mtime, mode, name)");
    add_connect_options(*c, a->connect, "--from", "HOST:PORT of the server");
    c->add_option("PREFIX", a->prefix, "only names starting with this")->type_name("");
    add_json_flag(*c, a->json, "[{name, size, mode, mtime_ns, digest, chunks, committed_ns}]");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Text output as cdc store ls: size, chunks, mtime, mode and name, one file per line.",
                  .examples = {{"cdc ls --from 127.0.0.1:7777", "every file of the server"},
                               {"cdc ls --from 127.0.0.1:7777 p/ --json", "the files of a tree, as JSON"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_ls(*a); }); });
}

}  // namespace cdc::cli
