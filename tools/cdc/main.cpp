// cdc — content-defined chunking and deduplication tools.
#include "cli_common.hpp"
#include "commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

namespace cdc::cli {
std::vector<std::pair<int, AddCommand>>& command_registry() {
    static std::vector<std::pair<int, AddCommand>> registry;
    return registry;
}
}  // namespace cdc::cli

int main(int argc, char** argv) {
    using namespace cdc::cli;
    CLI::App app{"cdc — content-defined chunking and deduplication: chunk, analyze, compare, resync, bench, "
                 "plot, speed and find duplicate files.\n"};
    app.footer(kExitCodesHelp);
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("cdc ") + cdc::kVersionString);
    app.set_help_all_flag("--help-all", "print help for every subcommand");

    int exit_code = kExitOk;
    auto commands = command_registry();
    std::stable_sort(commands.begin(), commands.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [order, add] : commands) add(app, exit_code);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    } catch (const cdc::OptionError& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitUsage;
    } catch (const UsageError& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitFailure;
    }
    return exit_code;
}
