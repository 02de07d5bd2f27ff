// SPDX-License-Identifier: Apache-2.0
// cdc store against a second hostile probe: a file that shrinks while it is
// put (a sparse file cut while the put reads it), names the tree restore
// refused or NAME_MAX filled, the store's own files named as inputs, a
// group share's other member, another user's store, times before 1970.
// The other-user cases run the tool as nobody (root ignores permissions):
// they need root, as CI has.
#include "cli_support.hpp"
#include "store_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::json_of;
using test::run_tool;
using test::shrink_while_read;

constexpr unsigned kNobody = 65534;

#define REQUIRE_ROOT() ASSERT_EQ(::geteuid(), 0u) << "this test runs the tool as another user: run it as root, as CI does"

std::map<std::string, std::uint64_t> names_in(const std::string& dir) {
    std::map<std::string, std::uint64_t> out;
    for (const auto& m : json_of(run_tool({"store", "ls", dir, "--json"}))) out[m["name"]] = m["size"];
    return out;
}


/// A sparse file far larger than what is read before it is cut (8 GiB of
/// zeros: seconds to read, no disk).
fs::path sparse_file(const fs::path& p) {
    fs::create_directories(p.parent_path());
    { std::ofstream(p, std::ios::binary); }
    fs::resize_file(p, std::uint64_t{8} << 30);
    return p;
}

/// A file of 256 MiB of data (no hole): long enough to read that it is cut
/// while it is read.
fs::path dense_file(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream o(p, std::ios::binary | std::ios::trunc);
    const std::string block(std::size_t{1} << 20, 'd');
    for (int i = 0; i < 256; ++i) o.write(block.data(), static_cast<std::streamsize>(block.size()));
    return p;
}

TEST(StoreSafetyCli, AFileThatShrinksWhilePutIsNamedAndNotStored) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const auto small = test::random_bytes(20'000, 1);
    tmp.write("tree/a", small);
    for (const bool tree : {false, true}) {
        SCOPED_TRACE(tree ? "a tree" : "one file");
        // A tree is captured as a backup captures it: holes are kept as holes
        // (nothing of an 8 GiB sparse file is read), so its file is dense.
        const auto big = tree ? dense_file(tmp.path() / "tree" / "big") : sparse_file(tmp.path() / "tree" / "big");
        const std::string name = tree ? "t" : "one";
        const pid_t pid = test::spawn_tool(
            {"store", "put", dir, tree ? (tmp.path() / "tree").string() : big.string(), "--name", name},
            tmp.path());
        ASSERT_TRUE(shrink_while_read(pid, big, 1 << 20));
        EXPECT_EQ(test::wait_exit(pid), 3);
        const std::string err = test::read_text(tmp.path() / "err");
        EXPECT_NE(err.find(big.string()), std::string::npos) << err;
        EXPECT_NE(err.find("changed while it was read"), std::string::npos) << err;
    }
    // Nothing of the torn file; the rest of the tree.
    EXPECT_EQ(names_in(dir), (std::map<std::string, std::uint64_t>{{"t/a", small.size()}}));
    EXPECT_EQ(run_tool({"store", "verify", dir}).exit_code, 0);
}

TEST(StoreSafetyCli, NamesFillingNameMaxRestore) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const std::string long_name(NAME_MAX - 5, 'n');  // its temporary name with it passed NAME_MAX
    const auto a = test::random_bytes(10'000, 2), b = test::random_bytes(10'000, 3);
    tmp.write("tree/" + long_name, a);
    tmp.write("tree/b", b);
    ASSERT_EQ(run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "t"}).exit_code, 0);
    const auto out = tmp.path() / "out";
    const auto r = run_tool({"store", "get", dir, "t", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / long_name), a);
    EXPECT_EQ(test::read_bytes(out / "b"), b);
}

TEST(StoreSafetyCli, NamesFollowTheRuleOfTheTreeRestore) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const auto a = test::random_bytes(5'000, 4), f = test::random_bytes(6'000, 5);
    tmp.write("tree/x/a", a);
    const auto file = tmp.write("sub/f", f);
    // A tree's prefix may end with "/": "p/x/a", not "p//x/a".
    auto r = run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "p/"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A file by an absolute path, or one above the current directory: made
    // relative as tar does.
    r = run_tool({"store", "put", dir, file.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("stored as '" + file.string().substr(1) + "'"), std::string::npos) << r.err;
    {
        struct Cwd {
            fs::path old = fs::current_path();
            ~Cwd() { fs::current_path(old); }
        } cwd;
        fs::current_path(tmp.path() / "tree");
        r = run_tool({"store", "put", dir, "../sub/f"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    EXPECT_EQ(names_in(dir), (std::map<std::string, std::uint64_t>{
                                 {"p/x/a", a.size()}, {file.string().substr(1), f.size()}, {"sub/f", f.size()}}));
    // The whole store restores, every name below OUT.
    const auto out = tmp.path() / "out";
    r = run_tool({"store", "get", dir, ".", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / "p/x/a"), a);
    EXPECT_EQ(test::read_bytes(out / "sub/f"), f);
    // A --name the restore would refuse is a usage error; nothing stored.
    for (const std::string bad : {"dir/", "/abs", "a//b", "../up", "./here"}) {
        r = run_tool({"store", "put", dir, file.string(), "--name", bad});
        EXPECT_EQ(r.exit_code, 2) << bad << r.err;
        EXPECT_NE(r.err.find("name refused"), std::string::npos) << r.err;
    }
    EXPECT_EQ(names_in(dir).size(), 3u);
}

TEST(StoreSafetyCli, TheStoresOwnFilesAreNeverPutIntoIt) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, tmp.write("f", test::random_bytes(5000, 6)).string(), "--name", "f"}).exit_code, 0);
    for (const std::string& inside : {dir, dir + "/packs", dir + "/index.db", dir + "/packs/../lock"}) {
        const auto r = run_tool({"store", "put", dir, inside, "--name", "x"});
        EXPECT_EQ(r.exit_code, 2) << inside << r.err;
        EXPECT_NE(r.err.find("never put into it"), std::string::npos) << r.err;
    }
    // Through links of a tree, followed: skipped as the store itself.
    fs::create_directories(tmp.path() / "tree");
    tmp.write("tree/plain", test::random_bytes(3000, 7));
    fs::create_symlink(fs::path(dir) / "index.db", tmp.path() / "tree/db");
    fs::create_directory_symlink(fs::path(dir) / "packs", tmp.path() / "tree/packs");
    const auto r = run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "t", "--follow-symlinks"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("the store itself: skipped"), std::string::npos) << r.err;
    const auto names = names_in(dir);
    EXPECT_EQ(names.size(), 2u);
    EXPECT_TRUE(names.contains("t/plain"));
    EXPECT_EQ(run_tool({"store", "verify", dir}).exit_code, 0);
}

TEST(StoreSafetyCli, TimesBefore1970AreListedInTheirSecond) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const auto f = tmp.write("old", test::random_bytes(1000, 8));
    const timespec t[2] = {{0, UTIME_OMIT}, {-2, 500'000'000}};  // 1.5 s before the epoch
    ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), t, 0), 0);
    ASSERT_EQ(run_tool({"store", "put", dir, f.string(), "--name", "old"}).exit_code, 0);
    ::setenv("TZ", "UTC", 1);
    const auto r = run_tool({"store", "ls", dir});
    ::unsetenv("TZ");
    EXPECT_NE(r.out.find("1969-12-31 23:59:58"), std::string::npos) << r.out;
    // get restores it exactly.
    ASSERT_EQ(run_tool({"store", "get", dir, "old", "-o", (tmp.path() / "back").string()}).exit_code, 0);
    struct stat st {};
    ASSERT_EQ(::stat((tmp.path() / "back").c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, -2);
    EXPECT_EQ(st.st_mtim.tv_nsec, 500'000'000);
}

TEST(StoreSafetyCli, AGroupSharesOtherMembersAppendToItsPacks) {
    REQUIRE_ROOT();
    test::TempDir tmp;
    ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    // The share of STORE.md: chgrp -R GROUP DIR && chmod -R g+rwX DIR && chmod g+s DIR DIR/packs.
    for (const auto& e : fs::recursive_directory_iterator(dir)) ASSERT_EQ(::chown(e.path().c_str(), 0, kNobody), 0);
    ASSERT_EQ(::chown(dir.c_str(), 0, kNobody), 0);
    for (const auto& e : fs::recursive_directory_iterator(dir))
        ASSERT_EQ(::chmod(e.path().c_str(), e.is_directory() ? 02770 : 0660), 0);
    ASSERT_EQ(::chmod(dir.c_str(), 02770), 0);
    const mode_t old = ::umask(022);  // the usual umask
    const auto a = tmp.write("a", test::random_bytes(30'000, 9));
    auto r = run_tool({"store", "put", dir, a.string(), "--name", "a"});
    ::umask(old);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto pack = test::first_pack(dir);
    EXPECT_EQ(test::mode_of(pack), 0660u);
    // Another member (not the owner) puts into the same pack.
    const auto b = tmp.write("b", test::random_bytes(30'000, 10));
    ASSERT_EQ(::chmod(b.c_str(), 0644), 0);
    const auto before = fs::file_size(pack);
    r = test::run_tool_as(kNobody + 1, kNobody, {"store", "put", dir, b.string(), "--name", "b"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_GT(fs::file_size(pack), before);
    EXPECT_EQ(names_in(dir).size(), 2u);
    EXPECT_EQ(run_tool({"store", "verify", dir, "--full"}).exit_code, 0);
}

TEST(StoreSafetyCli, AnotherUsersStoreIsPermissionDeniedNotNotAStore) {
    REQUIRE_ROOT();
    test::TempDir tmp;
    ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);  // 0700, root's
    const auto r = test::run_tool_as(kNobody, kNobody, {"store", "ls", dir});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("not a store"), std::string::npos) << r.err;
    // A directory that is no store still says so.
    fs::create_directories(tmp.path() / "plain");
    const auto p = test::run_tool_as(kNobody, kNobody, {"store", "ls", (tmp.path() / "plain").string()});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_NE(p.err.find("not a store"), std::string::npos) << p.err;
}

}  // namespace
}  // namespace cdc
