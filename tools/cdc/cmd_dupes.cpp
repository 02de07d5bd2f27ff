// cdc dupes: its entry in `cdc --help`. The command itself is the lean
// cdc-dupes helper (tools/dupes/), which main.cpp runs in place of this
// process before any parsing, so that a dupes run never maps this binary's
// code (the kernel maps cached program text in large folios: resident size
// follows program size).
#include "commands.hpp"

namespace cdc::cli {

void add_dupes_command(CLI::App& app, int&) {
    app.add_subcommand("dupes", "find duplicate files (byte comparison or hashing) and merge them safely "
                                "(`cdc dupes --help` for its options)")
        ->prefix_command();
}

}  // namespace cdc::cli
