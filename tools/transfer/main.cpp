// cdc-transfer: the program behind `cdc serve`, `push`, `pull`, `ls`, `hash`
// and `cdc bench transfer` (the cdc tool runs it in its place: it links gRPC,
// which the static cdc binary does not). Its first argument is the command.
#include "transfer_cli.hpp"

#include <cdc/version.hpp>

#include <fmt/format.h>

#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
    using namespace cdc::cli;
#if defined(__GLIBC__)
    // Flat memory (docs/TRANSFER.md): the messages and buffers of a transfer
    // are ~1 MiB, allocated on gRPC's threads and freed on others. glibc
    // raises its mmap threshold to the largest block freed (up to 32 MiB), so
    // after the first such free every later 1 MiB buffer came from an arena
    // and the arenas kept what was freed: 4 GiB pulls peaked at 60-98 MB,
    // 83 MB for 1 GiB. A fixed threshold (which also stops the raising) gives
    // large blocks back at once (docs/BENCHMARKS.md, "Chunked transfer").
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
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
            return {};
        });
    }
    return exit_code;
}
