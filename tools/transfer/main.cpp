// SPDX-License-Identifier: Apache-2.0
// cdc-transfer: the program behind `cdc serve`, `push`, `pull`, `ls`, `hash`
// and `cdc bench transfer` (the cdc tool runs it in its place: it links gRPC,
// which the static cdc binary does not). Its first argument is the command.
#include "commands.hpp"

#include "cli_run.hpp"

#include <fmt/format.h>

#include <string_view>

#include <cdc/store_pg.hpp>
#include <cdc/store_s3.hpp>

int main(int argc, char** argv) {
    using namespace cdc::cli;
    cdc::store::enable_s3_packs();  // cdc serve of a store whose packs are in S3 (docs/STORE.md)
    cdc::store::enable_pg_catalog();  // and of a store whose catalog is in PostgreSQL
    CLI::App app{"transfer files to and from a chunk store server over gRPC, sending only missing chunks.\n",
                 "cdc"};
    app.require_subcommand(1);
    set_help_flags(app);
    int exit_code = kExitOk;
    for (const AddCommand add : {&add_serve_command, &add_push_command, &add_pull_command, &add_ls_command,
                                 &add_hash_command, &add_bench_transfer_command})
        add(app, exit_code);
    add_version_flags(app);
    // The library's OptionError fields and the flags that set them here.
    return run_app(app, argc, argv, exit_code, [](std::string_view, std::string_view field) -> std::string_view {
        if (field == "key") return "--key-file";
        if (field == "max_streams") return "--max-streams";
        if (field == "max_client_streams") return "--max-client-streams";
        if (field == "idle_timeout") return "--idle-timeout";
        return {};
    });
}
