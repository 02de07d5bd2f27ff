// Helpers shared by the tests: paths to shared/, JSON lines, chunking
// helpers and scripted readers.
#pragma once

#include <cdc/cdc.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace cdc::test {

/// shared/ (spec and test vectors); the tests fail if it is missing.
std::filesystem::path shared_dir();
/// The built cdc tool.
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
/// The JSON a successful run printed (a test failure if it failed or printed
/// something else; then null).
nlohmann::json json_of(const RunResult& r);

/// Starts the cdc tool in the background (stdout and stderr to the files
/// `out` and `err` in `log_dir`, stdin from /dev/null), with extra
/// environment variables and an optional write limit (RLIMIT_FSIZE, SIGXFSZ
/// ignored so that writes fail with EFBIG).
pid_t spawn_tool(const std::vector<std::string>& args, const std::filesystem::path& log_dir,
                 const std::vector<std::pair<std::string, std::string>>& env = {},
                 std::uint64_t fsize_limit = 0);
/// Waits for a child: its exit code, or 128 + the signal that killed it.
int wait_exit(pid_t pid);

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
