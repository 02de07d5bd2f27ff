// SPDX-License-Identifier: Apache-2.0
// cdc dupes --action hardlink|reflink merges only files with the same owner,
// group, mode and extended attributes (ACLs included), on one file system:
// the merge tests of issue 12, item 1, run through the real tool on crafted
// trees (two owners, setuid, xattrs, an ACL, a tmpfs beside the disk). No
// path's owner, mode or attributes may change unless --ignore-metadata.
#include "cli_support.hpp"
#include "dupes_support.hpp"

#include <gtest/gtest.h>

#include <set>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

std::string step_of(const nlohmann::json& doc, const std::string& path, const char* field) {
    for (const auto& a : doc["actions"])
        if (a["path"] == path) return a.value(field, "");
    return "(no step for " + path + ")";
}

// The scenario: root's files and an unprivileged user's identical
// file, backdated so that --keep oldest would pick it. Root must never end
// up sharing the user's inode (the user's next write would change root's
// file), nor the other way round.
TEST(DupesIdentity, TwoOwnersAreNeverMerged) {
    CDC_REQUIRE_ROOT();
    TempDir tmp;
    const fs::path t = tmp.path() / "tree";
    const auto d = random_bytes(30000, 41);
    for (const char* name : {"root/a", "root/c", "user/b"}) write_file(t / name, d);
    set_owner(t / "user", kOtherUid, kOtherGid);
    set_owner(t / "user/b", kOtherUid, kOtherGid);
    set_mtime(t / "root/a", 2000000);
    set_mtime(t / "root/c", 3000000);
    set_mtime(t / "user/b", 100);  // backdated: the oldest
    // The user's hard link to a root file outside the tree (made by root
    // here; protected_hardlinks would stop the user).
    write_file(tmp.path() / "outside/secret", d);
    set_mtime(tmp.path() / "outside/secret", 500);
    ASSERT_EQ(::link((tmp.path() / "outside/secret").c_str(), (t / "user/link").c_str()), 0);
    const auto before = metadata_snapshot(tmp.path());

    const auto dry = run_tool({"dupes", "--action", "hardlink", "--dry-run", "--json", t.string()});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_EQ(metadata_snapshot(tmp.path()), before);
    const auto r = run_tool({"dupes", "--action", "hardlink", "--json", t.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(metadata_snapshot(tmp.path()), before) << "an owner, mode or attribute changed:\n" << r.out;
    const auto doc = nlohmann::json::parse(r.out);
    // The user's backdated file is the group's kept file, for the user's set
    // only; root's copies form their own set and are merged into its oldest
    // file (the root-owned inode also named outside/secret).
    const std::string a = (t / "root/a").string(), b = (t / "user/b").string(), c = (t / "root/c").string(),
                      link = (t / "user/link").string();
    EXPECT_EQ(inode_of(a), inode_of(tmp.path() / "outside/secret"));
    EXPECT_EQ(inode_of(c), inode_of(a));
    EXPECT_NE(inode_of(b), inode_of(a));
    EXPECT_EQ(step_of(doc, a, "status"), "done");
    EXPECT_EQ(step_of(doc, a, "kept"), link);
    EXPECT_EQ(step_of(doc, link, "status"), "kept");
    EXPECT_NE(step_of(doc, link, "reason").find("owner (uid 0, kept file 4242)"), std::string::npos) << r.out;
    const auto plan = nlohmann::json::parse(dry.out);
    EXPECT_EQ(step_of(plan, link, "status"), "kept");
    EXPECT_EQ(step_of(plan, a, "status"), "planned");

    // The text report says why.
    const auto again = run_tool({"dupes", "--action", "hardlink", "--dry-run", t.string()});
    EXPECT_NE(again.out.find(fmt::format("kept '{}': not merged: different owner (uid 0, kept file 4242), group (gid "
                                         "0, kept file 4242) (kept file '{}')",
                                         a, b)),
              std::string::npos)
        << again.out;

    // --ignore-metadata restores the old, dangerous behaviour: the user's
    // backdated file is kept and root's paths now name the user's inode.
    const auto unsafe = run_tool({"dupes", "--action", "hardlink", "--ignore-metadata", "--json", t.string()});
    ASSERT_EQ(unsafe.exit_code, 0) << unsafe.err;
    EXPECT_EQ(inode_of(a), inode_of(b));
    EXPECT_EQ(inode_of(c), inode_of(b));
    struct stat st {};
    ASSERT_EQ(::stat(a.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kOtherUid);
}

// One owner, but modes and attributes that a hard link would hand from one
// path to another: a setuid copy, another group, a trusted.* attribute, an
// ACL that lets another user write. Each stays apart; the two plain pairs
// are merged.
TEST(DupesIdentity, ModeGroupXattrAndAclSplitGroups) {
    CDC_REQUIRE_ROOT();
    TempDir tmp;
    const fs::path t = tmp.path();
    const auto d = random_bytes(20000, 42);
    long mtime = 1000000;
    for (const char* name : {"p0", "p1", "setuid", "group", "xattr", "acl_plain0", "acl_plain1", "acl"}) {
        write_file(t / name, d);
        set_mode(t / name, 0755);
        set_mtime(t / name, mtime += 10);  // p0 oldest
    }
    set_mode(t / "setuid", 04755);
    set_owner(t / "group", 0, kOtherGid);
    set_xattr(t / "xattr", "trusted.cdc-test", "label");
    grant_acl_rwx(t / "acl", kOtherUid);  // mode 0775 now, from the ACL's mask
    set_mode(t / "acl_plain0", 0775);
    set_mode(t / "acl_plain1", 0775);
    struct stat st {};
    ASSERT_EQ(::stat((t / "acl").c_str(), &st), 0);
    ASSERT_EQ(st.st_mode & 07777, 0775u) << "the ACL's mask sets the group bits";
    const auto before = metadata_snapshot(t);

    const auto r = run_tool({"dupes", "--action", "hardlink", "--json", t.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(metadata_snapshot(t), before) << r.out;
    const auto doc = nlohmann::json::parse(r.out);
    const auto p = [&](const char* n) { return (t / n).string(); };
    EXPECT_EQ(inode_of(p("p1")), inode_of(p("p0")));
    EXPECT_EQ(inode_of(p("acl_plain1")), inode_of(p("acl_plain0")));  // merged within their own set
    std::set<std::uint64_t> inodes;
    for (const char* n : {"p0", "setuid", "group", "xattr", "acl_plain0", "acl"}) inodes.insert(inode_of(p(n)));
    EXPECT_EQ(inodes.size(), 6u);
    const std::pair<const char*, const char*> why[] = {
        {"setuid", "mode (4755, kept file 0755)"},
        {"group", "group (gid 4242, kept file 0)"},
        {"xattr", "extended attributes (trusted.cdc-test)"},
        {"acl", "extended attributes (system.posix_acl_access)"},
        {"acl_plain0", "mode (0775, kept file 0755) (kept for the 1 other file(s) of its merge set)"},
    };
    for (const auto& [name, text] : why) {
        EXPECT_EQ(step_of(doc, p(name), "status"), "kept") << name;
        EXPECT_NE(step_of(doc, p(name), "reason").find(text), std::string::npos) << name << ": " << r.out;
    }
    EXPECT_EQ(step_of(doc, p("acl_plain1"), "kept"), p("acl_plain0"));
    EXPECT_EQ(doc["summary"]["skipped"], 0);
}

// A group spread over two file systems (the disk and a tmpfs mounted inside
// the tree): one file is kept on each and the others are merged into it.
// (Before: the oldest file, on the tmpfs, was kept and every disk copy was
// skipped as "different file system", exit 3.)
TEST(DupesIdentity, CrossFileSystemMergesWithinEach) {
    CDC_REQUIRE_ROOT();
    TempDir tmp;
    const fs::path t = tmp.path();
    const TmpfsMount mount(t / "mnt");
    const auto d = random_bytes(40000, 43);
    long mtime = 1000000;
    for (const char* name : {"mnt/t1", "mnt/sub/t2", "disk/d1", "disk/d2", "disk/d3"}) {
        write_file(t / name, d);
        set_mtime(t / name, mtime += 10);  // mnt/t1 oldest
    }
    struct stat a {}, b {};
    ASSERT_EQ(::stat((t / "mnt").c_str(), &a), 0);
    ASSERT_EQ(::stat((t / "disk").c_str(), &b), 0);
    ASSERT_NE(a.st_dev, b.st_dev);
    const auto before = metadata_snapshot(t);
    for (const std::string action : {"hardlink", "delete"}) {
        if (action == "delete") {
            // A fresh copy of the tree on both file systems.
            for (const char* name : {"mnt/sub/t2", "disk/d1", "disk/d2", "disk/d3"}) {
                fs::remove(t / name);
                write_file(t / name, d);
            }
        }
        const auto r = run_tool({"dupes", "--action", action, "--json", t.string()});
        ASSERT_EQ(r.exit_code, 0) << action << ": " << r.err << r.out;
        const auto doc = nlohmann::json::parse(r.out);
        EXPECT_EQ(doc["summary"]["skipped"], 0);
        if (action == "hardlink") {
            EXPECT_EQ(inode_of(t / "mnt/sub/t2"), inode_of(t / "mnt/t1"));
            EXPECT_EQ(inode_of(t / "disk/d2"), inode_of(t / "disk/d1"));
            EXPECT_EQ(inode_of(t / "disk/d3"), inode_of(t / "disk/d1"));
            EXPECT_EQ(step_of(doc, (t / "disk/d1").string(), "status"), "kept");
            EXPECT_NE(step_of(doc, (t / "disk/d1").string(), "reason").find("different file system"), std::string::npos);
            EXPECT_EQ(metadata_snapshot(t), before);
        } else {
            // delete keeps one file for the whole group, on any file system.
            EXPECT_TRUE(fs::exists(t / "mnt/t1"));
            for (const char* name : {"mnt/sub/t2", "disk/d1", "disk/d2", "disk/d3"}) EXPECT_FALSE(fs::exists(t / name));
        }
    }
}

}  // namespace
}  // namespace cdc::test
