// SPDX-License-Identifier: Apache-2.0
// The keep rules of forget; see cdc/retention.hpp.
#include <cdc/error.hpp>
#include <cdc/retention.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>
#include <tuple>

namespace cdc::store {

namespace {

namespace chr = std::chrono;

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr int kMaxDurationNumber = 1'000'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// A moment on a snapshot's local calendar.
struct LocalTime {
    int year = 0;
    unsigned month = 0, day = 0;  // 1-based
    int hour = 0;
};

chr::sys_days days_of(int y, unsigned m, unsigned d) {
    return chr::sys_days(chr::year(y) / chr::month(m) / chr::day(d));
}

// Where a snapshot's offset is fixed, the calendar is plain arithmetic;
// otherwise it is this process's time zone (localtime_r / mktime).
LocalTime local_time(std::int64_t time_ns, std::optional<std::int32_t> offset) {
    const std::int64_t secs = floor_div(time_ns, kNsPerSecond);
    if (offset) {
        const std::int64_t local = secs + *offset;
        const std::int64_t days = floor_div(local, 86400);
        const chr::year_month_day ymd{chr::sys_days(chr::days(days))};
        return {static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>((local - days * 86400) / 3600)};
    }
    const auto t = static_cast<std::time_t>(secs);
    std::tm tm{};
    ::localtime_r(&t, &tm);
    return {tm.tm_year + 1900, static_cast<unsigned>(tm.tm_mon + 1), static_cast<unsigned>(tm.tm_mday), tm.tm_hour};
}

// The ISO 8601 week: year * 100 + week, the week (Monday to Sunday) being
// numbered within the year its Thursday falls in.
std::int64_t iso_week(const LocalTime& t) {
    const chr::sys_days date = days_of(t.year, t.month, t.day);
    const unsigned from_monday = chr::weekday(date).iso_encoding() - 1;
    const chr::sys_days thursday = date - chr::days(from_monday) + chr::days(3);
    const chr::year_month_day th{thursday};
    const chr::sys_days jan1 = chr::sys_days(th.year() / chr::January / 1);
    return std::int64_t{static_cast<int>(th.year())} * 100 + (thursday - jan1).count() / 7 + 1;
}

enum class Unit { snapshot, hour, day, week, month, year };

std::int64_t bucket_of(Unit unit, const LocalTime& t, std::size_t nr) {
    const std::int64_t y = t.year, m = t.month, d = t.day, h = t.hour;
    switch (unit) {
        case Unit::snapshot: return static_cast<std::int64_t>(nr);
        case Unit::hour: return ((y * 100 + m) * 100 + d) * 100 + h;
        case Unit::day: return (y * 100 + m) * 100 + d;
        case Unit::week: return iso_week(t);
        case Unit::month: return y * 100 + m;
        case Unit::year: return y;
    }
    return 0;
}

// The newest moment outside `within` of `newest`: years, months and days
// taken off on the calendar (an overflowing day carried into the next
// month, as 31 March - 1 month = 3 March), then the hours as hours.
std::int64_t window_start(std::int64_t newest_ns, std::optional<std::int32_t> offset, const CalendarDuration& d) {
    const std::int64_t secs = floor_div(newest_ns, kNsPerSecond);
    const std::int64_t frac = newest_ns - secs * kNsPerSecond;
    std::int64_t start = 0;
    if (offset) {
        const std::int64_t local = secs + *offset;
        const std::int64_t days = floor_div(local, 86400);
        const std::int64_t time_of_day = local - days * 86400;
        const chr::year_month_day ymd{chr::sys_days(chr::days(days))};
        const std::int64_t months = (std::int64_t{static_cast<int>(ymd.year())} - d.years) * 12 +
                                    (static_cast<unsigned>(ymd.month()) - 1) - d.months;
        const std::int64_t y = floor_div(months, 12);
        const chr::sys_days first = days_of(static_cast<int>(y), static_cast<unsigned>(months - y * 12 + 1), 1);
        const chr::sys_days day = first + chr::days(static_cast<unsigned>(ymd.day()) - 1) - chr::days(d.days);
        start = std::int64_t{day.time_since_epoch().count()} * 86400 + time_of_day - *offset;
    } else {
        const auto t = static_cast<std::time_t>(secs);
        std::tm tm{};
        ::localtime_r(&t, &tm);
        tm.tm_year -= d.years;
        tm.tm_mon -= d.months;
        tm.tm_mday -= d.days;
        tm.tm_isdst = -1;  // whichever is in force on that day
        start = ::mktime(&tm);
    }
    return (start - std::int64_t{d.hours} * 3600) * kNsPerSecond + frac;
}

struct CountRule {
    int count;  ///< units left (kKeepAll: no limit)
    Unit unit;
    const char* name;  ///< "last", "hourly", ...
};

struct WithinRule {
    const CalendarDuration* within;
    Unit unit;
    const char* name;
};

bool has_tags(const SnapshotInfo& s, const std::vector<std::string>& list) {
    for (const auto& tag : list) {
        if (tag.empty() && s.tags.empty()) return true;
        if (std::find(s.tags.begin(), s.tags.end(), tag) == s.tags.end()) return false;
    }
    return true;
}

std::string tags_reason(const std::vector<std::string>& list) {
    if (list.size() == 1 && list[0].empty()) return "has no tag";
    return fmt::format("has tags {}", fmt::join(list, ","));
}

std::string group_name(const RetentionGroup& g) {
    std::vector<std::string> parts;
    if (!g.host.empty()) parts.push_back(fmt::format("host {}", g.host));
    if (!g.paths.empty()) parts.push_back(fmt::format("paths {}", fmt::join(g.paths, " ")));
    if (!g.tags.empty()) parts.push_back(fmt::format("tags {}", fmt::join(g.tags, ",")));
    return parts.empty() ? std::string("all snapshots") : fmt::format("{}", fmt::join(parts, ", "));
}

void check(const RetentionPolicy& p) {
    const std::array<std::pair<int, const char*>, 6> counts = {{{p.last, "keep_last"},
                                                                {p.hourly, "keep_hourly"},
                                                                {p.daily, "keep_daily"},
                                                                {p.weekly, "keep_weekly"},
                                                                {p.monthly, "keep_monthly"},
                                                                {p.yearly, "keep_yearly"}}};
    for (const auto& [n, field] : counts)
        if (n < kKeepAll)
            throw OptionError(fmt::format("{} = {} is invalid: a count is 0 or more, or -1 (every unit)", field, n),
                              field);
    const std::array<std::pair<const CalendarDuration*, const char*>, 6> durations = {
        {{&p.within, "keep_within"},
         {&p.within_hourly, "keep_within_hourly"},
         {&p.within_daily, "keep_within_daily"},
         {&p.within_weekly, "keep_within_weekly"},
         {&p.within_monthly, "keep_within_monthly"},
         {&p.within_yearly, "keep_within_yearly"}}};
    for (const auto& [d, field] : durations)
        if (d->years < 0 || d->months < 0 || d->days < 0 || d->hours < 0 || d->years > kMaxDurationNumber ||
            d->months > kMaxDurationNumber || d->days > kMaxDurationNumber || d->hours > kMaxDurationNumber)
            throw OptionError(fmt::format("{} is invalid: each part of a duration is in [0, {}]", field,
                                          kMaxDurationNumber),
                              field);
    if (p.empty())
        throw OptionError("no keep rule given: every snapshot would be forgotten (to forget given snapshots, name "
                          "them)",
                          "keep");
}

// The rules on one group, its snapshots newest first.
void apply_to_group(RetentionGroup& g, std::span<const SnapshotInfo> all, const RetentionPolicy& p,
                    std::int64_t now_ns) {
    auto& list = g.snapshots;
    // The newest snapshot not in the future; none: every snapshot is in
    // any window.
    std::optional<std::size_t> newest;
    for (std::size_t i = 0; i < list.size() && !newest; ++i)
        if (all[list[i].index].time_ns < now_ns) newest = i;
    auto within_of = [&](const CalendarDuration& d) {
        if (!newest) return std::numeric_limits<std::int64_t>::min();
        const SnapshotInfo& n = all[list[*newest].index];
        return window_start(n.time_ns, n.utc_offset_s, d);
    };

    std::array<CountRule, 6> counts = {{{p.last, Unit::snapshot, "last"},
                                        {p.hourly, Unit::hour, "hourly"},
                                        {p.daily, Unit::day, "daily"},
                                        {p.weekly, Unit::week, "weekly"},
                                        {p.monthly, Unit::month, "monthly"},
                                        {p.yearly, Unit::year, "yearly"}}};
    const std::array<WithinRule, 5> withins = {{{&p.within_hourly, Unit::hour, "hourly"},
                                                {&p.within_daily, Unit::day, "daily"},
                                                {&p.within_weekly, Unit::week, "weekly"},
                                                {&p.within_monthly, Unit::month, "monthly"},
                                                {&p.within_yearly, Unit::year, "yearly"}}};
    std::array<std::optional<std::int64_t>, 6> last_count_bucket;
    std::array<std::optional<std::int64_t>, 5> last_within_bucket;
    std::array<std::int64_t, 5> within_start{};
    for (std::size_t w = 0; w < withins.size(); ++w)
        if (!withins[w].within->zero()) within_start[w] = within_of(*withins[w].within);
    const std::int64_t plain_start = p.within.zero() ? 0 : within_of(p.within);

    for (std::size_t nr = 0; nr < list.size(); ++nr) {
        RetentionDecision& dec = list[nr];
        const SnapshotInfo& s = all[dec.index];
        const bool oldest = nr + 1 == list.size();
        const LocalTime t = local_time(s.time_ns, s.utc_offset_s);
        for (const auto& l : p.tags)
            if (has_tags(s, l)) dec.reasons.push_back(tags_reason(l));
        if (!p.within.zero() && s.time_ns > plain_start) dec.reasons.push_back("within " + p.within.text());
        // A unit counts once per rule: the newest snapshot of each unit is
        // the first of it in this order. The oldest snapshot of the group
        // is kept while the rule has units left.
        for (std::size_t r = 0; r < counts.size(); ++r) {
            CountRule& rule = counts[r];
            if (rule.count == 0) continue;
            const std::int64_t bucket = bucket_of(rule.unit, t, nr);
            const bool new_unit = last_count_bucket[r] != bucket;
            if (!new_unit && !oldest) continue;
            last_count_bucket[r] = bucket;
            if (rule.count > 0) --rule.count;
            dec.reasons.push_back(fmt::format("{}{} snapshot", new_unit ? "" : "oldest ", rule.name));
        }
        for (std::size_t w = 0; w < withins.size(); ++w) {
            const WithinRule& rule = withins[w];
            if (rule.within->zero() || s.time_ns <= within_start[w]) continue;
            const std::int64_t bucket = bucket_of(rule.unit, t, nr);
            const bool new_unit = last_within_bucket[w] != bucket;
            if (!new_unit && !oldest) continue;
            last_within_bucket[w] = bucket;
            dec.reasons.push_back(
                fmt::format("{}{} within {}", new_unit ? "" : "oldest ", rule.name, rule.within->text()));
        }
        dec.keep = !dec.reasons.empty();
    }
}

}  // namespace

std::string CalendarDuration::text() const {
    std::string s;
    if (years != 0) s += fmt::format("{}y", years);
    if (months != 0) s += fmt::format("{}m", months);
    if (days != 0) s += fmt::format("{}d", days);
    if (hours != 0) s += fmt::format("{}h", hours);
    return s;
}

CalendarDuration parse_calendar_duration(std::string_view text, std::string_view field) {
    auto bad = [&](std::string_view why) {
        return OptionError(fmt::format("{} = '{}' is invalid: {} (expected a duration such as 7d, 36h, 1y6m or "
                                       "2y5m7d3h)",
                                       field, text, why),
                           std::string(field));
    };
    if (text.empty()) throw bad("it is empty");
    CalendarDuration d;
    std::array<bool, 4> seen{};
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] < '0' || text[i] > '9') throw bad(fmt::format("'{}' is not a digit", text[i]));
        std::int64_t n = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
            n = n * 10 + (text[i++] - '0');
            if (n > kMaxDurationNumber) throw bad(fmt::format("a number is above {}", kMaxDurationNumber));
        }
        if (i == text.size()) throw bad("a number without a unit (y, m, d or h)");
        const char unit = text[i++];
        const std::string_view units = "ymdh";
        const std::size_t u = units.find(unit);
        if (u == std::string_view::npos) throw bad(fmt::format("unknown unit '{}' (y, m, d or h)", unit));
        if (seen[u]) throw bad(fmt::format("the unit '{}' is given twice", unit));
        seen[u] = true;
        std::array<int*, 4> parts = {&d.years, &d.months, &d.days, &d.hours};
        *parts[u] = static_cast<int>(n);
    }
    return d;
}

bool RetentionPolicy::empty() const noexcept {
    return last == 0 && hourly == 0 && daily == 0 && weekly == 0 && monthly == 0 && yearly == 0 && within.zero() &&
           within_hourly.zero() && within_daily.zero() && within_weekly.zero() && within_monthly.zero() &&
           within_yearly.zero() && tags.empty();
}

std::string RetentionPolicy::text() const {
    std::vector<std::string> counts, windows, rest;
    const std::array<std::pair<int, const char*>, 6> cs = {
        {{last, "last"}, {hourly, "hourly"}, {daily, "daily"}, {weekly, "weekly"}, {monthly, "monthly"}, {yearly, "yearly"}}};
    for (const auto& [n, name] : cs)
        if (n > 0)
            counts.push_back(fmt::format("{} {}", n, name));
        else if (n == kKeepAll)
            counts.push_back(fmt::format("all {}", name));
    const std::array<std::pair<const CalendarDuration*, const char*>, 5> ws = {{{&within_hourly, "hourly"},
                                                                               {&within_daily, "daily"},
                                                                               {&within_weekly, "weekly"},
                                                                               {&within_monthly, "monthly"},
                                                                               {&within_yearly, "yearly"}}};
    for (const auto& [d, name] : ws)
        if (!d->zero()) windows.push_back(fmt::format("{} snapshots within {}", name, d->text()));
    std::string s;
    if (!counts.empty()) s = fmt::format("{} snapshots", fmt::join(counts, ", "));
    if (!windows.empty()) s += (s.empty() ? "" : ", ") + fmt::format("{}", fmt::join(windows, ", "));
    if (!tags.empty()) {
        std::vector<std::string> lists;
        for (const auto& l : tags) lists.push_back(l.size() == 1 && l[0].empty() ? "(none)" : fmt::format("{}", fmt::join(l, ",")));
        rest.push_back(fmt::format("all snapshots with tags {}", fmt::join(lists, " or ")));
    }
    if (!within.zero()) rest.push_back(fmt::format("all snapshots within {} of the newest", within.text()));
    for (const auto& r : rest) s += (s.empty() ? "" : " and ") + r;
    return s.empty() ? s : "keep " + s;
}

GroupBy parse_group_by(std::string_view text) {
    GroupBy g{false, false, false};
    for (std::size_t at = 0; at <= text.size();) {
        std::size_t comma = text.find(',', at);
        if (comma == std::string_view::npos) comma = text.size();
        const std::string_view word = text.substr(at, comma - at);
        at = comma + 1;
        if (word == "host" || word == "hosts")
            g.host = true;
        else if (word == "path" || word == "paths")
            g.paths = true;
        else if (word == "tag" || word == "tags")
            g.tags = true;
        else if (!word.empty())
            throw OptionError(fmt::format("group_by = '{}' is invalid: '{}' is not host, paths or tags", text, word),
                              "group_by");
    }
    return g;
}

std::size_t RetentionGroup::kept() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(snapshots.begin(), snapshots.end(), [](const RetentionDecision& d) { return d.keep; }));
}

std::vector<RetentionGroup> apply_retention(std::span<const SnapshotInfo> snapshots, const RetentionPolicy& policy,
                                            const RetentionOptions& options) {
    check(policy);
    using Key = std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>;
    std::map<Key, RetentionGroup> groups;
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        const SnapshotInfo& s = snapshots[i];
        Key key;
        if (options.group_by.host) std::get<0>(key) = s.host;
        if (options.group_by.paths) {
            std::get<1>(key) = s.paths;
            std::sort(std::get<1>(key).begin(), std::get<1>(key).end());
        }
        if (options.group_by.tags) {
            std::get<2>(key) = s.tags;
            std::sort(std::get<2>(key).begin(), std::get<2>(key).end());
        }
        auto [it, fresh] = groups.try_emplace(key);
        if (fresh) std::tie(it->second.host, it->second.paths, it->second.tags) = key;
        it->second.snapshots.push_back({i, false, {}});
    }
    std::vector<RetentionGroup> out;
    for (auto& [key, g] : groups) {
        std::sort(g.snapshots.begin(), g.snapshots.end(), [&](const RetentionDecision& a, const RetentionDecision& b) {
            const SnapshotInfo& x = snapshots[a.index];
            const SnapshotInfo& y = snapshots[b.index];
            if (x.time_ns != y.time_ns) return x.time_ns > y.time_ns;
            if (x.id != y.id) return x.id < y.id;
            return a.index < b.index;
        });
        apply_to_group(g, snapshots, policy, options.now_ns);
        if (g.kept() == 0 && !options.allow_remove_all)
            throw OptionError(fmt::format("refusing to forget every snapshot of the group {}: none matches the keep "
                                          "rules",
                                          group_name(g)),
                              "keep_tag");
        out.push_back(std::move(g));
    }
    return out;
}

}  // namespace cdc::store
