// cdc algorithms — every name with its defaults, its parameters and what it
// reproduces.
#include "cli_common.hpp"
#include "commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {
std::string_view key_rule(const AlgorithmInfo& a) {
    switch (a.key) {
        case KeyUse::required: return "required";
        case KeyUse::optional: return "optional";
        case KeyUse::none: break;
    }
    return "no";
}

/// Each parameter a name takes beyond the sizes: its flag, its default (as
/// the flag takes it) and its range.
struct Parameter {
    std::string_view flag;
    const ParameterRule* rule;
    bool hex;
};
std::vector<Parameter> parameters(const AlgorithmInfo& a) {
    std::vector<Parameter> out;
    for (const Parameter& p : {Parameter{"level", &a.normalization_level, false}, Parameter{"seed", &a.seed, false},
                               Parameter{"poly", &a.polynomial, true}, Parameter{"window", &a.window_size, false}})
        if (p.rule->accepted) out.push_back(p);
    return out;
}

std::string parameters_text(const AlgorithmInfo& a) {
    std::string out;
    for (const auto& p : parameters(a)) {
        if (!out.empty()) out += ' ';
        out += p.hex ? fmt::format("{}={:X}", p.flag, p.rule->default_value)
                     : fmt::format("{}={}", p.flag, p.rule->default_value);
        if (p.flag == "level") out += fmt::format("({}..{})", p.rule->low, p.rule->high);
    }
    return out.empty() ? "-" : out;
}

nlohmann::json size_json(std::size_t default_value, const SizeRule& r) {
    return {{"default", default_value}, {"low", r.low}, {"high", r.high}, {"power_of_two", r.power_of_two}};
}
}  // namespace

void add_algorithms_command(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand("algorithms", "list every algorithm name with its defaults and parameters");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "print JSON");
    cmd->footer("Sizes take --min/--avg/--max; the parameters column lists the other flags a name takes "
                "(--level, --seed, --poly HEX, --window) with their defaults. ORIGIN is the project whose cut "
                "points the name reproduces byte for byte.");
    cmd->callback([json, &exit_code] {
        if (*json) {
            nlohmann::json out = nlohmann::json::array();
            for (const auto& a : algorithms()) {
                nlohmann::json params = nlohmann::json::object();
                for (const auto& p : parameters(a))
                    params[std::string(p.flag)] = {{"default", p.rule->default_value},
                                                   {"low", p.rule->low},
                                                   {"high", p.rule->high}};
                out.push_back({{"name", a.name},
                               {"min", a.default_min},
                               {"avg", a.default_normal},
                               {"max", a.default_max},
                               {"key", key_rule(a)},
                               {"parameters", params},
                               {"sizes",
                                {{"min", size_json(a.default_min, a.min_rule)},
                                 {"avg", size_json(a.default_normal, a.normal_rule)},
                                 {"max", size_json(a.default_max, a.max_rule)}}},
                               {"content_defined", a.content_defined},
                               {"origin", a.origin},
                               {"summary", a.summary}});
            }
            fmt::print("{}\n", out.dump(2));
        } else {
            constexpr std::string_view kRow = "{:<18} {:>7} {:>7} {:>7}  {:<8}  {:<24}  {}\n";
            fmt::print(kRow, "NAME", "MIN", "AVG", "MAX", "KEY", "PARAMETERS", "ORIGIN: SUMMARY");
            for (const auto& a : algorithms())
                fmt::print(kRow, a.name, a.default_min, a.default_normal, a.default_max, key_rule(a),
                           parameters_text(a), fmt::format("{}: {}", a.origin, a.summary));
        }
        finish_stdout();
        exit_code = kExitOk;
    });
}

}  // namespace cdc::cli
