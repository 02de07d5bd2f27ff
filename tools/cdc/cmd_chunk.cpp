// SPDX-License-Identifier: Apache-2.0
// cdc chunk — print the cut points of one file (or stdin) with fingerprints.
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "common/mapped_bytes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <vector>
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
    unsigned jobs = 0;
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

/// Calls f(offset, bytes, digest hex) for every chunk of `source`, in order:
/// windows of the stream read whole, each cut as one stream on `jobs`
/// threads (cut_lengths_parallel) and its chunks' digests computed on as
/// many; the tail a window cannot cut yet moves to the next.
template <class F>
void each_chunk_parallel(const CutFinder& finder, Source source, DigestKind digest, unsigned jobs, F&& f) {
    const std::size_t max = finder.profile().max_size;
    // Windows long enough to give every thread segments of its own.
    const std::size_t window = std::max<std::size_t>(std::size_t{64} << 20, 4 * parallel_segment_min(finder) + max);
    // (in huge pages: a cut of a 4 KiB-page window pays a page walk every 4 KiB)
    const common::MappedBytes buffer = common::map_bytes(window);
    std::size_t live = 0;
    std::uint64_t offset = 0;
    bool end = false;
    std::vector<std::uint32_t> lengths;
    std::vector<Digest> digests;
    while (!end || live > 0) {
        if (!end) {
            const FillResult r =
                read_at_least(*source.reader_ptr(), std::span(buffer.get() + live, window - live), window - live);
            live += r.bytes;
            end = r.end;
        }
        const std::span<const std::byte> bytes(buffer.get(), live);
        lengths.clear();
        const std::size_t used = cut_lengths_parallel(finder, bytes, end, lengths, jobs);
        if (digest != DigestKind::none) {
            digests.resize(lengths.size());
            compute_digests_parallel(digest, bytes.first(used), lengths, digests, jobs);
        }
        std::size_t at = 0;
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            f(offset + at, lengths[i], digest == DigestKind::none ? std::string() : digests[i].hex());
            at += lengths[i];
        }
        offset += used;
        std::memmove(buffer.get(), buffer.get() + used, live - used);
        live -= used;
    }
}

int run(const ChunkArgs& args) {
    const Options options = args.profile.options();
    const DigestKind digest = parse_digest_kind(args.digest);
    auto finder = make_cut_finder(args.algorithm, options, parse_kernel_level(args.kernel));
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
    const auto emit = [&](std::uint64_t offset, std::size_t size, const std::string& hex) {
        if (args.json) {
            fmt::format_to(std::back_inserter(out), "{}{{\"offset\":{},\"length\":{}", count ? "," : "", offset, size);
            if (digest != DigestKind::none) fmt::format_to(std::back_inserter(out), ",\"digest\":\"{}\"", hex);
            fmt::format_to(std::back_inserter(out), "}}");
        } else if (args.csv) {
            fmt::format_to(std::back_inserter(out), "{},{},{}\n", offset, size, hex);
        } else if (digest == DigestKind::none) {
            fmt::format_to(std::back_inserter(out), "{:>12} {:>9}\n", offset, size);
        } else {
            fmt::format_to(std::back_inserter(out), "{:>12} {:>9} {}\n", offset, size, hex);
        }
        ++count;
        bytes += size;
        if (out.size() > 1 << 16) flush();
    };
    if (args.jobs == 1) {
        Chunker chunker(finder, open_input(args.path));
        for (const Chunk& c : chunker)
            emit(c.offset, c.size(), digest == DigestKind::none ? std::string() : compute_digest(digest, c.bytes).hex());
    } else {
        each_chunk_parallel(*finder, open_input(args.path), digest, args.jobs, emit);
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
    add_count_option(*cmd, "-j,--jobs", args->jobs, 0, limits::kJobs,
                     "threads cutting the stream and fingerprinting its chunks (0: every core; the cut points are "
                     "the same for any number; but with -j 1 the input is read and printed 64 MiB at a time)");
    cmd->add_option("PATH", args->path, "file to chunk, or - for standard input")->required()->type_name("");
    document(*cmd, {.notes = "Text output: one line per chunk, offset, length and the digest in hex.",
                    .examples = {{"cdc chunk -a fastcdc-v1.0.0 --avg 16K disk.img",
                                  "the chunks of disk.img, 16 KiB on average, with their BLAKE3"},
                                 {"tar c dir | cdc chunk --digest none --csv -", "the cut points of a stream, as CSV"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
