#include "put_inputs.hpp"

#include "cli_basics.hpp"

#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <span>

#include <sys/stat.h>

namespace cdc::cli {

namespace {

// Names the files that cdc::walk finds under one PATH: a file by the path
// as given (or NAME), a tree's files by their paths inside it (under NAME/
// when given). Every path is taken, hard links included: each is a name a
// user may get back.
class PutCollector final : public WalkVisitor {
public:
    PutCollector(PutInputs& in, std::string tree_root, const std::string& name) noexcept
        : in_(in), tree_root_(std::move(tree_root)), name_(name) {}

    void file(const std::string& path, const struct stat& st) override {
        const auto size = static_cast<std::uint64_t>(st.st_size);
        in_.files.push_back({path, name_of(path), size, !tree_root_.empty()});
        in_.bytes += size;
    }

    // "-", a FIFO or /dev/stdin named on the command line: read as a stream.
    void stream(const std::string& path) override {
        if (path == "-" && name_.empty()) throw UsageError("standard input (-) needs --name");
        in_.files.push_back({path, name_of(path), 0, false, true});
    }

    void skipped(const std::string& path, WalkSkip why, std::string_view message) override {
        switch (why) {
            case WalkSkip::symlink:  // not followed without --follow-symlinks, as in analyze
            case WalkSkip::overlap: break;
            case WalkSkip::error:
            case WalkSkip::dangling: in_.errors.push_back({path, std::string(message)}); break;
            case WalkSkip::special:
            case WalkSkip::loop:
            case WalkSkip::other_fs: in_.warnings.push_back({path, fmt::format("{} skipped", message)}); break;
            case WalkSkip::excluded: in_.warnings.push_back({path, "the store itself: skipped"}); break;
        }
    }

private:
    std::string name_of(const std::string& path) const {
        if (tree_root_.empty()) return name_.empty() ? path : name_;
        std::string rel = path.substr(std::min(path.size(), tree_root_.size()));
        return name_.empty() ? rel : std::string(name_).append("/").append(rel);
    }

    PutInputs& in_;
    std::string tree_root_;  ///< "dir/" for a tree, empty for a file or stream
    const std::string& name_;
};

}  // namespace

PutInputs collect_put_inputs(const std::vector<std::string>& paths, const std::string& name, bool follow_symlinks,
                             const std::string& store_dir) {
    if (!name.empty() && paths.size() > 1)
        throw UsageError("--name applies to one PATH (a file, a tree: its prefix, or -)");
    if (std::count(paths.begin(), paths.end(), "-") > 1)
        throw UsageError("'-' (standard input) may be given only once");
    PutInputs in;
    WalkOptions wo;
    wo.follow_symlinks = follow_symlinks;
    if (!store_dir.empty()) wo.exclude_dirs.push_back(store_dir);
    for (const auto& p : paths) {
        struct stat st {};
        std::string tree_root;
        if (p != "-" && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            // cdc::walk reports a root given with trailing slashes without them.
            tree_root = p;
            while (tree_root.size() > 1 && tree_root.back() == '/') tree_root.pop_back();
            if (tree_root.back() != '/') tree_root.push_back('/');
        }
        PutCollector collector(in, std::move(tree_root), name);
        try {
            walk(std::span(&p, 1), wo, collector);
        } catch (const IoError& e) {
            throw UsageError(e.what());  // a top-level path that cannot be read
        }
    }
    std::map<std::string, const std::string*> seen;
    for (const auto& f : in.files) {
        const auto [it, fresh] = seen.emplace(f.name, &f.path);
        if (!fresh)
            throw UsageError(fmt::format("'{}' and '{}' would both be stored as '{}' (use separate puts or --name)",
                                         *it->second, f.path, f.name));
    }
    return in;
}

}  // namespace cdc::cli
