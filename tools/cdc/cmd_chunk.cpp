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
    cmd->add_option("-a,--algorithm", args->algorithm, "algorithm name (see cdc algorithms)")->capture_default_str();
    add_profile_options(*cmd, args->profile);
    cmd->add_option("--digest", args->digest, "chunk fingerprint: blake3, sha256, xxh3 or none")
        ->capture_default_str();
    auto* csv = cmd->add_flag("--csv", args->csv, "CSV: header offset,length,digest then one row per chunk");
    auto* json = cmd->add_flag("--json", args->json, "one JSON object with the profile and the chunk list");
    csv->excludes(json);
    cmd->add_option("--kernel", args->kernel, "force a kernel level: auto, scalar, wide, avx2, avx512, avx512vbmi")
        ->capture_default_str();
    cmd->add_option("PATH", args->path, "file to chunk, or - for standard input")->required();
    cmd->footer(kExitCodesHelp);
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
