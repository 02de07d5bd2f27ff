// cdc algorithms — every name with its defaults and a one-line summary.
#include "cli_common.hpp"
#include "commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {
std::string_view key_rule(const AlgorithmInfo& a) {
    if (a.requires_key) return "required";
    return a.accepts_key ? "optional" : "no";
}
}  // namespace

void add_algorithms_command(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand("algorithms", "list every algorithm name with its defaults");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "print JSON");
    cmd->callback([json, &exit_code] {
        if (*json) {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& a : algorithms())
                out.push_back({{"name", a.name},
                               {"min", a.default_min},
                               {"avg", a.default_normal},
                               {"max", a.default_max},
                               {"key", key_rule(a)},
                               {"summary", a.summary}});
            fmt::print("{}\n", out.dump(2));
        } else {
            fmt::print("{:<16} {:>7} {:>7} {:>7}  {:<8}  {}\n", "NAME", "MIN", "AVG", "MAX", "KEY", "SUMMARY");
            for (const auto& a : algorithms())
                fmt::print("{:<16} {:>7} {:>7} {:>7}  {:<8}  {}\n", a.name, a.default_min, a.default_normal,
                           a.default_max, key_rule(a), a.summary);
        }
        finish_stdout();
        exit_code = kExitOk;
    });
}

}  // namespace cdc::cli
