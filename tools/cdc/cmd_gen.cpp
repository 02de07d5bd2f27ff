// cdc gen — write deterministic test data (the test-vector input specs).
#include "cli_common.hpp"
#include "commands.hpp"
#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace cdc::cli {

void add_gen_command(CLI::App& app, int& exit_code) {
    auto spec = std::make_shared<std::string>();
    auto output = std::make_shared<std::string>("-");
    auto* cmd = app.add_subcommand(
        "gen", "write deterministic data: empty, byte42, zeros:LEN, repeat:WORD:LEN, splitmix64:SEED:LEN, text:SEED:LEN");
    cmd->add_option("SPEC", *spec, "input spec (shared/testvectors/README.md)")->required();
    cmd->add_option("-o,--output", *output, "output file (- for stdout; an existing file is not overwritten)")
        ->capture_default_str();
    cmd->callback([spec, output, &exit_code] {
        const auto bytes = generate_input(*spec);
        int fd = STDOUT_FILENO;
        if (*output != "-") {
            fd = ::open(output->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0) throw UsageError(fmt::format("cannot create '{}': {}", *output, std::strerror(errno)));
        }
        FdWriter writer(fd, *output == "-" ? "stdout" : *output);
        writer.write(std::as_bytes(std::span(bytes)));
        if (fd != STDOUT_FILENO && ::close(fd) != 0)
            throw IoError(fmt::format("close '{}': {}", *output, std::strerror(errno)));
        exit_code = kExitOk;
    });
}

}  // namespace cdc::cli
