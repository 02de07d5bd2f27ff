// SPDX-License-Identifier: Apache-2.0
// cdc algorithms — every name with its defaults, its parameters and what it
// reproduces.
#include "algorithms_json.hpp"
#include "cli_common.hpp"
#include "commands.hpp"

#include <fmt/format.h>

namespace cdc::cli {

namespace {
std::string parameters_text(const AlgorithmInfo& a) {
    std::string out;
    for (const auto& p : tools::algorithm_parameters(a)) {
        if (!out.empty()) out += ' ';
        out += p.hex ? fmt::format("{}={:X}", p.flag, p.rule->default_value)
                     : fmt::format("{}={}", p.flag, p.rule->default_value);
        if (p.flag == "level") out += fmt::format("({}..{})", p.rule->low, p.rule->high);
    }
    return out.empty() ? "-" : out;
}
}  // namespace

void add_algorithms_command(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand("algorithms", "list every algorithm name with its defaults and parameters");
    struct Flags {
        bool json = false, quiet = false;
    };
    auto flags = std::make_shared<Flags>();  // (the callback holds them: the flags write into them)
    add_json_flag(*cmd, flags->json,
                  "[{name, min, avg, max, key, parameters, sizes, content_defined, origin, summary}]");
    add_quiet_flag(*cmd, flags->quiet);
    document(*cmd, {.notes = "Sizes take --min/--avg/--max; the parameters column lists the other flags a name "
                             "takes (--level, --seed, --poly HEX, --window) with their defaults. ORIGIN is the "
                             "project whose cut points the name reproduces byte for byte.",
                    .examples = {{"cdc algorithms", "the table"},
                                 {"cdc algorithms --json | jq -r '.[].name'", "every name, one per line"}},
                    .exit_codes = exit_codes()});
    cmd->callback([flags, &exit_code] {
        if (flags->json) {
            fmt::print("{}\n", tools::algorithms_json().dump(2));
        } else {
            constexpr std::string_view kRow = "{:<18} {:>7} {:>7} {:>7}  {:<8}  {:<24}  {}\n";
            fmt::print(kRow, "NAME", "MIN", "AVG", "MAX", "KEY", "PARAMETERS", "ORIGIN: SUMMARY");
            for (const auto& a : algorithms())
                fmt::print(kRow, a.name, tools::format_size_exact(a.default_min),
                           tools::format_size_exact(a.default_normal), tools::format_size_exact(a.default_max),
                           tools::key_rule(a), parameters_text(a), fmt::format("{}: {}", a.origin, a.summary));
        }
        finish_stdout();
        exit_code = kExitOk;
    });
}

}  // namespace cdc::cli
