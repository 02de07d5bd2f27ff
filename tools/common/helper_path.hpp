// SPDX-License-Identifier: Apache-2.0
// Where the cdc tool finds its helper programs (cdc-plot, cdc-dupes).
#pragma once

#include <string>
#include <string_view>

namespace cdc::tools {

struct HelperPath {
    std::string path;       ///< empty when not found
    std::string looked_in;  ///< where it was looked for, for an error message
};

/// The helper program `name`, looked up in order: $`env_var` when set (used
/// as given); `name` next to the running binary (the build tree);
/// `from_bindir` relative to the running binary's directory (the installed
/// layout, e.g. ../libexec/cdc/cdc-plot). Only executable files count.
HelperPath find_helper(std::string_view name, const char* env_var, std::string_view from_bindir);

}  // namespace cdc::tools
