// cdc store put: files, trees and stdin into a store. Names: --name, else a
// file's path as given, a tree's files by their path inside the tree (under
// --name/ when given).
#include "analyze_cli.hpp"
#include "store_cli.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

struct PutArgs {
    std::string dir;
    std::vector<std::string> paths;
    std::string name;
    std::string key_file;
    bool json = false;
    bool quiet = false;
    bool follow_symlinks = false;
};

struct Input {
    std::string path;  ///< "-" for stdin
    std::string name;
    std::uint64_t size = 0;
};

struct Inputs {
    std::vector<Input> files;
    std::vector<InputIssue> errors;
    std::vector<InputIssue> warnings;
    std::uint64_t bytes = 0;
};

// Names the files that cdc::walk finds under one PATH: a file by the path
// as given (or --name), a tree's files by their paths inside it (under
// --name/ when given). Every path is stored, hard links included: each is a
// name a user may get back.
class PutCollector final : public WalkVisitor {
public:
    PutCollector(Inputs& in, std::string tree_root, std::string name) noexcept
        : in_(in), tree_root_(std::move(tree_root)), name_(std::move(name)) {}

    void file(const std::string& path, const struct stat& st) override {
        const auto size = static_cast<std::uint64_t>(st.st_size);
        in_.files.push_back({path, name_of(path), size});
        in_.bytes += size;
    }

    // A FIFO or /dev/stdin named on the command line: read as a stream.
    void stream(const std::string& path) override {
        if (path == "-" && name_.empty()) throw UsageError("standard input (-) needs --name");
        in_.files.push_back({path, name_of(path), 0});
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
        }
    }

private:
    std::string name_of(const std::string& path) const {
        if (tree_root_.empty()) return name_.empty() ? path : name_;
        std::string rel = path.substr(std::min(path.size(), tree_root_.size()));
        return name_.empty() ? rel : std::string(name_).append("/").append(rel);
    }

    Inputs& in_;
    std::string tree_root_;  ///< "dir/" for a tree, empty for a file or stream
    std::string name_;
};

Inputs collect_inputs(const PutArgs& a) {
    if (!a.name.empty() && a.paths.size() > 1)
        throw UsageError("--name applies to one PATH (a file, a tree: its prefix, or -)");
    check_paths(a.paths);
    Inputs in;
    WalkOptions wo;
    wo.follow_symlinks = a.follow_symlinks;
    for (const auto& p : a.paths) {
        struct stat st {};
        std::string tree_root;
        if (p != "-" && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            // cdc::walk reports a root given with trailing slashes without them.
            tree_root = p;
            while (tree_root.size() > 1 && tree_root.back() == '/') tree_root.pop_back();
            if (tree_root.back() != '/') tree_root.push_back('/');
        }
        PutCollector collector(in, std::move(tree_root), a.name);
        try {
            walk(std::span(&p, 1), wo, collector);
        } catch (const IoError& e) {
            throw UsageError(e.what());
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

std::int64_t mtime_ns(const struct stat& st) {
    return std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

int run_put(const PutArgs& a) {
    Inputs in = collect_inputs(a);
    store::Store s = open_store(a.dir, a.key_file);
    store::Writer w(s);
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    const auto t0 = std::chrono::steady_clock::now();
    store::PutStats total;
    nlohmann::json files = nlohmann::json::array();
    std::vector<InputIssue> errors = std::move(in.errors);
    std::uint64_t done_files = 0;
    for (const auto& f : in.files) {
        const bool is_stdin = f.path == "-";
        int fd = 0;
        store::FileMeta meta;
        meta.name = f.name;
        struct stat st {};
        if (!is_stdin) {
            fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) {
                errors.push_back({f.path, fmt::format("cannot open: {}", std::strerror(errno))});
                continue;
            }
        }
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            meta.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
            meta.mtime_ns = mtime_ns(st);
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        } else {
            meta.mode = 0644;
            meta.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
        }
        const std::uint64_t base = total.bytes;
        const std::uint64_t base_new = total.new_bytes;
        store::ProgressFn progress;
        if (line.enabled())
            progress = [&](const store::Progress& p) {
                const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                const std::uint64_t doneb = base + p.bytes_done;
                line.draw(fmt::format("put: {} / {}  {:.0f} MB/s  new {}  {}/{} files", mb(doneb), mb(in.bytes),
                                      secs > 0 ? static_cast<double>(doneb) / secs / 1e6 : 0.0,
                                      mb(base_new + p.new_bytes), done_files, in.files.size()));
            };
        try {
            const auto r = w.put_file(meta, FileSource(fd, is_stdin ? std::string("stdin") : f.path), progress);
            total.files += r.files;
            total.bytes += r.bytes;
            total.chunks += r.chunks;
            total.new_chunks += r.new_chunks;
            total.new_bytes += r.new_bytes;
            if (a.json)
                files.push_back({{"name", f.name},
                                 {"path", f.path},
                                 {"size", r.bytes},
                                 {"chunks", r.chunks},
                                 {"new_chunks", r.new_chunks},
                                 {"new_bytes", r.new_bytes}});
        } catch (const IoError& e) {
            errors.push_back({f.path, e.what()});
        }
        if (!is_stdin) ::close(fd);
        ++done_files;
    }
    w.commit();
    total.stored_bytes = w.stats().stored_bytes;
    line.clear();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& e : errors) fmt::print(stderr, "cdc: error: {}: {} (skipped)\n", e.path, e.message);
    if (!a.quiet)
        for (const auto& wn : in.warnings) fmt::print(stderr, "cdc: warning: {}: {}\n", wn.path, wn.message);
    if (a.json) {
        nlohmann::json j = {{"files", files},
                            {"file_count", total.files},
                            {"bytes", total.bytes},
                            {"chunks", total.chunks},
                            {"new_chunks", total.new_chunks},
                            {"new_bytes", total.new_bytes},
                            {"stored_bytes", total.stored_bytes},
                            {"seconds", secs},
                            {"errors", issues_json(errors)}};
        fmt::print("{}\n", j.dump());
    } else {
        fmt::print("put {} file(s): {} read, {} new, {} stored after compression; {} chunks ({} new) in {:.2f} s "
                   "({:.0f} MB/s)\n",
                   total.files, mb(total.bytes), mb(total.new_bytes), mb(total.stored_bytes), total.chunks,
                   total.new_chunks, secs, secs > 0 ? static_cast<double>(total.bytes) / secs / 1e6 : 0.0);
    }
    finish_stdout();
    return errors.empty() ? kExitOk : kExitPartial;
}

}  // namespace

void add_store_put(CLI::App& st, int& exit_code) {
    auto a = std::make_shared<PutArgs>();
    auto* c = st.add_subcommand("put", "store files, directory trees (recursively) or - (stdin)");
    c->add_option("DIR", a->dir, "the store's directory")->required();
    c->add_option("PATH", a->paths, "files, directories or - for standard input")->required();
    c->add_option("--name", a->name,
                  "the stored name (one PATH; for a tree, the prefix of its files' names; required for -)");
    c->add_option("--key-file", a->key_file, "the key of a keyed store");
    c->add_flag("--follow-symlinks", a->follow_symlinks, "follow symbolic links inside directories");
    c->add_flag("--json", a->json,
                "one JSON object: {files: [{name, path, size, chunks, new_chunks, new_bytes}], bytes, "
                "new_bytes, stored_bytes, ..., errors}");
    c->add_flag("-q,--quiet", a->quiet, "no progress line, no warnings");
    c->footer("Without --name, a file is stored under its path as given, a tree's files under their paths inside it. "
              "A name already in the store is replaced. Files are committed in batches: an interrupted put keeps "
              "what was committed and leaves unreferenced data that gc reclaims. Exit code 3 if some inputs were "
              "skipped after errors.");
    c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_put(*a); }); });
}

}  // namespace cdc::cli
