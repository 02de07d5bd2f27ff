// SPDX-License-Identifier: Apache-2.0
#include "cli_run.hpp"

#include "cli_basics.hpp"
#include "cli_definitions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

namespace cdc::cli {

namespace {

// "unknown command 'store putt' (commands: ...)" for a word where a command
// is expected, or "": CLI11 would only say "A subcommand is required" or
// take the word for a positional it does not expect.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
    CLI::App* level = &app;
    std::string path;
    for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
        const auto subs = level->get_subcommands([](CLI::App* s) { return !s->get_group().empty(); });
        if (subs.empty()) break;
        const std::string word = argv[i];
        const auto all = level->get_subcommands([](CLI::App*) { return true; });
        const auto it = std::find_if(all.begin(), all.end(), [&](CLI::App* s) { return s->get_name() == word; });
        path += (path.empty() ? "" : " ") + word;
        if (it == all.end()) {
            std::vector<std::string> names;
            for (const CLI::App* s : subs) names.push_back(s->get_name());
            return fmt::format("unknown command '{}' (commands: {})", path, fmt::join(names, ", "));
        }
        if ((*it)->get_prefix_command()) break;
        level = *it;
    }
    return {};
}

std::string help_hint(const CLI::App& app) {
    const std::string path = command_path(app);
    return fmt::format("see '{}{}{} --help'", app.get_name(), path.empty() ? "" : " ", path);
}

}  // namespace

std::string command_path(const CLI::App& app) {
    std::string path;
    for (const CLI::App* cmd = &app; !cmd->get_subcommands().empty();) {
        cmd = cmd->get_subcommands().front();
        if (!path.empty()) path.push_back(' ');
        path.append(cmd->get_name());
    }
    return path;
}

int run_app(CLI::App& app, int argc, char** argv, const int& exit_code, const FlagOf& flag_of) {
    if (argc == 2 && std::string_view(argv[1]) == kDefinitionsFlag) {
        fmt::print("{}\n", definitions(app).dump(1));
        return kExitOk;
    }
    if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) {
        print_error(fmt::format("{} ({})", unknown, help_hint(app)));
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
        print_error(fmt::format("{} ({})", e.what(), help_hint(app)));
        return kExitUsage;
    } catch (...) {
        const std::string command = command_path(app);
        return report_current_exception(
            [&](std::string_view field) { return flag_of ? flag_of(command, field) : std::string_view(); });
    }
    return exit_code;
}

}  // namespace cdc::cli
