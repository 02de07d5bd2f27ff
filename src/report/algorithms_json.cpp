// SPDX-License-Identifier: Apache-2.0
#include "algorithms_json.hpp"

#include <string>

namespace cdc::tools {

namespace {
nlohmann::json size_json(std::size_t default_value, const SizeRule& r) {
    return {{"default", default_value}, {"low", r.low}, {"high", r.high}, {"power_of_two", r.power_of_two}};
}
}  // namespace

std::string_view key_rule(const AlgorithmInfo& a) {
    switch (a.key) {
        case KeyUse::required: return "required";
        case KeyUse::optional: return "optional";
        case KeyUse::none: break;
    }
    return "no";
}

std::vector<AlgorithmParameter> algorithm_parameters(const AlgorithmInfo& a) {
    std::vector<AlgorithmParameter> out;
    for (const AlgorithmParameter& p :
         {AlgorithmParameter{"level", &a.normalization_level, false}, AlgorithmParameter{"seed", &a.seed, false},
          AlgorithmParameter{"poly", &a.polynomial, true}, AlgorithmParameter{"window", &a.window_size, false}})
        if (p.rule->accepted) out.push_back(p);
    return out;
}

nlohmann::json algorithms_json() {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& a : algorithms()) {
        nlohmann::json params = nlohmann::json::object();
        for (const auto& p : algorithm_parameters(a))
            params[std::string(p.flag)] = {
                {"default", p.rule->default_value}, {"low", p.rule->low}, {"high", p.rule->high}};
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
    return out;
}

}  // namespace cdc::tools
