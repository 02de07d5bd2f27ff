// SPDX-License-Identifier: Apache-2.0
// cdc dupes, the engine: groups on crafted trees, hard links, empty files,
// unreadable / vanished / changed files, symlinks, big and sparse files,
// identical groups in every mode, and the actions (verified on copies).
#include "dupes_support.hpp"

#include "dupes/internal.hpp"  // the path arena (src/dupes)

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> roots_of(const fs::path& p) { return {p.string()}; }

DupesResult run_mode(const fs::path& root, DupesMode mode, std::size_t max_open = 0,
                     std::vector<std::string>* warnings = nullptr, DigestKind hash = DigestKind::blake3) {
    DupesOptions o;
    o.mode = mode;
    o.max_open_files = max_open;
    o.hash = hash;
    if (warnings) o.warning = [warnings](const std::string& w) { warnings->push_back(w); };
    return find_dupes(roots_of(root), o);
}

constexpr DupesMode kModes[] = {DupesMode::compare, DupesMode::hash, DupesMode::automatic};

// ---- the path arena -----------------------------------------------------------

using dupes_detail::StringArena;

TEST(DupesArena, ViewsStayValidAcrossChunksAndMoves) {
    StringArena arena;
    std::vector<std::string> want;
    std::vector<std::string_view> got;
    std::size_t used = 0;
    for (std::size_t i = 0; i < 5000; ++i) {  // ~750 KB: a dozen chunk boundaries
        want.push_back(std::string(i % 300, static_cast<char>('a' + i % 26)).append(std::to_string(i)));
        got.push_back(arena.store(want.back()));
        used += want.back().size() + 1;
    }
    // A full chunk loses at most the tail too short for the next string; the
    // last one is partly free.
    const std::size_t chunks = arena.capacity() / StringArena::kChunkSize;
    EXPECT_EQ(arena.capacity() % StringArena::kChunkSize, 0u);
    EXPECT_GT(chunks, 10u);
    EXPECT_LE(arena.capacity(), used + (chunks - 1) * 310 + StringArena::kChunkSize);
    EXPECT_GT(arena.capacity(), used);
    const StringArena moved = std::move(arena);
    for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << i;
        ASSERT_EQ(got[i].data()[got[i].size()], '\0') << i;  // a C string too
    }
    EXPECT_EQ(moved.capacity(), chunks * StringArena::kChunkSize);
}

TEST(DupesArena, StringsLongerThanAChunkGetABlockOfTheirOwn) {
    StringArena arena;
    const std::string_view a = arena.store("first");
    const std::string fits(StringArena::kChunkSize - 1, 'f');  // with its NUL: exactly one chunk
    const std::string huge(3 * StringArena::kChunkSize + 5, 'h');
    const std::string_view h = arena.store(huge);
    EXPECT_EQ(arena.capacity(), StringArena::kChunkSize + huge.size() + 1);
    // The current chunk goes on after the big string.
    const std::string_view b = arena.store("second");
    EXPECT_EQ(b.data(), a.data() + a.size() + 1);
    const std::string_view f = arena.store(fits);
    const std::string_view e = arena.store("");
    EXPECT_EQ(arena.capacity(), 3 * StringArena::kChunkSize + huge.size() + 1);
    EXPECT_EQ(h, huge);
    EXPECT_EQ(h.data()[h.size()], '\0');
    EXPECT_EQ(f, fits);
    EXPECT_EQ(f.data()[f.size()], '\0');
    EXPECT_EQ(a, "first");
    EXPECT_EQ(b, "second");
    EXPECT_TRUE(e.empty());
    EXPECT_EQ(e.data()[0], '\0');
}

TEST(DupesGroups, DifferAtFirstMiddleLastByte) {
    TempDir tmp;
    // Larger than the largest block (1 MiB) so the middle takes several steps.
    const std::size_t n = (std::size_t{5} << 19) + 17;
    const auto base = random_bytes(n, 1);
    auto first = base, middle = base, last = base;
    first[0] ^= 1;
    middle[n / 2] ^= 1;
    last[n - 1] ^= 1;
    write_file(tmp.path() / "a/base", base);
    write_file(tmp.path() / "b/copy1", base);
    write_file(tmp.path() / "c/copy2", base);
    write_file(tmp.path() / "first", first);
    write_file(tmp.path() / "first_again", first);
    write_file(tmp.path() / "middle", middle);
    write_file(tmp.path() / "last", last);
    const auto r = tmp.path().string();
    const Groups want = {{r + "/a/base", r + "/b/copy1", r + "/c/copy2"}, {r + "/first", r + "/first_again"}};
    std::uint64_t read_compare = 0, read_hash = 0;
    for (const DupesMode m : kModes) {
        for (const std::size_t max_open : {std::size_t{0}, std::size_t{2}}) {
            const auto res = run_mode(tmp.path(), m, max_open);
            EXPECT_EQ(groups_of(res), want) << to_string(m) << " max_open " << max_open;
            EXPECT_EQ(res.summary.groups, 2u);
            EXPECT_EQ(res.summary.duplicate_files, 3u);
            EXPECT_EQ(res.summary.wasted_bytes, 3 * n);
            EXPECT_EQ(res.summary.skipped, 0u);
            if (max_open == 0 && m == DupesMode::compare) read_compare = res.summary.bytes_read;
            if (max_open == 0 && m == DupesMode::hash) read_hash = res.summary.bytes_read;
        }
    }
    // Comparison stops at the first difference: "middle" is read half way.
    EXPECT_LT(read_compare, read_hash);
    EXPECT_LE(read_compare, 5 * n + n / 2 + (std::size_t{1} << 20) + 2 * n / 100);
    // Groups come sorted by wasted bytes.
    const auto res = run_mode(tmp.path(), DupesMode::compare);
    EXPECT_EQ(res.group(0).files.size(), 3u);
    EXPECT_EQ(res.group(0).size, n);
}

TEST(DupesGroups, SmallFilesAroundTheEdgeBlocks) {
    // Sizes around the 4 KiB head and tail blocks (overlap rules).
    TempDir tmp;
    Groups want;
    const auto r = tmp.path().string();
    std::uint64_t seed = 10;
    for (const std::size_t n : {1u, 7u, 4095u, 4096u, 4097u, 8191u, 8192u, 8193u, 12289u}) {
        const auto d = random_bytes(n, ++seed);
        auto diff = d;
        diff[n - 1] ^= 0x80;
        const std::string a = fmt::format("{}/s{}_a", r, n), b = fmt::format("{}/s{}_b", r, n);
        write_file(a, d);
        write_file(b, d);
        write_file(fmt::format("{}/s{}_c", r, n), diff);
        want.push_back({a, b});
    }
    std::sort(want.begin(), want.end());
    for (const DupesMode m : kModes) EXPECT_EQ(groups_of(run_mode(tmp.path(), m)), want) << to_string(m);
}

TEST(DupesGroups, HardLinksAreLinkedNeverWaste) {
    TempDir tmp;
    const auto d = random_bytes(10000, 2);
    const auto r = tmp.path().string();
    write_file(tmp.path() / "x", d);
    ASSERT_EQ(::link((r + "/x").c_str(), (r + "/x_link").c_str()), 0);
    write_file(tmp.path() / "y_copy", d);
    // Linked only, no copy: no group, no waste.
    write_file(tmp.path() / "solo", random_bytes(5000, 3));
    ASSERT_EQ(::link((r + "/solo").c_str(), (r + "/solo_link").c_str()), 0);
    for (const DupesMode m : kModes) {
        auto res = run_mode(tmp.path(), m);
        EXPECT_EQ(groups_of(res), (Groups{{r + "/x", r + "/y_copy"}})) << to_string(m);
        ASSERT_EQ(res.linked_count(), 2u);
        EXPECT_EQ(paths_of(res.linked(0)), (std::vector<std::string>{r + "/solo", r + "/solo_link"}));
        EXPECT_EQ(paths_of(res.linked(1)), (std::vector<std::string>{r + "/x", r + "/x_link"}));
        EXPECT_EQ(res.summary.wasted_bytes, 10000u);
        EXPECT_EQ(res.summary.linked_paths, 2u);
        EXPECT_EQ(paths_of(res.group(0).files[0]), (std::vector<std::string>{r + "/x", r + "/x_link"}));
        // The result holds its paths: moved, it still shows them all.
        const DupesResult moved = std::move(res);
        EXPECT_EQ(groups_of(moved), (Groups{{r + "/x", r + "/y_copy"}}));
        EXPECT_EQ(paths_of(moved.linked(1)), (std::vector<std::string>{r + "/x", r + "/x_link"}));
    }
}

TEST(DupesGroups, EmptyFilesOnlyWithMinSizeZero) {
    TempDir tmp;
    const auto r = tmp.path().string();
    write_file(tmp.path() / "e1", {});
    write_file(tmp.path() / "e2", {});
    write_file(tmp.path() / "small1", random_bytes(10, 4));
    write_file(tmp.path() / "small2", random_bytes(10, 4));
    DupesOptions o;
    auto res = find_dupes(roots_of(tmp.path()), o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/small1", r + "/small2"}}));
    o.min_size = 0;
    res = find_dupes(roots_of(tmp.path()), o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/e1", r + "/e2"}, {r + "/small1", r + "/small2"}}));
    EXPECT_EQ(res.summary.wasted_bytes, 10u);
    o.min_size = 11;
    EXPECT_TRUE((find_dupes(roots_of(tmp.path()), o).group_count() == 0));
}

TEST(DupesGroups, SymlinksSkippedUnlessFollowed) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(3000, 5);
    write_file(tmp.path() / "in/a", d);
    write_file(tmp.path() / "out/b", d);
    fs::create_symlink(r + "/in/a", tmp.path() / "in/link_to_a");
    fs::create_symlink(r + "/nowhere", tmp.path() / "in/dangling");
    fs::create_symlink(r + "/in", tmp.path() / "in/loop");  // a directory loop
    fs::create_symlink(r + "/out", tmp.path() / "in/outdir");
    DupesOptions o;
    auto res = find_dupes(std::vector<std::string>{r + "/in"}, o);
    EXPECT_TRUE((res.group_count() == 0));
    EXPECT_TRUE((res.linked_count() == 0));
    EXPECT_EQ(res.summary.files_scanned, 1u);
    o.follow_symlinks = true;
    res = find_dupes(std::vector<std::string>{r + "/in"}, o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/in/a", r + "/in/outdir/b"}}));
    ASSERT_EQ(res.linked_count(), 1u);  // a and the link to it: one inode
    EXPECT_EQ(paths_of(res.linked(0)), (std::vector<std::string>{r + "/in/a", r + "/in/link_to_a"}));
    EXPECT_EQ(res.summary.skipped, 0u);
    // Actions never act through symlinks.
    EXPECT_THROW(apply_dupes_action(res, DupesAction::hardlink, KeepRule{}, false, o), OptionError);
}

// The finder walks with cdc::walk and adds its own rules: small files and its
// own temporaries are not candidates, what cannot be read is a warning and
// counted as skipped, special files and dangling links (when following) are
// silently not files; a root it cannot use is a usage error.
TEST(DupesWalk, TheFindersRulesOnTopOfTheWalker) {
    TempDir tmp;
    const fs::path root = tmp.path() / "t";
    const auto d = random_bytes(3000, 11);
    write_file(root / "a", d);
    write_file(root / "sub/b", d);
    write_file(root / "tiny", std::vector<std::uint8_t>(d.begin(), d.begin() + 10));
    write_file(root / "sub/.cdc-dupes-tmp.1.0", d);
    ASSERT_EQ(::mkfifo((root / "fifo").c_str(), 0600), 0);
    fs::create_symlink(root / "nowhere", root / "dangling");
    write_beyond_path_max(root, "deep", d);
    for (const bool follow : {false, true}) {
        DupesOptions o;
        o.min_size = 100;
        o.follow_symlinks = follow;
        std::vector<std::string> warnings;
        o.warning = [&](const std::string& w) { warnings.push_back(w); };
        const auto res = find_dupes(std::vector<std::string>{root.string() + "/"}, o);
        EXPECT_EQ(groups_of(res), (Groups{{(root / "a").string(), (root / "sub/b").string()}})) << follow;
        EXPECT_EQ(res.summary.files_scanned, 3u) << "a, sub/b, tiny (not the temporary)";
        EXPECT_EQ(res.summary.skipped, 1u) << "the directory too deep to open";
        ASSERT_EQ(warnings.size(), 1u) << follow;
        EXPECT_NE(warnings[0].find("File name too long"), std::string::npos) << warnings[0];
        ASSERT_EQ(res.stale_temporaries().size(), 1u);
        EXPECT_EQ(res.stale_temporaries()[0], (root / "sub/.cdc-dupes-tmp.1.0").string());
    }
    DupesOptions o;
    EXPECT_THROW(find_dupes(std::vector<std::string>{(root / "missing").string()}, o), OptionError);
    EXPECT_THROW(find_dupes(std::vector<std::string>{(root / "fifo").string()}, o), OptionError);
    EXPECT_THROW(find_dupes(std::vector<std::string>{"-"}, o), OptionError);
}

// --one-file-system: a directory on another file system (here the tmpfs at
// /dev/shm, reached through a followed symlink) is not descended into.
TEST(DupesGroups, OneFileSystemStopsAtOtherFileSystems) {
    TempDir tmp;
    const auto r = tmp.path().string();
    std::string other = "/dev/shm/cdc-dupes-test-XXXXXX";
    ASSERT_NE(::mkdtemp(other.data()), nullptr) << "this test needs a writable /dev/shm (tmpfs)";
    struct Cleanup {
        std::string dir;
        ~Cleanup() { std::error_code ec; fs::remove_all(dir, ec); }
    } cleanup{other};
    struct stat here {}, there {};
    ASSERT_EQ(::stat(r.c_str(), &here), 0);
    ASSERT_EQ(::stat(other.c_str(), &there), 0);
    ASSERT_NE(here.st_dev, there.st_dev) << r << " and " << other << " must be on different file systems";
    const auto d = random_bytes(5000, 11);
    const auto e = random_bytes(7000, 12);
    write_file(tmp.path() / "a/x", d);
    write_file(tmp.path() / "a/y", d);
    write_file(fs::path(other) / "sub/z", d);
    write_file(fs::path(other) / "sub/w", e);
    write_file(fs::path(other) / "v", e);
    fs::create_symlink(other, tmp.path() / "a/shm");
    DupesOptions o;
    o.follow_symlinks = true;
    auto res = find_dupes(std::vector<std::string>{r}, o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/a/shm/sub/w", r + "/a/shm/v"}, {r + "/a/shm/sub/z", r + "/a/x", r + "/a/y"}}));
    EXPECT_EQ(res.summary.files_scanned, 5u);
    o.one_file_system = true;
    res = find_dupes(std::vector<std::string>{r}, o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/a/x", r + "/a/y"}}));
    EXPECT_EQ(res.summary.files_scanned, 2u);
    EXPECT_EQ(res.summary.skipped, 0u);
    // The walk's exclusions too: a file left out is no duplicate.
    o.exclude.patterns.add("/a/y");
    res = find_dupes(std::vector<std::string>{r}, o);
    EXPECT_TRUE(groups_of(res).empty());
    EXPECT_EQ(res.summary.files_scanned, 1u);
    EXPECT_EQ(res.summary.skipped, 0u);
}

TEST(DupesGroups, VanishedAndChangedFilesAreLeftOut) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(20000, 6);
    for (const char* name : {"a", "b", "c", "gone", "changed"}) write_file(tmp.path() / name, d);
    for (const DupesMode m : kModes) {
        DupesOptions o;
        o.mode = m;
        std::vector<std::string> warnings;
        o.warning = [&](const std::string& w) { warnings.push_back(w); };
        DupesScan scan = scan_dupes(roots_of(tmp.path()), o);
        ASSERT_EQ(scan.file_count(), 5u);
        // Between the walk and the reads: one file vanishes (an unreadable
        // file, even for root), one changes (same size, new mtime).
        fs::rename(tmp.path() / "gone", tmp.path() / "gone.away");
        auto changed = d;
        changed[100] ^= 1;
        write_file(tmp.path() / "changed", changed);
        set_mtime(tmp.path() / "changed", 1000000000);
        const auto res = resolve_dupes(std::move(scan), o);
        EXPECT_EQ(groups_of(res), (Groups{{r + "/a", r + "/b", r + "/c"}})) << to_string(m);
        EXPECT_EQ(res.summary.skipped, 2u);
        ASSERT_EQ(warnings.size(), 2u);
        EXPECT_NE(warnings[0].find("left out"), std::string::npos) << warnings[0];
        fs::rename(tmp.path() / "gone.away", tmp.path() / "gone");
        write_file(tmp.path() / "changed", d);
    }
}

TEST(DupesGroups, ChangeAfterReadingIsCaughtAtTheEnd) {
    // A file whose mtime changes after its bytes were read is still left out:
    // every grouped file is checked once more when its group is complete.
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(10000, 7);
    for (const char* name : {"a", "b", "c"}) write_file(tmp.path() / name, d);
    DupesOptions o;
    o.mode = DupesMode::compare;
    bool touched = false;
    o.progress = [&](const DupesProgress&) {};
    o.warning = [](const std::string&) {};
    DupesScan scan = scan_dupes(roots_of(tmp.path()), o);
    set_mtime(tmp.path() / "c", 12345);  // before resolve: caught on open
    touched = true;
    const auto res = resolve_dupes(std::move(scan), o);
    EXPECT_TRUE(touched);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/a", r + "/b"}}));
    EXPECT_EQ(res.summary.skipped, 1u);
}

TEST(DupesGroups, SparseFilesLargerThan4GiB) {
    TempDir tmp;
    const std::uint64_t n = (std::uint64_t{4} << 30) + 12345;  // offsets past 2^32
    auto sparse = [&](const char* name, std::uint64_t at, std::uint8_t v) {
        const auto p = (tmp.path() / name).string();
        const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(n)), 0);
        ASSERT_EQ(::pwrite(fd, &v, 1, static_cast<off_t>(at)), 1);
        ::close(fd);
        set_mtime(p, 1000);
    };
    sparse("a", n - 1, 7);       // same as b
    sparse("b", n - 1, 7);
    sparse("c", n - 1, 8);       // differs at the last byte
    sparse("d", 5000, 7);        // differs right after the head block
    const auto r = tmp.path().string();
    const Groups want = {{r + "/a", r + "/b"}};
    // compare and auto skip the holes (SEEK_DATA) instead of reading 8 GiB.
    for (const DupesMode m : {DupesMode::compare, DupesMode::automatic}) {
        const auto res = run_mode(tmp.path(), m);
        EXPECT_EQ(groups_of(res), want);
        ASSERT_EQ(res.group_count(), 1u);
        EXPECT_EQ(res.group(0).size, n);
        EXPECT_EQ(res.summary.wasted_bytes, n);
        EXPECT_LT(res.summary.bytes_read, std::uint64_t{1} << 24);
    }
    // hash reads every byte of a full match: only the cheap cases here (the
    // partial hash of head and tail tells them apart past 4 GiB).
    DupesOptions o;
    o.mode = DupesMode::hash;
    const auto res = find_dupes(std::vector<std::string>{r + "/a", r + "/c", r + "/d"}, o);
    EXPECT_TRUE((res.group_count() == 0));
    EXPECT_EQ(res.summary.bytes_read, 3 * 8192u);
}

TEST(DupesModes, IdenticalGroupsOnARandomTree) {
    TempDir tmp;
    const auto contents = make_random_tree(tmp.path(), 300, 60, 99);
    const Groups want = reference_groups(contents);
    ASSERT_GT(want.size(), 10u);
    for (const DupesMode m : kModes)
        for (const std::size_t max_open : {std::size_t{0}, std::size_t{3}})
            for (const DigestKind h : {DigestKind::blake3, DigestKind::xxh3})
                EXPECT_EQ(groups_of(run_mode(tmp.path(), m, max_open, nullptr, h)), want)
                    << to_string(m) << " max_open " << max_open << " " << cdc::to_string(h);
}

TEST(DupesModes, GroupsLargerThanTheOpenFileBound) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(200000, 8);
    Groups want(1);
    for (int i = 0; i < 60; ++i) {
        const auto p = fmt::format("{}/same{:02}", r, i);
        write_file(p, d);
        want[0].push_back(p);
    }
    for (int i = 0; i < 10; ++i) {
        auto x = d;
        x[150000 + static_cast<std::size_t>(i)] ^= 1;
        write_file(fmt::format("{}/other{:02}", r, i), x);
    }
    for (const DupesMode m : kModes) {
        const auto res = run_mode(tmp.path(), m, 4);
        EXPECT_EQ(groups_of(res), want) << to_string(m);
        EXPECT_EQ(res.summary.skipped, 0u);
    }
}

TEST(DupesGroups, OverlappingRootsAndFileRoots) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(1000, 9);
    write_file(tmp.path() / "a/x", d);
    write_file(tmp.path() / "a/b/y", d);
    DupesOptions o;
    const auto res = find_dupes(std::vector<std::string>{r + "/a", r + "/a/b", r + "/a/b/y", r + "/a/"}, o);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/a/b/y", r + "/a/x"}}));
    EXPECT_TRUE((res.linked_count() == 0));
    EXPECT_THROW(find_dupes(std::vector<std::string>{r + "/missing"}, o), OptionError);
}

// ---- actions ----------------------------------------------------------------

TEST(DupesActions, HardlinkKeepsOldestAndVerifies) {
    TempDir tmp;
    const auto contents = make_random_tree(tmp.path(), 120, 30, 5);
    const auto res = run_mode(tmp.path(), DupesMode::automatic);
    ASSERT_FALSE((res.group_count() == 0));
    const auto steps = apply_dupes_action(res, DupesAction::hardlink, parse_keep_rule("oldest"), false, {});
    for (const auto& s : steps) EXPECT_EQ(s.status, DupesStep::Status::done) << s.path << ": " << s.reason;
    expect_contents(contents);
    for (const DupesGroup& g : all_groups(res)) {
        const DupesFile kept = g.files[choose_kept(g.files, parse_keep_rule("oldest"))];
        for (const DupesFile& f : g.files)
            for (const std::string_view p : f.paths) EXPECT_EQ(fs::hard_link_count(p), g.files.size()) << p;
        EXPECT_EQ(inode_of(kept.first_path()), inode_of(g.files[0].first_path()));
        // The oldest file is the one kept: its mtime survives.
        for (const DupesFile& f : g.files) EXPECT_LE(kept.mtime_ns, f.mtime_ns);
    }
    EXPECT_TRUE(temporaries_in(tmp.path()).empty());
    // A second run finds only linked paths, no waste.
    const auto again = run_mode(tmp.path(), DupesMode::automatic);
    EXPECT_TRUE((again.group_count() == 0));
    EXPECT_EQ(again.summary.wasted_bytes, 0u);
}

TEST(DupesActions, DeleteWithEveryKeepRule) {
    for (const std::string rule : {"oldest", "first", "*/d1/*"}) {
        TempDir tmp;
        const auto contents = make_random_tree(tmp.path(), 80, 20, 6);
        const auto res = run_mode(tmp.path(), DupesMode::compare);
        const KeepRule keep = parse_keep_rule(rule);
        const auto steps = apply_dupes_action(res, DupesAction::remove, keep, false, {});
        for (const DupesGroup& g : all_groups(res)) {
            const std::size_t k = choose_kept(g.files, keep);
            for (std::size_t i = 0; i < g.files.size(); ++i)
                for (const std::string_view p : g.files[i].paths) {
                    if (k == g.files.size())
                        EXPECT_TRUE(fs::exists(p)) << rule << ": no match, nothing deleted: " << p;
                    else
                        EXPECT_EQ(fs::exists(p), i == k) << rule << " " << p;
                }
            if (rule == "first" && k < g.files.size()) {
                EXPECT_EQ(k, 0u);
            }
            if (rule != "oldest" && rule != "first" && k < g.files.size()) {
                EXPECT_NE(g.files[k].first_path().find("/d1/"), std::string::npos);
            }
        }
        // Whatever is left has its original bytes, and every content survives.
        expect_contents(contents, /*allow_missing=*/true);
        EXPECT_FALSE(steps.empty());
    }
}

TEST(DupesActions, DryRunChangesNothing) {
    TempDir tmp;
    const auto contents = make_random_tree(tmp.path(), 60, 15, 7);
    const auto before = snapshot(tmp.path());
    const auto res = run_mode(tmp.path(), DupesMode::automatic);
    for (const auto a : {DupesAction::hardlink, DupesAction::remove}) {
        const auto steps = apply_dupes_action(res, a, KeepRule{}, true, {});
        EXPECT_EQ(steps.size(), res.summary.duplicate_files);
        for (const auto& s : steps) EXPECT_EQ(s.status, DupesStep::Status::planned);
    }
    // A reflink plan probes the file system: planned where it can reflink,
    // else the error of a real run.
    try {
        const auto steps = apply_dupes_action(res, DupesAction::reflink, KeepRule{}, true, {});
        for (const auto& s : steps) EXPECT_EQ(s.status, DupesStep::Status::planned);
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("reflink is not supported"), std::string::npos) << e.what();
    }
    EXPECT_EQ(snapshot(tmp.path()), before);
}

TEST(DupesActions, ChangedBeforeActingIsNotTouched) {
    // Bytes are compared again right before acting: a duplicate rewritten
    // with other bytes of the same size (even with its mtime put back) is
    // left alone.
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(50000, 11);
    write_file(tmp.path() / "keep", d);
    set_mtime(tmp.path() / "keep", 1000);
    write_file(tmp.path() / "dup", d);
    set_mtime(tmp.path() / "dup", 2000);
    write_file(tmp.path() / "dup2", d);
    set_mtime(tmp.path() / "dup2", 2000);
    const auto res = run_mode(tmp.path(), DupesMode::compare);
    ASSERT_EQ(res.group_count(), 1u);
    auto other = d;
    other[40000] ^= 1;
    {
        const int fd = ::open((r + "/dup").c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::pwrite(fd, other.data(), other.size(), 0), static_cast<ssize_t>(other.size()));
        ::close(fd);
    }
    set_mtime(tmp.path() / "dup", 2000);
    for (const auto a : {DupesAction::hardlink, DupesAction::remove}) {
        const auto steps = apply_dupes_action(res, a, parse_keep_rule("oldest"), false, {});
        ASSERT_EQ(steps.size(), 2u);
        EXPECT_EQ(steps[0].path, r + "/dup");
        EXPECT_EQ(steps[0].status, DupesStep::Status::skipped);
        EXPECT_NE(steps[0].reason.find("differ"), std::string::npos) << steps[0].reason;
        EXPECT_EQ(read_file(r + "/dup"), other);
        EXPECT_EQ(read_file(r + "/keep"), d);
        if (a == DupesAction::hardlink) {
            EXPECT_EQ(steps[1].status, DupesStep::Status::done);
        }
    }
}

TEST(DupesActions, ReflinkWorksOrFailsClearly) {
    TempDir tmp;
    const auto contents = make_random_tree(tmp.path(), 40, 10, 12);
    const auto before = snapshot(tmp.path());
    const auto res = run_mode(tmp.path(), DupesMode::automatic);
    ASSERT_FALSE((res.group_count() == 0));
    try {
        const auto steps = apply_dupes_action(res, DupesAction::reflink, KeepRule{}, false, {});
        // A file system with FIDEDUPERANGE (Btrfs, XFS): same names, same
        // inodes, same bytes; extents now shared.
        for (const auto& s : steps) EXPECT_EQ(s.status, DupesStep::Status::done) << s.reason;
        expect_contents(contents);
    } catch (const IoError& e) {
        // ext4, tmpfs...: a clear error, nothing changed.
        EXPECT_NE(std::string(e.what()).find("reflink is not supported"), std::string::npos) << e.what();
        EXPECT_EQ(snapshot(tmp.path()), before);
    }
}

TEST(DupesActions, StaleTemporariesAreIgnoredThenCleaned) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(7000, 13);
    write_file(tmp.path() / "a", d);
    write_file(tmp.path() / "b", d);
    // What a kill -9 between link() and rename() leaves: an extra link.
    const std::string stale = r + "/.cdc-dupes-tmp.999999999.0";
    ASSERT_EQ(::link((r + "/a").c_str(), stale.c_str()), 0);
    const auto res = run_mode(tmp.path(), DupesMode::automatic);
    EXPECT_EQ(groups_of(res), (Groups{{r + "/a", r + "/b"}}));
    EXPECT_TRUE((res.linked_count() == 0));
    ASSERT_EQ(res.stale_temporaries().size(), 1u);
    EXPECT_EQ(res.stale_temporaries()[0], stale);
    apply_dupes_action(res, DupesAction::hardlink, KeepRule{}, true, {});
    EXPECT_TRUE(fs::exists(stale)) << "a dry run changes nothing";
    apply_dupes_action(res, DupesAction::hardlink, KeepRule{}, false, {});
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_EQ(read_file(r + "/a"), d);
    EXPECT_EQ(inode_of(r + "/a"), inode_of(r + "/b"));
}

TEST(DupesActions, NothingOutsideTheGivenPathsIsTouched) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto d = random_bytes(30000, 14);
    write_file(tmp.path() / "outside/o1", d);
    write_file(tmp.path() / "outside/o2", d);
    const auto outside_before = snapshot(tmp.path() / "outside");
    for (const auto a : {DupesAction::hardlink, DupesAction::remove}) {
        fs::remove_all(tmp.path() / "inside");
        write_file(tmp.path() / "inside/i1", d);
        write_file(tmp.path() / "inside/sub/i2", d);
        write_file(tmp.path() / "inside/sub/i3", d);
        fs::create_symlink(r + "/outside/o1", tmp.path() / "inside/link_o1");
        fs::create_symlink(r + "/outside", tmp.path() / "inside/link_outside");
        const auto res = run_mode(tmp.path() / "inside", DupesMode::automatic);
        ASSERT_EQ(res.group_count(), 1u);
        EXPECT_EQ(res.group(0).files.size(), 3u);
        const auto steps = apply_dupes_action(res, a, KeepRule{}, false, {});
        EXPECT_EQ(steps.size(), 2u);
        EXPECT_EQ(snapshot(tmp.path() / "outside"), outside_before);
        EXPECT_TRUE(fs::is_symlink(tmp.path() / "inside/link_o1"));
        EXPECT_TRUE(fs::is_symlink(tmp.path() / "inside/link_outside"));
        EXPECT_TRUE(temporaries_in(tmp.path()).empty());
    }
}

}  // namespace
}  // namespace cdc::test
