// SPDX-License-Identifier: Apache-2.0
#include <cdc/error.hpp>
#include <cdc/corpus/sweep.hpp>

#include <fmt/format.h>

#include <cmath>

namespace cdc {

SizeHistogram size_histogram(const SizeStats& stats, std::uint64_t upper, std::size_t bins) {
    if (bins == 0) throw OptionError("bins = 0 is invalid: a histogram needs at least one bin", "bins");
    SizeHistogram h;
    const std::uint64_t width = (upper + 1 + bins - 1) / bins;  // ceil((upper + 1) / bins)
    h.edges.resize(bins + 1);
    for (std::size_t i = 0; i <= bins; ++i) h.edges[i] = width * i;
    h.counts.assign(bins, 0);
    for (const auto& [size, n] : stats.histogram()) {
        std::uint64_t bin = size / width;
        if (size > upper) h.above_upper += n;
        if (bin >= bins) bin = bins - 1;
        h.counts[static_cast<std::size_t>(bin)] += n;
        h.total += n;
    }
    return h;
}

Options scaled_options(std::string_view algorithm, const Options& base, double factor) {
    if (!(factor > 0) || !std::isfinite(factor))
        throw OptionError(fmt::format("scale factor = {} is invalid: must be > 0", factor), "scale_factors");
    const Profile p = resolve_profile(algorithm, base);
    auto scale = [&](std::size_t v) { return static_cast<std::size_t>(std::llround(static_cast<double>(v) * factor)); };
    Options o = base;
    o.min_size = scale(p.min_size);
    o.normal_size = scale(p.normal_size);
    o.max_size = scale(p.max_size);
    (void)resolve_profile(algorithm, o);  // throws OptionError naming the broken rule
    return o;
}

std::vector<SweepPoint> dedup_sweep(const WalkResult& walk, std::string_view algorithm, const Options& base,
                                    std::span<const double> factors, unsigned jobs, std::vector<double>* skipped,
                                    std::vector<InputIssue>* errors) {
    AnalyzeOptions options;
    options.jobs = jobs;
    std::vector<double> used;
    for (double f : factors) {
        try {
            options.algorithms.push_back(make_cut_finder(algorithm, scaled_options(algorithm, base, f)));
            used.push_back(f);
        } catch (const OptionError&) {
            if (skipped != nullptr) skipped->push_back(f);
        }
    }
    std::vector<SweepPoint> points;
    if (options.algorithms.empty()) return points;
    const AnalyzeReport report = analyze(walk, options);
    if (errors != nullptr) errors->insert(errors->end(), report.errors.begin(), report.errors.end());
    for (std::size_t i = 0; i < report.algorithms.size(); ++i) {
        const AlgorithmResult& r = report.algorithms[i];
        SweepPoint p;
        p.factor = used[i];
        p.profile = r.profile;
        p.bytes = r.bytes;
        p.chunks = r.chunks;
        p.distinct_chunks = r.distinct_chunks;
        p.distinct_bytes = r.distinct_bytes;
        p.dedup_ratio = r.dedup_ratio();
        p.mean_chunk_size = r.chunks ? static_cast<double>(r.bytes) / static_cast<double>(r.chunks) : 0;
        points.push_back(p);
    }
    return points;
}

std::vector<std::size_t> doubling_counts(std::size_t max) {
    if (max == 0) return {0};  // no edits: the control point (everything shared)
    std::vector<std::size_t> out;
    for (std::size_t n = 1; n <= max; n *= 2) {
        out.push_back(n);
        if (n > max / 2) break;
    }
    return out;
}

std::vector<ResyncCurve> resync_curves(std::span<const std::shared_ptr<const CutFinder>> finders,
                                       std::span<const std::uint8_t> original,
                                       std::span<const std::size_t> edit_counts, const EditSpec& spec,
                                       std::size_t trials, DigestKind digest) {
    std::vector<ResyncCurve> curves(finders.size());
    for (std::size_t f = 0; f < finders.size(); ++f) curves[f].algorithm = finders[f]->name();
    for (std::size_t count : edit_counts) {
        EditSpec s = spec;
        s.count = count;
        const auto summaries = run_resync(finders, original, s, trials, digest);
        for (std::size_t f = 0; f < summaries.size() && f < curves.size(); ++f) {
            curves[f].algorithm = summaries[f].algorithm;
            curves[f].points.push_back({count, summaries[f].shared_pct_mean, summaries[f].shared_pct_min,
                                        summaries[f].chunks_edited_mean});
        }
    }
    return curves;
}

}  // namespace cdc
