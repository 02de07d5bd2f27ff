// SPDX-License-Identifier: Apache-2.0
// The keep rules of forget (cdc/retention.hpp): restic's documented examples
// (doc/060_forget.rst: the two weeks of weekday backups under --keep-daily 5
// and --keep-within-daily 7d; a backup a day for 100 years under daily 7,
// weekly 5, monthly 12, yearly 75), the calendar (ISO weeks across years,
// months of different lengths, time zones through TZ and through a
// snapshot's own offset), same-time snapshots, the oldest snapshot, future
// snapshots, tags, groups and the refusals.
#include <cdc/error.hpp>
#include <cdc/retention.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace cdc::store {
namespace {

namespace chr = std::chrono;

constexpr std::int64_t kSecond = 1'000'000'000;

// Unix nanoseconds of a UTC wall-clock time.
std::int64_t utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
    const chr::sys_days day{chr::year(y) / chr::month(mo) / chr::day(d)};
    return (std::int64_t{day.time_since_epoch().count()} * 86400 + h * 3600 + mi * 60 + s) * kSecond;
}

constexpr std::int64_t kFarFuture = std::int64_t{4'000'000'000} * kSecond;  // 2096: "now" in most tests

RetentionOptions at(std::int64_t now_ns, GroupBy group_by = {}, bool allow_remove_all = false) {
    RetentionOptions o;
    o.group_by = group_by;
    o.now_ns = now_ns;
    o.allow_remove_all = allow_remove_all;
    return o;
}

SnapshotInfo snap(std::string id, std::int64_t t, std::string host = "mopped",
                  std::vector<std::string> paths = {"/home/user/work"}, std::vector<std::string> tags = {}) {
    SnapshotInfo s;
    s.id = std::move(id);
    s.time_ns = t;
    s.utc_offset_s = 0;
    s.host = std::move(host);
    s.paths = std::move(paths);
    s.tags = std::move(tags);
    return s;
}

// id -> reasons, for the kept snapshots of every group.
std::map<std::string, std::vector<std::string>> kept(const std::vector<SnapshotInfo>& list, const RetentionPolicy& p,
                                                    RetentionOptions o = at(kFarFuture)) {
    std::map<std::string, std::vector<std::string>> out;
    std::size_t seen = 0;
    for (const auto& g : apply_retention(list, p, o))
        for (const auto& d : g.snapshots) {
            ++seen;
            EXPECT_EQ(d.keep, !d.reasons.empty());
            if (d.keep) out[list[d.index].id] = d.reasons;
        }
    EXPECT_EQ(seen, list.size()) << "every snapshot in exactly one group";
    return out;
}

using Kept = std::map<std::string, std::vector<std::string>>;

// The example of restic's documentation: a backup every weekday at 11:00 for
// two weeks, a second one on Fridays at 23:00, Wednesday of the second week
// missed.
std::vector<SnapshotInfo> two_weeks() {
    return {snap("60e5c031", utc(2025, 4, 21, 11)), snap("1dccffe9", utc(2025, 4, 22, 11)),
            snap("90a5c949", utc(2025, 4, 23, 11)), snap("79580708", utc(2025, 4, 24, 11)),
            snap("8a603ddf", utc(2025, 4, 25, 11)), snap("ae33bf10", utc(2025, 4, 25, 23)),
            snap("fb8b1418", utc(2025, 4, 28, 11)), snap("1db188b4", utc(2025, 4, 29, 11)),
            snap("7baa4f28", utc(2025, 5, 1, 11)),  snap("05c48af3", utc(2025, 5, 2, 11)),
            snap("ad72e262", utc(2025, 5, 2, 23))};
}

TEST(Retention, ResticDocumentedExampleKeepDaily5) {
    RetentionPolicy p;
    p.daily = 5;
    const std::vector<std::string> daily = {"daily snapshot"};
    // The previous Friday is kept (its later backup), since Wednesday is missing.
    EXPECT_EQ(kept(two_weeks(), p), (Kept{{"ae33bf10", daily},
                                          {"fb8b1418", daily},
                                          {"1db188b4", daily},
                                          {"7baa4f28", daily},
                                          {"ad72e262", daily}}));
    EXPECT_EQ(p.text(), "keep 5 daily snapshots");
}

TEST(Retention, ResticDocumentedExampleKeepWithinDaily7d) {
    RetentionPolicy p;
    p.within_daily = parse_calendar_duration("7d");
    const std::vector<std::string> r = {"daily within 7d"};
    // Only the second week: the first Friday's 23:00 is exactly 7 days
    // before the newest, not within.
    EXPECT_EQ(kept(two_weeks(), p), (Kept{{"fb8b1418", r}, {"1db188b4", r}, {"7baa4f28", r}, {"ad72e262", r}}));
}

// "Suppose you make one backup every day for 100 years. Then forget
// --keep-daily 7 --keep-weekly 5 --keep-monthly 12 --keep-yearly 75 would
// keep the most recent 7 daily snapshots and 4 last-day-of-the-week ones
// (since the 7 dailies already include 1 weekly). Additionally, 12 or 11
// last-day-of-the-month snapshots ... And finally 75 or 74
// last-day-of-the-year snapshots". The newest day here is a Sunday, so
// that the seven dailies are one week.
TEST(Retention, ResticDocumentedExampleHundredYearsOfDailyBackups) {
    std::vector<SnapshotInfo> list;
    const chr::sys_days last{chr::year(2023) / chr::December / 31};  // a Sunday
    ASSERT_EQ(chr::weekday(last), chr::Sunday);
    const chr::sys_days first{chr::year(1924) / chr::January / 1};
    for (chr::sys_days d = first; d <= last; d += chr::days(1))
        list.push_back(snap(std::to_string(d.time_since_epoch().count()),
                            std::int64_t{d.time_since_epoch().count()} * 86400 * kSecond + 12 * 3600 * kSecond));
    RetentionPolicy p;
    p.daily = 7;
    p.weekly = 5;
    p.monthly = 12;
    p.yearly = 75;
    const Kept k = kept(list, p);
    std::map<std::string, int> per_reason;
    std::size_t weekly_only = 0, monthly_only = 0, yearly_only = 0;
    for (const auto& [id, reasons] : k) {
        for (const auto& r : reasons) ++per_reason[r];
        const chr::sys_days day{chr::days(std::stoll(id))};
        const chr::year_month_day ymd{day};
        const std::set<std::string> rs(reasons.begin(), reasons.end());
        if (rs.count("weekly snapshot")) {
            EXPECT_EQ(chr::weekday(day), chr::Sunday) << "last day of its week";
        }
        if (rs.count("monthly snapshot")) {
            EXPECT_EQ(ymd.day(), (ymd.year() / ymd.month() / chr::last).day());
        }
        if (rs.count("yearly snapshot")) {
            EXPECT_TRUE(ymd.month() == chr::December && ymd.day() == chr::day(31));
        }
        weekly_only += rs == std::set<std::string>{"weekly snapshot"};
        monthly_only += rs == std::set<std::string>{"monthly snapshot"};
        yearly_only += rs == std::set<std::string>{"yearly snapshot"};
    }
    EXPECT_EQ(per_reason, (std::map<std::string, int>{{"daily snapshot", 7},
                                                      {"weekly snapshot", 5},
                                                      {"monthly snapshot", 12},
                                                      {"yearly snapshot", 75}}));
    // (The newest day is also its month's and year's last: 11 and 74 here.)
    EXPECT_EQ(weekly_only, 4u);
    EXPECT_EQ(monthly_only, 11u);
    EXPECT_EQ(yearly_only, 74u);
    EXPECT_EQ(k.size(), 7 + weekly_only + monthly_only + yearly_only);
}

TEST(Retention, KeepLastCountsEverySnapshotSameTimesOrderedById) {
    const std::vector<SnapshotInfo> list = {snap("c", utc(2024, 1, 2)), snap("b", utc(2024, 1, 3)),
                                            snap("a", utc(2024, 1, 3)), snap("d", utc(2024, 1, 1))};
    RetentionPolicy p;
    p.last = 2;
    const std::vector<std::string> last = {"last snapshot"};
    EXPECT_EQ(kept(list, p), (Kept{{"a", last}, {"b", last}}));
    // A unit counts once: of two snapshots of one time, the smaller id is the day's.
    RetentionPolicy d;
    d.daily = 2;
    EXPECT_EQ(kept(list, d), (Kept{{"a", {"daily snapshot"}}, {"c", {"daily snapshot"}}}));
    // Whatever order they are given in.
    const std::vector<SnapshotInfo> reversed(list.rbegin(), list.rend());
    EXPECT_EQ(kept(reversed, d), kept(list, d));
}

TEST(Retention, TheOldestSnapshotIsKeptWhileARuleHasUnitsLeft) {
    const std::vector<SnapshotInfo> day = {snap("new", utc(2024, 5, 1, 20)), snap("mid", utc(2024, 5, 1, 12)),
                                           snap("old", utc(2024, 5, 1, 8))};
    RetentionPolicy p;
    p.daily = 5;
    EXPECT_EQ(kept(day, p), (Kept{{"new", {"daily snapshot"}}, {"old", {"oldest daily snapshot"}}}));
    p.daily = 1;  // used up by the newest: the history is as long as asked
    EXPECT_EQ(kept(day, p), (Kept{{"new", {"daily snapshot"}}}));
    p.daily = kKeepAll;
    EXPECT_EQ(kept(day, p), (Kept{{"new", {"daily snapshot"}}, {"old", {"oldest daily snapshot"}}}));
    EXPECT_EQ(p.text(), "keep all daily snapshots");
    RetentionPolicy w;
    w.within_hourly = parse_calendar_duration("1d");
    EXPECT_EQ(kept({snap("a", utc(2024, 5, 1, 20, 30)), snap("b", utc(2024, 5, 1, 20, 10))}, w),
              (Kept{{"a", {"hourly within 1d"}}, {"b", {"oldest hourly within 1d"}}}));
}

TEST(Retention, KeepAllKeepsTheNewestOfEveryUnit) {
    std::vector<SnapshotInfo> list;
    for (unsigned d = 1; d <= 20; ++d)
        for (int h : {6, 18}) list.push_back(snap(std::to_string(d) + "-" + std::to_string(h), utc(2024, 3, d, h)));
    RetentionPolicy p;
    p.daily = kKeepAll;
    const Kept k = kept(list, p);
    EXPECT_EQ(k.size(), 21u);  // the 18:00 of each day, and the oldest (1-6)
    for (unsigned d = 1; d <= 20; ++d) EXPECT_EQ(k.count(std::to_string(d) + "-18"), 1u) << d;
    EXPECT_EQ(k.at("1-6"), std::vector<std::string>{"oldest daily snapshot"});
}

TEST(Retention, WeeksAreIsoWeeksAcrossTheNewYear) {
    // Monday 31 December 2018 is in ISO week 1 of 2019, with Sunday 6 January.
    const std::vector<SnapshotInfo> list = {snap("sun6", utc(2019, 1, 6, 12)), snap("mon31", utc(2018, 12, 31, 12)),
                                            snap("sun30", utc(2018, 12, 30, 12)),
                                            snap("older", utc(2018, 12, 1, 12))};
    RetentionPolicy p;
    p.weekly = 2;
    EXPECT_EQ(kept(list, p), (Kept{{"sun6", {"weekly snapshot"}}, {"sun30", {"weekly snapshot"}}}));
    // Thursday 31 December 2020 and Sunday 3 January 2021: week 53 of 2020.
    const std::vector<SnapshotInfo> w53 = {snap("mon4", utc(2021, 1, 4)), snap("sun3", utc(2021, 1, 3)),
                                           snap("thu31", utc(2020, 12, 31)), snap("older", utc(2020, 12, 1))};
    EXPECT_EQ(kept(w53, p), (Kept{{"mon4", {"weekly snapshot"}}, {"sun3", {"weekly snapshot"}}}));
    RetentionPolicy y;
    y.yearly = 2;  // calendar years, unlike the weeks
    EXPECT_EQ(kept(list, y), (Kept{{"sun6", {"yearly snapshot"}}, {"mon31", {"yearly snapshot"}}}));
    RetentionPolicy m;
    m.monthly = 3;
    EXPECT_EQ(kept(list, m),
              (Kept{{"sun6", {"monthly snapshot"}}, {"mon31", {"monthly snapshot"}}, {"older", {"oldest monthly snapshot"}}}));
}

TEST(Retention, KeepWithinIsOnTheCalendarRelativeToTheNewest) {
    // 31 March 2024 - 1 month = "31 February" = 2 March (2024 is a leap year).
    const std::int64_t newest = utc(2024, 3, 31, 12);
    RetentionPolicy p;
    p.within = parse_calendar_duration("1m");
    EXPECT_EQ(kept({snap("n", newest), snap("edge", utc(2024, 3, 2, 12)), snap("in", utc(2024, 3, 2, 12) + 1)}, p),
              (Kept{{"n", {"within 1m"}}, {"in", {"within 1m"}}}));
    // 2y5m7d3h before 15 June 2024 10:00 is 8 January 2022 07:00.
    p.within = parse_calendar_duration("3h7d5m2y");
    EXPECT_EQ(p.within.text(), "2y5m7d3h");
    EXPECT_EQ(kept({snap("n", utc(2024, 6, 15, 10)), snap("edge", utc(2022, 1, 8, 7)),
                    snap("in", utc(2022, 1, 8, 7, 0, 1))},
                   p),
              (Kept{{"n", {"within 2y5m7d3h"}}, {"in", {"within 2y5m7d3h"}}}));
    EXPECT_EQ(p.text(), "keep all snapshots within 2y5m7d3h of the newest");
}

TEST(Retention, FutureSnapshotsDoNotMoveTheWindowAndAreKept) {
    const std::int64_t now = utc(2024, 6, 15, 12);
    const std::vector<SnapshotInfo> list = {snap("future", utc(2030, 1, 1)), snap("n", utc(2024, 6, 15, 10)),
                                            snap("in", utc(2024, 6, 10)), snap("out", utc(2024, 5, 1))};
    RetentionPolicy p;
    p.within = parse_calendar_duration("7d");
    EXPECT_EQ(kept(list, p, at(now)), (Kept{{"future", {"within 7d"}}, {"n", {"within 7d"}}, {"in", {"within 7d"}}}));
    // All in the future: no newest to measure from, every one within.
    EXPECT_EQ(kept(list, p, at(utc(2000, 1, 1))).size(), 4u);
}

// Calendar units are those of local time: of the process (TZ) for a
// snapshot without an offset, of the snapshot's own offset otherwise.
class TimeZone {
public:
    explicit TimeZone(const char* tz) {
        if (const char* old = std::getenv("TZ")) old_ = old;
        ::setenv("TZ", tz, 1);
        ::tzset();
    }
    ~TimeZone() {
        if (old_)
            ::setenv("TZ", old_->c_str(), 1);
        else
            ::unsetenv("TZ");
        ::tzset();
    }
    TimeZone(const TimeZone&) = delete;
    TimeZone& operator=(const TimeZone&) = delete;

private:
    std::optional<std::string> old_;
};

TEST(Retention, DaysAreLocalDaysOfTheTimeZoneOrOfTheSnapshotsOffset) {
    std::vector<SnapshotInfo> list = {snap("a", utc(2024, 1, 2, 0, 30)), snap("b", utc(2024, 1, 1, 23, 30)),
                                      snap("c", utc(2024, 1, 1, 22)), snap("d", utc(2023, 12, 30, 12))};
    for (auto& s : list) s.utc_offset_s.reset();
    RetentionPolicy p;
    p.daily = 3;
    {
        const TimeZone tz("UTC0");
        EXPECT_EQ(kept(list, p), (Kept{{"a", {"daily snapshot"}}, {"b", {"daily snapshot"}}, {"d", {"daily snapshot"}}}));
    }
    {
        const TimeZone tz("EST5EDT,M3.2.0,M11.1.0");  // New York: a, b and c on 1 January
        EXPECT_EQ(kept(list, p), (Kept{{"a", {"daily snapshot"}}, {"d", {"daily snapshot"}}}));
        // A snapshot's own offset wins over TZ: at +00:00, a is on 2 January ...
        auto london = list;
        for (auto& s : london) s.utc_offset_s = 0;
        EXPECT_EQ(kept(london, p),
                  (Kept{{"a", {"daily snapshot"}}, {"b", {"daily snapshot"}}, {"d", {"daily snapshot"}}}));
        // ... at +01:00, a and b are, c (23:00) is not.
        auto paris = list;
        for (auto& s : paris) s.utc_offset_s = 3600;
        EXPECT_EQ(kept(paris, p),
                  (Kept{{"a", {"daily snapshot"}}, {"c", {"daily snapshot"}}, {"d", {"daily snapshot"}}}));
        // keep-within in local time: 1 month before 31 March 23:30 New York
        // (1 April 03:30 UTC) is 2 March 23:30 New York.
        RetentionPolicy w;
        w.within = parse_calendar_duration("1m");
        std::vector<SnapshotInfo> m = {snap("n", utc(2024, 4, 1, 3, 30)), snap("edge", utc(2024, 3, 3, 4, 30)),
                                       snap("in", utc(2024, 3, 3, 4, 30) + 1)};
        for (auto& s : m) s.utc_offset_s.reset();
        EXPECT_EQ(kept(m, w), (Kept{{"n", {"within 1m"}}, {"in", {"within 1m"}}}));
    }
}

TEST(Retention, TagsKeepEveryMatchingSnapshotListsAreAndedThenOred) {
    const std::vector<SnapshotInfo> list = {snap("ab", utc(2024, 1, 5), "h", {"/p"}, {"a", "b"}),
                                            snap("a", utc(2024, 1, 4), "h", {"/p"}, {"a"}),
                                            snap("c", utc(2024, 1, 3), "h", {"/p"}, {"c"}),
                                            snap("none", utc(2024, 1, 2), "h", {"/p"}, {})};
    RetentionPolicy p;
    p.tags = {{"a", "b"}, {"c"}};
    EXPECT_EQ(kept(list, p), (Kept{{"ab", {"has tags a,b"}}, {"c", {"has tags c"}}}));
    p.tags = {{""}};
    EXPECT_EQ(kept(list, p), (Kept{{"none", {"has no tag"}}}));
    p.tags = {{"a"}};
    p.last = 1;
    EXPECT_EQ(kept(list, p), (Kept{{"ab", {"has tags a", "last snapshot"}}, {"a", {"has tags a"}}}));
    EXPECT_EQ(p.text(), "keep 1 last snapshots and all snapshots with tags a");
}

TEST(Retention, AGroupThatWouldLoseEverySnapshotIsRefused) {
    const std::vector<SnapshotInfo> list = {snap("x", utc(2024, 1, 5), "h1", {"/p"}, {"keep"}),
                                            snap("y", utc(2024, 1, 5), "h2", {"/p"}, {})};
    RetentionPolicy p;
    p.tags = {{"keep"}};
    try {
        (void)apply_retention(list, p, at(kFarFuture));
        ADD_FAILURE() << "no refusal";
    } catch (const OptionError& e) {
        EXPECT_EQ(e.field(), "keep_tag");
        EXPECT_NE(std::string(e.what()).find("host h2"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kept(list, p, at(kFarFuture, {}, true)), (Kept{{"x", {"has tags keep"}}}));
}

TEST(Retention, GroupsByHostPathsAndTags) {
    const std::vector<SnapshotInfo> list = {
        snap("h1-ab-new", utc(2024, 1, 5), "h1", {"/a", "/b"}, {"t"}),
        snap("h1-ba-old", utc(2024, 1, 4), "h1", {"/b", "/a"}, {}),  // the same paths, in another order
        snap("h1-c", utc(2024, 1, 3), "h1", {"/c"}, {"t"}),
        snap("h2-ab", utc(2024, 1, 2), "h2", {"/a", "/b"}, {})};
    RetentionPolicy p;
    p.last = 1;
    const std::vector<std::string> last = {"last snapshot"};
    EXPECT_EQ(kept(list, p), (Kept{{"h1-ab-new", last}, {"h1-c", last}, {"h2-ab", last}}));
    const auto groups = apply_retention(list, p, at(kFarFuture));
    ASSERT_EQ(groups.size(), 3u);
    EXPECT_EQ(groups[0].host, "h1");
    EXPECT_EQ(groups[0].paths, (std::vector<std::string>{"/a", "/b"}));
    EXPECT_EQ(groups[0].snapshots.size(), 2u);
    EXPECT_EQ(groups[0].kept(), 1u);
    EXPECT_TRUE(groups[0].tags.empty());  // not grouped by tags
    EXPECT_EQ(kept(list, p, at(kFarFuture, parse_group_by(""))), (Kept{{"h1-ab-new", last}}));
    EXPECT_EQ(kept(list, p, at(kFarFuture, parse_group_by("host"))),
              (Kept{{"h1-ab-new", last}, {"h2-ab", last}}));
    EXPECT_EQ(kept(list, p, at(kFarFuture, parse_group_by("tags"))),
              (Kept{{"h1-ab-new", last}, {"h1-ba-old", last}}));
    EXPECT_EQ(kept(list, p, at(kFarFuture, parse_group_by("paths,tags"))),
              (Kept{{"h1-ab-new", last}, {"h1-ba-old", last}, {"h1-c", last}}));
    EXPECT_TRUE(apply_retention({}, p, at(kFarFuture)).empty());
}

TEST(Retention, BadPoliciesAndValuesAreOptionErrors) {
    auto field_of = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const OptionError& e) {
            return e.field();
        }
        return "(no error)";
    };
    const std::vector<SnapshotInfo> list = {snap("a", utc(2024, 1, 1))};
    RetentionPolicy empty;
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(field_of([&] { (void)apply_retention(list, empty, at(kFarFuture)); }), "keep");
    RetentionPolicy zero;
    zero.last = 0;
    zero.within = parse_calendar_duration("0d");
    EXPECT_EQ(field_of([&] { (void)apply_retention(list, zero, at(kFarFuture)); }), "keep");  // zeros are no rule
    RetentionPolicy negative;
    negative.monthly = -2;
    EXPECT_EQ(field_of([&] { (void)apply_retention(list, negative, at(kFarFuture)); }), "keep_monthly");
    RetentionPolicy bad_within;
    bad_within.within_weekly.days = -1;
    EXPECT_EQ(field_of([&] { (void)apply_retention(list, bad_within, at(kFarFuture)); }), "keep_within_weekly");

    EXPECT_EQ(parse_calendar_duration("36h"), (CalendarDuration{0, 0, 0, 36}));
    EXPECT_EQ(parse_calendar_duration("1y6m"), (CalendarDuration{1, 6, 0, 0}));
    for (const char* bad : {"", "7", "d", "7w", "1y1y", "-1d", "+1d", "1d ", "1.5d", "2000000d"})
        EXPECT_EQ(field_of([&] { (void)parse_calendar_duration(bad, "keep_within_daily"); }), "keep_within_daily")
            << bad;
    EXPECT_EQ(field_of([] { (void)parse_group_by("host,owner"); }), "group_by");
    const GroupBy g = parse_group_by("hosts,path,tag,");
    EXPECT_TRUE(g.host && g.paths && g.tags);
}

}  // namespace
}  // namespace cdc::store
