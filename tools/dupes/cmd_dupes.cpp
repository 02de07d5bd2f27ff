// cdc dupes — find duplicate files and merge them safely (hard link,
// reflink, delete). The engine is cdc/dupes.hpp. This is the whole command
// line of the lean `cdc-dupes` helper that `cdc dupes` runs (main.cpp of the
// cdc tool hands it the arguments before parsing anything): it links the
// library's dupes engine and no CLI11, so a run keeps little code resident
// (the kernel maps a binary's cached text in large folios: resident size
// follows program size). Options are parsed with getopt_long.
#include "cmd_dupes.hpp"

#include "cli_basics.hpp"
#include "escape.hpp"
#include "sizes.hpp"

#include <cdc/digest.hpp>
#include <cdc/dupes.hpp>
#include <cdc/error.hpp>

#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <getopt.h>
#include <set>
#include <sys/resource.h>
#include <ranges>
#include <string>
#include <vector>

namespace cdc::cli {

namespace {

struct DupesArgs {
    std::string mode = "auto";
    std::string hash = "blake3";
    std::string min_size = "1";
    bool one_file_system = false;
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
    if (opt.hash == DigestKind::none) throw UsageError("--hash = 'none' is invalid: must be blake3 or xxh3");
    opt.min_size = tools::parse_size(args.min_size, "--min-size");
    opt.one_file_system = args.one_file_system;
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
    fmt::print(stderr, "cdc dupes: note: {} temporary name(s) left by an interrupted run (.cdc-dupes-tmp.*, extra "
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
        print_message("cdc dupes: warning: ", msg);
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

constexpr const char* kUsage =
    "find duplicate files (byte comparison or hashing) and merge them safely\n"
    "Usage: cdc dupes [OPTIONS] PATH...\n"
    "\n"
    "Positionals:\n"
    "  PATH ...                    files and directories to search (recursively); required\n"
    "\n"
    "Options:\n"
    "  -h,--help                   print this help message and exit\n"
    "  --mode TEXT=auto            compare (lockstep byte comparison, stops at the first difference), hash (partial\n"
    "                              then full hash) or auto (compare; hash classes with more files than --max-open)\n"
    "  --hash TEXT=blake3          digest for hashing: blake3 or xxh3\n"
    "  --min-size SIZE=1           ignore files smaller than this (0 groups empty files)\n"
    "  --one-file-system           do not descend into other file systems\n"
    "  --follow-symlinks           follow symbolic links to files and directories (with --action report only)\n"
    "  --json                      JSON: {\"groups\": [{\"size\", \"files\"}], \"linked\": [...], \"summary\": {...}}\n"
    "  --csv                       CSV: kind,group,size,path (with --action: and action,kept,status,reason, one\n"
    "                              'action' row per step); excludes --json\n"
    "  --action TEXT=report        report, hardlink (same file system), reflink (FIDEDUPERANGE) or delete; every\n"
    "                              file is verified byte for byte right before it is changed\n"
    "  --keep TEXT=oldest          file kept in each group: oldest (mtime), first (path order) or a glob pattern\n"
    "                              matching its path\n"
    "  --ignore-metadata           DANGEROUS: hardlink/reflink files whatever their owner, group, mode and extended\n"
    "                              attributes (a duplicate path then takes the kept file's owner, mode and ACLs)\n"
    "  --dry-run                   print what the action would do; change nothing\n"
    "  -q,--quiet                  no progress line and no notes on stderr\n"
    "  --max-open N                open-file bound while comparing (default: half the soft RLIMIT_NOFILE, at most\n"
    "                              512)\n"
    "\n"
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
    "file whatever its owner (choose it with --keep PATTERN) and removes only byte-identical copies.\n";

/// A command-line error: printed with a hint to --help, exit code 2.
class ParseError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// At most the soft limit of open files (a larger bound would only turn into
// "too many open files" errors on the way).
std::size_t parse_max_open(const char* text) {
    rlimit rl{};
    std::uint64_t most = 1 << 20;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) most = rl.rlim_cur;
    try {
        return static_cast<std::size_t>(tools::parse_count(text, "--max-open", 1, most));
    } catch (const OptionError& e) {
        throw ParseError(e.what());
    }
}

// The flags that set the library's fields named by an OptionError.
std::string_view flag_of(std::string_view field) noexcept {
    static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
        {"mode", "--mode"}, {"action", "--action"}, {"keep", "--keep"}, {"follow_symlinks", "--follow-symlinks"}};
    for (const auto& [f, flag] : kFlags)
        if (f == field) return flag;
    return {};
}

enum Opt : int { kMode = 256, kHash, kMinSize, kOneFs, kFollow, kIgnoreMeta, kJson, kCsv, kAction, kKeep, kDryRun, kMaxOpen };

// getopt_long takes any unambiguous prefix of a long option (--act for
// --action) and lets an option with a value repeat (the last one wins); the
// other cdc commands (CLI11) refuse both, and so does this one.
void check_long_options(int argc, char** argv, const option* options) {
    std::set<std::string_view> seen;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") break;
        if (!a.starts_with("--")) continue;  // a short option, a path
        const auto eq = a.find('=');
        const std::string_view name = a.substr(2, eq == std::string_view::npos ? std::string_view::npos : eq - 2);
        const option* o = options;
        while (o->name != nullptr && name != o->name) ++o;
        if (o->name == nullptr) throw ParseError(fmt::format("The following argument was not expected: {}", a));
        if (o->has_arg != required_argument) continue;
        if (!seen.insert(name).second) throw ParseError(fmt::format("--{}: given more than once", name));
        if (eq == std::string_view::npos) ++i;  // its value, whatever it looks like
    }
}

/// Parses the arguments after `cdc dupes`; returns false for --help.
bool parse(int argc, char** argv, DupesArgs& args) {
    static const option kOptions[] = {
        {"help", no_argument, nullptr, 'h'},          {"quiet", no_argument, nullptr, 'q'},
        {"mode", required_argument, nullptr, kMode},  {"hash", required_argument, nullptr, kHash},
        {"min-size", required_argument, nullptr, kMinSize},
        {"one-file-system", no_argument, nullptr, kOneFs},
        {"follow-symlinks", no_argument, nullptr, kFollow},
        {"ignore-metadata", no_argument, nullptr, kIgnoreMeta},
        {"json", no_argument, nullptr, kJson},        {"csv", no_argument, nullptr, kCsv},
        {"action", required_argument, nullptr, kAction},
        {"keep", required_argument, nullptr, kKeep},  {"dry-run", no_argument, nullptr, kDryRun},
        {"max-open", required_argument, nullptr, kMaxOpen},
        {nullptr, 0, nullptr, 0},
    };
    check_long_options(argc, argv, kOptions);
    opterr = 0;  // our own messages
    optind = 1;
    for (;;) {
        const int before = optind;
        const int c = ::getopt_long(argc, argv, ":hq", kOptions, nullptr);
        if (c == -1) break;
        switch (c) {
            case 'h': return false;
            case 'q': args.quiet = true; break;
            case kMode: args.mode = optarg; break;
            case kHash: args.hash = optarg; break;
            case kMinSize: args.min_size = optarg; break;
            case kOneFs: args.one_file_system = true; break;
            case kFollow: args.follow_symlinks = true; break;
            case kIgnoreMeta: args.ignore_metadata = true; break;
            case kJson: args.json = true; break;
            case kCsv: args.csv = true; break;
            case kAction: args.action = optarg; break;
            case kKeep: args.keep = optarg; break;
            case kDryRun: args.dry_run = true; break;
            case kMaxOpen: args.max_open = parse_max_open(optarg); break;
            case ':': throw ParseError(fmt::format("{}: a value is required", argv[optind - 1]));
            default: {
                const char* arg = argv[std::min(before, argc - 1)];
                throw ParseError(fmt::format("The following argument was not expected: {}", arg));
            }
        }
    }
    for (int i = optind; i < argc; ++i) args.paths.emplace_back(argv[i]);
    if (args.paths.empty()) throw ParseError("PATH is required");
    if (args.json && args.csv) throw ParseError("--json excludes --csv");
    return true;
}

}  // namespace

int dupes_main(int argc, char** argv) {
    try {
        DupesArgs args;
        if (!parse(argc, argv, args)) {
            fmt::print("{}\n{}\n{}\n", kUsage, kNamesHelp, kExitCodesHelp);
            return kExitOk;
        }
        return run(args);
    } catch (const ParseError& e) {
        print_message("", e.what());
        fmt::print(stderr, "Run with --help for more information.\n");
        return kExitUsage;
    } catch (...) {
        return report_current_exception(flag_of);
    }
}

}  // namespace cdc::cli
