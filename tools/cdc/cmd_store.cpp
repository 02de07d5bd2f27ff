// SPDX-License-Identifier: Apache-2.0
// cdc store — a deduplicating, compressed, crash-safe chunk store in a
// directory: init, put, get, ls, rm, gc, verify, stats (docs/STORE.md).
#include "commands.hpp"
#include "helper_path.hpp"
#include "sizes.hpp"
#include "cmd_store.hpp"
#include "time_text.hpp"
#include "../common/password.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include <fcntl.h>
#include <unistd.h>

#ifndef CDC_STORE_S3_HELPER_FROM_BINDIR
#define CDC_STORE_S3_HELPER_FROM_BINDIR "../libexec/cdc/cdc-store-s3"
#endif

namespace cdc::cli {

using store::Store;

namespace {
char** g_argv = nullptr;
bool g_s3_enabled = false;
// --password-file of the store command being run (every one but `key`,
// which has its own flags).
std::string g_password_file;
constexpr const char* kStorePasswordFlag = "--password-file";

std::string store_password_text(const crypto::SecretBytes& p) {
    return std::string(reinterpret_cast<const char*>(p.span().data()), p.span().size());
}
}  // namespace

void set_store_command_line(char** argv) { g_argv = argv; }
void set_store_s3_enabled() { g_s3_enabled = true; }

void run_store_s3_helper(const store::StorageUnavailableError& e) {
    if (g_s3_enabled || g_argv == nullptr) throw e;
    const tools::HelperPath h = tools::find_helper("cdc-store-s3", "CDC_STORE_S3", CDC_STORE_S3_HELPER_FROM_BINDIR);
    if (h.path.empty())
        throw store::StoreError(fmt::format("{}; cannot find the cdc-store-s3 helper (looked in: {}); set CDC_STORE_S3 "
                                            "to its path",
                                            e.what(), h.looked_in));
    std::fflush(stdout);
    g_argv[0] = const_cast<char*>(h.path.c_str());
    ::execv(h.path.c_str(), g_argv);
    throw store::StoreError(fmt::format("{}; cannot run '{}': {}", e.what(), h.path, std::strerror(errno)));
}

Store open_store(const std::string& dir, const std::string& key_file, bool with_helper) {
    store::OpenOptions o;
    if (!key_file.empty()) o.key = read_key_file(key_file);
    // Asked only of an encrypted store.
    o.password = [] { return store_password_text(get_password(g_password_file, kStorePasswordFlag, true, Ask::once, "password")); };
    try {
        return Store::open(dir, o);
    } catch (const store::VersionError& e) {
        throw UsageError(e.what());
    } catch (const store::StorageUnavailableError& e) {
        if (!with_helper) throw;
        run_store_s3_helper(e);
    }
}

namespace {

std::string profile_text(const std::string& algorithm, const Profile& p) {
    return fmt::format("{} {}{}", algorithm, profile_sizes(p), p.keyed ? " keyed" : "");
}

// "DIR/packs", or "s3://BUCKET/PREFIX (ENDPOINT, REGION)".
std::string packs_text(const store::PackLocation& p) {
    if (!p.is_s3()) return "the store's directory";
    return fmt::format("{} ({}, region {})", p.url, p.s3_endpoint.empty() ? "AWS" : p.s3_endpoint, p.s3_region);
}

double ratio(std::uint64_t a, std::uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

// The share of `before` that `after` does not take (0.73: 73% saved; below
// zero when `after` is larger).
double space_saved(std::uint64_t before, std::uint64_t after) { return before == 0 ? 0.0 : 1.0 - ratio(after, before); }

// "3.70x smaller, 73.0% saved" (as restic reports compression): how many
// times smaller `after` is than `before`, and the space that saves.
std::string saving_text(std::uint64_t before, std::uint64_t after) {
    if (before == 0 || after == 0) return "nothing to compare";
    const double saved = space_saved(before, after);
    if (saved < 0) return fmt::format("{:.2f}x larger, {:.1f}% more space", ratio(after, before), -100.0 * saved);
    return fmt::format("{:.2f}x smaller, {:.1f}% space saved", ratio(before, after), 100.0 * saved);
}

// ---------------------------------------------------------------- init

struct InitArgs {
    std::string dir;
    std::string algorithm = "fastcdc";
    ProfileArgs profile;
    std::string key_file;
    int zstd_level = 3;
    std::uint64_t pack_size = std::uint64_t{64} << 20;
    store::PackLocation packs;
    std::string catalog;
    bool json = false;
    bool quiet = false;
    bool no_encryption = false;
};

int run_init(const InitArgs& a) {
    store::InitOptions o;
    if (!a.no_encryption) {
        o.password = store_password_text(get_password(g_password_file, kStorePasswordFlag, true, Ask::twice, "password"));
    } else if (!g_password_file.empty()) {
        throw UsageError("--password-file and --no-encryption exclude each other");
    }
    o.algorithm = a.algorithm;
    o.chunking = a.profile.options();
    if (!a.key_file.empty()) o.chunking.key = read_key_file(a.key_file);
    o.zstd_level = a.zstd_level;
    o.pack_size = a.pack_size;
    o.packs = a.packs;
    o.catalog = a.catalog;
    if (!o.packs.is_s3() && (!a.packs.s3_endpoint.empty() || !a.packs.s3_credentials_file.empty()))
        throw UsageError("--s3-endpoint and --s3-credentials go with --packs s3://BUCKET/PREFIX");
    if (!o.packs.s3_credentials_file.empty()) {
        // Recorded as an absolute path: the store is opened from anywhere.
        std::error_code ec;
        const auto abs = std::filesystem::absolute(o.packs.s3_credentials_file, ec);
        if (!ec) o.packs.s3_credentials_file = abs.string();
    }
    struct WipePassword {  // (the copy init was given: wiped however init ends)
        std::string& s;
        ~WipePassword() { crypto::wipe({reinterpret_cast<std::uint8_t*>(s.data()), s.size()}); }
    } wipe_password{o.password};
    std::optional<Store> made;
    try {
        made.emplace(Store::init(a.dir, o));
    } catch (const store::StorageUnavailableError& e) {
        run_store_s3_helper(e);
    }
    const Store& s = *made;
    const auto& i = s.info();
    if (a.json) {
        nlohmann::json j = {{"store_id", i.store_id},     {"format_version", i.format_version},
                            {"algorithm", i.algorithm},   {"min_size", i.profile.min_size},
                            {"avg_size", i.profile.normal_size}, {"max_size", i.profile.max_size},
                            {"keyed", i.profile.keyed},   {"encrypted", i.encrypted()},
                            {"cipher", i.cipher},         {"zstd_level", i.zstd_level},
                            {"pack_size", i.pack_size},   {"packs_location", packs_text(i.packs)},
                            {"catalog", i.catalog.empty() ? "the store's directory" : i.catalog}};
        tools::put_name(j, "dir", a.dir);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("initialised {}store '{}': {}, zstd level {}, packs of {}{}{}, format {}\n",
                   i.encrypted() ? "encrypted (" + i.cipher + ") " : "unencrypted ", a.dir,
                   profile_text(i.algorithm, i.profile), i.zstd_level,
                   tools::format_size(static_cast<double>(i.pack_size)),
                   i.packs.is_s3() ? " in " + packs_text(i.packs) : std::string(),
                   i.catalog.empty() ? std::string() : ", catalog " + i.catalog, i.format_version);
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- ls

nlohmann::json manifest_json(const store::ManifestInfo& m) {
    nlohmann::json j = {{"size", m.size},
            {"mode", m.mode},
            {"mtime_ns", m.mtime_ns},
            {"digest", store::to_hex(m.digest)},
            {"algorithm", m.algorithm},
            {"min_size", m.profile.min_size},
            {"avg_size", m.profile.normal_size},
            {"max_size", m.profile.max_size},
            {"keyed", m.profile.keyed},
            {"chunks", m.chunks},
            {"committed_ns", m.committed_ns}};
    tools::put_name(j, "name", m.name);  // "name_bytes" too when it is not UTF-8
    return j;
}

struct LsArgs {
    std::string dir;
    std::string prefix;
    bool long_form = false;
    bool json = false;
    bool quiet = false;
};

int run_ls(const LsArgs& a) {
    const Store s = open_store(a.dir);
    if (!a.prefix.empty())
        if (const int r = run_snapshot_ls(s, a.prefix, a.long_form, a.json); r >= 0) return r;
    // The newest version of every path of the snapshots (put, backup), and
    // the named files (a format-1 store, push), by name.
    struct Row {
        store::ManifestInfo m;
        std::string snapshot;
    };
    std::map<std::string, Row> rows;
    for (auto& m : s.list(a.prefix)) rows[m.name] = {m, {}};
    // (the files' content manifests, for their chunk counts, looked up
    // together: a few thousand a round trip for a catalog over a network)
    const auto nodes = store::latest_nodes(s);
    std::vector<std::size_t> listed;
    std::vector<std::string> contents;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const std::string name = nodes[i].node.path.substr(1);
        if (!name.starts_with(a.prefix) || rows.count(name)) continue;
        listed.push_back(i);
        if (nodes[i].node.type == "file") contents.push_back(nodes[i].node.content);
    }
    auto found = s.find(std::span<const std::string>(contents));
    std::size_t next_found = 0;
    for (const std::size_t i : listed) {
        const auto& n = nodes[i];
        store::ManifestInfo m;
        if (n.node.type == "file")
            if (auto& f = found[next_found++]) m = std::move(*f);
        const std::string name = n.node.path.substr(1);
        m.name = name;
        m.size = n.node.size;
        m.mode = n.node.mode;
        m.mtime_ns = n.node.mtime_ns;
        rows[name] = {std::move(m), n.snapshot.id};
    }
    if (a.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& [name, r] : rows) {
            nlohmann::json j = manifest_json(r.m);
            if (!r.snapshot.empty()) j["snapshot"] = r.snapshot;
            arr.push_back(std::move(j));
        }
        fmt::print("{}\n", tools::json_text(arr));
    } else {
        for (const auto& [name, r] : rows) {
            const std::string line = listing_line(r.m.size, r.m.chunks, r.m.mtime_ns, r.m.mode, r.m.name);
            if (a.long_form)
                fmt::print("{:<8} {}\n", r.snapshot.empty() ? "-" : r.snapshot.substr(0, 8), line);
            else
                fmt::print("{}\n", line);
        }
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- rm

struct RmArgs {
    std::string dir;
    std::vector<std::string> names;
    bool dry_run = false;
    bool json = false;
    bool quiet = false;
};

int run_rm(const RmArgs& a) {
    Store s = open_store(a.dir);
    store::require_snapshot_format(s);
    // Named files (pushed) go as before; every other name's history is
    // deleted from the snapshots that hold it.
    std::vector<std::string> named, paths;
    for (const auto& n : a.names) (s.find(n) ? named : paths).push_back(n);
    std::vector<store::RewrittenSnapshot> rewritten;
    if (!paths.empty()) rewritten = store::remove_paths(s, paths, a.dry_run);
    if (!a.dry_run && !named.empty()) s.remove(named);
    if (a.json) {
        nlohmann::json j = nlohmann::json::object();
        tools::put_names(j, "removed", a.names);
        nlohmann::json snaps = nlohmann::json::array();
        for (const auto& r : rewritten) {
            nlohmann::json x = {{"old", r.old_id}, {"new", r.new_id.empty() ? nlohmann::json() : nlohmann::json(r.new_id)}};
            tools::put_names(x, "paths", r.removed);
            snaps.push_back(std::move(x));
        }
        j["snapshots"] = std::move(snaps);
        j["dry_run"] = a.dry_run;
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        for (const auto& r : rewritten)
            for (const auto& p : r.removed)
                fmt::print("{}snapshot {}: {} {}\n", a.dry_run ? "would change " : "", r.old_id,
                           r.new_id.empty() ? "forgotten (nothing left):" : "rewritten as " + r.new_id + " without",
                           tools::escape_text(p));
        if (a.dry_run)
            fmt::print("dry run: nothing changed\n");
        else
            fmt::print("removed {} name(s) from {} snapshot(s); cdc store gc reclaims their space\n", a.names.size(),
                       rewritten.size());
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- stats

struct StatsArgs {
    std::string dir;
    bool json = false;
    bool quiet = false;
};

int run_stats(const StatsArgs& a) {
    const Store s = open_store(a.dir);
    const auto st = s.stats();
    const auto& i = s.info();
    const double per_chunk = st.chunks ? static_cast<double>(st.index_bytes) / static_cast<double>(st.chunks) : 0.0;
    const double table_per_chunk =
        st.chunks ? static_cast<double>(st.chunk_table_bytes) / static_cast<double>(st.chunks) : 0.0;
    if (a.json) {
        nlohmann::json j = {{"store_id", i.store_id},
                            {"format_version", i.format_version},
                            {"algorithm", i.algorithm},
                            {"min_size", i.profile.min_size},
                            {"avg_size", i.profile.normal_size},
                            {"max_size", i.profile.max_size},
                            {"keyed", i.profile.keyed},
                            {"encrypted", i.encrypted()},
                            {"cipher", i.cipher},
                            {"zstd_level", i.zstd_level},
                            {"pack_size", i.pack_size},
                            {"packs_location", packs_text(i.packs)},
                            {"catalog", i.catalog.empty() ? "the store's directory" : i.catalog},
                            {"files", st.files},
                            {"logical_bytes", st.logical_bytes},
                            {"references", st.references},
                            {"chunks", st.chunks},
                            {"chunk_bytes", st.chunk_bytes},
                            {"stored_bytes", st.stored_bytes},
                            {"packs", st.packs},
                            {"pack_bytes", st.pack_bytes},
                            {"garbage_bytes", st.garbage_bytes},
                            {"index_bytes", st.index_bytes},
                            {"chunk_table_bytes", st.chunk_table_bytes},
                            {"index_bytes_per_chunk", per_chunk},
                            {"chunk_table_bytes_per_chunk", table_per_chunk},
                            {"dedup_ratio", ratio(st.chunk_bytes, st.logical_bytes)},
                            {"compression_ratio", ratio(st.stored_bytes, st.chunk_bytes)},
                            {"store_ratio", ratio(st.pack_bytes + st.index_bytes, st.logical_bytes)},
                            {"dedup_space_saved", space_saved(st.logical_bytes, st.chunk_bytes)},
                            {"compression_space_saved", space_saved(st.chunk_bytes, st.stored_bytes)},
                            {"space_saved", space_saved(st.logical_bytes, st.pack_bytes + st.index_bytes)}};
        fmt::print("{}\n", tools::json_text(j));
    } else {
        fmt::print("store      {} (format {}, id {})\n", a.dir, i.format_version, i.store_id);
        fmt::print("chunking   {}, zstd level {}\n", profile_text(i.algorithm, i.profile), i.zstd_level);
        fmt::print("encrypted  {}\n", i.encrypted() ? "yes, " + i.cipher : std::string("no"));
        if (i.packs.is_s3()) fmt::print("packs in   {}\n", packs_text(i.packs));
        if (!i.catalog.empty()) fmt::print("catalog    {}\n", i.catalog);
        fmt::print("files      {} ({} in {} chunk references)\n", st.files, mb(st.logical_bytes), st.references);
        fmt::print("chunks     {} distinct, {} raw; dedup: {}\n", st.chunks, mb(st.chunk_bytes),
                   saving_text(st.logical_bytes, st.chunk_bytes));
        fmt::print("stored     {} in {} pack(s) of {}, garbage {}; compression: {}\n", mb(st.stored_bytes), st.packs,
                   mb(st.pack_bytes), mb(st.garbage_bytes), saving_text(st.chunk_bytes, st.stored_bytes));
        fmt::print("index      {} ({:.1f} bytes per distinct chunk; chunk table {:.1f})\n", mb(st.index_bytes),
                   per_chunk, table_per_chunk);
        fmt::print("total      {} on disk for {} of files; {}\n", mb(st.pack_bytes + st.index_bytes),
                   mb(st.logical_bytes), saving_text(st.logical_bytes, st.pack_bytes + st.index_bytes));
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- verify

struct RepairArgs {
    std::string dir;
    bool rebuild_catalog = false;
    store::PackLocation packs;
    bool json = false;
    bool quiet = false;
};

int run_repair(const RepairArgs& a) {
    if (!a.rebuild_catalog) throw UsageError("repair: say what to repair (--rebuild-catalog)");
    if (!a.packs.is_s3() && (!a.packs.s3_endpoint.empty() || !a.packs.s3_credentials_file.empty()))
        throw UsageError("--s3-endpoint and --s3-credentials go with --packs s3://BUCKET/PREFIX");
    store::RebuildOptions o;
    o.packs = a.packs;
    if (!o.packs.s3_credentials_file.empty()) {
        std::error_code ec;
        const auto abs = std::filesystem::absolute(o.packs.s3_credentials_file, ec);
        if (!ec) o.packs.s3_credentials_file = abs.string();
    }
    o.password = [] { return store_password_text(get_password(g_password_file, kStorePasswordFlag, true, Ask::once, "password")); };
    store::RebuildReport r;
    try {
        r = store::rebuild_catalog(a.dir, o);
    } catch (const store::StorageUnavailableError& e) {
        run_store_s3_helper(e);
    }
    if (a.json) {
        nlohmann::json j = {{"ok", r.problems.empty()},    {"catalog", tools::escape_text(r.catalog)},
                            {"moved_aside", tools::escape_text(r.moved_aside)},
                            {"packs", r.packs},            {"records", r.records},
                            {"chunks", r.chunks},          {"duplicates", r.duplicates},
                            {"manifests", r.manifests},    {"superseded", r.superseded},
                            {"unfinished", r.unfinished},  {"damaged_bytes", r.damaged_bytes},
                            {"problems", nlohmann::json::array()}};
        for (const auto& p : r.problems) j["problems"].push_back(tools::escape_text(p));
        fmt::print("{}\n", tools::json_text(j));
    } else {
        for (const auto& p : r.problems) print_message("cdc: not recovered: ", p);
        if (!r.moved_aside.empty() && !a.quiet) print_message("cdc: note: the earlier database was moved to ", r.moved_aside);
        if (!a.quiet)
            fmt::print("{}: catalog {} rebuilt from {} pack(s): {} chunk(s), {} file manifest(s) ({} older version(s) "
                       "superseded, {} unfinished), {} duplicate record(s): {}\n",
                       a.dir, r.catalog, r.packs, r.chunks, r.manifests, r.superseded, r.unfinished, r.duplicates,
                       r.problems.empty() ? "ok" : fmt::format("{} problem(s)", r.problems.size()));
    }
    finish_stdout();
    return r.problems.empty() ? kExitOk : kExitPartial;
}

struct VerifyArgs {
    std::string dir;
    bool full = false;
    bool json = false;
    bool quiet = false;
};

int run_verify(const VerifyArgs& a) {
    const Store s = open_store(a.dir);
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    store::VerifyOptions o;
    o.full = a.full;
    if (line.enabled())
        o.progress = [&](const store::Progress& p) {
            line.draw(fmt::format("verify: {} / {}  {:.0f} MB/s", mb(p.bytes_done), mb(p.bytes_total),
                                  p.seconds > 0 ? static_cast<double>(p.bytes_done) / p.seconds / 1e6 : 0.0));
        };
    auto r = s.verify(o);
    line.clear();
    // The snapshots' structure, on what the manifests hold (cdc/snapshot.hpp).
    const store::SnapshotCheck snaps = store::verify_snapshots(s);
    for (const auto& d : snaps.damage) r.damage.push_back({d});
    for (const auto& n : snaps.notes) r.notes.push_back({n});
    for (auto& p : r.damage) p.what = store::name_snapshot_files(s, p.what);
    if (a.json) {
        nlohmann::json j = {{"ok", r.ok()},
                            {"full", a.full},
                            {"packs", r.packs},
                            {"chunks_checked", r.chunks_checked},
                            {"bytes_checked", r.bytes_checked},
                            {"manifests", r.manifests},
                            {"snapshots", snaps.snapshots},
                            {"damage", nlohmann::json::array()},
                            {"notes", nlohmann::json::array()}};
        for (const auto& p : r.damage) j["damage"].push_back(tools::escape_text(p.what));
        for (const auto& p : r.notes) j["notes"].push_back(tools::escape_text(p.what));
        fmt::print("{}\n", tools::json_text(j));
    } else {
        constexpr std::size_t kShown = 50;
        for (std::size_t k = 0; k < r.damage.size() && k < kShown; ++k)
            print_message("cdc: damage: ", r.damage[k].what);
        if (r.damage.size() > kShown) fmt::print(stderr, "cdc: ... and {} more\n", r.damage.size() - kShown);
        if (!a.quiet)
            for (const auto& n : r.notes) print_message("cdc: note: ", n.what);
        if (!a.quiet)
            fmt::print("{}: {} pack(s), {} chunk(s) ({}) {}, {} file(s), {} snapshot(s): {}\n", a.dir, r.packs,
                       r.chunks_checked, mb(r.bytes_checked), a.full ? "decompressed and hashed" : "checksummed",
                       r.manifests, snaps.snapshots,
                       r.ok() ? "ok" : fmt::format("{} problem(s)", r.damage.size()));
    }
    finish_stdout();
    return r.ok() ? kExitOk : kExitFailure;
}

// ---------------------------------------------------------------- gc

struct GcArgs {
    std::string dir;
    bool json = false;
    bool quiet = false;
    bool no_wait = false;
    double wait_seconds = 600;
    double session_timeout = 600;
};

int run_gc(const GcArgs& a) {
    Store s = open_store(a.dir);
    store::GcOptions o;
    if (!a.quiet && !a.json)
        o.on_wait = [] { fmt::print(stderr, "cdc: waiting for the writers of the store to finish...\n"); };
    o.wait_seconds = a.no_wait ? 0 : a.wait_seconds;
    o.session_timeout = a.session_timeout;
    const auto r = s.gc(o);
    if (a.json) {
        nlohmann::json j = {{"manifests_dropped", r.manifests_dropped}, {"chunks_removed", r.chunks_removed},
                            {"bytes_removed", r.bytes_removed},         {"packs_rewritten", r.packs_rewritten},
                            {"packs_deleted", r.packs_deleted},         {"bytes_before", r.bytes_before},
                            {"bytes_after", r.bytes_after},
                            {"chunks_condemned", r.chunks_condemned},   {"sweep_left", r.sweep_left}};
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("gc: {} chunk(s) removed ({}), {} pack(s) rewritten, {} deleted, {} pending manifest(s) dropped; "
                   "packs {} -> {}\n",
                   r.chunks_removed, mb(r.bytes_removed), r.packs_rewritten, r.packs_deleted, r.manifests_dropped,
                   mb(r.bytes_before), mb(r.bytes_after));
        if (r.chunks_condemned > 0 || r.sweep_left)
            fmt::print("gc: {} chunk(s) marked{}\n", r.chunks_condemned,
                       r.sweep_left ? "; the sweep is left to the next gc (sessions from before the mark still run)"
                                    : "");
    }
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_store_subcommands(CLI::App& st, int& exit_code) {
    {
        auto a = std::make_shared<InitArgs>();
        auto* c = st.add_subcommand("init", "create a store in DIR (absent or empty) with its chunking parameters");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        add_algorithm_option(*c, a->algorithm, "the store's chunking algorithm (cdc algorithms lists them)");
        add_profile_options(*c, a->profile, false);
        c->add_option("--key-file", a->key_file,
                      "key for a keyed algorithm: 64 hex digits or 32 bytes (never written into the store, only a "
                      "check value)")
            ->type_name("FILE");
        add_count_option(*c, "--zstd-level", a->zstd_level, 0, 19, "zstd level, 1..19; 0 stores chunks uncompressed");
        add_size_option(*c, "--pack-size", a->pack_size, 1, std::numeric_limits<std::uint64_t>::max(),
                        "bound of a pack file (1M .. 4G)");
        c->add_option("--packs", a->packs.url,
                      "keep the packs in an S3 bucket, s3://BUCKET/PREFIX (the bucket must exist, the prefix hold "
                      "nothing yet); the index and settings stay in DIR")
            ->type_name("URL");
        c->add_option("--s3-endpoint", a->packs.s3_endpoint,
                      "the S3 service, http[s]://HOST[:PORT], path-style (default: AWS's endpoint of the region)")
            ->type_name("URL");
        c->add_option("--s3-region", a->packs.s3_region, "the region requests are signed for")
            ->type_name("NAME")
            ->default_str(a->packs.s3_region);
        c->add_option("--s3-credentials", a->packs.s3_credentials_file,
                      "an AWS credentials file to read when AWS_ACCESS_KEY_ID is not set (its path is recorded, "
                      "never its content)")
            ->type_name("FILE");
        c->add_option("--catalog", a->catalog,
                      "keep the index, the file lists and the settings in a PostgreSQL database that holds no "
                      "store yet, postgresql://[USER@]HOST[:PORT]/DB (libpq's URI, no password: PGPASSWORD, "
                      "PGPASSFILE or ~/.pgpass); writers on many hosts then share the store")
            ->type_name("URL");
        add_size_option(*c, "--s3-part-size", a->packs.s3_part_size, std::uint64_t{5} << 20, std::uint64_t{1} << 30,
                        "packs larger than this are uploaded in parts of this size (5M .. 1G, whole MiB); memory "
                        "holds one part per pack being written");
        c->add_flag("--no-encryption", a->no_encryption,
                    "an unencrypted store (format 1): its packs and index hold contents and names in clear; by "
                    "default a store is encrypted under a password (docs/STORE.md \"Encryption\")");
        add_json_flag(*c, a->json, "{dir, store_id, format_version, algorithm, min_size, avg_size, max_size, keyed, "
                                   "encrypted, cipher, zstd_level, pack_size, packs_location, catalog}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "The chunking parameters are fixed for the store's life: every file put is cut "
                               "with them, and cdc push chunks alike. With --packs s3://..., every store command "
                               "reads and writes the packs in the bucket; S3 credentials come from "
                               "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else from a "
                               "credentials file (CDC_S3_CREDENTIALS_FILE, --s3-credentials, "
                               "AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials; profile AWS_PROFILE or default), "
                               "never from the command line.",
                      .examples = {{"cdc store init /srv/store", "a store with fastcdc's defaults"},
                                   {"cdc store init -a fastcdc-v1.0.0 --avg 16K --zstd-level 9 /srv/store",
                                    "16 KiB chunks, stronger compression"},
                                   {"cdc store init --packs s3://backups/host1 --s3-endpoint http://127.0.0.1:7480 "
                                    "/srv/store",
                                    "packs in a bucket of an S3 service (Ceph RGW, MinIO), the index in /srv/store"},
                                   {"cdc store init --catalog postgresql://cdc@db.example:5432/backups --packs "
                                    "s3://backups/all /srv/store",
                                    "a store many hosts put into at once: its catalog in PostgreSQL, its packs in "
                                    "S3"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_init(*a); }); });
    }
    add_store_put(st, exit_code);
    add_store_get(st, exit_code);
    add_store_snapshot_commands(st, exit_code);
    {
        auto a = std::make_shared<LsArgs>();
        auto* c = st.add_subcommand("ls", "list the files of the store, the newest version of each (name, size, "
                                          "chunks, mtime, mode)");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("PREFIX", a->prefix,
                      "only names that start with PREFIX; or SNAP[:PATH]: the tree of a snapshot (latest, or an id's "
                      "first 4 to 32 hex digits) below PATH")
            ->type_name("");
        c->add_flag("-l,--long", a->long_form,
                    "SNAP: mode, owner, group, size and mtime too; without SNAP: the snapshot each version is from");
        add_json_flag(*c, a->json,
                      "[{name, size, mode, mtime_ns, digest, algorithm, ..., chunks, committed_ns, snapshot}]");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Text output: size, chunks, mtime, mode and name, one file per line.",
                      .examples = {{"cdc store ls /srv/store", "every file"},
                                   {"cdc store ls /srv/store project/ --json", "the files of a tree, as JSON"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_ls(*a); }); });
    }
    {
        auto a = std::make_shared<RmArgs>();
        auto* c = st.add_subcommand("rm", "delete names' history: every snapshot holding one is rewritten without it "
                                          "(gc reclaims the space)");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("NAME", a->names,
                      "names (a file or a tree, as put; or an absolute path of a backup) to delete from every "
                      "snapshot (all or none: a NAME no snapshot holds removes nothing)")
            ->required()
            ->type_name("");
        c->add_flag("--dry-run", a->dry_run, "list what would change, change nothing");
        add_json_flag(*c, a->json, "{removed: [names], snapshots: [{old, new (null: forgotten), paths}], dry_run}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Each snapshot holding a NAME is rewritten without it (and without hard links to it): "
                               "a new snapshot with the same time, host, paths, tags and parent and a new id; the old "
                               "one is forgotten, and one left empty is forgotten too. The rewrites are committed "
                               "before the old snapshots are forgotten (an interruption leaves both; rm again "
                               "finishes). `cdc store gc` then reclaims the chunks no other file holds.",
                      .examples = {{"cdc store rm /srv/store old.img && cdc store gc /srv/store",
                                    "delete every version of a file and reclaim its chunks"},
                                   {"cdc store rm /srv/store secrets --dry-run", "what deleting a tree would change"}},
                      .exit_codes = exit_codes({{kExitUsage, "usage error, a NAME no snapshot holds (nothing "
                                                             "removed), or a store of format 1 (migrate it first)"}})});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_rm(*a); }); });
    }
    {
        auto a = std::make_shared<GcArgs>();
        auto* c = st.add_subcommand("gc", "reclaim unreferenced chunks, rewrite sparse packs (waits for writers; beside them with a "
                                          "PostgreSQL catalog)");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        add_json_flag(*c, a->json, "{manifests_dropped, chunks_removed, bytes_removed, packs_rewritten, "
                                   "packs_deleted, bytes_before, bytes_after, chunks_condemned, sweep_left}");
        add_quiet_flag(*c, a->quiet);
        c->add_flag("--no-wait", a->no_wait,
                    "PostgreSQL catalog: mark and return; the sweep is left to a later gc (when the sessions "
                    "alive at the mark have ended)");
        c->add_option("--wait", a->wait_seconds,
                      "PostgreSQL catalog: seconds to wait after the mark for the sessions alive then (default 600)")
            ->check(CLI::NonNegativeNumber);
        c->add_option("--session-timeout", a->session_timeout,
                      "PostgreSQL catalog: a session without a heartbeat for this many seconds is dead (default 600)")
            ->check(CLI::PositiveNumber);
        document(*c, {.notes = "",
                      .examples = {{"cdc store gc /srv/store", "reclaim the space of removed and replaced files"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_gc(*a); }); });
    }
    {
        auto a = std::make_shared<VerifyArgs>();
        auto* c = st.add_subcommand("verify", "check the database, the packs, every record and every file's chunk list");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_flag("--full", a->full, "also decompress every chunk and check its BLAKE3");
        add_json_flag(*c, a->json, "{ok, full, packs, chunks_checked, bytes_checked, manifests, damage: [...], "
                                   "notes: [...]}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Damage is listed on stderr (the first 50 lines).",
                      .examples = {{"cdc store verify /srv/store", "checksums of every record"},
                                   {"cdc store verify --full /srv/store", "every chunk decompressed and hashed"}},
                      .exit_codes = exit_codes({{kExitFailure, "damage found, or an error stopped the run"}})});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_verify(*a); }); });
    }
    {
        auto a = std::make_shared<RepairArgs>();
        auto* c = st.add_subcommand("repair", "rebuild a lost or damaged catalog from the packs alone");
        c->add_option("DIR", a->dir, "the store's directory (its marker, and DIR/catalog for PostgreSQL)")
            ->required()
            ->type_name("");
        c->add_flag("--rebuild-catalog", a->rebuild_catalog,
                    "make a new catalog (in DIR, moving an existing one aside, or in the empty PostgreSQL database "
                    "DIR/catalog names) from every record in the packs");
        c->add_option("--packs", a->packs.url, "where the packs are, s3://BUCKET/PREFIX (default: DIR/packs)")
            ->type_name("URL");
        c->add_option("--s3-endpoint", a->packs.s3_endpoint, "the S3 service, http[s]://HOST[:PORT]")->type_name("URL");
        c->add_option("--s3-region", a->packs.s3_region, "the region requests are signed for")
            ->type_name("REGION")
            ->default_str(a->packs.s3_region);
        c->add_option("--s3-credentials", a->packs.s3_credentials_file, "an AWS credentials file")->type_name("FILE");
        add_json_flag(*c, a->json, "{ok, catalog, moved_aside, packs, records, chunks, duplicates, manifests, "
                                   "superseded, unfinished, damaged_bytes, problems: [...]}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Nothing else may use the store meanwhile. The packs hold every chunk and, since catalog "
                               "records, every committed manifest and the settings (docs/STORE.md): a store written "
                               "before them is refused, nothing guessed. A file removed but not yet reclaimed by gc "
                               "comes back. Run verify --full afterwards.",
                      .examples = {{"cdc store repair --rebuild-catalog /srv/store",
                                    "a new catalog from the packs (a damaged one is moved aside, never deleted)"}},
                      .exit_codes = exit_codes({{kExitPartial, "rebuilt, but some files or ranges could not be "
                                                               "recovered (each named on stderr)"}})});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_repair(*a); }); });
    }
    {
        auto a = std::make_shared<StatsArgs>();
        auto* c = st.add_subcommand("stats", "sizes: files, distinct chunks, stored bytes, index bytes per chunk");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        add_json_flag(*c, a->json, "every figure: {files, logical_bytes, chunks, chunk_bytes, stored_bytes, "
                                   "pack_bytes, ..., dedup_space_saved, compression_space_saved, space_saved}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Dedup compares the files' bytes with the distinct chunks' bytes, compression the "
                               "chunks with what the packs hold, total the files with the packs and the index: "
                               "\"3.70x smaller, 73.0% space saved\" (the JSON's *_ratio fields are the share "
                               "kept: 0.27).",
                      .examples = {{"cdc store stats /srv/store", "what the store holds and saves"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_stats(*a); }); });
    }
    // Every command but `key` opens the store: an encrypted one's password.
    for (CLI::App* c : st.get_subcommands([](CLI::App*) { return true; }))
        c->add_option(kStorePasswordFlag, g_password_file,
                      "an encrypted store's password: the file's content (one trailing newline dropped); default: "
                      "the file named by CDC_PASSWORD_FILE, else CDC_PASSWORD, else asked on the terminal (twice "
                      "at init); never a command-line value")
            ->type_name("FILE");
    add_store_key(st, exit_code);
}

void add_store_command(CLI::App& app, int& exit_code) {
    auto* st = app.add_subcommand("store", "a deduplicating, compressed, encrypted, crash-safe store in a directory: "
                                           "init, backup, snapshots, ls, get, diff, find, forget, put, rm, gc, verify, "
                                           "stats, repair, migrate, key");
    st->require_subcommand(1);
    add_store_subcommands(*st, exit_code);
    document(*st, {.notes = "The store keeps each distinct chunk once (BLAKE3-256 ids), zstd-compressed and (unless "
                            "init --no-encryption) sealed, in pack files, with an SQLite (or PostgreSQL) index; "
                            "backup keeps history in snapshots, put keeps files under names; see docs/STORE.md.",
                   .examples = {{"cdc store init /srv/store && cdc store backup /srv/store ~/project",
                                 "create an (encrypted) store and take a snapshot of a tree"},
                                {"cdc store snapshots /srv/store && cdc store get /srv/store latest:$HOME/project -o /tmp/p",
                                 "list the snapshots, restore the newest one's tree"}},
                   .exit_codes = {}});
}

}  // namespace cdc::cli
