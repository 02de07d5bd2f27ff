// SPDX-License-Identifier: Apache-2.0
// The commands that helper programs run, as entries of `cdc --help`: `cdc
// dupes` (the lean cdc-dupes, tools/dupes/) and serve / push / pull / ls /
// hash (cdc-transfer, tools/transfer/: gRPC, dynamically linked). main.cpp
// runs the helper in place of this process before any parsing, so that a
// dupes run never maps this binary's code (the kernel maps cached program
// text in large folios: resident size follows program size); so is `cdc
// bench transfer` (listed by cmd_bench.cpp).
#include "commands.hpp"

namespace cdc::cli {

void add_dupes_command(CLI::App& app, int&) {
    app.add_subcommand("dupes", "find duplicate files (byte comparison or hashing) and merge them safely "
                                "(`cdc dupes --help` for its options)")
        ->prefix_command();
}

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
