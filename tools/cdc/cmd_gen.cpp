// SPDX-License-Identifier: Apache-2.0
// cdc gen — write deterministic test data (the test-vector input specs).
#include "cli_common.hpp"
#include "commands.hpp"
#include "output_path.hpp"
#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace cdc::cli {

namespace {

// Streamed in blocks: constant memory for any length.
int write_stream(InputGenerator& gen, int fd, const std::string& name) {
    FdWriter writer(fd, name);
    std::vector<std::uint8_t> block(std::size_t{1} << 20);
    while (const std::size_t n = gen.read(block)) writer.write(std::as_bytes(std::span(block).first(n)));
    return kExitOk;
}

// A SPEC's length with a size suffix (zeros:32M) as the decimal number the
// generator reads (tests/vectors/README.md: the specs of the vectors).
std::string expand_length(const std::string& spec) {
    const auto kind = spec.substr(0, spec.find(':'));
    const auto last = spec.rfind(':');
    if (last == std::string::npos || (kind != "zeros" && kind != "repeat" && kind != "splitmix64" && kind != "text"))
        return spec;
    return fmt::format("{}{}", spec.substr(0, last + 1), tools::parse_size(spec.substr(last + 1), "SPEC's length"));
}

// A device or FIFO (/dev/null, a pipe) is written as a stream.
int write_to_stream_path(InputGenerator& gen, const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw UsageError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    try {
        write_stream(gen, fd, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) throw IoError(fmt::format("close '{}': {}", path, std::strerror(errno)));
    return kExitOk;
}

// FILE appears whole or not at all: written into an unnamed file of its
// directory (O_TMPFILE), then given its name (linkat: an existing FILE is
// never overwritten, even one created meanwhile). A kill leaves nothing.
int write_file(InputGenerator& gen, const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) throw UsageError(fmt::format("cannot create '{}': it exists", path));
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) throw UsageError(fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
    bool open = true;
    try {
        write_stream(gen, fd, path);
        if (::fsync(fd) != 0) throw IoError(fmt::format("writing '{}': {}", path, std::strerror(errno)));
        const std::string self = fmt::format("/proc/self/fd/{}", fd);
        if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0)
            throw IoError(fmt::format("cannot create '{}': {}", path, std::strerror(errno)));
        open = false;
        if (::close(fd) != 0) throw IoError(fmt::format("close '{}': {}", path, std::strerror(errno)));
    } catch (...) {
        if (open) ::close(fd);
        throw;
    }
    return kExitOk;
}

}  // namespace

void add_gen_command(CLI::App& app, int& exit_code) {
    struct Args {
        std::string spec, output = "-";
        bool quiet = false;  // (nothing but the data and errors is printed anyway)
    };
    auto args = std::make_shared<Args>();  // (the callback holds it: the options write into it)
    auto* cmd = app.add_subcommand(
        "gen", "write deterministic data: empty, byte42, zeros:LEN, repeat:WORD:LEN, splitmix64:SEED:LEN, text:SEED:LEN");
    cmd->add_option("SPEC", args->spec, "input spec (tests/vectors/README.md); LEN takes size suffixes (32M)")
        ->required()
        ->type_name("");
    cmd->add_option("-o,--output", args->output,
                    "output file, created whole or not at all (an existing file is not overwritten); - for standard "
                    "output; a device or FIFO is written as a stream")
        ->type_name("FILE")
        ->capture_default_str();
    add_quiet_flag(*cmd, args->quiet);
    document(*cmd, {.notes = "The same SPEC always gives the same bytes (the test vectors' inputs).",
                    .examples = {{"cdc gen splitmix64:1:1G -o random.bin", "1 GiB of pseudo-random bytes"},
                                 {"cdc gen text:7:32M | cdc chunk --csv -", "32 MiB of text, chunked"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] {
        InputGenerator gen(expand_length(args->spec));  // validates the spec before creating anything
        const std::string& out = args->output;
        exit_code = out == "-"                    ? write_stream(gen, STDOUT_FILENO, "stdout")
                    : tools::is_stream_path(out) ? write_to_stream_path(gen, out)
                                                  : write_file(gen, out);
    });
}

}  // namespace cdc::cli
