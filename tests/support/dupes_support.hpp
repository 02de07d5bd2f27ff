// Helpers of the cdc dupes tests: crafted trees, their expected groups, and
// snapshots that show whether anything changed.
#pragma once

#include <cdc/corpus/datagen.hpp>
#include "test_support.hpp"

#include <cdc/dupes.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace cdc::test {

using Groups = std::vector<std::vector<std::string>>;

inline void write_file(const std::filesystem::path& p, const std::vector<std::uint8_t>& data) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline std::vector<std::uint8_t> read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + p.string());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void set_mtime(const std::filesystem::path& p, long seconds) {
    const timespec ts[2] = {{seconds, 0}, {seconds, 0}};
    if (::utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0)
        throw std::runtime_error("utimensat " + p.string());
}

inline std::uint64_t inode_of(const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return 0;
    return static_cast<std::uint64_t>(st.st_ino);
}

/// Every path of a file, sorted.
inline std::vector<std::string> paths_of(const DupesFile& f) {
    std::vector<std::string> out;
    for (const std::string_view p : f.paths()) out.emplace_back(p);
    return out;
}

/// First path of every file of every group; groups sorted.
inline Groups groups_of(const DupesResult& r) {
    Groups g;
    for (const DupesGroup& grp : r.groups()) {
        std::vector<std::string> paths;
        for (const DupesFile& f : grp.files()) paths.emplace_back(f.first_path());
        std::sort(paths.begin(), paths.end());
        g.push_back(std::move(paths));
    }
    std::sort(g.begin(), g.end());
    return g;
}

/// A generated tree: every path and the content it must hold.
struct TreeContents {
    std::map<std::string, std::size_t> path_id;
    std::vector<std::vector<std::uint8_t>> blobs;
};

/// `files` files in d0..d4 drawn from `distinct` contents of few sizes, so
/// that same-size files differ at the start, the end or the middle; mtimes
/// are distinct. No hard links.
/// With `small`, sizes stay at most 9000 bytes.
inline TreeContents make_random_tree(const std::filesystem::path& root, int files, int distinct, std::uint64_t seed,
                                     bool small = false) {
    TreeContents t;
    const std::size_t sizes[] = {1, 100, 4096, 5000, 9000, 70000, 300000};
    SplitMix64 rng(seed);
    for (int i = 0; i < distinct; ++i) {
        const std::size_t n = sizes[rng.next() % (small ? 5 : std::size(sizes))];
        auto b = random_bytes(n, seed * 1000 + static_cast<std::uint64_t>(i));
        if (i > 0 && rng.next() % 2 == 0 && t.blobs.back().size() > 1) {
            b = t.blobs.back();  // a near-twin of the previous content
            b[rng.next() % b.size()] ^= 0x5a;
        }
        // Contents are distinct: a repeat grows by a byte until it is new (one
        // byte was not enough: 1-byte blobs repeat often, and [v] + 7 could
        // already exist, making two "contents" of the same bytes).
        while (std::find(t.blobs.begin(), t.blobs.end(), b) != t.blobs.end()) b.push_back(7);
        t.blobs.push_back(std::move(b));
    }
    for (int i = 0; i < files; ++i) {
        const auto id = static_cast<std::size_t>(rng.next() % static_cast<std::uint64_t>(distinct));
        const auto p = root / fmt::format("d{}", rng.next() % 5) / fmt::format("f{:04}", i);
        write_file(p, t.blobs[id]);
        set_mtime(p, 1000000 + static_cast<long>(rng.next() % 100000) * 10 + i % 10);
        t.path_id[p.string()] = id;
    }
    return t;
}

inline Groups reference_groups(const TreeContents& t) {
    std::map<std::size_t, std::vector<std::string>> by_id;
    for (const auto& [p, id] : t.path_id) by_id[id].push_back(p);
    Groups g;
    for (auto& [id, paths] : by_id)
        if (paths.size() > 1) g.push_back(paths);
    std::sort(g.begin(), g.end());
    return g;
}

/// Every path holds its original bytes; with allow_missing a path may be
/// gone as long as every content still has a path.
inline void expect_contents(const TreeContents& t, bool allow_missing = false) {
    std::set<std::size_t> alive;
    for (const auto& [p, id] : t.path_id) {
        if (!std::filesystem::exists(p)) {
            EXPECT_TRUE(allow_missing) << "lost path " << p;
            continue;
        }
        EXPECT_EQ(read_file(p), t.blobs[id]) << "changed bytes at " << p;
        alive.insert(id);
    }
    std::set<std::size_t> used;
    for (const auto& [p, id] : t.path_id) used.insert(id);
    EXPECT_EQ(alive, used) << "a content lost all its paths";
}

inline std::vector<std::string> temporaries_in(const std::filesystem::path& root) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root))
        if (is_dupes_temporary(e.path().filename().string())) out.push_back(e.path().string());
    return out;
}

/// Path, type, inode, link count, size, mtime and bytes of every entry.
inline std::vector<std::string> snapshot(const std::filesystem::path& root) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        struct stat st {};
        ::lstat(e.path().c_str(), &st);
        std::string line = fmt::format("{} {} {} {} {} {}.{}", e.path().string(), st.st_mode, st.st_ino, st.st_nlink,
                                       st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        if (S_ISREG(st.st_mode)) {
            const auto b = read_file(e.path());
            line.append(" ").append(compute_digest(DigestKind::xxh3, std::as_bytes(std::span(b))).hex());
        }
        out.push_back(std::move(line));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace cdc::test
