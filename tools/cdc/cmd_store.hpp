// SPDX-License-Identifier: Apache-2.0
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
/// directory that is not a store, or of a newer format: UsageError. A store
/// with S3 packs, in a program without S3 support (the static cdc): this
/// process becomes the cdc-store-s3 helper, with the same arguments.
/// `with_helper`: a store whose packs this program cannot reach (S3 in a
/// build without it) runs cdc-store-s3 in its place (exec); false: the
/// StorageUnavailableError is thrown (a caller off the main thread).
store::Store open_store(const std::string& dir, const std::string& key_file = {}, bool with_helper = true);

/// The command line, for the cdc-store-s3 helper to be run with (main()).
void set_store_command_line(char** argv);
/// Called by the cdc-store-s3 helper: S3 packs are handled here (never
/// handed to another program).
void set_store_s3_enabled();
/// Runs the cdc-store-s3 helper in this process's place for `e` (a store
/// with S3 packs); returns only if it cannot (the error then printed).
[[noreturn]] void run_store_s3_helper(const store::StorageUnavailableError& e);

/// Runs f(); maps a NotFoundError or VersionError to UsageError (exit 2).
template <class F>
int with_store_errors(F&& f) {
    try {
        return f();
    } catch (const store::NotFoundError& e) {
        throw UsageError(e.what());
    } catch (const store::VersionError& e) {
        throw UsageError(e.what());
    } catch (const store::PasswordError& e) {
        throw UsageError(e.what());
    }
}

void add_store_subcommands(CLI::App& store, int& exit_code);
void add_store_put(CLI::App& store, int& exit_code);
void add_store_get(CLI::App& store, int& exit_code);
void add_store_key(CLI::App& store, int& exit_code);
/// backup, snapshots, forget, diff, find (cmd_store_snap.cpp).
void add_store_snapshot_commands(CLI::App& store, int& exit_code);
/// ls and get of SNAP[:PATH] (latest, or a snapshot id's first 4 to 32 hex
/// digits): -1 when `arg` names no snapshot (then it is a stored name).
int run_snapshot_ls(const store::Store& s, const std::string& arg, bool long_form, bool json);
int run_snapshot_get(const store::Store& s, const std::string& arg, const std::string& out, bool keep_setid, bool json,
                     bool quiet);

}  // namespace cdc::cli
