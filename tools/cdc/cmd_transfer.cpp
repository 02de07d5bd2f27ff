// cdc serve / push / pull / ls / hash: their entries in `cdc --help`. The
// commands themselves are the cdc-transfer helper's (tools/transfer/: gRPC,
// dynamically linked), which main.cpp runs in place of this process before
// any parsing; so is `cdc bench transfer` (listed by cmd_bench.cpp).
#include "commands.hpp"

namespace cdc::cli {

void add_transfer_commands(CLI::App& app, int&) {
    app.add_subcommand("serve", "serve a chunk store over gRPC (`cdc serve --help` for its options)")->prefix_command();
    app.add_subcommand("push", "send files to a cdc serve, only the chunks it lacks (`cdc push --help`)")
        ->prefix_command();
    app.add_subcommand("pull", "fetch a file from a cdc serve, only the chunks no local file holds (`cdc pull --help`)")
        ->prefix_command();
    app.add_subcommand("ls", "list the files of a cdc serve (`cdc ls --help`)")->prefix_command();
    app.add_subcommand("hash", "BLAKE3 of a file computed by a cdc serve as it streams in (`cdc hash --help`)")
        ->prefix_command();
}

}  // namespace cdc::cli
