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

namespace {

// Every subcommand, in `cdc --help` order.
constexpr cdc::cli::AddCommand kCommands[] = {
    cdc::cli::add_chunk_command,   cdc::cli::add_analyze_command, cdc::cli::add_compare_command,
    cdc::cli::add_resync_command,  cdc::cli::add_dupes_command,   cdc::cli::add_bench_command,
    cdc::cli::add_plot_command,    cdc::cli::add_speed_command,   cdc::cli::add_kernels_command,
    cdc::cli::add_sample_command,  cdc::cli::add_algorithms_command, cdc::cli::add_gen_command,
    cdc::cli::add_store_command,
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

// `cdc dupes ...` is the cdc-dupes helper's: this process becomes it
// (execv, same pid) before touching the rest of its code.
int exec_dupes_helper(char** argv) {
    using namespace cdc::cli;
    const cdc::tools::HelperPath h =
        cdc::tools::find_helper("cdc-dupes", "CDC_DUPES", CDC_DUPES_HELPER_FROM_BINDIR);
    if (h.path.empty()) {
        print_error(fmt::format("cannot find the cdc-dupes helper that runs `cdc dupes` (looked in: {}); "
                                "set CDC_DUPES to its path",
                                h.looked_in));
        return kExitFailure;
    }
    argv[1] = const_cast<char*>(h.path.c_str());  // the helper's argv[0]; its arguments follow
    ::execv(h.path.c_str(), argv + 1);
    print_error(fmt::format("cannot run '{}': {}", h.path, std::strerror(errno)));
    return kExitFailure;
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
    if (argc > 1 && std::string_view(argv[1]) == "dupes") return exec_dupes_helper(argv);
    CLI::App app{"cdc — content-defined chunking and deduplication: chunk, analyze, compare, resync, bench, "
                 "plot, speed, find duplicate files and keep files in a deduplicating store.\n"};
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
