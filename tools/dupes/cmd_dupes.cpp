// SPDX-License-Identifier: Apache-2.0
// cdc dupes — find duplicate files and merge them safely (hard link,
// reflink, delete). The engine is cdc/dupes.hpp. This is the whole command
// line of the lean `cdc-dupes` helper that `cdc dupes` runs (main.cpp of the
// cdc tool hands it the arguments before parsing anything): it links the
// library's dupes engine and none of the other commands, so a run keeps
// little code resident (the kernel maps a binary's cached text in large
// folios: resident size follows program size). Its grammar is the other
// commands' (tools/cli).
#include "cmd_dupes.hpp"

#include "cli_basics.hpp"
#include "cli_docs.hpp"
#include "cli_options.hpp"
#include "cli_run.hpp"
#include "escape.hpp"
#include "sizes.hpp"

#include <cdc/digest.hpp>
#include <cdc/dupes.hpp>
#include <cdc/error.hpp>

#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sys/resource.h>
#include <ranges>
#include <string>
#include <vector>

namespace cdc::cli {

namespace {

struct DupesArgs {
    std::string mode = "auto";
    std::string hash = "blake3";
    std::uint64_t min_size = 1;
    WalkArgs walk;
    bool follow_symlinks = false;
    bool ignore_metadata = false;
    bool json = false;
    bool csv = false;
    std::string action = "report";
    std::string keep = "oldest";
    bool dry_run = false;
    bool quiet = false;
    std::size_t max_open = 0;
    std::vector<std::string> paths;
};

// A progress line on stderr, redrawn at most ten times a second.
class ProgressLine {
public:
    explicit ProgressLine(bool on) : on_(on) {}
    void update(const DupesProgress& p) {
        const auto now = std::chrono::steady_clock::now();
        if (!on_ || now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        std::string line;
        if (p.phase == "walk")
            line = fmt::format("dupes: walking, {} files", p.files);
        else if (p.phase == "resolve")
            line = fmt::format("dupes: comparing, {}/{} candidates, {} read", p.resolved, p.candidates,
                               tools::format_size(static_cast<double>(p.bytes_read)));
        else
            line = fmt::format("dupes: acting, {} files", p.resolved);
        fmt::print(stderr, "\r{:<70}", line);
        drawn_ = true;
    }
    void clear() {
        if (drawn_) fmt::print(stderr, "\r{:<70}\r", "");
        drawn_ = false;
    }

private:
    bool on_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point last_{};
};

nlohmann::ordered_json summary_json(const DupesSummary& s, std::string_view mode) {
    return {{"files_scanned", s.files_scanned}, {"bytes_scanned", s.bytes_scanned}, {"candidates", s.candidates},
            {"bytes_read", s.bytes_read},       {"groups", s.groups},               {"duplicate_files", s.duplicate_files},
            {"wasted_bytes", s.wasted_bytes},   {"linked_paths", s.linked_paths},   {"skipped", s.skipped},
            {"mode", mode}};
}

// stdout, written out in pieces of ~64 KiB: a large result never sits in
// memory twice (and no JSON document tree is built for it).
struct Output {
    fmt::memory_buffer buf;
    std::back_insert_iterator<fmt::memory_buffer> o = std::back_inserter(buf);
    void flush(bool force = false) {
        if (!force && buf.size() < (std::size_t{64} << 10)) return;
        std::fwrite(buf.data(), 1, buf.size(), stdout);
        buf.clear();
    }
};

// Names as escape.hpp says: JSON "files" (+ "files_bytes"), text escaped.
void write_json(Output& out, const DupesResult& res, const std::vector<DupesStep>& steps, DupesAction action,
                std::string_view mode) {
    auto& o = out.o;
    // One group per line.
    auto list = [&](const char* name, const auto& items, auto&& to_json, bool last) {
        fmt::format_to(o, " \"{}\": [", name);
        bool first = true;
        for (const auto& item : items) {
            fmt::format_to(o, "{}\n  {}", first ? "" : ",", to_json(item).dump());
            first = false;
            out.flush();
        }
        fmt::format_to(o, "{}]{}\n", first ? "" : "\n ", last ? "" : ",");
    };
    fmt::format_to(o, "{{\n");
    list("groups", std::views::iota(std::size_t{0}, res.group_count()), [&](std::size_t i) {
        const DupesGroup g = res.group(i);
        std::vector<std::string_view> firsts;
        for (const DupesFile& f : g.files) firsts.push_back(f.first_path());
        nlohmann::ordered_json j{{"size", g.size}};
        tools::put_names(j, "files", firsts);
        return j;
    }, false);
    list("linked", std::views::iota(std::size_t{0}, res.linked_count()), [&](std::size_t i) {
        const DupesFile l = res.linked(i);
        nlohmann::ordered_json j{{"size", l.size}};
        tools::put_names(j, "files", l.paths);
        return j;
    }, false);
    const bool with_actions = action != DupesAction::report;
    fmt::format_to(o, " \"summary\": {}{}\n", summary_json(res.summary, mode).dump(), with_actions ? "," : "");
    if (with_actions)
        list("actions", steps, [](const DupesStep& st) {
            nlohmann::ordered_json j{{"action", to_string(st.action)}};
            tools::put_name(j, "path", st.path);
            tools::put_name(j, "kept", st.kept);
            j["status"] = to_string(st.status);
            if (!st.reason.empty()) j["reason"] = tools::escape_text(st.reason);
            return j;
        }, true);
    fmt::format_to(o, "}}\n");
}

// With an action, four more columns (empty on the duplicate and linked
// rows) and one "action" row per step, as the "actions" of --json.
void write_csv(Output& out, const DupesResult& res, const std::vector<DupesStep>& steps, DupesAction action) {
    auto& o = out.o;
    const bool with_actions = action != DupesAction::report;
    const char* const tail = with_actions ? ",,,," : "";
    fmt::format_to(o, "kind,group,size,path{}\n", with_actions ? ",action,kept,status,reason" : "");
    for (std::size_t i = 0; i < res.group_count(); ++i) {
        const DupesGroup g = res.group(i);
        for (const DupesFile& f : g.files)
            fmt::format_to(o, "duplicate,{},{},{}{}\n", i + 1, g.size, tools::csv_field(f.first_path()), tail), out.flush();
    }
    for (std::size_t i = 0; i < res.linked_count(); ++i) {
        const DupesFile l = res.linked(i);
        for (const std::string_view p : l.paths)
            fmt::format_to(o, "linked,{},{},{}{}\n", i + 1, l.size, tools::csv_field(p), tail), out.flush();
    }
    std::size_t group = SIZE_MAX;
    std::uint64_t size = 0;
    for (const DupesStep& st : steps) {
        if (st.group != group) size = res.group(group = st.group).size;
        fmt::format_to(o, "action,{},{},{},{},{},{},{}\n", st.group + 1, size, tools::csv_field(st.path),
                       to_string(st.action), tools::csv_field(st.kept), to_string(st.status),
                       tools::csv_field(tools::escape_text(st.reason)));
        out.flush();
    }
}

void write_text(Output& out, const DupesResult& res, const std::vector<DupesStep>& steps, std::string_view mode) {
    auto& o = out.o;
    using tools::escape_text;
    for (std::size_t i = 0; i < res.group_count(); ++i) {
        const DupesGroup g = res.group(i);
        fmt::format_to(o, "== {} files of {} bytes, {} bytes wasted\n", g.files.size(), g.size, g.wasted());
        for (const DupesFile& f : g.files) fmt::format_to(o, "{}\n", escape_text(f.first_path()));
        fmt::format_to(o, "\n");
        out.flush();
    }
    if (res.linked_count() > 0) {
        fmt::format_to(o, "linked (one file, several paths: no waste)\n");
        for (std::size_t i = 0; i < res.linked_count(); ++i) {
            const DupesFile l = res.linked(i);
            fmt::format_to(o, "== {} paths, {} bytes\n", l.paths.size(), l.size);
            for (const std::string_view p : l.paths) fmt::format_to(o, "{}\n", escape_text(p));
            out.flush();
        }
        fmt::format_to(o, "\n");
    }
    for (const auto& st : steps) {
        out.flush();
        const std::string path = escape_text(st.path), kept = escape_text(st.kept);
        if (st.status == DupesStep::Status::planned)
            fmt::format_to(o, "would {} '{}' (keep '{}')\n", to_string(st.action), path, kept);
        else if (st.status == DupesStep::Status::kept)
            fmt::format_to(o, "kept '{}': {} (kept file '{}')\n", path, escape_text(st.reason), kept);
        else if (st.status == DupesStep::Status::done)
            fmt::format_to(o, "{} '{}' (kept '{}')\n",
                           st.action == DupesAction::remove     ? "deleted"
                           : st.action == DupesAction::hardlink ? "hardlinked"
                                                                : "reflinked",
                           path, kept);
        else
            fmt::format_to(o, "skipped '{}': {}\n", path, escape_text(st.reason));
    }
    const DupesSummary& s = res.summary;
    fmt::format_to(o,
                   "{} files scanned, {} bytes read ({} mode), {} groups, {} duplicate files, {} bytes wasted ({}), "
                   "{} linked paths{}\n",
                   s.files_scanned, s.bytes_read, mode, s.groups, s.duplicate_files, s.wasted_bytes,
                   tools::format_size(static_cast<double>(s.wasted_bytes)), s.linked_paths,
                   s.skipped ? fmt::format(", {} skipped", s.skipped) : std::string());
}

// What to do, validated before any file is read.
struct DupesRequest {
    DupesOptions options;
    DupesAction action = DupesAction::report;
    KeepRule keep;
};

DupesRequest request_of(const DupesArgs& args) {
    DupesRequest r;
    DupesOptions& opt = r.options;
    opt.mode = parse_dupes_mode(args.mode);
    opt.hash = parse_digest_kind(args.hash);
    if (opt.hash == DigestKind::none) throw UsageError("--digest = 'none' is invalid: must be blake3, sha256 or xxh3");
    opt.min_size = args.min_size;
    opt.one_file_system = args.walk.one_file_system;
    opt.exclude = walk_excludes(args.walk);
    opt.follow_symlinks = args.follow_symlinks;
    opt.ignore_metadata = args.ignore_metadata;
    opt.max_open_files = args.max_open;
    r.action = parse_dupes_action(args.action);
    r.keep = parse_keep_rule(args.keep);
    if (r.action != DupesAction::report && args.follow_symlinks)
        throw UsageError("--follow-symlinks is for reports only: actions never act through symbolic links");
    if (args.ignore_metadata && r.action != DupesAction::hardlink && r.action != DupesAction::reflink)
        throw UsageError("--ignore-metadata applies to --action hardlink or reflink only");
    return r;
}

// Temporaries of an interrupted run are removed by the next action run; a
// report (or dry run) says they are there.
void note_stale_temporaries(const DupesResult& res, const DupesArgs& args, DupesAction action) {
    if (res.stale_temporaries().empty() || (action != DupesAction::report && !args.dry_run) || args.quiet) return;
    fmt::print(stderr, "cdc: note: {} temporary name(s) left by an interrupted run (.cdc-dupes-tmp.*, extra "
                       "links of kept files); the next --action run removes them\n",
               res.stale_temporaries().size());
}

void write_result(const DupesArgs& args, const DupesResult& res, const std::vector<DupesStep>& steps,
                  DupesAction action) {
    Output out;
    if (args.json)
        write_json(out, res, steps, action, args.mode);
    else if (args.csv)
        write_csv(out, res, steps, action);
    else
        write_text(out, res, steps, args.mode);
    out.flush(true);
    finish_stdout();
}

int run(const DupesArgs& args) {
    DupesRequest request = request_of(args);
    DupesOptions& opt = request.options;
    ProgressLine progress(!args.quiet && stderr_is_tty());
    opt.progress = [&progress](const DupesProgress& p) { progress.update(p); };
    opt.warning = [&progress](const std::string& msg) {
        progress.clear();
        print_warning(msg);
    };

    DupesResult res = resolve_dupes(scan_dupes(args.paths, opt), opt);
    progress.clear();
    note_stale_temporaries(res, args, request.action);
    std::vector<DupesStep> steps;
    try {
        steps = apply_dupes_action(res, request.action, request.keep, args.dry_run, opt);
    } catch (...) {
        progress.clear();
        throw;
    }
    progress.clear();
    write_result(args, res, steps, request.action);
    const bool any_skipped = std::any_of(steps.begin(), steps.end(),
                                         [](const DupesStep& s) { return s.status == DupesStep::Status::skipped; });
    return res.summary.skipped > 0 || any_skipped ? kExitPartial : kExitOk;
}

constexpr const char* kNotes =
    "Groups are sorted by wasted bytes; paths of one inode are listed as linked, never as waste. A file that changes "
    "during the run is left out with a warning. Temporaries of an interrupted hardlink run are named "
    ".cdc-dupes-tmp.PID.N and removed by the next acting run.\n"
    "\n"
    "Who is merged: hardlink and reflink merge only files on the same file system with the same owner, group, mode "
    "(permission, setuid, setgid and sticky bits) and extended attributes (names and values, ACLs included), checked "
    "on the open files right before each change; each group is split into sets by these keys and one file is kept "
    "per set. A file left apart is reported as 'kept' with the keys that differ. What a path keeps: after hardlink, "
    "the kept file's inode with all its metadata (owner, mode, attributes, mtime: the oldest with --keep oldest); "
    "after reflink, its own inode and metadata (mtime included), sharing the data extents; delete keeps the chosen "
    "file whatever its owner (choose it with --keep PATTERN) and removes only byte-identical copies.";

// The flags that set the library's fields named by an OptionError.
std::string_view flag_of(std::string_view, std::string_view field) noexcept {
    static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
        {"mode", "--mode"}, {"action", "--action"}, {"keep", "--keep"}, {"follow_symlinks", "--follow-symlinks"}};
    for (const auto& [f, flag] : kFlags)
        if (f == field) return flag;
    return {};
}

// At most the soft limit of open files (a larger bound would only turn into
// "too many open files" errors on the way).
std::uint64_t max_open_files() {
    rlimit rl{};
    std::uint64_t most = 1 << 20;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) most = rl.rlim_cur;
    return most;
}

void add_dupes(CLI::App& app, DupesArgs& args, int& exit_code) {
    auto* cmd = app.add_subcommand("dupes", "find duplicate files (byte comparison or hashing) and merge them safely");
    with_choices(cmd->add_option("--mode", args.mode,
                                 "compare (lockstep byte comparison, stops at the first difference), hash (partial "
                                 "then full hash) or auto (compare; hash classes with more files than --max-open)")
                     ->type_name("MODE")
                     ->capture_default_str(),
                 names_of(kDupesModeNames));
    with_choices(cmd->add_option("--digest", args.hash, "digest for hashing: blake3, sha256 or xxh3")
                     ->type_name("NAME")
                     ->capture_default_str(),
                 {"blake3", "sha256", "xxh3"});
    add_size_option(*cmd, "--min-size", args.min_size, 0, std::numeric_limits<std::uint64_t>::max(),
                    "ignore files smaller than this (0 groups empty files)");
    add_walk_options(*cmd, args.walk);
    cmd->add_flag("--follow-symlinks", args.follow_symlinks,
                  "follow symbolic links to files and directories (with --action report only)");
    auto* json = add_json_flag(*cmd, args.json, "{\"groups\": [{\"size\", \"files\"}], \"linked\": [...], "
                                                "\"summary\": {...}, \"actions\": [...]}");
    auto* csv = add_csv_flag(*cmd, args.csv, "kind,group,size,path (with --action: and action,kept,status,reason, "
                                             "one 'action' row per step)");
    csv->excludes(json);
    with_choices(cmd->add_option("--action", args.action,
                                 "report, hardlink (same file system), reflink (FIDEDUPERANGE) or delete; every file "
                                 "is verified byte for byte right before it is changed")
                     ->type_name("ACTION")
                     ->capture_default_str(),
                 names_of(kDupesActionNames));
    cmd->add_option("--keep", args.keep,
                    "file kept in each group: oldest (mtime), first (path order) or a glob pattern matching its path")
        ->type_name("RULE")
        ->capture_default_str();
    cmd->add_flag("--ignore-metadata", args.ignore_metadata,
                  "DANGEROUS: hardlink/reflink files whatever their owner, group, mode and extended attributes (a "
                  "duplicate path then takes the kept file's owner, mode and ACLs)");
    cmd->add_flag("--dry-run", args.dry_run, "print what the action would do; change nothing");
    add_quiet_flag(*cmd, args.quiet);
    add_count_option(*cmd, "--max-open", args.max_open, 1, max_open_files(),
                     "open-file bound while comparing (0, the default: half the soft RLIMIT_NOFILE, at most 512)")
        ->default_str("");
    cmd->add_option("PATH", args.paths, "files and directories to search (recursively)")->required()->type_name("");
    document(*cmd, {.notes = kNotes,
                    .examples = {{"cdc dupes ~/photos", "the groups of identical files, largest waste first"},
                                 {"cdc dupes --action hardlink --dry-run ~/photos",
                                  "what merging them into hard links would do"}},
                    .exit_codes = exit_codes({partial_exit()})});
    cmd->callback([&args, &exit_code] { exit_code = run(args); });
}

}  // namespace

int dupes_main(int argc, char** argv) {
    CLI::App app{"cdc dupes: find duplicate files and merge them safely.\n", "cdc"};
    app.require_subcommand(1);
    set_help_flags(app);
    DupesArgs args;
    int exit_code = kExitOk;
    add_dupes(app, args, exit_code);
    add_version_flags(app);
    return run_app(app, argc, argv, exit_code, flag_of);
}

}  // namespace cdc::cli
