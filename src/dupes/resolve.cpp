// SPDX-License-Identifier: Apache-2.0
// cdc dupes: size groups, inode collapsing and the compare / hash resolver.
#include "internal.hpp"
#include "../io/open_files.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <memory>
#include <numeric>
#include <unistd.h>

namespace cdc {

using namespace dupes_detail;

DupesMode parse_dupes_mode(std::string_view name) { return parse_name(kDupesModeNames, name, "mode"); }

std::string_view to_string(DupesMode mode) noexcept { return name_of(kDupesModeNames, mode); }

namespace {

constexpr std::uint64_t kEdge = 4096;             // head and tail block
constexpr std::uint64_t kMinBlock = 4096;         // smallest lockstep block
constexpr std::uint64_t kMaxBlock = 256 << 10;    // largest lockstep block
constexpr std::uint64_t kFirstMiddle = 64 << 10;  // first middle block; doubles

// One inode among the candidates (of the size group being resolved).
struct Cand {
    const Entry* file = nullptr;  // its first path, and the identity of the walk
    std::uint32_t first = 0;           // index of that entry
    int fd = -1;
    bool bad = false;  // dropped after an error or a change
};

// The byte ranges of a file of `size` bytes, in resolution order: head,
// tail, middle. Never overlapping: every byte belongs to one segment.
struct Segment {
    std::uint64_t begin = 0, end = 0;
};
std::vector<Segment> segments_of(std::uint64_t size) {
    std::vector<Segment> s;
    s.push_back({0, std::min(size, kEdge)});
    if (size > kEdge) s.push_back({std::max(kEdge, size - kEdge), size});
    if (size > 2 * kEdge) s.push_back({kEdge, size - kEdge});
    return s;
}

// A class: candidates not told apart yet, and the next byte to look at.
struct Work {
    std::vector<Cand*> members;
    std::size_t seg = 0;
    std::uint64_t pos = 0;       // next offset inside segment `seg`
    std::uint64_t middle_block = kFirstMiddle;
};

std::size_t default_max_open() { return detail::open_files_budget(2, 512); }

class Resolver {
public:
    using GroupRecord = DupesResult::Data::GroupRecord;

    // Groups go to `groups`, as ranges of `files` (first entry of each file).
    Resolver(const DupesOptions& opt, DupesSummary& summary, std::vector<GroupRecord>& groups,
             std::vector<std::uint32_t>& files)
        : opt_(opt), sum_(summary),
          max_open_(opt.max_open_files ? opt.max_open_files : default_max_open()),
          budget_(std::max<std::size_t>(opt.memory_budget, 2 * kMaxBlock)), groups_(groups), files_(files) {}

    ~Resolver() = default;
    Resolver(const Resolver&) = delete;
    Resolver& operator=(const Resolver&) = delete;

    // Resolves one size group (distinct inodes, same size).
    void resolve(std::vector<Cand*> members) {
        segs_ = segments_of(members.front()->file->size);
        std::vector<Work> stack;
        stack.push_back({std::move(members), 0, segs_.empty() ? 0 : segs_[0].begin, kFirstMiddle});
        while (!stack.empty()) {
            Work w = std::move(stack.back());
            stack.pop_back();
            drop_bad(w.members);
            if (w.members.size() < 2) {
                finish_singles(w.members);
                continue;
            }
            if (w.seg >= segs_.size()) {
                emit(w.members);
                continue;
            }
            const bool hash = opt_.mode == DupesMode::hash ||
                              (opt_.mode == DupesMode::automatic && w.members.size() > max_open_) ||
                              w.members.size() > budget_ / kMinBlock;
            if (hash)
                hash_steps(std::move(w), stack);
            else
                compare_step(std::move(w), stack);
        }
    }

private:
    void warn(const std::string& msg) {
        if (opt_.warning) opt_.warning(msg);
    }

    void tick(std::uint64_t decided) {
        resolved_ += decided;
        if (opt_.progress && ++calls_ % 64 == 0) {
            DupesProgress p;
            p.phase = "resolve";
            p.candidates = sum_.candidates;
            p.resolved = resolved_;
            p.bytes_read = sum_.bytes_read;
            opt_.progress(p);
        }
    }

    void close_fd(Cand* c) {
        if (c->fd >= 0) {
            ::close(c->fd);
            c->fd = -1;
        }
    }

    void fail(Cand* c, const std::string& what) {
        warn(fmt::format("'{}': {} (left out)", c->file->path, what));
        ++sum_.skipped;
        c->bad = true;
        close_fd(c);
    }

    // Opens (or re-opens) a candidate and checks it is still the walked file.
    bool ensure_open(Cand* c) {
        if (c->fd >= 0) return true;
        const int fd = open_read(c->file->path, opt_.follow_symlinks);
        if (fd < 0) {
            fail(c, fmt::format("cannot open: {}", std::strerror(errno)));
            return false;
        }
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !same_identity(st, *c->file)) {
            ::close(fd);
            fail(c, "changed during the run");
            return false;
        }
        c->fd = fd;
        return true;
    }

    bool read_range(Cand* c, std::byte* buf, std::uint64_t off, std::size_t len) {
        if (!read_exact(c->fd, buf, len, off)) {
            fail(c, fmt::format("read error: {}", errno_text(errno)));
            return false;
        }
        sum_.bytes_read += len;
        return true;
    }

    void drop_bad(std::vector<Cand*>& m) {
        const auto before = m.size();
        std::erase_if(m, [](const Cand* c) { return c->bad; });
        if (m.size() != before) tick(before - m.size());
    }

    void finish_singles(std::vector<Cand*>& m) {
        for (Cand* c : m) close_fd(c);
        tick(m.size());
    }

    // Final identity check, then one group.
    void emit(std::vector<Cand*>& m) {
        for (Cand* c : m) {
            struct stat st {};
            const char* path = c->file->path;
            const int rc = c->fd >= 0 ? ::fstat(c->fd, &st) : opt_.follow_symlinks ? ::stat(path, &st) : ::lstat(path, &st);
            if (rc != 0 || !same_identity(st, *c->file))
                fail(c, "changed during the run");
            close_fd(c);
        }
        drop_bad(m);
        if (m.size() < 2) {
            finish_singles(m);
            return;
        }
        std::sort(m.begin(), m.end(),
                  [](const Cand* a, const Cand* b) { return std::strcmp(a->file->path, b->file->path) < 0; });
        groups_.push_back({m.front()->file->size, static_cast<std::uint32_t>(files_.size()),
                           static_cast<std::uint32_t>(m.size())});
        for (const Cand* c : m) files_.push_back(c->first);
        tick(m.size());
    }

    // The block buffer, at least `n` bytes. It grows to exactly `n` (a
    // plain resize could double the capacity, past the budget) and is shared
    // by comparison and hashing, which never run at once.
    std::byte* block_buffer(std::size_t n) {
        if (buf_.size() < n) {
            std::vector<std::byte>().swap(buf_);
            buf_.resize(n);
        }
        return buf_.data();
    }

    // One lockstep block of every member, then split by content.
    void compare_step(Work w, std::vector<Work>& stack) {
        const Segment seg = segs_[w.seg];
        const bool keep_open = w.members.size() <= max_open_;
        if (w.seg == 2 && keep_open && skip_holes(w)) {
            stack.push_back(std::move(w));
            return;
        }
        const std::size_t m = w.members.size();
        std::uint64_t len = seg.end - w.pos;
        const bool middle = w.seg == 2;
        if (middle) {
            const std::uint64_t cap = std::clamp<std::uint64_t>(budget_ / m, kMinBlock, kMaxBlock);
            len = std::min({len, cap, w.middle_block});
        }
        const auto n = static_cast<std::size_t>(len);
        std::byte* const base = block_buffer(m * n);
        std::vector<Cand*> ok;
        std::vector<const std::byte*> blocks;
        ok.reserve(m);
        for (std::size_t i = 0; i < m; ++i) {
            Cand* c = w.members[i];
            std::byte* b = base + ok.size() * n;
            if (!ensure_open(c)) continue;
            const bool good = read_range(c, b, w.pos, n);
            if (!keep_open) close_fd(c);
            if (!good) continue;
            ok.push_back(c);
            blocks.push_back(b);
        }
        tick(m - ok.size());  // (also keeps the progress line moving on big files)
        // Split by content: a short list of representatives, else a sort.
        std::vector<std::size_t> cls(ok.size());
        std::vector<std::size_t> reps;
        bool sorted = false;
        for (std::size_t i = 0; i < ok.size() && !sorted; ++i) {
            std::size_t r = 0;
            while (r < reps.size() && std::memcmp(blocks[reps[r]], blocks[i], n) != 0) ++r;
            if (r == reps.size()) {
                if (reps.size() == 16) {
                    sorted = true;
                    break;
                }
                reps.push_back(i);
            }
            cls[i] = r;
        }
        std::vector<std::vector<Cand*>> parts;
        if (!sorted) {
            parts.resize(reps.size());
            for (std::size_t i = 0; i < ok.size(); ++i) parts[cls[i]].push_back(ok[i]);
        } else {
            std::vector<std::size_t> idx(ok.size());
            std::iota(idx.begin(), idx.end(), std::size_t{0});
            std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
                return std::memcmp(blocks[a], blocks[b], n) < 0;
            });
            for (std::size_t k = 0; k < idx.size(); ++k) {
                if (k == 0 || std::memcmp(blocks[idx[k - 1]], blocks[idx[k]], n) != 0) parts.emplace_back();
                parts.back().push_back(ok[idx[k]]);
            }
        }
        std::uint64_t next = w.pos + len;
        std::size_t next_seg = w.seg;
        if (next >= seg.end) {
            ++next_seg;
            next = next_seg < segs_.size() ? segs_[next_seg].begin : 0;
        }
        const std::uint64_t grown = middle ? std::min<std::uint64_t>(w.middle_block * 2, kMaxBlock) : w.middle_block;
        // Pushed in reverse so that the first part is resolved first.
        for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
            if (it->size() < 2) {
                finish_singles(*it);
                continue;
            }
            stack.push_back({std::move(*it), next_seg, next, grown});
        }
    }

    // Sparse files: where no member has data (SEEK_DATA), every member reads
    // as zeros, so the range is equal without reading it. Returns true when
    // the class moved on (or lost members) and must be looked at again.
    bool skip_holes(Work& w) {
        const Segment seg = segs_[2];
        std::uint64_t data_at = seg.end;
        for (Cand* c : w.members) {
            if (!ensure_open(c)) return true;
            const off_t d = ::lseek(c->fd, static_cast<off_t>(w.pos), SEEK_DATA);
            if (d < 0 && errno != ENXIO) return false;  // no hole information: read
            const std::uint64_t at = d < 0 ? c->file->size : static_cast<std::uint64_t>(d);
            data_at = std::min(data_at, at);
            if (data_at <= w.pos) return false;
        }
        w.pos = data_at;
        if (w.pos >= seg.end) {
            w.seg = 3;
            w.pos = 0;
        }
        return true;
    }

    // Hashing from the class's current position: a partial hash over what is
    // left of the head and tail blocks, then a hash of the rest of the middle.
    void hash_steps(Work w, std::vector<Work>& stack) {
        for (Cand* c : w.members) close_fd(c);  // hashing needs one descriptor at a time
        std::vector<Segment> partial, rest;
        for (std::size_t s = w.seg; s < segs_.size(); ++s) {
            Segment r = segs_[s];
            if (s == w.seg) r.begin = w.pos;
            if (r.begin >= r.end) continue;
            (s < 2 ? partial : rest).push_back(r);
        }
        std::vector<std::vector<Cand*>> classes{std::move(w.members)};
        for (const auto* ranges : {&partial, &rest}) {
            if (ranges->empty()) continue;
            std::vector<std::vector<Cand*>> next;
            for (auto& cl : classes) split_by_hash(cl, *ranges, next);
            classes = std::move(next);
        }
        for (auto& cl : classes) stack.push_back({std::move(cl), segs_.size(), 0, kFirstMiddle});
    }

    void split_by_hash(std::vector<Cand*>& cl, const std::vector<Segment>& ranges,
                       std::vector<std::vector<Cand*>>& out) {
        if (cl.size() < 2) {
            finish_singles(cl);
            return;
        }
        // Hashing reuses the comparison's block buffer (never both at once).
        std::byte* const block = block_buffer(kMaxBlock);
        Hasher hasher(opt_.hash);
        std::vector<std::pair<Digest, Cand*>> keyed;
        keyed.reserve(cl.size());
        for (Cand* c : cl) {
            if (!ensure_open(c)) continue;
            ::posix_fadvise(c->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
            bool good = true;
            for (const Segment& r : ranges) {
                for (std::uint64_t off = r.begin; good && off < r.end;) {
                    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kMaxBlock, r.end - off));
                    good = read_range(c, block, off, n);
                    if (good) hasher.update({block, n});
                    off += n;
                    tick(0);
                }
            }
            const Digest d = hasher.finish();
            close_fd(c);
            if (good) keyed.emplace_back(d, c);
        }
        tick(cl.size() - keyed.size());
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
            return std::lexicographical_compare(a.first.bytes.begin(), a.first.bytes.end(), b.first.bytes.begin(),
                                                b.first.bytes.end());
        });
        for (std::size_t k = 0; k < keyed.size();) {
            std::size_t e = k + 1;
            while (e < keyed.size() && keyed[e].first == keyed[k].first) ++e;
            std::vector<Cand*> part;
            for (std::size_t i = k; i < e; ++i) part.push_back(keyed[i].second);
            if (part.size() < 2)
                finish_singles(part);
            else
                out.push_back(std::move(part));
            k = e;
        }
    }

    const DupesOptions& opt_;
    DupesSummary& sum_;
    std::size_t max_open_;
    std::size_t budget_;
    std::vector<Segment> segs_;
    std::vector<std::byte> buf_;
    std::vector<GroupRecord>& groups_;
    std::vector<std::uint32_t>& files_;
    std::uint64_t resolved_ = 0;
    std::uint64_t calls_ = 0;
};

}  // namespace

namespace dupes_detail {

std::size_t paths_of_inode(const Entries& entries, std::size_t first) noexcept {
    std::size_t end = first + 1;
    while (end < entries.size() && entries[end].dev == entries[first].dev && entries[end].ino == entries[first].ino)
        ++end;
    return end - first;
}

DupesFile file_at(const Entries& entries, std::size_t first) {
    const Entry& e = entries[first];
    DupesFile f;
    f.dev = e.dev;
    f.ino = e.ino;
    f.size = e.size;
    f.mtime_ns = e.mtime_ns;
    const std::size_t n = paths_of_inode(entries, first);
    f.paths.reserve(n);
    for (std::size_t i = first; i < first + n; ++i) f.paths.emplace_back(entries[i].path);
    return f;
}

}  // namespace dupes_detail

DupesResult::DupesResult(std::unique_ptr<Data> data) noexcept : data_(std::move(data)) {}
DupesResult::DupesResult(DupesResult&&) noexcept = default;
DupesResult& DupesResult::operator=(DupesResult&&) noexcept = default;
DupesResult::~DupesResult() = default;

std::size_t DupesResult::group_count() const noexcept { return data_->groups.size(); }

DupesGroup DupesResult::group(std::size_t i) const {
    const Data::GroupRecord& g = data_->groups.at(i);
    DupesGroup out;
    out.size = g.size;
    out.files.reserve(g.count);
    for (std::uint32_t k = g.first; k < g.first + g.count; ++k) out.files.push_back(file_at(data_->entries, data_->files[k]));
    return out;
}

std::size_t DupesResult::linked_count() const noexcept { return data_->linked.size(); }

DupesFile DupesResult::linked(std::size_t i) const { return file_at(data_->entries, data_->linked.at(i)); }

std::span<const std::string_view> DupesResult::stale_temporaries() const noexcept { return data_->stale_temporaries; }

DupesResult resolve_dupes(DupesScan scan_handle, const DupesOptions& options) {
    DupesScan::Data& scan = scan_handle.data();
    auto data = std::make_unique<DupesResult::Data>();
    DupesResult::Data& out = *data;
    DupesSummary sum;
    sum.files_scanned = scan.files_scanned;
    sum.skipped = scan.skipped;
    // The result holds the scan's paths; every view below points into them.
    out.roots = std::move(scan.roots);
    out.paths = std::move(scan.paths);
    out.stale_temporaries = std::move(scan.stale_temporaries);
    Entries& e = out.entries = std::move(scan.entries);
    if (e.size() > std::numeric_limits<std::uint32_t>::max())
        throw OptionError(fmt::format("{} files: more than cdc dupes handles in one run", e.size()));

    std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
        if (a.size != b.size) return a.size < b.size;
        if (a.dev != b.dev) return a.dev < b.dev;
        if (a.ino != b.ino) return a.ino < b.ino;
        return std::strcmp(a.path, b.path) < 0;
    });
    // Files are runs of paths of one inode (inode_at); size groups are runs
    // of files of one size. Kept: the linked files, and the entry range of
    // every size group with two files or more.
    struct SizeGroup {
        std::uint32_t begin, end, files;
    };
    std::vector<SizeGroup> size_groups;
    for (std::size_t i = 0; i < e.size();) {
        const std::size_t begin = i;
        std::uint32_t files = 0;
        do {
            const std::size_t paths = paths_of_inode(e, i);
            sum.bytes_scanned += e[i].size;
            if (paths > 1) {
                sum.linked_paths += paths - 1;
                out.linked.push_back(static_cast<std::uint32_t>(i));
            }
            ++files;
            i += paths;
        } while (i < e.size() && e[i].size == e[begin].size);
        if (files >= 2) {
            sum.candidates += files;
            size_groups.push_back({static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(i), files});
        }
    }
    // Reserved: a grouped file is a candidate, a group has two of them.
    out.files.reserve(sum.candidates);
    out.groups.reserve(sum.candidates / 2);
    Resolver r(options, sum, out.groups, out.files);
    // Large files first: they hold most of the waste and make progress honest.
    std::vector<Cand> cands;
    std::vector<Cand*> members;
    for (auto it = size_groups.rbegin(); it != size_groups.rend(); ++it) {
        cands.clear();
        cands.reserve(it->files);
        for (std::size_t i = it->begin; i < it->end; i += paths_of_inode(e, i))
            cands.push_back({&e[i], static_cast<std::uint32_t>(i)});
        members.clear();
        for (Cand& c : cands) members.push_back(&c);
        r.resolve(members);
    }
    auto& groups = out.groups;
    const auto& files = out.files;
    const auto first_path = [&](std::uint32_t file) { return e[file].path; };
    std::sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
        const std::uint64_t wa = a.size * (a.count - 1), wb = b.size * (b.count - 1);
        if (wa != wb) return wa > wb;
        if (a.size != b.size) return a.size > b.size;
        return std::strcmp(first_path(files[a.first]), first_path(files[b.first])) < 0;
    });
    std::sort(out.linked.begin(), out.linked.end(),
              [&](std::uint32_t a, std::uint32_t b) { return std::strcmp(first_path(a), first_path(b)) < 0; });
    for (const auto& g : groups) {
        ++sum.groups;
        sum.duplicate_files += g.count - 1;
        sum.wasted_bytes += g.size * (g.count - 1);
    }
    DupesResult res(std::move(data));
    res.summary = sum;
    return res;
}

DupesResult find_dupes(std::span<const std::string> roots, const DupesOptions& options) {
    return resolve_dupes(scan_dupes(roots, options), options);
}

}  // namespace cdc
