// SPDX-License-Identifier: Apache-2.0
// cdc resync — how much of a file's chunks survive random edits, per
// algorithm: insertions, deletions, overwrites or a mix, seeded.
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "sizes.hpp"

#include <cdc/corpus/resync.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::cli {

namespace {
struct ResyncArgs {
    std::string algorithm = "fastcdc";
    ProfileArgs profile;
    std::string digest = "blake3";
    std::size_t edits = 1;
    std::uint64_t edit_size = 16;
    std::string kind = "insert";
    std::uint64_t seed = 1;
    std::size_t trials = 1;
    bool json = false;
    bool csv = false;
    bool quiet = false;
    std::string path;
};

// resync needs the original and an edited copy in memory: the file is read
// whole (one file, not a corpus), if both fit.
std::vector<std::uint8_t> read_all(const std::string& path) {
    int fd = 0;
    if (path != "-") {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0)
            throw UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
        if (S_ISDIR(st.st_mode)) throw UsageError(fmt::format("'{}' is a directory: cdc resync takes one file", path));
        tools::check_fits_in_memory(2 * static_cast<std::uint64_t>(st.st_size), "FILE", path);
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw UsageError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
    }
    struct Closer {
        int fd;
        ~Closer() {
            if (fd != 0) ::close(fd);
        }
    } closer{fd};
    FdReader reader(fd, path == "-" ? std::string("stdin") : fmt::format("'{}'", path));
    std::vector<std::uint8_t> data;
    std::size_t end = 0;
    for (bool eof = false; !eof;) {
        if (data.size() - end < (1u << 20)) data.resize(std::max<std::size_t>(data.size() * 2, end + (4u << 20)));
        const FillResult r = read_at_least(reader, std::as_writable_bytes(std::span(data)).subspan(end), 1);
        end += r.bytes;
        eof = r.end;
    }
    data.resize(end);
    return data;
}

int run(const ResyncArgs& args) {
    const Options base = args.profile.options();
    const DigestKind digest = parse_digest_kind(args.digest);
    if (digest == DigestKind::none) throw UsageError("--digest = 'none' is invalid here: chunks must be fingerprinted");
    EditSpec spec;
    spec.kind = parse_edit_kind(args.kind);
    spec.count = args.edits;
    spec.size = static_cast<std::size_t>(args.edit_size);
    spec.seed = args.seed;
    const auto finders = resolve_algorithm_list(args.algorithm, base, args.quiet || args.json || args.csv);

    const auto original = read_all(args.path);
    check_edits_fit(spec, "--edits", original.size(), "the file");
    const auto summaries = run_resync(finders, original, spec, args.trials, digest);

    if (args.json) {
        nlohmann::json results = nlohmann::json::array();
        for (const auto& s : summaries) {
            const auto& p = finders[static_cast<std::size_t>(&s - summaries.data())]->profile();
            results.push_back({{"algorithm", s.algorithm},
                               {"min_size", p.min_size},
                               {"avg_size", p.normal_size},
                               {"max_size", p.max_size},
                               {"shared_pct", s.shared_pct_mean},
                               {"shared_pct_min", s.shared_pct_min},
                               {"chunks_orig", s.runs.front().chunks_orig},
                               {"chunks_edited", s.trials == 1 ? nlohmann::json(s.runs.front().chunks_edited)
                                                               : nlohmann::json(s.chunks_edited_mean)},
                               {"bytes_orig", s.runs.front().bytes_orig},
                               {"bytes_edited", s.runs.front().bytes_edited},
                               {"trials", s.trials}});
        }
        nlohmann::json doc{{"results", results},
                           {"kind", to_string(spec.kind)},
                           {"edits", spec.count},
                           {"edit_size", spec.size},
                           {"seed", spec.seed},
                           {"trials", args.trials},
                           {"digest", args.digest},
                           {"bytes", original.size()}};
        fmt::print("{}\n", doc.dump());
    } else if (args.csv) {
        std::string out = "algorithm,shared_pct,shared_pct_min,chunks_orig,chunks_edited,trials\n";
        for (const auto& s : summaries)
            out.append(fmt::format("{},{:.4f},{:.4f},{},{:.1f},{}\n", s.algorithm, s.shared_pct_mean,
                                   s.shared_pct_min, s.runs.front().chunks_orig, s.chunks_edited_mean, s.trials));
        fmt::print("{}", out);
    } else {
        fmt::print("{} ({} bytes): {} x {} of {} bytes, seed {}, {} trial(s)\n", tools::escape_text(args.path),
                   original.size(),
                   spec.count, to_string(spec.kind), spec.size, spec.seed, args.trials);
        fmt::print("{:<18} {:>10} {:>10} {:>12} {:>14}\n", "ALGORITHM", "SHARED%", "MIN%", "CHUNKS", "CHUNKS EDITED");
        for (const auto& s : summaries)
            fmt::print("{:<18} {:>10.3f} {:>10.3f} {:>12} {:>14.1f}\n", s.algorithm, s.shared_pct_mean,
                       s.shared_pct_min, s.runs.front().chunks_orig, s.chunks_edited_mean);
        fmt::print("SHARED% = bytes of the edited file lying in chunks also in the original (mean over trials; "
                   "MIN% the worst trial).\n");
    }
    finish_stdout();
    return kExitOk;
}
}  // namespace

void add_resync_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ResyncArgs>();
    auto* cmd = app.add_subcommand("resync", "apply random edits to a file and measure, per algorithm, how much of "
                                             "the edited file is still in the original's chunks");
    add_algorithm_list_option(*cmd, args->algorithm, "algorithms to measure: names, comma-separated or repeated, or all");
    add_profile_options(*cmd, args->profile);
    add_edit_options(*cmd, args->edits, args->edit_size, args->kind, args->seed,
                     "number of edits (0: none; edits x edit size at most the file's size)");
    add_count_option(*cmd, "--trials", args->trials, 1, limits::kTrials,
                     "trials with the edit seeds S, S+1, ... (reports mean and minimum)");
    add_digest_option(*cmd, args->digest, false);
    add_quiet_flag(*cmd, args->quiet);
    auto* csv = add_csv_flag(*cmd, args->csv, "a header, then one row per algorithm");
    auto* json = add_json_flag(*cmd, args->json,
                               "{\"results\": [{algorithm, shared_pct, shared_pct_min, chunks_orig, chunks_edited, "
                               "...}], kind, edits, edit_size, seed, trials, digest, bytes}");
    csv->excludes(json);
    cmd->add_option("FILE", args->path, "the file (read whole into memory), or - for standard input")
        ->required()
        ->type_name("");
    document(*cmd, {.notes = "Every algorithm sees the same edited data in a trial. With --trials, shared_pct is the "
                             "mean and shared_pct_min the worst trial.",
                    .examples = {{"cdc resync -a all --edits 10 --edit-size 1K disk.img",
                                  "how much of disk.img survives ten 1 KiB insertions, per algorithm"},
                                 {"cdc resync -a fastcdc,jc --edit-kind mixed --trials 5 --json notes.txt",
                                  "mixed edits, five trials, as JSON"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
