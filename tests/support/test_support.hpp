// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests: paths to shared/, JSON lines, chunking
// helpers and scripted readers.
#pragma once

#include <cdc/corpus.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <cstdlib>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cdc::test {

/// The repository's copy of the boundary contract's test vectors
/// (tests/vectors; CDC_VECTORS_DIR overrides it, e.g. to run a larger set).
std::filesystem::path vectors_dir();
/// The boundary contract's tables (docs/spec; CDC_SPEC_DIR overrides it).
std::filesystem::path spec_dir();

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);
/// The Options of one test-vector case (min, normal, max, key_hex).
Options vector_case_options(const nlohmann::json& c);
/// The Options of one compat test-vector case (testvectors/compat: "params"
/// with min, avg, max and level, seed, poly, window where the name has them).
Options compat_case_options(const nlohmann::json& c);
std::string read_text(const std::filesystem::path& path);
/// The permission bits (07777) of `path` itself (lstat); throws if absent.
unsigned mode_of(const std::filesystem::path& path);

/// The bytes of a test-vector input spec (testvectors/README.md), generated
/// once per process and kept (thread-safe).
const std::vector<std::uint8_t>& cached_input(const std::string& spec);

/// Every accelerated kernel level this CPU has (scalar is the reference).
std::vector<KernelLevel> accelerated_levels();

/// Options with these sizes (0 = the algorithm's default) and nothing else.
Options sized_options(std::size_t min, std::size_t normal, std::size_t max);

/// Expects make_cut_finder(algorithm, o) to throw OptionError whose message
/// contains every fragment.
void expect_option_error(std::string_view algorithm, const Options& o, const std::vector<std::string>& fragments);

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

/// Writes `data` to a file `name` at the bottom of a chain of directories
/// below `root` (which must exist) whose full path is longer than PATH_MAX,
/// so that no walk can open it by path (ENAMETOOLONG); returns that path.
std::filesystem::path write_beyond_path_max(const std::filesystem::path& root, const std::string& name,
                                            std::span<const std::uint8_t> data);

/// The records of a CSV text, parsed strictly (RFC 4180: fields separated by
/// ',', records by "\n" or "\r\n"; a quoted field may hold ',', '"' as
/// "", '\n' and '\r'; a '"' inside an unquoted field, or text after a
/// closing quote, is an error). Throws std::runtime_error.
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

}  // namespace cdc::test

namespace cdc::test {

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

/// Sets an environment variable for a scope (the tool runs in it, the
/// code under test); the value before comes back at its end.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* v = std::getenv(name)) old_ = v;
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace cdc::test
