// cdc-transfer: the program behind `cdc serve`, `push`, `pull`, `ls`, `hash`
// and `cdc bench transfer` (the cdc tool runs it in its place: it links gRPC,
// which the static cdc binary does not). Its first argument is the command.
#include "transfer_cli.hpp"

#include <cdc/version.hpp>

#include <fmt/format.h>

#include <string_view>

int main(int argc, char** argv) {
    using namespace cdc::cli;
    CLI::App app{"cdc — transfer files to and from a chunk store server over gRPC, sending only missing chunks.\n",
                 "cdc"};
    app.footer(kExitCodesHelp);
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("cdc ") + cdc::kVersionString);
    int exit_code = kExitOk;
    for (const AddCommand add : {&add_serve_command, &add_push_command, &add_pull_command, &add_ls_command,
                                 &add_hash_command, &add_bench_transfer_command})
        add(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    } catch (...) {
        // The library's OptionError fields and the flags that set them here.
        return report_current_exception([](std::string_view field) -> std::string_view {
            if (field == "key") return "--key-file";
            if (field == "max_streams") return "--max-streams";
            if (field == "max_client_streams") return "--max-client-streams";
            if (field == "idle_timeout") return "--idle-timeout";
            return {};
        });
    }
    return exit_code;
}
