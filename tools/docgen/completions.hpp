// SPDX-License-Identifier: Apache-2.0
// Shell completions for cdc from the command tree: commands, flags, the
// names an option takes, and files or directories where a command takes
// them.
#pragma once

#include "command_tree.hpp"

#include <string>

namespace cdc::docgen {

/// share/bash-completion/completions/cdc
std::string bash_completion(const Command& root);
/// share/zsh/site-functions/_cdc
std::string zsh_completion(const Command& root);
/// share/fish/vendor_completions.d/cdc.fish
std::string fish_completion(const Command& root);

}  // namespace cdc::docgen
