// SPDX-License-Identifier: Apache-2.0
// Algorithm lists ("a,b,c" or "all") with options shared by their names,
// free of CLI11: the cdc subcommands and the Python binding's analyze()
// resolve them the same way.
#pragma once

#include <cdc/algorithms.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::tools {

/// `base` without the parameters `a` does not take (key, level, seed,
/// polynomial, window): for "all" and for options shared by several names.
/// `dropped`, if given, receives the names of those left out ("key",
/// "level", "seed", "polynomial", "window").
cdc::Options parameters_for(const cdc::AlgorithmInfo& a, cdc::Options base,
                            std::vector<std::string>* dropped = nullptr);

/// Splits "a,b,c" at commas (empty items kept: "a,,b" gives three).
std::vector<std::string> split_comma_list(std::string_view list);

/// Splits "a,b,c" or "all" into validated algorithm names (OptionError for
/// an unknown name) with their options. For "all": without a key kfastcdc
/// is left out (it needs one); a key, level, seed, polynomial or window goes
/// to the names that take it and the others run without it; a note on
/// stderr says so. For an explicit list a level, seed, polynomial or window
/// goes to the listed names that take it (OptionError if none does), and a
/// key to every name (whose validation rejects it where it cannot apply).
std::vector<AlgorithmSpec> parse_algorithm_list(std::string_view list, const cdc::Options& base,
                                                bool quiet = false);

/// parse_algorithm_list, each resolved once into its finder at `kernel`.
std::vector<std::shared_ptr<const CutFinder>> resolve_algorithm_list(std::string_view list, const cdc::Options& base,
                                                                     bool quiet = false,
                                                                     KernelLevel kernel = KernelLevel::automatic);

}  // namespace cdc::tools
