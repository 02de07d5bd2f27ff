// SPDX-License-Identifier: Apache-2.0
// cdc push: files, trees and stdin into the store of a cdc serve, sending
// only the chunks it lacks.
#include "put_inputs.hpp"
#include "snapshot_text.hpp"
#include "commands.hpp"

#include <protocol.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace cdc::cli {

namespace {

struct PushArgs {
    ConnectArgs connect;
    std::vector<std::string> paths;
    std::string name;
    bool follow_symlinks = false;
    WalkArgs walk;
    unsigned threads = 0;
    bool id_lists = false;
    bool json = false;
    bool quiet = false;
    // a tree as one snapshot
    bool names = false;
    std::vector<std::string> tags;
    std::string host;
    std::string parent;
    bool no_parent = false;
    bool force_read = false;
    bool no_xattrs = false;
};

/// A directory among the paths, no --name, no standard input, no --names:
/// the paths go as one snapshot.
bool as_snapshot(const PushArgs& a) {
    if (a.names || !a.name.empty()) return false;
    bool dir = false;
    for (const auto& p : a.paths) {
        if (p == "-") return false;
        std::error_code ec;
        if (std::filesystem::is_directory(std::filesystem::symlink_status(p, ec))) dir = true;
    }
    return dir;
}

/// The snapshot as the server committed it (store backup's JSON, but
/// stored_bytes: the server's packs are not seen from here).
nlohmann::json pushed_snapshot_json(const store::Snapshot& s) {
    const auto& t = s.totals;
    nlohmann::json j = {{"id", s.id},
                        {"time_ns", s.time_ns},
                        {"time", local_time_text(s.time_ns)},
                        {"parent", s.parent},
                        {"tree", s.tree},
                        {"totals",
                         {{"files", t.files},
                          {"dirs", t.dirs},
                          {"others", t.others},
                          {"bytes", t.bytes},
                          {"bytes_read", t.bytes_read},
                          {"new_bytes", t.new_bytes},
                          {"skipped_unchanged", t.skipped_unchanged},
                          {"skipped_unreadable", t.skipped_unreadable}}}};
    tools::put_name(j, "host", s.host);
    tools::put_name(j, "user", s.user);
    tools::put_names(j, "paths", s.paths);
    tools::put_names(j, "tags", s.tags);
    return j;
}

nlohmann::json issues_json(const std::vector<store::SnapshotIssue>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& i : v) {
        nlohmann::json e;
        tools::put_name(e, "path", i.path);
        e["error"] = tools::escape_text(i.what);
        a.push_back(std::move(e));
    }
    return a;
}

int run_push_tree(const PushArgs& a) {
    if (a.follow_symlinks)
        throw UsageError("--follow-symlinks with a directory pushed as a snapshot: links are kept as links (push "
                         "with --names to follow them)");
    transfer::TreePushOptions o;
    o.push.key = key_of(a.connect);
    o.push.threads = a.threads;
    o.push.group_lists = !a.id_lists;
    for (const auto& p : a.paths) o.snapshot.paths.emplace_back(p);
    o.snapshot.tags = a.tags;
    o.snapshot.host = a.host;
    o.snapshot.parent = a.parent;
    o.snapshot.no_parent = a.no_parent;
    o.snapshot.force_read = a.force_read;
    o.snapshot.xattrs = !a.no_xattrs;
    o.snapshot.exclude = walk_excludes(a.walk);
    o.snapshot.one_file_system = a.walk.one_file_system;
    auto client = make_client(a.connect);
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    if (line.enabled())
        o.push.progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("push: {} / {}  {}  sent {}  {}/{} files", mb(p.bytes_done), mb(p.bytes_total),
                                  rate(p.bytes_done, p.seconds), mb(p.bytes_sent), p.files_done, p.files_total));
        };
    transfer::TreePushReport r;
    try {
        r = client->push_tree(o);
    } catch (const OptionError& e) {
        throw UsageError(e.what());
    }
    line.clear();
    for (const auto& i : r.skipped) print_error(fmt::format("{}: {} (skipped)", tools::escape_text(i.path), i.what));
    if (!a.quiet)
        for (const auto& i : r.warnings) print_warning(fmt::format("{}: {}", tools::escape_text(i.path), i.what));
    const auto& t = r.snapshot.totals;
    if (a.json) {
        nlohmann::json j = pushed_snapshot_json(r.snapshot);
        j["files_pushed"] = r.files_pushed;
        j["files_reused"] = r.files_reused;
        j["bytes_read"] = r.bytes_read;
        j["bytes_sent"] = r.bytes_sent;
        j["payload_sent"] = r.payload_sent;
        j["chunks"] = r.chunks;
        j["chunks_sent"] = r.chunks_sent;
        j["tree_bytes"] = r.tree_bytes;
        j["trees"] = r.trees;
        j["trees_sent"] = r.trees_sent;
        j["wire_bytes_sent"] = r.wire_sent;
        j["wire_bytes_received"] = r.wire_received;
        j["attempts"] = r.attempts;
        j["seconds"] = r.seconds;
        j["skipped"] = issues_json(r.skipped);
        j["warnings"] = issues_json(r.warnings);
        j["excluded"] = r.excluded;
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("snapshot {} pushed: {} file(s), {} dir(s), {} other(s), {}; read {}, sent {} ({} on the wire); "
                   "{} unchanged file(s) not read, {} skipped; {:.2f} s\n",
                   r.snapshot.id, t.files, t.dirs, t.others, mb(t.bytes), mb(r.bytes_read), mb(r.bytes_sent),
                   mb(r.wire_sent), r.files_reused, r.skipped.size(), r.seconds);
    } else {
        fmt::print("{}\n", r.snapshot.id);
    }
    finish_stdout();
    return r.skipped.empty() ? kExitOk : kExitPartial;
}

int run_push(const PushArgs& a) {
    if (as_snapshot(a)) return run_push_tree(a);
    if (!a.tags.empty() || !a.host.empty() || !a.parent.empty() || a.no_parent || a.force_read || a.no_xattrs)
        throw UsageError("--tag, --host, --parent, --no-parent, --force-read and --no-xattrs are for a directory "
                         "pushed as a snapshot (not with --names, --name, - or files alone)");
    // --name is the user's: a name the server refuses is a usage error (a
    // tree's file whose name it refuses is skipped, the rest pushed).
    WalkOptions walk;
    walk.follow_symlinks = a.follow_symlinks;
    walk.one_file_system = a.walk.one_file_system;
    walk.exclude = walk_excludes(a.walk);
    const PutInputs in = collect_put_inputs(a.paths, a.name, walk);
    if (!a.name.empty())
        if (const std::string why = transfer::name_problem(in.name); !why.empty())
            throw UsageError(fmt::format("name refused: {}", why));
    auto client = make_client(a.connect);
    std::vector<transfer::PushInput> inputs;
    for (const auto& f : in.files) inputs.push_back({f.path, f.name, f.size, f.inside_tree, a.follow_symlinks});
    transfer::PushOptions o;
    o.key = key_of(a.connect);
    o.threads = a.threads;
    o.group_lists = !a.id_lists;
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    if (line.enabled())
        o.progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("push: {} / {}  {}  sent {}  {}/{} files", mb(p.bytes_done), mb(p.bytes_total),
                                  rate(p.bytes_done, p.seconds), mb(p.bytes_sent), p.files_done, p.files_total));
        };
    const transfer::PushReport r = client->push(inputs, o);
    line.clear();
    std::vector<std::pair<std::string, std::string>> errors;
    for (const auto& e : in.errors) errors.emplace_back(e.path, e.message);
    for (const auto& e : r.errors) errors.emplace_back(e.path, e.message);
    for (const auto& [path, message] : errors) print_error(fmt::format("{}: {} (skipped)", path, message));
    if (!a.quiet)
        for (const auto& w : in.warnings) print_warning(fmt::format("{}: {}", w.path, w.message));
    const std::uint64_t reused = r.bytes_read - r.bytes_sent;
    if (a.json) {
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : r.files) {
            nlohmann::json j = {{"bytes", f.bytes},
                                {"chunks", f.chunks},
                                {"chunks_sent", f.chunks_sent},
                                {"bytes_sent", f.bytes_sent},
                                {"payload_sent", f.payload_sent},
                                {"new_chunks", f.new_chunks},
                                {"unchanged", f.unchanged},
                                {"identical", f.identical}};
            tools::put_name(j, "name", f.name);
            tools::put_name(j, "path", f.path);
            files.push_back(std::move(j));
        }
        nlohmann::json errs = nlohmann::json::array();
        for (const auto& [path, message] : errors) {
            nlohmann::json e;
            tools::put_name(e, "path", path);
            e["error"] = tools::escape_text(message);
            errs.push_back(std::move(e));
        }
        const nlohmann::json j = {{"files", files},
                                  {"file_count", r.files.size()},
                                  {"bytes_read", r.bytes_read},
                                  {"bytes_sent", r.bytes_sent},
                                  {"bytes_reused", reused},
                                  {"payload_sent", r.payload_sent},
                                  {"chunks", r.chunks},
                                  {"chunks_sent", r.chunks_sent},
                                  {"wire_bytes_sent", r.wire_sent},
                                  {"wire_bytes_received", r.wire_received},
                                  {"seconds", r.seconds},
                                  {"excluded", in.excluded},
                                  {"errors", errs}};
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("pushed {} file(s): {} read, {} sent ({} compressed, {} on the wire), {} reused; {} chunks ({} "
                   "sent) in {:.2f} s ({})\n",
                   r.files.size(), mb(r.bytes_read), mb(r.bytes_sent), mb(r.payload_sent), mb(r.wire_sent),
                   mb(reused), r.chunks, r.chunks_sent, r.seconds, rate(r.bytes_read, r.seconds));
    }
    finish_stdout();
    return errors.empty() ? kExitOk : kExitPartial;
}

}  // namespace

void add_push_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<PushArgs>();
    auto* c = app.add_subcommand("push", "send files, trees or - (stdin) to a cdc serve, only the chunks it lacks");
    add_connect_options(*c, a->connect, "--to", "HOST:PORT of the server");
    c->add_option("PATH", a->paths, "files, directories or - for standard input")->required()->type_name("");
    c->add_option("--name", a->name,
                  "the name on the server (one PATH; for a tree, the prefix of its files' names; required for -)")
        ->type_name("NAME");
    c->add_flag("--follow-symlinks", a->follow_symlinks, "follow symbolic links inside directories");
    add_walk_options(*c, a->walk);
    add_count_option(*c, "--threads", a->threads, 0, 4096, "compression threads (0: one per core)");
    c->add_flag("--id-lists", a->id_lists,
                "list every chunk id (~34 bytes a chunk) instead of digests of groups of chunks the server "
                "compares with its file of that name (~2-3 bytes a chunk where they equal); for comparison");
    c->add_flag("--names", a->names,
                "push a directory's files as named files (NAME/<path inside it>, the way of earlier versions) "
                "instead of one snapshot");
    c->add_option("--tag", a->tags, "a tag of the snapshot (repeatable)")->type_name("TAG");
    c->add_option("--host", a->host, "the host recorded (default: this machine's name)")->type_name("HOST");
    c->add_option("--parent", a->parent,
                  "compare with this snapshot on the server (default: the newest of the same host and paths)")
        ->type_name("SNAP");
    c->add_flag("--no-parent", a->no_parent, "compare with no snapshot: read every file");
    c->add_flag("--force-read", a->force_read, "read every file, even those unchanged since the parent");
    c->add_flag("--no-xattrs", a->no_xattrs, "do not record extended attributes (nor ACLs)");
    add_json_flag(*c, a->json,
                  "named files: {files: [...], bytes_read, bytes_sent, bytes_reused, chunks, chunks_sent, "
                  "payload_sent, wire_bytes_sent, wire_bytes_received, seconds, excluded, errors}; a snapshot: {id, "
                  "time_ns, host, user, paths, tags, parent, tree, totals: {files, dirs, others, bytes, bytes_read, "
                  "new_bytes, skipped_unchanged, skipped_unreadable}, files_pushed, files_reused, bytes_read, "
                  "bytes_sent, payload_sent, chunks, chunks_sent, tree_bytes, trees, trees_sent, wire_bytes_sent, "
                  "wire_bytes_received, attempts, seconds, skipped, warnings, excluded}");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "A directory among the PATHs (without --name or --names) is pushed as one snapshot, as "
                           "cdc store backup makes one: every file type and its metadata, the PATHs at their "
                           "absolute paths; a regular file whose size, mtime, ctime, inode and device equal those "
                           "in the parent snapshot (a sparse file's data extents too) is not read (the server offers its "
                           "content back), and a directory's tree the parent holds is not sent; the snapshot "
                           "appears on the server whole or not at all. Files alone, - and --names push named files, "
                           "named as with cdc store put: a file by its path made relative, a tree's files by their paths "
                           "inside it. Each file is chunked with the store's parameters; the server checks every "
                           "chunk it receives (BLAKE3) and the whole file's BLAKE3 before the file appears. An "
                           "interrupted push, run again, sends only what the server still lacks. A file that changes while "
                           "it is read is named and not committed.",
                  .examples = {{"cdc push --to 127.0.0.1:7777 disk.img", "send the chunks the server lacks"},
                               {"cdc push --to 127.0.0.1:7777 ~/project --tag daily", "~/project as one snapshot"},
                               {"cdc push --to store.example:7777 --tls-ca cert.pem --token-file token ~/project "
                                "--names --name p",
                                "a tree's files, over TLS, as p/<path inside it>"}},
                  .exit_codes = exit_codes({partial_exit()})});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_push(*a); }); });
}

}  // namespace cdc::cli
