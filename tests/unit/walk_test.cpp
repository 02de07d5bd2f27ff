// The one directory walker: order, symbolic links, special files, loops,
// overlaps, file systems and errors, and walk_inputs' view of it (each file
// once, by device and inode).
#include "test_support.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/walk.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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
    void file(const std::string& path, const struct stat& st) override {
        EXPECT_TRUE(S_ISREG(st.st_mode)) << path;
        files.push_back(path);
    }
    void stream(const std::string& path) override { streams.push_back(path); }
    void skipped(const std::string& path, WalkSkip why, std::string_view) override { skips[path] = why; }
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

}  // namespace
}  // namespace cdc::test
