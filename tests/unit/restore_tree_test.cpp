// SPDX-License-Identifier: Apache-2.0
// The restore of a tree against hostile trees and hostile outputs (issue 35
// item 6): names with "..", '/' or nothing, a symlink followed by an entry
// "beneath" it, links already in OUT, a directory swapped for a symlink
// before it is opened (a hook) and while files are written (a thread), hard
// links aimed outside; and the rules for a user who is not root.
#include "tree_support.hpp"
#include "test_support.hpp"

#include <atomic>
#include <grp.h>
#include <pwd.h>
#include <thread>

#include <stdio.h>  // renameat2

namespace cdc {
namespace {

using namespace cdc::test;
using tr::Entry;
using tr::EntryType;
using Kind = tr::RestoreProblem::Kind;

/// Trees made by hand (any entries, bad ones included); a file's content
/// travels in its digest field.
struct Hand {
    std::map<tr::BlobId, std::vector<Entry>> trees;
    std::set<std::string> broken_content;  // names whose content throws
    std::uint8_t next = 1;

    tr::BlobId tree(std::vector<Entry> children) {
        tr::BlobId id{};
        id.fill(next++);
        trees[id] = std::move(children);
        return id;
    }
    tr::RestoreSource source() const {
        tr::RestoreSource s;
        s.tree = [this](const tr::BlobId& id) {
            const auto it = trees.find(id);
            if (it == trees.end()) throw std::runtime_error("no such tree object");
            return it->second;
        };
        s.content = [this](const Entry& e, const std::function<void(std::string_view)>& sink) {
            if (broken_content.count(e.name)) throw std::runtime_error("chunk 3 is damaged");
            sink(e.content.digest);
        };
        return s;
    }
};

Entry file(std::string name, std::string content, std::uint32_t mode = 0644) {
    Entry e;
    e.name = std::move(name);
    e.type = EntryType::file;
    e.mode = mode;
    e.size = content.size();
    e.nlink = 1;
    e.content.digest = std::move(content);
    e.mtime_ns = e.atime_ns = 1'234'567'890'000'000'000;
    return e;
}

Entry directory(std::string name, const tr::BlobId& id, std::uint32_t mode = 0755) {
    Entry e;
    e.name = std::move(name);
    e.type = EntryType::directory;
    e.mode = mode;
    e.subtree = id;
    return e;
}

Entry symlink(std::string name, std::string target) {
    Entry e;
    e.name = std::move(name);
    e.type = EntryType::symlink;
    e.mode = 0777;
    e.target = std::move(target);
    return e;
}

/// A root directory owned by the running user.
Entry root_of(const tr::BlobId& id) {
    Entry e = directory("", id, 0755);
    e.uid = ::geteuid();
    e.gid = ::getegid();
    return e;
}

/// Every path below `p` (links not followed), relative.
std::vector<std::string> listing(const fs::path& p) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(p, ec))) return out;
    for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it)
        out.push_back(fs::relative(it->path(), p).string());
    std::sort(out.begin(), out.end());
    return out;
}

const tr::RestoreProblem* problem_at(const tr::RestoreReport& r, std::string_view path) {
    for (const auto& p : r.problems)
        if (p.path == path) return &p;
    return nullptr;
}

struct Scene {
    TempDir tmp;
    fs::path out = tmp.path() / "out";
    fs::path outside = tmp.path() / "outside";
    Scene() {
        fs::create_directories(outside / "dir");
        write_bytes(outside / "target", "keep");
    }
    /// Nothing was added, changed or removed outside OUT.
    void expect_outside_untouched() const {
        EXPECT_EQ(listing(outside), (std::vector<std::string>{"dir", "target"}));
        EXPECT_EQ(read_bytes(outside / "target"), "keep");
        std::vector<std::string> top;
        for (const auto& e : fs::directory_iterator(tmp.path())) top.push_back(e.path().filename().string());
        std::sort(top.begin(), top.end());
        EXPECT_EQ(top, (std::vector<std::string>{"out", "outside"}));
    }
};

// ---------------------------------------------------------------- names

TEST(RestoreAttack, BadNamesAreRefusedOneByOneAndTheRestRestored) {
    Scene s;
    Hand h;
    const auto inner = h.tree({file("..", "up"), file("fine", "fine")});
    const std::vector<std::string> bad = {"..", ".", "", "a/b", "/abs", "../outside/target", std::string("nul\0x", 5),
                                          std::string(256, 'L')};
    std::vector<Entry> top;
    for (const std::string& n : bad) top.push_back(file(n, "evil"));
    top.push_back(directory("..", inner));
    top.push_back(directory("d", inner));
    top.push_back(file("ok", "good"));
    const auto r = tr::restore(s.out, root_of(h.tree(top)), h.source());
    EXPECT_EQ(read_bytes(s.out / "ok"), "good");
    EXPECT_EQ(read_bytes(s.out / "d/fine"), "fine");
    EXPECT_EQ(listing(s.out), (std::vector<std::string>{"d", "d/fine", "ok"}));
    ASSERT_EQ(r.problems.size(), bad.size() + 2) << problems_text(r);
    for (const auto& p : r.problems) EXPECT_EQ(p.kind, Kind::damaged) << p.path << ": " << p.why;
    EXPECT_NE(problem_at(r, "d/.."), nullptr);
    EXPECT_NE(problem_at(r, "a/b"), nullptr);
    EXPECT_NE(problem_at(r, "../outside/target")->why.find("'/'"), std::string::npos);
    s.expect_outside_untouched();
}

// ---------------------------------------------------------------- links in the tree

TEST(RestoreAttack, ASymlinkFollowedByAnEntryBeneathItWritesNothingOutside) {
    Scene s;
    Hand h;
    // The tar attack, in every form a tree can take: the link, then a
    // directory of the same name holding a file, then the file by a path.
    const auto beneath = h.tree({file("file", "evil"), directory("deeper", h.tree({file("f", "evil")}))});
    const auto r = tr::restore(
        s.out,
        root_of(h.tree({symlink("dir", s.outside.string()), directory("dir", beneath), file("dir/file", "evil"),
                        symlink("up", ".."), directory("up", beneath)})),
        h.source());
    s.expect_outside_untouched();
    EXPECT_EQ(fs::read_symlink(s.out / "dir"), s.outside);
    EXPECT_EQ(fs::read_symlink(s.out / "up"), "..");
    EXPECT_EQ(r.problems.size(), 3u) << problems_text(r);
    EXPECT_EQ(r.symlinks, 2u);
}

TEST(RestoreAttack, ALinkLeftInOutByAnEarlierRestoreIsReplacedNotEntered) {
    Scene s;
    Hand h;
    // First restore: "dir" -> outside. Second, into the same OUT: a
    // directory "dir" with files.
    auto r = tr::restore(s.out, root_of(h.tree({symlink("dir", s.outside.string()), symlink("rel", "../outside")})),
                         h.source());
    ASSERT_TRUE(r.problems.empty()) << problems_text(r);
    const auto beneath = h.tree({file("file", "mine"), directory("sub", h.tree({file("f", "mine too")}))});
    r = tr::restore(s.out, root_of(h.tree({directory("dir", beneath), directory("rel", beneath)})), h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    s.expect_outside_untouched();
    EXPECT_FALSE(fs::is_symlink(s.out / "dir"));
    EXPECT_EQ(read_bytes(s.out / "dir/sub/f"), "mine too");
    EXPECT_EQ(read_bytes(s.out / "rel/file"), "mine");
}

TEST(RestoreAttack, LinksAlreadyInOutAreReplacedNeverWrittenThrough) {
    Scene s;
    fs::create_directories(s.out);
    fs::create_symlink(s.outside / "target", s.out / "f");
    fs::create_symlink(s.outside / "dir", s.out / "d");
    fs::create_symlink(s.outside / "target", s.out / "l");
    fs::create_symlink(s.outside / "target", s.out / "p");
    fs::create_symlink(s.outside / "target", s.out / "h");
    Hand h;
    Entry fifo;
    fifo.name = "p";
    fifo.type = EntryType::fifo;
    fifo.mode = 0600;
    Entry first = file("a", "linked");
    first.nlink = 2;
    Entry hard = first;
    hard.name = "h";
    hard.type = EntryType::hardlink;
    hard.link = {"a"};
    const auto r = tr::restore(
        s.out, root_of(h.tree({first, directory("d", h.tree({file("x", "in d")})), file("f", "new"), hard, symlink("l", "new"), fifo})),
        h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    s.expect_outside_untouched();
    EXPECT_EQ(read_bytes(s.out / "f"), "new");
    EXPECT_FALSE(fs::is_symlink(s.out / "f"));
    EXPECT_TRUE(fs::is_directory(fs::symlink_status(s.out / "d")));
    EXPECT_EQ(read_bytes(s.out / "d/x"), "in d");
    EXPECT_EQ(fs::read_symlink(s.out / "l"), "new");
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(s.out / "p")));
    EXPECT_EQ(fs::hard_link_count(s.out / "h"), 2u);
    EXPECT_EQ(read_bytes(s.out / "h"), "linked");
}

TEST(RestoreAttack, ADirectoryInTheWayOfAFileIsLeftAlone) {
    Scene s;
    fs::create_directories(s.out / "f");
    write_bytes(s.out / "f/mine", "mine");
    Hand h;
    const auto r = tr::restore(s.out, root_of(h.tree({file("f", "theirs"), symlink("f2", "x")})), h.source());
    ASSERT_EQ(r.problems.size(), 1u) << problems_text(r);
    EXPECT_EQ(r.problems[0].path, "f");
    EXPECT_EQ(r.problems[0].kind, Kind::failed);
    EXPECT_EQ(read_bytes(s.out / "f/mine"), "mine");
    EXPECT_EQ(listing(s.out), (std::vector<std::string>{"f", "f/mine", "f2"}));
}

// ---------------------------------------------------------------- races

TEST(RestoreAttack, ADirectorySwappedForALinkBeforeItIsOpenedIsNotEntered) {
    Scene s;
    Hand h;
    const auto inner = h.tree({file("x", "evil"), directory("y", h.tree({file("z", "evil")}))});
    tr::RestoreOptions o;
    const std::string outside = s.outside.string();
    o.before_open_dir = [&](int parent, std::string_view name) {
        if (name != "d") return;
        // The attacker: the directory just made moves away, a link takes its place.
        ASSERT_EQ(::renameat(parent, "d", parent, "d.moved"), 0);
        ASSERT_EQ(::symlinkat(outside.c_str(), parent, "d"), 0);
    };
    const auto r = tr::restore(s.out, root_of(h.tree({directory("d", inner), file("e", "fine")})), h.source(), o);
    ASSERT_EQ(r.problems.size(), 1u) << problems_text(r);
    EXPECT_EQ(r.problems[0].path, "d");
    EXPECT_EQ(r.problems[0].kind, Kind::failed);
    EXPECT_NE(r.problems[0].why.find("not entered"), std::string::npos) << r.problems[0].why;
    s.expect_outside_untouched();
    EXPECT_EQ(read_bytes(s.out / "e"), "fine");
    EXPECT_TRUE(fs::is_empty(s.out / "d.moved"));
}

TEST(RestoreAttack, ASwapperThreadNeverGetsAWriteOutside) {
    // A thread puts a fresh link to OUTSIDE in place of OUT/d or OUT/d/sub as
    // fast as it can (renameat2 RENAME_EXCHANGE: the name is always the one
    // or the other) while the restore makes them and writes files into them.
    Scene s;
    Hand h;
    std::vector<Entry> many;
    for (int i = 0; i < 60; ++i) many.push_back(file(fmt::format("f{:03}", i), "evil"));
    std::vector<Entry> in_d = many;
    in_d.push_back(directory("sub", h.tree(many)));
    const auto root = root_of(h.tree({directory("d", h.tree(in_d))}));
    std::size_t refused = 0;
    std::size_t swaps = 0;
    for (int run = 0; run < 30; ++run) {
        fs::remove_all(s.out);
        fs::create_directories(s.out);
        std::atomic<bool> stop{false};
        std::thread swapper([&] {
            const std::string lnk = (s.out / "lnk").string();
            const std::string targets[] = {(s.out / "d").string(), (s.out / "d/sub").string()};
            for (int n = 0; !stop.load(); ++n) {
                struct stat st {};
                if (::lstat(lnk.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                    ::rename(lnk.c_str(), (s.out / fmt::format("old{}", n)).c_str());
                ::symlink(s.outside.c_str(), lnk.c_str());
                if (::renameat2(AT_FDCWD, targets[n % 2].c_str(), AT_FDCWD, lnk.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
            }
        });
        const auto r = tr::restore(s.out, root, h.source());
        stop = true;
        swapper.join();
        if (!r.problems.empty()) ++refused;
        ASSERT_EQ(listing(s.outside), (std::vector<std::string>{"dir", "target"})) << "run " << run << ": written outside";
    }
    s.expect_outside_untouched();
    EXPECT_GT(swaps, 0u) << "the swapper never swapped: the test tested nothing";
    std::printf("%zu swaps; %zu of 30 runs had a directory refused (a link when opened)\n", swaps, refused);
}

// ---------------------------------------------------------------- hard links

TEST(RestoreAttack, HardLinksReachOnlyFilesThisRestoreMade) {
    Scene s;
    fs::create_directories(s.out);
    write_bytes(s.out / "victim", "user's file");
    Hand h;
    Entry up = file("up", "x");
    up.type = EntryType::hardlink;
    up.link = {"..", "outside", "target"};
    Entry abs = up;
    abs.name = "abs";
    abs.link = {"/etc/passwd"};
    Entry victim = up;
    victim.name = "to_victim";
    victim.link = {"victim"};  // in OUT, but not restored by this restore
    victim.content.digest = "own content";
    victim.size = victim.content.digest.size();
    Entry first = file("first", "first");
    first.nlink = 2;
    Entry second = first;
    second.name = "second";
    second.type = EntryType::hardlink;
    second.link = {"first"};
    second.content.digest = "second's own";
    second.size = second.content.digest.size();
    tr::RestoreOptions o;
    o.before_open_dir = [&](int parent, std::string_view name) {
        // Between "first" and "second": first becomes a link to outside.
        if (name != "m") return;
        ASSERT_EQ(::unlinkat(parent, "first", 0), 0);
        ASSERT_EQ(::symlinkat((s.outside / "target").c_str(), parent, "first"), 0);
    };
    const auto r = tr::restore(s.out, root_of(h.tree({abs, first, directory("m", h.tree({})), second, victim, up})),
                               h.source(), o);
    // ".." and "/etc/passwd" are bad components: damaged; the others restored as files.
    ASSERT_EQ(r.problems.size(), 2u) << problems_text(r);
    EXPECT_EQ(problem_at(r, "up")->kind, Kind::damaged);
    EXPECT_EQ(problem_at(r, "abs")->kind, Kind::damaged);
    EXPECT_EQ(read_bytes(s.out / "to_victim"), "own content");
    EXPECT_EQ(fs::hard_link_count(s.out / "victim"), 1u);
    EXPECT_EQ(read_bytes(s.out / "second"), "second's own");
    EXPECT_EQ(fs::hard_link_count(s.outside / "target"), 1u);
    EXPECT_EQ(r.hardlinks, 0u);
    s.expect_outside_untouched();
}

// ---------------------------------------------------------------- damage

TEST(Restore, DamagedContentAndTreesAreNamedAndTheRestRestored) {
    Scene s;
    Hand h;
    Entry short_content = file("short", "abc");
    short_content.size = 10;  // says 10, holds 3
    Entry long_content = file("long", "abcdefgh");
    long_content.size = 4;
    Entry lost = directory("lost", tr::BlobId{}, 0700);  // no such tree object
    lost.mtime_ns = 1'111'111'111'000'000'000;
    h.broken_content.insert("bad");
    const auto r = tr::restore(s.out,
                               root_of(h.tree({file("bad", "xxxx"), file("good", "good"), lost, long_content, short_content})),
                               h.source());
    ASSERT_EQ(r.problems.size(), 4u) << problems_text(r);
    for (const auto& p : r.problems) EXPECT_EQ(p.kind, Kind::damaged) << p.path;
    EXPECT_NE(problem_at(r, "bad")->why.find("chunk 3 is damaged"), std::string::npos);
    EXPECT_NE(problem_at(r, "short")->why.find("holds 3 bytes"), std::string::npos) << problem_at(r, "short")->why;
    EXPECT_NE(problem_at(r, "long")->why.find("more than"), std::string::npos) << problem_at(r, "long")->why;
    EXPECT_EQ(listing(s.out), (std::vector<std::string>{"good", "lost"})) << "a damaged file or a temporary file was left";
    struct stat st {};
    ASSERT_EQ(::stat((s.out / "lost").c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, 1'111'111'111) << "the damaged directory's metadata was not applied";
    EXPECT_FALSE(r.complete());
}

TEST(Restore, DepthIsBounded) {
    Scene s;
    Hand h;
    tr::BlobId id = h.tree({file("leaf", "x")});
    for (int i = 0; i < 10; ++i) id = h.tree({directory("d", id)});
    tr::RestoreOptions o;
    o.max_depth = 5;
    const auto r = tr::restore(s.out, root_of(id), h.source(), o);
    ASSERT_EQ(r.problems.size(), 1u) << problems_text(r);
    EXPECT_EQ(r.problems[0].path, "d/d/d/d/d/d");
    EXPECT_TRUE(fs::is_directory(s.out / "d/d/d/d/d"));
}

TEST(Restore, ALoneFileIsRestoredAsOutOrInsideIt) {
    Scene s;
    Hand h;
    const Entry f = file("name", "alone", 0640);
    auto r = tr::restore(s.tmp.path() / "out", f, h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    EXPECT_EQ(read_bytes(s.out), "alone");
    fs::remove(s.out);
    fs::create_directories(s.out);
    r = tr::restore(s.out, f, h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    EXPECT_EQ(read_bytes(s.out / "name"), "alone");
    EXPECT_EQ(fs::status(s.out / "name").permissions(), fs::perms(0640));
}

TEST(Restore, AReadOnlyDirectoryGetsItsChildrenFirst) {
    Scene s;
    Hand h;
    Entry ro = directory("ro", h.tree({file("inside", "x", 0444)}), 0555);
    ro.mtime_ns = 1'000'000'000'000'000'000;
    const auto r = tr::restore(s.out, root_of(h.tree({ro})), h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    EXPECT_EQ(read_bytes(s.out / "ro/inside"), "x");
    struct stat st {};
    ASSERT_EQ(::stat((s.out / "ro").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0555u);
    EXPECT_EQ(st.st_mtim.tv_sec, 1'000'000'000);
    ::chmod((s.out / "ro").c_str(), 0755);  // for TempDir's cleanup
}

// ---------------------------------------------------------------- who restores

/// The rules for a user who is not root (restore_tree.hpp): no owner, no
/// set-id bits unless asked, devices reported, sockets reported.
bool non_root_rules(const fs::path& out) {
    Hand h;
    Entry suid = file("suid", "#!/bin/sh\n", 04755);
    suid.uid = 4242;
    suid.gid = 4242;
    Entry dev;
    dev.name = "null";
    dev.type = EntryType::char_device;
    dev.mode = 0666;
    dev.rdev = makedev(1, 3);
    Entry sock;
    sock.name = "sock";
    sock.type = EntryType::socket;
    Entry attrs = file("attrs", "x");
    attrs.xattrs = {{"trusted.t", "root only"}, {"user.u", "anyone"}};
    const Entry root = root_of(h.tree({suid, dev, sock, attrs}));
    const auto r = tr::restore(out / "a", root, h.source());
    struct stat st {};
    bool ok = ::stat((out / "a/suid").c_str(), &st) == 0 && (st.st_mode & 07777) == 0755 && st.st_uid == ::geteuid();
    ok = ok && r.problems.size() == 3 && problem_at(r, "null") && problem_at(r, "null")->kind == Kind::not_restored &&
         problem_at(r, "sock") && problem_at(r, "sock")->kind == Kind::not_restored;
    // An xattr that cannot be set is reported; the file and its other xattrs stay.
    char value[16] = {};
    ok = ok && problem_at(r, "attrs") && problem_at(r, "attrs")->kind == Kind::metadata &&
         problem_at(r, "attrs")->why.find("xattr 'trusted.t'") != std::string::npos &&
         ::getxattr((out / "a/attrs").c_str(), "user.u", value, sizeof value) == 6 && std::string(value) == "anyone";
    ok = ok && !fs::exists(fs::symlink_status(out / "a/null"));
    tr::RestoreOptions o;
    o.setid = true;
    const auto r2 = tr::restore(out / "b", root, h.source(), o);
    ok = ok && ::stat((out / "b/suid").c_str(), &st) == 0 && (st.st_mode & 07777) == 04755;
    // Asking for the owner as a user: reported, not fatal.
    o.owner = true;
    const auto r3 = tr::restore(out / "c", root, h.source(), o);
    ok = ok && problem_at(r3, "suid") && problem_at(r3, "suid")->kind == Kind::metadata &&
         problem_at(r3, "suid")->why.find("owner 4242:4242") != std::string::npos && ::stat((out / "c/suid").c_str(), &st) == 0;
    if (!ok) std::fprintf(stderr, "%s---\n%s---\n%s", problems_text(r).c_str(), problems_text(r2).c_str(), problems_text(r3).c_str());
    return ok;
}

TEST(Restore, AUserWhoIsNotRootGetsNoOwnerNoSetIdBitsNoDevices) {
    Scene s;
    if (::geteuid() == 0) {
        const fs::path home = s.tmp.path() / "nobody";
        fs::create_directories(home);
        ::chmod(s.tmp.path().c_str(), 0755);
        ASSERT_EQ(::chown(home.c_str(), 65534, 65534), 0);
        EXPECT_EQ(run_as_nobody([&] { return non_root_rules(home); }), 0);
        // And as root: all three restored.
        Hand h;
        Entry suid = file("suid", "x", 04755);
        suid.uid = 4242;
        suid.gid = 4343;
        Entry dev;
        dev.name = "null";
        dev.type = EntryType::char_device;
        dev.mode = 0640;
        dev.rdev = makedev(1, 3);
        const auto r = tr::restore(s.out, root_of(h.tree({suid, dev})), h.source());
        EXPECT_TRUE(r.problems.empty()) << problems_text(r);
        struct stat st {};
        ASSERT_EQ(::stat((s.out / "suid").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 07777, 04755u);
        EXPECT_EQ(st.st_uid, 4242u);
        EXPECT_EQ(st.st_gid, 4343u);
        ASSERT_EQ(::lstat((s.out / "null").c_str(), &st), 0);
        EXPECT_TRUE(S_ISCHR(st.st_mode));
        EXPECT_EQ(st.st_rdev, makedev(1, 3));
        EXPECT_EQ(st.st_mode & 07777, 0640u);
    } else {
        EXPECT_TRUE(non_root_rules(s.tmp.path()));
    }
}

std::string own_name(bool group_name) {
    if (group_name) {
        const group* g = ::getgrgid(::getegid());
        return g ? g->gr_name : "";
    }
    const passwd* p = ::getpwuid(::geteuid());
    return p ? p->pw_name : "";
}

TEST(Restore, OwnersByNameWhereTheNameExistsHere) {
    // An entry made elsewhere: ids 4242 there, names of the running user
    // and group here. By name it is the running user's (allowed for anyone);
    // numerically, only root may give it uid 4242.
    Scene s;
    Hand h;
    Entry f = file("f", "x");
    f.uid = 4242;
    f.gid = 4343;
    f.user = own_name(false);
    f.group = own_name(true);
    ASSERT_FALSE(f.user.empty());
    ASSERT_FALSE(f.group.empty());
    Entry unknown = file("unknown", "y");
    unknown.uid = ::geteuid();
    unknown.gid = ::getegid();
    unknown.user = "no-such-user-here";
    tr::RestoreOptions o;
    o.owner = true;
    o.owner_by_name = true;
    const auto r = tr::restore(s.out, root_of(h.tree({f, unknown})), h.source(), o);
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    struct stat st {};
    ASSERT_EQ(::stat((s.out / "f").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(st.st_gid, ::getegid());
    ASSERT_EQ(::stat((s.out / "unknown").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid()) << "an unknown name falls back to the number";
    o.owner_by_name = false;
    fs::remove_all(s.out);
    const auto numeric = tr::restore(s.out, root_of(h.tree({f})), h.source(), o);
    ASSERT_EQ(::stat((s.out / "f").c_str(), &st), 0);
    if (::geteuid() == 0) {
        EXPECT_TRUE(numeric.problems.empty()) << problems_text(numeric);
        EXPECT_EQ(st.st_uid, 4242u);
        EXPECT_EQ(st.st_gid, 4343u);
    } else {
        ASSERT_EQ(numeric.problems.size(), 1u) << problems_text(numeric);
        EXPECT_EQ(numeric.problems[0].kind, Kind::metadata);
        EXPECT_EQ(st.st_uid, ::geteuid());
    }
}

TEST(Restore, HardLinksOfAPartOfASnapshotFollowItsPathInTheSnapshot) {
    // The snapshot holds a/first and a/second, a link to it; only "a" is
    // restored. Link paths are from the snapshot's root: with tree_path
    // {"a"} the link is made, without it the link's own content is written.
    Scene s;
    Hand h;
    Entry first = file("first", "shared");
    first.nlink = 2;
    Entry second = first;
    second.name = "second";
    second.type = EntryType::hardlink;
    second.link = {"a", "first"};
    const Entry a = directory("a", h.tree({first, second}));
    tr::RestoreOptions o;
    o.tree_path = {"a"};
    auto r = tr::restore(s.out, root_of(a.subtree), h.source(), o);
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    EXPECT_EQ(r.hardlinks, 1u);
    EXPECT_EQ(fs::hard_link_count(s.out / "second"), 2u);
    fs::remove_all(s.out);
    r = tr::restore(s.out, root_of(a.subtree), h.source());
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    EXPECT_EQ(r.hardlinks, 0u);
    EXPECT_EQ(fs::hard_link_count(s.out / "second"), 1u);
    EXPECT_EQ(read_bytes(s.out / "second"), "shared");
}

TEST(Restore, TimesAndXattrsOnlyWhenAsked) {
    Scene s;
    Hand h;
    Entry f = file("f", "x");
    f.xattrs = {{"user.k", "v"}};
    tr::RestoreOptions o;
    o.times = false;
    o.xattrs = false;
    const auto r = tr::restore(s.out, root_of(h.tree({f})), h.source(), o);
    EXPECT_TRUE(r.problems.empty()) << problems_text(r);
    struct stat st {};
    ASSERT_EQ(::stat((s.out / "f").c_str(), &st), 0);
    EXPECT_GT(st.st_mtim.tv_sec, 1'234'567'890) << "the mtime was restored though not asked";
    EXPECT_LT(::getxattr((s.out / "f").c_str(), "user.k", nullptr, 0), 0);
}

}  // namespace
}  // namespace cdc
