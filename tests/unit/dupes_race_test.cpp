// SPDX-License-Identifier: Apache-2.0
// cdc dupes: the races a user who can write into the tree can provoke
// between the scan, the plan and the change — chown, chmod (setuid), a new
// extended attribute, a FIFO or a symlink put where a file or a directory
// was. Each is made at a fixed point (after scan_dupes, or between
// plan_dupes_action and apply_dupes_plan), so the checks made on the open
// descriptors right before each change are what must catch it.
#include "dupes_support.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

struct Tree {
    TempDir tmp;
    fs::path root = tmp.path() / "tree";
    std::vector<std::uint8_t> bytes = random_bytes(50000, 77);

    // keep (oldest), dup1, sub/dup2: identical, root-owned, 0644.
    Tree() {
        long mtime = 1000000;
        for (const char* name : {"keep", "dup1", "sub/dup2"}) {
            write_file(root / name, bytes);
            set_mode(root / name, 0644);
            set_mtime(root / name, mtime += 10);
        }
    }
    std::string path(const char* name) const { return (root / name).string(); }
};

const DupesStep& step_for(const std::vector<DupesStep>& steps, const std::string& path) {
    for (const auto& s : steps)
        if (s.path == path) return s;
    throw std::runtime_error("no step for " + path);
}

// Plan a hard-link run, let `change` act, apply: returns the steps.
template <class Change>
std::vector<DupesStep> plan_change_apply(const Tree& t, Change&& change, DupesAction action = DupesAction::hardlink) {
    DupesOptions o;
    o.warning = [](const std::string&) {};
    const DupesResult res = find_dupes(std::vector<std::string>{t.root.string()}, o);
    EXPECT_EQ(res.group_count(), 1u);
    std::vector<DupesStep> steps = plan_dupes_action(res, action, parse_keep_rule("oldest"), o);
    EXPECT_EQ(steps.size(), 2u);
    for (const auto& s : steps) EXPECT_EQ(s.status, DupesStep::Status::planned) << s.path << ": " << s.reason;
    change();
    apply_dupes_plan(res, steps, o);
    return steps;
}

TEST(DupesRaces, ChownOfADuplicateAfterThePlan) {
    CDC_REQUIRE_ROOT();
    Tree t;
    const auto steps = plan_change_apply(t, [&] { set_owner(t.root / "dup1", kOtherUid, kOtherGid); });
    const DupesStep& s = step_for(steps, t.path("dup1"));
    EXPECT_EQ(s.status, DupesStep::Status::skipped);
    EXPECT_NE(s.reason.find("owner (uid 4242, kept file 0)"), std::string::npos) << s.reason;
    EXPECT_NE(inode_of(t.path("dup1")), inode_of(t.path("keep")));
    EXPECT_EQ(step_for(steps, t.path("sub/dup2")).status, DupesStep::Status::done);
    EXPECT_EQ(inode_of(t.path("sub/dup2")), inode_of(t.path("keep")));
}

TEST(DupesRaces, SetuidOnTheKeptFileAfterThePlan) {
    CDC_REQUIRE_ROOT();
    Tree t;
    const auto before = metadata_snapshot(t.root);
    const auto steps = plan_change_apply(t, [&] { set_mode(t.root / "keep", 04755); });
    for (const auto& s : steps) {
        EXPECT_EQ(s.status, DupesStep::Status::skipped) << s.path;
        EXPECT_NE(s.reason.find("mode (0644, kept file 4755)"), std::string::npos) << s.reason;
    }
    // No duplicate became the setuid file.
    auto after = metadata_snapshot(t.root);
    EXPECT_EQ(after.at(t.path("dup1")), before.at(t.path("dup1")));
    EXPECT_EQ(after.at(t.path("sub/dup2")), before.at(t.path("sub/dup2")));
}

TEST(DupesRaces, ExtendedAttributeAfterThePlan) {
    CDC_REQUIRE_ROOT();
    Tree t;
    const auto steps = plan_change_apply(t, [&] { set_xattr(t.root / "sub/dup2", "trusted.cdc-race", "x"); });
    const DupesStep& s = step_for(steps, t.path("sub/dup2"));
    EXPECT_EQ(s.status, DupesStep::Status::skipped);
    EXPECT_NE(s.reason.find("extended attributes (trusted.cdc-race)"), std::string::npos) << s.reason;
    EXPECT_EQ(xattrs_of(t.path("sub/dup2")), "trusted.cdc-race=78");
}

// A FIFO where a file was blocks a plain open() for reading until a writer
// comes: the run must neither hang nor act on it. Each run is a child
// process under alarm(), so that a hang fails the test instead of the suite.
template <class Body>
void without_hanging(Body&& body) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::alarm(20);
        body();
        ::_exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status) << " (SIGALRM: the run hung on a FIFO)";
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(DupesRaces, FifoInPlaceOfAFileAfterTheScan) {
    Tree t;
    without_hanging([&] {
        DupesOptions o;
        o.warning = [](const std::string&) {};
        DupesScan scan = scan_dupes(std::vector<std::string>{t.root.string()}, o);
        fs::remove(t.root / "dup1");
        if (::mkfifo(t.path("dup1").c_str(), 0644) != 0) ::_exit(3);
        const DupesResult res = resolve_dupes(std::move(scan), o);
        EXPECT_EQ(groups_of(res), (Groups{{t.path("keep"), t.path("sub/dup2")}}));
        EXPECT_EQ(res.summary.skipped, 1u);
    });
}

TEST(DupesRaces, FifoInPlaceOfADuplicateAfterThePlan) {
    Tree t;
    without_hanging([&] {
        const auto steps = plan_change_apply(t, [&] {
            fs::remove(t.root / "dup1");
            if (::mkfifo(t.path("dup1").c_str(), 0644) != 0) ::_exit(3);
        });
        EXPECT_EQ(step_for(steps, t.path("dup1")).status, DupesStep::Status::skipped);
        EXPECT_TRUE(fs::is_fifo(t.path("dup1")));
        EXPECT_EQ(step_for(steps, t.path("sub/dup2")).status, DupesStep::Status::done);
    });
}

// The duplicate's directory replaced by a symlink to a directory outside
// the tree that holds another name of the very same inode (so that every
// check by identity passes): the change must not land outside.
TEST(DupesRaces, DirectoryReplacedBySymlinkAfterThePlan) {
    for (const auto action : {DupesAction::hardlink, DupesAction::remove}) {
        Tree t;
        const fs::path outside = t.tmp.path() / "outside";
        fs::create_directories(outside);
        ASSERT_EQ(::link(t.path("sub/dup2").c_str(), (outside / "dup2").c_str()), 0);
        write_file(outside / "other", t.bytes);
        const auto steps = plan_change_apply(
            t,
            [&] {
                fs::rename(t.root / "sub", t.root / "sub.moved");
                fs::create_directory_symlink(outside, t.root / "sub");
            },
            action);
        const auto outside_after = snapshot(outside);
        const DupesStep& s = step_for(steps, t.path("sub/dup2"));
        EXPECT_EQ(s.status, DupesStep::Status::skipped) << to_string(action);
        EXPECT_NE(s.reason.find("replaced"), std::string::npos) << s.reason;
        EXPECT_TRUE(fs::exists(outside / "dup2")) << to_string(action);
        EXPECT_EQ(inode_of(outside / "dup2"), inode_of(t.root / "sub.moved/dup2"));
        EXPECT_EQ(std::count_if(outside_after.begin(), outside_after.end(),
                                [](const std::string& l) { return l.find(".cdc-dupes-tmp") != std::string::npos; }),
                  0);
        EXPECT_EQ(step_for(steps, t.path("dup1")).status, DupesStep::Status::done);
    }
}

// The duplicate itself replaced by a symlink to the kept file: not
// followed, not changed.
TEST(DupesRaces, DuplicateReplacedBySymlinkAfterThePlan) {
    Tree t;
    const auto steps = plan_change_apply(t, [&] {
        fs::rename(t.root / "dup1", t.root / "dup1.moved");
        fs::create_symlink(t.root / "dup1.moved", t.root / "dup1");
    });
    EXPECT_EQ(step_for(steps, t.path("dup1")).status, DupesStep::Status::skipped);
    EXPECT_TRUE(fs::is_symlink(t.root / "dup1"));
    EXPECT_NE(inode_of(t.root / "dup1.moved"), inode_of(t.root / "keep"));
}

}  // namespace
}  // namespace cdc::test
