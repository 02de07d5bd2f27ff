// SPDX-License-Identifier: Apache-2.0
// One stream on several threads (cut_lengths_parallel): speculative chains
// of cuts from segment starts, joined where they meet.
//
// The cut after a chunk start s is a pure function of s and the stream's
// bytes (the driver contract: the window is the next min(max_size,
// remaining) bytes). Thread i cuts from b_i, the start of its segment, as
// if a chunk started there, until its chain passes b_{i+1}: its list L_i.
// L_0 is the stream's true chain. Once every list is done, thread i follows
// its own chain on from the last cut of L_i until a cut lands on b_j or on a
// cut of L_j (j > i): from there on its chain and L_j are the same chain.
// Its extension E_i and where it met, (j, the index in L_j after the
// meeting point), are all the join needs: the true chain is L_0, E_0, the
// rest of the list it met, that list's extension, and so on. Whenever the
// true chain is on L_j it reaches L_j's last cut, where E_j starts, so every
// thread's extension is computed once, in parallel, without knowing how the
// chains before it went.
#include <cdc/chunker.hpp>

#include <algorithm>
#include <exception>
#include <latch>
#include <thread>
#include <vector>

namespace cdc {

namespace {

struct Segment {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::vector<std::uint64_t> cuts;       // L_i: chunk ends from `begin`, the last >= `end`
    std::vector<std::uint64_t> extension;  // E_i: chunk ends after cuts.back(), up to the meeting point
    std::size_t met_segment = 0;           // the segment whose chain E_i met (0: none, it reached the end)
    std::size_t met_next = 0;              // the index in that segment's cuts after the meeting point
};

/// The bytes and whether the stream ends with them: a chunk is cut only
/// where a whole max_size window is there, or the stream ends.
struct Input {
    const std::uint8_t* data;
    std::size_t n;
    bool at_end;
    std::size_t max;
    /// Whether a chunk can start at pos (and cut there).
    bool can_cut(std::size_t pos) const noexcept { return pos < n && (at_end || n - pos >= max); }
};

std::size_t next_cut(const CutFinder& finder, const Input& in, std::size_t pos) noexcept {
    return pos + finder.find(in.data + pos, std::min(in.max, in.n - pos));
}

void cut_segment(const CutFinder& finder, const Input& in, Segment& s) {
    s.cuts.reserve((s.end - s.begin) / std::max<std::size_t>(1, finder.profile().normal_size / 2) + 16);
    std::size_t pos = s.begin;
    while (pos < s.end && in.can_cut(pos)) {
        pos = next_cut(finder, in, pos);
        s.cuts.push_back(pos);
    }
}

/// Follows segment i's chain from its last cut until it meets a later
/// segment's chain (or reaches the end of the stream).
void extend_segment(const CutFinder& finder, const Input& in, std::vector<Segment>& segs, std::size_t i) {
    Segment& s = segs[i];
    if (s.cuts.empty()) return;
    std::size_t pos = s.cuts.back();
    std::size_t j = i + 1;
    std::size_t k = 0;  // first cut of segs[j] not below pos
    for (;;) {
        // The segment whose chain could contain pos: the first whose last cut
        // is at or past it.
        while (j < segs.size() && (segs[j].cuts.empty() || segs[j].cuts.back() < pos)) {
            ++j;
            k = 0;
        }
        // Met no one: the chain ends where the input lets no more chunks be cut
        // (or past every other chain).
        if (j == segs.size() || !in.can_cut(pos)) {
            while (in.can_cut(pos)) s.extension.push_back(pos = next_cut(finder, in, pos));
            return;
        }
        if (pos == segs[j].begin) {
            s.met_segment = j;
            s.met_next = 0;
            return;
        }
        const auto& c = segs[j].cuts;
        while (k < c.size() && c[k] < pos) ++k;
        if (pos >= segs[j].begin && c[k] == pos) {
            s.met_segment = j;
            s.met_next = k + 1;
            return;
        }
        pos = next_cut(finder, in, pos);
        s.extension.push_back(pos);
    }
}

}  // namespace

std::size_t parallel_segment_min(const CutFinder& finder) noexcept {
    // Chains from unrelated starts meet within a few chunks on data with
    // content-defined cuts: a segment of 32 max_size chunks or more spends
    // little on its extension.
    return std::max<std::size_t>(std::size_t{1} << 20, 32 * finder.profile().max_size);
}

std::size_t cut_lengths_parallel(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                                 std::vector<std::uint32_t>& out, unsigned threads, std::size_t segment_min) {
    if (threads == 0) threads = std::max(1U, std::thread::hardware_concurrency());
    if (segment_min == 0) segment_min = parallel_segment_min(finder);
    const std::size_t n = bytes.size();
    const std::size_t parts = std::min<std::size_t>(threads, n / segment_min);
    if (parts <= 1) return cut_lengths(finder, bytes, at_end, out);
    const Input in{reinterpret_cast<const std::uint8_t*>(bytes.data()), n, at_end, finder.profile().max_size};
    std::vector<Segment> segs(parts);
    for (std::size_t i = 0; i < parts; ++i) {
        segs[i].begin = n / parts * i;
        segs[i].end = i + 1 == parts ? n : n / parts * (i + 1);
    }
    std::latch cut(static_cast<std::ptrdiff_t>(parts));
    // (each phase's failures apart: a thread reads every cut failure while
    // another may be failing in its extension)
    std::vector<std::exception_ptr> cut_failures(parts);
    std::vector<std::exception_ptr> extend_failures(parts);
    auto work = [&](std::size_t i) {
        try {
            cut_segment(finder, in, segs[i]);
        } catch (...) {
            cut_failures[i] = std::current_exception();
        }
        cut.arrive_and_wait();
        if (i + 1 == parts) return;
        for (const auto& f : cut_failures)
            if (f) return;
        try {
            extend_segment(finder, in, segs, i);
        } catch (...) {
            extend_failures[i] = std::current_exception();
        }
    };
    {
        std::vector<std::jthread> pool;
        pool.reserve(parts - 1);
        for (std::size_t i = 1; i < parts; ++i) pool.emplace_back(work, i);
        work(0);
    }
    for (const auto* list : {&cut_failures, &extend_failures})
        for (const auto& f : *list)
            if (f) std::rethrow_exception(f);

    // The join: L_0, E_0, the rest of the chain E_0 met, its extension, ...
    std::uint64_t last = 0;
    auto take = [&](const std::vector<std::uint64_t>& cuts, std::size_t from) {
        for (std::size_t k = from; k < cuts.size(); ++k) {
            out.push_back(static_cast<std::uint32_t>(cuts[k] - last));  // <= max_size
            last = cuts[k];
        }
    };
    std::size_t i = 0;
    std::size_t from = 0;
    for (;;) {
        take(segs[i].cuts, from);
        take(segs[i].extension, 0);
        if (segs[i].met_segment == 0) break;
        from = segs[i].met_next;
        i = segs[i].met_segment;
    }
    return last;
}

}  // namespace cdc
