// SPDX-License-Identifier: Apache-2.0
#include "cli_common.hpp"
#include "commands.hpp"

#include "sizes.hpp"

#include <cdc/corpus/resync.hpp>

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <thread>
#include <limits>
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
    if (min) o.min_size = static_cast<std::size_t>(*min);
    if (avg) o.normal_size = static_cast<std::size_t>(*avg);
    if (max) o.max_size = static_cast<std::size_t>(*max);
    if (key_given) {
        try {
            o.key = cdc::parse_key_hex(key);  // "" too: an empty --key is an error, not "no key"
        } catch (const cdc::OptionError& e) {
            const std::string_view why = e.what();  // "key is invalid: ..." (without the key)
            throw cdc::OptionError(fmt::format("--{}{}", why.starts_with("key ") ? "" : "key: ", why));
        }
    }
    if (!level.empty()) {
        const std::uint64_t v = parse_number(level, "--level", 10);
        if (v > 1000) throw cdc::OptionError(fmt::format("--level = {} is invalid: levels are 0..3", v));
        o.normalization_level = static_cast<int>(v);
    }
    if (!seed.empty()) o.seed = parse_number(seed, "--seed");
    if (!poly.empty()) o.polynomial = parse_number(poly, "--poly", 16);
    if (window) o.window_size = static_cast<std::size_t>(*window);
    return o;
}

void add_profile_options(CLI::App& cmd, ProfileArgs& args, bool with_key) {
    constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
    add_size_option(cmd, "--min", args.min, 0, kMost, "minimum chunk size (default: the algorithm's)");
    add_size_option(cmd, "--avg,--normal", args.avg, 0, kMost, "average (normal) chunk size (default: the algorithm's)");
    add_size_option(cmd, "--max", args.max, 0, kMost, "maximum chunk size (default: the algorithm's)");
    if (with_key)
        cmd.add_option_function<std::string>(
               "--key",
               [&args](const std::string& v) {
                   args.key = v;
                   args.key_given = true;
               },
               "32-byte key as 64 hex digits (Gear-based algorithms)")
            ->type_name("HEX");
    cmd.add_option("--level", args.level, "normalization level 0..3 (fastcdc-rs-v2016, fastcdc-rs-v2020; default 1)")
        ->type_name("N");
    cmd.add_option("--seed", args.seed,
                   "chunker seed, decimal or 0x hex (fastcdc-rs-v2020: 64 bits, borg-buzhash: 32 bits; default 0)")
        ->type_name("N");
    cmd.add_option("--poly", args.poly,
                   "Rabin polynomial in hex, irreducible, degree 8..53 (restic-rabin; default 3DA3358B4DC173)")
        ->type_name("HEX");
    add_size_option(cmd, "--window", args.window, 0, kMost, "hash window in bytes (borg-buzhash; default 4095)");
}

void add_edit_options(CLI::App& cmd, std::size_t& edits, std::uint64_t& edit_size, std::string& kind,
                      std::uint64_t& seed, const std::string& edits_help) {
    add_count_option(cmd, "--edits", edits, 0, limits::kEdits, edits_help);
    add_size_option(cmd, "--edit-size", edit_size, 1, limits::kEditSize, "bytes per edit");
    with_choices(cmd.add_option("--edit-kind", kind, "insert, delete, overwrite or mixed")
                     ->type_name("KIND")
                     ->capture_default_str(),
                 names_of(kEditKindNames));
    add_count_option(cmd, "--edit-seed", seed, 0, std::numeric_limits<std::uint64_t>::max(),
                     "seed of the edits' positions and contents");
}

CLI::Option* add_digest_option(CLI::App& cmd, std::string& target, bool with_none) {
    auto names = names_of(kDigestKindNames);
    if (!with_none) std::erase(names, "none");
    return with_choices(cmd.add_option("--digest", target,
                                       with_none ? "chunk fingerprint: blake3, sha256, xxh3 or none"
                                                 : "chunk fingerprint: blake3, sha256 or xxh3")
                            ->type_name("NAME")
                            ->capture_default_str(),
                        names);
}

CLI::Option* add_kernel_option(CLI::App& cmd, std::string& target) {
    return with_choices(cmd.add_option("--kernel", target,
                                       "force a kernel level: auto, scalar, wide, avx2, avx512, avx512vbmi (auto: CDC_KERNEL, "
                                       "else the fastest measured)")
                            ->type_name("LEVEL")
                            ->capture_default_str(),
                        names_of(kKernelLevelNames));
}

void check_edits_fit(const EditSpec& spec, std::string_view option, std::uint64_t data_size, std::string_view what) {
    if (spec.count > 0 && (spec.size > data_size || spec.count > data_size / spec.size))
        throw UsageError(fmt::format("{} = '{}' is invalid: {} edits of {} bytes are more than {} allows ({} bytes; edits x "
                                     "--edit-size must be at most its size)",
                                     option, spec.count, spec.count, spec.size, what, data_size));
}

std::string profile_sizes(const cdc::Profile& p) {
    return fmt::format("{}/{}/{}", tools::format_size_exact(p.min_size), tools::format_size_exact(p.normal_size),
                       tools::format_size_exact(p.max_size));
}

nlohmann::json parameters_json(const cdc::AlgorithmInfo& a, const cdc::Profile& p) {
    nlohmann::json out = nlohmann::json::object();
    if (a.normalization_level.accepted) out["level"] = p.normalization_level;
    if (a.seed.accepted) out["seed"] = p.seed;
    if (a.polynomial.accepted) out["polynomial"] = fmt::format("{:#x}", p.polynomial);
    if (a.window_size.accepted) out["window"] = p.window_size;
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
    {"plot", "scale_factors", "--scales"},
    {"plot", "edits", "--edits"},
    {"plot", "bins", "--bins"},
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
    {"", "edit_kind", "--edit-kind"},
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

void compute_digests_parallel(DigestKind kind, std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                              std::span<Digest> out, unsigned jobs) {
    if (jobs == 0) jobs = std::max(1U, std::thread::hardware_concurrency());
    // Run r covers chunks [first[r], first[r + 1]) and bytes from offset[r].
    std::vector<std::size_t> first{0};
    std::vector<std::size_t> offset{0};
    // (at least 1 MiB a run: a thread start costs more than hashing less)
    const std::size_t per_job = std::max<std::size_t>(data.size() / jobs + 1, std::size_t{1} << 20);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        bytes += lengths[i];
        if (bytes >= per_job * first.size() && first.size() < jobs && i + 1 < lengths.size()) {
            first.push_back(i + 1);
            offset.push_back(bytes);
        }
    }
    first.push_back(lengths.size());
    auto run = [&](std::size_t r) {
        constexpr std::size_t kBatch = 64;
        std::size_t at = offset[r];
        for (std::size_t i = first[r]; i < first[r + 1]; i += kBatch) {
            const std::size_t count = std::min(kBatch, first[r + 1] - i);
            const auto batch = lengths.subspan(i, count);
            std::size_t size = 0;
            for (const std::uint32_t l : batch) size += l;
            compute_digests(kind, data.subspan(at, size), batch, out.subspan(i, count));
            at += size;
        }
    };
    std::vector<std::jthread> pool;
    for (std::size_t r = 1; r + 1 < first.size(); ++r) pool.emplace_back(run, r);
    run(0);
}

}  // namespace cdc::cli
