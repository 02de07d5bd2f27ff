// SPDX-License-Identifier: Apache-2.0
// cdc/retention.hpp — which snapshots a keep policy keeps: the rules of
// `cdc store forget --keep-*`, with restic's documented semantics (restic's
// doc/060_forget.rst), as a pure function of a list of snapshots.
//
//   cdc::store::RetentionPolicy p;
//   p.daily = 7;
//   p.weekly = 5;
//   p.within = cdc::store::parse_calendar_duration("1m");
//   cdc::store::RetentionOptions o;  // grouped by host and paths
//   o.now_ns = now;
//   for (const auto& group : cdc::store::apply_retention(snapshots, p, o))
//       for (const auto& d : group.snapshots)
//           if (!d.keep) forget(snapshots[d.index].id);
//
// The rules, each applied to one group of snapshots (group_by: by default
// those of one host and one set of paths), newest first:
// - keep_last N: the N newest snapshots.
// - hourly, daily, weekly, monthly, yearly N: for the N newest hours (days,
//   ISO weeks: Monday to Sunday, numbered within their ISO year; months;
//   years) that have snapshots, the newest snapshot of each. Calendar units
//   are those of the snapshot's local time (SnapshotInfo::utc_offset_s, or
//   the time zone of the process: TZ). Only units that have a snapshot
//   count. While such a rule has units left when the oldest snapshot of the
//   group is reached, that snapshot is kept too ("oldest daily snapshot"):
//   the history kept reaches as far back as there is any.
// - kKeepAll (-1) instead of N: every unit, without limit.
// - within D ("2y5m7d3h"): every snapshot newer than the newest snapshot of
//   its group minus D (years, months and days on the calendar, then
//   hours). Snapshots dated in the future (after now_ns) are never the
//   newest: they do not move the window, and they are within it.
// - within_hourly ... within_yearly D: the newest snapshot of each hour
//   (day, week, month, year) within D, and the oldest snapshot of the
//   group too if it is within D.
// - tags: every snapshot that has all the tags of one of the lists (a list
//   {""} matches the snapshots without any tag).
// A snapshot is kept if any rule keeps it (each rule that does gives a
// reason); every other one is forgotten. A unit counts once per rule: a
// snapshot kept as the day's newest by `daily` uses up one of `daily`'s N
// whatever other rules keep it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::store {

/// A duration on the calendar, as restic writes it: "2y5m7d3h" (years,
/// months, days, hours).
struct CalendarDuration {
    int years = 0, months = 0, days = 0, hours = 0;

    bool zero() const noexcept { return years == 0 && months == 0 && days == 0 && hours == 0; }
    /// "2y5m7d3h", the units that are not 0 only ("" when zero).
    std::string text() const;
    bool operator==(const CalendarDuration&) const = default;
};

/// Parses numbers, each followed by its unit (y, m, d or h), each unit at
/// most once, in any order: "1y", "7d", "2y5m7d3h", "36h". Throws
/// OptionError (field `field`) naming the text if it is empty, has a
/// number without a unit, an unknown or repeated unit, a sign, or a number
/// above 1,000,000.
CalendarDuration parse_calendar_duration(std::string_view text, std::string_view field = "keep_within");

/// What a rule needs to know of a snapshot.
struct SnapshotInfo {
    std::string id;
    std::int64_t time_ns = 0;  ///< when it was taken, Unix time in nanoseconds
    /// The UTC offset of the machine's clock that took it, in seconds east
    /// of UTC: the calendar units (hours, days, weeks...) are of that local
    /// time. None: the time zone of this process (TZ).
    std::optional<std::int32_t> utc_offset_s;
    std::string host;
    std::vector<std::string> paths;
    std::vector<std::string> tags;
};

/// A count that keeps every unit.
inline constexpr int kKeepAll = -1;

/// Which snapshots to keep (see the top). A count is 0 (the rule is off),
/// N > 0 or kKeepAll; a zero duration is off.
struct RetentionPolicy {
    int last = 0, hourly = 0, daily = 0, weekly = 0, monthly = 0, yearly = 0;
    CalendarDuration within;
    CalendarDuration within_hourly, within_daily, within_weekly, within_monthly, within_yearly;
    /// Keep the snapshots that have every tag of at least one list.
    std::vector<std::vector<std::string>> tags;

    /// No rule on: a policy that would keep nothing.
    bool empty() const noexcept;
    /// "keep 7 daily, 5 weekly snapshots and all snapshots within 1m of
    /// the newest" ("" when empty).
    std::string text() const;
};

/// What snapshots are grouped by; each group has the policy applied on its
/// own (the default: one host and one set of paths). None: one group.
struct GroupBy {
    bool host = true;
    bool paths = true;
    bool tags = false;
};

/// "host,paths", "paths,tags", "" (none); "hosts", "path", "tag" too.
/// Throws OptionError (field "group_by") for another word.
GroupBy parse_group_by(std::string_view text);

struct RetentionOptions {
    GroupBy group_by;
    /// Now, Unix time in nanoseconds: snapshots after it are in the future.
    std::int64_t now_ns = 0;
    /// Allow a group whose every snapshot would be forgotten (only a policy
    /// of tags can do that); otherwise apply_retention refuses.
    bool allow_remove_all = false;
};

/// The verdict on one snapshot.
struct RetentionDecision {
    std::size_t index = 0;  ///< in the list given to apply_retention
    bool keep = false;
    /// Why it is kept, one a rule, in the order of the rules above: "last
    /// snapshot", "hourly snapshot", "oldest daily snapshot", "within 2y5m",
    /// "daily within 7d", "has tags a,b", "has no tag". Empty: forgotten.
    std::vector<std::string> reasons;
};

/// One group: the key it was grouped by (what group_by leaves out is empty;
/// paths and tags sorted) and its snapshots, newest first.
struct RetentionGroup {
    std::string host;
    std::vector<std::string> paths;
    std::vector<std::string> tags;
    std::vector<RetentionDecision> snapshots;

    std::size_t kept() const noexcept;
};

/// Applies `policy` to each group of `snapshots` (groups sorted by their
/// key; inside a group newest first, snapshots of the same time ordered by
/// id, the smaller first). Every snapshot is in exactly one group. Throws
/// OptionError: for an empty policy (field "keep": forgetting everything
/// is done by naming the snapshots), a count below -1 or a negative
/// duration (field "keep_last", "keep_daily", ..., "keep_within", ...),
/// and for a group whose every snapshot would be forgotten, naming it
/// (field "keep_tag"), unless allow_remove_all.
std::vector<RetentionGroup> apply_retention(std::span<const SnapshotInfo> snapshots, const RetentionPolicy& policy,
                                            const RetentionOptions& options);

}  // namespace cdc::store
