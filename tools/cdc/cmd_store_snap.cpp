// SPDX-License-Identifier: Apache-2.0
// cdc store backup / snapshots / forget / diff / find, and the snapshot
// forms of ls and get (SNAP[:PATH]): the store's history (cdc/snapshot.hpp).
#include "cmd_store.hpp"
#include "output_path.hpp"
#include "snapshot_text.hpp"
#include "time_text.hpp"

#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <set>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::cli {

namespace snapcmd {

using store::Snapshot;

nlohmann::json totals_json(const store::SnapshotTotals& t) {
    return {{"files", t.files},
            {"dirs", t.dirs},
            {"others", t.others},
            {"bytes", t.bytes},
            {"bytes_read", t.bytes_read},
            {"new_bytes", t.new_bytes},
            {"stored_bytes", t.stored_bytes},
            {"skipped_unchanged", t.skipped_unchanged},
            {"skipped_unreadable", t.skipped_unreadable}};
}

nlohmann::json snapshot_json(const Snapshot& s) {
    nlohmann::json j = {{"id", s.id},         {"time_ns", s.time_ns}, {"time", local_time_text(s.time_ns)},
                        {"parent", s.parent}, {"tree", s.tree},       {"totals", totals_json(s.totals)}};
    tools::put_name(j, "host", s.host);
    tools::put_name(j, "user", s.user);
    tools::put_names(j, "paths", s.paths);
    tools::put_names(j, "tags", s.tags);
    return j;
}

nlohmann::json issues_json(const std::vector<store::SnapshotIssue>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& i : v) {
        nlohmann::json j = {{"error", i.what}};
        tools::put_name(j, "path", i.path);
        a.push_back(std::move(j));
    }
    return a;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

/// `arg` as SNAP[:PATH] when it names a snapshot of `s`: "latest" or 4 to
/// 32 hex digits that a snapshot's id starts with.
std::optional<std::pair<Snapshot, std::string>> snapshot_ref(const store::Store& s, const std::string& arg) {
    const auto colon = arg.find(':');
    const std::string ref = arg.substr(0, colon);
    const std::string path = colon == std::string::npos ? std::string() : arg.substr(colon + 1);
    const bool hex = ref.size() >= 4 && ref.size() <= 32 && ref.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (ref != "latest" && !hex) return std::nullopt;
    try {
        return std::make_pair(store::find_snapshot(s, ref), path);
    } catch (const store::NotFoundError&) {
        if (colon != std::string::npos || ref == "latest") throw;
        return std::nullopt;  // a stored name that looks like an id
    }
}

Snapshot resolve(const store::Store& s, const std::string& ref) {
    try {
        return store::find_snapshot(s, ref);
    } catch (const OptionError& e) {
        throw UsageError(e.what());
    }
}

// ---------------------------------------------------------------- backup

struct SnapBackupArgs {
    std::string dir;
    std::vector<std::string> paths;
    std::vector<std::string> tags;
    std::string host;
    std::string parent;
    std::string key_file;
    bool no_parent = false;
    bool force_read = false;
    bool no_xattrs = false;
    WalkArgs walk;
    bool json = false;
    bool quiet = false;
};

int run_backup(const SnapBackupArgs& a) {
    store::SnapshotOptions o;
    for (const auto& p : a.paths) o.paths.emplace_back(p);
    o.tags = a.tags;
    o.host = a.host;
    o.parent = a.parent;
    o.no_parent = a.no_parent;
    o.force_read = a.force_read;
    o.xattrs = !a.no_xattrs;
    o.exclude = walk_excludes(a.walk);
    o.one_file_system = a.walk.one_file_system;
    const std::filesystem::path store_dir = std::filesystem::absolute(a.dir).lexically_normal();
    for (const auto& p : o.paths) {
        const auto abs = std::filesystem::absolute(p).lexically_normal();
        const auto rel = store_dir.lexically_relative(abs);
        if (!rel.empty() && *rel.begin() != "..")
            throw UsageError(fmt::format("'{}' holds the store itself: back up what is beside it", p.string()));
    }
    const auto t0 = std::chrono::steady_clock::now();
    ProgressLine line(!a.quiet && !a.json && stderr_is_tty());
    if (line.enabled())
        o.progress = [&](const store::Progress& p) {
            line.draw(fmt::format("backup: {}/{} files read", p.files_done, p.files_total));
        };
    store::SnapshotResult r;
    try {
        // The store opened (its key derived) while the paths are captured.
        r = store::create_snapshot(
            [&] {
                store::Store s = open_store(a.dir, a.key_file, false);
                store::require_snapshot_format(s);
                return s;
            },
            o);
    } catch (const OptionError& e) {
        throw UsageError(e.what());
    } catch (const store::StorageUnavailableError& e) {
        run_store_s3_helper(e);
    }
    line.clear();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Snapshot& snap = r.snapshot;
    for (const auto& i : r.skipped) print_error(fmt::format("{}: {} (skipped)", tools::escape_text(i.path), i.what));
    if (!a.quiet)
        for (const auto& i : r.warnings) print_warning(fmt::format("{}: {}", tools::escape_text(i.path), i.what));
    if (a.json) {
        nlohmann::json j = snapshot_json(snap);
        j["seconds"] = secs;
        j["skipped"] = issues_json(r.skipped);
        j["excluded"] = r.excluded;
        j["warnings"] = issues_json(r.warnings);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        const auto& t = snap.totals;
        fmt::print("snapshot {} saved: {} file(s), {} dir(s), {} other(s), {}; read {}, {} new, {} stored; "
                   "{} unchanged file(s) not read, {} skipped; {:.2f} s\n",
                   snap.id, t.files, t.dirs, t.others, mb(t.bytes), mb(t.bytes_read), mb(t.new_bytes),
                   mb(t.stored_bytes), t.skipped_unchanged, t.skipped_unreadable, secs);
    } else {
        fmt::print("{}\n", snap.id);
    }
    finish_stdout();
    return r.skipped.empty() ? kExitOk : kExitPartial;
}

// ---------------------------------------------------------------- snapshots

struct SnapshotsArgs {
    std::string dir;
    std::vector<std::string> hosts, tags, paths;
    bool json = false;
    bool quiet = false;
};

bool matches(const Snapshot& s, const SnapshotsArgs& a) {
    if (!a.hosts.empty() && std::find(a.hosts.begin(), a.hosts.end(), s.host) == a.hosts.end()) return false;
    for (const auto& t : a.tags)
        if (std::find(s.tags.begin(), s.tags.end(), t) == s.tags.end()) return false;
    for (const auto& p : a.paths) {
        const auto abs = std::filesystem::absolute(p).lexically_normal().string();
        if (std::find(s.paths.begin(), s.paths.end(), abs) == s.paths.end()) return false;
    }
    return true;
}

int run_snapshots(const SnapshotsArgs& a) {
    const store::Store s = open_store(a.dir);
    nlohmann::json arr = nlohmann::json::array();
    for (const Snapshot& snap : store::list_snapshots(s)) {
        if (!matches(snap, a)) continue;
        if (a.json)
            arr.push_back(snapshot_json(snap));
        else
            fmt::print("{}  {}  {:<12} {:>10}  {}{}\n", snap.id.substr(0, 8), local_time_text(snap.time_ns),
                       tools::escape_text(snap.host), mb(snap.totals.bytes),
                       tools::escape_text(joined(snap.paths, ",")),
                       snap.tags.empty() ? "" : "  [" + tools::escape_text(joined(snap.tags, ",")) + "]");
    }
    if (a.json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- forget

struct SnapForgetArgs {
    std::string dir;
    std::vector<std::string> snaps;
    int last = 0, hourly = 0, daily = 0, weekly = 0, monthly = 0, yearly = 0;
    std::string within;
    std::vector<std::string> keep_tags;
    std::string group_by = "host,paths";
    bool dry_run = false;
    bool prune = false;
    bool json = false;
    bool quiet = false;
};

int run_forget(const SnapForgetArgs& a) {
    store::Store s = open_store(a.dir);
    store::RetentionPolicy p;
    p.last = a.last;
    p.hourly = a.hourly;
    p.daily = a.daily;
    p.weekly = a.weekly;
    p.monthly = a.monthly;
    p.yearly = a.yearly;
    std::vector<std::string> forget;
    nlohmann::json groups = nlohmann::json::array();
    try {
        if (!a.within.empty()) p.within = store::parse_calendar_duration(a.within, "keep-within");
        for (const auto& t : a.keep_tags) {
            std::vector<std::string> list;
            std::string cur;
            for (const char c : t) {
                if (c == ',') list.push_back(std::exchange(cur, {}));
                else cur.push_back(c);
            }
            list.push_back(cur);
            p.tags.push_back(list);
        }
        if (!a.snaps.empty() && !p.empty()) throw UsageError("name snapshots or give --keep-* rules, not both");
        if (a.snaps.empty() && p.empty()) throw UsageError("name the snapshots to forget, or give --keep-* rules");
        if (!a.snaps.empty()) {
            for (const auto& r : a.snaps) forget.push_back(resolve(s, r).id);
        } else {
            const auto all = store::list_snapshots(s);
            std::vector<store::SnapshotInfo> infos;
            for (const auto& x : all) infos.push_back(x.retention_info());
            store::RetentionOptions ro;
            ro.group_by = store::parse_group_by(a.group_by);
            ro.now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
            for (const auto& g : store::apply_retention(infos, p, ro)) {
                nlohmann::json gj = {{"keep", nlohmann::json::array()}, {"remove", nlohmann::json::array()}};
                tools::put_name(gj, "host", g.host);
                tools::put_names(gj, "paths", g.paths);
                if (!a.json && !a.quiet)
                    fmt::print("group host '{}' paths '{}': keep {} of {}\n", tools::escape_text(g.host),
                               tools::escape_text(joined(g.paths, ",")), g.kept(), g.snapshots.size());
                for (const auto& d : g.snapshots) {
                    const Snapshot& snap = all[d.index];
                    if (d.keep) {
                        gj["keep"].push_back({{"id", snap.id}, {"reasons", d.reasons}});
                    } else {
                        gj["remove"].push_back(snap.id);
                        forget.push_back(snap.id);
                    }
                    if (!a.json && !a.quiet)
                        fmt::print("  {} {}  {}  {}\n", d.keep ? "keep  " : "forget", snap.id.substr(0, 8),
                                   local_time_text(snap.time_ns), joined(d.reasons, ", "));
                }
                groups.push_back(std::move(gj));
            }
        }
    } catch (const OptionError& e) {
        throw UsageError(e.what());
    }
    if (!a.dry_run && !forget.empty()) store::forget_snapshots(s, forget);
    std::optional<store::GcReport> gc;
    if (a.prune && !a.dry_run) gc = s.gc({});
    if (a.json) {
        nlohmann::json j = {{"forgotten", a.dry_run ? nlohmann::json::array() : nlohmann::json(forget)},
                            {"would_forget", a.dry_run ? nlohmann::json(forget) : nlohmann::json::array()},
                            {"groups", groups}};
        if (gc) j["gc"] = {{"chunks_removed", gc->chunks_removed}, {"bytes_removed", gc->bytes_removed},
                           {"bytes_before", gc->bytes_before}, {"bytes_after", gc->bytes_after}};
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("{} {} snapshot(s)\n", a.dry_run ? "would forget" : "forgot", forget.size());
        if (gc)
            fmt::print("prune: {} chunk(s) removed ({}); packs {} -> {}\n", gc->chunks_removed, mb(gc->bytes_removed),
                       mb(gc->bytes_before), mb(gc->bytes_after));
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- diff, find

struct SnapDiffArgs {
    std::string dir, a, b;
    bool json = false;
    bool quiet = false;
};

int run_diff(const SnapDiffArgs& a) {
    const store::Store s = open_store(a.dir);
    const auto changes = store::diff_snapshots(s, resolve(s, a.a), resolve(s, a.b));
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& c : changes) {
        if (a.json) {
            nlohmann::json j = {{"change", std::string(1, c.kind)}, {"fields", c.fields}};
            tools::put_name(j, "path", c.path);
            arr.push_back(std::move(j));
        } else {
            fmt::print("{}  {}{}\n", c.kind, tools::escape_text(c.path),
                       c.fields.empty() || c.kind == 'M' ? "" : "  (" + joined(c.fields, ", ") + ")");
        }
    }
    if (a.json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    return kExitOk;
}

struct SnapFindArgs {
    std::string dir, pattern;
    bool json = false;
    bool quiet = false;
};

int run_find(const SnapFindArgs& a) {
    const store::Store s = open_store(a.dir);
    nlohmann::json arr = nlohmann::json::array();
    std::uint64_t n = 0;
    store::find_in_snapshots(s, a.pattern, [&](const Snapshot& snap, const store::SnapshotNode& node) {
        ++n;
        if (a.json) {
            nlohmann::json j = snapshot_node_json(node);
            j["snapshot"] = snap.id;
            arr.push_back(std::move(j));
        } else {
            fmt::print("{}  {}\n", snap.id.substr(0, 8), snapshot_node_line(node, true));
        }
    });
    if (a.json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    if (n == 0 && !a.json && !a.quiet) fmt::print(stderr, "cdc: no path of any snapshot matches '{}'\n", tools::escape_text(a.pattern));
    return kExitOk;
}

// ---------------------------------------------------------------- migrate

struct SnapMigrateArgs {
    std::string dir;
    std::string host;
    bool remove_names = false;
    bool json = false;
    bool quiet = false;
};

int run_migrate(const SnapMigrateArgs& a) {
    store::Store s = open_store(a.dir);
    store::MigrateOptions o;
    o.host = a.host;
    o.remove_names = a.remove_names;
    const std::uint32_t was = s.info().format_version;
    if (was < store::kFormatVersion && s.list().empty()) {  // nothing to turn into a snapshot
        store::upgrade_to_snapshot_format(s);
        if (a.json)
            fmt::print("{}\n", tools::json_text(nlohmann::json{{"format_version", store::kFormatVersion}}));
        else if (!a.quiet)
            fmt::print("no named file; the store is now format {}\n", store::kFormatVersion);
        finish_stdout();
        return kExitOk;
    }
    const auto r = store::migrate_names(s, o);
    // Then format 2: put and backup write to it.
    store::upgrade_to_snapshot_format(s);
    for (const auto& i : r.skipped)
        print_error(fmt::format("{}: {} (left out, kept under its name)", tools::escape_text(i.path), i.what));
    if (a.json) {
        nlohmann::json j = snapshot_json(r.snapshot);
        j["skipped"] = issues_json(r.skipped);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!a.quiet) {
        fmt::print("snapshot {} made of {} named file(s) ({}){}{}\n", r.snapshot.id, r.snapshot.totals.files,
                   mb(r.snapshot.totals.bytes), a.remove_names ? "; the names removed" : "",
                   was < store::kFormatVersion ? fmt::format("; the store is now format {}", store::kFormatVersion)
                                               : std::string());
    }
    finish_stdout();
    return r.skipped.empty() ? kExitOk : kExitPartial;
}

}  // namespace snapcmd

int run_snapshot_ls(const store::Store& s, const std::string& arg, bool long_form, bool json) {
    const auto ref = snapcmd::snapshot_ref(s, arg);
    if (!ref) return -1;
    nlohmann::json arr = nlohmann::json::array();
    store::list_snapshot(s, ref->first, ref->second, true, [&](const store::SnapshotNode& n) {
        if (json)
            arr.push_back(snapshot_node_json(n));
        else
            fmt::print("{}\n", snapshot_node_line(n, long_form));
    });
    if (json) fmt::print("{}\n", tools::json_text(arr));
    finish_stdout();
    return kExitOk;
}

int run_snapshot_get(const store::Store& s, const std::string& arg, const std::string& out, bool keep_setid, bool json,
                     bool quiet) {
    const auto ref = snapcmd::snapshot_ref(s, arg);
    if (!ref) return -1;
    if (out == "-" || (!out.empty() && tools::is_stream_path(out))) {
        // One file to standard output or a stream: its content, checked.
        std::optional<store::SnapshotNode> node;
        store::list_snapshot(s, ref->first, ref->second, false, [&](const store::SnapshotNode& n) {
            if (!node) node = n;
        });
        if (!node || node->type != "file")
            throw UsageError(fmt::format("'{}' is not a file: give -o a directory to restore it into", arg));
        const std::string manifest = store::file_manifest(s, ref->first, node->path);
        if (out == "-") {
            s.get(manifest, STDOUT_FILENO);
        } else {
            const int fd = ::open(out.c_str(), O_WRONLY | O_CLOEXEC);
            if (fd < 0) throw store::StoreError(fmt::format("cannot open '{}' for writing: {}", out, std::strerror(errno)));
            try {
                s.get(manifest, fd);
            } catch (...) {
                ::close(fd);
                throw;
            }
            if (::close(fd) != 0) throw store::StoreError(fmt::format("closing '{}': {}", out, std::strerror(errno)));
        }
        return kExitOk;
    }
    if (out.empty()) throw UsageError("a snapshot's path is restored to a path: give -o OUT");
    store::SnapshotRestoreOptions o;
    if (keep_setid) o.setid = true;
    const auto r = store::restore_snapshot(s, ref->first, ref->second, out, o);
    for (const auto& p : r.problems) print_error(fmt::format("{}: {}", tools::escape_text(p.path), p.what));
    if (!quiet)
        for (const auto& p : r.not_restored)
            print_warning(fmt::format("{}: not restored: {}", tools::escape_text(p.path), p.what));
    if (json) {
        nlohmann::json j = {{"snapshot", ref->first.id},       {"directories", r.directories},
                            {"files", r.files},                {"hardlinks", r.hardlinks},
                            {"symlinks", r.symlinks},          {"specials", r.specials},
                            {"bytes", r.bytes},                {"problems", snapcmd::issues_json(r.problems)},
                            {"not_restored", snapcmd::issues_json(r.not_restored)}};
        tools::put_name(j, "path", ref->second);
        tools::put_name(j, "output", out);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!quiet) {
        fmt::print("restored {} file(s), {} dir(s), {} symlink(s), {} hard link(s), {} special(s), {} from snapshot "
                   "{}{}\n",
                   r.files, r.directories, r.symlinks, r.hardlinks, r.specials, mb(r.bytes), ref->first.id,
                   r.problems.empty() ? "" : fmt::format("; {} problem(s)", r.problems.size()));
    }
    finish_stdout();
    return r.problems.empty() ? kExitOk : kExitPartial;
}

void add_store_snapshot_commands(CLI::App& st, int& exit_code) {
    using namespace snapcmd;
    {
        auto a = std::make_shared<SnapBackupArgs>();
        auto* c = st.add_subcommand("backup", "commit one snapshot of directories and files (every file type and "
                                              "its metadata); unchanged files are not read again");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("PATH", a->paths, "files or directories (kept at their absolute paths)")->required()->type_name("");
        c->add_option("--tag", a->tags, "a tag of the snapshot (repeatable)")->type_name("TAG");
        c->add_option("--host", a->host, "the host recorded (default: this machine's name)")->type_name("HOST");
        c->add_option("--parent", a->parent,
                      "compare with this snapshot (default: the newest of the same host and paths)")
            ->type_name("SNAP");
        c->add_flag("--no-parent", a->no_parent, "compare with no snapshot: read every file");
        c->add_flag("--force-read", a->force_read, "read every file, even those unchanged since the parent");
        c->add_flag("--no-xattrs", a->no_xattrs, "do not record extended attributes (nor ACLs)");
        c->add_option("--key-file", a->key_file, "the key of a keyed store")->type_name("FILE");
        add_walk_options(*c, a->walk);
        add_json_flag(*c, a->json, "{id, time_ns, host, user, paths, tags, parent, tree, totals: {files, dirs, others, "
                                   "bytes, bytes_read, new_bytes, stored_bytes, skipped_unchanged, "
                                   "skipped_unreadable}, skipped: [{path, error}], warnings, excluded}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "A snapshot is immutable: files of other snapshots are never replaced. A regular "
                               "file whose size, mtime, ctime, inode and device equal those in the parent snapshot "
                               "is not read (its stored content is reused). A file that cannot be read, or that "
                               "changes while it is read, is named, left out and counted (exit 3); the rest is "
                               "committed. With -q, only the snapshot's id is printed.",
                      .examples = {{"cdc store backup /srv/store /home/me --tag daily", "one snapshot of /home/me"}},
                      .exit_codes = exit_codes({partial_exit()})});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_backup(*a); }); });
    }
    {
        auto a = std::make_shared<SnapshotsArgs>();
        auto* c = st.add_subcommand("snapshots", "list the snapshots, oldest first");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("--host", a->hosts, "only of this host (repeatable)")->type_name("HOST");
        c->add_option("--tag", a->tags, "only with this tag (repeatable: all of them)")->type_name("TAG");
        c->add_option("--path", a->paths, "only of this path (repeatable: all of them)")->type_name("PATH");
        add_json_flag(*c, a->json, "[{id, time_ns, time, host, user, paths, tags, parent, tree, totals}]");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Text: short id, time, host, size of the files, paths, [tags].",
                      .examples = {{"cdc store snapshots /srv/store --host laptop", "the snapshots of one host"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_snapshots(*a); }); });
    }
    {
        auto a = std::make_shared<SnapForgetArgs>();
        auto* c = st.add_subcommand("forget", "forget snapshots, named or by keep rules (restic's); --prune reclaims "
                                              "their space");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("SNAP", a->snaps, "snapshots to forget (id, prefix or latest)")->type_name("");
        c->add_option("--keep-last", a->last, "keep the N newest snapshots (-1: all)")->type_name("N");
        c->add_option("--keep-hourly", a->hourly, "keep the newest of each of the N newest hours")->type_name("N");
        c->add_option("--keep-daily", a->daily, "keep the newest of each of the N newest days")->type_name("N");
        c->add_option("--keep-weekly", a->weekly, "keep the newest of each of the N newest weeks")->type_name("N");
        c->add_option("--keep-monthly", a->monthly, "keep the newest of each of the N newest months")->type_name("N");
        c->add_option("--keep-yearly", a->yearly, "keep the newest of each of the N newest years")->type_name("N");
        c->add_option("--keep-within", a->within, "keep every snapshot within DUR of the newest (2y5m7d3h)")
            ->type_name("DUR");
        c->add_option("--keep-tag", a->keep_tags, "keep the snapshots with these tags (T1,T2: all; repeatable)")
            ->type_name("TAGS");
        c->add_option("--group-by", a->group_by, "apply the rules per group: host, paths, tags ('' : one group)")
            ->type_name("KEYS");
        c->add_flag("--dry-run", a->dry_run, "say what would be forgotten, forget nothing");
        c->add_flag("--prune", a->prune, "then reclaim the space nothing references any more (gc)");
        add_json_flag(*c, a->json, "{forgotten: [ids], would_forget: [ids], groups: [{host, paths, keep: [{id, "
                                   "reasons}], remove: [ids]}], gc}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "The keep rules are restic's: each counts units (hours, days, ...) that have "
                               "snapshots, newest first, and keeps the newest snapshot of each; a snapshot is kept "
                               "if any rule keeps it.",
                      .examples = {{"cdc store forget /srv/store --keep-daily 7 --keep-weekly 4 --prune",
                                    "keep a week of dailies and a month of weeklies"},
                                   {"cdc store forget /srv/store 1a2b3c4d", "forget one snapshot"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_forget(*a); }); });
    }
    {
        auto a = std::make_shared<SnapMigrateArgs>();
        auto* c = st.add_subcommand("migrate", "turn the store's named files (put, push) into one snapshot");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("--host", a->host, "the host recorded (default: this machine's name)")->type_name("HOST");
        c->add_flag("--remove-names", a->remove_names, "then remove the named files (their chunks stay: the "
                                                       "snapshot lists them)");
        add_json_flag(*c, a->json, "{id, time_ns, host, paths, tags, totals, skipped: [{path, error}]}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Each name becomes the path /NAME of the snapshot (tag 'migrated', path /), with "
                               "its mode and mtime; its chunk list is copied, nothing is read. A store of format 1 (made by "
                               "an earlier cdc) becomes format 2, which put, backup and rm need. A name a tree "
                               "cannot hold (an empty, . or .. component; a file that is also another's "
                               "directory) is named, left out and kept (exit 3).",
                      .examples = {{"cdc store migrate /srv/store --remove-names", "history from here on"}},
                      .exit_codes = exit_codes({partial_exit(), {kExitUsage, "usage error, or no named file in a format-2 store"}})});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_migrate(*a); }); });
    }
    {
        auto a = std::make_shared<SnapDiffArgs>();
        auto* c = st.add_subcommand("diff", "what changed between two snapshots (+ added, - removed, M content, m "
                                            "metadata)");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("SNAP1", a->a, "the older snapshot")->required()->type_name("");
        c->add_option("SNAP2", a->b, "the newer snapshot")->required()->type_name("");
        add_json_flag(*c, a->json, "[{change, path, fields}]");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Unchanged directories (the same tree object) are not entered.",
                      .examples = {{"cdc store diff /srv/store 1a2b3c4d latest", "since that snapshot"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_diff(*a); }); });
    }
    {
        auto a = std::make_shared<SnapFindArgs>();
        auto* c = st.add_subcommand("find", "which snapshots hold paths that match a pattern");
        c->add_option("DIR", a->dir, "the store's directory")->required()->type_name("");
        c->add_option("PATTERN", a->pattern, "a glob matched against each name and each whole path")
            ->required()
            ->type_name("");
        add_json_flag(*c, a->json, "[{snapshot, path, type, mode, uid, gid, size, mtime_ns, ...}]");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "",
                      .examples = {{"cdc store find /srv/store '*.conf'", "every .conf file in every snapshot"}},
                      .exit_codes = exit_codes()});
        c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_find(*a); }); });
    }
}

}  // namespace cdc::cli
