// Pieces shared by the `cdc store` subcommands (cmd_store.cpp,
// cmd_store_put.cpp, cmd_store_get.cpp): opening a store with its key file,
// error mapping (the key file and the progress line: tools/common).
#pragma once

#include "cli_common.hpp"
#include "escape.hpp"
#include "progress_line.hpp"
#include "secret_files.hpp"

#include <cdc/store.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace cdc::cli {

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

void add_store_subcommands(CLI::App& store, int& exit_code);
void add_store_put(CLI::App& store, int& exit_code);
void add_store_get(CLI::App& store, int& exit_code);
void add_store_key(CLI::App& store, int& exit_code);

}  // namespace cdc::cli
