#include "put_inputs.hpp"

#include "cli_basics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <sys/stat.h>

namespace cdc::cli {

PutInputs collect_put_inputs(const std::vector<std::string>& paths, const std::string& name, bool follow_symlinks) {
    if (!name.empty() && paths.size() > 1)
        throw UsageError("--name applies to one PATH (a file, a tree: its prefix, or -)");
    if (std::count(paths.begin(), paths.end(), "-") > 1)
        throw UsageError("'-' (standard input) may be given only once");
    PutInputs in;
    WalkOptions wo;
    wo.follow_symlinks = follow_symlinks;
    for (const auto& p : paths) {
        if (p == "-") {
            if (name.empty()) throw UsageError("standard input (-) needs --name");
            in.files.push_back({"-", name, 0});
            continue;
        }
        struct stat st {};
        if (::stat(p.c_str(), &st) != 0) throw UsageError(fmt::format("cannot read '{}': {}", p, std::strerror(errno)));
        if (!S_ISDIR(st.st_mode)) {
            in.files.push_back({p, name.empty() ? p : name, static_cast<std::uint64_t>(st.st_size)});
            in.bytes += static_cast<std::uint64_t>(st.st_size);
            continue;
        }
        WalkResult w = walk_inputs({p}, wo);
        std::string root = p;
        if (root.back() != '/') root.push_back('/');
        for (auto& f : w.files) {
            std::string rel = f.path.substr(std::min(f.path.size(), root.size()));
            std::string n = name.empty() ? rel : std::string(name).append("/").append(rel);
            in.files.push_back({std::move(f.path), std::move(n), f.size});
        }
        in.bytes += w.total_bytes;
        for (auto& e : w.errors) in.errors.push_back(std::move(e));
        for (auto& e : w.warnings) in.warnings.push_back(std::move(e));
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
