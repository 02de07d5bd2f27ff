// SPDX-License-Identifier: Apache-2.0
// The hostile-input-safe restore of a tree (restore_tree.hpp).
//
// Why a directory swapped for a symlink between check and write cannot send
// a write outside OUT: no path string below OUT is ever resolved. OUT is
// opened once; each directory is then opened with openat(parent descriptor,
// one component, O_DIRECTORY | O_NOFOLLOW), which fails (ELOOP, ENOTDIR) on
// anything but a real directory at that instant, and every node is created
// with a *at call on one component relative to a descriptor so obtained.
// There is no window in which a name is checked and then resolved again: a
// swap before the openat makes the openat fail (the directory is reported),
// a swap after it changes a name the restore no longer uses (the
// descriptor stays on the real directory, wherever it is moved). Temporary
// names are created with O_EXCL | O_NOFOLLOW (or by mknodat, symlinkat,
// linkat, which never follow their last component) and renamed within the
// same directory descriptor; rename replaces a link, never follows it.
// What one who can write in OUT can still do is move a directory the restore
// made elsewhere while the restore writes into it: that is moving one's own
// files, not the restore writing through a link.
#include "restore_tree.hpp"

#include "tree_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace cdc::store::tree {

std::string_view kind_name(RestoreProblem::Kind k) {
    switch (k) {
        case RestoreProblem::Kind::damaged: return "damaged";
        case RestoreProblem::Kind::failed: return "failed";
        case RestoreProblem::Kind::metadata: return "metadata";
        case RestoreProblem::Kind::not_restored: return "not restored";
    }
    return "unknown";
}

bool RestoreReport::complete() const {
    for (const RestoreProblem& p : problems)
        if (p.kind != RestoreProblem::Kind::not_restored) return false;
    return true;
}

namespace {

using detail::Fd;
using Kind = RestoreProblem::Kind;

/// An entry that is not restored: why, and whose fault.
struct Refused {
    Kind kind;
    std::string why;
};

/// An error writing the output (as opposed to one of the source).
class OutputFailure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

std::string errno_text(std::string_view what, int error = errno) { return fmt::format("{}: {}", what, std::strerror(error)); }

timespec timespec_of(std::int64_t ns) {
    std::int64_t sec = ns / 1'000'000'000;
    std::int64_t frac = ns % 1'000'000'000;
    if (frac < 0) {
        frac += 1'000'000'000;
        --sec;
    }
    return {static_cast<time_t>(sec), static_cast<long>(frac)};
}

/// A temporary name beside the restored one: short and of one length, so
/// that a name taking all of NAME_MAX still has room beside it.
std::string temporary_name() {
    std::uint64_t v = 0;
    if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
        v = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return fmt::format(".cdc-get-{:016x}", v);
}

/// The name `name` in the directory open at `dir`, for the path-taking xattr
/// calls: resolved from the descriptor (a magic link to the directory
/// itself), with the l* calls never following `name`.
std::string proc_path(int dir, const std::string& name) { return fmt::format("/proc/self/fd/{}/{}", dir, name); }

/// Where metadata is applied: an open file or directory (`fd`), or a name
/// in a directory (`dir`, `name`) for a symlink or a special node, whose
/// O_PATH descriptor `path_fd` (special nodes only) is used for the mode.
struct Node {
    int fd = -1;
    int dir = -1;
    std::string name;
    int path_fd = -1;
};

class Restorer {
public:
    Restorer(const RestoreSource& source, const RestoreOptions& options, int root)
        : source_(source), options_(options), root_(root) {
        const bool root_user = ::geteuid() == 0;
        owner_ = options.owner.value_or(root_user);
        setid_ = options.setid.value_or(root_user);
        devices_ = root_user;
    }

    void entries(int dir, const std::vector<Entry>& list, std::size_t depth);
    void directory_metadata(int fd, const Entry& e) { apply(Node{fd, -1, {}, -1}, e); }
    void report(Kind kind, std::string why) { report_.problems.push_back({kind, joined(), std::move(why)}); }
    void push(const std::string& name) { path_.push_back(name); }
    void pop() { path_.pop_back(); }
    RestoreReport take() { return std::move(report_); }

private:
    struct Restored {  // a file of a hard-link group, as restored
        std::vector<std::string> path;  // below OUT
        std::uint64_t device = 0;
        std::uint64_t inode = 0;
    };

    std::string joined() const { return join(path_); }
    static std::string join(const std::vector<std::string>& parts) {
        std::string s;
        for (const std::string& c : parts) {
            if (!s.empty()) s.push_back('/');
            s += c;
        }
        return s;
    }
    /// The entry's path in its snapshot (hard-link groups are keyed by it).
    std::string snapshot_path() const {
        std::vector<std::string> p = options_.tree_path;
        p.insert(p.end(), path_.begin(), path_.end());
        return join(p);
    }

    void one(int dir, const Entry& e, std::size_t depth);
    void directory(int dir, const Entry& e, std::size_t depth);
    void file(int dir, const Entry& e);
    void hardlink(int dir, const Entry& e);
    void symlink(int dir, const Entry& e);
    void special(int dir, const Entry& e);
    /// Refuses when a directory holds the name (a non-directory is restored
    /// over anything else).
    void not_a_directory_in_the_way(int dir, const std::string& name);
    /// Renames `tmp` over `name` in `dir`; on failure removes `tmp`.
    void install(int dir, const std::string& tmp, const std::string& name);
    /// Owner, xattrs, mode, times, in that order (chown clears set-id bits and
    /// capabilities; a read-only mode would refuse the xattrs).
    void apply(const Node& n, const Entry& e);
    std::optional<std::pair<uid_t, gid_t>> ids_for(const Entry& e);
    /// The parent directory of a restored file of a hard-link group, walked
    /// down from OUT without following links.
    Fd open_parent(const std::vector<std::string>& path);

    const RestoreSource& source_;
    const RestoreOptions& options_;
    int root_;
    bool owner_ = false;
    bool setid_ = false;
    bool devices_ = false;
    std::vector<std::string> path_;
    std::map<std::string, Restored> links_;  // snapshot path of a group's first file -> where it is
    std::map<std::string, uid_t> uids_;
    std::map<std::string, gid_t> gids_;
    RestoreReport report_;
};

void Restorer::entries(int dir, const std::vector<Entry>& list, std::size_t depth) {
    std::set<std::string_view> seen;
    for (const Entry& e : list) {
        push(e.name);
        if (const std::string why = name_problem(e.name); !why.empty()) {
            report(Kind::damaged, why + ": not restored");
        } else if (const std::string bad = entry_problem(e); !bad.empty()) {
            report(Kind::damaged, bad + ": not restored");
        } else if (!seen.insert(e.name).second) {
            report(Kind::damaged, "a second entry of that name: not restored");
        } else {
            try {
                one(dir, e, depth);
            } catch (const Refused& r) {
                report(r.kind, r.why);
            }
        }
        pop();
    }
}

void Restorer::one(int dir, const Entry& e, std::size_t depth) {
    switch (e.type) {
        case EntryType::directory: return directory(dir, e, depth);
        case EntryType::file: return file(dir, e);
        case EntryType::hardlink: return hardlink(dir, e);
        case EntryType::symlink: return symlink(dir, e);
        case EntryType::fifo: return special(dir, e);
        case EntryType::char_device:
        case EntryType::block_device:
            if (!devices_) throw Refused{Kind::not_restored, "a device node: made by root only"};
            return special(dir, e);
        case EntryType::socket:
            throw Refused{Kind::not_restored, "a socket: not restorable (it exists only while a program listens on it)"};
    }
}

void Restorer::directory(int dir, const Entry& e, std::size_t depth) {
    if (depth >= options_.max_depth)
        throw Refused{Kind::damaged, fmt::format("nested deeper than {} directories: not restored", options_.max_depth)};
    const char* name = e.name.c_str();
    if (::mkdirat(dir, name, 0700) != 0) {
        if (errno != EEXIST) throw Refused{Kind::failed, errno_text("cannot make the directory")};
        struct stat st {};
        if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
            // A file or a link where the tree has a directory: replaced, as a
            // restored file replaces what is at its name.
            if (::unlinkat(dir, name, 0) != 0 || ::mkdirat(dir, name, 0700) != 0)
                throw Refused{Kind::failed, errno_text("cannot replace what is in the way by the directory")};
        }
    }
    if (options_.before_open_dir) options_.before_open_dir(dir, e.name);
    Fd sub(::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) {
        if (errno == ELOOP || errno == ENOTDIR)
            throw Refused{Kind::failed, "not a directory when opened (a link or a file took its place): not entered"};
        throw Refused{Kind::failed, errno_text("cannot open the directory")};
    }
    std::vector<Entry> children;
    try {
        children = source_.tree(e.subtree);
    } catch (const std::exception& ex) {
        report(Kind::damaged, fmt::format("its entries cannot be read: {}", ex.what()));
    }
    entries(sub.get(), children, depth + 1);
    apply(Node{sub.get(), -1, {}, -1}, e);
    ++report_.directories;
}

void Restorer::not_a_directory_in_the_way(int dir, const std::string& name) {
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        throw Refused{Kind::failed, "a directory is in the way: not replaced"};
}

void Restorer::install(int dir, const std::string& tmp, const std::string& name) {
    if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
        const std::string why = errno_text("cannot rename it into place");
        ::unlinkat(dir, tmp.c_str(), 0);
        throw Refused{Kind::failed, why};
    }
    // rename() of two links of one file does nothing: the temporary name of
    // a hard link restored over its own group's link stays.
    ::unlinkat(dir, tmp.c_str(), 0);
}

void Restorer::file(int dir, const Entry& e) {
    not_a_directory_in_the_way(dir, e.name);
    std::string tmp;
    Fd fd;
    for (int attempt = 0; !fd; ++attempt) {
        tmp = temporary_name();
        fd = Fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd && (errno != EEXIST || attempt > 8)) throw Refused{Kind::failed, errno_text("cannot create a temporary file")};
    }
    try {
        const std::vector<Extent> ranges = data_ranges(e);
        const std::uint64_t expected = data_length(e);
        std::size_t range = 0;
        std::uint64_t in_range = 0;
        std::uint64_t written = 0;
        auto sink = [&](std::string_view bytes) {
            while (!bytes.empty()) {
                if (range == ranges.size())
                    throw std::runtime_error(fmt::format("its content holds more than the {} bytes of its extents", expected));
                const Extent& x = ranges[range];
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), x.length - in_range));
                const ssize_t w = ::pwrite(fd.get(), bytes.data(), n, static_cast<off_t>(x.offset + in_range));
                if (w < 0) {
                    if (errno == EINTR) continue;
                    throw OutputFailure(errno_text("cannot write it"));
                }
                bytes.remove_prefix(static_cast<std::size_t>(w));
                in_range += static_cast<std::uint64_t>(w);
                written += static_cast<std::uint64_t>(w);
                if (in_range == x.length) {
                    ++range;
                    in_range = 0;
                }
            }
        };
        try {
            if (expected > 0) source_.content(e, sink);
        } catch (const OutputFailure&) {
            throw;
        } catch (const std::exception& ex) {
            throw Refused{Kind::damaged, fmt::format("its content cannot be read: {}", ex.what())};
        }
        if (written != expected)
            throw Refused{Kind::damaged, fmt::format("its content holds {} bytes, its entry says {}", written, expected)};
        // The size with its holes (a trailing hole is made here).
        if (::ftruncate(fd.get(), static_cast<off_t>(e.size)) != 0) throw OutputFailure(errno_text("cannot set its size"));
        apply(Node{fd.get(), -1, {}, -1}, e);
        if (::close(fd.release()) != 0) throw OutputFailure(errno_text("cannot close it"));
        report_.bytes += written;
    } catch (const OutputFailure& f) {
        ::unlinkat(dir, tmp.c_str(), 0);
        throw Refused{Kind::failed, f.what()};
    } catch (...) {
        ::unlinkat(dir, tmp.c_str(), 0);
        throw;
    }
    install(dir, tmp, e.name);
    ++report_.files;
    if (e.nlink > 1) {
        struct stat st {};
        if (::fstatat(dir, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            links_.insert_or_assign(snapshot_path(), Restored{path_, static_cast<std::uint64_t>(st.st_dev),
                                                              static_cast<std::uint64_t>(st.st_ino)});
    }
}

Fd Restorer::open_parent(const std::vector<std::string>& path) {
    Fd dir(::dup(root_));
    for (std::size_t i = 0; dir && i + 1 < path.size(); ++i)
        dir = Fd(::openat(dir.get(), path[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return dir;
}

void Restorer::hardlink(int dir, const Entry& e) {
    const std::string first = join(e.link);
    not_a_directory_in_the_way(dir, e.name);
    if (const auto it = links_.find(first); it != links_.end()) {
        const Restored& r = it->second;
        const Fd parent = open_parent(r.path);
        struct stat st {};
        const std::string& last = r.path.back();
        if (parent && ::fstatat(parent.get(), last.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            static_cast<std::uint64_t>(st.st_dev) == r.device && static_cast<std::uint64_t>(st.st_ino) == r.inode) {
            const std::string tmp = temporary_name();
            // linkat without AT_SYMLINK_FOLLOW links the name itself, whatever
            // it became since the fstatat; the result is checked below.
            if (::linkat(parent.get(), last.c_str(), dir, tmp.c_str(), 0) == 0) {
                struct stat made {};
                if (::fstatat(dir, tmp.c_str(), &made, AT_SYMLINK_NOFOLLOW) == 0 &&
                    static_cast<std::uint64_t>(made.st_ino) == r.inode && static_cast<std::uint64_t>(made.st_dev) == r.device) {
                    install(dir, tmp, e.name);
                    ++report_.hardlinks;
                    return;
                }
                ::unlinkat(dir, tmp.c_str(), 0);
            }
        }
    }
    // Its group's first file is not in this restore (a part of the tree, or
    // it failed): restored as a file, the one later links of the group join.
    file(dir, e);
    if (auto it = links_.find(snapshot_path()); it != links_.end()) links_.insert_or_assign(first, it->second);
}

void Restorer::symlink(int dir, const Entry& e) {
    not_a_directory_in_the_way(dir, e.name);
    std::string tmp;
    for (int attempt = 0;; ++attempt) {
        tmp = temporary_name();
        if (::symlinkat(e.target.c_str(), dir, tmp.c_str()) == 0) break;
        if (errno != EEXIST || attempt > 8) throw Refused{Kind::failed, errno_text("cannot create the symlink")};
    }
    apply(Node{-1, dir, tmp, -1}, e);
    install(dir, tmp, e.name);
    ++report_.symlinks;
}

void Restorer::special(int dir, const Entry& e) {
    not_a_directory_in_the_way(dir, e.name);
    mode_t type = S_IFIFO;
    if (e.type == EntryType::char_device) type = S_IFCHR;
    if (e.type == EntryType::block_device) type = S_IFBLK;
    std::string tmp;
    for (int attempt = 0;; ++attempt) {
        tmp = temporary_name();
        if (::mknodat(dir, tmp.c_str(), type | 0600, static_cast<dev_t>(e.rdev)) == 0) break;
        if (errno != EEXIST || attempt > 8) throw Refused{Kind::failed, errno_text("cannot make the node")};
    }
    // Its mode is set through an O_PATH descriptor of the very node made
    // (chmod has no "do not follow" on Linux): checked to be that node.
    Fd node(::openat(dir, tmp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!node || ::fstat(node.get(), &st) != 0 || (st.st_mode & S_IFMT) != type) {
        ::unlinkat(dir, tmp.c_str(), 0);
        throw Refused{Kind::failed, "the node made was replaced before its metadata was applied"};
    }
    apply(Node{-1, dir, tmp, node.get()}, e);
    install(dir, tmp, e.name);
    ++report_.specials;
}

std::optional<std::pair<uid_t, gid_t>> Restorer::ids_for(const Entry& e) {
    uid_t uid = e.uid;
    gid_t gid = e.gid;
    if (options_.owner_by_name) {
        if (!e.user.empty()) {
            auto [it, added] = uids_.try_emplace(e.user, static_cast<uid_t>(e.uid));
            if (added) {
                std::vector<char> buf(16384);
                passwd pw{};
                passwd* found = nullptr;
                if (::getpwnam_r(e.user.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr)
                    it->second = found->pw_uid;
            }
            uid = it->second;
        }
        if (!e.group.empty()) {
            auto [it, added] = gids_.try_emplace(e.group, static_cast<gid_t>(e.gid));
            if (added) {
                std::vector<char> buf(16384);
                group gr{};
                group* found = nullptr;
                if (::getgrnam_r(e.group.c_str(), &gr, buf.data(), buf.size(), &found) == 0 && found != nullptr)
                    it->second = found->gr_gid;
            }
            gid = it->second;
        }
    }
    return std::make_pair(uid, gid);
}

void Restorer::apply(const Node& n, const Entry& e) {
    std::vector<std::string> failed;
    if (owner_) {
        const auto ids = ids_for(e);
        int rc = 0;
        if (n.fd >= 0)
            rc = ::fchown(n.fd, ids->first, ids->second);
        else
            rc = ::fchownat(n.dir, n.name.c_str(), ids->first, ids->second, AT_SYMLINK_NOFOLLOW);
        if (rc != 0) {
            const int err = errno;
            failed.push_back(errno_text(fmt::format("owner {}:{}", ids->first, ids->second), err));
        }
    }
    if (options_.xattrs) {
        const std::string proc = n.fd >= 0 ? std::string() : proc_path(n.dir, n.name);
        for (const Xattr& x : e.xattrs) {
            const int rc = n.fd >= 0 ? ::fsetxattr(n.fd, x.name.c_str(), x.value.data(), x.value.size(), 0)
                                     : ::lsetxattr(proc.c_str(), x.name.c_str(), x.value.data(), x.value.size(), 0);
            if (rc != 0) {
                const int err = errno;
                failed.push_back(errno_text(fmt::format("xattr '{}'", x.name), err));
            }
        }
    }
    if (e.type != EntryType::symlink) {  // a symlink's mode is not its own on Linux
        const auto mode = static_cast<mode_t>(e.mode & (setid_ ? 07777u : 0777u));
        int rc = 0;
        if (n.fd >= 0)
            rc = ::fchmod(n.fd, mode);
        else
            rc = ::chmod(fmt::format("/proc/self/fd/{}", n.path_fd).c_str(), mode);
        if (rc != 0) {
            const int err = errno;
            failed.push_back(errno_text(fmt::format("mode {:o}", mode), err));
        }
    }
    if (options_.times) {
        const timespec ts[2] = {timespec_of(e.atime_ns), timespec_of(e.mtime_ns)};
        const int rc = n.fd >= 0 ? ::futimens(n.fd, ts) : ::utimensat(n.dir, n.name.c_str(), ts, AT_SYMLINK_NOFOLLOW);
        if (rc != 0) failed.push_back(errno_text("times"));
    }
    if (failed.empty()) return;
    std::string why = "restored without its ";
    for (std::size_t i = 0; i < failed.size(); ++i) why += (i ? "; " : "") + failed[i];
    report(Kind::metadata, std::move(why));
}

}  // namespace

RestoreReport restore_entries(int dir, const std::vector<Entry>& entries, const RestoreSource& source,
                              const RestoreOptions& options) {
    Restorer r(source, options, dir);
    r.entries(dir, entries, 0);
    return r.take();
}

RestoreReport restore(const std::filesystem::path& out, const Entry& root, const RestoreSource& source,
                      const RestoreOptions& options) {
    if (root.type == EntryType::directory) {
        const bool made = ::mkdir(out.c_str(), 0700) == 0;
        if (!made && errno != EEXIST)
            throw std::system_error(errno, std::generic_category(), fmt::format("cannot make '{}'", out.string()));
        // OUT itself is the caller's: followed if it is a link to a directory.
        const Fd fd(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!fd) throw std::system_error(errno, std::generic_category(), fmt::format("cannot open '{}'", out.string()));
        Restorer r(source, options, fd.get());
        std::vector<Entry> children;
        try {
            children = source.tree(root.subtree);
        } catch (const std::exception& ex) {
            r.report(Kind::damaged, fmt::format("the root's entries cannot be read: {}", ex.what()));
        }
        r.entries(fd.get(), children, 0);
        if (made) r.directory_metadata(fd.get(), root);
        return r.take();
    }
    std::error_code ec;
    const bool into = std::filesystem::is_directory(out, ec);
    const std::filesystem::path parent = into ? out : (out.has_parent_path() ? out.parent_path() : ".");
    const Fd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw std::system_error(errno, std::generic_category(), fmt::format("cannot open '{}'", parent.string()));
    Entry named = root;
    if (!into) named.name = out.filename().string();
    return restore_entries(fd.get(), {named}, source, options);
}

}  // namespace cdc::store::tree
