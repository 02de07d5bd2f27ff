// SPDX-License-Identifier: Apache-2.0
// cdc compare — two algorithms (or two profiles) side by side on one corpus,
// with deltas; exit 1 when B deduplicates worse than A beyond a tolerance.
#include "corpus_options.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "sizes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace cdc::cli {

namespace {
struct CompareArgs {
    std::string a, b;
    ProfileArgs a_profile, b_profile;  // overrides of the common profile
    CorpusArgs corpus;
    std::string tolerance = "0.1";
    bool json = false;
    bool csv = false;
};

Options merged(const Options& base, const ProfileArgs& side) {
    Options o = base;
    const Options s = side.options();
    if (s.min_size) o.min_size = s.min_size;
    if (s.normal_size) o.normal_size = s.normal_size;
    if (s.max_size) o.max_size = s.max_size;
    if (s.key) o.key = s.key;
    return o;
}

/// The common options as one side uses them: parameters that this side does
/// not take are left out (they are meant for the other side); one that
/// neither side takes is refused.
Options for_side(const AlgorithmInfo& side, const AlgorithmInfo& other, const Options& common) {
    std::vector<std::string> dropped_here, dropped_there;
    Options o = parameters_for(side, common, &dropped_here);
    (void)parameters_for(other, common, &dropped_there);
    for (const auto& flag : dropped_here)
        if (std::find(dropped_there.begin(), dropped_there.end(), flag) != dropped_there.end())
            throw OptionError(fmt::format("{} is invalid: neither {} nor {} takes one", flag, side.name, other.name));
    return o;
}

void print_side_by_side(const AlgorithmResult& a, const AlgorithmResult& b, double delta_pp, bool regression,
                        double tolerance) {
    const auto label = [](const AlgorithmResult& r) {
        return fmt::format("{} {}", r.algorithm, profile_sizes(r.profile));
    };
    const std::string la = "A: " + label(a), lb = "B: " + label(b);
    const std::size_t w = std::max<std::size_t>({la.size(), lb.size(), 16});  // columns fit their labels
    fmt::print("{:<22} {:>{}} {:>{}} {:>14}\n", "", la, w, lb, w, "B - A");
    auto row_u = [w](std::string_view name, std::uint64_t x, std::uint64_t y) {
        fmt::print("{:<22} {:>{}} {:>{}} {:>+14}\n", name, x, w, y, w,
                   static_cast<std::int64_t>(y) - static_cast<std::int64_t>(x));
    };
    auto row_d = [w](std::string_view name, double x, double y, int prec) {
        fmt::print("{:<22} {:>{}.{}f} {:>{}.{}f} {:>+14.{}f}\n", name, x, w, prec, y, w, prec, y - x, prec);
    };
    row_u("files", a.files, b.files);
    row_u("bytes", a.bytes, b.bytes);
    row_u("chunks", a.chunks, b.chunks);
    row_u("distinct chunks", a.distinct_chunks, b.distinct_chunks);
    row_u("distinct bytes", a.distinct_bytes, b.distinct_bytes);
    row_d("dedup ratio %", 100.0 * a.dedup_ratio(), 100.0 * b.dedup_ratio(), 3);
    row_u("saved bytes", a.saved_bytes(), b.saved_bytes());
    row_u("size min", a.sizes.min(), b.sizes.min());
    row_u("size p50", a.sizes.p50(), b.sizes.p50());
    row_d("size mean", a.sizes.mean(), b.sizes.mean(), 0);
    row_u("size p95", a.sizes.p95(), b.sizes.p95());
    row_u("size max", a.sizes.max(), b.sizes.max());
    row_d("size stddev", a.sizes.stddev(), b.sizes.stddev(), 0);
    row_d("chunking MB/s", a.chunk_mb_s(), b.chunk_mb_s(), 0);
    fmt::print("{}: B's dedup ratio is {:+.3f} percentage points from A's (tolerance {} points; dedup ratio = "
               "distinct / total bytes, lower is better)\n",
               regression ? "REGRESSION" : "ok", delta_pp, tolerance);
}

int run(const CompareArgs& args) {
    const double tolerance = tools::parse_real(args.tolerance, "--tolerance", 0, 100);
    const Options base = args.corpus.profile.options();
    AnalyzeOptions options = corpus_options(args.corpus);
    // An error in one side's algorithm or profile says which side it is.
    const auto on_side = [](char side, const std::string& name, auto&& make) {
        try {
            if (find_algorithm(name) == nullptr)
                throw OptionError(fmt::format("unknown algorithm '{}': known algorithms are {}", name, algorithm_names()));
            return make();
        } catch (const OptionError& e) {
            throw OptionError(
                fmt::format("side {} (-{} {}): {}", static_cast<char>(std::toupper(side)), side, name, e.what()),
                e.field());
        }
    };
    const KernelLevel kernel = corpus_kernel(args.corpus);
    on_side('a', args.a, [] { return 0; });  // both names known before either side is built
    on_side('b', args.b, [] { return 0; });
    const AlgorithmInfo& info_a = *find_algorithm(args.a);
    const AlgorithmInfo& info_b = *find_algorithm(args.b);
    options.algorithms.push_back(on_side('a', args.a, [&] {
        return make_cut_finder(args.a, merged(for_side(info_a, info_b, base), args.a_profile), kernel);
    }));
    options.algorithms.push_back(on_side('b', args.b, [&] {
        return make_cut_finder(args.b, merged(for_side(info_b, info_a, base), args.b_profile), kernel);
    }));

    const AnalyzeReport report = run_analysis(args.corpus, options);
    report_issues(report, args.corpus.quiet);
    const AlgorithmResult& a = report.algorithms.at(0);
    const AlgorithmResult& b = report.algorithms.at(1);
    const double delta_pp = 100.0 * (b.dedup_ratio() - a.dedup_ratio());
    const bool regression = delta_pp > tolerance;

    if (args.json) {
        nlohmann::json doc{{"a", result_json(a)},
                           {"b", result_json(b)},
                           {"regression", regression},
                           {"dedup_ratio_delta_pp", delta_pp},
                           {"tolerance_pp", tolerance},
                           {"errors", issues_json(report.errors)},
                           {"warnings", issues_json(report.warnings)}};
        fmt::print("{}\n", doc.dump());
    } else if (args.csv) {
        std::string out = "side,";
        out.append(csv_header());
        out.append("a,").append(csv_row(a));
        out.append("b,").append(csv_row(b));
        fmt::print("{}", out);
    } else {
        print_side_by_side(a, b, delta_pp, regression, tolerance);
    }
    finish_stdout();
    if (regression) return kExitRegression;
    return report.errors.empty() ? kExitOk : kExitPartial;
}
}  // namespace

void add_compare_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<CompareArgs>();
    auto* cmd = app.add_subcommand("compare", "two algorithms or profiles side by side on a corpus; exit 1 when B "
                                              "deduplicates worse than A");
    with_choices(cmd->add_option("-a,--algorithm", args->a, "algorithm A (the reference)")->required()->type_name("NAME"),
                 algorithm_choices(false));
    with_choices(cmd->add_option("-b,--b-algorithm", args->b, "algorithm B (the candidate)")->required()->type_name("NAME"),
                 algorithm_choices(false));
    add_profile_options(*cmd, args->corpus.profile);
    constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
    add_size_option(*cmd, "--a-min", args->a_profile.min, 0, kMost, "minimum size for A only");
    add_size_option(*cmd, "--a-avg", args->a_profile.avg, 0, kMost, "average size for A only");
    add_size_option(*cmd, "--a-max", args->a_profile.max, 0, kMost, "maximum size for A only");
    add_size_option(*cmd, "--b-min", args->b_profile.min, 0, kMost, "minimum size for B only");
    add_size_option(*cmd, "--b-avg", args->b_profile.avg, 0, kMost, "average size for B only");
    add_size_option(*cmd, "--b-max", args->b_profile.max, 0, kMost, "maximum size for B only");
    cmd->add_option("--tolerance", args->tolerance,
                    "allowed worsening of B's dedup ratio, in percentage points (0..100)")
        ->type_name("POINTS")
        ->capture_default_str();
    add_corpus_options(*cmd, args->corpus);
    auto* csv = add_csv_flag(*cmd, args->csv, "a header, then rows a and b");
    auto* json = add_json_flag(*cmd, args->json,
                               "{\"a\": {...}, \"b\": {...}, \"regression\": bool, \"dedup_ratio_delta_pp\", ...} "
                               "with the fields of cdc analyze --json");
    csv->excludes(json);
    document(*cmd,
             {.notes = "Both run in one pass over the data. --min/--avg/--max/--key apply to both; --a-*/--b-* "
                       "override them for one side. Regression: 100 x (ratio B - ratio A) > --tolerance, where "
                       "ratio = distinct bytes / total bytes.",
              .examples = {{"cdc compare -a restic-rabin -b fastcdc ~/data",
                            "what switching from restic's chunker to FastCDC would cost"},
                           {"cdc compare -a fastcdc -b fastcdc --b-avg 16K --tolerance 0.5 ~/data",
                            "the same algorithm at 8 KiB and 16 KiB; exit 1 if 16 KiB loses over half a point"}},
              .exit_codes = exit_codes({{kExitRegression, "B deduplicates worse than A beyond --tolerance"},
                                        {kExitPartial, "no regression, but some inputs were skipped after errors"}})});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
