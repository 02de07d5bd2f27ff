// The command line of `cdc dupes` (the cdc-dupes helper).
#pragma once

namespace cdc::cli {

/// Runs `cdc dupes` with the arguments that follow "dupes" (argv[0] is the
/// program); prints errors itself; returns the exit code.
int dupes_main(int argc, char** argv);

}  // namespace cdc::cli
