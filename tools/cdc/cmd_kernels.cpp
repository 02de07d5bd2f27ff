// SPDX-License-Identifier: Apache-2.0
// cdc kernels — per kernel family, each candidate kernel this CPU runs with
// the speed the calibration measured for it, and the one chosen (the
// library times them on a family's first use; cdc/algorithms.hpp).
#include "cli_common.hpp"
#include "commands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::cli {

namespace {

struct FamilyRow {
    KernelCalibration calibration;
    std::vector<std::string> algorithms;
    KernelLevel used = KernelLevel::scalar;  ///< what a finder created with KernelLevel::automatic runs
};

/// One row per family, in the order of algorithms(); each calibration runs
/// here if nothing has used its family yet.
std::vector<FamilyRow> collect() {
    std::vector<FamilyRow> rows;
    for (const auto& a : algorithms()) {
        auto calibration = kernel_calibration(a.name);
        if (!calibration) continue;
        FamilyRow* row = nullptr;
        for (auto& r : rows)
            if (r.calibration.family == calibration->family) row = &r;
        if (row == nullptr) {
            Options o;
            if ((a.key == KeyUse::required)) o.key = Key{};
            rows.push_back({std::move(*calibration), {}, make_cut_finder(a.name, o)->kernel_level()});
            row = &rows.back();
        }
        row->algorithms.emplace_back(a.name);
    }
    return rows;
}

double scalar_mb_s(const KernelCalibration& c) {
    for (const auto& m : c.candidates)
        if (m.level == KernelLevel::scalar) return m.mb_s;
    return 0;
}

int run(bool json) {
    const auto rows = collect();
    const char* forced = std::getenv("CDC_KERNEL");
    const bool is_forced = default_kernel_level() != KernelLevel::automatic;
    if (json) {
        nlohmann::json families = nlohmann::json::array();
        for (const auto& r : rows) {
            const double scalar = scalar_mb_s(r.calibration);
            nlohmann::json candidates = nlohmann::json::array();
            for (const auto& m : r.calibration.candidates)
                candidates.push_back({{"kernel", to_string(m.level)},
                                      {"mb_s", m.mb_s},
                                      {"relative_to_scalar", scalar > 0 ? m.mb_s / scalar : 0.0}});
            families.push_back({{"family", r.calibration.family},
                                {"algorithms", r.algorithms},
                                {"candidates", candidates},
                                {"chosen", to_string(r.calibration.chosen)},
                                {"used", to_string(r.used)},
                                {"bytes", r.calibration.bytes},
                                {"rounds", r.calibration.rounds},
                                {"seconds", r.calibration.seconds},
                                {"cached", r.calibration.cached}});
        }
        const auto cache = kernel_calibration_cache_file();
        nlohmann::json out = {{"best_level", to_string(best_kernel_level())},
                              {"forced", is_forced ? nlohmann::json(forced) : nlohmann::json(nullptr)},
                              {"cache", cache ? nlohmann::json(*cache) : nlohmann::json(nullptr)},
                              {"families", families}};
        fmt::print("{}\n", out.dump(2));
    } else {
        fmt::print("CPU levels up to {}; ", to_string(best_kernel_level()));
        if (is_forced)
            fmt::print("CDC_KERNEL={} forces the level (the measurements below are not used)\n", forced);
        else
            fmt::print("each family uses the fastest kernel measured below (CDC_KERNEL or --kernel force a level)\n");
        fmt::print("calibration: each kernel's median pass over a pseudo-random buffer in cache (KIB), kernels "
                   "alternating; MB = 10^6 bytes\n");
        const auto cache = kernel_calibration_cache_file();
        const bool any_cached =
            std::any_of(rows.begin(), rows.end(), [](const FamilyRow& r) { return r.calibration.cached; });
        if (!cache)
            fmt::print("calibration cache: off (CDC_KERNEL_CACHE)\n");
        else
            fmt::print("calibration cache: {}{}\n", *cache,
                       any_cached ? " (families marked * were measured by an earlier process)" : "");
        std::size_t family_width = 6;
        for (const auto& r : rows) family_width = std::max(family_width, std::string_view(r.calibration.family).size());
        fmt::print("{:<{}} {:>4} {:<10} {:>8} {:>9}  {:<4} {}\n", "FAMILY", family_width + 1, "KIB", "KERNEL", "MB/S", "X SCALAR", "USED",
                   "ALGORITHMS");
        for (const auto& r : rows) {
            const double scalar = scalar_mb_s(r.calibration);
            bool first = true;
            for (const auto& m : r.calibration.candidates) {
                std::string line = fmt::format(
                    "{:<{}} {:>4} {:<10} {:>8.0f} {:>8.2f}x  {:<4} {}",
                    first ? fmt::format("{}{}", r.calibration.family, r.calibration.cached ? "*" : "") : "",
                    family_width + 1,
                    first ? std::to_string(r.calibration.bytes / 1024) : "", to_string(m.level), m.mb_s,
                    scalar > 0 ? m.mb_s / scalar : 0.0, m.level == r.used ? "<-" : "", first ? fmt::format("{}", fmt::join(r.algorithms, ", ")) : "");
                line.erase(line.find_last_not_of(' ') + 1);
                fmt::print("{}\n", line);
                first = false;
            }
        }
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_kernels_command(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand(
        "kernels", "the exact kernels this CPU runs for each algorithm family, their measured speed and the choice");
    struct Flags {
        bool json = false, quiet = false;
    };
    auto flags = std::make_shared<Flags>();  // (the callback holds them: the flags write into them)
    add_json_flag(*cmd, flags->json,
                  "{\"best_level\", \"forced\", \"families\": [{\"family\", \"algorithms\", \"candidates\": "
                  "[{\"kernel\", \"mb_s\", \"relative_to_scalar\"}], \"chosen\", \"used\", \"bytes\", \"rounds\", "
                  "\"seconds\"}]}");
    add_quiet_flag(*cmd, flags->quiet);
    document(*cmd, {.notes = "Each family times its kernels on first use in a process; CDC_KERNEL (or a command's "
                             "--kernel) forces a level instead.",
                    .examples = {{"cdc kernels", "the kernels of each family and the one used"},
                                 {"CDC_KERNEL=scalar cdc kernels --json", "what forcing the scalar level does"}},
                    .exit_codes = exit_codes()});
    cmd->callback([flags, &exit_code] { exit_code = run(flags->json); });
}

}  // namespace cdc::cli
