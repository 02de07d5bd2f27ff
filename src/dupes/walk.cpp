// SPDX-License-Identifier: Apache-2.0
// cdc dupes: the tree walk (cdc::walk, with the finder's rules: min_size,
// its own temporaries, warnings for what cannot be read).
#include "internal.hpp"

#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

namespace cdc {

using namespace dupes_detail;

std::string_view StringArena::store(std::string_view s) {
    const std::size_t need = s.size() + 1;
    char* at;
    if (need > kChunkSize) {
        // A block of its own; the current chunk keeps its free space.
        blocks_.push_back(std::make_unique_for_overwrite<char[]>(need));
        capacity_ += need;
        at = blocks_.back().get();
    } else {
        if (need > left_) {
            blocks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkSize));
            capacity_ += kChunkSize;
            next_ = blocks_.back().get();
            left_ = kChunkSize;
        }
        at = next_;
        next_ += need;
        left_ -= need;
    }
    std::memcpy(at, s.data(), s.size());
    at[s.size()] = '\0';
    return {at, s.size()};
}

bool is_dupes_temporary(std::string_view name) noexcept { return name.starts_with(kTempPrefix); }

namespace {

// The duplicate finder's side of the one walker (cdc/walk.hpp). Its rules on
// top of walk's: files below min_size are left out; the finder's own
// temporaries (.cdc-dupes-tmp.*) are listed apart, never merged; what cannot
// be read is a warning and counts as skipped; dangling links (when
// following), loops, overlaps, other file systems, special files and links
// not followed are silently not files to merge.
class DupesCollector final : public WalkVisitor {
public:
    DupesCollector(const DupesOptions& opt, DupesScan::Data& scan) : opt_(opt), scan_(scan) {}

    void file(const std::string& path, const struct stat& st) override {
        if (temporary(path)) return;
        ++scan_.files_scanned;
        if (opt_.progress && (scan_.files_scanned & 1023) == 0) {
            DupesProgress p;
            p.phase = "walk";
            p.files = scan_.files_scanned;
            opt_.progress(p);
        }
        if (static_cast<std::uint64_t>(st.st_size) < opt_.min_size) return;
        Entry e;
        e.path = scan_.paths.store(path).data();
        e.dev = static_cast<std::uint64_t>(st.st_dev);
        e.ino = static_cast<std::uint64_t>(st.st_ino);
        e.size = static_cast<std::uint64_t>(st.st_size);
        e.mtime_ns = mtime_ns(st);
        scan_.entries.push_back(e);
    }

    // A root that is neither a file nor a directory ("-", a FIFO): nothing
    // to merge; a usage error.
    void stream(const std::string& path) override {
        throw OptionError(fmt::format("'{}' is neither a regular file nor a directory", path));
    }

    void skipped(const std::string& path, WalkSkip why, std::string_view message) override {
        if (temporary(path) || why != WalkSkip::error) return;
        ++scan_.skipped;
        if (opt_.warning) opt_.warning(fmt::format("'{}': {} (skipped)", path, message));
    }

private:
    // A temporary of an interrupted run (whatever its type): listed, not walked.
    bool temporary(const std::string& path) {
        const auto slash = path.rfind('/');
        const std::string_view name =
            slash == std::string::npos ? std::string_view(path) : std::string_view(path).substr(slash + 1);
        if (!is_dupes_temporary(name)) return false;
        scan_.stale_temporaries.push_back(scan_.paths.store(path));
        return true;
    }

    const DupesOptions& opt_;
    DupesScan::Data& scan_;
};

std::string trim_slashes(std::string p) {
    while (p.size() > 1 && p.ends_with('/')) p.pop_back();
    return p;
}

}  // namespace

DupesScan::DupesScan(std::unique_ptr<Data> data) noexcept : data_(std::move(data)) {}
DupesScan::DupesScan(DupesScan&&) noexcept = default;
DupesScan& DupesScan::operator=(DupesScan&&) noexcept = default;
DupesScan::~DupesScan() = default;
std::size_t DupesScan::file_count() const noexcept { return data_ ? data_->entries.size() : 0; }

DupesScan scan_dupes(std::span<const std::string> roots, const DupesOptions& options) {
    auto data = std::make_unique<DupesScan::Data>();
    DupesScan::Data& scan = *data;
    for (const auto& given : roots) scan.roots.push_back(trim_slashes(given));
    WalkOptions walk_options;
    walk_options.follow_symlinks = options.follow_symlinks;
    walk_options.one_file_system = options.one_file_system;
    walk_options.exclude = options.exclude;
    DupesCollector collector(options, scan);
    try {
        walk(roots, walk_options, collector);
    } catch (const IoError& e) {
        throw OptionError(e.what());  // a root that cannot be read: a usage error
    }
    // The same path given twice (overlapping roots) is one path. (strcmp
    // orders as std::string does: by unsigned bytes, a prefix first.)
    std::sort(scan.entries.begin(), scan.entries.end(),
              [](const Entry& a, const Entry& b) { return std::strcmp(a.path, b.path) < 0; });
    scan.entries.erase(std::unique(scan.entries.begin(), scan.entries.end(),
                                   [](const Entry& a, const Entry& b) { return std::strcmp(a.path, b.path) == 0; }),
                       scan.entries.end());
    std::sort(scan.stale_temporaries.begin(), scan.stale_temporaries.end());
    return DupesScan(std::move(data));
}

}  // namespace cdc
