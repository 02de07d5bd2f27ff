// SPDX-License-Identifier: Apache-2.0
// The facts of `cdc algorithms` (each name's key rule, parameters and the
// JSON of --json), free of CLI11: the Python binding's algorithms() returns
// the same document.
#pragma once

#include <cdc/algorithms.hpp>

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace cdc::tools {

/// "required", "optional" or "no".
std::string_view key_rule(const AlgorithmInfo& a);

/// Each parameter a name takes beyond the sizes: its flag (level, seed,
/// poly, window), its rule, and whether the flag takes it in hexadecimal.
struct AlgorithmParameter {
    std::string_view flag;
    const ParameterRule* rule;
    bool hex;
};
std::vector<AlgorithmParameter> algorithm_parameters(const AlgorithmInfo& a);

/// [{"name", "min", "avg", "max", "key", "parameters": {FLAG: {"default",
/// "low", "high"}}, "sizes", "content_defined", "origin", "summary"}, ...]
/// for every name, in the order of cdc::algorithms().
nlohmann::json algorithms_json();

}  // namespace cdc::tools
