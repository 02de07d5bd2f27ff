// SPDX-License-Identifier: Apache-2.0
// Helpers of the tree layer's tests (tests/unit/tree_test.cpp,
// restore_tree_test.cpp): an in-memory store of tree objects and contents
// (the capture's visitor and the restore's source), a tree holding every
// file type and metadata kind, a comparison of two trees on disk, and a run
// as another user.
#pragma once

#include "store/restore_tree.hpp"
#include "store/tree.hpp"
#include "store/tree_object.hpp"

#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <tuple>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace cdc::test {

namespace tr = cdc::store::tree;
namespace fs = std::filesystem;

/// Tree objects and contents by id; contents cut into pieces of 4 KiB (a
/// file is several chunks).
class MemoryTrees : public tr::CaptureVisitor {
public:
    std::map<tr::BlobId, std::vector<std::uint8_t>> blobs;
    std::vector<tr::CaptureProblem> problems;
    std::function<void(tr::Entry&, std::string_view)> on_file;  // runs before a file is read

    tr::BlobId put(std::string_view bytes) {
        const std::vector<std::uint8_t> b(bytes.begin(), bytes.end());
        const tr::BlobId id = tr::tree_id(b);
        blobs[id] = b;
        return id;
    }
    void file(tr::Entry& e, int fd, std::string_view path) override {
        if (on_file) on_file(e, path);
        std::string all;
        tr::read_data(e, fd, [&](std::string_view s) { all += s; });
        for (std::size_t at = 0; at < all.size(); at += 4096) e.content.chunks.push_back(put(std::string_view(all).substr(at, 4096)));
        const tr::BlobId whole = tr::tree_id(std::vector<std::uint8_t>(all.begin(), all.end()));
        e.content.digest.assign(whole.begin(), whole.end());
    }
    tr::BlobId directory(const std::vector<tr::Entry>& entries, std::string_view) override {
        const std::vector<std::uint8_t> bytes = tr::encode_tree(entries);
        const tr::BlobId id = tr::tree_id(bytes);
        blobs[id] = bytes;
        return id;
    }
    void problem(const tr::CaptureProblem& p) override { problems.push_back(p); }

    std::vector<tr::Entry> tree(const tr::BlobId& id) const {
        const auto it = blobs.find(id);
        if (it == blobs.end()) throw std::runtime_error("no such tree object");
        return tr::parse_tree(it->second);
    }
    std::string content(const tr::Entry& e) const {
        std::string all;
        for (const tr::BlobId& id : e.content.chunks) {
            const auto it = blobs.find(id);
            if (it == blobs.end()) throw std::runtime_error("no such chunk");
            all.append(it->second.begin(), it->second.end());
        }
        return all;
    }
    tr::RestoreSource source() const {
        tr::RestoreSource s;
        s.tree = [this](const tr::BlobId& id) { return tree(id); };
        s.content = [this](const tr::Entry& e, const std::function<void(std::string_view)>& sink) {
            // In pieces of 1000 bytes: the restore maps pieces across extents.
            const std::string all = content(e);
            for (std::size_t at = 0; at < all.size(); at += 1000) sink(std::string_view(all).substr(at, 1000));
        };
        return s;
    }
};

inline std::string problems_text(const std::vector<tr::CaptureProblem>& ps) {
    std::string s;
    for (const auto& p : ps) s += fmt::format("[{}] {} ({})\n", p.path, p.what, p.error);
    return s;
}

inline std::string problems_text(const tr::RestoreReport& r) {
    std::string s;
    for (const auto& p : r.problems) s += fmt::format("[{}] {}: {}\n", p.path, tr::kind_name(p.kind), p.why);
    return s;
}

/// Every difference between the trees `a` and `b` captured in `ta` and `tb`
/// (paths and fields; content bytes compared, ctime, inode and device not).
inline void diff_trees(const MemoryTrees& ta, const tr::Entry& a, const MemoryTrees& tb, const tr::Entry& b,
                       const std::string& path, std::vector<std::string>& out) {
    for (const std::string& f : tr::entry_differences(a, b, false, false))
        if (!(path.empty() && f == "name")) out.push_back(fmt::format("{}: {}", path.empty() ? "." : path, f));
    if ((a.type == tr::EntryType::file || a.type == tr::EntryType::hardlink) && a.type == b.type &&
        ta.content(a) != tb.content(b))
        out.push_back(fmt::format("{}: content bytes", path));
    if (a.type != tr::EntryType::directory || b.type != tr::EntryType::directory) return;
    const auto ca = ta.tree(a.subtree);
    const auto cb = tb.tree(b.subtree);
    std::map<std::string, const tr::Entry*> mb;
    for (const auto& e : cb) mb[e.name] = &e;
    for (const auto& e : ca) {
        const std::string p = path.empty() ? e.name : path + "/" + e.name;
        const auto it = mb.find(e.name);
        if (it == mb.end()) {
            out.push_back(fmt::format("{}: only in the first", p));
            continue;
        }
        diff_trees(ta, e, tb, *it->second, p, out);
        mb.erase(it);
    }
    for (const auto& [n, e] : mb) out.push_back(fmt::format("{}: only in the second", path.empty() ? n : path + "/" + n));
}

/// A POSIX ACL in the kernel's xattr form (version 2; entries of tag, perm,
/// id: the layout of <linux/posix_acl_xattr.h>).
inline std::string acl_xattr(const std::vector<std::tuple<std::uint16_t, std::uint16_t, std::uint32_t>>& entries) {
    std::string s;
    auto put = [&](std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    put(2, 4);
    for (const auto& [tag, perm, id] : entries) {
        put(tag, 2);
        put(perm, 2);
        put(id, 4);
    }
    return s;
}
inline constexpr std::uint16_t kAclUserObj = 0x01, kAclUser = 0x02, kAclGroupObj = 0x04, kAclGroup = 0x08,
                               kAclMask = 0x10, kAclOther = 0x20;
inline constexpr std::uint32_t kAclNoId = 0xffffffffu;

inline void write_bytes(const fs::path& p, std::string_view data) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + p.string());
    if (::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size())) throw std::runtime_error("write");
    ::close(fd);
}

inline std::string read_bytes(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + p.string());
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

inline void set_times(const fs::path& p, std::int64_t atime_ns, std::int64_t mtime_ns) {
    const timespec ts[2] = {{static_cast<time_t>(atime_ns / 1'000'000'000), static_cast<long>(atime_ns % 1'000'000'000)},
                            {static_cast<time_t>(mtime_ns / 1'000'000'000), static_cast<long>(mtime_ns % 1'000'000'000)}};
    if (::utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) throw std::runtime_error("utimensat " + p.string());
}

inline void set_xattr(const fs::path& p, const std::string& name, std::string_view value) {
    if (::lsetxattr(p.c_str(), name.c_str(), value.data(), value.size(), 0) != 0)
        throw std::runtime_error(fmt::format("setxattr {} {}: {}", p.string(), name, std::strerror(errno)));
}

/// Runs `fn` in a child process as uid/gid 65534 (nobody): 0 when `fn`
/// returned true. Only from root.
inline int run_as_nobody(const std::function<bool()>& fn) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
            ::_exit(90);
        bool ok = false;
        try {
            ok = fn();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "as nobody: %s\n", e.what());
            ::_exit(91);
        }
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// A tree with every file type and metadata kind the running user can make
/// (devices, other owners and trusted.* xattrs need root). Returns what was
/// made, by kind, for the tests to look up.
struct FullTree {
    bool root = false;
    bool devices = false;
};

inline FullTree make_full_tree(const fs::path& top) {
    FullTree t;
    t.root = ::geteuid() == 0;
    fs::create_directories(top / "dir/sub/deeper");
    fs::create_directories(top / "empty");
    fs::create_directories(top / "links");
    write_bytes(top / "plain.txt", "hello, tree\n");
    write_bytes(top / "empty.bin", "");
    std::string big(200000, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) >> 3);
    write_bytes(top / "dir/big.bin", big);
    write_bytes(top / "dir/sub/deeper/leaf", "leaf");
    // A name of every byte but NUL and '/', and one of NAME_MAX bytes.
    std::string odd;
    for (int c = 1; c < 256; ++c)
        if (c != '/' && odd.size() < 200) odd.push_back(static_cast<char>(c));
    write_bytes(top / "dir" / odd, "odd name");
    write_bytes(top / "dir" / std::string(255, 'L'), "long name");
    // Sparse: holes at the start, in the middle and at the end.
    {
        const int fd = ::open((top / "sparse.img").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0640);
        const std::string data(8192, 'D');
        if (::pwrite(fd, data.data(), data.size(), 1 << 20) != 8192 || ::pwrite(fd, data.data(), data.size(), 3 << 20) != 8192 ||
            ::ftruncate(fd, 6 << 20) != 0)
            throw std::runtime_error("sparse");
        ::close(fd);
    }
    // Symlinks: relative, absolute, dangling, to a directory, a long target.
    fs::create_symlink("../plain.txt", top / "links/rel");
    fs::create_symlink("/etc/hostname", top / "links/abs");
    fs::create_symlink("nowhere/at/all", top / "links/dangling");
    fs::create_symlink("../dir", top / "links/todir");
    fs::create_symlink(std::string(3000, 'x'), top / "links/long");
    // Hard links: a group of three across directories, one of two.
    write_bytes(top / "dir/hard1", "linked content");
    fs::create_hard_link(top / "dir/hard1", top / "links/hard2");
    fs::create_hard_link(top / "dir/hard1", top / "hard0");
    write_bytes(top / "pair_a", "pair");
    fs::create_hard_link(top / "pair_a", top / "pair_b");
    // A FIFO, a socket.
    if (::mkfifo((top / "fifo").c_str(), 0600) != 0 || ::chmod((top / "fifo").c_str(), 0620) != 0)
        throw std::runtime_error("mkfifo");
    {
        const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        const std::string p = (top / "sock").string();
        if (p.size() >= sizeof a.sun_path) throw std::runtime_error("socket path too long");
        std::memcpy(a.sun_path, p.c_str(), p.size() + 1);
        if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind");
        ::close(s);
    }
    // Devices: root only (the documented non-root behaviour: EPERM).
    const int chr = ::mknod((top / "null").c_str(), S_IFCHR | 0640, makedev(1, 3));
    const int blk = ::mknod((top / "loop").c_str(), S_IFBLK | 0600, makedev(7, 200));
    if (t.root && (chr != 0 || blk != 0)) throw std::runtime_error(std::string("mknod as root: ") + std::strerror(errno));
    if (!t.root) {
        EXPECT_NE(chr, 0) << "a non-root user made a device node";
        EXPECT_NE(blk, 0);
    }
    t.devices = t.root;
    // Modes: setuid, setgid, sticky, odd permission bits.
    ::chmod((top / "plain.txt").c_str(), 04755);
    ::chmod((top / "dir/big.bin").c_str(), 02640);
    ::chmod((top / "empty").c_str(), 01777);
    ::chmod((top / "dir/sub").c_str(), 0750);
    ::chmod((top / "empty.bin").c_str(), 0400);
    // Owners: another user and group where root.
    if (t.root) {
        if (::lchown((top / "dir/big.bin").c_str(), 4242, 4343) != 0 || ::lchown((top / "links/rel").c_str(), 4244, 4245) != 0 ||
            ::lchown((top / "empty").c_str(), 0, 4343) != 0 || ::lchown((top / "fifo").c_str(), 4242, 4242) != 0)
            throw std::runtime_error("chown");
        ::chmod((top / "dir/big.bin").c_str(), 02640);  // chown cleared setgid
    }
    // Xattrs: user.* (with a binary value), trusted.* where root; ACLs.
    set_xattr(top / "plain.txt", "user.note", "a note");
    set_xattr(top / "plain.txt", "user.bin", std::string("\0\x01\xff", 3));
    set_xattr(top / "dir", "user.dir", "on a directory");
    if (t.root) {
        set_xattr(top / "links/rel", "trusted.onlink", "on a symlink");
        set_xattr(top / "fifo", "trusted.onfifo", "on a fifo");
        set_xattr(top / "dir/big.bin", "trusted.root", "root only");
    }
    set_xattr(top / "dir/sub/deeper/leaf", "system.posix_acl_access",
              acl_xattr({{kAclUserObj, 6, kAclNoId}, {kAclUser, 4, 4242}, {kAclGroupObj, 4, kAclNoId},
                         {kAclMask, 4, kAclNoId}, {kAclOther, 0, kAclNoId}}));
    set_xattr(top / "dir/sub", "system.posix_acl_default",
              acl_xattr({{kAclUserObj, 7, kAclNoId}, {kAclGroupObj, 5, kAclNoId}, {kAclGroup, 5, 4343},
                         {kAclMask, 5, kAclNoId}, {kAclOther, 0, kAclNoId}}));
    // Times in ns (atime older than mtime: reading must not move it), the
    // directories last (making their children changed theirs).
    std::int64_t t0 = 1'600'000'000'123'456'789;
    for (const auto& e : fs::recursive_directory_iterator(top)) {
        if (!fs::is_directory(e.symlink_status())) set_times(e.path(), t0, t0 + 1'000'000'007);
        t0 += 3'000'000'011;
    }
    set_times(top / "links/rel", 1'500'000'000'000'000'001, 1'500'000'000'999'999'999);
    std::vector<fs::path> dirs;
    for (const auto& e : fs::recursive_directory_iterator(top))
        if (fs::is_directory(e.symlink_status())) dirs.push_back(e.path());
    std::sort(dirs.rbegin(), dirs.rend());
    for (const fs::path& d : dirs) {
        t0 += 7;
        set_times(d, t0, t0 + 1'000'000'001);
    }
    set_times(top, 1'700'000'000'000'000'003, 1'700'000'000'500'000'005);
    return t;
}

}  // namespace cdc::test
