// SPDX-License-Identifier: Apache-2.0
// cdc store put: files, trees and stdin into a store. Names: --name, else a
// file's path as given, a tree's files by their path inside the tree (under
// --name/ when given).
#include "corpus_options.hpp"
#include "put_inputs.hpp"
#include "cmd_store.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <algorithm>
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
    WalkArgs walk;
};

std::int64_t mtime_ns(const struct stat& st) {
    return std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

/// The metadata of the directories of a tree input, from each file's path
/// up to the tree's root (the name given, or the snapshot's root).
std::vector<store::PutDir> tree_dirs(const PutInputs& in) {
    std::map<std::string, store::PutDir> dirs;
    for (const PutInput& f : in.files) {
        if (!f.inside_tree) continue;
        std::string name = f.name, path = f.path;
        for (;;) {
            const auto ns = name.rfind('/');
            const auto ps = path.rfind('/');
            if (ns == std::string::npos || ps == std::string::npos) break;
            name.resize(ns);
            path.resize(ps == 0 ? 1 : ps);
            if (dirs.count(name)) break;
            struct stat st {};
            if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) break;
            dirs[name] = {name, static_cast<std::uint32_t>(st.st_mode & 07777), mtime_ns(st), st.st_uid, st.st_gid};
            if (name == in.name) break;
        }
    }
    std::vector<store::PutDir> v;
    for (auto& [n, d] : dirs) v.push_back(std::move(d));
    return v;
}

int run_put(const PutArgs& a) {
    WalkOptions walk;
    walk.follow_symlinks = a.follow_symlinks;
    walk.one_file_system = a.walk.one_file_system;
    walk.exclude = walk_excludes(a.walk);
    // Trees are captured by the store as a backup captures them (every
    // file type and its metadata); with --follow-symlinks they are walked
    // here, links followed, and only regular files are kept.
    PutInputs in = collect_put_inputs(a.paths, a.name, walk, a.dir, true);
    store::Store s = open_store(a.dir, a.key_file);
    store::require_snapshot_format(s);
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    const auto t0 = std::chrono::steady_clock::now();
    store::PutStats total;
    nlohmann::json files = nlohmann::json::array();
    std::vector<InputIssue> errors = std::move(in.errors);
    // Each input opened when its turn comes, or ahead of it on a pool thread
    // (a small file: read, cut and hashed while the ones before it are
    // stored); closed once it is done.
    std::vector<int> fds(in.files.size(), -1);
    store::PutSnapshotOptions opts;
    opts.files.resize(in.files.size());
    opts.dirs = tree_dirs(in);
    bool whole_tree = !in.trees.empty() && in.name.empty();
    for (const auto& f : in.files) whole_tree = whole_tree || f.inside_tree;
    for (const auto& t : in.trees) opts.trees.push_back({t.name, t.path});
    opts.exclude = walk.exclude;
    opts.one_file_system = walk.one_file_system;
    if (struct stat sst {}; ::stat(a.dir.c_str(), &sst) == 0) opts.never_enter.emplace(sst.st_dev, sst.st_ino);
    if (!in.name.empty())
        opts.names.push_back(in.name);
    else {
        if (whole_tree) opts.names.emplace_back();
        for (const auto& f : in.files)
            if (!f.inside_tree) opts.names.push_back(f.name);
    }
    for (std::size_t i = 0; i < in.files.size(); ++i) {
        const PutInput& f = in.files[i];
        store::PutFile& pf = opts.files[i];
        pf.path = f.name;
        if (!f.stream) pf.input.size_hint = f.size;
        pf.input.open = [&, i](store::FileMeta& meta) {
            const PutInput& file = in.files[i];
            meta.mode = 0644;
            meta.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
            if (file.path == "-") return FileSource(STDIN_FILENO, "stdin");
            struct stat st {};
            const int fd = open_walked_file(file.path, file.inside_tree, a.follow_symlinks, &st);  // IoError: skipped
            fds[i] = fd;
            if (!S_ISREG(st.st_mode)) return FileSource(fd, file.path);  // a FIFO named: a stream
            meta.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
            meta.mtime_ns = mtime_ns(st);
            opts.files[i].uid = st.st_uid;
            opts.files[i].gid = st.st_gid;
            if (st.st_size > (std::int64_t{4} << 20)) ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);  // (a read-ahead hint for what spans reads)
            // A file changed while it is read is skipped, not stored torn.
            return Source::reader(std::make_unique<SteadyFileReader>(fd, st, file.path));
        };
    }
    auto close_input = [&](std::size_t i) {
        if (fds[i] >= 0) ::close(std::exchange(fds[i], -1));
    };
    std::uint64_t done_files = 0;
    store::ProgressFn progress;
    if (line.enabled())
        progress = [&](const store::Progress& p) {
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const std::uint64_t doneb = total.bytes + p.bytes_done;
            line.draw(fmt::format("put: {} / {}  {:.0f} MB/s  new {}  {}/{} files", mb(doneb),
                                  mb(std::max(in.bytes, p.bytes_total)),
                                  secs > 0 ? static_cast<double>(doneb) / secs / 1e6 : 0.0,
                                  mb(total.new_bytes + p.new_bytes), done_files, std::max(in.files.size(), p.files_total)));
        };
    auto add = [&](const std::string& name, const std::string& path, const store::PutStats& r) {
        total.files += r.files;
        total.bytes += r.bytes;
        total.chunks += r.chunks;
        total.new_chunks += r.new_chunks;
        total.new_bytes += r.new_bytes;
        total.unchanged_files += r.unchanged_files;
        total.identical_files += r.identical_files;
        if (a.json) {
            nlohmann::json j = {{"size", r.bytes},
                                {"chunks", r.chunks},
                                {"new_chunks", r.new_chunks},
                                {"new_bytes", r.new_bytes},
                                {"unchanged", r.unchanged_files != 0},
                                {"identical", r.identical_files != 0}};
            tools::put_name(j, "name", name);  // "name_bytes" / "path_bytes" when not UTF-8
            tools::put_name(j, "path", path);
            files.push_back(std::move(j));
        }
    };
    auto done = [&](std::size_t i, const store::PutStats& r, const std::exception_ptr& io_error) {
        close_input(i);
        ++done_files;
        const PutInput& f = in.files[i];
        if (io_error) {
            try {
                std::rethrow_exception(io_error);
            } catch (const IoError& e) {
                errors.push_back({f.path, e.what()});
            }
            return;
        }
        add(f.name, f.path, r);
    };
    opts.done = done;
    opts.tree_file_done = [&](const std::string& path, const store::PutStats& r) {
        ++done_files;
        std::string name = path;
        for (const auto& t : in.trees)
            if (path.size() > t.path.size() && path.starts_with(t.path) && (t.path == "/" || path[t.path.size()] == '/')) {
                const std::string rel = path.substr(t.path.size() + (t.path == "/" ? 0 : 1));
                name = t.name.empty() ? rel : t.name + "/" + rel;
                break;
            }
        add(name, path, r);
    };
    opts.progress = progress;
    store::PutSnapshotResult put;
    try {
        put = store::put_snapshot(s, opts);
    } catch (...) {
        for (std::size_t i = 0; i < fds.size(); ++i) close_input(i);
        throw;
    }
    for (const auto& i : put.tree_skipped) errors.push_back({i.path, i.what});
    for (const auto& w : put.result.warnings) in.warnings.push_back({w.path, w.what});
    total.stored_bytes = put.stats.stored_bytes;
    total.raced_chunks = put.stats.raced_chunks;
    total.raced_bytes = put.stats.raced_bytes;
    line.clear();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& e : errors) print_error(fmt::format("{}: {} (skipped)", e.path, e.message));
    if (!a.quiet)
        for (const auto& wn : in.warnings) print_warning(fmt::format("{}: {}", wn.path, wn.message));
    if (a.json) {
        nlohmann::json j = {{"snapshot", put.result.snapshot.id},
                            {"files", files},
                            {"file_count", total.files},
                            {"bytes", total.bytes},
                            {"chunks", total.chunks},
                            {"new_chunks", total.new_chunks},
                            {"new_bytes", total.new_bytes},
                            {"stored_bytes", total.stored_bytes},
                            {"unchanged_files", total.unchanged_files},
                            {"identical_files", total.identical_files},
                            {"raced_chunks", total.raced_chunks},
                            {"raced_bytes", total.raced_bytes},
                            {"seconds", secs},
                            {"excluded", in.excluded + put.result.excluded},
                            {"skipped_unchanged", put.result.snapshot.totals.skipped_unchanged},
                            {"dirs", put.result.snapshot.totals.dirs},
                            {"others", put.result.snapshot.totals.others},
                            {"skipped", issues_json(errors)},
                            {"errors", issues_json(errors)}};
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        const auto& t = put.result.snapshot.totals;
        fmt::print("put {} file(s): {} read, {} new, {} stored after compression; {} chunks ({} new) in {:.2f} s "
                   "({:.0f} MB/s); {} dir(s), {} other(s) (links, special files); {} unchanged file(s) not read; "
                   "snapshot {}\n",
                   t.files, mb(total.bytes), mb(total.new_bytes), mb(total.stored_bytes), total.chunks,
                   total.new_chunks, secs, secs > 0 ? static_cast<double>(total.bytes) / secs / 1e6 : 0.0, t.dirs,
                   t.others, t.skipped_unchanged, put.result.snapshot.id);
    }
    finish_stdout();
    return errors.empty() ? kExitOk : kExitPartial;
}

}  // namespace

void add_store_put(CLI::App& st, int& exit_code) {
    auto a = std::make_shared<PutArgs>();
    auto* c = st.add_subcommand("put", "store files, directory trees (recursively) or - (stdin) under names: one "
                                       "new snapshot each time (a name put again is a newer version)");
    c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
    c->add_option("PATH", a->paths, "files, directories or - for standard input")->required()->type_name("");
    c->add_option("--name", a->name,
                  "the stored name (one PATH; for a tree, the prefix of its files' names; required for -)")
        ->type_name("NAME");
    c->add_option("--key-file", a->key_file, "the key of a keyed store")->type_name("FILE");
    c->add_flag("--follow-symlinks", a->follow_symlinks, "follow symbolic links inside directories");
    add_walk_options(*c, a->walk);
    add_json_flag(*c, a->json,
                  "{snapshot, files: [{name, path, size, chunks, new_chunks, new_bytes, unchanged, identical}], bytes, "
                  "new_bytes, stored_bytes, unchanged_files, identical_files, raced_chunks, raced_bytes, ..., excluded, "
                  "errors}");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Without --name, a file is stored under its path made relative (as tar does: /srv/a "
                           "as srv/a, ../f as f), a tree's files under their paths inside it; --name follows the "
                           "rule of the names a tree restore writes (relative, no empty, . or .. component, no "
                           "trailing /; a tree's prefix may end with /). Each put commits one snapshot (tag 'put') "
                           "holding its inputs at /NAME, with their mode, mtime and owner; a tree is captured as `store backup` captures "
                           "it: every file type (empty directories, symlinks, hard links, FIFOs, devices) with its "
                           "metadata (xattrs, ACLs, holes), and its files unchanged since the newest snapshot of "
                           "the same names (size, mtime, ctime, inode, device) are not read again; with "
                           "--follow-symlinks its links are followed and only its files are kept. Nothing is replaced. `cdc store get DIR NAME` restores the newest version, "
                           "`cdc store get DIR SNAP:/NAME` an older one (`cdc store find DIR /NAME` lists them), "
                           "`cdc store rm DIR NAME` deletes every version. Files are committed in batches: an "
                           "interrupted put commits no snapshot and leaves data that gc reclaims. "
                           "A file that changes while it is read (its size, mtime or ctime) is named and not stored, "
                           "nor are the store's own files. A store of format 1 (made by an earlier cdc) is refused: "
                           "`cdc store migrate DIR` first.",
                  .examples = {{"cdc store put /srv/store disk.img", "store one file under its name"},
                               {"tar c dir | cdc store put /srv/store - --name dir.tar", "store a stream"}},
                  .exit_codes = exit_codes({partial_exit()})});
    c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_put(*a); }); });
}

}  // namespace cdc::cli
