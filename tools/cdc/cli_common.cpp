#include "cli_common.hpp"

#include "sizes.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace cdc::cli {

cdc::Options ProfileArgs::options() const {
    cdc::Options o;
    if (!min.empty()) o.min_size = static_cast<std::size_t>(tools::parse_size(min, prefix + "min"));
    if (!avg.empty()) o.normal_size = static_cast<std::size_t>(tools::parse_size(avg, prefix + "avg"));
    if (!max.empty()) o.max_size = static_cast<std::size_t>(tools::parse_size(max, prefix + "max"));
    if (key_given) {
        try {
            o.key = cdc::parse_key_hex(key);  // "" too: an empty --key is an error, not "no key"
        } catch (const cdc::OptionError& e) {
            const std::string_view why = e.what();  // "key is invalid: ..." (without the key)
            throw cdc::OptionError(fmt::format("{}{}{}", prefix, why.starts_with("key ") ? "" : "key: ", why));
        }
    }
    return o;
}

void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key) {
    cmd.add_option("--min", args.min, "minimum chunk size (4096, 8K, 8KiB, 1M...; default: the algorithm's)");
    cmd.add_option("--avg,--normal", args.avg, "average (normal) chunk size (default: the algorithm's)");
    cmd.add_option("--max", args.max, "maximum chunk size (default: the algorithm's)");
    if (with_key)
        cmd.add_option_function<std::string>(
            "--key",
            [&args](const std::string& v) {
                args.key = v;
                args.key_given = true;
            },
            "32-byte key as 64 hex digits (Gear-based algorithms)");
}

void check_edits_fit(const EditSpec& spec, std::string_view option, std::uint64_t data_size, std::string_view what) {
    if (spec.count > 0 && (spec.size > data_size || spec.count > data_size / spec.size))
        throw UsageError(fmt::format("{} = '{}' is invalid: {} edits of {} bytes are more than {} allows ({} bytes; edits x "
                                     "--edit-size must be at most its size)",
                                     option, spec.count, spec.count, spec.size, what, data_size));
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

std::vector<AlgorithmRun> parse_algorithm_list(std::string_view list, const cdc::Options& base, bool quiet) {
    std::vector<AlgorithmRun> out;
    if (list == "all") {
        for (const auto& a : cdc::algorithms()) {
            cdc::Options o = base;
            if (a.requires_key && !o.key) continue;
            if (!a.accepts_key) o.key.reset();
            out.push_back({std::string(a.name), o});
        }
        if (!quiet) {
            if (!base.key)
                fmt::print(stderr, "note: kfastcdc is left out of 'all': it needs --key\n");
            else
                fmt::print(stderr, "note: the key applies to the Gear-based names; ultracdc*, fastcdc4stadia and "
                                   "fixed-v1.0.0 run unkeyed\n");
        }
        return out;
    }
    for (auto& name : split_comma_list(list)) {
        if (name.empty()) throw cdc::OptionError(fmt::format("--algorithm = '{}' is invalid: empty name", list));
        if (cdc::find_algorithm(name) == nullptr)
            throw cdc::OptionError(fmt::format("unknown algorithm '{}': known algorithms are {} (or 'all')", name,
                                               cdc::algorithm_names()));
        out.push_back({std::move(name), base});
    }
    return out;
}

}  // namespace cdc::cli
