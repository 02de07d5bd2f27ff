// cdc — content-defined chunking and deduplication tools.
#include "cli_common.hpp"
#include "commands.hpp"
#include "helper_path.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>
#include <unistd.h>

#ifndef CDC_DUPES_HELPER_FROM_BINDIR
#define CDC_DUPES_HELPER_FROM_BINDIR "../libexec/cdc/cdc-dupes"
#endif
#ifndef CDC_TRANSFER_HELPER_FROM_BINDIR
#define CDC_TRANSFER_HELPER_FROM_BINDIR "../libexec/cdc/cdc-transfer"
#endif

namespace {

// Every subcommand, in `cdc --help` order.
constexpr cdc::cli::AddCommand kCommands[] = {
    cdc::cli::add_chunk_command,   cdc::cli::add_analyze_command, cdc::cli::add_compare_command,
    cdc::cli::add_resync_command,  cdc::cli::add_dupes_command,   cdc::cli::add_bench_command,
    cdc::cli::add_plot_command,    cdc::cli::add_speed_command,   cdc::cli::add_kernels_command,
    cdc::cli::add_sample_command,  cdc::cli::add_algorithms_command, cdc::cli::add_gen_command,
    cdc::cli::add_store_command,   cdc::cli::add_transfer_commands,
};

// "resync", "bench run": the subcommand path that was parsed.
std::string command_path(const CLI::App& app) {
    std::string path;
    for (const CLI::App* cmd = &app; !cmd->get_subcommands().empty();) {
        cmd = cmd->get_subcommands().front();
        if (!path.empty()) path.push_back(' ');
        path.append(cmd->get_name());
    }
    return path;
}

// `cdc dupes ...` is the cdc-dupes helper's, `cdc serve|push|pull|ls|hash
// ...` and `cdc bench transfer` the cdc-transfer helper's (gRPC, which this
// static binary does not link): this process becomes the helper (execv,
// same pid) before touching the rest of its code. argv[first] becomes the
// helper's argv[0]; its arguments follow.
int exec_helper(const char* name, const char* env_var, const char* from_bindir, char** argv, int first) {
    using namespace cdc::cli;
    const cdc::tools::HelperPath h = cdc::tools::find_helper(name, env_var, from_bindir);
    if (h.path.empty()) {
        print_error(fmt::format("cannot find the {} helper that runs `cdc {}` (looked in: {}); set {} to its path",
                                name, argv[1], h.looked_in, env_var));
        return kExitFailure;
    }
    argv[first] = const_cast<char*>(h.path.c_str());
    ::execv(h.path.c_str(), argv + first);
    print_error(fmt::format("cannot run '{}': {}", h.path, std::strerror(errno)));
    return kExitFailure;
}

bool is_transfer_command(int argc, char** argv) {
    if (argc < 2) return false;
    const std::string_view cmd = argv[1];
    if (cmd == "serve" || cmd == "push" || cmd == "pull" || cmd == "ls" || cmd == "hash") return true;
    return cmd == "bench" && argc > 2 && std::string_view(argv[2]) == "transfer";
}

// "unknown command 'chunkk' (commands: ...)" for a word where a command is
// expected, or "": CLI11 would only say "A subcommand is required".
std::string unknown_command(CLI::App& app, int argc, char** argv) {
    CLI::App* level = &app;
    std::string path;
    for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
        const auto subs = level->get_subcommands([](CLI::App*) { return true; });
        if (subs.empty()) break;
        const std::string word = argv[i];
        const auto it = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == word; });
        path += (path.empty() ? "" : " ") + word;
        if (it == subs.end()) {
            std::vector<std::string> names;
            for (const CLI::App* s : subs) names.push_back(s->get_name());
            return fmt::format("unknown command '{}' (commands: {})", path, fmt::join(names, ", "));
        }
        level = *it;
    }
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    using namespace cdc::cli;
    if (argc > 1 && std::string_view(argv[1]) == "dupes")
        return exec_helper("cdc-dupes", "CDC_DUPES", CDC_DUPES_HELPER_FROM_BINDIR, argv, 1);
    if (is_transfer_command(argc, argv))
        return exec_helper("cdc-transfer", "CDC_TRANSFER", CDC_TRANSFER_HELPER_FROM_BINDIR, argv, 0);
    CLI::App app{"cdc — content-defined chunking and deduplication: chunk, analyze, compare, resync, bench, "
                 "plot, speed, find duplicate files, store them, and transfer them (serve, push, pull).\n"};
    app.footer(std::string(kExitCodesHelp).append("\n").append(kNamesHelp));
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("cdc ") + cdc::kVersionString);
    app.set_help_all_flag("--help-all", "print help for every subcommand");

    int exit_code = kExitOk;
    for (const AddCommand add : kCommands) add(app, exit_code);
    if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
        print_error(unknown);
        fmt::print(stderr, "Run with --help for more information.\n");
        return kExitUsage;
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // CLI11's own message quotes the arguments: escaped like any message.
        print_message("", e.what());
        fmt::print(stderr, "Run with --help for more information.\n");
        return kExitUsage;
    } catch (...) {
        const std::string command = command_path(app);
        return report_current_exception([&](std::string_view field) { return flag_of(command, field); });
    }
    return exit_code;
}
