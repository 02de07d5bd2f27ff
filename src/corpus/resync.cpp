// SPDX-License-Identifier: Apache-2.0
// Seeded edits and the shared-bytes measure; see cdc/corpus/resync.hpp.
#include <cdc/chunker.hpp>
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/error.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/corpus/splitmix64.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace cdc {

namespace {
// The fingerprint and length of every chunk of `data` (a memory source).
struct Fingerprints {
    std::vector<std::uint32_t> lengths;
    std::vector<Digest> digests;
};

Fingerprints fingerprint_chunks(const CutFinder& finder, std::span<const std::uint8_t> data, DigestKind digest) {
    Fingerprints f;
    const auto bytes = std::as_bytes(data);
    cut_lengths(finder, bytes, true, f.lengths);
    f.digests.resize(f.lengths.size());
    compute_digests(digest, bytes, f.lengths, f.digests);
    return f;
}
}  // namespace

EditKind parse_edit_kind(std::string_view name) { return parse_name(kEditKindNames, name, "edit_kind"); }

std::string_view to_string(EditKind kind) noexcept { return name_of(kEditKindNames, kind); }

std::vector<Edit> plan_edits(std::uint64_t original_size, const EditSpec& spec) {
    SplitMix64 rng(spec.seed);
    std::vector<Edit> edits;
    edits.reserve(spec.count);
    std::uint64_t cur = original_size;
    for (std::size_t i = 0; i < spec.count; ++i) {
        EditKind kind = spec.kind;
        if (kind == EditKind::mixed) kind = static_cast<EditKind>(rng.below(3));
        if (kind != EditKind::insert && cur == 0) kind = EditKind::insert;
        Edit e;
        e.kind = kind;
        if (kind == EditKind::insert) {
            e.offset = rng.below(cur + 1);
            e.size = spec.size;
            cur += e.size;
        } else {
            e.offset = rng.below(cur);
            e.size = std::min<std::uint64_t>(spec.size, cur - e.offset);
            if (kind == EditKind::remove) cur -= e.size;
        }
        edits.push_back(e);
    }
    return edits;
}

std::vector<std::uint8_t> apply_edits(std::span<const std::uint8_t> original, std::span<const Edit> edits,
                                      std::uint64_t seed) {
    SplitMix64 rng(seed ^ 0x5eed0f0edd17ULL);  // content stream, independent of the positions'
    std::vector<std::uint8_t> data(original.begin(), original.end());
    for (const Edit& e : edits) {
        const auto size = static_cast<std::size_t>(e.size);
        const auto off = static_cast<std::size_t>(e.offset);
        switch (e.kind) {
            case EditKind::insert: {
                if (e.offset > data.size())
                    throw OptionError(fmt::format("edit: insert at {} is outside the data ({} bytes)", e.offset,
                                                  data.size()));
                std::vector<std::uint8_t> fresh(size);
                rng.fill({fresh.data(), fresh.size()});
                data.insert(data.begin() + static_cast<std::ptrdiff_t>(off), fresh.begin(), fresh.end());
                break;
            }
            case EditKind::remove:
            case EditKind::overwrite:
                if (e.offset > data.size() || e.size > data.size() - e.offset)
                    throw OptionError(fmt::format("edit: {} of {} bytes at {} is outside the data ({} bytes)",
                                                  to_string(e.kind), e.size, e.offset, data.size()));
                if (e.kind == EditKind::remove)
                    data.erase(data.begin() + static_cast<std::ptrdiff_t>(off),
                               data.begin() + static_cast<std::ptrdiff_t>(off + size));
                else
                    rng.fill({data.data() + off, size});
                break;
            case EditKind::mixed: throw OptionError("edit: kind 'mixed' is a plan, not an edit");
        }
    }
    return data;
}

ResyncResult measure_resync(const CutFinder& finder, std::span<const std::uint8_t> original,
                            std::span<const std::uint8_t> edited, DigestKind digest) {
    if (digest == DigestKind::none) throw OptionError("resync: digest = 'none' is invalid: chunks must be fingerprinted", "digest");
    ResyncResult r;
    r.algorithm = std::string(finder.name());
    r.bytes_orig = original.size();
    r.bytes_edited = edited.size();
    DedupIndex seen;
    const Fingerprints orig = fingerprint_chunks(finder, original, digest);
    for (std::size_t i = 0; i < orig.lengths.size(); ++i) seen.insert(orig.digests[i], orig.lengths[i]);
    const Fingerprints edit = fingerprint_chunks(finder, edited, digest);
    for (std::size_t i = 0; i < edit.lengths.size(); ++i)
        if (seen.contains(edit.digests[i])) r.shared_bytes += edit.lengths[i];
    r.chunks_orig = orig.lengths.size();
    r.chunks_edited = edit.lengths.size();
    r.shared_pct = edited.empty() ? 100.0
                                  : 100.0 * static_cast<double>(r.shared_bytes) / static_cast<double>(edited.size());
    return r;
}

std::vector<ResyncSummary> run_resync(std::span<const std::shared_ptr<const CutFinder>> finders,
                                      std::span<const std::uint8_t> original, const EditSpec& spec,
                                      std::size_t trials, DigestKind digest) {
    if (trials == 0) throw OptionError("trials = 0 is invalid: must be at least 1", "trials");
    std::vector<ResyncSummary> out(finders.size());
    for (std::size_t f = 0; f < finders.size(); ++f) {
        out[f].algorithm = std::string(finders[f]->name());
        out[f].trials = trials;
    }
    for (std::size_t t = 0; t < trials; ++t) {
        EditSpec s = spec;
        s.seed = spec.seed + t;
        const auto edits = plan_edits(original.size(), s);
        const auto edited = apply_edits(original, edits, s.seed);
        for (std::size_t f = 0; f < finders.size(); ++f)
            out[f].runs.push_back(measure_resync(*finders[f], original, edited, digest));
    }
    for (auto& s : out) {
        double sum = 0, edited = 0;
        s.shared_pct_min = 100.0;
        for (const auto& r : s.runs) {
            sum += r.shared_pct;
            edited += static_cast<double>(r.chunks_edited);
            s.shared_pct_min = std::min(s.shared_pct_min, r.shared_pct);
        }
        s.shared_pct_mean = sum / static_cast<double>(trials);
        s.chunks_edited_mean = edited / static_cast<double>(trials);
        s.chunks_orig = static_cast<double>(s.runs.front().chunks_orig);
    }
    return out;
}

}  // namespace cdc
