// SPDX-License-Identifier: Apache-2.0
// The commands that helper programs run (cdc-dupes, cdc-transfer): which
// helper runs a command line, and the definitions of every command, the
// helpers' included (`cdc --cli-definitions`, the source of the man pages
// and the completions).
#pragma once

#include "helper_path.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace cdc::cli {

struct Helper {
    const char* name;         ///< "cdc-dupes"
    const char* env_var;      ///< "CDC_DUPES": overrides where it is found
    const char* from_bindir;  ///< its installed place, relative to bin/
};

/// The helper that runs `cdc ARGS...`, or null for a command of this program.
const Helper* helper_of(int argc, char** argv);

/// Where `helper` is (tools/common/helper_path.hpp).
tools::HelperPath find_helper(const Helper& helper);

/// definitions(app), each helper's command replaced by the helper's own
/// definitions of it (it runs `HELPER --cli-definitions`); a helper that
/// cannot be found or run leaves the entry as it is ("helper": true).
nlohmann::ordered_json all_definitions(const CLI::App& app);

}  // namespace cdc::cli
