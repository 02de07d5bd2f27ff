// SPDX-License-Identifier: Apache-2.0
// The one directory walker: order, symbolic links, special files, loops,
// overlaps, file systems and errors, and walk_inputs' view of it (each file
// once, by device and inode).
#include "dupes_support.hpp"  // TmpfsMount, CDC_REQUIRE_ROOT
#include "test_support.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

struct Recorder final : WalkVisitor {
    std::vector<std::string> files;
    std::vector<std::string> streams;
    std::map<std::string, WalkSkip> skips;
    std::map<std::string, std::pair<bool, WalkExclusion>> excluded_;  // path -> (is_dir, why)
    void file(const std::string& path, const struct stat& st) override {
        EXPECT_TRUE(S_ISREG(st.st_mode)) << path;
        files.push_back(path);
    }
    void stream(const std::string& path) override { streams.push_back(path); }
    void skipped(const std::string& path, WalkSkip why, std::string_view) override { skips[path] = why; }
    void excluded(const std::string& path, bool is_dir, WalkExclusion why) override {
        EXPECT_TRUE(excluded_.emplace(path, std::pair{is_dir, why}).second) << path << " excluded twice";
    }
};

// root/a.txt, root/b/c.txt, root/b/d/e.txt, root/z.txt, plus links and a FIFO.
struct Tree {
    TempDir tmp;
    std::string root = (tmp.path() / "root").string();
    Tree() {
        const std::vector<std::uint8_t> byte{1};
        for (const char* f : {"root/a.txt", "root/b/c.txt", "root/b/d/e.txt", "root/z.txt"}) tmp.write(f, byte);
        fs::create_symlink("a.txt", root + "/link-to-file");
        fs::create_directory_symlink("..", root + "/b/link-to-root");  // a loop when followed
        fs::create_symlink("nowhere", root + "/dangling");
        EXPECT_EQ(::mkfifo((root + "/fifo").c_str(), 0600), 0);
        EXPECT_EQ(::link((root + "/a.txt").c_str(), (root + "/b/hard-a.txt").c_str()), 0);
    }
};

TEST(Walk, FilesInNameOrderThenSubdirectoriesLinksNotFollowed) {
    Tree t;
    Recorder r;
    walk(std::vector<std::string>{t.root}, {}, r);
    const std::string& d = t.root;
    EXPECT_EQ(r.files, (std::vector<std::string>{d + "/a.txt", d + "/z.txt", d + "/b/c.txt", d + "/b/hard-a.txt",
                                                 d + "/b/d/e.txt"}));
    EXPECT_EQ(r.skips.at(d + "/link-to-file"), WalkSkip::symlink);
    EXPECT_EQ(r.skips.at(d + "/b/link-to-root"), WalkSkip::symlink);
    EXPECT_EQ(r.skips.at(d + "/dangling"), WalkSkip::symlink);
    EXPECT_EQ(r.skips.at(d + "/fifo"), WalkSkip::special);
    EXPECT_EQ(r.skips.size(), 4u);
    EXPECT_TRUE(r.streams.empty());
}

TEST(Walk, FollowingLinksFindsLoopsAndDanglingLinks) {
    Tree t;
    Recorder r;
    WalkOptions o;
    o.follow_symlinks = true;
    walk(std::vector<std::string>{t.root + "///"}, o, r);  // trailing slashes dropped
    const std::string& d = t.root;
    EXPECT_EQ(r.files, (std::vector<std::string>{d + "/a.txt", d + "/link-to-file", d + "/z.txt", d + "/b/c.txt",
                                                 d + "/b/hard-a.txt", d + "/b/d/e.txt"}));
    EXPECT_EQ(r.skips.at(d + "/b/link-to-root"), WalkSkip::loop);
    EXPECT_EQ(r.skips.at(d + "/dangling"), WalkSkip::dangling);
    EXPECT_EQ(r.skips.at(d + "/fifo"), WalkSkip::special);
}

TEST(Walk, OverlappingRootsAreWalkedOnceAndStreamsGoToTheVisitor) {
    Tree t;
    Recorder r;
    walk(std::vector<std::string>{t.root + "/b", t.root, "-", t.root + "/fifo"}, {}, r);
    EXPECT_EQ(r.files.size(), 5u);  // b has three, then root its two top files; b not again
    EXPECT_EQ(r.skips.at(t.root + "/b"), WalkSkip::overlap);
    EXPECT_EQ(r.streams, (std::vector<std::string>{"-", t.root + "/fifo"}));
    // A visitor that takes no streams: a FIFO root is an IoError naming it.
    struct NoStreams final : WalkVisitor {
        void file(const std::string&, const struct stat&) override {}
        void skipped(const std::string&, WalkSkip, std::string_view) override {}
    } strict;
    try {
        walk(std::vector<std::string>{t.root + "/fifo"}, {}, strict);
        ADD_FAILURE() << "no IoError";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("fifo"), std::string::npos) << e.what();
    }
}

TEST(Walk, MissingRootIsAnIoErrorBeforeAnythingIsReported) {
    Tree t;
    Recorder r;
    EXPECT_THROW(walk(std::vector<std::string>{t.root + "/nope", t.root}, {}, r), IoError);
    EXPECT_TRUE(r.files.empty());
}

TEST(Walk, OneFileSystemStopsAtAnotherFileSystem) {
    // /proc is always another file system than a temporary directory.
    TempDir tmp;
    fs::create_directory_symlink("/proc/self", tmp.path() / "proc");
    WalkOptions o;
    o.follow_symlinks = true;
    o.one_file_system = true;
    Recorder r;
    walk(std::vector<std::string>{tmp.path().string()}, o, r);
    EXPECT_EQ(r.skips.at((tmp.path() / "proc").string()), WalkSkip::other_fs);
    EXPECT_TRUE(r.files.empty());
}

TEST(Walk, ExcludedDirectoriesAreNotEnteredByAnyPath) {
    Tree t;
    WalkOptions o;
    o.exclude_dirs = {t.root + "/b/./", t.root + "/no-such-dir"};  // any spelling; a missing one is ignored
    Recorder r;
    walk(std::vector<std::string>{t.root}, o, r);
    const std::string& d = t.root;
    EXPECT_EQ(r.files, (std::vector<std::string>{d + "/a.txt", d + "/z.txt"}));
    EXPECT_EQ(r.skips.at(d + "/b"), WalkSkip::excluded);
    // Through a link too (followed), and as a root.
    fs::create_directory_symlink(d + "/b", t.tmp.path() / "to-b");
    Recorder r2;
    o.follow_symlinks = true;
    walk(std::vector<std::string>{(t.tmp.path() / "to-b").string()}, o, r2);
    EXPECT_TRUE(r2.files.empty());
    EXPECT_EQ(r2.skips.at((t.tmp.path() / "to-b").string()), WalkSkip::excluded);
}

TEST(Walk, AFileOfATreeSwappedSinceItWasListedIsNotRead) {
    // put and push open what the walk listed: inside a tree, a file whose
    // owner swapped it for a link (to a file only the reader may read) or a
    // FIFO (which would block the reader) is refused, not followed or waited on.
    Tree t;
    const std::string& d = t.root;
    const int fd = open_walked_file(d + "/a.txt", true, false);
    EXPECT_GE(fd, 0);
    ::close(fd);
    try {
        open_walked_file(d + "/link-to-file", true, false);
        ADD_FAILURE() << "opened through a link";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    try {
        open_walked_file(d + "/fifo", true, false);  // would block without O_NONBLOCK
        ADD_FAILURE() << "opened a FIFO";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
    }
    // With --follow-symlinks a link inside is followed; a root given is always.
    for (const bool inside : {true, false}) {
        const int f = open_walked_file(d + "/link-to-file", inside, inside);
        EXPECT_GE(f, 0);
        ::close(f);
    }
}

TEST(Walk, WalkInputsListsEachFileOnce) {
    Tree t;
    const WalkResult w = walk_inputs({t.root, t.root + "/b", t.root + "/a.txt"});
    std::vector<std::string> paths;
    for (const auto& f : w.files) paths.push_back(f.path);
    const std::string& d = t.root;
    // a.txt and b/hard-a.txt are one file; the second root and a.txt again add nothing.
    EXPECT_EQ(paths, (std::vector<std::string>{d + "/a.txt", d + "/z.txt", d + "/b/c.txt", d + "/b/d/e.txt"}));
    EXPECT_EQ(w.duplicates_skipped, 2u);
    EXPECT_EQ(w.total_bytes, 4u);
    EXPECT_EQ(w.symlinks_skipped, 3u);
    ASSERT_EQ(w.warnings.size(), 2u);  // the FIFO, the second root walked already
    EXPECT_EQ(w.warnings[0].path, d + "/fifo");
    EXPECT_EQ(w.warnings[1].path, d + "/b");
    EXPECT_NE(w.warnings[1].message.find("counted once"), std::string::npos);
}

TEST(Walk, WalkInputsHandsOnFilesAsItGoes) {
    Tree t;
    const std::vector<std::string> roots{t.root, t.root + "/b", t.root + "/a.txt"};
    const WalkResult whole = walk_inputs(roots);
    // Two files at a time taken out while the walk goes on: with the rest,
    // the same files in the same order; the counts as without.
    std::vector<std::string> taken;
    std::vector<std::size_t> seen;  // files listed at each call
    const WalkResult rest = walk_inputs(roots, {}, [&](WalkResult& r) {
        seen.push_back(r.files.size());
        if (r.files.size() < 2) return;
        for (const auto& f : r.files) taken.push_back(f.path);
        r.files.clear();
    });
    for (const auto& f : rest.files) taken.push_back(f.path);
    std::vector<std::string> want;
    for (const auto& f : whole.files) want.push_back(f.path);
    EXPECT_EQ(taken, want);
    EXPECT_EQ(seen, (std::vector<std::size_t>{1, 2, 1, 2}));  // a call per file listed
    EXPECT_EQ(rest.files.size(), 0u);
    EXPECT_EQ(rest.total_bytes, whole.total_bytes);
    EXPECT_EQ(rest.duplicates_skipped, whole.duplicates_skipped);
    EXPECT_EQ(rest.warnings.size(), whole.warnings.size());
    // An exception from it ends the walk and comes out.
    EXPECT_THROW(walk_inputs(roots, {}, [](WalkResult&) { throw std::runtime_error("stop"); }), std::runtime_error);
}

// ---------------------------------------------------------------- exclusions

void write_file(const fs::path& p, std::string_view text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
}

TEST(Walk, ExcludePatternsLeaveEntriesOutAndExcludedDirectoriesUnentered) {
    Tree t;
    const std::string& d = t.root;
    WalkOptions o;
    for (const char* p : {"*.txt", "!z.txt", "/b/d/", "fifo", "dangling"}) o.exclude.patterns.add(p);
    Recorder r;
    walk(std::vector<std::string>{d}, o, r);
    EXPECT_EQ(r.files, (std::vector<std::string>{d + "/z.txt"}));
    using E = std::pair<bool, WalkExclusion>;
    const std::map<std::string, E> expected = {{d + "/a.txt", {false, WalkExclusion::pattern}},
                                               {d + "/b/c.txt", {false, WalkExclusion::pattern}},
                                               {d + "/b/hard-a.txt", {false, WalkExclusion::pattern}},
                                               {d + "/b/d", {true, WalkExclusion::pattern}},
                                               {d + "/fifo", {false, WalkExclusion::pattern}},
                                               {d + "/dangling", {false, WalkExclusion::pattern}}};
    EXPECT_EQ(r.excluded_, expected);  // b/d/e.txt: never looked at
    // Excluded entries are not skips: only the links that were not excluded.
    EXPECT_EQ(r.skips, (std::map<std::string, WalkSkip>{{d + "/link-to-file", WalkSkip::symlink},
                                                        {d + "/b/link-to-root", WalkSkip::symlink}}));
    // Followed, a link to a directory is a directory; a dangling link's type
    // is unknown: a directory-only pattern does not exclude it.
    WalkOptions f;
    f.follow_symlinks = true;
    f.exclude.patterns.add("link-to-*/");
    f.exclude.patterns.add("dangling/");
    Recorder rf;
    walk(std::vector<std::string>{d}, f, rf);
    EXPECT_EQ(rf.excluded_, (std::map<std::string, E>{{d + "/b/link-to-root", {true, WalkExclusion::pattern}}}));
    EXPECT_EQ(rf.skips.at(d + "/dangling"), WalkSkip::dangling);
    EXPECT_NE(std::find(rf.files.begin(), rf.files.end(), d + "/link-to-file"), rf.files.end());
}

TEST(Walk, AnchoredPatternsAreRelativeToEachRootAndRootsMatchByName) {
    Tree t;
    const std::string& d = t.root;
    WalkOptions o;
    o.exclude.patterns.add("/d");
    Recorder below_b;
    walk(std::vector<std::string>{d + "/b/"}, o, below_b);
    EXPECT_EQ(below_b.excluded_.count(d + "/b/d"), 1u);
    Recorder below_root;  // root/d does not exist; root/b/d is not at the top
    walk(std::vector<std::string>{d}, o, below_root);
    EXPECT_TRUE(below_root.excluded_.empty());
    EXPECT_EQ(below_root.files.size(), 5u);

    // A root is matched by its name, against the patterns without a slash.
    WalkOptions n;
    n.exclude.patterns.add("a.txt");
    n.exclude.patterns.add("/root");
    Recorder as_root;
    walk(std::vector<std::string>{d + "/a.txt"}, n, as_root);
    EXPECT_EQ(as_root.excluded_.at(d + "/a.txt"), (std::pair{false, WalkExclusion::pattern}));
    EXPECT_TRUE(as_root.files.empty());
    Recorder r;
    walk(std::vector<std::string>{d}, n, r);
    EXPECT_EQ(r.excluded_.count(d + "/a.txt"), 1u);
    EXPECT_EQ(r.files.size(), 4u);
    n.exclude.patterns.add("root/");
    Recorder whole;
    walk(std::vector<std::string>{d + "//", "."}, n, whole);  // ("." has no name: walked)
    EXPECT_EQ(whole.excluded_.at(d), (std::pair{true, WalkExclusion::pattern}));
}

TEST(Walk, CacheDirectoriesTaggedWithTheSignatureAreExcluded) {
    TempDir tmp;
    const fs::path root = tmp.path() / "root";
    const std::string sig(kCacheDirTagSignature);
    write_file(root / "cache/CACHEDIR.TAG", sig + "\n# This file is a cache directory tag.\n");
    write_file(root / "cache/big.bin", "x");
    write_file(root / "cache/sub/deep.bin", "x");
    write_file(root / "exact/CACHEDIR.TAG", sig);  // the signature alone suffices
    write_file(root / "wrong/CACHEDIR.TAG", "Signature: 00000000000000000000000000000000");
    write_file(root / "short/CACHEDIR.TAG", sig.substr(0, 20));
    write_file(root / "case/cachedir.tag", sig);
    fs::create_directories(root / "linked");
    fs::create_symlink("../cache/CACHEDIR.TAG", root / "linked/CACHEDIR.TAG");  // a link is not a tag
    write_file(root / "linked/kept.bin", "x");
    WalkOptions o;
    o.exclude.caches = true;
    Recorder r;
    walk(std::vector<std::string>{root.string()}, o, r);
    using E = std::pair<bool, WalkExclusion>;
    EXPECT_EQ(r.excluded_, (std::map<std::string, E>{{(root / "cache").string(), {true, WalkExclusion::cache_dir}},
                                                    {(root / "exact").string(), {true, WalkExclusion::cache_dir}}}));
    const std::vector<std::string> files = {(root / "case/cachedir.tag").string(),
                                            (root / "linked/kept.bin").string(),
                                            (root / "short/CACHEDIR.TAG").string(),
                                            (root / "wrong/CACHEDIR.TAG").string()};
    EXPECT_EQ(r.files, files);
    EXPECT_EQ(r.skips.count((root / "linked/CACHEDIR.TAG").string()), 1u);  // the link, not followed
    // Without the option every file is walked; a tagged root is excluded too.
    Recorder all;
    walk(std::vector<std::string>{root.string()}, {}, all);
    EXPECT_EQ(all.files.size(), 8u);
    EXPECT_TRUE(all.excluded_.empty());
    Recorder tagged_root;
    walk(std::vector<std::string>{(root / "cache").string()}, o, tagged_root);
    EXPECT_TRUE(tagged_root.files.empty());
    EXPECT_EQ(tagged_root.excluded_.count((root / "cache").string()), 1u);
}

TEST(Walk, DirectoriesHoldingAMarkerAreExcluded) {
    TempDir tmp;
    const fs::path root = tmp.path() / "root";
    write_file(root / "x/.nobackup", "");
    write_file(root / "x/data", "x");
    fs::create_directories(root / "y");
    fs::create_symlink("nowhere", root / "y/.nobackup");  // any type of entry, a dangling link too
    write_file(root / "y/data", "x");
    fs::create_directories(root / "z/.nobackup");  // a directory as the marker
    write_file(root / "kept/data", "x");
    write_file(root / "kept/sub/.ignore-me", "x");
    WalkOptions o;
    o.exclude.if_present = {".nobackup", ".ignore-me"};
    Recorder r;
    walk(std::vector<std::string>{root.string()}, o, r);
    EXPECT_EQ(r.files, (std::vector<std::string>{(root / "kept/data").string()}));
    for (const char* dir : {"x", "y", "z", "kept/sub"})
        EXPECT_EQ(r.excluded_.at((root / dir).string()), (std::pair{true, WalkExclusion::marker})) << dir;
    for (const char* bad : {"", ".", "..", "a/b"}) {
        WalkOptions b;
        b.exclude.if_present = {"fine", bad};
        Recorder nothing;
        try {
            walk(std::vector<std::string>{root.string()}, b, nothing);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const OptionError& e) {
            EXPECT_EQ(e.field(), "exclude_if_present");
        }
        EXPECT_TRUE(nothing.files.empty());
    }
}

TEST(Walk, WalkInputsCountsExclusionsApartFromSkips) {
    Tree t;
    WalkOptions o;
    o.exclude.patterns.add("b");
    o.exclude.patterns.add("fifo");
    const WalkResult w = walk_inputs({t.root}, o);
    EXPECT_EQ(w.files.size(), 2u);  // a.txt, z.txt
    EXPECT_EQ(w.excluded, 2u);      // b (a directory counts once), fifo
    EXPECT_TRUE(w.warnings.empty());
    EXPECT_TRUE(w.errors.empty());
}

// A mount below the root (tmpfs; CI runs the tests as root): not entered
// with one_file_system, whether reached directly or through a followed link
// (the /proc case above), and a root on another file system is walked.
TEST(Walk, OneFileSystemDoesNotEnterAMountBelowARoot) {
    CDC_REQUIRE_ROOT();
    TempDir tmp;
    const fs::path root = tmp.path() / "root";
    write_file(root / "top.bin", "x");
    const TmpfsMount mount(root / "mnt");
    write_file(root / "mnt/inside.bin", "x");
    WalkOptions o;
    o.one_file_system = true;
    Recorder r;
    walk(std::vector<std::string>{root.string()}, o, r);
    EXPECT_EQ(r.files, (std::vector<std::string>{(root / "top.bin").string()}));
    EXPECT_EQ(r.skips.at((root / "mnt").string()), WalkSkip::other_fs);
    Recorder everything;
    walk(std::vector<std::string>{root.string()}, {}, everything);
    EXPECT_EQ(everything.files.size(), 2u);
    Recorder mount_root;
    walk(std::vector<std::string>{(root / "mnt").string()}, o, mount_root);
    EXPECT_EQ(mount_root.files, (std::vector<std::string>{(root / "mnt/inside.bin").string()}));
}

}  // namespace
}  // namespace cdc::test
