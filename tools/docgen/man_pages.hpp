// SPDX-License-Identifier: Apache-2.0
// One man page per command (roff, man macros), from the command tree.
#pragma once

#include "command_tree.hpp"

#include <string>

namespace cdc::docgen {

/// The page of `c` (cdc-store-put.1); `version` goes in its header.
std::string man_page(const Command& c, const std::string& version);

}  // namespace cdc::docgen
