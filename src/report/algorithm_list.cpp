// SPDX-License-Identifier: Apache-2.0
#include "algorithm_list.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <map>

namespace cdc::tools {

cdc::Options parameters_for(const cdc::AlgorithmInfo& a, cdc::Options base, std::vector<std::string>* dropped) {
    auto drop = [&](auto& field, bool accepted, std::string_view what) {
        if (!field || accepted) return;
        field.reset();
        if (dropped) dropped->emplace_back(what);
    };
    drop(base.key, a.key != cdc::KeyUse::none, "key");
    drop(base.normalization_level, a.normalization_level.accepted, "level");
    drop(base.seed, a.seed.accepted, "seed");
    drop(base.polynomial, a.polynomial.accepted, "polynomial");
    drop(base.window_size, a.window_size.accepted, "window");
    return base;
}

std::vector<std::string> split_comma_list(std::string_view list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        out.emplace_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

std::vector<AlgorithmSpec> parse_algorithm_list(std::string_view list, const cdc::Options& base, bool quiet) {
    std::vector<AlgorithmSpec> out;
    if (list == "all") {
        std::string notes;
        std::map<std::string, std::vector<std::string_view>> without;  // dropped flags -> names
        for (const auto& a : cdc::algorithms()) {
            if (a.key == cdc::KeyUse::required && !base.key) {
                notes += fmt::format("note: {} is left out of 'all': it needs a key (--key)\n", a.name);
                continue;
            }
            std::vector<std::string> dropped;
            out.push_back({std::string(a.name), parameters_for(a, base, &dropped)});
            if (!dropped.empty()) without[fmt::format("{}", fmt::join(dropped, ", "))].push_back(a.name);
        }
        for (const auto& [flags, names] : without)
            notes += fmt::format("note: {} run{} without {} (not one of {} parameters)\n", fmt::join(names, ", "),
                                 names.size() == 1 ? "s" : "", flags, names.size() == 1 ? "its" : "their");
        if (!quiet) fmt::print(stderr, "{}", notes);
        return out;
    }
    for (auto& name : split_comma_list(list)) {
        if (name.empty()) throw cdc::OptionError(fmt::format("--algorithm = '{}' is invalid: empty name", list));
        if (cdc::find_algorithm(name) == nullptr)
            throw cdc::OptionError(fmt::format("unknown algorithm '{}': known algorithms are {} (or 'all')", name,
                                               cdc::algorithm_names()));
        out.push_back({std::move(name), base});
    }
    // level, seed, polynomial, window: to the listed names that take them
    // (refused if none does); a key stays with every name (refused where it
    // cannot apply: no silently unkeyed chunking).
    std::map<std::string, std::size_t> dropped_by;  // parameter -> names that do not take it
    for (auto& run : out) {
        std::vector<std::string> dropped;
        run.options = parameters_for(*cdc::find_algorithm(run.name), base, &dropped);
        run.options.key = base.key;
        for (const auto& d : dropped) ++dropped_by[d];
    }
    for (const auto& [parameter, count] : dropped_by)
        if (parameter != "key" && count == out.size())
            throw cdc::OptionError(fmt::format("{} is invalid: none of {} takes one", parameter, list));
    return out;
}

std::vector<std::shared_ptr<const CutFinder>> resolve_algorithm_list(std::string_view list, const cdc::Options& base,
                                                                     bool quiet, KernelLevel kernel) {
    std::vector<std::shared_ptr<const CutFinder>> out;
    for (const auto& spec : parse_algorithm_list(list, base, quiet)) out.push_back(make_cut_finder(spec, kernel));
    return out;
}

}  // namespace cdc::tools
