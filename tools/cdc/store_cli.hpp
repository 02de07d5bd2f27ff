// Pieces shared by the `cdc store` subcommands (cmd_store.cpp,
// store_put_cli.cpp, store_get_cli.cpp): opening a store with its key file,
// error mapping, the progress line.
#pragma once

#include "cli_common.hpp"

#include <cdc/store.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace cdc::cli {

/// Reads a key file: 64 hex digits (surrounding whitespace ignored) or
/// exactly 32 raw bytes. UsageError naming the file otherwise.
Key read_key_file(const std::string& path);

/// Opens the store at `dir` (with the key of `key_file`, if given). A
/// directory that is not a store, or of a newer format: UsageError.
store::Store open_store(const std::string& dir, const std::string& key_file = {});

/// Runs f(); maps a NotFoundError or VersionError to UsageError (exit 2).
template <class F>
int with_store_errors(F&& f) {
    try {
        return f();
    } catch (const store::NotFoundError& e) {
        throw UsageError(e.what());
    } catch (const store::VersionError& e) {
        throw UsageError(e.what());
    }
}

/// The progress line on stderr (only when it is a terminal and not quiet).
class ProgressLine {
public:
    explicit ProgressLine(bool enabled) : enabled_(enabled) {}
    ~ProgressLine() { clear(); }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;
    bool enabled() const noexcept { return enabled_; }
    void draw(const std::string& text);
    void clear();

private:
    bool enabled_;
    bool drawn_ = false;
};

/// "12.3 MB" (10^6) for rates and totals in the store's messages.
std::string mb(std::uint64_t bytes);

void add_store_subcommands(CLI::App& store, int& exit_code);
void add_store_put(CLI::App& store, int& exit_code);
void add_store_get(CLI::App& store, int& exit_code);

}  // namespace cdc::cli
