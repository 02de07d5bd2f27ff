// SPDX-License-Identifier: Apache-2.0
#include "put_inputs.hpp"

#include "cli_basics.hpp"

#include <cdc/error.hpp>
#include <cdc/store.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include <sys/stat.h>

namespace cdc::cli {

namespace {

/// The name of a file given by its path (no --name), made relative as tar
/// makes member names: the leading "/" and everything up to a last ".."
/// component dropped, "." and empty components too ("/srv/a" -> "srv/a",
/// "../f" -> "f", "./d//f" -> "d/f"). A tree restore writes such names
/// below its directory; the path as given might not be one.
std::string name_of_path(std::string_view path) {
    std::vector<std::string_view> parts;
    std::size_t at = 0;
    while (at <= path.size()) {
        std::size_t slash = path.find('/', at);
        if (slash == std::string_view::npos) slash = path.size();
        const std::string_view part = path.substr(at, slash - at);
        if (part == "..")
            parts.clear();
        else if (!part.empty() && part != ".")
            parts.push_back(part);
        at = slash + 1;
    }
    std::string name;
    for (const auto part : parts) {
        if (!name.empty()) name.push_back('/');
        name.append(part);
    }
    return name;
}

/// The real path of `p` (links resolved), if it exists.
std::optional<std::string> real_path(const std::string& p) {
    const std::unique_ptr<char, decltype(&std::free)> r(::realpath(p.c_str(), nullptr), &std::free);
    if (!r) return std::nullopt;
    return std::string(r.get());
}

/// Whether `real` (a real path) is the store at `store_real` or inside it.
bool inside(const std::string& real, const std::string& store_real) {
    return real == store_real || (real.size() > store_real.size() && real.starts_with(store_real) &&
                                  (store_real == "/" || real[store_real.size()] == '/'));
}

// Names the files that cdc::walk finds under one PATH: a file by the path
// as given (or NAME), a tree's files by their paths inside it (under NAME/
// when given). Every path is taken, hard links included: each is a name a
// user may get back.
class PutCollector final : public WalkVisitor {
public:
    /// `store_real`: the real path of the store put into (empty: none);
    /// with `follow_symlinks`, a file a link leads into it is skipped.
    PutCollector(PutInputs& in, std::string tree_root, const std::string& name, const std::string& store_real,
                 bool follow_symlinks) noexcept
        : in_(in), tree_root_(std::move(tree_root)), name_(name), store_real_(store_real), follow_(follow_symlinks) {}

    void file(const std::string& path, const struct stat& st) override {
        if (follow_ && !store_real_.empty() && !tree_root_.empty())
            if (const auto real = real_path(path); real && inside(*real, store_real_)) {
                in_.warnings.push_back({path, "the store itself: skipped"});
                return;
            }
        const auto size = static_cast<std::uint64_t>(st.st_size);
        const std::string name = name_of(path);
        // (A tree's own names are plain components; one may be too long.)
        if (const std::string why = store::name_problem(name); !why.empty()) {
            in_.errors.push_back({path, fmt::format("cannot be stored as '{}': {}", name, why)});
            return;
        }
        if (tree_root_.empty() && name_.empty() && name != path)
            in_.warnings.push_back({path, fmt::format("stored as '{}' (names are relative)", name)});
        in_.files.push_back({path, name, size, !tree_root_.empty()});
        in_.bytes += size;
    }

    // "-", a FIFO or /dev/stdin named on the command line: read as a stream.
    void stream(const std::string& path) override {
        if (path == "-" && name_.empty()) throw UsageError("standard input (-) needs --name");
        const std::string name = name_of(path);
        if (const std::string why = store::name_problem(name); !why.empty())
            throw UsageError(fmt::format("'{}' cannot be stored as '{}': {} (use --name)", path, name, why));
        in_.files.push_back({path, name, 0, false, true});
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

    void excluded(const std::string&, bool, WalkExclusion) override { ++in_.excluded; }

private:
    std::string name_of(const std::string& path) const {
        if (tree_root_.empty()) return name_.empty() ? name_of_path(path) : name_;
        std::string rel = path.substr(std::min(path.size(), tree_root_.size()));
        return name_.empty() ? rel : std::string(name_).append("/").append(rel);
    }

    PutInputs& in_;
    std::string tree_root_;  ///< "dir/" for a tree, empty for a file or stream
    const std::string& name_;  ///< --name (a tree's prefix without trailing slashes)
    const std::string& store_real_;
    bool follow_;
};

}  // namespace

PutInputs collect_put_inputs(const std::vector<std::string>& paths, const std::string& name, const WalkOptions& walk_options,
                             const std::string& store_dir, bool capture_trees) {
    if (!name.empty() && paths.size() > 1)
        throw UsageError("--name applies to one PATH (a file, a tree: its prefix, or -)");
    if (std::count(paths.begin(), paths.end(), "-") > 1)
        throw UsageError("'-' (standard input) may be given only once");
    PutInputs in;
    const bool follow_symlinks = walk_options.follow_symlinks;
    WalkOptions wo = walk_options;
    if (!store_dir.empty()) wo.exclude_dirs.push_back(store_dir);
    const std::string store_real = store_dir.empty() ? std::string() : real_path(store_dir).value_or(std::string());
    for (const auto& p : paths) {
        struct stat st {};
        std::string tree_root;
        const bool tree = p != "-" && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        if (tree) {
            // cdc::walk reports a root given with trailing slashes without them.
            tree_root = p;
            while (tree_root.size() > 1 && tree_root.back() == '/') tree_root.pop_back();
            if (tree_root.back() != '/') tree_root.push_back('/');
        }
        // A store's own files are not data to put into it, by any path.
        if (!store_real.empty() && p != "-")
            if (const auto real = real_path(p); real && inside(*real, store_real))
                throw UsageError(fmt::format("'{}' is the store '{}' or inside it: a store's own files are never put "
                                             "into it",
                                             p, store_dir));
        // --name: a tree's prefix may end with "/"; then the name rule.
        in.name = name;
        if (tree)
            while (!in.name.empty() && in.name.back() == '/') in.name.pop_back();
        if (!name.empty())
            if (const std::string why = store::name_problem(in.name); !why.empty())
                throw UsageError(fmt::format("name refused: {} (--name '{}')", why, name));
        if (tree && capture_trees && !follow_symlinks) {
            std::string root = tree_root.size() > 1 ? tree_root.substr(0, tree_root.size() - 1) : tree_root;
            struct stat lst {};
            if (::lstat(root.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) root = real_path(root).value_or(root);
            in.trees.push_back({std::move(root), in.name});
            continue;
        }
        PutCollector collector(in, std::move(tree_root), in.name, store_real, follow_symlinks);
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
