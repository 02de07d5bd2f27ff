// SPDX-License-Identifier: Apache-2.0
// cdc store get: restore one file (checked before OUT is touched).
#include "cmd_store.hpp"
#include "output_path.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

using tools::is_stream_path;

struct GetArgs {
    std::string dir;
    std::string name;
    std::string out;
    bool no_metadata = false;
    bool keep_setid = false;
    bool quiet = false;
    bool json = false;
};

/// The options of a get: metadata as asked, progress drawn on `line` (files
/// too for a tree).
store::GetOptions get_options(const GetArgs& a, ProgressLine& line) {
    store::GetOptions o;
    o.restore_metadata = !a.no_metadata;
    o.keep_setid = a.keep_setid;
    if (line.enabled())
        o.progress = [&line](const store::Progress& p) {
            const std::string files =
                p.files_total > 0 ? fmt::format("  {}/{} files", p.files_done, p.files_total) : std::string();
            line.draw(fmt::format("get: {} / {}{}  {:.0f} MB/s", mb(p.bytes_done), mb(p.bytes_total), files,
                                  p.seconds > 0 ? static_cast<double>(p.bytes_done) / p.seconds / 1e6 : 0.0));
        };
    return o;
}

/// NAME a tree (the files NAME/..., or "." for every file): restored below
/// the directory OUT.
int run_get_tree(const store::Store& s, const GetArgs& a) {
    const bool all = a.name == ".";
    std::string out = a.out;
    if (out == "-" || (!out.empty() && is_stream_path(out)))
        throw UsageError(fmt::format("'{}' is a tree of files: -o names a directory to restore it into", a.name));
    if (out.empty()) {
        if (all) throw UsageError("'.' restores every file of the store: name the directory with -o");
        out = std::filesystem::path(a.name).filename().string();
        std::error_code ec;
        if (std::filesystem::exists(out, ec))
            throw UsageError(fmt::format("'{}' exists: name the directory with -o (its files of the same names are "
                                         "then replaced)",
                                         out));
    }
    ProgressLine line(!a.quiet && stderr_is_tty());
    const store::GetOptions o = get_options(a, line);
    const store::TreeGetReport r = s.get_tree(all ? std::string() : a.name, out, o);
    line.clear();
    for (const auto& k : r.skipped) print_error(fmt::format("{}: {} (skipped)", k.name, k.why));
    if (a.json) {
        nlohmann::json skipped = nlohmann::json::array();
        for (const auto& k : r.skipped) {
            nlohmann::json j{{"error", tools::escape_text(k.why)}};
            tools::put_name(j, "name", k.name);
            skipped.push_back(std::move(j));
        }
        nlohmann::json j{{"files", r.files}, {"bytes", r.bytes}, {"skipped", skipped}};
        tools::put_name(j, "name", a.name);
        tools::put_name(j, "output", out);
        fmt::print("{}\n", tools::json_text(j));
        finish_stdout();
    }
    return r.skipped.empty() ? kExitOk : kExitPartial;
}

/// Writes the file of manifest `manifest` to OUT (a path, - or a stream).
void get_one(const store::Store& s, const std::string& manifest, const std::string& out, const store::GetOptions& o) {
    if (out == "-") {
        s.get(manifest, STDOUT_FILENO, o);
    } else if (is_stream_path(out)) {
        const int fd = ::open(out.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw store::StoreError(fmt::format("cannot open '{}' for writing: {}", out, std::strerror(errno)));
        try {
            s.get(manifest, fd, o);
        } catch (...) {
            ::close(fd);
            throw;
        }
        if (::close(fd) != 0) throw store::StoreError(fmt::format("closing '{}': {}", out, std::strerror(errno)));
    } else {
        s.get(manifest, std::filesystem::path(out), o);
    }
}

/// A message about a snapshot's content manifest, naming the file instead.
std::string named(std::string what, const std::string& manifest, const std::string& name) {
    for (auto at = what.find(manifest); at != std::string::npos; at = what.find(manifest, at + name.size()))
        what.replace(at, manifest.size(), name);
    return what;
}

/// The files of a put tree (NAME, a directory of the newest snapshot that
/// holds it; or "." for the newest version of every file) below OUT, each
/// as a single get writes it.
int run_get_latest_tree(const store::Store& s, const GetArgs& a, const std::vector<store::LatestNode>& nodes,
                        const std::string& base) {
    const bool all = a.name == ".";
    std::string out = a.out;
    if (out == "-" || (!out.empty() && is_stream_path(out)))
        throw UsageError(fmt::format("'{}' is a tree of files: -o names a directory to restore it into", a.name));
    if (out.empty()) {
        if (all) throw UsageError("'.' restores every file of the store: name the directory with -o");
        out = std::filesystem::path(a.name).filename().string();
        std::error_code ec;
        if (std::filesystem::exists(out, ec))
            throw UsageError(fmt::format("'{}' exists: name the directory with -o (its files of the same names are "
                                         "then replaced)",
                                         out));
    }
    ProgressLine line(!a.quiet && stderr_is_tty());
    const store::GetOptions o = get_options(a, line);
    std::uint64_t files = 0, bytes = 0;
    std::vector<std::pair<std::string, std::string>> skipped;
    // The files restored in one go (one session of the store: looked up in
    // batches), each by its content's name, or, in a snapshot made before
    // content names, by its own.
    std::vector<store::Store::GetItem> items;
    std::vector<const store::LatestNode*> item_node;
    std::vector<std::string> item_rel;
    for (const auto& n : nodes) {
        const std::string rel = n.node.path.substr(base.size() + 1);  // (below "/base")
        if (n.node.type != "file") {
            if (n.node.type != "dir") skipped.emplace_back(rel, fmt::format("a {}: get it with SNAP:PATH", n.node.type));
            continue;
        }
        try {
            const std::filesystem::path to = std::filesystem::path(out) / rel;
            std::filesystem::create_directories(to.parent_path());
            items.push_back({n.node.content, to});
            item_node.push_back(&n);
            item_rel.push_back(rel);
        } catch (const std::filesystem::filesystem_error& e) {
            skipped.emplace_back(rel, e.what());
        }
    }
    s.get_each(items, o, [&](std::size_t i, std::exception_ptr error) {
        const store::LatestNode& n = *item_node[i];
        try {
            if (error) {
                try {
                    std::rethrow_exception(error);
                } catch (const store::NotFoundError&) {
                    s.get(store::file_manifest(s, n.snapshot, n.node.path), items[i].out, o);
                }
            }
            ++files;
            bytes += n.node.size;
        } catch (const store::DamageError& e) {
            skipped.emplace_back(item_rel[i], e.what());
        } catch (const std::filesystem::filesystem_error& e) {
            skipped.emplace_back(item_rel[i], e.what());
        }
    });
    line.clear();
    for (const auto& [name, why] : skipped) print_error(fmt::format("{}: {} (skipped)", tools::escape_text(name), why));
    if (a.json) {
        nlohmann::json sk = nlohmann::json::array();
        for (const auto& [name, why] : skipped) {
            nlohmann::json j{{"error", tools::escape_text(why)}};
            tools::put_name(j, "name", name);
            sk.push_back(std::move(j));
        }
        nlohmann::json j{{"files", files}, {"bytes", bytes}, {"skipped", sk}};
        tools::put_name(j, "name", a.name);
        tools::put_name(j, "output", out);
        fmt::print("{}\n", tools::json_text(j));
        finish_stdout();
    }
    return skipped.empty() ? kExitOk : kExitPartial;
}

int run_get(const GetArgs& a) {
    const store::Store s = open_store(a.dir);
    if (const int r = run_snapshot_get(s, a.name, a.out, a.keep_setid, a.json, a.quiet); r >= 0) return r;
    // A name: its newest version in the snapshots (put), else a named file
    // (a format-1 store, push).
    std::string manifest = a.name;
    std::optional<store::ManifestInfo> found;
    if (a.name == ".") {
        if (!s.list().empty()) return run_get_tree(s, a);
        return run_get_latest_tree(s, a, store::latest_nodes(s), "");
    }
    if (const auto latest = store::find_latest(s, a.name)) {
        if (latest->node.type == "dir") {
            std::vector<store::LatestNode> nodes;
            store::list_snapshot(s, latest->snapshot, latest->node.path, true, [&](const store::SnapshotNode& n) {
                if (n.path != latest->node.path) nodes.push_back({latest->snapshot, n});
            });
            return run_get_latest_tree(s, a, nodes, latest->node.path);
        }
        if (latest->node.type != "file") {
            if (a.out.empty()) throw UsageError(fmt::format("'{}' is a {}: give -o OUT", a.name, latest->node.type));
            return run_snapshot_get(s, latest->snapshot.id + ":" + latest->node.path, a.out, a.keep_setid, a.json,
                                    a.quiet);
        }
        manifest = store::file_manifest(s, latest->snapshot, latest->node.path);
        found = s.find(manifest);
    } else {
        found = s.find(a.name);
    }
    if (!found) {
        std::string under = a.name;
        while (!under.empty() && under.back() == '/') under.pop_back();
        if (a.name == "." || (!under.empty() && !s.list(under + "/").empty())) return run_get_tree(s, a);
        throw UsageError(fmt::format("no file named '{}' in the store '{}'", a.name, a.dir));
    }
    std::string out = a.out;
    if (out.empty()) {
        out = std::filesystem::path(a.name).filename().string();
        std::error_code ec;
        if (std::filesystem::exists(out, ec))
            throw UsageError(fmt::format("'{}' exists: name the output with -o (it is then replaced)", out));
    }
    // A directory: NAME's last component inside it (the snapshot's content
    // manifest has no name to take it from).
    if (manifest != a.name && out != "-" && !is_stream_path(out)) {
        std::error_code ec;
        if (std::filesystem::is_directory(out, ec)) out = (std::filesystem::path(out) / std::filesystem::path(a.name).filename()).string();
    }
    ProgressLine line(!a.quiet && out != "-" && stderr_is_tty());
    const store::GetOptions o = get_options(a, line);
    try {
        get_one(s, manifest, out, o);
    } catch (const store::DamageError& e) {
        if (manifest == a.name) throw;
        throw store::DamageError(named(e.what(), "\\0" + manifest.substr(1), a.name));
    } catch (const store::StoreError& e) {
        if (manifest == a.name) throw;
        throw store::StoreError(named(e.what(), "\\0" + manifest.substr(1), a.name));
    }
    if (a.json) {
        nlohmann::json j{{"files", 1}, {"bytes", found->size}, {"skipped", nlohmann::json::array()}};
        tools::put_name(j, "name", a.name);
        tools::put_name(j, "output", out);
        // With -o -, the file went to stdout: the report goes to stderr.
        fmt::print(out == "-" ? stderr : stdout, "{}\n", tools::json_text(j));
        finish_stdout();
    }
    return kExitOk;
}

}  // namespace

void add_store_get(CLI::App& st, int& exit_code) {
    auto a = std::make_shared<GetArgs>();
    auto* c = st.add_subcommand(
        "get", "restore a file or a tree: each to a temporary file renamed into place once its BLAKE3 matched");
    c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
    c->add_option("NAME", a->name,
                  "the stored name, in the newest snapshot that holds it; a tree (the files NAME/..., as put with "
                  "--name NAME; '.': the newest version of every file) is restored below the directory OUT; or "
                  "SNAP[:PATH] (an older version: SNAP:/NAME), a file or tree of a snapshot (latest, or an "
                  "id's first 4 to 32 hex digits; PATH absolute, default /) restored as OUT")
        ->required()
        ->type_name("NAME");
    c->add_option("-o,--output", a->out,
                  "OUT: a file (replaced), a directory (NAME's last component inside it), - for standard output, "
                  "or a device, FIFO or path under /dev or /proc (written as a stream, like -); for a tree, the "
                  "directory to restore it into (created if absent) "
                  "(default: NAME's last component here, which must not exist)")
        ->type_name("PATH");
    c->add_flag("--no-metadata", a->no_metadata, "do not restore the mode and mtime");
    c->add_flag("--keep-setid", a->keep_setid,
                "restore the setuid, setgid and sticky bits too (stripped by default: a file put by someone else "
                "must not become a set-id program of yours)");
    add_json_flag(*c, a->json, "{name, output, files, bytes, skipped: [{name, error}]} (on stderr with -o -)");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Every chunk is checked (record checksum, size) and the whole file's BLAKE3 before OUT is "
                           "replaced; with -o -, bytes go out chunk by chunk as they are checked and a final mismatch "
                           "is an error. A tree's names with an empty, '.' or '..' component are skipped, and its "
                           "directories are entered without following links; a damaged or blocked file is skipped "
                           "and reported (exit 3).",
                  .examples = {{"cdc store get /srv/store disk.img -o restored.img", "restore one file"},
                               {"cdc store get /srv/store project -o /tmp/project", "restore a tree put with --name project"},
                               {"cdc store get /srv/store latest:/home/me/doc -o /tmp/doc",
                                "restore a directory of the newest snapshot (every file type and its metadata)"}},
                  .exit_codes = exit_codes({{kExitPartial, "a tree was restored, but some files were skipped (each "
                                                           "named on stderr)"}})});
    c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_get(*a); }); });
}

}  // namespace cdc::cli
