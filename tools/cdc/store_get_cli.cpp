// cdc store get: restore one file (checked before OUT is touched).
#include "store_cli.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include <unistd.h>

namespace cdc::cli {

namespace {

struct GetArgs {
    std::string dir;
    std::string name;
    std::string out;
    bool no_metadata = false;
    bool quiet = false;
};

int run_get(const GetArgs& a) {
    const store::Store s = open_store(a.dir);
    if (!s.find(a.name))
        throw UsageError(fmt::format("no file named '{}' in the store '{}'", a.name, a.dir));
    std::string out = a.out;
    if (out.empty()) {
        out = std::filesystem::path(a.name).filename().string();
        std::error_code ec;
        if (std::filesystem::exists(out, ec))
            throw UsageError(fmt::format("'{}' exists: name the output with -o (it is then replaced)", out));
    }
    ProgressLine line(!a.quiet && out != "-" && stderr_is_tty());
    store::GetOptions o;
    o.restore_metadata = !a.no_metadata;
    if (line.enabled())
        o.progress = [&](const store::Progress& p) {
            line.draw(fmt::format("get: {} / {}  {:.0f} MB/s", mb(p.bytes_done), mb(p.bytes_total),
                                  p.seconds > 0 ? static_cast<double>(p.bytes_done) / p.seconds / 1e6 : 0.0));
        };
    if (out == "-") {
        s.get(a.name, STDOUT_FILENO, o);
    } else {
        s.get(a.name, std::filesystem::path(out), o);
    }
    return kExitOk;
}

}  // namespace

void add_store_get(CLI::App& st, int& exit_code) {
    auto a = std::make_shared<GetArgs>();
    auto* c = st.add_subcommand("get", "restore a file: to a temporary file renamed over OUT once its BLAKE3 matched");
    c->add_option("DIR", a->dir, "the store's directory")->required();
    c->add_option("NAME", a->name, "the stored name")->required();
    c->add_option("-o,--output", a->out,
                  "OUT: a file (replaced), a directory (NAME's last component inside it) or - for standard output "
                  "(default: NAME's last component here, which must not exist)");
    c->add_flag("--no-metadata", a->no_metadata, "do not restore the mode and mtime");
    c->add_flag("-q,--quiet", a->quiet, "no progress line");
    c->footer("Every chunk is checked (record checksum, size) and the whole file's BLAKE3 before OUT is replaced; "
              "with -o -, bytes go out chunk by chunk as they are checked and a final mismatch is an error.");
    c->callback([a, &exit_code] { exit_code = with_store_errors([&] { return run_get(*a); }); });
}

}  // namespace cdc::cli
