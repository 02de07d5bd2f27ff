// SPDX-License-Identifier: Apache-2.0
// cdc pull: one file out of the store of a cdc serve, fetching only the
// chunks that no local seed holds.
#include "commands.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

struct PullArgs {
    ConnectArgs connect;
    std::string name;
    std::string out;
    std::vector<std::string> seeds;  ///< --basis
    bool no_metadata = false;
    bool keep_modes = false;
    bool keep_setid = false;
    bool json = false;
    bool quiet = false;
};

/// `name` as SNAP[:PATH]: "latest" or 4 to 32 hex digits, then ':' and a
/// path; without ':' only when a snapshot of the server has that id (a
/// stored name may look like one).
bool names_a_snapshot(transfer::Client& client, const std::string& name) {
    const auto colon = name.find(':');
    const std::string ref = name.substr(0, colon);
    const bool hex = ref.size() >= 4 && ref.size() <= 32 && ref.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (ref != "latest" && !hex) return false;
    if (colon != std::string::npos || ref == "latest") return true;
    for (const auto& s : client.snapshots())
        if (s.id.starts_with(ref)) return true;
    return false;
}

std::string issues_text(const std::vector<store::SnapshotIssue>& v, std::size_t i) {
    return fmt::format("{}: {}", tools::escape_text(v[i].path), v[i].what);
}

int run_tree_pull(transfer::Client& client, const PullArgs& a) {
    if (a.out.empty() || a.out == "-") throw UsageError("a snapshot's path is restored to a path: give -o OUT");
    const auto colon = a.name.find(':');
    const std::string ref = a.name.substr(0, colon);
    const std::string path = colon == std::string::npos ? std::string() : a.name.substr(colon + 1);
    transfer::TreePullOptions o;
    o.key = key_of(a.connect);
    for (const auto& s : a.seeds) o.seeds.emplace_back(s);
    if (a.keep_setid) o.restore.setid = true;
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    if (line.enabled())
        o.progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("pull: {}  {}  fetched {}", mb(p.bytes_done), rate(p.bytes_done, p.seconds),
                                  mb(p.bytes_sent)));
        };
    const transfer::TreePullReport r = client.pull_tree(ref, path, a.out, o);
    line.clear();
    const auto& rr = r.restore;
    for (std::size_t i = 0; i < rr.problems.size(); ++i) print_error(issues_text(rr.problems, i));
    if (!a.quiet)
        for (std::size_t i = 0; i < rr.not_restored.size(); ++i)
            print_warning(fmt::format("{}: not restored: {}", tools::escape_text(rr.not_restored[i].path),
                                      rr.not_restored[i].what));
    if (a.json) {
        auto issues = [](const std::vector<store::SnapshotIssue>& v) {
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& i : v) {
                nlohmann::json j = {{"error", i.what}};
                tools::put_name(j, "path", i.path);
                arr.push_back(std::move(j));
            }
            return arr;
        };
        nlohmann::json j = {{"snapshot", r.snapshot.id},
                            {"directories", rr.directories},
                            {"files", rr.files},
                            {"hardlinks", rr.hardlinks},
                            {"symlinks", rr.symlinks},
                            {"specials", rr.specials},
                            {"bytes", rr.bytes},
                            {"contents", r.contents},
                            {"content_bytes", r.bytes},
                            {"chunks", r.chunks},
                            {"chunks_sent", r.chunks_sent},
                            {"bytes_sent", r.bytes_sent},
                            {"payload_sent", r.payload_sent},
                            {"bytes_reused", r.bytes_reused},
                            {"seed_files", r.seed_files},
                            {"seed_bytes", r.seed_bytes},
                            {"wire_bytes_sent", r.wire_sent},
                            {"wire_bytes_received", r.wire_received},
                            {"seconds", r.seconds},
                            {"problems", issues(rr.problems)},
                            {"not_restored", issues(rr.not_restored)}};
        tools::put_name(j, "path", path);
        tools::put_name(j, "output", a.out);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("pulled snapshot {}:{} to '{}': {} director(ies), {} file(s), {} hard link(s), {} symlink(s), {} "
                   "special(s); {} of content, {} fetched ({} compressed, {} on the wire), {} reused, in {:.2f} s ({})\n",
                   r.snapshot.id.substr(0, 8), tools::escape_text(path.empty() ? "/" : path), tools::escape_text(a.out),
                   rr.directories, rr.files, rr.hardlinks, rr.symlinks, rr.specials, mb(r.bytes), mb(r.bytes_sent),
                   mb(r.payload_sent), mb(r.wire_received), mb(r.bytes_reused), r.seconds, rate(r.bytes, r.seconds));
    }
    finish_stdout();
    return rr.problems.empty() ? kExitOk : kExitPartial;
}

int run_pull(const PullArgs& a) {
    for (const auto& s : a.seeds) {
        struct stat st {};
        if (::stat(s.c_str(), &st) != 0) throw UsageError(fmt::format("cannot read the basis file '{}': {}", s, std::strerror(errno)));
        if (!S_ISREG(st.st_mode)) throw UsageError(fmt::format("the basis file '{}' is not a regular file", s));
    }
    {
        auto client = make_client(a.connect);
        if (names_a_snapshot(*client, a.name)) return run_tree_pull(*client, a);
    }
    std::string out = a.out;
    const std::string base = std::filesystem::path(a.name).filename().string();
    if (out.empty()) {
        out = base;
        std::error_code ec;
        if (std::filesystem::exists(out, ec))
            throw UsageError(fmt::format("'{}' exists: name the output with -o (it is then replaced, and its chunks "
                                         "that are still in the file are not fetched again)",
                                         out));
    } else if (out != "-" && std::filesystem::is_directory(out)) {
        out = (std::filesystem::path(out) / base).string();
    }
    auto client = make_client(a.connect);
    transfer::PullOptions o;
    o.key = key_of(a.connect);
    for (const auto& s : a.seeds) o.seeds.emplace_back(s);
    o.restore_metadata = !a.no_metadata;
    o.keep_modes = a.keep_modes;
    o.keep_setid = a.keep_setid;
    ProgressLine line(!a.quiet && !a.json && out != "-" && stderr_is_tty());
    if (line.enabled())
        o.progress = [&](const transfer::TransferProgress& p) {
            line.draw(fmt::format("pull: {}  {}  fetched {}", mb(p.bytes_done), rate(p.bytes_done, p.seconds),
                                  mb(p.bytes_sent)));
        };
    const transfer::PullReport r =
        out == "-" ? client->pull_to_fd(a.name, STDOUT_FILENO, o) : client->pull(a.name, out, o);
    line.clear();
    if (a.json) {
        nlohmann::json j = {{"bytes_read", r.bytes},
                                  {"bytes_sent", r.bytes_sent},
                                  {"bytes_reused", r.bytes_reused},
                                  {"payload_sent", r.payload_sent},
                                  {"chunks", r.chunks},
                                  {"chunks_sent", r.chunks_sent},
                                  {"seed_bytes", r.seed_bytes},
                                  {"up_to_date", r.up_to_date},
                                  {"wire_bytes_sent", r.wire_sent},
                                  {"wire_bytes_received", r.wire_received},
                                  {"seconds", r.seconds}};
        tools::put_name(j, "name", a.name);
        tools::put_name(j, "output", out);
        // With -o -, the file went to stdout: the report goes to stderr.
        fmt::print(out == "-" ? stderr : stdout, "{}\n", tools::json_text(j));
    } else if (r.up_to_date && !a.quiet) {
        fmt::print("'{}' is up to date in '{}' ({}, the same BLAKE3): nothing fetched, nothing written\n",
                   tools::escape_text(a.name), tools::escape_text(out),
                   mb(r.bytes));
    } else if (!a.quiet) {
        fmt::print(out == "-" ? stderr : stdout,
                   "pulled '{}' to '{}': {}, {} fetched ({} compressed, {} on the wire), {} reused; {} chunks ({} "
                   "fetched) in {:.2f} s ({})\n",
                   a.name, out, mb(r.bytes), mb(r.bytes_sent), mb(r.payload_sent), mb(r.wire_received),
                   mb(r.bytes_reused), r.chunks, r.chunks_sent, r.seconds, rate(r.bytes, r.seconds));
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_pull_command(CLI::App& app, int& exit_code) {
    auto a = std::make_shared<PullArgs>();
    auto* c = app.add_subcommand("pull", "fetch a file from a cdc serve, only the chunks no local file holds");
    add_connect_options(*c, a->connect, "--from", "HOST:PORT of the server");
    c->add_option("NAME", a->name,
                  "the file's name on the server; or SNAP[:PATH], a path of a snapshot (latest, or an id's first 4 "
                  "to 32 hex digits), restored whole into the directory -o OUT")
        ->required()
        ->type_name("");
    c->add_option("-o,--output", a->out,
                  "OUT: a file (replaced), a directory (NAME's last component inside it) or - for standard output "
                  "(default: NAME's last component here, which must not exist)")
        ->type_name("PATH");
    c->add_option("--basis", a->seeds, "a local file whose chunks may be reused (repeatable)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    c->add_flag("--no-metadata", a->no_metadata, "do not apply the file's mode and mtime");
    c->add_flag("--keep-modes", a->keep_modes,
                "apply the file's permission bits as they are on the server (default: masked by the umask, as for a "
                "file one creates: whoever pushed it chose them)");
    c->add_flag("--keep-setid", a->keep_setid,
                "apply the setuid, setgid and sticky bits too (stripped by default: a file pushed by someone else "
                "must not become a set-id program of yours)");
    add_json_flag(*c, a->json,
                  "{name, output, bytes_read, bytes_sent, bytes_reused, chunks, chunks_sent, payload_sent, "
                  "seed_bytes, up_to_date, wire_bytes_sent, wire_bytes_received, seconds} (on stderr with -o -)");
    add_quiet_flag(*c, a->quiet);
    document(*c, {.notes = "OUT (when it exists), the --basis files and what an interrupted pull left are chunked "
                           "with the store's parameters; their chunks are checked (BLAKE3) and not fetched. The file "
                           "is written to .OUT.cdc-pull beside OUT (.cdc-pull-HASH where OUT's name is too long "
                           "for that) and renamed over OUT once its size and BLAKE3 "
                           "match; a broken transfer leaves that file, whose chunks the next pull reuses. An OUT "
                           "that is the file already (size and BLAKE3) is left as it is (its mode and mtime set): "
                           "'up to date'. The mode is the file's masked by the umask (--keep-modes: as it "
                           "is). Nothing beyond the size and chunk count the server announced is asked for or "
                           "written. SNAP[:PATH]: the path is restored into OUT as cdc store get SNAP does (every "
                           "file type and its metadata; nothing written outside OUT, no link followed), in one "
                           "stream; the chunks the regular files already in OUT and the --basis files hold are not "
                           "fetched. Exit 3 when some entries could not be restored (named on stderr).",
                  .examples = {{"cdc pull --from 127.0.0.1:7777 disk.img -o disk.img",
                                "update disk.img: fetch only the chunks it lacks"},
                               {"cdc pull --from 127.0.0.1:7777 latest:/home/me -o restored",
                                "a tree of the newest snapshot, in one stream"},
                               {"cdc pull --from 127.0.0.1:7777 v2.img -o v2.img --basis v1.img",
                                "a new version, reusing the chunks of the old one"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_pull(*a); }); });
}

}  // namespace cdc::cli
