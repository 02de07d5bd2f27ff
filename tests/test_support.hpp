// Helpers shared by the tests: paths to shared/, JSON lines, chunking
// helpers and scripted readers.
#pragma once

#include <cdc/cdc.hpp>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace cdc::test {

/// shared/ (spec and test vectors); the tests fail if it is missing.
std::filesystem::path shared_dir();
/// The built cdc tool ($CDC_TEST_TOOL overrides it: to run the CLI tests
/// against another build, e.g. an older commit's, with CDC_DUPES and
/// CDC_PLOT pointing at that build's helpers).
std::filesystem::path tool_path();

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);
/// The Options of one test-vector case (min, normal, max, key_hex).
Options vector_case_options(const nlohmann::json& c);
std::string read_text(const std::filesystem::path& path);

/// Chunk lengths of `data` as one memory source.
std::vector<std::size_t> lengths_memory(const std::shared_ptr<const CutFinder>& finder,
                                        std::span<const std::uint8_t> data);

/// A reader over `data` whose successive reads return at most sizes[k]
/// bytes (cycling); a size of 0 is an empty read. With `end_with_data`, the
/// read that delivers the last byte also reports the end.
class ScriptedReader final : public Reader {
public:
    ScriptedReader(std::span<const std::uint8_t> data, std::vector<std::size_t> sizes, bool end_with_data = false);
    ReadResult read(std::span<std::byte> buffer) override;

private:
    std::span<const std::uint8_t> data_;
    std::vector<std::size_t> sizes_;
    bool end_with_data_;
    std::size_t pos_ = 0;
    std::size_t call_ = 0;
};

/// Chunk lengths of `data` streamed through `reader` (a caller buffer if
/// `buffer` is non-empty).
std::vector<std::size_t> lengths_stream(const std::shared_ptr<const CutFinder>& finder, Reader& reader,
                                        std::span<std::byte> buffer = {});

/// Deterministic pseudo-random bytes.
std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed);

}  // namespace cdc::test

namespace cdc::test {

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

/// Runs the cdc tool with `args` (shell-quoted here), optional stdin file.
RunResult run_tool(const std::vector<std::string>& args, const std::string& stdin_path = "");

/// Starts the cdc tool with `args`, stdout and stderr to /dev/null (to be
/// killed or waited for); throws if it cannot start.
pid_t spawn_tool(const std::vector<std::string>& args);
/// Waits for `pid`: its exit code, or 128 + signal; `usage` (if given)
/// receives its resource usage (peak RSS: ru_maxrss, KiB).
int wait_exit(pid_t pid, struct rusage* usage = nullptr);

/// Runs the cdc tool as another user (root only: the child drops to
/// uid/gid with setgroups/setgid/setuid before exec), so that permissions
/// bite: chmod 000 does not stop root. Exit code 100 if the drop failed.
RunResult run_tool_as(unsigned uid, unsigned gid, const std::vector<std::string>& args);

/// The records of a CSV text, parsed strictly (RFC 4180: fields separated by
/// ',', records by "\n" or "\r\n"; a quoted field may hold ',', '"' as
/// "", '\n' and '\r'; a '"' inside an unquoted field, or text after a
/// closing quote, is an error). Throws std::runtime_error.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

/// A fresh temporary directory, removed when the object dies.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const noexcept { return path_; }
    std::filesystem::path write(const std::string& name, std::span<const std::uint8_t> data) const;

private:
    std::filesystem::path path_;
};

}  // namespace cdc::test
