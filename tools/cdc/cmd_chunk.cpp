// SPDX-License-Identifier: Apache-2.0
// cdc chunk — print the cut points of one file (or stdin) with fingerprints.
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace cdc::cli {

namespace {
struct ChunkArgs {
    std::string algorithm = "fastcdc";
    ProfileArgs profile;
    std::string digest = "blake3";
    std::string kernel = "auto";
    bool csv = false;
    bool json = false;
    bool quiet = false;
    std::string path;
};

Source open_input(const std::string& path) {
    if (path == "-") return FileSource(0, "stdin");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    if (S_ISDIR(st.st_mode))
        throw UsageError(fmt::format("'{}' is a directory: cdc chunk takes one file (use cdc analyze for trees)", path));
    try {
        return FileSource(std::filesystem::path(path));
    } catch (const IoError& e) {
        throw UsageError(e.what());
    }
}

int run(const ChunkArgs& args) {
    const Options options = args.profile.options();
    const DigestKind digest = parse_digest_kind(args.digest);
    auto finder = make_cut_finder(args.algorithm, options, parse_kernel_level(args.kernel));
    Chunker chunker(finder, open_input(args.path));
    const Profile& p = finder->profile();

    fmt::memory_buffer out;
    auto flush = [&] {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
    };
    if (args.json) {
        nlohmann::json head = {{"algorithm", args.algorithm}, {"min", p.min_size},  {"avg", p.normal_size},
                               {"max", p.max_size},           {"keyed", p.keyed},   {"digest", args.digest}};
        tools::put_name(head, "path", args.path);
        head.update(parameters_json(finder->info(), p));
        std::string h = head.dump();
        h.pop_back();  // reopen the object to stream the chunk array
        fmt::format_to(std::back_inserter(out), "{},\"chunks\":[", h);
    } else if (args.csv) {
        fmt::format_to(std::back_inserter(out), "offset,length,digest\n");
    }
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
    for (const Chunk& c : chunker) {
        const std::string hex = digest == DigestKind::none ? std::string() : compute_digest(digest, c.bytes).hex();
        if (args.json) {
            fmt::format_to(std::back_inserter(out), "{}{{\"offset\":{},\"length\":{}", count ? "," : "", c.offset,
                           c.size());
            if (digest != DigestKind::none) fmt::format_to(std::back_inserter(out), ",\"digest\":\"{}\"", hex);
            fmt::format_to(std::back_inserter(out), "}}");
        } else if (args.csv) {
            fmt::format_to(std::back_inserter(out), "{},{},{}\n", c.offset, c.size(), hex);
        } else if (digest == DigestKind::none) {
            fmt::format_to(std::back_inserter(out), "{:>12} {:>9}\n", c.offset, c.size());
        } else {
            fmt::format_to(std::back_inserter(out), "{:>12} {:>9} {}\n", c.offset, c.size(), hex);
        }
        ++count;
        bytes += c.size();
        if (out.size() > 1 << 16) flush();
    }
    if (args.json) fmt::format_to(std::back_inserter(out), "],\"count\":{},\"bytes\":{}}}\n", count, bytes);
    flush();
    finish_stdout();
    return kExitOk;
}
}  // namespace

void add_chunk_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ChunkArgs>();
    auto* cmd = app.add_subcommand("chunk", "print the chunks of one file (or - for stdin): offset, length, digest");
    add_algorithm_option(*cmd, args->algorithm, "the algorithm (cdc algorithms lists them)");
    add_profile_options(*cmd, args->profile);
    add_digest_option(*cmd, args->digest, true);
    add_kernel_option(*cmd, args->kernel);
    auto* csv = add_csv_flag(*cmd, args->csv, "the header offset,length,digest, then one row per chunk");
    auto* json = add_json_flag(*cmd, args->json,
                               "{algorithm, min, avg, max, keyed, digest, path, chunks: [{offset, length, digest}], "
                               "count, bytes}");
    csv->excludes(json);
    add_quiet_flag(*cmd, args->quiet);
    cmd->add_option("PATH", args->path, "file to chunk, or - for standard input")->required()->type_name("");
    document(*cmd, {.notes = "Text output: one line per chunk, offset, length and the digest in hex.",
                    .examples = {{"cdc chunk -a fastcdc-v1.0.0 --avg 16K disk.img",
                                  "the chunks of disk.img, 16 KiB on average, with their BLAKE3"},
                                 {"tar c dir | cdc chunk --digest none --csv -", "the cut points of a stream, as CSV"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
