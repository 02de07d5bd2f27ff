// SPDX-License-Identifier: Apache-2.0
// The tree model's rules and the capture of a tree (tree.hpp).
#include "tree.hpp"

#include "tree_fd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <system_error>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

namespace cdc::store::tree {

std::string_view type_name(EntryType t) {
    switch (t) {
        case EntryType::file: return "file";
        case EntryType::directory: return "dir";
        case EntryType::symlink: return "symlink";
        case EntryType::hardlink: return "hardlink";
        case EntryType::fifo: return "fifo";
        case EntryType::char_device: return "chardev";
        case EntryType::block_device: return "blockdev";
        case EntryType::socket: return "socket";
    }
    return "unknown";
}

std::string name_problem(std::string_view name) {
    if (name.empty()) return "the name is empty";
    if (name == "." || name == "..") return fmt::format("the name is '{}'", name);
    if (name.find('/') != std::string_view::npos) return "the name holds a '/'";
    if (name.find('\0') != std::string_view::npos) return "the name holds a NUL byte";
    if (name.size() > NAME_MAX) return fmt::format("the name is longer than {} bytes", NAME_MAX);
    return {};
}

namespace {

bool is_content_type(EntryType t) { return t == EntryType::file || t == EntryType::hardlink; }
bool is_device(EntryType t) { return t == EntryType::char_device || t == EntryType::block_device; }

}  // namespace

std::string entry_problem(const Entry& e) {
    if (static_cast<std::uint8_t>(e.type) >= kEntryTypeCount)
        return fmt::format("unknown type {}", static_cast<unsigned>(e.type));
    if (e.mode > 07777) return fmt::format("mode {:o} has bits beyond 07777", e.mode);
    const bool content = is_content_type(e.type);
    if (!content) {
        if (e.size != 0) return "a size on an entry that is not a file";
        if (e.nlink != 0) return "a link count on an entry that is not a file";
        if (e.sparse || !e.extents.empty()) return "extents on an entry that is not a file";
        if (e.content != Content{}) return "content on an entry that is not a file";
    }
    if (e.type != EntryType::directory && e.subtree != BlobId{}) return "a subtree on an entry that is not a directory";
    if (!is_device(e.type) && e.rdev != 0) return "a device number on an entry that is not a device";
    if (e.type == EntryType::symlink) {
        if (e.target.empty()) return "a symlink without a target";
        if (e.target.size() >= PATH_MAX) return fmt::format("a symlink target of {} bytes (at most {})", e.target.size(), PATH_MAX - 1);
        if (e.target.find('\0') != std::string::npos) return "a symlink target holding a NUL byte";
    } else if (!e.target.empty()) {
        return "a target on an entry that is not a symlink";
    }
    if (e.type == EntryType::hardlink) {
        if (e.link.empty()) return "a hard link without the path of its first entry";
        for (const std::string& c : e.link)
            if (const std::string why = name_problem(c); !why.empty())
                return fmt::format("a hard link to a path whose component is bad: {}", why);
    } else if (!e.link.empty()) {
        return "a link path on an entry that is not a hard link";
    }
    if (!e.sparse && !e.extents.empty()) return "extents on a file that is not sparse";
    std::uint64_t end = 0;
    for (std::size_t i = 0; i < e.extents.size(); ++i) {
        const Extent& x = e.extents[i];
        if (x.length == 0) return fmt::format("extent {} is empty", i);
        if (i > 0 && x.offset < end) return fmt::format("extent {} overlaps or precedes the one before", i);
        if (x.offset > e.size || x.length > e.size - x.offset)
            return fmt::format("extent {} ends beyond the size {}", i, e.size);
        end = x.offset + x.length;
    }
    for (std::size_t i = 0; i < e.xattrs.size(); ++i) {
        const std::string& n = e.xattrs[i].name;
        if (n.empty()) return "an xattr with an empty name";
        if (n.size() > XATTR_NAME_MAX) return fmt::format("an xattr name longer than {} bytes", XATTR_NAME_MAX);
        if (n.find('\0') != std::string::npos) return "an xattr name holding a NUL byte";
        if (e.xattrs[i].value.size() > XATTR_SIZE_MAX)
            return fmt::format("an xattr value longer than {} bytes", XATTR_SIZE_MAX);
        if (i > 0 && !(e.xattrs[i - 1].name < n)) return "xattrs not sorted by name, or a name twice";
    }
    return {};
}

std::vector<Extent> data_ranges(const Entry& e) {
    if (e.sparse) return e.extents;
    if (e.size == 0) return {};
    return {Extent{0, e.size}};
}

std::uint64_t data_length(const Entry& e) {
    std::uint64_t n = 0;
    for (const Extent& x : data_ranges(e)) n += x.length;
    return n;
}

std::vector<std::string> entry_differences(const Entry& a, const Entry& b, bool with_identity, bool with_content) {
    std::vector<std::string> out;
    auto check = [&](bool same, const char* field) {
        if (!same) out.emplace_back(field);
    };
    check(a.name == b.name, "name");
    check(a.type == b.type, "type");
    check(a.mode == b.mode, "mode");
    check(a.uid == b.uid, "uid");
    check(a.gid == b.gid, "gid");
    check(a.user == b.user, "user");
    check(a.group == b.group, "group");
    check(a.mtime_ns == b.mtime_ns, "mtime");
    check(a.atime_ns == b.atime_ns, "atime");
    if (with_identity) {
        check(a.ctime_ns == b.ctime_ns, "ctime");
        check(a.inode == b.inode, "inode");
        check(a.device == b.device, "device");
    }
    check(a.size == b.size, "size");
    check(a.nlink == b.nlink, "nlink");
    check(a.rdev == b.rdev, "rdev");
    check(a.target == b.target, "target");
    check(a.link == b.link, "link");
    check(a.xattrs == b.xattrs, "xattrs");
    check(a.sparse == b.sparse && a.extents == b.extents, "extents");
    if (with_content) {
        check(a.content == b.content, "content");
        check(a.subtree == b.subtree, "subtree");
    }
    return out;
}

// ---------------------------------------------------------------- capture

namespace {

using detail::Fd;

struct DirCloser {
    void operator()(DIR* d) const noexcept { ::closedir(d); }
};

std::int64_t ns_of(const timespec& t) {
    // A time beyond the int64 range of nanoseconds (years before 1678 or
    // after 2262) is clamped to its end.
    constexpr std::int64_t kMaxSec = INT64_MAX / 1'000'000'000 - 1;
    if (t.tv_sec > kMaxSec) return INT64_MAX;
    if (t.tv_sec < -kMaxSec) return INT64_MIN;
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

std::optional<EntryType> type_of(mode_t m) {
    switch (m & S_IFMT) {
        case S_IFREG: return EntryType::file;
        case S_IFDIR: return EntryType::directory;
        case S_IFLNK: return EntryType::symlink;
        case S_IFIFO: return EntryType::fifo;
        case S_IFCHR: return EntryType::char_device;
        case S_IFBLK: return EntryType::block_device;
        case S_IFSOCK: return EntryType::socket;
        default: return std::nullopt;
    }
}

/// Opens with O_NOATIME where allowed (the owner or root): reading a file or
/// listing a directory then leaves its atime as captured.
int open_noatime(int dir, const char* name, int flags) {
    int fd = ::openat(dir, name, flags | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = ::openat(dir, name, flags);
    return fd;
}

class Capture {
public:
    Capture(CaptureVisitor& v, const CaptureOptions& o) : visitor_(v), options_(o) {}

    Entry root(const std::filesystem::path& root);

private:
    struct FirstLink {
        std::vector<std::string> path;
        std::uint64_t size = 0;
        bool sparse = false;
        std::vector<Extent> extents;
        Content content;
    };

    void problem(const std::string& path, int error, std::string what, bool skipped = true) {
        visitor_.problem(CaptureProblem{path, error, std::move(what), skipped});
    }
    std::string joined() const {
        std::string s;
        for (const std::string& c : path_) {
            if (!s.empty()) s.push_back('/');
            s += c;
        }
        return s;
    }
    Entry from_stat(const struct stat& st, std::string name);
    const std::string& user_name(uid_t uid);
    const std::string& group_name(gid_t gid);
    void read_xattrs(Entry& e, int fd, int dir, const std::string& name, const std::string& shown);
    void read_extents(Entry& e, int fd, const struct stat& st);
    /// The entry for `name` of the directory `dir` (path_ ends with it);
    /// nullopt when it is left out (reported).
    std::optional<Entry> child(int dir, const std::string& name);
    /// A directory open at `fd` (path_ is its path): its entries, stored.
    BlobId directory(int fd);
    bool file(Entry& e, int fd, const struct stat& st, const std::string& shown);

    CaptureVisitor& visitor_;
    const CaptureOptions& options_;
    std::vector<std::string> path_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, FirstLink> links_;
    dev_t root_dev_ = 0;
    std::map<uid_t, std::string> users_;
    std::map<gid_t, std::string> groups_;
};

// The name of `key` in the local account file (/etc/passwd or /etc/group),
// read with fgetpwent_r / fgetgrent_r, empty if none. Not getpwuid_r: in the
// statically linked `cdc` that loads the system's NSS modules (systemd's
// among them) into a program built against another copy of glibc, and a uid
// no file names made it crash there. Accounts only a directory service knows
// are recorded by number (the ids are always kept).
template <class Record, class Key>
std::string local_account_name(const char* file, Key key, int (*next)(FILE*, Record*, char*, std::size_t, Record**),
                               Key Record::*id, char* Record::*name) {
    FILE* f = std::fopen(file, "re");
    if (f == nullptr) return {};
    std::vector<char> buf(16384);
    std::string out;
    for (;;) {
        Record rec{};
        Record* found = nullptr;
        const int rc = next(f, &rec, buf.data(), buf.size(), &found);
        if (rc == ERANGE && buf.size() < (std::size_t{1} << 20)) {
            buf.resize(buf.size() * 2);  // (the long line is read again)
            continue;
        }
        if (rc != 0 || found == nullptr) break;
        if (found->*id == key && found->*name != nullptr) {
            out = found->*name;
            break;
        }
    }
    std::fclose(f);
    return out;
}

const std::string& Capture::user_name(uid_t uid) {
    auto [it, added] = users_.try_emplace(uid);
    if (added) it->second = local_user_name(uid);
    return it->second;
}

const std::string& Capture::group_name(gid_t gid) {
    auto [it, added] = groups_.try_emplace(gid);
    if (added) it->second = local_group_name(gid);
    return it->second;
}

Entry Capture::from_stat(const struct stat& st, std::string name) {
    Entry e;
    e.name = std::move(name);
    e.type = *type_of(st.st_mode);
    e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    if (options_.owner_names) {
        e.user = user_name(st.st_uid);
        e.group = group_name(st.st_gid);
    }
    e.mtime_ns = ns_of(st.st_mtim);
    e.atime_ns = ns_of(st.st_atim);
    e.ctime_ns = ns_of(st.st_ctim);
    e.inode = static_cast<std::uint64_t>(st.st_ino);
    e.device = static_cast<std::uint64_t>(st.st_dev);
    if (e.type == EntryType::file) {
        e.size = static_cast<std::uint64_t>(st.st_size);
        e.nlink = static_cast<std::uint64_t>(st.st_nlink);
    }
    if (is_device(e.type)) e.rdev = static_cast<std::uint64_t>(st.st_rdev);
    return e;
}

/// The xattrs of an open file or directory (`fd`), or of `name` in `dir`
/// through /proc/self/fd/DIR/NAME with the l* calls (a symlink, a FIFO or a
/// device is never opened: opening a device may act on it).
void Capture::read_xattrs(Entry& e, int fd, int dir, const std::string& name, const std::string& shown) {
    if (!options_.xattrs) return;
    const std::string proc = fd >= 0 ? std::string() : fmt::format("/proc/self/fd/{}/{}", dir, name);
    auto list = [&](char* buf, std::size_t n) {
        return fd >= 0 ? ::flistxattr(fd, buf, n) : ::llistxattr(proc.c_str(), buf, n);
    };
    auto get = [&](const char* key, void* buf, std::size_t n) {
        return fd >= 0 ? ::fgetxattr(fd, key, buf, n) : ::lgetxattr(proc.c_str(), key, buf, n);
    };
    std::string names;
    for (int attempt = 0;; ++attempt) {
        const ssize_t n = list(nullptr, 0);
        if (n < 0) {
            if (errno == ENOTSUP) return;  // a file system without xattrs
            problem(shown, errno, fmt::format("cannot list its xattrs: {}", std::strerror(errno)), false);
            return;
        }
        names.resize(static_cast<std::size_t>(n));
        const ssize_t got = n == 0 ? 0 : list(names.data(), names.size());
        if (got >= 0) {
            names.resize(static_cast<std::size_t>(got));
            break;
        }
        if (errno != ERANGE || attempt > 8) {  // ERANGE: one was added meanwhile
            problem(shown, errno, fmt::format("cannot list its xattrs: {}", std::strerror(errno)), false);
            return;
        }
    }
    std::vector<Xattr> out;
    for (std::size_t at = 0; at < names.size();) {
        const std::size_t end = names.find('\0', at);
        const std::string key = names.substr(at, end == std::string::npos ? std::string::npos : end - at);
        at = end == std::string::npos ? names.size() : end + 1;
        if (key.empty()) continue;
        std::string value;
        bool ok = false;
        for (int attempt = 0; attempt < 8; ++attempt) {
            const ssize_t n = get(key.c_str(), nullptr, 0);
            if (n < 0) break;
            value.resize(static_cast<std::size_t>(n));
            const ssize_t got = n == 0 ? 0 : get(key.c_str(), value.data(), value.size());
            if (got >= 0) {
                value.resize(static_cast<std::size_t>(got));
                ok = true;
                break;
            }
            if (errno != ERANGE) break;
        }
        if (!ok) {
            if (errno == ENODATA) continue;  // removed since it was listed
            problem(shown, errno, fmt::format("cannot read its xattr '{}': {}", key, std::strerror(errno)), false);
            continue;
        }
        out.push_back({key, std::move(value)});
    }
    std::sort(out.begin(), out.end(), [](const Xattr& a, const Xattr& b) { return a.name < b.name; });
    e.xattrs = std::move(out);
}

/// The data extents of a file with fewer blocks than its size (a hole, or
/// a file system that compresses: SEEK_DATA tells which).
void Capture::read_extents(Entry& e, int fd, const struct stat& st) {
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (!options_.sparse || size == 0 || static_cast<std::uint64_t>(st.st_blocks) * 512 >= size) return;
    std::vector<Extent> out;
    std::uint64_t at = 0;
    while (at < size) {
        const off_t data = ::lseek(fd, static_cast<off_t>(at), SEEK_DATA);
        if (data < 0) {
            if (errno == ENXIO) break;  // no data from `at` to the end
            return;                     // SEEK_DATA unsupported: the file is read whole
        }
        const off_t hole = ::lseek(fd, data, SEEK_HOLE);
        if (hole < 0) return;
        const auto from = static_cast<std::uint64_t>(data);
        const auto to = std::min(static_cast<std::uint64_t>(hole), size);
        if (from >= to) break;
        out.push_back({from, to - from});
        at = to;
    }
    if (out.size() == 1 && out[0].offset == 0 && out[0].length == size) return;  // dense after all
    e.sparse = true;
    e.extents = std::move(out);
}

bool Capture::file(Entry& e, int fd, const struct stat& st, const std::string& shown) {
    read_extents(e, fd, st);
    try {
        visitor_.file(e, fd, shown);
    } catch (const Unreadable& u) {
        problem(shown, u.error(), u.what());
        return false;
    }
    return true;
}

std::optional<Entry> Capture::child(int dir, const std::string& name) {
    const std::string shown = joined();
    struct stat st {};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        problem(shown, errno,
                errno == ENOENT ? std::string("it vanished during the capture")
                                : fmt::format("cannot examine it: {}", std::strerror(errno)));
        return std::nullopt;
    }
    if (!type_of(st.st_mode)) {
        problem(shown, 0, fmt::format("unknown file type {:o}", st.st_mode & S_IFMT));
        return std::nullopt;
    }
    if (options_.exclude && !S_ISDIR(st.st_mode) && options_.exclude(shown, false, -1)) return std::nullopt;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        const int flags = S_ISDIR(st.st_mode) ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
                                              : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
        Fd fd(open_noatime(dir, name.c_str(), flags));
        if (!fd) {
            problem(shown, errno, fmt::format("cannot open it: {}", std::strerror(errno)));
            return std::nullopt;
        }
        // What was opened is what is recorded: a name replaced since fstatat
        // is described by the descriptor that will be read.
        struct stat now {};
        if (::fstat(fd.get(), &now) != 0 || (now.st_mode & S_IFMT) != (st.st_mode & S_IFMT)) {
            problem(shown, 0, "it was replaced by another type of file during the capture");
            return std::nullopt;
        }
        Entry e = from_stat(now, name);
        read_xattrs(e, fd.get(), dir, name, shown);
        if (S_ISDIR(now.st_mode)) {
            if (options_.exclude && options_.exclude(shown, true, fd.get())) return std::nullopt;
            if (options_.one_file_system && now.st_dev != root_dev_) {
                e.subtree = visitor_.directory({}, shown);
                return e;
            }
            e.subtree = directory(fd.release());
            return e;
        }
        const auto key = std::make_pair(e.device, e.inode);
        if (now.st_nlink > 1) {
            if (auto it = links_.find(key); it != links_.end()) {
                e.type = EntryType::hardlink;
                e.link = it->second.path;
                e.size = it->second.size;
                e.sparse = it->second.sparse;
                e.extents = it->second.extents;
                e.content = it->second.content;
                return e;
            }
        }
        if (!file(e, fd.get(), now, shown)) return std::nullopt;
        if (now.st_nlink > 1) {
            std::vector<std::string> p = options_.link_base;
            p.insert(p.end(), path_.begin(), path_.end());
            links_.emplace(key, FirstLink{std::move(p), e.size, e.sparse, e.extents, e.content});
        }
        return e;
    }
    Entry e = from_stat(st, name);
    if (S_ISLNK(st.st_mode)) {
        std::string target(static_cast<std::size_t>(std::max<off_t>(st.st_size, 63)) + 1, '\0');
        for (;;) {
            const ssize_t n = ::readlinkat(dir, name.c_str(), target.data(), target.size());
            if (n < 0) {
                problem(shown, errno, fmt::format("cannot read the link: {}", std::strerror(errno)));
                return std::nullopt;
            }
            if (static_cast<std::size_t>(n) < target.size()) {
                target.resize(static_cast<std::size_t>(n));
                break;
            }
            if (target.size() > PATH_MAX) {
                problem(shown, ENAMETOOLONG, "the link's target is longer than PATH_MAX");
                return std::nullopt;
            }
            target.resize(target.size() * 2);  // it grew since fstatat
        }
        if (target.empty()) {
            problem(shown, 0, "the link's target is empty");
            return std::nullopt;
        }
        e.target = std::move(target);
    }
    read_xattrs(e, -1, dir, name, shown);
    return e;
}

BlobId Capture::directory(int fd) {
    const std::string shown = joined();
    std::unique_ptr<DIR, DirCloser> d(::fdopendir(fd));
    if (!d) {
        const int err = errno;
        ::close(fd);
        throw std::system_error(err, std::generic_category(), fmt::format("fdopendir '{}'", shown));
    }
    std::vector<std::string> names;
    for (;;) {
        errno = 0;
        const dirent* de = ::readdir(d.get());
        if (de == nullptr) {
            if (errno != 0)
                problem(shown, errno,
                        fmt::format("cannot list the directory to its end ({} names read): {}", names.size(),
                                    std::strerror(errno)),
                        false);
            break;
        }
        const std::string_view n(de->d_name);
        if (n == "." || n == "..") continue;
        names.emplace_back(n);
    }
    std::sort(names.begin(), names.end());  // bytewise: char_traits<char> compares as unsigned char
    std::vector<Entry> entries;
    entries.reserve(names.size());
    for (const std::string& n : names) {
        path_.push_back(n);
        std::optional<Entry> e = child(::dirfd(d.get()), n);
        path_.pop_back();
        if (e) entries.push_back(std::move(*e));
    }
    return visitor_.directory(entries, shown);
}

Entry Capture::root(const std::filesystem::path& given) {
    // "dir/" names dir: its last component is the name of the root entry.
    const std::filesystem::path root =
        given.has_filename() || !given.has_relative_path() ? given : given.parent_path();
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0)
        throw std::system_error(errno, std::generic_category(), fmt::format("cannot examine '{}'", root.string()));
    std::string name = root.filename().string();
    if (name == "." || name == "..") name.clear();
    if (S_ISDIR(st.st_mode)) {
        Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME));
        if (!fd && errno == EPERM) fd = Fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd || ::fstat(fd.get(), &st) != 0)
            throw std::system_error(errno, std::generic_category(), fmt::format("cannot open '{}'", root.string()));
        root_dev_ = st.st_dev;
        Entry e = from_stat(st, name);
        read_xattrs(e, fd.get(), -1, {}, {});
        e.subtree = directory(fd.release());
        return e;
    }
    // Anything else is captured as a child of its parent directory, so that
    // it is examined, opened and read as any name of a tree is.
    const std::filesystem::path parent = root.has_parent_path() ? root.parent_path() : std::filesystem::path(".");
    Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
        throw std::system_error(errno, std::generic_category(), fmt::format("cannot open '{}'", parent.string()));
    path_.push_back(root.filename().string());
    std::optional<Entry> e = child(dir.get(), root.filename().string());
    path_.pop_back();
    if (!e)
        throw std::system_error(EIO, std::generic_category(), fmt::format("cannot capture '{}' (reported)", root.string()));
    return std::move(*e);
}

}  // namespace

Entry capture(const std::filesystem::path& root, CaptureVisitor& visitor, const CaptureOptions& options) {
    Capture c(visitor, options);
    return c.root(root);
}

std::string local_user_name(std::uint32_t uid) {
    return local_account_name<passwd, uid_t>("/etc/passwd", uid, ::fgetpwent_r, &passwd::pw_uid, &passwd::pw_name);
}

std::string local_group_name(std::uint32_t gid) {
    return local_account_name<group, gid_t>("/etc/group", gid, ::fgetgrent_r, &group::gr_gid, &group::gr_name);
}

void read_data(const Entry& e, int fd, const std::function<void(std::string_view)>& sink) {
    constexpr std::size_t kPiece = std::size_t{1} << 20;
    std::string buf;
    for (const Extent& x : data_ranges(e)) {
        std::uint64_t at = x.offset;
        const std::uint64_t end = x.offset + x.length;
        while (at < end) {
            buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kPiece, end - at)));
            const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(at));
            if (n < 0) {
                if (errno == EINTR) continue;
                throw Unreadable(errno, fmt::format("cannot read it: {}", std::strerror(errno)));
            }
            if (n == 0)
                throw Unreadable(0, fmt::format("it ends at {} bytes, it had {}: it shrank while read", at, e.size));
            sink(std::string_view(buf.data(), static_cast<std::size_t>(n)));
            at += static_cast<std::uint64_t>(n);
        }
    }
}

}  // namespace cdc::store::tree
