// SPDX-License-Identifier: Apache-2.0
// Helpers of the cdc dupes tests: crafted trees, their expected groups, and
// snapshots that show whether anything changed.
#pragma once

#include <cdc/corpus/datagen.hpp>
#include "test_support.hpp"

#include <cdc/dupes.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
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
    for (const std::string_view p : f.paths) out.emplace_back(p);
    return out;
}

/// Every group of a result, in its order.
inline std::vector<DupesGroup> all_groups(const DupesResult& r) {
    std::vector<DupesGroup> out;
    for (std::size_t i = 0; i < r.group_count(); ++i) out.push_back(r.group(i));
    return out;
}

/// Every linked file of a result, in its order.
inline std::vector<DupesFile> all_linked(const DupesResult& r) {
    std::vector<DupesFile> out;
    for (std::size_t i = 0; i < r.linked_count(); ++i) out.push_back(r.linked(i));
    return out;
}

/// First path of every file of every group; groups sorted.
inline Groups groups_of(const DupesResult& r) {
    Groups g;
    for (const DupesGroup& grp : all_groups(r)) {
        std::vector<std::string> paths;
        for (const DupesFile& f : grp.files) paths.emplace_back(f.first_path());
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

/// The tests that give files to another owner or mount a file system need
/// root (CI runs as root): elsewhere they fail, loudly, never skip.
#define CDC_REQUIRE_ROOT()                                                                                  \
    ASSERT_EQ(::geteuid(), 0u) << "this test needs root (chown to another uid, xattrs in trusted.*, mounts); " \
                                  "run the tests as root, as CI does"

/// Another user: owns the "attacker's" files of the merge tests.
inline constexpr uid_t kOtherUid = 4242;
inline constexpr gid_t kOtherGid = 4242;

inline void set_owner(const std::filesystem::path& p, uid_t uid, gid_t gid) {
    if (::lchown(p.c_str(), uid, gid) != 0) throw std::runtime_error("lchown " + p.string());
}

inline void set_mode(const std::filesystem::path& p, mode_t mode) {
    if (::chmod(p.c_str(), mode) != 0) throw std::runtime_error("chmod " + p.string());
}

inline void set_xattr(const std::filesystem::path& p, const std::string& name, std::string_view value) {
    if (::lsetxattr(p.c_str(), name.c_str(), value.data(), value.size(), 0) != 0)
        throw std::runtime_error(fmt::format("setxattr {} {}: {}", p.string(), name, std::strerror(errno)));
}

/// A POSIX ACL (system.posix_acl_access, the kernel's xattr format) that
/// grants `uid` read, write and execute: user::rwx, user:uid:rwx, group::r-x,
/// mask::rwx, other::r-x (the mode's group bits become the mask: 0775).
inline void grant_acl_rwx(const std::filesystem::path& p, uid_t uid) {
    std::string acl;
    auto le16 = [&](unsigned v) { acl.push_back(static_cast<char>(v & 0xff)), acl.push_back(static_cast<char>(v >> 8)); };
    auto le32 = [&](std::uint32_t v) { le16(v & 0xffff), le16(v >> 16); };
    le32(2);  // POSIX_ACL_XATTR_VERSION
    auto entry = [&](unsigned tag, unsigned perm, std::uint32_t id) { le16(tag), le16(perm), le32(id); };
    constexpr std::uint32_t kUndefined = 0xffffffff;
    entry(0x01, 7, kUndefined);  // ACL_USER_OBJ
    entry(0x02, 7, uid);         // ACL_USER
    entry(0x04, 5, kUndefined);  // ACL_GROUP_OBJ
    entry(0x10, 7, kUndefined);  // ACL_MASK
    entry(0x20, 5, kUndefined);  // ACL_OTHER
    set_xattr(p, "system.posix_acl_access", acl);
}

/// Every extended attribute of a path (no symlink followed), sorted.
inline std::string xattrs_of(const std::filesystem::path& p) {
    std::string names(65536, '\0');
    const ssize_t n = ::llistxattr(p.c_str(), names.data(), names.size());
    if (n < 0) return errno == ENOTSUP ? "" : "?";
    std::vector<std::string> all;
    for (std::size_t at = 0; at < static_cast<std::size_t>(n);) {
        const std::string name(names.c_str() + at);
        at += name.size() + 1;
        std::string value(65536, '\0');
        const ssize_t v = ::lgetxattr(p.c_str(), name.c_str(), value.data(), value.size());
        value.resize(v < 0 ? 0 : static_cast<std::size_t>(v));
        std::string hex;
        for (const char c : value) hex += fmt::format("{:02x}", static_cast<unsigned char>(c));
        all.push_back(name + "=" + hex);
    }
    std::sort(all.begin(), all.end());
    return fmt::format("{}", fmt::join(all, ";"));
}

/// Per path: owner, group, mode, extended attributes and bytes (not the
/// inode: a merge may change that, never these).
inline std::map<std::string, std::string> metadata_snapshot(const std::filesystem::path& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        struct stat st {};
        ::lstat(e.path().c_str(), &st);
        if (!S_ISREG(st.st_mode)) continue;
        const auto b = read_file(e.path());
        out[e.path().string()] =
            fmt::format("uid {} gid {} mode {:o} xattrs [{}] {}", st.st_uid, st.st_gid, st.st_mode & 07777,
                        xattrs_of(e.path()), compute_digest(DigestKind::xxh3, std::as_bytes(std::span(b))).hex());
    }
    return out;
}

/// A tmpfs mounted on `dir` (created) for the life of the object: a second
/// file system inside a test tree. Needs root.
class TmpfsMount {
public:
    explicit TmpfsMount(std::filesystem::path dir) : dir_(std::move(dir)) {
        std::filesystem::create_directories(dir_);
        if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=64m,mode=0755") != 0)
            throw std::runtime_error(fmt::format("mount tmpfs on {}: {}", dir_.string(), std::strerror(errno)));
    }
    ~TmpfsMount() { ::umount2(dir_.c_str(), MNT_DETACH); }
    TmpfsMount(const TmpfsMount&) = delete;
    TmpfsMount& operator=(const TmpfsMount&) = delete;

private:
    std::filesystem::path dir_;
};

}  // namespace cdc::test
