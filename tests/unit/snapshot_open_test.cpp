// SPDX-License-Identifier: Apache-2.0
// create_snapshot with a store opened on a thread while the paths are
// captured (include/cdc/snapshot.hpp): the same snapshot as with a store
// opened first, the parent found and its unchanged files not read again;
// an open that fails (a wrong password, any error of the caller's check)
// is what the call throws, and nothing is committed.
#include "store_support.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>

namespace cdc {
namespace {

namespace fs = std::filesystem;

struct FastKdf {
    FastKdf() { ::setenv("CDC_TEST_FAST_KDF", "1", 1); }
    ~FastKdf() { ::unsetenv("CDC_TEST_FAST_KDF"); }
};

struct Scene {
    FastKdf fast;
    test::TempDir tmp;
    fs::path dir = tmp.path() / "store";
    fs::path src = tmp.path() / "src";
    Scene() {
        store::InitOptions o;
        o.chunking.normal_size = 4096;
        o.password = "right";
        store::Store::init(dir, o);
        // many directories: a capture long enough to be stopped in
        for (int d = 0; d < 300; ++d)
            tmp.write(fmt::format("src/d{:03}/f.bin", d), test::random_bytes(2000, static_cast<std::uint64_t>(d)));
        tmp.write("src/big.bin", test::random_bytes(200'000, 999));
    }
    std::function<store::Store()> opener(std::string password, std::atomic<int>* calls = nullptr) const {
        return [this, password, calls] {
            if (calls) ++*calls;
            store::OpenOptions oo;
            oo.password = [password] { return password; };
            return store::Store::open(dir, oo);
        };
    }
    store::SnapshotOptions options() const {
        store::SnapshotOptions so;
        so.paths = {src};
        return so;
    }
    std::size_t snapshots() const {
        store::OpenOptions oo;
        oo.password = [] { return std::string("right"); };
        return store::list_snapshots(store::Store::open(dir, oo)).size();
    }
};

TEST(SnapshotOpeningTheStore, TheSameSnapshotAndItsParentFound) {
    Scene sc;
    std::atomic<int> calls{0};
    const auto first = store::create_snapshot(sc.opener("right", &calls), sc.options());
    EXPECT_EQ(calls.load(), 1);
    EXPECT_TRUE(first.skipped.empty());
    EXPECT_EQ(first.snapshot.totals.files, 301u);
    EXPECT_EQ(first.snapshot.totals.skipped_unchanged, 0u);
    const auto second = store::create_snapshot(sc.opener("right", &calls), sc.options());
    EXPECT_EQ(calls.load(), 2);
    EXPECT_EQ(second.snapshot.parent, first.snapshot.id);
    EXPECT_EQ(second.snapshot.totals.skipped_unchanged, 301u) << "the parent's unchanged files were read again";
    // (trees are not compared: the first capture's listings may move the
    // directories' atimes, which the trees record)
    // and as create_snapshot on an open store makes it
    store::OpenOptions oo;
    oo.password = [] { return std::string("right"); };
    const store::Store s = store::Store::open(sc.dir, oo);
    const auto third = store::create_snapshot(s, sc.options());
    EXPECT_EQ(third.snapshot.parent, second.snapshot.id);
    EXPECT_EQ(third.snapshot.totals.skipped_unchanged, 301u);
    EXPECT_EQ(sc.snapshots(), 3u);
}

TEST(SnapshotOpeningTheStore, AFailedOpenIsWhatItThrowsAndNothingIsCommitted) {
    Scene sc;
    (void)store::create_snapshot(sc.opener("right"), sc.options());
    EXPECT_THROW((void)store::create_snapshot(sc.opener("wrong"), sc.options()), store::PasswordError);
    // a check of the caller's that refuses the store
    const auto refusing = [&] () -> store::Store {
        (void)sc.opener("right")();
        throw OptionError("not this store");
    };
    try {
        (void)store::create_snapshot(refusing, sc.options());
        ADD_FAILURE() << "no error";
    } catch (const OptionError& e) {
        EXPECT_STREQ(e.what(), "not this store");
    }
    // an open that fails at once, before the capture has begun
    const auto at_once = []() -> store::Store { throw store::StoreError("no store here"); };
    EXPECT_THROW((void)store::create_snapshot(at_once, sc.options()), store::StoreError);
    EXPECT_EQ(sc.snapshots(), 1u);
    // a path that cannot be examined is the capture's error, the store opened or not
    store::SnapshotOptions bad = sc.options();
    bad.paths = {sc.tmp.path() / "absent"};
    EXPECT_THROW((void)store::create_snapshot(sc.opener("right"), bad), Error);
    EXPECT_EQ(sc.snapshots(), 1u);
}

}  // namespace
}  // namespace cdc
