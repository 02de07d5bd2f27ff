// SPDX-License-Identifier: Apache-2.0
// cdc dupes: carrying out a plan (hard link, reflink, delete) without ever
// losing data or acting outside the tree: verify on open descriptors, then
// change relative to the verified directory (see cdc/dupes.hpp, "how each
// change is made").
#include "internal.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace cdc {

using namespace dupes_detail;

namespace dupes_detail {

namespace {

bool same_ctime(const struct stat& a, const struct stat& b) noexcept {
    return a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

bool unsupported_errno(int err) noexcept {
    return err == EOPNOTSUPP || err == ENOTTY || err == EINVAL || err == EXDEV || err == ENOSYS;
}

}  // namespace

std::string VerifiedPair::open(std::span<const std::string> roots, const DupesFile& kept_file, const DupesFile& dup_file,
                               std::string_view dup_path, bool writable) {
    kept.reset(open_read(kept_file.first_path().data(), false));
    if (kept.get() < 0) return fmt::format("cannot open '{}': {}", kept_file.first_path(), std::strerror(errno));
    if (::fstat(kept.get(), &kept_st) != 0 || !same_identity(kept_st, kept_file))
        return fmt::format("'{}' changed since the scan", kept_file.first_path());
    if (auto e = dir.open(roots, dup_path); !e.empty()) return e;
    struct stat st {};
    if (::fstatat(dir.fd.get(), dir.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !same_identity(st, dup_file))
        return fmt::format("'{}' changed since the scan", dup_path);
    // FIDEDUPERANGE wants the destination open for writing (or owned by us).
    if (writable) dup.reset(open_at(dir.fd.get(), dir.name.c_str(), true));
    if (dup.get() < 0) dup.reset(open_at(dir.fd.get(), dir.name.c_str(), false));
    if (dup.get() < 0) return fmt::format("cannot open '{}': {}", dup_path, std::strerror(errno));
    if (::fstat(dup.get(), &dup_st) != 0 || !same_identity(dup_st, dup_file))
        return fmt::format("'{}' changed since the scan", dup_path);
    return {};
}

std::string VerifiedPair::unchanged(bool kept_linked) const {
    struct stat k {}, d {}, named {};
    // ctime: a chmod, chown, setfattr or write since open() (mtime can be
    // set back by the owner, ctime cannot). Our own link of the kept file
    // changes its ctime: then its size and mtime are checked.
    if (::fstat(kept.get(), &k) != 0 || k.st_size != kept_st.st_size ||
        (kept_linked ? mtime_ns(k) != mtime_ns(kept_st) : !same_ctime(k, kept_st)))
        return "the kept file changed during the check";
    if (::fstat(dup.get(), &d) != 0 || d.st_size != dup_st.st_size || !same_ctime(d, dup_st))
        return "changed during the check";
    if (::fstatat(dir.fd.get(), dir.name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || named.st_dev != dup_st.st_dev ||
        named.st_ino != dup_st.st_ino)
        return "renamed or replaced during the check";
    return {};
}

std::string VerifiedPair::keys_differ(bool ignore_metadata) const {
    FileMeta km, dm;
    if (auto e = read_meta(kept.get(), km); !e.empty()) return fmt::format("kept file: {}", e);
    if (auto e = read_meta(dup.get(), dm); !e.empty()) return e;
    if (km.same_keys(dm, ignore_metadata)) return {};
    return fmt::format("not merged: different {} now", meta_difference(dm, km, ignore_metadata));
}

std::string VerifiedPair::dedupe(std::uint64_t offset, std::uint64_t length, bool& unsupported) const {
    alignas(file_dedupe_range) unsigned char raw[sizeof(file_dedupe_range) + sizeof(file_dedupe_range_info)] = {};
    auto* arg = reinterpret_cast<file_dedupe_range*>(raw);
    for (std::uint64_t off = offset, end = offset + length;;) {
        const std::uint64_t len = std::min<std::uint64_t>(end - off, std::uint64_t{16} << 20);
        std::memset(raw, 0, sizeof(raw));
        arg->src_offset = off;
        arg->src_length = len;
        arg->dest_count = 1;
        arg->info[0].dest_fd = dup.get();
        arg->info[0].dest_offset = off;
        if (::ioctl(kept.get(), FIDEDUPERANGE, arg) != 0) {
            const int err = errno;
            unsupported = unsupported_errno(err);
            return fmt::format("FIDEDUPERANGE failed: {}", std::strerror(err));
        }
        if (arg->info[0].status == FILE_DEDUPE_RANGE_DIFFERS) return "contents differ now (kernel check)";
        if (arg->info[0].status < 0) {
            const int err = -arg->info[0].status;
            unsupported = err == EOPNOTSUPP || err == EINVAL || err == EXDEV;
            return fmt::format("FIDEDUPERANGE failed: {}", std::strerror(err));
        }
        if (len == 0) return {};  // a probe (or an empty file): supported
        if (arg->info[0].bytes_deduped == 0) return "FIDEDUPERANGE made no progress";
        off += arg->info[0].bytes_deduped;
        if (off >= end) return {};
    }
}

}  // namespace dupes_detail

namespace {

// Every byte of the pair, compared.
std::string compare_bytes(const VerifiedPair& v, std::uint64_t size, std::vector<std::byte>& a,
                          std::vector<std::byte>& b) {
    constexpr std::size_t kBlock = 1 << 20;
    a.resize(kBlock);
    b.resize(kBlock);
    for (std::uint64_t off = 0; off < size;) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, size - off));
        if (!read_exact(v.kept.get(), a.data(), n, off) || !read_exact(v.dup.get(), b.data(), n, off))
            return fmt::format("read error: {}", errno_text(errno));
        if (std::memcmp(a.data(), b.data(), n) != 0) return "contents differ now";
        off += n;
    }
    return {};
}

std::atomic<std::uint64_t> g_temp_counter{0};

// A new name in `dirfd` for the inode open as `fd`: linkat of the
// descriptor itself (AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd
// works for anyone), so the link is the verified inode, whatever its path
// names now. 0 or -1 (errno set).
int link_descriptor(int fd, int dirfd, const char* name) {
    if (::linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0) return 0;
    if (errno == EEXIST) return -1;
    const std::string proc = fmt::format("/proc/self/fd/{}", fd);
    return ::linkat(AT_FDCWD, proc.c_str(), dirfd, name, AT_SYMLINK_FOLLOW);
}

// Hard link: kept's descriptor linked to a temporary in the duplicate's
// directory, everything re-checked, the temporary renamed over it.
std::string replace_with_link(const VerifiedPair& v, bool ignore_metadata) {
    const int dirfd = v.dir.fd.get();
    std::string tmp;
    for (int attempt = 0;; ++attempt) {
        tmp = fmt::format("{}{}.{}", kTempPrefix, ::getpid(), g_temp_counter.fetch_add(1));
        if (link_descriptor(v.kept.get(), dirfd, tmp.c_str()) == 0) break;
        if (errno != EEXIST || attempt > 100) return fmt::format("link failed: {}", std::strerror(errno));
    }
    struct stat ts {};
    std::string why;
    if (::fstatat(dirfd, tmp.c_str(), &ts, AT_SYMLINK_NOFOLLOW) != 0 || ts.st_dev != v.kept_st.st_dev ||
        ts.st_ino != v.kept_st.st_ino)
        why = "the temporary link is not the kept file";
    // The last checks, right before the rename: nothing changed, and the
    // metadata keys (owner, group, mode, attributes) still match.
    if (why.empty()) why = v.unchanged(/*kept_linked=*/true);
    if (why.empty()) why = v.keys_differ(ignore_metadata);
    if (why.empty() && ::renameat(dirfd, tmp.c_str(), dirfd, v.dir.name.c_str()) != 0)
        why = fmt::format("rename failed: {}", std::strerror(errno));
    if (!why.empty()) ::unlinkat(dirfd, tmp.c_str(), 0);
    return why;
}

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Removes temporaries of interrupted runs: their process is gone and the
// kept file still has another name (so nothing can be lost).
void clean_stale(const DupesResult& result, const DupesOptions& opt) {
    const auto& roots = result.data().roots;
    for (const std::string_view t : result.stale_temporaries()) {
        ParentDir dir;
        struct stat st {};
        if (!dir.open(roots, t).empty() || ::fstatat(dir.fd.get(), dir.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        const long pid = std::strtol(dir.name.c_str() + kTempPrefix.size(), nullptr, 10);
        if (S_ISREG(st.st_mode) && st.st_nlink > 1 && pid != ::getpid() && !process_alive(pid) &&
            ::unlinkat(dir.fd.get(), dir.name.c_str(), 0) == 0)
            continue;
        if (opt.warning) opt.warning(fmt::format("temporary '{}' left in place (in use or the only name)", t));
    }
}

// One step: open and verify the pair, then act. "" when done.
std::string act(const DupesResult& result, const DupesStep& s, const DupesFile& kept, const DupesFile& dup,
                const DupesOptions& options, std::vector<std::byte>& a, std::vector<std::byte>& b) {
    VerifiedPair v;
    if (auto e = v.open(result.data().roots, kept, dup, s.path, s.action == DupesAction::reflink); !e.empty()) return e;
    const bool merge = s.action == DupesAction::hardlink || s.action == DupesAction::reflink;
    if (merge) {
        if (auto e = v.keys_differ(options.ignore_metadata); !e.empty()) return e;
    }
    if (s.action == DupesAction::reflink) {
        // The kernel compares the bytes itself, atomically.
        bool unsupported = false;
        std::string why = v.dedupe(0, kept.size, unsupported);
        if (unsupported)
            throw IoError(fmt::format("reflink is not supported here: '{}' -> '{}': {} (the file system must support "
                                      "FIDEDUPERANGE, e.g. Btrfs or XFS; use --action hardlink instead)",
                                      s.path, kept.first_path(), why));
        return why;
    }
    if (auto e = compare_bytes(v, kept.size, a, b); !e.empty()) return e;
    if (auto e = v.unchanged(); !e.empty()) return e;
    if (s.action == DupesAction::hardlink) return replace_with_link(v, options.ignore_metadata);
    // remove
    if (::unlinkat(v.dir.fd.get(), v.dir.name.c_str(), 0) != 0) return fmt::format("unlink failed: {}", std::strerror(errno));
    return {};
}

}  // namespace

void apply_dupes_plan(const DupesResult& result, std::span<DupesStep> steps, const DupesOptions& options) {
    refuse_followed_links(options);
    clean_stale(result, options);
    std::vector<std::byte> a, b;
    std::uint64_t done = 0;
    DupesGroup g;
    std::size_t loaded = SIZE_MAX;  // the group in `g`
    for (DupesStep& s : steps) {
        if (s.status != DupesStep::Status::planned || s.action == DupesAction::report) continue;
        if (s.group != loaded) {
            g = result.group(s.group);
            loaded = s.group;
        }
        const std::string why = act(result, s, g.files.at(s.kept_file), g.files.at(s.file), options, a, b);
        if (why.empty()) {
            s.status = DupesStep::Status::done;
        } else {
            s.status = DupesStep::Status::skipped;
            s.reason = why;
            if (options.warning) options.warning(fmt::format("'{}' not changed: {}", s.path, why));
        }
        if (options.progress && (++done & 63) == 0) {
            DupesProgress p;
            p.phase = "act";
            p.resolved = done;
            options.progress(p);
        }
    }
}

}  // namespace cdc
