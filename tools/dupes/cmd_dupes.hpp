// SPDX-License-Identifier: Apache-2.0
// The command line of `cdc dupes` (the cdc-dupes helper).
#pragma once

namespace cdc::cli {

/// Runs `cdc dupes ...` (argv[1] is "dupes"; argv[0] the program); prints
/// errors itself; returns the exit code.
int dupes_main(int argc, char** argv);

}  // namespace cdc::cli
