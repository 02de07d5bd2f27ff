#include "cli_common.hpp"
#include "commands.hpp"

#include "sizes.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <charconv>
#include <map>
#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace cdc::cli {

namespace {

/// A decimal or 0x-prefixed hexadecimal unsigned 64-bit number.
std::uint64_t parse_number(std::string_view text, std::string_view flag, int base = 0) {
    std::string_view digits = text;
    if (base != 10 && (digits.starts_with("0x") || digits.starts_with("0X"))) {
        digits.remove_prefix(2);
        base = 16;
    }
    if (base == 0) base = 10;
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size())
        throw cdc::OptionError(fmt::format("{} = '{}' is invalid: must be {}", flag, text,
                                           base == 16 ? "a hexadecimal number below 2^64 (0x optional)"
                                                      : "a number below 2^64 (decimal, or hexadecimal with 0x)"));
    return value;
}

}  // namespace

cdc::Options ProfileArgs::options() const {
    cdc::Options o;
    if (!min.empty()) o.min_size = static_cast<std::size_t>(tools::parse_size(min, "--min"));
    if (!avg.empty()) o.normal_size = static_cast<std::size_t>(tools::parse_size(avg, "--avg"));
    if (!max.empty()) o.max_size = static_cast<std::size_t>(tools::parse_size(max, "--max"));
    if (!key.empty()) o.key = cdc::parse_key_hex(key);
    if (!level.empty()) {
        const std::uint64_t v = parse_number(level, "--level", 10);
        if (v > 1000) throw cdc::OptionError(fmt::format("--level = {} is invalid: levels are 0..3", v));
        o.normalization_level = static_cast<int>(v);
    }
    if (!seed.empty()) o.seed = parse_number(seed, "seed");
    if (!poly.empty()) o.polynomial = parse_number(poly, "--poly", 16);
    if (!window.empty()) o.window_size = static_cast<std::size_t>(tools::parse_size(window, "--window"));
    return o;
}

void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key, std::string_view seed_flag) {
    cmd.add_option("--min", args.min, "minimum chunk size (4096, 8K, 8KiB, 1M...; default: the algorithm's)");
    cmd.add_option("--avg,--normal", args.avg, "average (normal) chunk size (default: the algorithm's)");
    cmd.add_option("--max", args.max, "maximum chunk size (default: the algorithm's)");
    if (with_key) cmd.add_option("--key", args.key, "32-byte key as 64 hex digits (Gear-based algorithms)");
    cmd.add_option("--level", args.level, "normalization level 0..3 (fastcdc-rs-v2016, fastcdc-rs-v2020; default 1)");
    cmd.add_option(std::string(seed_flag), args.seed,
                   "chunker seed, decimal or 0x hex (fastcdc-rs-v2020: 64 bits, borg-buzhash: 32 bits; default 0)");
    cmd.add_option("--poly", args.poly,
                   "Rabin polynomial in hex, irreducible, degree 8..53 (restic-rabin; default 3DA3358B4DC173)");
    cmd.add_option("--window", args.window, "hash window in bytes (borg-buzhash; default 4095)");
}

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

nlohmann::json parameters_json(const cdc::AlgorithmInfo& a, const cdc::Profile& p) {
    nlohmann::json out = nlohmann::json::object();
    if (a.normalization_level.accepted) out["level"] = p.normalization_level;
    if (a.seed.accepted) out["seed"] = p.seed;
    if (a.polynomial.accepted) out["polynomial"] = fmt::format("{:#x}", p.polynomial);
    if (a.window_size.accepted) out["window"] = p.window_size;
    return out;
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

namespace {
struct FieldFlag {
    std::string_view command;  // empty: every command that has the field
    std::string_view field;
    std::string_view flag;
};

// Library fields (OptionError::field()) and the flags that set them.
// Command-specific rows come before the general ones.
constexpr FieldFlag kFieldFlags[] = {
    {"resync", "edit_kind", "--kind"},
    {"plot", "edit_kind", "--edit-kind"},
    {"plot", "scale_factors", "--scales"},
    {"plot", "edits", "--edits"},
    {"plot", "bins", "--bins"},
    {"resync", "seed", "--chunker-seed"},
    {"plot", "seed", "--chunker-seed"},
    {"compare", "algorithm", "-a / -b"},
    {"compare", "min_size", ""},  // compare names the side itself (--min, --a-min, --b-min)
    {"compare", "normal_size", ""},
    {"compare", "max_size", ""},
    {"store init", "key", "--key-file"},
    {"store put", "key", "--key-file"},
    {"", "min_size", "--min"},
    {"", "normal_size", "--avg"},
    {"", "max_size", "--max"},
    {"", "key", "--key"},
    {"", "normalization_level", "--level"},
    {"", "seed", "--seed"},
    {"", "polynomial", "--poly"},
    {"", "window_size", "--window"},
    {"", "algorithm", "--algorithm"},
    {"", "algorithms", "--algorithm"},
    {"", "kernel", "--kernel"},
    {"", "digest", "--digest"},
    {"", "trials", "--trials"},
    {"", "zstd_level", "--zstd-level"},
    {"", "pack_size", "--pack-size"},
};
}  // namespace

std::string_view flag_of(std::string_view command, std::string_view field) noexcept {
    for (const auto& f : kFieldFlags)
        if (f.field == field && (f.command.empty() || f.command == command)) return f.flag;
    return {};
}

}  // namespace cdc::cli
