// cdc dupes: acting on duplicates (hard link, reflink, delete) without ever
// losing data: verify, then replace atomically.
#include "internal.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace cdc {

using namespace dupes_detail;

DupesAction parse_dupes_action(std::string_view name) {
    if (name == "report") return DupesAction::report;
    if (name == "hardlink") return DupesAction::hardlink;
    if (name == "reflink") return DupesAction::reflink;
    if (name == "delete") return DupesAction::remove;
    throw OptionError(fmt::format("--action = '{}' is invalid: must be report, hardlink, reflink or delete", name));
}

std::string_view to_string(DupesAction action) noexcept {
    switch (action) {
        case DupesAction::report: return "report";
        case DupesAction::hardlink: return "hardlink";
        case DupesAction::reflink: return "reflink";
        case DupesAction::remove: return "delete";
    }
    return "?";
}

KeepRule parse_keep_rule(std::string_view text) {
    KeepRule r;
    if (text == "oldest") {
        r.kind = KeepRule::Kind::oldest;
    } else if (text == "first") {
        r.kind = KeepRule::Kind::first;
    } else if (text.empty()) {
        throw OptionError("--keep = '' is invalid: must be oldest, first or a path pattern");
    } else {
        r.kind = KeepRule::Kind::pattern;
        r.pattern = std::string(text);
    }
    return r;
}

std::size_t choose_kept(std::span<const DupesFile> files, const KeepRule& rule) {
    const std::size_t n = files.size();
    if (n == 0) return 0;
    switch (rule.kind) {
        case KeepRule::Kind::first: return 0;  // files are sorted by first path
        case KeepRule::Kind::oldest: {
            std::size_t best = 0;
            for (std::size_t i = 1; i < n; ++i)
                if (files[i].mtime_ns < files[best].mtime_ns) best = i;
            return best;
        }
        case KeepRule::Kind::pattern:
            for (std::size_t i = 0; i < n; ++i)
                for (const std::string_view p : files[i].paths)
                    if (::fnmatch(rule.pattern.c_str(), p.data(), 0) == 0) return i;
            return n;
    }
    return n;
}

namespace {

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

bool still_same(const struct stat& st, const DupesFile& f) { return same_identity(st, f); }

// Opens `path` (no symlink) and checks it is still `f`; "" or a reason.
std::string open_checked(const char* path, const DupesFile& f, Fd& out) {
    out.fd = open_read(path, false);
    if (out.fd < 0) return fmt::format("cannot open '{}': {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(out.fd, &st) != 0 || !still_same(st, f)) return fmt::format("'{}' changed since the scan", path);
    return {};
}

// Full byte comparison of kept and dup, with identity checks before and
// after; "" when equal and unchanged.
std::string verify_equal(const DupesFile& kept, const DupesFile& dup, const char* dup_path,
                         std::vector<std::byte>& a, std::vector<std::byte>& b) {
    Fd kf, df;
    if (auto e = open_checked(kept.first_path().data(), kept, kf); !e.empty()) return e;
    if (auto e = open_checked(dup_path, dup, df); !e.empty()) return e;
    constexpr std::size_t kBlock = 1 << 20;
    a.resize(kBlock);
    b.resize(kBlock);
    for (std::uint64_t off = 0; off < kept.size;) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, kept.size - off));
        if (!read_exact(kf.fd, a.data(), n, off) || !read_exact(df.fd, b.data(), n, off))
            return fmt::format("read error: {}", errno_text(errno));
        if (std::memcmp(a.data(), b.data(), n) != 0) return "contents differ now";
        off += n;
    }
    struct stat ks {}, ds {};
    if (::fstat(kf.fd, &ks) != 0 || !still_same(ks, kept)) return fmt::format("'{}' changed", kept.first_path());
    if (::fstat(df.fd, &ds) != 0 || !still_same(ds, dup)) return fmt::format("'{}' changed", dup_path);
    return {};
}

std::string_view dir_of(std::string_view path) {
    const auto slash = path.rfind('/');
    if (slash == std::string_view::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

std::atomic<std::uint64_t> g_temp_counter{0};

// link(kept) to a temporary in dup's directory, re-check dup, rename over it.
std::string replace_with_link(const DupesFile& kept, const DupesFile& dup, const char* dup_path) {
    const std::string_view dir = dir_of(dup_path);
    std::string tmp;
    for (int attempt = 0;; ++attempt) {
        tmp = fmt::format("{}/{}{}.{}", dir, kTempPrefix, ::getpid(), g_temp_counter.fetch_add(1));
        if (::link(kept.first_path().data(), tmp.c_str()) == 0) break;
        if (errno != EEXIST || attempt > 100) return fmt::format("link failed: {}", std::strerror(errno));
    }
    struct stat ts {}, ds {};
    // The temporary must be the kept inode and the duplicate still unchanged.
    if (::lstat(tmp.c_str(), &ts) != 0 || !still_same(ts, kept) || ::lstat(dup_path, &ds) != 0 ||
        !still_same(ds, dup)) {
        ::unlink(tmp.c_str());
        return "changed right before the replacement";
    }
    if (::rename(tmp.c_str(), dup_path) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return fmt::format("rename failed: {}", std::strerror(err));
    }
    return {};
}

// In-place extent sharing; the kernel compares the bytes itself.
// Returns "" on success; sets `unsupported` when the file system cannot.
std::string dedupe_range(const DupesFile& kept, const DupesFile& dup, const char* dup_path, bool& unsupported) {
    Fd kf, df;
    if (auto e = open_checked(kept.first_path().data(), kept, kf); !e.empty()) return e;
    // FIDEDUPERANGE needs the destination open for writing (or owned by us).
    df.fd = ::open(dup_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (df.fd < 0) df.fd = open_read(dup_path, false);
    if (df.fd < 0) return fmt::format("cannot open '{}': {}", dup_path, std::strerror(errno));
    struct stat st {};
    if (::fstat(df.fd, &st) != 0 || !still_same(st, dup)) return fmt::format("'{}' changed since the scan", dup_path);
    alignas(file_dedupe_range) unsigned char raw[sizeof(file_dedupe_range) + sizeof(file_dedupe_range_info)] = {};
    auto* arg = reinterpret_cast<file_dedupe_range*>(raw);
    for (std::uint64_t off = 0; off < kept.size;) {
        const std::uint64_t len = std::min<std::uint64_t>(kept.size - off, std::uint64_t{16} << 20);
        std::memset(raw, 0, sizeof(raw));
        arg->src_offset = off;
        arg->src_length = len;
        arg->dest_count = 1;
        arg->info[0].dest_fd = df.fd;
        arg->info[0].dest_offset = off;
        if (::ioctl(kf.fd, FIDEDUPERANGE, arg) != 0) {
            const int err = errno;
            if (err == EOPNOTSUPP || err == ENOTTY || err == EINVAL || err == EXDEV || err == ENOSYS) unsupported = true;
            return fmt::format("FIDEDUPERANGE failed: {}", std::strerror(err));
        }
        if (arg->info[0].status == FILE_DEDUPE_RANGE_DIFFERS) return "contents differ now (kernel check)";
        if (arg->info[0].status < 0) {
            const int err = -arg->info[0].status;
            if (err == EOPNOTSUPP || err == EINVAL || err == EXDEV) unsupported = true;
            return fmt::format("FIDEDUPERANGE failed: {}", std::strerror(err));
        }
        if (arg->info[0].bytes_deduped == 0) return "FIDEDUPERANGE made no progress";
        off += arg->info[0].bytes_deduped;
    }
    return {};
}

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Removes temporaries of interrupted runs: their process is gone and the
// kept file still has another name (so nothing can be lost).
// (The names are in the result's StringArena: NUL-terminated.)
void clean_stale(std::span<const std::string_view> temps, const DupesOptions& opt) {
    for (const std::string_view t : temps) {
        const std::string_view name = t.substr(t.rfind('/') + 1);
        const long pid = std::strtol(name.data() + kTempPrefix.size(), nullptr, 10);
        struct stat st {};
        if (::lstat(t.data(), &st) != 0) continue;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1 && pid != ::getpid() && !process_alive(pid)) {
            if (::unlink(t.data()) == 0) continue;
        }
        if (opt.warning) opt.warning(fmt::format("temporary '{}' left in place (in use or the only name)", t));
    }
}

}  // namespace

std::vector<DupesStep> plan_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                         const DupesOptions& options) {
    std::vector<DupesStep> steps;
    if (action == DupesAction::report) return steps;
    if (options.follow_symlinks)
        throw OptionError("--follow-symlinks is for reports only: actions never act through symbolic links");
    // At most one step per grouped path (reserved: no copy while growing).
    std::size_t most = 0;
    for (std::size_t gi = 0; gi < result.group_count(); ++gi)
        for (const DupesFile& f : result.group(gi).files) most += f.paths.size();
    steps.reserve(most);
    for (std::size_t gi = 0; gi < result.group_count(); ++gi) {
        const DupesGroup g = result.group(gi);
        const std::size_t k = choose_kept(g.files, keep);
        for (std::size_t i = 0; i < g.files.size(); ++i) {
            if (i == k) continue;
            const DupesFile& dup = g.files[i];
            for (const std::string_view path : dup.paths) {
                DupesStep s;
                s.action = action;
                s.path = path;
                s.group = gi;
                s.kept_file = k;
                s.file = i;
                if (k >= g.files.size()) {
                    s.status = DupesStep::Status::skipped;
                    s.reason = "no path of the group matches the --keep pattern";
                } else {
                    s.kept = g.files[k].first_path();
                    if (action == DupesAction::hardlink && g.files[k].dev != dup.dev) {
                        s.status = DupesStep::Status::skipped;
                        s.reason = "different file system";
                    }
                }
                steps.push_back(std::move(s));
            }
        }
    }
    return steps;
}

void apply_dupes_plan(const DupesResult& result, std::span<DupesStep> steps, const DupesOptions& options) {
    if (options.follow_symlinks)
        throw OptionError("--follow-symlinks is for reports only: actions never act through symbolic links");
    clean_stale(result.stale_temporaries(), options);
    std::vector<std::byte> a, b;
    std::uint64_t done = 0;
    DupesGroup g;
    std::size_t loaded = SIZE_MAX;  // the group in `g`
    for (DupesStep& s : steps) {
        if (s.status != DupesStep::Status::planned) continue;
        if (s.group != loaded) {
            g = result.group(s.group);
            loaded = s.group;
        }
        const DupesFile& kept = g.files.at(s.kept_file);
        const DupesFile& dup = g.files.at(s.file);
        const char* const path = s.path.data();
        std::string why;
        if (s.action != DupesAction::reflink) why = verify_equal(kept, dup, path, a, b);
        if (why.empty()) {
            switch (s.action) {
                case DupesAction::hardlink: why = replace_with_link(kept, dup, path); break;
                case DupesAction::remove: {
                    struct stat ds {};
                    if (::lstat(path, &ds) != 0 || !still_same(ds, dup))
                        why = "changed right before the removal";
                    else if (::unlink(path) != 0)
                        why = fmt::format("unlink failed: {}", std::strerror(errno));
                    break;
                }
                case DupesAction::reflink: {
                    bool unsupported = false;
                    why = dedupe_range(kept, dup, path, unsupported);
                    if (unsupported)
                        throw IoError(fmt::format(
                            "reflink is not supported here: '{}' -> '{}': {} (the file system must support "
                            "FIDEDUPERANGE, e.g. Btrfs or XFS; use --action hardlink instead)",
                            path, kept.first_path(), why));
                    break;
                }
                case DupesAction::report: break;
            }
        }
        if (why.empty()) {
            s.status = DupesStep::Status::done;
        } else {
            s.status = DupesStep::Status::skipped;
            s.reason = why;
            if (options.warning) options.warning(fmt::format("'{}' not changed: {}", path, why));
        }
        if (options.progress && (++done & 63) == 0) {
            DupesProgress p;
            p.phase = "act";
            p.resolved = done;
            options.progress(p);
        }
    }
}

std::vector<DupesStep> apply_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                          bool dry_run, const DupesOptions& options) {
    std::vector<DupesStep> steps = plan_dupes_action(result, action, keep, options);
    if (!dry_run && action != DupesAction::report) apply_dupes_plan(result, steps, options);
    return steps;
}

}  // namespace cdc
