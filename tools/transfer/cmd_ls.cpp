// SPDX-License-Identifier: Apache-2.0
// cdc ls: the snapshots of the store of a cdc serve, the paths of one, or
// its named files.
#include "snapshot_text.hpp"
#include "time_text.hpp"
#include "commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {

struct LsArgs {
    ConnectArgs connect;
    std::string arg;
    bool names = false;
    bool long_form = false;
    bool json = false;
    bool quiet = false;
};

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
}

nlohmann::json snapshot_json(const store::Snapshot& s) {
    nlohmann::json j = {{"id", s.id},
                        {"time_ns", s.time_ns},
                        {"time", local_time_text(s.time_ns)},
                        {"parent", s.parent},
                        {"totals",
                         {{"files", s.totals.files},
                          {"dirs", s.totals.dirs},
                          {"others", s.totals.others},
                          {"bytes", s.totals.bytes}}}};
    tools::put_name(j, "host", s.host);
    tools::put_name(j, "user", s.user);
    tools::put_names(j, "paths", s.paths);
    tools::put_names(j, "tags", s.tags);
    return j;
}

/// `arg` as SNAP[:PATH]: "latest" or 4 to 32 hex digits, then ':' and a path.
bool looks_like_snapshot(const std::string& arg) {
    const std::string ref = arg.substr(0, arg.find(':'));
    return ref == "latest" ||
           (ref.size() >= 4 && ref.size() <= 32 && ref.find_first_not_of("0123456789abcdef") == std::string::npos);
}

int list_snapshots(transfer::Client& client, const LsArgs& a) {
    const auto all = client.snapshots();
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : all) {
        if (a.json)
            arr.push_back(snapshot_json(s));
        else
            fmt::print("{}  {}  {:<12} {:>10}  {}{}\n", s.id.substr(0, 8), local_time_text(s.time_ns),
                       tools::escape_text(s.host), mb(s.totals.bytes), tools::escape_text(joined(s.paths)),
                       s.tags.empty() ? "" : "  [" + tools::escape_text(joined(s.tags)) + "]");
    }
    if (a.json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    return kExitOk;
}

int list_snapshot_paths(transfer::Client& client, const LsArgs& a) {
    const auto colon = a.arg.find(':');
    const std::string ref = a.arg.substr(0, colon);
    const std::string path = colon == std::string::npos ? std::string() : a.arg.substr(colon + 1);
    store::Snapshot snap;
    const auto nodes = client.snapshot_list(ref, path, true, snap);
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& n : nodes) {
        if (a.json)
            arr.push_back(snapshot_node_json(n));
        else
            fmt::print("{}\n", snapshot_node_line(n, a.long_form));
    }
    if (a.json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    return kExitOk;
}

int list_names(transfer::Client& client, const LsArgs& a) {
    const auto files = client.list(a.arg);
    if (a.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& f : files) {
            nlohmann::json j = {{"size", f.size},
                                {"mode", f.mode},
                                {"mtime_ns", f.mtime_ns},
                                {"digest", store::to_hex(f.digest)},
                                {"chunks", f.chunks},
                                {"committed_ns", f.committed_ns}};
            tools::put_name(j, "name", f.name);
            arr.push_back(std::move(j));
        }
        fmt::print("{}\n", tools::json_text(arr));
    } else {
        for (const auto& f : files)
            fmt::print("{}\n", listing_line(f.size, f.chunks, f.mtime_ns, f.mode, f.name));
    }
    finish_stdout();
    return kExitOk;
}

int run_ls(const LsArgs& a) {
    auto client = make_client(a.connect);
    if (a.names) return list_names(*client, a);
    if (a.arg.empty()) return list_snapshots(*client, a);
    if (looks_like_snapshot(a.arg)) {
        // A stored name that looks like an id (no ':', not "latest") is listed
        // as a prefix when no snapshot has that id.
        try {
            return list_snapshot_paths(*client, a);
        } catch (const transfer::TransferError& e) {
            if (e.code() != transfer::Code::not_found || a.arg.find(':') != std::string::npos || a.arg == "latest") throw;
        }
    }
    return list_names(*client, a);
}

}  // namespace

void add_ls_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<LsArgs>();
    auto* c = app.add_subcommand("ls", "list the snapshots of a cdc serve, the paths of one, or its named files");
    add_connect_options(*c, a->connect, "--from", "HOST:PORT of the server");
    c->add_option("WHAT", a->arg,
                  "SNAP[:PATH]: the paths of a snapshot (latest, or an id's first 4 to 32 hex digits) at and below "
                  "PATH; any other text: the named files starting with it (none: the snapshots)")
        ->type_name("");
    c->add_flag("--names", a->names, "list the named files (cdc push, store put), all or those starting with WHAT");
    c->add_flag("-l,--long", a->long_form, "a snapshot's paths with type, mode, owner, group, size and mtime");
    add_json_flag(*c, a->json,
                  "snapshots: [{id, time_ns, time, host, user, paths, tags, parent, totals}]; a snapshot's paths: "
                  "[{path, type, mode, uid, gid, user, group, size, mtime_ns, target, digest}]; named files: [{name, "
                  "size, mode, mtime_ns, digest, chunks, committed_ns}]");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "Without WHAT: the snapshots of the server's store, oldest first (id, time, host, size, "
                           "paths, tags), as cdc store snapshots. SNAP[:PATH]: every path of the snapshot at and below "
                           "PATH, as cdc store ls SNAP. Named files (--names, or a prefix): size, chunks, mtime, mode "
                           "and name, one file per line, as cdc store ls.",
                  .examples = {{"cdc ls --from 127.0.0.1:7777", "the snapshots of the server"},
                               {"cdc ls --from 127.0.0.1:7777 latest:/etc -l", "the newest snapshot's /etc"},
                               {"cdc ls --from 127.0.0.1:7777 --names p/ --json", "the named files of a tree, as JSON"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_ls(*a); }); });
}

}  // namespace cdc::cli
