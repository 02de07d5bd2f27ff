// SPDX-License-Identifier: Apache-2.0
// cdc dupes: which file of each group is kept and what happens to every
// other path; for hardlink and reflink, groups split into merge sets by
// file system, owner, group, mode and extended attributes.
#include "internal.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fnmatch.h>
#include <set>
#include <span>

namespace cdc {

using namespace dupes_detail;

DupesAction parse_dupes_action(std::string_view name) { return parse_name(kDupesActionNames, name, "action"); }

std::string_view to_string(DupesAction action) noexcept { return name_of(kDupesActionNames, action); }

KeepRule parse_keep_rule(std::string_view text) {
    KeepRule r;
    if (text == "oldest") {
        r.kind = KeepRule::Kind::oldest;
    } else if (text == "first") {
        r.kind = KeepRule::Kind::first;
    } else if (text.empty()) {
        throw OptionError("keep = '' is invalid: must be oldest, first or a path pattern", "keep");
    } else {
        r.kind = KeepRule::Kind::pattern;
        r.pattern = std::string(text);
    }
    return r;
}

std::size_t choose_kept(std::span<const DupesFile> files, const KeepRule& rule) {
    const std::size_t n = files.size();
    if (n == 0) return 0;
    switch (rule.kind) {
        case KeepRule::Kind::first: return 0;  // files are sorted by first path
        case KeepRule::Kind::oldest: {
            std::size_t best = 0;
            for (std::size_t i = 1; i < n; ++i)
                if (files[i].mtime_ns < files[best].mtime_ns) best = i;
            return best;
        }
        case KeepRule::Kind::pattern:
            for (std::size_t i = 0; i < n; ++i)
                for (const std::string_view p : files[i].paths)
                    if (::fnmatch(rule.pattern.c_str(), p.data(), 0) == 0) return i;
            return n;
    }
    return n;
}

namespace {

constexpr std::size_t kNone = SIZE_MAX;
constexpr const char* kNoMatch = "no path of the group matches the --keep pattern";

// The merge keys of a grouped file, read from an open descriptor; "" or why
// the file cannot take part.
std::string examine(const DupesFile& f, FileMeta& meta) {
    const Fd fd(open_read(f.first_path().data(), false));
    if (fd.get() < 0) return fmt::format("cannot open: {}", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !same_identity(st, f)) return "changed since the scan";
    return read_meta(fd.get(), meta);
}

// The steps of one group.
class GroupPlan {
public:
    GroupPlan(const DupesResult& result, std::size_t group, DupesAction action, std::vector<DupesStep>& steps)
        : result_(result), group_(result.group(group)), index_(group), action_(action), steps_(steps) {}

    // delete: one file kept for the whole group, whatever its metadata.
    void remove(const KeepRule& keep) {
        const std::size_t k = choose_kept(group_.files, keep);
        for (std::size_t i = 0; i < group_.files.size(); ++i)
            if (i != k) add(i, k, k < group_.files.size() ? "" : kNoMatch);
    }

    // hardlink, reflink: merge sets of equal keys, one file kept in each.
    void merge(const KeepRule& keep, const DupesOptions& options) {
        const std::size_t n = group_.files.size();
        std::vector<FileMeta> meta(n);
        std::vector<std::string> error(n);
        std::vector<DupesFile> readable;  // (for choose_kept)
        std::vector<std::size_t> readable_index;
        for (std::size_t i = 0; i < n; ++i) {
            error[i] = examine(group_.files[i], meta[i]);
            if (error[i].empty()) readable.push_back(group_.files[i]), readable_index.push_back(i);
        }
        // The file kept for the group: its set merges into it, the files of
        // other sets are compared with it in the reasons.
        const std::size_t r = choose_kept(readable, keep);
        const std::size_t primary = r < readable.size() ? readable_index[r] : kNone;
        std::vector<std::vector<std::size_t>> sets;
        for (const std::size_t i : readable_index) {
            auto it = std::find_if(sets.begin(), sets.end(), [&](const auto& set) {
                return meta[set.front()].same_keys(meta[i], options.ignore_metadata);
            });
            if (it == sets.end())
                sets.push_back({i});
            else
                it->push_back(i);
        }
        std::vector<std::size_t> kept_of(n, kNone);
        std::vector<std::string> reason(n);
        for (const auto& set : sets) {
            std::size_t k = kNone;
            if (std::find(set.begin(), set.end(), primary) != set.end()) {
                k = primary;
            } else if (primary != kNone) {
                std::vector<DupesFile> files;
                for (const std::size_t i : set) files.push_back(group_.files[i]);
                const std::size_t c = choose_kept(files, keep);
                if (c < set.size()) k = set[c];
            }
            for (const std::size_t i : set) {
                kept_of[i] = k;
                if (k == kNone) reason[i] = kNoMatch;
            }
            if (k != kNone && k != primary) {
                // Not merged with the group's kept file: say why.
                kept_of[k] = primary;
                reason[k] = fmt::format("not merged: different {}{}", meta_difference(meta[k], meta[primary], options.ignore_metadata),
                                        set.size() > 1 ? fmt::format(" (kept for the {} other file(s) of its merge set)", set.size() - 1)
                                                       : std::string());
                is_kept_.insert(k);
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (i == primary) continue;
            if (!error[i].empty()) add(i, primary, error[i]);
            else add(i, kept_of[i], reason[i], is_kept_.contains(i));
        }
        if (action_ == DupesAction::reflink) probe_reflink(options);
    }

private:
    // One step per path of file i; `why`: skipped (or kept, on purpose).
    void add(std::size_t i, std::size_t k, std::string_view why, bool on_purpose = false) {
        for (const std::string_view path : group_.files[i].paths) {
            DupesStep s;
            s.action = action_;
            s.path = path;
            s.group = index_;
            s.file = i;
            s.kept_file = k;
            if (k != kNone && k < group_.files.size()) s.kept = group_.files[k].first_path();
            if (!why.empty()) {
                s.status = on_purpose ? DupesStep::Status::kept : DupesStep::Status::skipped;
                s.reason = std::string(why);
            }
            steps_.push_back(std::move(s));
        }
    }

    // A dry run must fail where the run would: FIDEDUPERANGE of zero bytes
    // from the kept file to each duplicate (it changes nothing).
    void probe_reflink(const DupesOptions& options) {
        for (DupesStep& s : std::span(steps_).subspan(first_step_)) {
            if (s.status != DupesStep::Status::planned) continue;
            VerifiedPair v;
            std::string why = v.open(result_.data().roots, group_.files[s.kept_file], group_.files[s.file], s.path, true);
            bool unsupported = false;
            if (why.empty()) why = v.dedupe(0, 0, unsupported);
            if (unsupported)
                throw IoError(fmt::format("reflink is not supported here: '{}' -> '{}': {} (the file system must "
                                          "support FIDEDUPERANGE, e.g. Btrfs or XFS; use --action hardlink instead)",
                                          s.path, s.kept, why));
            if (!why.empty()) {
                s.status = DupesStep::Status::skipped;
                s.reason = why;
                if (options.warning) options.warning(fmt::format("'{}' cannot be reflinked: {}", s.path, why));
            }
        }
    }

    const DupesResult& result_;
    const DupesGroup group_;
    std::size_t index_;
    DupesAction action_;
    std::vector<DupesStep>& steps_;
    std::size_t first_step_ = steps_.size();
    std::set<std::size_t> is_kept_;  // files kept on purpose (their merge set's own kept file)
};

}  // namespace

std::vector<DupesStep> plan_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                         const DupesOptions& options) {
    std::vector<DupesStep> steps;
    if (action == DupesAction::report) return steps;
    refuse_followed_links(options);
    // One step per grouped path but the kept ones (reserved: no copy while growing).
    std::size_t most = 0;
    for (std::size_t gi = 0; gi < result.group_count(); ++gi)
        for (const DupesFile& f : result.group(gi).files) most += f.paths.size();
    steps.reserve(most);
    for (std::size_t gi = 0; gi < result.group_count(); ++gi) {
        GroupPlan plan(result, gi, action, steps);
        if (action == DupesAction::remove)
            plan.remove(keep);
        else
            plan.merge(keep, options);
    }
    return steps;
}

std::vector<DupesStep> apply_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                          bool dry_run, const DupesOptions& options) {
    std::vector<DupesStep> steps = plan_dupes_action(result, action, keep, options);
    if (!dry_run && action != DupesAction::report) apply_dupes_plan(result, steps, options);
    return steps;
}

}  // namespace cdc
