// SPDX-License-Identifier: Apache-2.0
// Resync: seeded edit plans, their application, and the shared% measure.
#include <cdc/corpus/resync.hpp>

#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

namespace cdc {
namespace {

TEST(ResyncEdits, ParseAndNames) {
    EXPECT_EQ(parse_edit_kind("insert"), EditKind::insert);
    EXPECT_EQ(parse_edit_kind("delete"), EditKind::remove);
    EXPECT_EQ(parse_edit_kind("overwrite"), EditKind::overwrite);
    EXPECT_EQ(parse_edit_kind("mixed"), EditKind::mixed);
    EXPECT_THROW(parse_edit_kind("append"), OptionError);
    EXPECT_EQ(to_string(EditKind::remove), "delete");
}

TEST(ResyncEdits, PlansAreDeterministicAndInRange) {
    const EditSpec spec{EditKind::mixed, 200, 100, 42};
    const auto a = plan_edits(100000, spec);
    const auto b = plan_edits(100000, spec);
    ASSERT_EQ(a.size(), 200u);
    std::uint64_t size = 100000;
    bool kinds[3] = {false, false, false};
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].kind, b[i].kind);
        EXPECT_EQ(a[i].offset, b[i].offset);
        EXPECT_EQ(a[i].size, b[i].size);
        ASSERT_NE(a[i].kind, EditKind::mixed);
        kinds[static_cast<int>(a[i].kind)] = true;
        if (a[i].kind == EditKind::insert) {
            EXPECT_LE(a[i].offset, size);
            size += a[i].size;
        } else {
            EXPECT_LE(a[i].offset + a[i].size, size);
            if (a[i].kind == EditKind::remove) size -= a[i].size;
        }
    }
    EXPECT_TRUE(kinds[0] && kinds[1] && kinds[2]) << "mixed uses all three kinds";
    const auto c = plan_edits(100000, EditSpec{EditKind::mixed, 200, 100, 43});
    EXPECT_NE(a[0].offset + a[1].offset, c[0].offset + c[1].offset) << "the seed matters";
}

TEST(ResyncEdits, ApplyEachKind) {
    const auto original = test::random_bytes(1000, 1);
    const Edit ins[] = {{EditKind::insert, 10, 5}};
    auto e = apply_edits(original, ins, 1);
    ASSERT_EQ(e.size(), 1005u);
    EXPECT_TRUE(std::equal(original.begin(), original.begin() + 10, e.begin()));
    EXPECT_TRUE(std::equal(original.begin() + 10, original.end(), e.begin() + 15));

    const Edit del[] = {{EditKind::remove, 10, 5}};
    e = apply_edits(original, del, 1);
    ASSERT_EQ(e.size(), 995u);
    EXPECT_TRUE(std::equal(original.begin() + 15, original.end(), e.begin() + 10));

    const Edit ow[] = {{EditKind::overwrite, 990, 10}};
    e = apply_edits(original, ow, 1);
    ASSERT_EQ(e.size(), 1000u);
    EXPECT_TRUE(std::equal(original.begin(), original.begin() + 990, e.begin()));
    EXPECT_FALSE(std::equal(original.begin() + 990, original.end(), e.begin() + 990));

    const Edit bad[] = {{EditKind::remove, 995, 10}};
    EXPECT_THROW(apply_edits(original, bad, 1), OptionError);
    const Edit bad_insert[] = {{EditKind::insert, 1001, 1}};
    EXPECT_THROW(apply_edits(original, bad_insert, 1), OptionError);

    // Deletes on empty data become inserts.
    const auto plan = plan_edits(0, EditSpec{EditKind::remove, 2, 8, 3});
    EXPECT_EQ(plan[0].kind, EditKind::insert);
    EXPECT_EQ(apply_edits({}, plan, 3).size(), 8u + (plan[1].kind == EditKind::insert ? 8u : 0u) -
                                                   (plan[1].kind == EditKind::remove ? plan[1].size : 0u));
}

TEST(Resync, ZeroEditsShareEverything) {
    const auto data = test::random_bytes(500000, 2);
    for (const char* name : {"fastcdc", "ultracdc", "fixed-v1.0.0", "jc-v1.1.0"}) {
        const auto finder = make_cut_finder(name);
        const auto r = measure_resync(*finder, data, data);
        EXPECT_DOUBLE_EQ(r.shared_pct, 100.0) << name;
        EXPECT_EQ(r.chunks_orig, r.chunks_edited);
        EXPECT_EQ(r.shared_bytes, data.size());
    }
    const auto finder = make_cut_finder("fastcdc");
    const std::shared_ptr<const CutFinder> finders[] = {finder};
    const auto s = run_resync(finders, data, EditSpec{EditKind::insert, 0, 10, 1}, 3);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_DOUBLE_EQ(s[0].shared_pct_mean, 100.0);
    EXPECT_DOUBLE_EQ(s[0].shared_pct_min, 100.0);
    EXPECT_EQ(s[0].runs.size(), 3u);
}

TEST(Resync, FixedCollapsesAfterAnEarlyInsertContentDefinedDoesNot) {
    const auto data = test::random_bytes(2'000'000, 3);
    const Edit early[] = {{EditKind::insert, 100, 1}};
    const auto edited = apply_edits(data, early, 9);
    const auto fixed = measure_resync(*make_cut_finder("fixed-v1.0.0"), data, edited);
    EXPECT_LT(fixed.shared_pct, 1.0);
    for (const auto& a : algorithms()) {
        if (!a.content_defined || (a.key == KeyUse::required)) continue;
        // restic-rabin and borg-buzhash default to MiB-sized chunks: 2 MB
        // would hold two of them; they run at 8K/16K/64K here.
        Options o;
        if (a.default_normal > 64 * 1024) {
            o.min_size = 8 * 1024;
            o.normal_size = 16 * 1024;
            o.max_size = 64 * 1024;
        }
        const auto r = measure_resync(*make_cut_finder(a.name, o), data, edited);
        // ultracdc-v1.0.0 cuts only at the end of 8-byte blocks counted from
        // the chunk start: every chunk is a multiple of 8 bytes, so a shift
        // that is not a multiple of 8 never re-synchronises (a property of
        // that published version, kept byte for byte).
        if (a.name == "ultracdc-v1.0.0")
            EXPECT_LT(r.shared_pct, 1.0);
        else
            EXPECT_GT(r.shared_pct, 90.0) << a.name;
    }
    const Edit early8[] = {{EditKind::insert, 100, 8}};
    const auto edited8 = apply_edits(data, early8, 9);
    EXPECT_LT(measure_resync(*make_cut_finder("fixed-v1.0.0"), data, edited8).shared_pct, 1.0);
    EXPECT_GT(measure_resync(*make_cut_finder("ultracdc-v1.0.0"), data, edited8).shared_pct, 90.0);
}

TEST(Resync, RunResyncGivesEveryFinderTheSameEdits) {
    const auto data = generate_input("splitmix64:5:400000");
    std::vector<std::shared_ptr<const CutFinder>> finders{make_cut_finder("fastcdc"), make_cut_finder("fastcdc")};
    const auto s = run_resync(finders, data, EditSpec{EditKind::mixed, 5, 300, 11}, 4, DigestKind::xxh3);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].shared_pct_mean, s[1].shared_pct_mean);
    EXPECT_LE(s[0].shared_pct_min, s[0].shared_pct_mean);
    EXPECT_LT(s[0].shared_pct_mean, 100.0);
    EXPECT_GT(s[0].shared_pct_mean, 50.0);
    EXPECT_THROW(run_resync(finders, data, EditSpec{}, 0), OptionError);
}

}  // namespace
}  // namespace cdc
