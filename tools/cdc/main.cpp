// SPDX-License-Identifier: Apache-2.0
// cdc — content-defined chunking and deduplication tools.
#include "all_definitions.hpp"
#include "cli_definitions.hpp"
#include "cli_common.hpp"
#include "cmd_store.hpp"
#include "commands.hpp"
#include "helper_path.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

// Every subcommand, in `cdc --help` order.
constexpr cdc::cli::AddCommand kCommands[] = {
    cdc::cli::add_chunk_command,   cdc::cli::add_analyze_command, cdc::cli::add_compare_command,
    cdc::cli::add_resync_command,  cdc::cli::add_dupes_command,   cdc::cli::add_bench_command,
    cdc::cli::add_plot_command,    cdc::cli::add_speed_command,   cdc::cli::add_kernels_command,
    cdc::cli::add_sample_command,  cdc::cli::add_algorithms_command, cdc::cli::add_gen_command,
    cdc::cli::add_store_command,   cdc::cli::add_transfer_commands,
};

// `cdc dupes ...` is the cdc-dupes helper's, `cdc serve|push|pull|ls|hash
// ...` and `cdc bench transfer` the cdc-transfer helper's (gRPC, which this
// static binary does not link): this process becomes the helper (execv,
// same pid, the same arguments) before touching the rest of its code.
int exec_helper(const cdc::cli::Helper& helper, char** argv) {
    using namespace cdc::cli;
    const cdc::tools::HelperPath h = find_helper(helper);
    if (h.path.empty()) {
        print_error(fmt::format("cannot find the {} helper that runs `cdc {}` (looked in: {}); set {} to its path",
                                helper.name, argv[1], h.looked_in, helper.env_var));
        return kExitFailure;
    }
    argv[0] = const_cast<char*>(h.path.c_str());
    ::execv(h.path.c_str(), argv);
    print_error(fmt::format("cannot run '{}': {}", h.path, std::strerror(errno)));
    return kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace cdc::cli;
    if (const Helper* helper = helper_of(argc, argv)) return exec_helper(*helper, argv);
    set_store_command_line(argv);  // (a store with S3 packs: the cdc-store-s3 helper runs the command)
    CLI::App app{"content-defined chunking and deduplication: chunk, analyze, compare, resync, bench, "
                 "plot, speed, find duplicate files, store them, and transfer them (serve, push, pull).\n",
                 "cdc"};
    app.require_subcommand(1);
    int exit_code = kExitOk;
    set_help_flags(app);  // before the commands, which take them over
    for (const AddCommand add : kCommands) add(app, exit_code);
    app.set_help_all_flag("--help-all", "print the help of every command");
    add_version_flags(app);
    document(app, {.notes = std::string("Each command has its own --help, man page (man cdc-COMMAND) and exit "
                                        "codes; the grammar they share is in docs/CLI.md.\n\n")
                                .append(kNamesHelp),
                   .examples = {{"cdc analyze -a all ~/backups", "dedup figures of every algorithm on a tree"},
                                {"cdc chunk --avg 16K --json disk.img", "the chunks of one file, as JSON"}},
                   .exit_codes = {}});
    if (argc == 2 && std::string_view(argv[1]) == kDefinitionsFlag) {
        fmt::print("{}\n", all_definitions(app).dump(1));
        return kExitOk;
    }
    return run_app(app, argc, argv, exit_code, flag_of);
}
